//! Query structure: which tokens are clauses, which are the `AND` joiner, and which are
//! operators, grouping or stray words that make the whole query unparsable.
//!
//! Bare IPv4/IPv6 addresses and bare CIDRs are recognised here, before any `field:value`
//! split, because IPv6 addresses contain colons.

use std::net::{IpAddr, Ipv6Addr};

use periscope_model::{Asn, CountryCode, DomainName, ProtocolToken};

use crate::clause::Field;
use crate::lexer::Token;
use crate::value::{bare_ip, parse_domain};
use crate::violation::{QueryError, Violation, ViolationCode};

/// A clause as written, before its value is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawClause<'a> {
    /// A bare address.
    Ip(IpAddr),
    /// A bare `address/prefix`.
    Cidr(&'a str),
    /// `field:value` with a known field.
    Field(Field, &'a str),
    /// `name:value` with a name that is not a field.
    Unknown(&'a str),
}

impl RawClause<'_> {
    /// The field, for duplicate detection (a bare CIDR is the `cidr` field).
    pub fn field(&self) -> Option<Field> {
        match self {
            RawClause::Ip(_) | RawClause::Unknown(_) => None,
            RawClause::Cidr(_) => Some(Field::Cidr),
            RawClause::Field(f, _) => Some(*f),
        }
    }
}

enum Item<'a> {
    And,
    Clause(RawClause<'a>),
}

/// Reads the clauses of a token list, or reports every structural violation (each code once).
pub(crate) fn clauses<'a>(tokens: &[Token<'a>]) -> Result<Vec<RawClause<'a>>, QueryError> {
    let mut violations = Vec::new();
    let mut items = Vec::with_capacity(tokens.len());
    for t in tokens {
        match classify(t) {
            Ok(item) => items.push(item),
            Err(v) => violations.push(v),
        }
    }
    if violations.is_empty() {
        check_joiners(&items, &mut violations);
    }
    if !violations.is_empty() {
        return Err(QueryError::new(violations));
    }
    Ok(items
        .into_iter()
        .filter_map(|i| match i {
            Item::And => None,
            Item::Clause(c) => Some(c),
        })
        .collect())
}

