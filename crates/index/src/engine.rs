//! The embedded engine: [`EmbeddedIndex`] answers every [`ScanIndex`] question with set
//! arithmetic over roaring bitmaps, built once from a snapshot of the host records.
//!
//! - Hosts get ordinals `0..n` in host order (sorted order keys, IPv4 ones as 4 bytes: exact IP,
//!   CIDR ranges and `after` are binary searches); services get ordinals `0..m` in host
//!   order, then port and protocol, with each host's service range and each service's host
//!   (`ServiceHosts`: about a byte a service, derived from the ranges).
//! - `postings`: per value, the bitmap of services (port, protocol, product words, CPE, CVE,
//!   CVSS in tenths, exploit flag, certificate names) or of hosts (country, ASN, stored names
//!   under each parent domain, organization values).
//! - A filter query intersects the postings of its service-level clauses (so every match is
//!   one service), maps them to hosts, and intersects the host-level postings. Counts are
//!   cardinalities; pages walk the host bitmap from the ordinal after `after`.
//! - Host postings of port, protocol, CVSS and exploit values (`ValueHosts`): a filter with
//!   one service-level clause on those fields is their host bitmap (its count a
//!   cardinality); with more service-level clauses, services are intersected as above.
//! - Counting the hosts of a set of services without mapping them all to hosts
//!   (`hosts_owning`): per port and per protocol, the *repeats* — its services preceded in
//!   their host by another service of that port (protocol). A service of an intersection
//!   that is preceded in its host by another one of it is a repeat of every clause's
//!   posting, so with a port or protocol clause the hosts are the services less the few
//!   candidates that prove repeats. CVSS ranges read postings of whole units from (`≥ d.0`)
//!   plus the tenths at their ends.
//! - `facets`: one walk over the match tallies every group without a clause of its own;
//!   groups with one count from host postings, from bitmaps and repeats (port, protocol,
//!   CVSS band and exploit among service-level clauses), or from a walk without that clause.
//! - `exposure`: a place id per host (zoom-8 tile and country), one pass over the match.
//! - `expiry`: per hour, the hosts whose oldest current service was observed then.
//! - `scans`: the domain-scan lookups by name (and parent domain) and by listed address;
//!   the records are read from the store snapshot by name when a query needs them.
//! - `layers`: [`LayeredIndex`], a base and a delta built from the records written after it,
//!   answering as one index; every answer of this engine is computed over *layers* (each
//!   with the ordinals a later layer shadows), a lone index being the one-layer case.
//!
//! What is shown is not re-derived here: matching hosts become result records, evidence,
//! tiles and host-detail pages through the reference engine's per-host code, so the answers
//! are the reference's by construction, and the property tests (`tests/engine.rs`) check the
//! sets. The records shown are read when shown: an index opened over the store
//! ([`EmbeddedIndex::from_store`]) keeps the store snapshot it was built from and decodes
//! only the hosts of a page (or of a host-detail request); an index built from an iterator
//! keeps the records in memory.
//!
//! **Snapshot:** the retention window is applied when the index is built — each host keeps
//! the services current at the build time `now`, and addresses left without one are dropped.
//! The `now` of a request is not consulted: to see new observations or move the window,
//! build a delta over the index ([`LayeredIndex::with_delta`]: it re-reads the records
//! written since and those of the hosts the window has reached, which `expiry` keeps by the
//! hour of their oldest service); [`crate::live::LiveIndex`] does that and swaps it in.
//! **Index file** (`persist`): [`EmbeddedIndex::save`] and [`EmbeddedIndex::load`] keep a
//! built index on disk so that a restart need not rebuild it.
//! **Memory:** postings (service and host level), per-service columns, per-host place
//! ids (a place: tile, country and position in micro-degrees) and country ids, ordinal maps
//! and domain-scan lookups ([`EmbeddedIndex::stats`]); over the store, no host record stays
//! in memory. Postings keyed by text are front-coded sorted string tables (`strings`), most
//! names holding their one host inline
//! and small sets in one pool; title and place ids take two bytes while they fit (`ids`).
//! A build ends by dropping what only building needed (the id lookups of titles,
//! organizations and places) and sizing every column exactly. The index file keeps its
//! bitmaps with runs of consecutive ordinals as run containers (hosts of one network, one
//! country), so an index loaded from it holds less than the one built; a server answers from
//! the file loaded, after a first build too ([`crate::live::LiveIndex::open`]).

mod expiry;
mod exposure;
mod facets;
mod front_coded;
mod ids;
mod layers;
mod persist;
mod postings;
mod scans;
mod strings;

