//! An index in layers: a large base [`EmbeddedIndex`] built from the whole store, and a small
//! delta built only from the host records and domain-scan records written since — answering
//! every [`ScanIndex`] call as one index of the union would.
//!
//! **Shadow:** the base's ordinals of every address the delta was built for (whether the
//! delta holds a host there or not: a record that lost its last current service leaves no
//! host) are *shadowed*: each operation of the base runs with the shadow taken out — a
//! page walk skips them, a count subtracts the matches among them (`|M| - |M ∩ S|`, cheap as
//! `S` is small), a bitmap loses them. What is left of the base and the delta hold disjoint
//! addresses, so:
//! - **search:** each layer gives its first `limit + 1` hosts after `after`; the pages are
//!   merged by address and cut at `limit`, `has_more` when more were found or a layer had
//!   more; `query_too_broad` is decided on the sum of the layers' counts;
//! - **count:** the sum; **facets:** per group the candidates of all layers, then each
//!   candidate's count summed over the layers, then the reference's ordering and cap
//!   (`facets`); **exposure:** the delta's matching hosts are added among the base's
//!   (`exposure`; centroid sums are integers, so the order does not matter);
//! - **host detail:** from the layer holding the address unshadowed (at most one);
//! - **domain-scan records:** a delta record replaces the base's record of its name
//!   ([`ScanView`]), for lookups, domain searches and the names shown of a host.
//!
//! A single index is the one-layer case of the same code ([`View::single`]), so every
//! answer has one implementation and the layered view is tested against the reference by
//! the same property tests (`tests/layered.rs`).

use std::net::IpAddr;
use std::sync::Arc;

use periscope_model::observation::DomainScan;
use periscope_model::{DomainName, Timestamp, ip_order_key};
use periscope_query::{Clause, FilterQuery, Query, Resolution};
use roaring::RoaringBitmap;

use super::exposure::{Exposed, Placed};
use super::scans::ScanView;
use super::{
    BuildError, DeltaJournal, EmbeddedIndex, EngineStats, Records, Selection, facets,
    filter_evidence,
};
use crate::api::{
    Count, Exposure, Facets, HostDetail, IndexError, ScanIndex, SearchOutcome, SearchPage,
    SearchRequest,
};
use crate::durable::{HostKey, StoreSnapshot};
use crate::reference::detail;
use crate::store::{DomainScans, IndexConfig};

/// One layer of a [`View`]: an index and its ordinals a later layer answers for.
pub(super) struct Part<'a> {
    pub index: &'a EmbeddedIndex,
    /// Host ordinals of `index` that a later layer answers for; `None` when none are.
    pub shadow: Option<&'a RoaringBitmap>,
    /// The service ordinals of the hosts in `shadow` (`None` with it).
    pub shadow_services: Option<&'a RoaringBitmap>,
}

impl Part<'_> {
    /// The first ordinal strictly after `after`.
    fn start(&self, after: Option<IpAddr>) -> u32 {
        match after {
            None => 0,
            Some(after) => match ip_order_key(after.to_canonical()).checked_add(1) {
                Some(next) => self.index.ordinal_from(next),
                None => self.index.host_count(),
            },
        }
    }

    fn shows(&self, h: u32) -> bool {
        self.shadow.is_none_or(|s| !s.contains(h))
    }

    fn key(&self, h: u32) -> u128 {
        self.index.keys.get(h as usize).unwrap_or(u128::MAX)
    }
}

/// Layers answering as one index: oldest first, each layer's shadow covering what later
/// layers hold. See the module documentation.
pub(super) struct View<'a> {
    parts: Vec<Part<'a>>,
    scans: ScanView<'a>,
}

impl<'a> View<'a> {
    /// One index alone.
    pub fn single(index: &'a EmbeddedIndex) -> Self {
        Self {
            parts: vec![Part {
                index,
                shadow: None,
                shadow_services: None,
            }],
            scans: ScanView::new(vec![&index.scans]),
        }
    }

    fn config(&self) -> &IndexConfig {
        // A view always has a layer; the base's settings are every layer's.
        &self.parts[0].index.config
    }

    /// For a domain query, the host-order keys of the addresses its domain-scan records list
    /// (none for another).
    fn listed(&self, query: &Query) -> Vec<u128> {
        match query {
            Query::Domain(name) => self.scans.listed_under(name),
            _ => Vec::new(),
        }
    }

