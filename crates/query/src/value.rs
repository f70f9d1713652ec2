//! Clause values: the rules for the text after `field:` of each of the thirteen fields, and the
//! violation (with a detail that says how to fix it) when a value breaks them.
//!
//! The domain newtypes of `periscope-model` do the syntactic work; this module adds what only
//! the query language decides: quoting, URL syntax in domains, the public suffix rule, the
//! /24 limit on CIDRs, and the hints.

use std::net::{IpAddr, Ipv6Addr};

use periscope_model::net::parse_ip;
use periscope_model::{
    Asn, CountryCode, Cpe23, CveId, CvssRange, DomainName, InvalidValue, Ipv4Cidr, Port,
    ProtocolToken,
};
use psl::Psl;

use crate::clause::{Clause, Field, Phrase};
use crate::query::Query;
use crate::violation::{Violation, ViolationCode};

/// The broadest CIDR prefix a query may name.
pub const MIN_CIDR_PREFIX: u8 = 24;

/// A parsed value: a whole standalone query, or one filter clause.
pub(crate) enum Parsed {
    Standalone(Query),
    Clause(Clause),
}

/// Parses the value of `field`.
pub(crate) fn parse(field: Field, value: &str) -> Result<Parsed, Violation> {
    let code = field.value_code();
    let err = |detail: String| Violation::new(code, detail);
    let model = |e: InvalidValue| err(format!("{field}: {}", e.reason));
    if value.is_empty() {
        return Err(err(format!("{field}: the value is missing")));
    }
    let clause = match field {
        Field::Domain => return parse_domain(value).map(|d| Parsed::Standalone(Query::Domain(d))),
        Field::Asn => return parse_asn(value).map(|a| Parsed::Standalone(Query::Asn(a))),
        Field::Cidr => return parse_cidr(value).map(|c| Parsed::Standalone(Query::Cidr(c))),
        Field::Port => Clause::Port(Port::parse(unquoted(field, value)?).map_err(model)?),
        Field::Protocol => Clause::Protocol(
            ProtocolToken::parse_case_insensitive(unquoted(field, value)?).map_err(|_| {
                err(format!(
                    "{value:?} is not a registered protocol token; the list is served by \
                     GET /v1/search/capabilities"
                ))
            })?,
        ),
        Field::Organization => Clause::Organization(phrase(field, value)?),
        Field::Product => Clause::Product(phrase(field, value)?),
        Field::CertificateName => {
            let v = unquoted(field, value)?;
            if v.contains('*') {
                return Err(err(
                    "certificate.name: wildcards are not supported; give one exact DNS name".into(),
                ));
            }
            Clause::CertificateName(DomainName::parse(v).map_err(model)?)
        }
        Field::Country => {
            let v = unquoted(field, value)?;
            Clause::Country(CountryCode::parse(v).map_err(|e| {
                match CountryCode::parse(&v.to_ascii_uppercase()) {
                    Ok(c) => err(format!("country codes are uppercase: write country:{c}")),
                    Err(_) => model(e),
                }
            })?)
        }
        Field::Cpe => Clause::Cpe(Cpe23::parse(quoted(field, value)?).map_err(model)?),
        Field::Cve => {
            let v = unquoted(field, value)?;
            Clause::Cve(CveId::parse(v).map_err(|e| {
                match CveId::parse(&v.to_ascii_uppercase()) {
                    Ok(c) => err(format!("CVE ids are uppercase: write cve:{c}")),
                    Err(_) => model(e),
                }
            })?)
        }
        Field::Cvss => Clause::Cvss(CvssRange::parse(unquoted(field, value)?).map_err(model)?),
        Field::Exploit => match unquoted(field, value)? {
            "yes" => Clause::Exploit(true),
            "no" => Clause::Exploit(false),
            other => {
                return Err(err(format!(
                    "exploit: {other:?} is not yes or no (exactly, in lowercase)"
                )));
            }
        },
    };
    Ok(Parsed::Clause(clause))
}

/// The text between the quotes of a value that must be double-quoted.
fn quoted(field: Field, value: &str) -> Result<&str, Violation> {
    let err = |why: &str| Violation::new(field.value_code(), format!("{field}: {why}"));
    let Some(rest) = value.strip_prefix('"') else {
        return Err(err(&format!(
            "the value must be double-quoted, as in {field}:\"{value}\""
        )));
    };
    match rest.find('"') {
        None => Err(err("the closing double quote is missing")),
        Some(i) if i + 1 != rest.len() => Err(err("text follows the closing double quote")),
        Some(i) => Ok(&rest[..i]),
    }
}

/// A value that must not be quoted.
fn unquoted(field: Field, value: &str) -> Result<&str, Violation> {
    if value.contains('"') {
        return Err(Violation::new(
            field.value_code(),
            format!("{field}: the value is written without quotes"),
        ));
    }
    Ok(value)
}