pub use layers::LayeredIndex;
pub use persist::{DeltaJournal, FORMAT_VERSION, LoadError, Unattached};

use std::borrow::Cow;
use std::net::IpAddr;

use periscope_model::observation::DomainScan;
use periscope_model::{DomainName, Timestamp, ip_order_key};
use periscope_query::{Clause, FilterQuery, Phrase, Query, Resolution};
use roaring::RoaringBitmap;

use crate::api::{
    Count, Exposure, Facets, HostDetail, HostResult, IndexError, ScanIndex, SearchOutcome,
    SearchRequest,
};
use crate::durable::{DurableStore, HostKey, StoreError, StoreSnapshot};
use crate::order_keys::{OrderKeys, OutOfOrder};
use crate::reference::matching::{
    Hit, HostView, asn_matches, domain_matches, organization_matches,
};
use crate::reference::records;
use crate::store::{DomainScans, HostRecord, IndexConfig};

use layers::View;
use postings::{HostPostings, ServicePostings, ValueHosts, intersect};
use scans::{ScanRecords, ScanView};

/// Why an index could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The records were not in strictly ascending host order.
    #[error("host records out of order: {ip} does not follow the previous address")]
    OutOfOrder {
        /// The first address out of place.
        ip: IpAddr,
    },
    /// More hosts or services than 32-bit ordinals can number.
    #[error("too many hosts or services for one index")]
    TooLarge,
    /// Reading the durable store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The index file just written could not be read back.
    #[error("cannot read back the index file {} just written", path.display())]
    Reload {
        /// The index file.
        path: std::path::PathBuf,
        /// Why it was not usable.
        #[source]
        source: LoadError,
    },
    /// The index was built but could not be written to its file.
    #[error("cannot write the index file {}", path.display())]
    Save {
        /// The index file.
        path: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Sizes of a built index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Hosts (addresses with a current service at the build time).
    pub hosts: u64,
    /// Current services.
    pub services: u64,
    /// Approximate bytes of the postings, the per-service columns, the ordinal maps and the
    /// domain-scan lookups — everything but the host records kept for rendering.
    pub index_bytes: u64,
}

/// The embedded engine over one snapshot; see the module documentation.
#[derive(Debug)]
pub struct EmbeddedIndex {
    config: IndexConfig,
    built_at: Timestamp,
    /// The store generation the index was built from (0 when built from an iterator).
    generation: u64,
    /// Host ordinal → host-order key, ascending.
    keys: OrderKeys,
    /// Where the records shown are read from.
    records: Records,
    /// Host ordinal → first service ordinal; one more entry closes the last range.
    service_start: Vec<u32>,
    /// Service ordinal → host ordinal, derived from `service_start`.
    service_hosts: ServiceHosts,
    /// Host ordinal → GeoIP country as a dense id (`facets::country_id`): the country
    /// column facets and exposure read of every match, two bytes a host.
    countries: Vec<u16>,
    services: ServicePostings,
    hosts: HostPostings,
    /// Per port, protocol, CVSS tenths and exploit flag: the hosts holding it.
    value_hosts: ValueHosts,
    /// Host ordinal → place id (zoom-8 tile, country and position), for exposure.
    place_ids: exposure::Places,
    /// Per hour, the hosts whose oldest current service was observed then: which hosts the
    /// retention window reaches as time passes.
    expiry: expiry::Expiry,
    scans: ScanRecords,
}

/// Service ordinal → host ordinal in about a byte a service: per block of [`Self::BLOCK`]
/// services the host of its first, and per service how many hosts after that one its own is
/// (below the block's length, as every host has a service). Built from `service_start`,
/// where a column of host ordinals took four bytes a service.
#[derive(Debug, Default)]
struct ServiceHosts {
    first: Box<[u32]>,
    after: Box<[u8]>,
}

impl ServiceHosts {
    const BLOCK: usize = 256;

    /// The hosts of the services of `starts` (each host's first service, then the number of
    /// services); `None` when a host has no service.
    fn new(starts: &[u32]) -> Option<Self> {
        let services = starts.last().copied().unwrap_or(0) as usize;
        let mut first = Vec::with_capacity(services.div_ceil(Self::BLOCK));
        let mut after = Vec::with_capacity(services);
        for (host, range) in starts.windows(2).enumerate() {
            if range[0] >= range[1] {
                return None;
            }
            let host = u32::try_from(host).ok()?;
            // The host's services a block at a time.
            let (mut s, end) = (range[0] as usize, range[1] as usize);
            while s < end {
                if s.is_multiple_of(Self::BLOCK) {
                    first.push(host);
                }
                let upto = (s / Self::BLOCK + 1).saturating_mul(Self::BLOCK).min(end);
                let offset = u8::try_from(host - first.last().copied()?).ok()?;
                after.extend(std::iter::repeat_n(offset, upto - s));
                s = upto;
            }
        }
        Some(Self {
            first: first.into_boxed_slice(),
            after: after.into_boxed_slice(),
        })
    }

