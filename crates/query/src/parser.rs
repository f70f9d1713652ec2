//! The parse pipeline: input limits, then structure, then query shape, then every clause value.
//!
//! Order of checks (each stage stops the parse when it found something):
//! 1. empty after trimming, or longer than [`MAX_QUERY_CHARS`] → `invalid_query_syntax`;
//! 2. structure: operators (`unsupported_operator`), grouping, stray words and misplaced `AND`
//!    (`invalid_query_syntax`), all reported together;
//! 3. shape: more than three clauses (`unsupported_query`), then a field twice
//!    (`duplicate_field`);
//! 4. clauses, all reported together: unknown fields, standalone searches combined with other
//!    clauses, and each value's own violation.

use crate::clause::Clause;
use crate::lexer;
use crate::query::{FilterQuery, MAX_CLAUSES, Query, too_many_clauses};
use crate::syntax::{self, RawClause};
use crate::value::{self, Parsed};
use crate::violation::{QueryError, Violation, ViolationCode};

/// The longest query, in Unicode characters, counted before trimming.
pub const MAX_QUERY_CHARS: usize = 512;

/// Parses query text into a [`Query`], or every violation found at the first failing stage.
pub fn parse(input: &str) -> Result<Query, QueryError> {
    let syntax =
        |why: String| QueryError::from(Violation::new(ViolationCode::InvalidQuerySyntax, why));
    let chars = input.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(syntax(format!(
            "the query has {chars} characters; at most {MAX_QUERY_CHARS} are allowed"
        )));
    }
    let input = input.trim();
    if input.is_empty() {
        return Err(syntax("the query is empty".into()));
    }
    let tokens = lexer::tokens(input);
    let raw = syntax::clauses(&tokens)?;
    if raw.len() > MAX_CLAUSES {
        return Err(too_many_clauses(raw.len()).into());
    }
    let mut fields: Vec<_> = raw.iter().filter_map(RawClause::field).collect();
    fields.sort();
    if let Some(w) = fields.windows(2).find(|w| w[0] == w[1]) {
        return Err(Violation::new(
            ViolationCode::DuplicateField,
            format!(
                "{} appears more than once; each field may be used once",
                w[0]
            ),
        )
        .into());
    }

    let combined = raw.len() > 1;
    let mut violations = Vec::new();
    let mut standalone = None;
    let mut clauses: Vec<Clause> = Vec::new();
    for r in raw {
        let parsed = match r {
            RawClause::Unknown(name) => Err(unknown_field(name)),
            RawClause::Ip(_) if combined => Err(Violation::new(
                ViolationCode::UnsupportedQuery,
                "an exact-IP search stands alone; it cannot be combined with other clauses",
            )),
            RawClause::Ip(ip) => Ok(Parsed::Standalone(Query::Ip(ip))),
            RawClause::Cidr(_) if combined => Err(alone(ViolationCode::InvalidCidr, "the CIDR")),
            RawClause::Cidr(text) => {
                value::parse_cidr(text).map(|c| Parsed::Standalone(Query::Cidr(c)))
            }
            RawClause::Field(field, _) if combined && field.is_standalone() => {
                Err(alone(field.value_code(), &format!("the {field}:")))
            }
            RawClause::Field(field, v) => value::parse(field, v),
        };
        match parsed {
            Ok(Parsed::Standalone(q)) => standalone = Some(q),
            Ok(Parsed::Clause(c)) => clauses.push(c),
            Err(v) => violations.push(v),
        }
    }
    if !violations.is_empty() {
        return Err(QueryError::new(violations));
    }
    match standalone {
        Some(q) => Ok(q),
        None => Ok(Query::Filter(FilterQuery::new(clauses)?)),
    }
}

fn alone(code: ViolationCode, what: &str) -> Violation {
    Violation::new(
        code,
        format!("{what} search stands alone; it cannot be combined with other clauses"),
    )
}

fn unknown_field(name: &str) -> Violation {
    let lower = name.to_lowercase();
    let suggestion = match lower.as_str() {
        "ip" | "host" | "ipv4" | "ipv6" | "address" => {
            Some("write the address bare, without a field")
        }
        "net" | "network" | "subnet" => Some("write cidr:a.b.c.d/n"),
        "org" | "organisation" => Some("the field is organization:\"…\""),
        "hostname" | "host.name" | "domains" => Some("the field is domain:"),
        "as" | "as_number" => Some("the field is asn:"),
        "ssl.cert.subject.cn" | "cert" | "certificate" | "ssl" | "tls" => {
            Some("the field is certificate.name:")
        }
        "vuln" | "vulns" => Some("the field is cve:"),
        "service" | "proto" => Some("the field is protocol:"),
        _ => None,
    };
    let detail = match (crate::clause::Field::from_name(&lower), suggestion) {
        (Some(f), _) => format!("{name:?} is not a field; field names are lowercase: {f}:"),
        (None, Some(s)) => format!("{name:?} is not a field; {s}"),
        (None, None) => format!(
            "{name:?} is not a field; the fields are domain, asn, cidr, port, protocol, \
             organization, product, certificate.name, country, cpe, cve, cvss and exploit"
        ),
    };
    Violation::new(ViolationCode::UnknownField, detail)
}
