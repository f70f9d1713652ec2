//! Search-bar entry recognition (spec §10): what a person types without a field prefix is
//! turned into the search it most plausibly means, or deliberately not guessed.
//!
//! Only the search bar recognises entries; the API takes the query language as written.

use std::fmt;

use periscope_model::net::parse_ip;
use periscope_model::{Asn, CountryCode, Port};

use crate::parser::{MAX_QUERY_CHARS, parse};
use crate::query::Query;
use crate::value::{parse_asn, parse_domain};
use crate::violation::{QueryError, Violation, ViolationCode};

/// What the search bar does with an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Run this search; `text` is its prefixed canonical form, which the bar shows afterwards.
    Search {
        /// The search to run.
        query: Query,
        /// `query.to_string()`.
        text: String,
    },
    /// The entry is ambiguous and is not guessed; the bar shows the hint.
    NotGuessed(NotGuessed),
    /// The entry was read as a query and refused.
    Invalid(QueryError),
}

impl Entry {
    fn search(query: Query) -> Self {
        let text = query.to_string();
        Entry::Search { query, text }
    }

    /// The search to run, if any.
    pub fn query(&self) -> Option<&Query> {
        match self {
            Entry::Search { query, .. } => Some(query),
            _ => None,
        }
    }
}

/// Why an entry is not guessed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ambiguity {
    /// A bare number could be an ASN or a port.
    BareNumber,
    /// A bare two-letter word could be a country code or the start of a domain.
    TwoLetterWord,
}

/// An entry that is not guessed, with the prefixed searches it could have meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotGuessed {
    /// Which ambiguity.
    pub ambiguity: Ambiguity,
    /// The entry, trimmed.
    pub input: String,
    /// Valid prefixed queries it could mean (`asn:22`, `port:22`; `country:DE`), possibly
    /// none (`0`, `99999999999`, `zz`).
    pub suggestions: Vec<String>,
}

impl NotGuessed {
    /// A sentence for the search bar.
    pub fn hint(&self) -> String {
        let ask = match self.ambiguity {
            Ambiguity::BareNumber => "could be an ASN or a port",
            Ambiguity::TwoLetterWord => "could be a country code or the start of a domain",
        };
        let alternatives = match (self.ambiguity, self.suggestions.as_slice()) {
            (Ambiguity::BareNumber, []) => {
                "write asn:<number> (1 to 4294967295) or port:<number> (1 to 65535)".to_owned()
            }
            (Ambiguity::BareNumber, s) => format!("write {}", s.join(" or ")),
            (Ambiguity::TwoLetterWord, []) => "type the whole domain name".to_owned(),
            (Ambiguity::TwoLetterWord, s) => {
                format!("write {}, or type the whole domain name", s.join(" or "))
            }
        };
        format!("{} {ask}: {alternatives}", self.input)
    }
}

impl fmt::Display for NotGuessed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hint())
    }
}

/// Recognises a search-bar entry (trimmed; longer than [`MAX_QUERY_CHARS`] it is parsed, and
/// refused, as a query):
/// - a bare number or a bare two-letter word is not guessed;
/// - `AS<n>` (any case of `AS`, optionally spaces before the number) is an ASN search;
/// - a pasted URL (`scheme://host…`) searches its host: an exact-IP search for an IP literal
///   (including `[v6]`), otherwise a domain search;
/// - a bracketed IPv6 address (`[2001:db8::1]`) is an exact-IP search;
/// - a single word that is a registrable domain name is a domain search;
/// - anything else, bare IPv4/IPv6 addresses and CIDRs included, is parsed as a query.
pub fn recognize(input: &str) -> Entry {
    let t = input.trim();
    if t.is_empty() || t.chars().count() > MAX_QUERY_CHARS || t.contains(char::is_whitespace) {
        if let Some(digits) = as_space_number(t) {
            return asn(digits);
        }
        return parsed(input);
    }
    if t.bytes().all(|b| b.is_ascii_digit()) {
        let suggestions = [
            Asn::parse(t).ok().map(|a| format!("asn:{a}")),
            Port::parse(t).ok().map(|p| format!("port:{p}")),
        ];
        return not_guessed(Ambiguity::BareNumber, t, suggestions);
    }
    let mut chars = t.chars();
    if let (Some(a), Some(b), None) = (chars.next(), chars.next(), chars.next())
        && a.is_alphabetic()
        && b.is_alphabetic()
    {
        let upper = t.to_uppercase();
        let suggestions = [CountryCode::parse(&upper)
            .ok()
            .map(|c| format!("country:{c}"))];
        return not_guessed(Ambiguity::TwoLetterWord, t, suggestions);
    }
    if let Some(digits) = strip_as(t).filter(|d| d.bytes().all(|b| b.is_ascii_digit())) {
        return asn(digits);
    }
    if let Some(host) = url_host(t) {
        return from_host(host);
    }
    if let Some(inner) = t.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
        && let Ok(ip) = parse_ip(inner)
        && ip.is_ipv6()
    {
        return Entry::search(Query::Ip(ip));
    }
    if t.contains('.')
        && let Ok(d) = parse_domain(t)
    {
        return Entry::search(Query::Domain(d));
    }
    parsed(input)
}

fn parsed(input: &str) -> Entry {
    match parse(input) {
        Ok(q) => Entry::search(q),
        Err(e) => Entry::Invalid(e),
    }
}

fn not_guessed<const N: usize>(
    ambiguity: Ambiguity,
    input: &str,
    suggestions: [Option<String>; N],
) -> Entry {
    Entry::NotGuessed(NotGuessed {
        ambiguity,
        input: input.to_owned(),
        suggestions: suggestions.into_iter().flatten().collect(),
    })
}

fn asn(digits: &str) -> Entry {
    match parse_asn(digits) {
        Ok(a) => Entry::search(Query::Asn(a)),
        Err(v) => Entry::Invalid(v.into()),
    }
}

/// `AS` in any case, followed by the rest.
fn strip_as(t: &str) -> Option<&str> {
    t.get(..2)
        .filter(|p| p.eq_ignore_ascii_case("as"))
        .and_then(|_| t.get(2..))
        .filter(|rest| !rest.is_empty())
}

/// `AS 15169`: the prefix, a run of whitespace, digits.
fn as_space_number(t: &str) -> Option<&str> {
    let rest = strip_as(t)?;
    let digits = rest.trim_start();
    (digits.len() < rest.len() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then_some(digits)
}

/// The host of `scheme://[userinfo@]host[:port][/path][?query][#fragment]`.
fn url_host(t: &str) -> Option<&str> {
    let (scheme, rest) = t.split_once("://")?;
    let mut s = scheme.chars();
    let valid_scheme = s.next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !valid_scheme {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(bracketed) = host_port.strip_prefix('[') {
        return Some(bracketed.split(']').next().unwrap_or(""));
    }
    Some(host_port.split(':').next().unwrap_or(""))
}

fn from_host(host: &str) -> Entry {
    if host.is_empty() {
        return Entry::Invalid(
            Violation::new(
                ViolationCode::InvalidDomain,
                "the pasted URL has no host name",
            )
            .into(),
        );
    }
    if let Ok(ip) = parse_ip(host) {
        return Entry::search(Query::Ip(ip));
    }
    match parse_domain(host) {
        Ok(d) => Entry::search(Query::Domain(d)),
        Err(v) => Entry::Invalid(v.into()),
    }
}