    /// The host owning service `s`; `None` past the last service.
    #[inline]
    fn of(&self, s: u32) -> Option<u32> {
        let s = s as usize;
        Some(self.first.get(s / Self::BLOCK)? + u32::from(*self.after.get(s)?))
    }

    fn heap_bytes(&self) -> usize {
        self.first.len() * 4 + self.after.len()
    }
}

/// Where an index reads the records it shows.
#[derive(Debug)]
enum Records {
    /// Host ordinal → record (an index built from an iterator).
    Memory(Vec<HostRecord>),
    /// The store snapshot the index was built from, read by host-order key.
    Store(Box<StoreSnapshot>),
}

/// The hosts a query matches, with what their evidence needs.
struct Selection<'a> {
    /// Matching host ordinals.
    hosts: RoaringBitmap,
    evidence: Evidence<'a>,
}

enum Evidence<'a> {
    None,
    Asn(periscope_model::Asn),
    Domain {
        name: &'a DomainName,
        /// Ordinals of hosts DNS resolved the name to.
        resolved: RoaringBitmap,
    },
    Organization(&'a Phrase),
}

impl EmbeddedIndex {
    /// Builds the index of `records` (strictly ascending host order, as
    /// [`DurableStore::hosts`] yields them) and `domains`, keeping what is current at `now`.
    pub fn build(
        config: IndexConfig,
        now: Timestamp,
        records: impl IntoIterator<Item = HostRecord>,
        domains: DomainScans,
    ) -> Result<Self, BuildError> {
        Self::try_build(config, now, records.into_iter().map(Ok), domains, true)
    }

    /// Builds the index of everything in `store` (one consistent read), current at `now`.
    pub fn from_store(
        store: &DurableStore,
        config: IndexConfig,
        now: Timestamp,
    ) -> Result<Self, BuildError> {
        Self::from_snapshot(store.snapshot()?, config, now)
    }

    /// Builds the index of a store snapshot, current at `now`; the index keeps the snapshot
    /// and reads the records it shows from it.
    pub fn from_snapshot(
        snapshot: StoreSnapshot,
        config: IndexConfig,
        now: Timestamp,
    ) -> Result<Self, BuildError> {
        let domains = snapshot.domain_scans()?;
        let mut index = Self::try_build(config, now, snapshot.hosts()?, domains, false)?;
        index.generation = snapshot.generation();
        index.scans.read_from(snapshot.clone());
        index.records = Records::Store(Box::new(snapshot));
        Ok(index)
    }

    fn try_build(
        config: IndexConfig,
        now: Timestamp,
        records: impl Iterator<Item = Result<HostRecord, StoreError>>,
        domains: DomainScans,
        keep_records: bool,
    ) -> Result<Self, BuildError> {
        let cutoff = now.unix().saturating_sub(config.retention_secs);
        let mut index = Self {
            config,
            built_at: now,
            generation: 0,
            keys: OrderKeys::default(),
            records: Records::Memory(Vec::new()),
            service_start: vec![0],
            service_hosts: ServiceHosts::default(),
            countries: Vec::new(),
            services: ServicePostings::default(),
            hosts: HostPostings::default(),
            value_hosts: ValueHosts::default(),
            place_ids: exposure::Places::default(),
            expiry: expiry::Expiry::default(),
            scans: ScanRecords::new(domains).map_err(|_| BuildError::TooLarge)?,
        };
        let mut previous: Option<u128> = None;
        for rec in records {
            let mut rec = rec?;
            let key = ip_order_key(rec.ip);
            if previous.is_some_and(|last| last >= key) {
                return Err(BuildError::OutOfOrder { ip: rec.ip });
            }
            previous = Some(key);
            rec.services.retain(|_, s| s.observed_at.unix() >= cutoff);
            if rec.services.is_empty() {
                continue;
            }
            let host = u32::try_from(index.keys.len()).map_err(|_| BuildError::TooLarge)?;
            let start = index.service_start.last().copied().unwrap_or(0);
            let mut end = start;
            for s in rec.services.values() {
                index.services.add(end, s);
                end = end.checked_add(1).ok_or(BuildError::TooLarge)?;
            }
            index.services.add_host(start..end);
            index.service_start.push(end);
            let oldest = rec.services.values().map(|s| s.observed_at.unix()).min();
            index.expiry.add(host, oldest.unwrap_or(i64::MAX));
            index.hosts.add(host, &rec);
            index.value_hosts.add(host, rec.services.values());
            let position = rec.position.as_ref().map(|(p, _)| *p);
            let country = rec.location.as_ref().and_then(|(l, _)| l.country_code);
            index.place_ids.add(position.as_ref(), country);
            index.countries.push(facets::country_id(country));
            index
                .keys
                .push(key)
                .map_err(|OutOfOrder| BuildError::OutOfOrder { ip: rec.ip })?;
            if keep_records && let Records::Memory(records) = &mut index.records {
                records.push(rec);
            }
        }
        index.finish()?;
        Ok(index)
    }

