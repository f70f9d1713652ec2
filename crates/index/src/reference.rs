//! The reference engine: [`ReferenceIndex`] scans every host record and applies
//! `docs/search-semantics.md` literally. It is the oracle that the fast engines are
//! property-tested against, so every rule is written the plainest way that is still linear in
//! the number of hosts per query.
//!
//! The per-host work lives in `periscope-scan`, split by question:
//! - `matching`: which hosts a query matches, and the evidence (`asn_matches`,
//!   `domain_matches`, `organization_matches`) linking each to it;
//! - `records`: the one function that turns a host record into the result record a search
//!   row or a host detail shows;
//! - `facets`: the six suggested-filter groups;
//! - `exposure`: web-mercator geotiles and their buckets;
//! - `detail`: host-detail pages and their continuation.
//!
//! The per-host pieces (matching one host, its evidence, its result record, tiles, the
//! continuation) are shared with the embedded engine (`crate::engine`), which finds the
//! matching hosts with bitmaps and then answers exactly as this engine does.

pub(crate) use periscope_scan::{detail, exposure, facets, matching, records};

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::ops::Bound;

use periscope_model::observation::{DomainScan, Observation};
use periscope_model::{DomainName, Timestamp, ip_order_key};
use periscope_query::{FilterQuery, Query, Resolution};

use crate::api::{
    Count, Exposure, Facets, HostDetail, HostResult, IndexError, ScanIndex, SearchOutcome,
    SearchPage, SearchRequest,
};
use crate::store::{ApplyOutcome, DomainScans, HostRecord, IndexConfig};

use matching::{Hit, HostView, Matcher};

pub use periscope_scan::exposure::{MAX_BUCKETS, tile_of};

/// The deliberately simple engine: every host record in host order, and the domain-scan
/// records. Every query is answered by scanning all hosts.
#[derive(Debug, Clone, Default)]
pub struct ReferenceIndex {
    config: IndexConfig,
    hosts: BTreeMap<u128, HostRecord>,
    domains: DomainScans,
}

impl ReferenceIndex {
    /// An empty index.
    pub fn new(config: IndexConfig) -> Self {
        Self {
            config,
            hosts: BTreeMap::new(),
            domains: DomainScans::default(),
        }
    }

    /// Merges one observation: a service observation into its address's record (created on
    /// first sight), a domain scan into the domain-scan records.
    pub fn apply(&mut self, obs: &Observation) -> ApplyOutcome {
        match obs {
            Observation::Service(s) => self
                .hosts
                .entry(ip_order_key(s.ip))
                .or_insert_with(|| HostRecord::new(s.ip))
                .apply(s),
            Observation::Domain(d) => self.domains.apply(d.clone()),
        }
    }

    /// The hosts current at `now` within `range` of host-order keys, in host order.
    fn hosts_in(
        &self,
        range: (Bound<u128>, Bound<u128>),
        now: Timestamp,
    ) -> impl Iterator<Item = HostView<'_>> {
        let retention = self.config.retention_secs;
        self.hosts
            .range(range)
            .filter_map(move |(_, rec)| HostView::current(rec, now, retention))
    }

    /// Every matching host strictly after `after` (when given), in host order.
    fn hits<'a>(
        &'a self,
        matcher: &'a Matcher<'a>,
        after: Option<IpAddr>,
        now: Timestamp,
    ) -> impl Iterator<Item = Hit<'a>> + 'a {
        let (low, high) = matcher.key_range();
        let low = match after.map(|a| ip_order_key(a.to_canonical()).checked_add(1)) {
            None => Some(low),
            Some(next) => next.map(|n| n.max(low)),
        };
        // An empty range when nothing can follow `after`, or the query's range lies before it.
        let range = match low {
            Some(low) if low <= high => (Bound::Included(low), Bound::Included(high)),
            _ => (Bound::Excluded(0), Bound::Included(0)),
        };
        self.hosts_in(range, now)
            .filter_map(move |view| matcher.hit(view))
    }

    fn count_of(&self, matcher: &Matcher<'_>, now: Timestamp) -> u64 {
        self.hits(matcher, None, now).count() as u64
    }

    /// One host result of a search row.
    fn row(&self, hit: Hit<'_>, matcher: &Matcher<'_>) -> HostResult {
        records::row(hit, matcher.query(), matcher.service_clauses(), |ip| {
            self.listing(ip)
        })
    }

    /// Names of the domain-scan records listing `ip`, by name.
    fn listing(&self, ip: IpAddr) -> Vec<&DomainName> {
        self.domains.listing(ip).map(|scan| &scan.name).collect()
    }

    /// The configuration.
    pub fn config(&self) -> IndexConfig {
        self.config
    }

    /// Every stored record (hosts or not, expired services included), in host order: the
    /// snapshot another engine can be built from.
    pub fn records(&self) -> impl Iterator<Item = &HostRecord> {
        self.hosts.values()
    }

    /// The stored domain-scan records.
    pub fn domain_scans(&self) -> &DomainScans {
        &self.domains
    }
}