fn check_joiners(items: &[Item<'_>], violations: &mut Vec<Violation>) {
    let syntax = |why: &str| Violation::new(ViolationCode::InvalidQuerySyntax, why);
    let mut previous_and = true; // at the start, as after a joiner
    for item in items {
        match item {
            Item::And if previous_and => {
                violations.push(syntax("AND must stand between two clauses"));
                return;
            }
            Item::And => previous_and = true,
            Item::Clause(_) => previous_and = false,
        }
    }
    if previous_and {
        violations.push(syntax(if items.is_empty() {
            "the query has no clause"
        } else {
            "AND must stand between two clauses; the query ends with AND"
        }));
    }
}

const OPERATOR_WORDS: [&str; 3] = ["and", "or", "not"];
const OPERATOR_SYMBOLS: [&str; 7] = ["&&", "||", "&", "|", "!", "-", "+"];

fn classify<'a>(t: &Token<'a>) -> Result<Item<'a>, Violation> {
    let text = t.text;
    if text == "AND" {
        return Ok(Item::And);
    }
    let operator = |what: String| {
        Violation::new(
            ViolationCode::UnsupportedOperator,
            format!("{what}; join clauses with a space or an uppercase AND"),
        )
    };
    let syntax = |why: String| Violation::new(ViolationCode::InvalidQuerySyntax, why);
    if OPERATOR_WORDS.contains(&text.to_ascii_lowercase().as_str()) {
        return Err(operator(format!("{text:?} is not supported")));
    }
    if OPERATOR_SYMBOLS.contains(&text) {
        return Err(operator(format!("the operator {text:?} is not supported")));
    }
    if text.starts_with(['-', '!', '+']) {
        return Err(operator(format!(
            "{text:?}: negation and required-clause prefixes are not supported"
        )));
    }
    let outside: String = t.outside_quotes().collect();
    if outside.contains("&&") || outside.contains("||") {
        return Err(operator(format!(
            "{text:?} holds && or ||, which are not supported"
        )));
    }
    if outside.contains(['(', ')']) {
        return Err(syntax(format!(
            "{text:?}: grouping with parentheses is not supported"
        )));
    }
    if !t.has_quote() {
        if let Some(ip) = bare_ip(text) {
            return Ok(Item::Clause(RawClause::Ip(ip)));
        }
        if text.starts_with('[') {
            return Err(syntax(format!(
                "{text:?}: brackets are not supported; write an address bare, as in 2001:db8::1"
            )));
        }
        if let Some((addr, _)) = text.split_once('%')
            && addr.parse::<Ipv6Addr>().is_ok()
        {
            return Err(syntax(format!(
                "{text:?}: IPv6 zone identifiers are not supported; give the address alone"
            )));
        }
        if let Some((addr, _)) = text.split_once('/')
            && (addr.parse::<IpAddr>().is_ok() || looks_like_address(addr))
        {
            return Ok(Item::Clause(RawClause::Cidr(text)));
        }
    }
    let Some((name, _)) = t.before_quote().split_once(':') else {
        return Err(syntax(bare_word(t)));
    };
    let value = &text[name.len() + 1..];
    if let Some(field) = Field::from_name(name) {
        return Ok(Item::Clause(RawClause::Field(field, value)));
    }
    if name.is_empty() {
        return Err(syntax(format!(
            "{text:?}: a field name is missing before ':'"
        )));
    }
    if !t.has_quote() && looks_like_address(text) {
        return Err(syntax(format!("{text:?} is not a valid IP address")));
    }
    if value.starts_with("//") {
        return Err(syntax(format!(
            "{text:?}: URLs are not searched; write domain: followed by the host name"
        )));
    }
    if bare_ip(name).is_some() {
        return Err(syntax(format!(
            "{text:?}: an address is searched without a port; write {name}, or port:{value}"
        )));
    }
    if name.contains('.')
        && !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_digit())
        && let Ok(d) = DomainName::parse(name)
    {
        return Err(syntax(format!(
            "{text:?}: a domain is searched without a port; write domain:{d}, or port:{value}"
        )));
    }
    Ok(Item::Clause(RawClause::Unknown(name)))
}

/// Digits and dots with a dot (IPv4-ish), or hex digits, colons and dots with two colons
/// (IPv6-ish).
fn looks_like_address(s: &str) -> bool {
    let v4 = s.contains('.') && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let v6 = s.bytes().filter(|&b| b == b':').count() >= 2
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    v4 || v6
}

/// Why a word without a field is not a clause, with a hint at what was probably meant.
fn bare_word(t: &Token<'_>) -> String {
    let w = t.text;
    if t.unterminated && w.starts_with('"') {
        return format!("{w:?}: the closing double quote is missing");
    }
    if w.starts_with('"') {
        return format!(
            "{w}: a quoted phrase needs a field, as in organization:{w} or product:{w}"
        );
    }
    if w.contains('*') {
        return format!("{w:?}: wildcards are not supported");
    }
    if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) {
        return format!("{w} alone is not a search; write asn:{w} or port:{w}");
    }
    if let Some(digits) = w
        .get(..2)
        .filter(|p| p.eq_ignore_ascii_case("as"))
        .and_then(|_| w.get(2..))
        .filter(|d| Asn::parse(d).is_ok())
    {
        return format!("{w} is not a clause; for an ASN search write asn:{digits}");
    }
    if let Ok(p) = ProtocolToken::parse_case_insensitive(w) {
        return format!("{w} is not a clause; for a protocol write protocol:{p}");
    }
    if let Ok(c) = CountryCode::parse(&w.to_ascii_uppercase()) {
        return format!("{w} is not a clause; for a country write country:{c}");
    }
    if w.contains('.') && DomainName::parse(w).is_ok() {
        return match parse_domain(w) {
            Ok(d) => format!("{w} is not a clause; for a domain search write domain:{d}"),
            Err(v) => format!(
                "{w} is not a clause, nor a domain to search: {}",
                v.detail.trim_start_matches("domain: ")
            ),
        };
    }
    if looks_like_address(w) {
        return format!("{w:?} is not a valid IP address");
    }
    format!("{w:?} is not a clause; clauses are written field:value")
}