    /// Ends a build: what was kept only to build is dropped and every column is sized
    /// exactly, so that a built index holds what a loaded one does.
    fn finish(&mut self) -> Result<(), BuildError> {
        self.services.finish().map_err(|_| BuildError::TooLarge)?;
        self.hosts.finish().map_err(|_| BuildError::TooLarge)?;
        self.place_ids.finish();
        self.keys.shrink_to_fit();
        self.service_start.shrink_to_fit();
        // Every host kept has a current service.
        self.service_hosts = ServiceHosts::new(&self.service_start).ok_or(BuildError::TooLarge)?;
        self.countries.shrink_to_fit();
        if let Records::Memory(records) = &mut self.records {
            records.shrink_to_fit();
        }
        Ok(())
    }

    /// The store generation the index was built from (0 when built from an iterator).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The instant the retention window was applied at.
    pub fn built_at(&self) -> Timestamp {
        self.built_at
    }

    /// Sizes of the index.
    pub fn stats(&self) -> EngineStats {
        let ordinals = self.keys.heap_bytes()
            + self.service_start.len() * 4
            + self.service_hosts.heap_bytes()
            + self.countries.len() * 2;
        let bytes = ordinals
            + self.services.heap_bytes()
            + self.hosts.heap_bytes()
            + self.value_hosts.heap_bytes()
            + self.place_ids.heap_bytes()
            + self.expiry.heap_bytes();
        EngineStats {
            hosts: self.keys.len() as u64,
            services: u64::from(self.service_count()),
            index_bytes: bytes as u64,
        }
    }

    /// Host ordinals that may hold a service the retention window has left by `now` (every
    /// host that did at build time is not in the index): a superset by at most an hour's
    /// worth of hosts.
    fn expiring(&self, now: Timestamp) -> RoaringBitmap {
        let cutoff = |t: Timestamp| t.unix().saturating_sub(self.config.retention_secs);
        self.expiry.due(cutoff(self.built_at), cutoff(now))
    }

    fn host_count(&self) -> u32 {
        // `try_build` numbers hosts with `u32`.
        u32::try_from(self.keys.len()).unwrap_or(u32::MAX)
    }

    /// The ordinal of the host at host-order key `key`.
    fn ordinal_of(&self, key: u128) -> Option<u32> {
        self.keys
            .binary_search(key)
            .ok()
            .and_then(|i| u32::try_from(i).ok())
    }

    /// The first ordinal whose key is at least `key`.
    fn ordinal_from(&self, key: u128) -> u32 {
        u32::try_from(self.keys.below(key)).unwrap_or(u32::MAX)
    }

    /// Services in the index.
    fn service_count(&self) -> u32 {
        self.service_start.last().copied().unwrap_or(0)
    }

    /// The services of host `h`, as a range of service ordinals.
    fn service_range(&self, h: u32) -> std::ops::Range<u32> {
        let h = h as usize;
        let start = self.service_start.get(h).copied().unwrap_or(0);
        let end = self.service_start.get(h + 1).copied().unwrap_or(start);
        start..end
    }

