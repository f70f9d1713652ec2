//! The typed query: the five search types, filter queries held in canonical clause order, and
//! the canonical text ([`fmt::Display`]) that parses back to the same value.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use periscope_model::{Asn, DomainName, Ipv4Cidr};

use crate::clause::{Clause, Field};
use crate::violation::{QueryError, Violation, ViolationCode};

/// The most clauses a filter query may combine.
pub const MAX_CLAUSES: usize = 3;

/// A parsed search. Two queries that ask for the same search are equal values, and
/// `to_string()` is their canonical text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Query {
    /// An exact-IP search. IPv4-mapped IPv6 addresses are held as IPv4 (the parser does
    /// this; a value built by hand should too, or its text will parse to the IPv4 form).
    Ip(IpAddr),
    /// An IPv4 CIDR search, /24 through /32, host bits zero.
    Cidr(Ipv4Cidr),
    /// A domain search over a registrable domain and its subdomains.
    Domain(DomainName),
    /// An ASN search.
    Asn(Asn),
    /// One to three filter clauses.
    Filter(FilterQuery),
}

/// Which of the five search types a query is; endpoints decide on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueryKind {
    /// Exact IP.
    Ip,
    /// IPv4 CIDR.
    Cidr,
    /// Domain.
    Domain,
    /// ASN.
    Asn,
    /// Filter clauses.
    Filter,
}

impl QueryKind {
    /// A lowercase name for logs and metrics (`query.kind`): `ip`, `cidr`, `domain`, `asn`,
    /// `filter`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueryKind::Ip => "ip",
            QueryKind::Cidr => "cidr",
            QueryKind::Domain => "domain",
            QueryKind::Asn => "asn",
            QueryKind::Filter => "filter",
        }
    }
}

impl fmt::Display for QueryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Query {
    /// The search type.
    pub fn kind(&self) -> QueryKind {
        match self {
            Query::Ip(_) => QueryKind::Ip,
            Query::Cidr(_) => QueryKind::Cidr,
            Query::Domain(_) => QueryKind::Domain,
            Query::Asn(_) => QueryKind::Asn,
            Query::Filter(_) => QueryKind::Filter,
        }
    }

    /// The filter query, when this is one.
    pub fn as_filter(&self) -> Option<&FilterQuery> {
        match self {
            Query::Filter(f) => Some(f),
            _ => None,
        }
    }

    /// True for a filter query of one host-level clause: organization alone, or country
    /// alone. Such a query is refused with `query_too_broad` by the search endpoint when it
    /// matches more hosts than one search may return; only the index can count that. Spec
    /// rule 4: "adding a port, protocol or country makes it runnable", so a second clause of
    /// any kind (organization with a country included) takes a query out of this set.
    pub fn may_be_too_broad(&self) -> bool {
        self.as_filter()
            .is_some_and(|f| f.clauses().len() == 1 && !f.names_service())
    }
}

impl fmt::Display for Query {
    /// The canonical, prefixed text: a bare address (RFC 5952 for IPv6), `cidr:a.b.c.d/n`,
    /// `domain:<ascii>`, `asn:<n>`, or the clauses in canonical order joined by one space.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Query::Ip(ip) => ip.fmt(f),
            Query::Cidr(c) => write!(f, "cidr:{c}"),
            Query::Domain(d) => write!(f, "domain:{d}"),
            Query::Asn(a) => write!(f, "asn:{a}"),
            Query::Filter(q) => q.fmt(f),
        }
    }
}

impl FromStr for Query {
    type Err = QueryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        crate::parse(s)
    }
}

/// One to [`MAX_CLAUSES`] filter clauses on distinct fields, held in canonical field order
/// (port, protocol, organization, product, certificate.name, country, cpe, cve, cvss,
/// exploit), so `protocol:ssh port:22` and `port:22 AND protocol:ssh` are equal values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FilterQuery {
    clauses: Vec<Clause>,
}

impl FilterQuery {
    /// Builds a filter query. Errors: no clause (`unsupported_query`), more than
    /// [`MAX_CLAUSES`] (`unsupported_query`), a field twice (`duplicate_field`).
    pub fn new(clauses: impl IntoIterator<Item = Clause>) -> Result<Self, Violation> {
        let mut clauses: Vec<Clause> = clauses.into_iter().collect();
        if clauses.is_empty() {
            return Err(Violation::new(
                ViolationCode::UnsupportedQuery,
                "a filter query needs at least one clause",
            ));
        }
        if clauses.len() > MAX_CLAUSES {
            return Err(too_many_clauses(clauses.len()));
        }
        clauses.sort_by_key(Clause::field);
        if let Some(w) = clauses.windows(2).find(|w| w[0].field() == w[1].field()) {
            return Err(Violation::new(
                ViolationCode::DuplicateField,
                format!("{} appears more than once", w[0].field()),
            ));
        }
        Ok(Self { clauses })
    }

    /// The clauses in canonical order.
    pub fn clauses(&self) -> &[Clause] {
        &self.clauses
    }

    /// The clause on `field`, if any.
    pub fn get(&self, field: Field) -> Option<&Clause> {
        self.clauses.iter().find(|c| c.field() == field)
    }

    /// True when some clause is service level (semantic rule 1).
    pub fn names_service(&self) -> bool {
        self.clauses.iter().any(Clause::is_service_level)
    }

    /// The service-level clauses, which must all match one service observation.
    pub fn service_clauses(&self) -> impl Iterator<Item = &Clause> {
        self.clauses.iter().filter(|c| c.is_service_level())
    }

    /// The host-level clauses (organization, country).
    pub fn host_clauses(&self) -> impl Iterator<Item = &Clause> {
        self.clauses.iter().filter(|c| c.is_host_level())
    }

    /// True when no further clause can be added ([`MAX_CLAUSES`] are present).
    pub fn is_full(&self) -> bool {
        self.clauses.len() >= MAX_CLAUSES
    }

    /// This query with `clause` added, replacing a clause on the same field. Errors with
    /// `unsupported_query` when that would make more than [`MAX_CLAUSES`].
    pub fn with_clause(&self, clause: Clause) -> Result<Self, Violation> {
        let field = clause.field();
        Self::new(
            self.clauses
                .iter()
                .filter(|c| c.field() != field)
                .cloned()
                .chain(std::iter::once(clause)),
        )
    }

    /// This query without its clause on `field`; `None` when nothing would be left.
    pub fn without(&self, field: Field) -> Option<Self> {
        Self::new(self.clauses.iter().filter(|c| c.field() != field).cloned()).ok()
    }
}

impl fmt::Display for FilterQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.clauses.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            c.fmt(f)?;
        }
        Ok(())
    }
}

pub(crate) fn too_many_clauses(n: usize) -> Violation {
    Violation::new(
        ViolationCode::UnsupportedQuery,
        format!("{n} clauses given; a query combines at most {MAX_CLAUSES} clauses"),
    )
}