    pub fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        let limit = req.limit.max(1);
        // A filter naming a service: walk its services rather than map them all to hosts
        // (never declined as too broad: that is for organization or country alone).
        if let Query::Filter(f) = req.query
            && f.clauses().iter().any(Clause::is_service_level)
        {
            let mut found = Vec::with_capacity(limit + 1);
            let mut more = false;
            for (i, part) in self.parts.iter().enumerate() {
                let Some(services) = part.index.services_satisfying(f.clauses()) else {
                    continue;
                };
                let hosts = part.index.hosts_satisfying(f.clauses());
                let (page, has_more) = part.index.page_of_services(
                    &services,
                    hosts.as_ref(),
                    part.shadow,
                    part.start(req.after),
                    limit,
                );
                more |= has_more;
                found.extend(page.into_iter().map(|h| (part.key(h), i, h)));
            }
            let selection = Selection {
                hosts: RoaringBitmap::new(),
                evidence: filter_evidence(f),
            };
            let selections: Vec<&Selection<'_>> = vec![&selection; self.parts.len()];
            return self.page(req.query, found, more, limit, &selections);
        }
        let listed = self.listed(req.query);
        let selections: Vec<Selection<'_>> = self
            .parts
            .iter()
            .map(|p| p.index.select(req.query, req.resolved, &listed, p.shadow))
            .collect();
        if req.query.may_be_too_broad() {
            let matching: u64 = selections.iter().map(|s| s.hosts.len()).sum();
            if matching > self.config().max_host_only_results {
                return Ok(SearchOutcome::TooBroad { matching });
            }
        }
        let mut found = Vec::with_capacity(limit + 1);
        for (i, (part, selection)) in self.parts.iter().zip(&selections).enumerate() {
            let first = selection
                .hosts
                .range(part.start(req.after)..)
                .take(limit + 1);
            found.extend(first.map(|h| (part.key(h), i, h)));
        }
        let selections: Vec<&Selection<'_>> = selections.iter().collect();
        self.page(req.query, found, false, limit, &selections)
    }

    /// The page of `found` (host key, layer, ordinal; up to `limit + 1` per layer, in host
    /// order within each), rendered.
    fn page(
        &self,
        query: &Query,
        mut found: Vec<(u128, usize, u32)>,
        more: bool,
        limit: usize,
        selections: &[&Selection<'_>],
    ) -> Result<SearchOutcome, IndexError> {
        if self.parts.len() > 1 {
            found.sort_unstable_by_key(|(key, _, _)| *key);
        }
        let has_more = more || found.len() > limit;
        found.truncate(limit);
        let mut hosts = Vec::with_capacity(found.len());
        for (_, i, h) in found {
            let (Some(part), Some(selection)) = (self.parts.get(i), selections.get(i)) else {
                continue;
            };
            hosts.extend(part.index.row(h, query, selection, &self.scans)?);
        }
        Ok(SearchOutcome::Page(SearchPage { hosts, has_more }))
    }

    pub fn count(&self, query: &Query) -> Result<Count, IndexError> {
        if let Query::Filter(f) = query {
            let n = self
                .parts
                .iter()
                .map(|p| {
                    p.index
                        .count_filter(f.clauses(), p.shadow, p.shadow_services)
                })
                .sum();
            return Ok(Count::exact(n));
        }
        let listed = self.listed(query);
        let n = self
            .parts
            .iter()
            .map(|p| p.index.select(query, &[], &listed, p.shadow).hosts.len())
            .sum();
        Ok(Count::exact(n))
    }

    pub fn facets(&self, query: &FilterQuery) -> Facets {
        facets::facets(&self.parts, query)
    }

    pub fn exposure(&self, query: &Query, resolution: Resolution) -> Result<Exposure, IndexError> {
        let listed = self.listed(query);
        let Some((first, later)) = self.parts.split_first() else {
            return Ok(Exposed::nothing(resolution));
        };
        let mut placed: Vec<Placed> = Vec::new();
        for part in later {
            let index = part.index;
            index.for_each_match(query, &listed, part.shadow, |h, services| {
                placed.push(index.place_ids.placed(h, part.key(h), services));
            });
        }
        let index = first.index;
        let mut exposed = Exposed::new(&index.place_ids, resolution);
        if placed.is_empty() {
            index.for_each_match(query, &listed, first.shadow, |h, services| {
                exposed.add(h, services);
            });
            return Ok(exposed.finish());
        }
        placed.sort_unstable_by_key(|p| p.key);
        // Each later host goes before the first base ordinal above its address (a base host
        // at the same address is shadowed, never walked), so the walk compares ordinals.
        let mut pending = placed
            .iter()
            .map(|p| (index.ordinal_from(p.key), p))
            .peekable();
        index.for_each_match(query, &listed, first.shadow, |h, services| {
            while let Some((_, p)) = pending.next_if(|(before, _)| *before <= h) {
                exposed.add_placed(p);
            }
            exposed.add(h, services);
        });
        let pending = pending.map(|(_, p)| p);
        pending.for_each(|p| exposed.add_placed(p));
        Ok(exposed.finish())
    }

    pub fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        self.scans.of_name(name)
    }

    pub fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        self.scans.listing(ip)
    }

    pub fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
    ) -> Result<Option<HostDetail>, IndexError> {
        let after = continuation.map(|c| detail::decode(c, ip)).transpose()?;
        let key = ip_order_key(ip);
        let Some((part, h)) = self.parts.iter().find_map(|p| {
            p.index
                .ordinal_of(key)
                .filter(|h| p.shows(*h))
                .map(|h| (p, h))
        }) else {
            return Ok(None);
        };
        let Some(rec) = part.index.record(h)? else {
            return Ok(None);
        };
        let Some(view) = part.index.view(&rec) else {
            return Ok(None);
        };
        let listed = self.scans.names_listing(ip)?;
        Ok(Some(detail::page(
            &view,
            after,
            limit,
            listed.iter().collect(),
        )))
    }
}