    /// The record of host `h` (its services may include some no longer current at
    /// `built_at`: read it through [`Self::view`]).
    fn record(&self, h: u32) -> Result<Option<Cow<'_, HostRecord>>, IndexError> {
        match &self.records {
            Records::Memory(records) => Ok(records.get(h as usize).map(Cow::Borrowed)),
            Records::Store(snapshot) => {
                let Some(key) = self.keys.get(h as usize) else {
                    return Ok(None);
                };
                snapshot
                    .host_by_key(HostKey(key.to_be_bytes()))
                    .map(|rec| rec.map(Cow::Owned))
                    .map_err(|e| IndexError::Unavailable(with_causes(&e)))
            }
        }
    }

    /// The view of `rec` with the services current at `built_at`.
    fn view<'r>(&self, rec: &'r HostRecord) -> Option<HostView<'r>> {
        HostView::current(rec, self.built_at, self.config.retention_secs)
    }

    fn all_hosts(&self) -> RoaringBitmap {
        let mut all = RoaringBitmap::new();
        all.insert_range(0..self.host_count());
        all
    }

    /// The hosts owning the given services.
    fn hosts_of(&self, services: &RoaringBitmap) -> RoaringBitmap {
        let mut hosts = Vec::new();
        let mut it = services.iter();
        while let Some(s) = it.next() {
            let Some(h) = self.service_hosts.of(s) else {
                break;
            };
            hosts.push(h);
            // The host's other services add nothing.
            it.advance_to(self.service_range(h).end);
        }
        RoaringBitmap::from_sorted_iter(hosts).unwrap_or_default()
    }

    /// The services satisfying every service-level clause among `clauses`; `None` when there
    /// is none.
    fn services_satisfying<'c>(
        &self,
        clauses: impl IntoIterator<Item = &'c Clause>,
    ) -> Option<RoaringBitmap> {
        let postings: Vec<_> = clauses
            .into_iter()
            .filter(|c| c.is_service_level())
            .map(|c| self.services.posting(c))
            .collect();
        if postings.is_empty() {
            return None;
        }
        Some(intersect(postings.iter().map(AsRef::as_ref).collect()))
    }

    /// [`Self::services_satisfying`] without copying a single clause's posting.
    fn service_set<'c>(
        &self,
        clauses: impl IntoIterator<Item = &'c Clause>,
    ) -> Option<Cow<'_, RoaringBitmap>> {
        let mut postings: Vec<Cow<'_, RoaringBitmap>> = clauses
            .into_iter()
            .filter(|c| c.is_service_level())
            .map(|c| self.services.posting(c))
            .collect();
        match postings.len() {
            0 => None,
            1 => postings.pop(),
            _ => Some(Cow::Owned(intersect(
                postings.iter().map(AsRef::as_ref).collect(),
            ))),
        }
    }

    /// The hosts owning a service that satisfies the query's only service-level clause, from
    /// the value's host postings; `None` when the query has another number of service-level
    /// clauses or its clause's field has no host postings.
    fn hosts_of_single<'c>(
        &self,
        clauses: impl IntoIterator<Item = &'c Clause>,
    ) -> Option<Cow<'_, RoaringBitmap>> {
        let mut service = clauses.into_iter().filter(|c| c.is_service_level());
        let (Some(only), None) = (service.next(), service.next()) else {
            return None;
        };
        self.value_hosts.hosts(only)
    }

    /// Among the services satisfying every service-level clause of `clauses`, a superset of
    /// those preceded in their host by another such service: the intersection of the
    /// clauses' repeats (port and protocol keep them); `None` when no clause keeps them.
    fn repeats<'c>(&self, clauses: impl IntoIterator<Item = &'c Clause>) -> Option<RoaringBitmap> {
        let parts: Vec<Cow<'_, RoaringBitmap>> = clauses
            .into_iter()
            .filter_map(|c| self.services.repeats(c))
            .collect();
        if parts.is_empty() {
            return None;
        }
        Some(intersect(parts.iter().map(AsRef::as_ref).collect()))
    }

    /// The number of hosts owning a service in `services`. `repeats`, when known, holds
    /// every service of `services` preceded in its host by another of them (see
    /// [`Self::repeats`]): then the count is `|services|` less those of the few candidates
    /// that are repeats, each checked against its host's earlier services; otherwise (or
    /// with many candidates) it is one pass over `services`, host by host.
    fn hosts_owning(&self, services: &RoaringBitmap, repeats: Option<&RoaringBitmap>) -> u64 {
        if let Some(repeats) = repeats {
            let candidates = services & repeats;
            // Each candidate costs a few lookups, each service of a pass one step.
            if candidates.len() <= services.len() / 16 + 64 {
                let repeated = candidates
                    .iter()
                    .filter(|s| {
                        let first = self
                            .service_hosts
                            .of(*s)
                            .map_or(*s, |h| self.service_range(h).start);
                        (first..*s).any(|t| services.contains(t))
                    })
                    .count();
                return services.len() - repeated as u64;
            }
        }
        let mut last = u32::MAX;
        let mut hosts = 0;
        for s in services {
            let Some(h) = self.service_hosts.of(s) else {
                break;
            };
            hosts += u64::from(h != last);
            last = h;
        }
        hosts
    }

    /// The number of hosts matching a filter query, less those in `shadow` (whose services
    /// are `shadow_services`, when given).
    fn count_filter(
        &self,
        clauses: &[Clause],
        shadow: Option<&RoaringBitmap>,
        shadow_services: Option<&RoaringBitmap>,
    ) -> u64 {
        let hosts = self.hosts_satisfying(clauses);
        // |M \ S| = |M| - |M ∩ S|: the shadow is small, so `∩ S` is taken first.
        let hidden = |set: &RoaringBitmap, hosts: Option<&RoaringBitmap>| {
            shadow.map_or(0, |s| {
                let shown = set & s;
                hosts.map_or_else(|| shown.len(), |h| shown.intersection_len(h))
            })
        };
        if !clauses.iter().any(Clause::is_service_level) {
            return match &hosts {
                Some(h) => h.len() - hidden(h, None),
                None => u64::from(self.host_count()) - shadow.map_or(0, RoaringBitmap::len),
            };
        }
        if let Some(owners) = self.hosts_of_single(clauses) {
            let all = match &hosts {
                Some(h) => owners.intersection_len(h),
                None => owners.len(),
            };
            return all - hidden(&owners, hosts.as_ref());
        }
        // Several service-level clauses and no host-level one: the services satisfying them
        // all (less the shadow's), counted by host without mapping them to hosts.
        if hosts.is_none()
            && shadow.is_none() == shadow_services.is_none()
            && let Some(services) = self.service_set(clauses)
        {
            let mut services = services.into_owned();
            if let Some(hidden) = shadow_services {
                services -= hidden;
            }
            return self.hosts_owning(&services, self.repeats(clauses).as_ref());
        }
        self.filter(clauses, shadow).len()
    }

    /// Calls `f(host, services)` for every host in `hosts` (every host when `None`) and not
    /// in `shadow` owning a service in `services` (any service when `None`), in host order,
    /// with its services there, ascending.
    fn for_each_host(
        &self,
        services: Option<&RoaringBitmap>,
        hosts: Option<&RoaringBitmap>,
        shadow: Option<&RoaringBitmap>,
        f: impl FnMut(u32, &[u32]),
    ) {
        match shadow {
            // One index alone: the walk without a shadow test at all.
            None => self.walk(services, hosts, |_| false, f),
            // Hosts come in ascending order: the shadow is read alongside, not looked up.
            Some(shadow) => {
                let mut shadowed = shadow.iter().peekable();
                let hides = move |h: u32| {
                    while shadowed.next_if(|s| *s < h).is_some() {}
                    shadowed.peek() == Some(&h)
                };
                self.walk(services, hosts, hides, f);
            }
        }
    }

    /// [`Self::for_each_host`] with `hides` saying, for ascending hosts, which to leave out.
    #[inline]
    fn walk(
        &self,
        services: Option<&RoaringBitmap>,
        hosts: Option<&RoaringBitmap>,
        mut hides: impl FnMut(u32) -> bool,
        mut f: impl FnMut(u32, &[u32]),
    ) {
        let mut run: Vec<u32> = Vec::with_capacity(16);
        let Some(services) = services else {
            let mut each = |h: u32| {
                if hides(h) {
                    return;
                }
                run.clear();
                run.extend(self.service_range(h));
                f(h, &run);
            };
            match hosts {
                Some(set) => set.iter().for_each(&mut each),
                None => (0..self.host_count()).for_each(&mut each),
            }
            return;
        };
        let mut current = u32::MAX;
        let mut keep = false;
        for s in services {
            let Some(h) = self.service_hosts.of(s) else {
                break;
            };
            if h != current {
                if keep && !run.is_empty() {
                    f(current, &run);
                }
                run.clear();
                current = h;
                keep = hosts.is_none_or(|set| set.contains(h)) && !hides(h);
            }
            if keep {
                run.push(s);
            }
        }
        if keep && !run.is_empty() {
            f(current, &run);
        }
    }

    /// The hosts satisfying every host-level clause among `clauses`; `None` when there is
    /// none.
    fn hosts_satisfying<'c>(
        &self,
        clauses: impl IntoIterator<Item = &'c Clause>,
    ) -> Option<RoaringBitmap> {
        let mut acc: Option<RoaringBitmap> = None;
        for clause in clauses {
            let hosts = match clause {
                Clause::Country(cc) => self.hosts.country(*cc).into_owned(),
                Clause::Organization(phrase) => self.hosts.organization(phrase),
                _ => continue,
            };
            acc = Some(match acc {
                Some(a) => a & hosts,
                None => hosts,
            });
        }
        acc
    }

    /// The hosts of a filter query, less those in `shadow`.
    fn filter(&self, clauses: &[Clause], shadow: Option<&RoaringBitmap>) -> RoaringBitmap {
        let mut hosts = match self.hosts_of_single(clauses) {
            Some(owners) => owners.into_owned(),
            None => match self.service_set(clauses) {
                Some(s) => self.hosts_of(&s),
                None => self.all_hosts(),
            },
        };
        if let Some(h) = self.hosts_satisfying(clauses) {
            hosts &= h;
        }
        if let Some(s) = shadow {
            hosts -= s;
        }
        hosts
    }

    /// The hosts `query` matches, less those in `shadow`; a domain query takes the addresses
    /// its domain-scan records list from `listed` (see [`ScanView`]).
    fn select<'a>(
        &'a self,
        query: &'a Query,
        resolved: &[IpAddr],
        listed: &[u128],
        shadow: Option<&RoaringBitmap>,
    ) -> Selection<'a> {
        let mut selection = self.select_all(query, resolved, listed);
        if let Some(s) = shadow {
            selection.hosts -= s;
        }
        selection
    }

    fn select_all<'a>(
        &'a self,
        query: &'a Query,
        resolved: &[IpAddr],
        listed: &[u128],
    ) -> Selection<'a> {
        let bare = |hosts| Selection {
            hosts,
            evidence: Evidence::None,
        };
        match query {
            Query::Ip(ip) => {
                let mut hosts = RoaringBitmap::new();
                if let Some(h) = self.ordinal_of(ip_order_key(ip.to_canonical())) {
                    hosts.insert(h);
                }
                bare(hosts)
            }
            Query::Cidr(c) => {
                let low = self.ordinal_from(ip_order_key(IpAddr::V4(c.network())));
                let high = self.ordinal_from(ip_order_key(IpAddr::V4(c.last())) + 1);
                let mut hosts = RoaringBitmap::new();
                hosts.insert_range(low..high);
                bare(hosts)
            }
            Query::Asn(asn) => Selection {
                hosts: self.hosts.asn(*asn).into_owned(),
                evidence: Evidence::Asn(*asn),
            },
            Query::Domain(name) => {
                let mut hosts = self.hosts.names_within(name.as_str()).into_owned();
                let resolved: RoaringBitmap = resolved
                    .iter()
                    .filter_map(|ip| self.ordinal_of(ip_order_key(ip.to_canonical())))
                    .collect();
                hosts |= &resolved;
                hosts.extend(listed.iter().filter_map(|key| self.ordinal_of(*key)));
                Selection {
                    hosts,
                    evidence: Evidence::Domain { name, resolved },
                }
            }
            Query::Filter(f) => {
                let hosts = self.filter(f.clauses(), None);
                Selection {
                    hosts,
                    evidence: filter_evidence(f),
                }
            }
        }
    }

    /// The hit of matching host `h` (record `rec`): its view and the evidence linking it to
    /// the query; `scan_names` are the names of the domain-scan records listing its address.
    fn hit<'r>(
        &self,
        h: u32,
        rec: &'r HostRecord,
        evidence: &Evidence<'_>,
        scan_names: &[DomainName],
    ) -> Option<Hit<'r>> {
        let view = self.view(rec)?;
        let mut hit = Hit {
            organization: Vec::new(),
            domain: Vec::new(),
            asn: Vec::new(),
            view,
        };
        match evidence {
            Evidence::None => {}
            Evidence::Asn(asn) => hit.asn = asn_matches(*asn, hit.view.rec),
            Evidence::Domain { name, resolved } => {
                let within: Vec<&DomainName> =
                    scan_names.iter().filter(|n| n.is_within(name)).collect();
                hit.domain = domain_matches(name, resolved.contains(h), &within, hit.view.rec);
            }
            Evidence::Organization(phrase) => {
                hit.organization = organization_matches(phrase, &hit.view);
            }
        }
        Some(hit)
    }

    fn row(
        &self,
        h: u32,
        query: &Query,
        selection: &Selection<'_>,
        scans: &ScanView<'_>,
    ) -> Result<Option<HostResult>, IndexError> {
        let Some(rec) = self.record(h)? else {
            return Ok(None);
        };
        // The names of the records listing the address, read once for the row and its
        // evidence (those within the name): for a domain query only.
        let listed = match query {
            Query::Domain(_) => scans.names_listing(rec.ip)?,
            _ => Vec::new(),
        };
        let Some(hit) = self.hit(h, &rec, &selection.evidence, &listed) else {
            return Ok(None);
        };
        let service_clauses: Vec<Clause> = query
            .as_filter()
            .map(|f| f.service_clauses().cloned().collect())
            .unwrap_or_default();
        Ok(Some(records::row(hit, query, &service_clauses, |_| {
            listed.iter().collect()
        })))
    }

    /// Calls `f(host, services counted)` for every host `query` matches and `shadow` does
    /// not hold, in host order: what exposure sums.
    fn for_each_match(
        &self,
        query: &Query,
        listed: &[u128],
        shadow: Option<&RoaringBitmap>,
        mut f: impl FnMut(u32, u64),
    ) {
        // A filter naming a service: one walk over its services, host by host.
        if let Query::Filter(flt) = query
            && let Some(services) = self.service_set(flt.clauses())
        {
            let hosts = self.hosts_satisfying(flt.clauses());
            self.for_each_host(Some(&services), hosts.as_ref(), shadow, |h, run| {
                f(h, run.len() as u64);
            });
            return;
        }
        let selection = self.select(query, &[], listed, shadow);
        for h in &selection.hosts {
            let range = self.service_range(h);
            f(h, u64::from(range.end - range.start));
        }
    }
}

