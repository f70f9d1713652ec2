//! Violations: the spec's violation codes, the request member each one names, and the error a
//! failed parse or endpoint check returns.
//!
//! The codes are defined once, by the `violation_codes!` table below, which also builds
//! [`ViolationCode::ALL`]; so a new code cannot be added without appearing in `ALL`, and the
//! test that every code is produced by some case fails until it has one.

use std::fmt;

macro_rules! violation_codes {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal, $field:literal, $title:literal; )*) => {
        /// A violation code of the specification's table (`validation_failed` answers).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ViolationCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ViolationCode {
            /// Every code, in the order of the specification's table.
            pub const ALL: &'static [ViolationCode] = &[$(ViolationCode::$variant),*];

            /// The snake_case wire code, for example `invalid_port`.
            pub fn as_str(self) -> &'static str {
                match self { $(ViolationCode::$variant => $wire,)* }
            }

            /// The request member the violation names: `query`, or `resolution`, `ip`,
            /// `cursor` for the codes the specification assigns to those members.
            pub fn field(self) -> &'static str {
                match self { $(ViolationCode::$variant => $field,)* }
            }

            /// A short title for people, in the wording of the spec's web application
            /// messages where it has one ("Invalid organization", "CIDR too broad").
            pub fn title(self) -> &'static str {
                match self { $(ViolationCode::$variant => $title,)* }
            }
        }
    };
}

violation_codes! {
    /// Not a parsable expression.
    InvalidQuerySyntax => "invalid_query_syntax", "query", "Invalid query";
    /// A field name is not an approved filter.
    UnknownField => "unknown_field", "query", "Unknown field";
    /// A field appears more than once.
    DuplicateField => "duplicate_field", "query", "Field used twice";
    /// Clauses joined by something other than a space or uppercase `AND`.
    UnsupportedOperator => "unsupported_operator", "query", "Unsupported operator";
    /// Port missing, non-numeric or out of range.
    InvalidPort => "invalid_port", "query", "Invalid port";
    /// Not an exact protocol registry value.
    UnsupportedProtocol => "unsupported_protocol", "query", "Unsupported protocol";
    /// Organization phrase unquoted or malformed.
    InvalidOrganization => "invalid_organization", "query", "Invalid organization";
    /// Product phrase unquoted or malformed.
    InvalidProduct => "invalid_product", "query", "Invalid product";
    /// Not one exact DNS name, or a wildcard.
    InvalidCertificateName => "invalid_certificate_name", "query", "Invalid certificate name";
    /// Not an uppercase ISO-2 code.
    InvalidCountry => "invalid_country", "query", "Invalid country";
    /// Not one complete quoted CPE 2.3 URI.
    InvalidCpe => "invalid_cpe", "query", "Invalid CPE";
    /// Not the exact `CVE-YYYY-NNNN` form.
    InvalidCve => "invalid_cve", "query", "Invalid CVE";
    /// Not an inclusive min-max range within 0.0 to 10.0.
    InvalidCvss => "invalid_cvss", "query", "Invalid CVSS";
    /// Not exactly `yes` or `no`.
    InvalidExploit => "invalid_exploit", "query", "Invalid exploit value";
    /// Does not parse as an IPv4 CIDR (or a CIDR combined with other clauses).
    InvalidCidr => "invalid_cidr", "query", "Invalid CIDR";
    /// The prefix is broader than /24.
    CidrTooBroad => "cidr_too_broad", "query", "CIDR too broad";
    /// IPv6 CIDR search is unavailable.
    Ipv6CidrNotSupported => "ipv6_cidr_not_supported", "query", "IPv6 CIDR not supported";
    /// Not a registrable domain, or a wildcard, URL syntax, a public suffix alone, or other
    /// filters.
    InvalidDomain => "invalid_domain", "query", "Invalid domain";
    /// Not the standalone decimal form.
    InvalidAsn => "invalid_asn", "query", "Invalid ASN";
    /// Names no service and matches more hosts than one search returns (decided by the index).
    QueryTooBroad => "query_too_broad", "query", "Query too broad";
    /// Matches no supported search type.
    UnsupportedQuery => "unsupported_query", "query", "Unsupported query";
    /// The count endpoint does not take exact-IP, CIDR or domain queries.
    CountNotSupported => "count_not_supported", "query", "Total not available";
    /// The exposure endpoint does not take domain queries.
    ExposureNotSupported => "exposure_not_supported", "query", "Globe view not available";
    /// The facets endpoint takes filter queries only.
    FacetsNotSupported => "facets_not_supported", "query", "Suggested Filters not available";
    /// The exposure resolution is not `global`, `regional` or `local`.
    UnsupportedResolution => "unsupported_resolution", "resolution", "Unsupported resolution";
    /// The host-detail address is not an exact IPv4 or IPv6 address.
    InvalidIp => "invalid_ip", "ip", "Invalid IP address";
    /// The search cursor is malformed.
    InvalidCursor => "invalid", "cursor", "Invalid cursor";
    /// The search cursor was issued for another query or limit.
    QueryMismatch => "query_mismatch", "cursor", "Cursor does not match the query";
}

impl fmt::Display for ViolationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One violation: a code and a human explanation of what was wrong and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The machine-readable code.
    pub code: ViolationCode,
    /// A sentence for people, such as `port 70000 is out of range 1..=65535`.
    pub detail: String,
}

impl Violation {
    /// Builds a violation.
    pub fn new(code: ViolationCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: detail.into(),
        }
    }

    /// The request member it names (see [`ViolationCode::field`]).
    pub fn field(&self) -> &'static str {
        self.code.field()
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

/// A query that was refused, with at least one violation; each code appears at most once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// The violations, in the order they were found.
    pub violations: Vec<Violation>,
}

impl QueryError {
    /// Builds an error from violations, keeping the first of each code.
    pub fn new(violations: impl IntoIterator<Item = Violation>) -> Self {
        let mut out: Vec<Violation> = Vec::new();
        for v in violations {
            if !out.iter().any(|o| o.code == v.code) {
                out.push(v);
            }
        }
        Self { violations: out }
    }

    /// The codes, in order.
    pub fn codes(&self) -> Vec<ViolationCode> {
        self.violations.iter().map(|v| v.code).collect()
    }

    /// True when some violation has `code`.
    pub fn has(&self, code: ViolationCode) -> bool {
        self.violations.iter().any(|v| v.code == code)
    }
}

impl std::error::Error for Violation {}

impl std::error::Error for QueryError {}

impl From<Violation> for QueryError {
    fn from(v: Violation) -> Self {
        Self {
            violations: vec![v],
        }
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            v.fmt(f)?;
        }
        Ok(())
    }
}