/// A base index and the delta over it, answering as one index of the store as the delta
/// saw it; see the module documentation. What [`crate::live::LiveIndex`] serves.
#[derive(Debug)]
pub struct LayeredIndex {
    base: Arc<EmbeddedIndex>,
    delta: Option<Delta>,
    /// When the retention window was last applied: the delta's build time, else the base's.
    as_of: Timestamp,
}

#[derive(Debug)]
struct Delta {
    index: EmbeddedIndex,
    /// Base ordinals of the addresses the delta was built for.
    shadow: RoaringBitmap,
    /// The base's service ordinals of the hosts in `shadow`.
    shadow_services: RoaringBitmap,
    /// Addresses the delta was built for: the records written since the base and the base's
    /// hosts the retention window has reached.
    addresses: usize,
    /// What the delta was built from, to save: the records written since the base.
    journal: DeltaJournal,
}

impl LayeredIndex {
    /// The base alone.
    pub fn new(base: Arc<EmbeddedIndex>) -> Self {
        let as_of = base.built_at();
        Self {
            base,
            delta: None,
            as_of,
        }
    }

    /// `base` with a delta current at `now` of the host records stored in `snapshot` under
    /// `keys` (host-order keys, ascending and distinct: the records written after the
    /// snapshot `base` was built from) and under the addresses of the base's hosts that may
    /// have lost a service to the retention window since the base was built, and of the
    /// domain-scan records of `names`. The delta keeps `snapshot` to read the records it
    /// shows.
    pub fn with_delta(
        base: Arc<EmbeddedIndex>,
        snapshot: StoreSnapshot,
        keys: &[u128],
        names: &[DomainName],
        now: Timestamp,
    ) -> Result<Self, BuildError> {
        let written = keys;
        let expiring: Vec<u128> = base
            .expiring(now)
            .iter()
            .filter_map(|h| base.keys.get(h as usize))
            .collect();
        let addresses = union(keys, &expiring);
        if addresses.is_empty() && names.is_empty() {
            return Ok(Self {
                as_of: now,
                ..Self::new(base)
            });
        }
        let keys = &addresses[..];
        let mut domains = DomainScans::default();
        for name in names {
            if let Some(scan) = snapshot.domain_scan(name)? {
                domains.by_name.insert(scan.name.clone(), scan);
            }
        }
        let records = keys
            .iter()
            .filter_map(|key| snapshot.host_by_key(HostKey(key.to_be_bytes())).transpose());
        let mut index = EmbeddedIndex::try_build(base.config, now, records, domains, false)?;
        index.generation = snapshot.generation();
        index.records = Records::Store(Box::new(snapshot));
        let shadow: RoaringBitmap = keys
            .iter()
            .filter_map(|key| base.ordinal_of(*key))
            .collect();
        let mut shadow_services = RoaringBitmap::new();
        for h in &shadow {
            shadow_services.insert_range(base.service_range(h));
        }
        Ok(Self {
            delta: Some(Delta {
                shadow,
                shadow_services,
                addresses: addresses.len(),
                journal: DeltaJournal {
                    base_generation: base.generation(),
                    generation: index.generation(),
                    hosts: written.to_vec(),
                    names: names.to_vec(),
                },
                index,
            }),
            base,
            as_of: now,
        })
    }