impl EmbeddedIndex {
    /// The first `limit` hosts from ordinal `start` owning a service in `services` (and in
    /// `hosts`, when given, and not in `shadow`), and whether more exist: a walk over the
    /// services from the first service of `start`, one step per host, so a page costs what
    /// it shows rather than what matches.
    fn page_of_services(
        &self,
        services: &RoaringBitmap,
        hosts: Option<&RoaringBitmap>,
        shadow: Option<&RoaringBitmap>,
        start: u32,
        limit: usize,
    ) -> (Vec<u32>, bool) {
        let first = self
            .service_start
            .get(start as usize)
            .copied()
            .unwrap_or(u32::MAX);
        let mut page = Vec::with_capacity(limit + 1);
        let mut it = services.range(first..);
        while let Some(s) = it.next() {
            let Some(h) = self.service_hosts.of(s) else {
                break;
            };
            if hosts.is_none_or(|set| set.contains(h)) && shadow.is_none_or(|set| !set.contains(h))
            {
                page.push(h);
                if page.len() > limit {
                    break;
                }
            }
            it.advance_to(self.service_range(h).end);
        }
        let has_more = page.len() > limit;
        page.truncate(limit);
        (page, has_more)
    }
}

impl ScanIndex for EmbeddedIndex {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        View::single(self).search(req)
    }

    fn count(&self, query: &Query, _now: Timestamp) -> Result<Count, IndexError> {
        View::single(self).count(query)
    }

    fn facets(&self, query: &FilterQuery, _now: Timestamp) -> Result<Facets, IndexError> {
        Ok(View::single(self).facets(query))
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        _now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        View::single(self).exposure(query, resolution)
    }

    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        View::single(self).domain_scans_of_name(name)
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        View::single(self).domain_scans_of_address(ip)
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        _now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        View::single(self).host_detail(ip, continuation, limit)
    }
}