fn phrase(field: Field, value: &str) -> Result<Phrase, Violation> {
    Phrase::new(quoted(field, value)?)
        .map_err(|e| Violation::new(field.value_code(), format!("{field}: {}", e.reason)))
}

/// The `asn:` value: strict decimal, 1..=4294967295.
pub(crate) fn parse_asn(value: &str) -> Result<Asn, Violation> {
    Asn::parse(value).map_err(|e| {
        let digits = value
            .strip_prefix("AS")
            .or_else(|| value.strip_prefix("as"))
            .filter(|d| Asn::parse(d).is_ok());
        let detail = match digits {
            Some(d) => format!("asn: write the number without the AS prefix: asn:{d}"),
            None => format!("asn: {}", e.reason),
        };
        Violation::new(ViolationCode::InvalidAsn, detail)
    })
}

/// A CIDR in either form: IPv4 `a.b.c.d/n` with n in 24..=32, host bits zeroed.
pub(crate) fn parse_cidr(text: &str) -> Result<Ipv4Cidr, Violation> {
    let addr = text.split_once('/').map_or(text, |(a, _)| a);
    if addr.contains(':') {
        if addr.parse::<Ipv6Addr>().is_ok() {
            return Err(Violation::new(
                ViolationCode::Ipv6CidrNotSupported,
                format!("{text}: IPv6 CIDR search is not available; search one IPv6 address"),
            ));
        }
        return Err(Violation::new(
            ViolationCode::InvalidCidr,
            format!("{text:?} is not an IPv4 CIDR such as 192.0.2.0/24"),
        ));
    }
    let cidr = Ipv4Cidr::parse(text).map_err(|e| {
        Violation::new(
            ViolationCode::InvalidCidr,
            format!(
                "{text:?} is not an IPv4 CIDR such as 192.0.2.0/24: {}",
                e.reason
            ),
        )
    })?;
    if cidr.prefix() < MIN_CIDR_PREFIX {
        return Err(Violation::new(
            ViolationCode::CidrTooBroad,
            format!(
                "/{} is broader than /{MIN_CIDR_PREFIX}; search a /{MIN_CIDR_PREFIX} to /32",
                cidr.prefix()
            ),
        ));
    }
    Ok(cidr)
}

/// A domain search value: one registrable DNS name, without wildcard or URL syntax.
pub(crate) fn parse_domain(value: &str) -> Result<DomainName, Violation> {
    let err = |why: String| Violation::new(ViolationCode::InvalidDomain, format!("domain: {why}"));
    let url = "URL syntax is not allowed; give the host name only";
    if value.is_empty() {
        return Err(err("the value is missing".into()));
    }
    if value.contains('"') {
        return Err(err("the value is written without quotes".into()));
    }
    if value.contains('*') {
        return Err(err(
            "wildcards are not supported; subdomains are always included".into(),
        ));
    }
    if let Ok(ip) = parse_ip(value) {
        return Err(err(format!(
            "{ip} is an IP address; search it bare, without domain:"
        )));
    }
    if value.contains("://") {
        return Err(err(format!("{url} (no scheme)")));
    }
    if value.contains(['/', '?', '#']) {
        return Err(err(format!("{url} (no path, query or fragment)")));
    }
    if value.contains('@') {
        return Err(err(format!("{url} (no user name or email address)")));
    }
    if value.contains(':') {
        return Err(err(format!("{url} (no port)")));
    }
    let name = DomainName::parse(value).map_err(|e| err(e.reason.into_owned()))?;
    if let Some(label) = name.labels().find(|label| !is_valid_a_label(label)) {
        return Err(err(format!(
            "{label:?} is not a valid internationalised label (its punycode does not decode \
             to a name IDNA allows)"
        )));
    }
    if psl::List.domain(name.as_str().as_bytes()).is_none() {
        return Err(err(format!(
            "{name} is a public suffix; name a domain registered under it, such as \
             example.{name}"
        )));
    }
    Ok(name)
}

/// Whether `label` is acceptable as an IDNA label: a label that does not start with `xn--`
/// always is; one that does must decode from punycode to a Unicode label whose IDNA ASCII
/// form is that same label (so `xn--a`, `xn--zz` and punycode of plain ASCII are refused).
fn is_valid_a_label(label: &str) -> bool {
    if !label.starts_with("xn--") {
        return true;
    }
    let (unicode, decoded) = idna::domain_to_unicode(label);
    decoded.is_ok()
        && !unicode.is_ascii()
        && idna::domain_to_ascii(&unicode).is_ok_and(|ascii| ascii == label)
}

/// A bare address token: IPv4 or IPv6, IPv4-mapped IPv6 becoming IPv4.
pub(crate) fn bare_ip(text: &str) -> Option<IpAddr> {
    parse_ip(text).ok()
}
