//! The scan index: which hosts match a query, in IP order, and what may be shown of them.
//!
//! The contract lives in `periscope-scan` and is re-exported here unchanged, so callers keep
//! writing `periscope_index::ScanIndex`, `periscope_index::api::…`, `periscope_index::store::…`:
//! - [`store`]: the current state of the scan data — one [`HostRecord`] per address holding
//!   its current services, and the stored domain-scan records — and the "current observation"
//!   rule that merges observations into it ([`HostRecord::apply`], [`DomainScans::apply`]).
//! - [`api`]: the [`ScanIndex`] trait both channels search through, with its requests and
//!   results. Every engine (the reference below, the embedded engine, ClickHouse) implements
//!   it and passes the same conformance tests.
//! - [`codec`]: a compact, versioned binary encoding of host records and domain scans.
//!
//! This crate holds the engines that live in one process:
//! - [`durable`]: the embedded engine's durable store, [`durable::DurableStore`], a
//!   directory of sorted run files keyed by host order, each batch of observations appended
//!   as one run.
//! - [`engine`]: [`EmbeddedIndex`], the embedded engine — roaring-bitmap postings over host
//!   and service ordinals built from a snapshot of the host records, answering exactly as
//!   the reference does (it renders through the reference's per-host code).
//! - [`live`]: [`LiveIndex`], the store plus the snapshot answering searches, rebuilt and
//!   swapped in as batches arrive — what a running server holds.
//! - [`mod@reference`]: [`ReferenceIndex`], a deliberately simple engine that scans every host
//!   record and applies the specification literally. It is the oracle that property tests
//!   compare the fast engines with; it is not meant to be fast.
//!
//! **Invariant:** hosts are ordered IPv4 first, then IPv6, each ascending
//! ([`periscope_model::ip_order_key`]); pages continue strictly after an address.
//! **Invariant:** a host exists in the index exactly when it has at least one current service
//! (a completed or partial observation within the retention window).
//! **Boundary:** no DNS here. A domain search receives the addresses the service layer
//! resolved and merges them with stored names and domain-scan records.

pub use periscope_scan::{api, codec, store};

mod bloom;
pub mod durable;
pub mod engine;
pub mod live;
mod order_keys;
pub mod reference;

pub use periscope_scan::api::{
    AsnMatch, AsnSource, Count, DomainMatch, DomainMatchSource, Exposure, ExposureBucket,
    FacetField, FacetGroup, FacetStatus, FacetValue, Facets, HostDetail, HostResult, IndexError,
    OrganizationMatch, OrganizationSource, Relation, ScanIndex, SearchOutcome, SearchPage,
    SearchRequest,
};

pub use engine::{EmbeddedIndex, LayeredIndex};
pub use live::{LiveIndex, Opened, RefreshKind};
pub use periscope_scan::store::{
    ApplyOutcome, DomainScans, HostRecord, IndexConfig, StoredService,
};
pub use reference::{LineLoader, ReferenceIndex};