    /// The base index.
    pub fn base(&self) -> &Arc<EmbeddedIndex> {
        &self.base
    }

    /// The delta index, when records were written after the base was built.
    pub fn delta(&self) -> Option<&EmbeddedIndex> {
        self.delta.as_ref().map(|d| &d.index)
    }

    /// Addresses the delta was built for (0 without a delta): those written since the base
    /// and those of base hosts the retention window has reached.
    pub fn delta_addresses(&self) -> usize {
        self.delta.as_ref().map_or(0, |d| d.addresses)
    }

    /// When the retention window was last applied (the delta's build time, else the
    /// base's).
    pub fn as_of(&self) -> Timestamp {
        self.as_of
    }

    /// Base hosts that may have lost a service to the retention window by `now`.
    pub fn expiring(&self, now: Timestamp) -> u64 {
        self.base.expiring(now).len()
    }

    /// What the delta was built from, to save beside the base's index file.
    pub fn journal(&self) -> Option<&DeltaJournal> {
        self.delta.as_ref().map(|d| &d.journal)
    }

    /// The store generation the answers reflect: the delta's, else the base's.
    pub fn generation(&self) -> u64 {
        self.delta
            .as_ref()
            .map_or(self.base.generation(), |d| d.index.generation())
    }

    /// Sizes of the union: hosts and services answered, bytes of both indexes.
    pub fn stats(&self) -> EngineStats {
        let base = self.base.stats();
        let Some(delta) = &self.delta else {
            return base;
        };
        let more = delta.index.stats();
        let hidden_services: u64 = delta
            .shadow
            .iter()
            .map(|h| {
                let range = self.base.service_range(h);
                u64::from(range.end - range.start)
            })
            .sum();
        EngineStats {
            hosts: base.hosts - delta.shadow.len() + more.hosts,
            services: base.services - hidden_services + more.services,
            index_bytes: base.index_bytes
                + more.index_bytes
                + delta.shadow.serialized_size() as u64
                + delta.shadow_services.serialized_size() as u64,
        }
    }

    fn view(&self) -> View<'_> {
        let Some(delta) = &self.delta else {
            return View::single(&self.base);
        };
        View {
            parts: vec![
                Part {
                    index: &self.base,
                    shadow: Some(&delta.shadow),
                    shadow_services: Some(&delta.shadow_services),
                },
                Part {
                    index: &delta.index,
                    shadow: None,
                    shadow_services: None,
                },
            ],
            scans: ScanView::new(vec![&self.base.scans, &delta.index.scans]),
        }
    }
}

/// The union of two ascending lists, ascending, each value once.
fn union(a: &[u128], b: &[u128]) -> Vec<u128> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => {
                out.push(*x);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(*y);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(*x);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(a.get(i..).unwrap_or_default());
    out.extend_from_slice(b.get(j..).unwrap_or_default());
    out
}

impl ScanIndex for LayeredIndex {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        self.view().search(req)
    }

    fn count(&self, query: &Query, _now: Timestamp) -> Result<Count, IndexError> {
        self.view().count(query)
    }

    fn facets(&self, query: &FilterQuery, _now: Timestamp) -> Result<Facets, IndexError> {
        Ok(self.view().facets(query))
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        _now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        self.view().exposure(query, resolution)
    }

    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        self.view().domain_scans_of_name(name)
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        self.view().domain_scans_of_address(ip)
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        _now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        self.view().host_detail(ip, continuation, limit)
    }
}
