//! The scan-index contract every engine implements, and the per-host semantics they share.
//!
//! This crate depends on neither the scan store nor roaring: an engine (the embedded one and
//! the reference oracle in `periscope-index`, ClickHouse in `periscope-clickhouse`) finds the
//! hosts a query matches its own way, then answers through the code here, so every engine
//! renders, explains and counts a host identically.
//!
//! - [`api`]: the [`ScanIndex`] trait, its requests and results.
//! - [`store`]: the current state of one address — [`HostRecord`] with its current services —
//!   and the stored domain-scan records, with the "current observation" rule that merges
//!   observations into them ([`HostRecord::apply`], [`DomainScans::apply`]).
//! - [`codec`]: the versioned binary encoding of host records and domain scans (the embedded
//!   engine's durable format; its canonical bytes also break ties in the current-observation
//!   rule).
//! - [`matching`]: which hosts a query matches (one host at a time) and the evidence
//!   (`asn_matches`, `domain_matches`, `organization_matches`) linking each to it.
//! - [`records`]: the one function that turns a host record into what a search row or a host
//!   detail shows (evidence, match reasons, names).
//! - [`facets`]: the six suggested-filter groups and their values.
//! - [`exposure`]: web-mercator geotiles and their buckets.
//! - [`detail`]: host-detail pages and their continuation.
//!
//! **Invariant:** hosts are ordered IPv4 first, then IPv6, each ascending
//! ([`periscope_model::ip_order_key`]); pages continue strictly after an address.

pub mod api;
pub mod codec;
pub mod detail;
pub mod exposure;
pub mod facets;
pub mod matching;
pub mod records;
pub mod store;

pub use api::{
    AsnMatch, AsnSource, Count, DomainMatch, DomainMatchSource, Exposure, ExposureBucket,
    FacetField, FacetGroup, FacetStatus, FacetValue, Facets, HostDetail, HostResult, IndexError,
    OrganizationMatch, OrganizationSource, Relation, ScanIndex, SearchOutcome, SearchPage,
    SearchRequest,
};
pub use exposure::{MAX_BUCKETS, tile_of};
pub use store::{ApplyOutcome, DomainScans, HostRecord, IndexConfig, StoredService};
