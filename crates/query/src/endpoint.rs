//! Endpoint checks: which search types the count, facets and exposure endpoints accept, when a
//! search is too broad, the exposure `resolution` member, the host-detail `ip` member, and the
//! search-cursor checks.
//!
//! All are pure decisions on values; the API layer calls them after [`crate::parse`] and turns
//! the [`Violation`] into its `validation_failed` answer.

use std::fmt;
use std::net::IpAddr;

use periscope_model::net::parse_ip;

use crate::query::{Query, QueryKind};
use crate::violation::{Violation, ViolationCode};

/// `POST /v1/search/count` takes ASN and filter queries; exact-IP, CIDR and domain queries
/// answer `count_not_supported`.
pub fn check_count(query: &Query) -> Result<(), Violation> {
    match query.kind() {
        QueryKind::Asn | QueryKind::Filter => Ok(()),
        kind @ (QueryKind::Ip | QueryKind::Cidr | QueryKind::Domain) => Err(Violation::new(
            ViolationCode::CountNotSupported,
            format!(
                "counting is available for ASN and filter queries, not {}",
                name(kind)
            ),
        )),
    }
}

/// `POST /v1/search/facets` takes filter queries only; exact-IP, CIDR, domain and ASN queries
/// answer `facets_not_supported`.
pub fn check_facets(query: &Query) -> Result<(), Violation> {
    match query.kind() {
        QueryKind::Filter => Ok(()),
        kind => Err(Violation::new(
            ViolationCode::FacetsNotSupported,
            format!(
                "Suggested Filters are available for filter queries, not {}",
                name(kind)
            ),
        )),
    }
}

/// `POST /v1/search/exposure` takes every search type except domain, which answers
/// `exposure_not_supported`.
pub fn check_exposure(query: &Query) -> Result<(), Violation> {
    match query.kind() {
        QueryKind::Domain => Err(Violation::new(
            ViolationCode::ExposureNotSupported,
            "the Globe view is not available for domain searches",
        )),
        _ => Ok(()),
    }
}

/// `POST /v1/search` declines a query of one host-level clause (organization alone or
/// country alone, see [`Query::may_be_too_broad`]) when it matches more than `max_hosts` hosts
/// (DECISIONS.md: 10,000 by default, configurable). `matching_hosts` is the index's count.
/// Every other query, and every query on the other endpoints, is never too broad.
pub fn check_breadth(query: &Query, matching_hosts: u64, max_hosts: u64) -> Result<(), Violation> {
    if query.may_be_too_broad() && matching_hosts > max_hosts {
        return Err(Violation::new(
            ViolationCode::QueryTooBroad,
            format!(
                "the query names no service and matches more than {max_hosts} hosts; add a \
                 port, protocol or country clause"
            ),
        ));
    }
    Ok(())
}

fn name(kind: QueryKind) -> &'static str {
    match kind {
        QueryKind::Ip => "exact-IP searches",
        QueryKind::Cidr => "CIDR searches",
        QueryKind::Domain => "domain searches",
        QueryKind::Asn => "ASN searches",
        QueryKind::Filter => "filter queries",
    }
}

/// The detail level of the exposure endpoint, coarsest to finest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resolution {
    /// `global`, the default.
    #[default]
    Global,
    /// `regional`.
    Regional,
    /// `local`.
    Local,
}

impl Resolution {
    /// Every level, coarsest first.
    pub const ALL: [Resolution; 3] = [Resolution::Global, Resolution::Regional, Resolution::Local];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Global => "global",
            Resolution::Regional => "regional",
            Resolution::Local => "local",
        }
    }

    /// The geotile precision of the level (DECISIONS.md: 4, 6, 8).
    pub fn geotile_precision(self) -> u8 {
        match self {
            Resolution::Global => 4,
            Resolution::Regional => 6,
            Resolution::Local => 8,
        }
    }
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses the exposure `resolution` member: exactly `global`, `regional` or `local`, else
/// `unsupported_resolution` (field `resolution`).
pub fn parse_resolution(s: &str) -> Result<Resolution, Violation> {
    Resolution::ALL
        .into_iter()
        .find(|r| r.as_str() == s)
        .ok_or_else(|| {
            Violation::new(
                ViolationCode::UnsupportedResolution,
                format!("{s:?} is not a resolution; use global, regional or local"),
            )
        })
}

/// Parses the host-detail `ip` member: one exact IPv4 or IPv6 address, no surrounding space,
/// no zone, no prefix; IPv4-mapped IPv6 becomes IPv4. Else `invalid_ip` (field `ip`).
pub fn parse_detail_ip(s: &str) -> Result<IpAddr, Violation> {
    parse_ip(s).map_err(|e| Violation::new(ViolationCode::InvalidIp, e.reason.into_owned()))
}

/// The prefix of every search cursor.
pub const SEARCH_CURSOR_PREFIX: &str = "sc1_";
/// The length of every search cursor.
pub const SEARCH_CURSOR_LEN: usize = 36;

/// Checks the shape of a search cursor: `sc1_` and 32 base64url characters, 36 in all. A
/// cursor of another shape answers `invalid` (field `cursor`); whether a well-shaped cursor
/// is known, unused and unexpired is for the cursor store to say (`cursor_gone`).
pub fn check_cursor_format(s: &str) -> Result<(), Violation> {
    let well_formed = s.len() == SEARCH_CURSOR_LEN
        && s.strip_prefix(SEARCH_CURSOR_PREFIX).is_some_and(|rest| {
            rest.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if well_formed {
        Ok(())
    } else {
        Err(Violation::new(
            ViolationCode::InvalidCursor,
            "the cursor is malformed; send back next_cursor exactly as it was received",
        ))
    }
}

/// Checks that a cursor is used with the query and limit it was issued for. Queries compare
/// as values, so `port:22 AND protocol:ssh` continues a cursor issued for
/// `protocol:ssh port:22`. A mismatch answers `query_mismatch` (field `cursor`).
pub fn check_cursor_binding(
    issued: (&Query, u32),
    requested: (&Query, u32),
) -> Result<(), Violation> {
    if issued == requested {
        return Ok(());
    }
    let detail = if issued.0 != requested.0 {
        format!("the cursor was issued for the query {}", issued.0)
    } else {
        format!("the cursor was issued for limit {}", issued.1)
    };
    Err(Violation::new(ViolationCode::QueryMismatch, detail))
}