impl ScanIndex for ReferenceIndex {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        let matcher = Matcher::new(req.query, req.resolved, &self.domains);
        if req.query.may_be_too_broad() {
            let matching = self.count_of(&matcher, req.now);
            if matching > self.config.max_host_only_results {
                return Ok(SearchOutcome::TooBroad { matching });
            }
        }
        let limit = req.limit.max(1);
        let mut hits = self.hits(&matcher, req.after, req.now);
        let page: Vec<Hit<'_>> = hits.by_ref().take(limit).collect();
        let has_more = hits.next().is_some();
        Ok(SearchOutcome::Page(SearchPage {
            hosts: page.into_iter().map(|h| self.row(h, &matcher)).collect(),
            has_more,
        }))
    }

    fn count(&self, query: &Query, now: Timestamp) -> Result<Count, IndexError> {
        let matcher = Matcher::new(query, &[], &self.domains);
        Ok(Count::exact(self.count_of(&matcher, now)))
    }

    fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<Facets, IndexError> {
        let hosts: Vec<HostView<'_>> = self
            .hosts_in((Bound::Unbounded, Bound::Unbounded), now)
            .collect();
        Ok(facets::facets(query, &hosts))
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        let matcher = Matcher::new(query, &[], &self.domains);
        let hits: Vec<Hit<'_>> = self.hits(&matcher, None, now).collect();
        Ok(exposure::exposure(&matcher, &hits, resolution))
    }

    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        Ok(self.domains.of_name(name).cloned().collect())
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        Ok(self.domains.listing(ip).cloned().collect())
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        let after = continuation.map(|c| detail::decode(c, ip)).transpose()?;
        let Some(view) = self
            .hosts
            .get(&ip_order_key(ip))
            .and_then(|rec| HostView::current(rec, now, self.config.retention_secs))
        else {
            return Ok(None);
        };
        Ok(Some(detail::page(&view, after, limit, self.listing(ip))))
    }
}

/// Feeds observation lines written to it (as `periscope_synth::write_dataset` writes them)
/// straight into a [`ReferenceIndex`], so tests and tools build an index from a generated
/// dataset without a file. A line the reader refuses is an `InvalidData` write error.
pub struct LineLoader {
    reader: periscope_model::observation::ObservationReader,
    index: ReferenceIndex,
    pending: Vec<u8>,
}

impl LineLoader {
    /// A loader reading with the clock `now` into an empty index with `config`.
    pub fn new(config: IndexConfig, now: periscope_model::Timestamp) -> Self {
        Self {
            reader: periscope_model::observation::ObservationReader::new(now),
            index: ReferenceIndex::new(config),
            pending: Vec::new(),
        }
    }

    /// The index of every complete line written so far.
    pub fn into_index(self) -> ReferenceIndex {
        self.index
    }
}

impl std::io::Write for LineLoader {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        let mut start = 0;
        while let Some(end) = self.pending[start..].iter().position(|b| *b == b'\n') {
            let line = std::str::from_utf8(&self.pending[start..start + end])
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
            let read = self
                .reader
                .read_line(line)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
            if let Some(obs) = read {
                self.index.apply(&obs);
            }
            start += end + 1;
        }
        self.pending.drain(..start);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