/// What a filter query's hits carry: the organization matches when it has an organization
/// clause.
fn filter_evidence(f: &FilterQuery) -> Evidence<'_> {
    match f.get(periscope_query::Field::Organization) {
        Some(Clause::Organization(phrase)) => Evidence::Organization(phrase),
        _ => Evidence::None,
    }
}

/// `e` and its sources, joined by `: `.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::ServiceHosts;
    use proptest::prelude::*;

    proptest! {
        /// Each service's host is the one whose range holds it, however many services the
        /// hosts have (a block of services spanning one host or many), and a service past
        /// the last range has none.
        #[test]
        fn service_hosts_are_the_hosts_whose_ranges_hold_the_services(
            sizes in prop::collection::vec(prop_oneof![1u32..4, 1u32..600], 0..600),
            asked in prop::collection::vec(any::<u32>(), 0..20),
        ) {
            let mut starts = vec![0u32];
            let mut plain = Vec::new();
            for (host, size) in sizes.iter().enumerate() {
                plain.extend((0..*size).map(|_| host as u32));
                starts.push(starts[host] + size);
            }
            let hosts = ServiceHosts::new(&starts).expect("every host has a service");
            let total = plain.len() as u32;
            for s in (0..total + 3).chain(asked) {
                prop_assert_eq!(hosts.of(s), plain.get(s as usize).copied(), "service {}", s);
            }
            prop_assert_eq!(hosts.heap_bytes(), plain.len() + plain.len().div_ceil(256) * 4);
            // A host without a service is refused.
            if let Some(last) = starts.last().copied() {
                starts.push(last);
                prop_assert!(ServiceHosts::new(&starts).is_none());
            }
        }
    }
}
