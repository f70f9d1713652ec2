//! Facets from bitmaps and one pass per distinct set of "other clauses".
//!
//! A group's values are counted against the query's *other* clauses (those not on the
//! group's field). Every group without a clause of its own in the query has the same other
//! clauses — the whole query — so one walk over the query's matching hosts and their
//! services satisfying the service-level clauses tallies all of them at once: per host, its
//! distinct port, protocol, product title, CVSS band and exploit flag among those services,
//! and its country. A host counts once per value; the values seen are the candidates.
//!
//! A group with a clause of its own in the query is counted without that clause:
//! - when the other clauses name no service, a value's count is the cardinality of its host
//!   postings (port, protocol, CVSS band, exploit, country) intersected with the other
//!   clauses' hosts, and a value is a candidate when its hosts meet the query's matches;
//!   values are tried in the group's order (count descending, value ascending), so only
//!   about as many as the group shows are tested;
//! - when the group's field is port, protocol, CVSS or exploit: from bitmaps value by value
//!   (few values, the other clauses' repeats bounding the hosts owning two services), or
//!   one lean pass over the other clauses' services by column ([`by_value`]);
//! - otherwise (and for products), one walk as above over the other clauses' services,
//!   noting which hosts match the whole query (their values are the candidates).
//!
//! A product value counts a host when one of its titles holds every word of the value's
//! phrase (the clause's rule), not only when the title is equal: per host the walk records
//! its distinct titles; a value's count sums the hosts whose titles meet the titles holding
//! its words (the title-word index). Ordering, the selected value and the cap come from the
//! reference's [`group_of`], so only the sets are computed here.
//!
//! The shared walk and the groups with a clause of their own read the same sets and write
//! none, so when a query has two of these to do, they run side by side on the process's
//! thread pool (`rayon_core::join`: one thread per core, started once): one walks and then
//! takes groups while the other takes groups, each group counted by whichever is free.
//! Each part does exactly the work it did alone; an answer uses two cores.
//!
//! Over layers (`layers`: a base less its shadow, and a delta), each layer is walked or
//! intersected on its own; a group's candidates are the union of the layers' and each
//! candidate's count is the sum of its counts in every layer (a value can count hosts of a
//! layer where it is no candidate), before the ordering and the cap choose the values.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use periscope_model::{CountryCode, Port, ProtocolToken};
use periscope_query::{Clause, FilterQuery};
use roaring::RoaringBitmap;

use super::EmbeddedIndex;
use super::layers::Part;
use super::postings::NONE_U32;
use crate::api::{FacetField, FacetGroup, Facets};
use crate::reference::facets::{Value, clauses_of, group_of, query_field};
use crate::reference::matching::words;

/// The six groups for `query` over the layers `parts` (see `layers`): every layer tallies
/// its own hosts (its shadow left out); a group's candidates are those of every layer and a
/// candidate's count is the sum of its layers' counts.
pub(super) fn facets(parts: &[Part<'_>], query: &FilterQuery) -> Facets {
    let clauses = query.clauses();
    let shared: Vec<FacetField> = FacetField::ALL
        .into_iter()
        .filter(|f| query.get(query_field(*f)).is_none())
        .collect();
    // Per layer, the services satisfying every service-level clause less the shadow's,
    // when the query names a service: the shared walk's and every group's `M`.
    let full: Vec<Option<RoaringBitmap>> = parts
        .iter()
        .map(|part| unshadowed(part, part.index.service_set(clauses)?).map(Cow::into_owned))
        .collect();
    let walk = || {
        if shared.is_empty() {
            return HashMap::new();
        }
        let all: Vec<&Clause> = clauses.iter().collect();
        tally(parts, &all, None, &shared, &full)
    };
    // The groups with a clause of their own, taken one at a time by whichever thread is free.
    let own: Vec<(FacetField, &Clause)> = FacetField::ALL
        .into_iter()
        .filter_map(|field| Some((field, query.get(query_field(field))?)))
        .collect();
    let next = AtomicUsize::new(0);
    let count_own = || {
        let mut matching: Vec<Option<RoaringBitmap>> = vec![None; parts.len()];
        let mut counted = Vec::new();
        while let Some((field, clause)) = own.get(next.fetch_add(1, Ordering::Relaxed)) {
            let group = own_group(parts, query, *field, clause, &mut matching, &full);
            counted.push((*field, group));
        }
        counted
    };
    let (mut tallies, mut owned) = if own.len() + usize::from(!shared.is_empty()) < 2 {
        (walk(), count_own())
    } else {
        // The walk and the groups read the same sets and write none: one thread of the pool
        // walks and then helps with the groups while the other counts them.
        let ((tallies, mut owned), more) = rayon_core::join(|| (walk(), count_own()), count_own);
        owned.extend(more);
        (tallies, owned)
    };
    let groups = FacetField::ALL
        .into_iter()
        .map(|field| match owned.iter().position(|(f, _)| *f == field) {
            Some(at) => owned.swap_remove(at).1,
            None => {
                let counted = tallies.remove(&field).unwrap_or_default();
                group_of(query, field, &counted.clauses, |v| counted.count(v))
            }
        })
        .collect();
    Facets { groups }
}

/// The group of a field the query has a clause on.
fn own_group(
    parts: &[Part<'_>],
    query: &FilterQuery,
    field: FacetField,
    own: &Clause,
    matching: &mut [Option<RoaringBitmap>],
    full: &[Option<RoaringBitmap>],
) -> FacetGroup {
    let others: Vec<&Clause> = query
        .clauses()
        .iter()
        .filter(|c| c.field() != query_field(field))
        .collect();
    if !others.iter().any(|c| c.is_service_level()) && field != FacetField::Product {
        return from_host_postings(parts, query, field, &others, matching);
    }
    if let Some(counted) = by_value(parts, field, &others, own, full) {
        return group_of(query, field, &counted.clauses, |v| counted.count(v));
    }
    let mut tallies = tally(parts, &others, Some(own), &[field], &[]);
    let counted = tallies.remove(&field).unwrap_or_default();
    group_of(query, field, &counted.clauses, |v| counted.count(v))
}

/// Per value of a field with host postings, its hosts.
fn value_hosts(index: &EmbeddedIndex, field: FacetField) -> Vec<(Value, &RoaringBitmap)> {
    let v = &index.value_hosts;
    let nonempty = |(_, b): &(Value, &RoaringBitmap)| !b.is_empty();
    match field {
        FacetField::Port => v.ports().map(|(p, b)| (Value::Port(p), b)).collect(),
        FacetField::Protocol => ProtocolToken::all()
            .zip(v.protocols())
            .map(|(t, b)| (Value::Protocol(t), b))
            .filter(nonempty)
            .collect(),
        FacetField::Cvss => v
            .bands()
            .iter()
            .enumerate()
            .map(|(band, b)| (Value::Cvss(band), b))
            .filter(nonempty)
            .collect(),
        FacetField::Exploit => [false, true]
            .into_iter()
            .zip(v.exploit())
            .map(|(flag, b)| (Value::Exploit(flag), b))
            .filter(nonempty)
            .collect(),
        FacetField::Country => index
            .hosts
            .countries()
            .map(|(cc, b)| (Value::Country(cc), b))
            .collect(),
        FacetField::Product => Vec::new(),
    }
}

/// A value's host postings in each layer holding it: (layer, hosts).
type Holders<'i> = Vec<(usize, &'i RoaringBitmap)>;

/// A group whose other clauses name no service: counts from host postings, candidates
/// tested in the group's order until the group is full. A value's count over a layer is
/// `|hosts ∩ others| - |hosts ∩ others ∩ shadow|`; it is a candidate when its hosts meet
/// some layer's matches.
fn from_host_postings(
    parts: &[Part<'_>],
    query: &FilterQuery,
    field: FacetField,
    others: &[&Clause],
    matching: &mut [Option<RoaringBitmap>],
) -> FacetGroup {
    let selected = query.get(query_field(field));
    let mut by_value: BTreeMap<Value, (u64, Holders<'_>)> = BTreeMap::new();
    for (i, part) in parts.iter().enumerate() {
        let hosts = part.index.hosts_satisfying(others.iter().copied());
        for (v, b) in value_hosts(part.index, field) {
            let mut n = hosts
                .as_ref()
                .map_or_else(|| b.len(), |h| b.intersection_len(h));
            if let Some(shadow) = part.shadow {
                let hidden = b & shadow;
                n -= hosts
                    .as_ref()
                    .map_or_else(|| hidden.len(), |h| hidden.intersection_len(h));
            }
            let entry = by_value.entry(v).or_default();
            entry.0 += n;
            entry.1.push((i, b));
        }
    }
    let mut counted: Vec<(Value, u64, Holders<'_>)> = by_value
        .into_iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(v, (n, bitmaps))| (v, n, bitmaps))
        .collect();
    // Value order already; the stable sort keeps it among equal counts.
    counted.sort_by_key(|(_, n, _)| std::cmp::Reverse(*n));
    let mut chosen: BTreeMap<Value, Clause> = BTreeMap::new();
    let mut counts: BTreeMap<Value, u64> = BTreeMap::new();
    let mut shown = 0;
    for (value, n, bitmaps) in counted {
        let Some(clause) = value.clause() else {
            continue;
        };
        let is_selected = selected == Some(&clause);
        if !is_selected && shown >= MAX_VALUES {
            continue;
        }
        let candidate = bitmaps.into_iter().any(|(i, b)| {
            let (Some(part), Some(slot)) = (parts.get(i), matching.get_mut(i)) else {
                return false;
            };
            let m = slot.get_or_insert_with(|| part.index.filter(query.clauses(), part.shadow));
            !b.is_disjoint(m)
        });
        if candidate {
            shown += usize::from(!is_selected);
            counts.insert(value.clone(), n);
            chosen.insert(value, clause);
        }
    }
    group_of(query, field, &chosen, |v| {
        counts.get(v).copied().unwrap_or(0)
    })
}

/// The group of a service-level field with a column (port, protocol, CVSS band, exploit)
/// whose query clause is service-level too, counted without a walk over hosts: over each
/// layer, `O` = the services satisfying the other clauses (less the shadow's), `M` = those
/// of `O` also satisfying the field's own clause (the hosts owning one match the query). A
/// value's count is the number of hosts (satisfying the other host-level clauses) owning a
/// service of `O` holding it; it is a candidate when such a host owns one of `M` too.
/// - Few values (band, exploit) or `O` dense (mostly in bitmap containers), no other
///   host-level clause, and a bound on repeats (an other clause on port or protocol):
///   `T` = the services of `O` among the other clauses' repeats — every host with two
///   services in `O` owns one in `T`, and `T` is small. A count is `|O ∩ posting|` less
///   the services of `T` preceded in their host by one of `O` holding the value too; a
///   candidate is a value whose posting meets `M`, or a value a host with a service in `T`
///   (read one by one) holds in `O` when it owns one of `M`.
/// - Otherwise, one pass over `O` by column, host by host (the services of a host are
///   consecutive), `M` read alongside: each host adds one to each of its distinct values.
///
/// `None` (the caller walks) for the other fields.
///
/// `full` holds, per layer, `M` (the services satisfying every service-level clause of the
/// query, less the shadow's: the same for every group).
fn by_value(
    parts: &[Part<'_>],
    field: FacetField,
    others: &[&Clause],
    own: &Clause,
    full: &[Option<RoaringBitmap>],
) -> Option<Counted> {
    if !own.is_service_level() {
        return None;
    }
    let mut candidates: BTreeSet<Value> = BTreeSet::new();
    let mut counts: BTreeMap<Value, u64> = BTreeMap::new();
    for (part, matching) in parts.iter().zip(full) {
        let index = part.index;
        let values = field_values(index, field)?;
        let services = unshadowed(part, index.service_set(others.iter().copied())?)?;
        let services = services.as_ref();
        let hosts = index.hosts_satisfying(others.iter().copied());
        // `None` only when the layer has a shadow but not its services (`own` names one).
        let matching = matching.as_ref()?;
        let by = By {
            index,
            field,
            services,
            matching,
            hosts: hosts.as_ref(),
        };
        // Intersections with bitmap containers go word by word, a pass reads memory per
        // service: value by value for a few values, or when `O` is dense.
        let stats = services.statistics();
        let dense = stats.n_values_bitset_containers * 2 >= stats.cardinality;
        let twice = match (&hosts, index.repeats(others.iter().copied())) {
            (None, Some(repeats)) if values.len() <= 8 || dense => {
                Some(services & &repeats).filter(|twice| twice.len() <= services.len() / 8 + 64)
            }
            _ => None,
        };
        match twice {
            Some(twice) => {
                let repeated = by.twice(&twice, &mut candidates);
                by.per_value(&repeated, values, &mut candidates, &mut counts);
            }
            None => by.by_host(values, &mut candidates, &mut counts),
        }
    }
    Some(Counted {
        clauses: clauses_of(candidates),
        counts,
    })
}

/// `services` less those of the layer's shadow; `None` when the layer has a shadow but not
/// its services.
fn unshadowed<'s>(
    part: &Part<'_>,
    services: Cow<'s, RoaringBitmap>,
) -> Option<Cow<'s, RoaringBitmap>> {
    match (part.shadow, part.shadow_services) {
        (None, _) => Some(services),
        (Some(_), Some(hidden)) => Some(Cow::Owned(services.as_ref() - hidden)),
        (Some(_), None) => None,
    }
}

/// One layer's sets for [`by_value`].
struct By<'a> {
    index: &'a EmbeddedIndex,
    field: FacetField,
    /// `O`.
    services: &'a RoaringBitmap,
    /// `M`.
    matching: &'a RoaringBitmap,
    /// The hosts satisfying the other host-level clauses, if any.
    hosts: Option<&'a RoaringBitmap>,
}

impl By<'_> {
    /// The raw value (index in a tally) of service `s`, if it has one.
    fn raw(&self, s: u32) -> Option<usize> {
        let columns = &self.index.services.columns;
        let s = s as usize;
        match self.field {
            FacetField::Port => columns.port.get(s).map(|p| usize::from(p.get())),
            FacetField::Protocol => columns.protocol.get(s).map(|t| t.index()),
            FacetField::Cvss => columns.band(s).map(|b| b as usize),
            FacetField::Exploit => columns.exploit(s).map(|e| e as usize),
            FacetField::Product | FacetField::Country => None,
        }
    }

    fn tally(&self) -> Tally {
        Tally::new(if self.field == FacetField::Port {
            1 << 16
        } else {
            256
        })
    }

    /// The hosts owning a service of `T` (`twice`), read one by one: adds the values they
    /// hold in `O` to the candidates when they own a service of `M`; returns the services of
    /// `T` preceded in their host by one of `O` holding the same value.
    fn twice(&self, twice: &RoaringBitmap, candidates: &mut BTreeSet<Value>) -> Vec<u32> {
        let (index, field, services) = (self.index, self.field, self.services);
        let mut repeated: Vec<u32> = Vec::new();
        for s in twice {
            let Some(h) = index.service_hosts.of(s) else {
                continue;
            };
            let range = index.service_range(h);
            let value = self.raw(s);
            if value.is_some()
                && (range.start..s).any(|t| services.contains(t) && self.raw(t) == value)
            {
                repeated.push(s);
            }
            if range.clone().any(|t| self.matching.contains(t)) {
                let held = range.filter(|t| services.contains(*t));
                candidates.extend(held.filter_map(|t| value_of(index, field, t)));
            }
        }
        repeated
    }

    /// Counts value by value: `|O ∩ posting|` less the `repeated` services holding it.
    fn per_value(
        &self,
        repeated: &[u32],
        values: Vec<Value>,
        candidates: &mut BTreeSet<Value>,
        counts: &mut BTreeMap<Value, u64>,
    ) {
        for value in values {
            let Some(clause) = value.clause() else {
                continue;
            };
            let posting = self.index.services.posting(&clause);
            let held = self.services.intersection_len(&posting);
            if held == 0 {
                continue;
            }
            if !self.matching.is_disjoint(&posting) {
                candidates.insert(value.clone());
            }
            let again = repeated.iter().filter(|s| posting.contains(**s)).count();
            *counts.entry(value).or_default() += held - again as u64;
        }
    }

    /// Counts host by host (the services of a host are consecutive; `M` read alongside):
    /// each host satisfying the other host-level clauses adds one to each of its distinct
    /// values.
    fn by_host(
        &self,
        values: Vec<Value>,
        candidates: &mut BTreeSet<Value>,
        counts: &mut BTreeMap<Value, u64>,
    ) {
        let mut tally = self.tally();
        let mut matches = self.matching.iter().peekable();
        // The current host: its distinct values, whether it matches, whether it counts.
        let mut host = u32::MAX;
        let mut held: Vec<u32> = Vec::with_capacity(8);
        let mut matched = false;
        let mut keep = false;
        for s in self.services {
            let Some(h) = self.index.service_hosts.of(s) else {
                break;
            };
            if h != host {
                held.iter().for_each(|v| tally.add(*v, matched));
                held.clear();
                matched = false;
                host = h;
                keep = self.hosts.is_none_or(|set| set.contains(h));
            }
            matched |= matches.next_if_eq(&s).is_some();
            if keep
                && let Some(v) = self.raw(s).and_then(|v| u32::try_from(v).ok())
                && !held.contains(&v)
            {
                held.push(v);
            }
        }
        held.iter().for_each(|v| tally.add(*v, matched));
        Self::counted(&tally, values, candidates, counts);
    }

    /// Adds a tally's candidates and counts of `values`.
    fn counted(
        tally: &Tally,
        values: Vec<Value>,
        candidates: &mut BTreeSet<Value>,
        counts: &mut BTreeMap<Value, u64>,
    ) {
        for value in values {
            let Some(i) = raw_index(&value) else { continue };
            let n = tally.counts.get(i).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            if tally.candidate.get(i).copied().unwrap_or(false) {
                candidates.insert(value.clone());
            }
            *counts.entry(value).or_default() += n;
        }
    }
}

/// The values of a field [`by_value`] counts that services of `index` hold; `None` for
/// the other fields.
fn field_values(index: &EmbeddedIndex, field: FacetField) -> Option<Vec<Value>> {
    let services = &index.services;
    Some(match field {
        FacetField::Port => services.ports().into_iter().map(Value::Port).collect(),
        FacetField::Protocol => services.protocols().map(Value::Protocol).collect(),
        FacetField::Cvss => (0..crate::reference::facets::BANDS.len())
            .map(Value::Cvss)
            .collect(),
        FacetField::Exploit => vec![Value::Exploit(false), Value::Exploit(true)],
        FacetField::Product | FacetField::Country => return None,
    })
}

/// The value of `field` service `s` holds, for the fields of [`field_values`].
fn value_of(index: &EmbeddedIndex, field: FacetField, s: u32) -> Option<Value> {
    let columns = &index.services.columns;
    let s = s as usize;
    match field {
        FacetField::Port => columns.port.get(s).copied().map(Value::Port),
        FacetField::Protocol => columns.protocol.get(s).copied().map(Value::Protocol),
        FacetField::Cvss => columns.band(s).map(|b| Value::Cvss(b as usize)),
        FacetField::Exploit => columns.exploit(s).map(|e| Value::Exploit(e == 1)),
        FacetField::Product | FacetField::Country => None,
    }
}

/// At most this many values per group (the reference's cap; more candidates are never
/// needed when candidates are tried in the group's order).
const MAX_VALUES: usize = 5;

/// The candidates and counts of one group.
#[derive(Default)]
struct Counted {
    clauses: BTreeMap<Value, Clause>,
    counts: BTreeMap<Value, u64>,
}

impl Counted {
    fn count(&self, v: &Value) -> u64 {
        self.counts.get(v).copied().unwrap_or(0)
    }
}

/// One layer's tally of one group: its candidates, and the hosts counted per value.
enum Partial<'i> {
    /// Port, protocol, CVSS band, exploit flag, country: hosts per raw value.
    Raw {
        candidates: BTreeSet<Value>,
        counts: Vec<u64>,
    },
    /// Products: per host its titles.
    Titles {
        titles: Titles,
        index: &'i EmbeddedIndex,
    },
}

impl Partial<'_> {
    fn candidates(&self) -> BTreeSet<Value> {
        match self {
            Partial::Raw { candidates, .. } => candidates.clone(),
            Partial::Titles { titles, index } => titles.candidates(index),
        }
    }

    /// Adds the count of every value of `clauses` over this layer to `counts`.
    fn count_into(&self, clauses: &BTreeMap<Value, Clause>, counts: &mut BTreeMap<Value, u64>) {
        match self {
            Partial::Raw { counts: raw, .. } => {
                for v in clauses.keys() {
                    let n = raw_index(v).and_then(|i| raw.get(i)).copied().unwrap_or(0);
                    *counts.entry(v.clone()).or_default() += n;
                }
            }
            Partial::Titles { titles, index } => titles.count_into(index, clauses, counts),
        }
    }
}

/// The index of a value in a raw tally.
fn raw_index(v: &Value) -> Option<usize> {
    match v {
        Value::Port(p) => Some(usize::from(p.get())),
        Value::Protocol(t) => Some(t.index()),
        Value::Cvss(b) => Some(*b),
        Value::Exploit(e) => Some(usize::from(*e)),
        Value::Country(cc) => country_index(*cc),
        Value::Product(_) => None,
    }
}

/// [`tally_layer`] over every layer, merged: the candidates of all, each counted in all.
/// `given`: per layer, the services satisfying `clauses` (less the shadow's), when known.
fn tally(
    parts: &[Part<'_>],
    clauses: &[&Clause],
    own: Option<&Clause>,
    fields: &[FacetField],
    given: &[Option<RoaringBitmap>],
) -> HashMap<FacetField, Counted> {
    let mut layers: Vec<HashMap<FacetField, Partial<'_>>> = parts
        .iter()
        .enumerate()
        .map(|(i, part)| tally_layer(part, clauses, own, fields, given.get(i)))
        .collect();
    let mut out = HashMap::new();
    for field in fields {
        let partials: Vec<Partial<'_>> = layers
            .iter_mut()
            .filter_map(|layer| layer.remove(field))
            .collect();
        let mut candidates = BTreeSet::new();
        for p in &partials {
            candidates.append(&mut p.candidates());
        }
        let clauses = clauses_of(candidates);
        let mut counts = BTreeMap::new();
        for p in &partials {
            p.count_into(&clauses, &mut counts);
        }
        out.insert(*field, Counted { clauses, counts });
    }
    out
}

/// Countries as a dense index (`AA` = 0 … `ZZ` = 675).
const COUNTRIES: usize = 26 * 26;

/// A host's country in [`EmbeddedIndex`]'s country column: its dense index, or
/// `u16::MAX` for none.
pub(super) fn country_id(cc: Option<CountryCode>) -> u16 {
    cc.and_then(country_index)
        .and_then(|i| u16::try_from(i).ok())
        .unwrap_or(u16::MAX)
}

fn country_index(cc: CountryCode) -> Option<usize> {
    match cc.as_str().as_bytes() {
        [a, b] if a.is_ascii_uppercase() && b.is_ascii_uppercase() => {
            Some(usize::from(a - b'A') * 26 + usize::from(b - b'A'))
        }
        _ => None,
    }
}

pub(super) fn country_of_index(i: usize) -> Option<CountryCode> {
    let a = u8::try_from(i / 26).ok()? + b'A';
    let b = u8::try_from(i % 26).ok()? + b'A';
    CountryCode::parse(std::str::from_utf8(&[a, b]).ok()?).ok()
}

/// Per raw value of one field: hosts counted, and whether a matching host holds it.
struct Tally {
    counts: Vec<u64>,
    candidate: Vec<bool>,
}

impl Tally {
    fn new(size: usize) -> Self {
        Self {
            counts: vec![0; size],
            candidate: vec![false; size],
        }
    }

    fn add(&mut self, raw: u32, matches: bool) {
        if let Some(n) = self.counts.get_mut(raw as usize) {
            *n += 1;
        }
        if matches && let Some(c) = self.candidate.get_mut(raw as usize) {
            *c = true;
        }
    }
}

/// Distinct values of one host, kept in a small buffer.
fn distinct(buf: &mut Vec<u32>, values: impl Iterator<Item = u32>) {
    buf.clear();
    for v in values {
        if !buf.contains(&v) {
            buf.push(v);
        }
    }
}

/// One walk over the hosts of one layer (less its shadow) satisfying every host-level clause
/// of `clauses` that own a service satisfying every service-level one (any service when
/// there is none), tallying `fields` over those services. With `own`, only hosts also
/// satisfying `own` (on one of those services, for a service-level `own`) give candidates;
/// without, every host walked does. `given`: those services (less the shadow's), when known.
fn tally_layer<'i>(
    part: &Part<'i>,
    clauses: &[&Clause],
    own: Option<&Clause>,
    fields: &[FacetField],
    given: Option<&Option<RoaringBitmap>>,
) -> HashMap<FacetField, Partial<'i>> {
    let index = part.index;
    let services = match given {
        Some(Some(services)) => Some(Cow::Borrowed(services)),
        _ => index.service_set(clauses.iter().copied()),
    };
    let hosts = index.hosts_satisfying(clauses.iter().copied());
    let own_services: Option<Cow<'_, RoaringBitmap>> = own
        .filter(|c| c.is_service_level())
        .map(|c| index.services.posting(c));
    let own_country = match own {
        Some(Clause::Country(cc)) => Some(*cc),
        _ => None,
    };
    let columns = &index.services.columns;
    let wants = |f: FacetField| fields.contains(&f);
    let mut port = wants(FacetField::Port).then(|| Tally::new(1 << 16));
    let mut protocol =
        wants(FacetField::Protocol).then(|| Tally::new(ProtocolToken::all().count()));
    let mut band = wants(FacetField::Cvss).then(|| Tally::new(4));
    let mut exploit = wants(FacetField::Exploit).then(|| Tally::new(2));
    let mut country = wants(FacetField::Country).then(|| Tally::new(COUNTRIES));
    let mut titles = wants(FacetField::Product).then(|| Titles::new(columns.titles.len()));
    let mut buf: Vec<u32> = Vec::with_capacity(16);
    index.for_each_host(
        services.as_deref(),
        hosts.as_ref(),
        part.shadow,
        |h, run| {
            let country_of = index.countries.get(h as usize).copied();
            let matches = match (&own_services, own_country) {
                (Some(p), _) => run.iter().any(|s| p.contains(*s)),
                (None, Some(cc)) => country_of == Some(country_id(Some(cc))),
                (None, None) => true,
            };
            if let Some(t) = &mut country
                && let Some(i) = country_of.filter(|i| *i != u16::MAX)
            {
                t.add(u32::from(i), matches);
            }
            if let [s] = run {
                // One service: its values are distinct already.
                let s = *s as usize;
                if let (Some(t), Some(p)) = (&mut port, columns.port.get(s)) {
                    t.add(u32::from(p.get()), matches);
                }
                if let (Some(t), Some(p)) = (&mut protocol, columns.protocol.get(s)) {
                    t.add(p.index() as u32, matches);
                }
                if let (Some(t), Some(b)) = (&mut band, columns.band(s)) {
                    t.add(b, matches);
                }
                if let (Some(t), Some(e)) = (&mut exploit, columns.exploit(s)) {
                    t.add(e, matches);
                }
                if let (Some(t), Some(title)) = (&mut titles, columns.title.get(s))
                    && title != NONE_U32
                {
                    t.add(&[title], matches);
                }
                return;
            }
            let at = |s: &u32| *s as usize;
            if let Some(t) = &mut port {
                distinct(
                    &mut buf,
                    run.iter()
                        .filter_map(|s| columns.port.get(at(s)))
                        .map(|p| u32::from(p.get())),
                );
                buf.iter().for_each(|v| t.add(*v, matches));
            }
            if let Some(t) = &mut protocol {
                distinct(
                    &mut buf,
                    run.iter()
                        .filter_map(|s| columns.protocol.get(at(s)))
                        .map(|p| p.index() as u32),
                );
                buf.iter().for_each(|v| t.add(*v, matches));
            }
            if let Some(t) = &mut band {
                distinct(&mut buf, run.iter().filter_map(|s| columns.band(at(s))));
                buf.iter().for_each(|v| t.add(*v, matches));
            }
            if let Some(t) = &mut exploit {
                distinct(&mut buf, run.iter().filter_map(|s| columns.exploit(at(s))));
                buf.iter().for_each(|v| t.add(*v, matches));
            }
            if let Some(t) = &mut titles {
                distinct(
                    &mut buf,
                    run.iter()
                        .filter_map(|s| columns.title.get(at(s)))
                        .filter(|t| *t != NONE_U32),
                );
                buf.sort_unstable();
                t.add(&buf, matches);
            }
        },
    );
    partials(port, protocol, band, exploit, country, titles, index)
}

/// A layer's tallies of [`tally_layer`], by field.
fn partials(
    port: Option<Tally>,
    protocol: Option<Tally>,
    band: Option<Tally>,
    exploit: Option<Tally>,
    country: Option<Tally>,
    titles: Option<Titles>,
    index: &EmbeddedIndex,
) -> HashMap<FacetField, Partial<'_>> {
    let mut out = HashMap::new();
    let mut put =
        |field: FacetField, tally: Option<Tally>, value: &dyn Fn(usize) -> Option<Value>| {
            let Some(tally) = tally else {
                return;
            };
            let candidates: BTreeSet<Value> = tally
                .candidate
                .iter()
                .enumerate()
                .filter(|(_, c)| **c)
                .filter_map(|(i, _)| value(i))
                .collect();
            out.insert(
                field,
                Partial::Raw {
                    candidates,
                    counts: tally.counts,
                },
            );
        };
    put(FacetField::Port, port, &|i| {
        Some(Value::Port(Port::new(u16::try_from(i).ok()?).ok()?))
    });
    put(FacetField::Protocol, protocol, &|i| {
        ProtocolToken::all().nth(i).map(Value::Protocol)
    });
    put(FacetField::Cvss, band, &|i| Some(Value::Cvss(i)));
    put(FacetField::Exploit, exploit, &|i| {
        Some(Value::Exploit(i == 1))
    });
    put(FacetField::Country, country, &|i| {
        country_of_index(i).map(Value::Country)
    });
    if let Some(titles) = titles {
        out.insert(FacetField::Product, Partial::Titles { titles, index });
    }
    out
}

/// The product group's walk: per host its distinct titles.
struct Titles {
    /// Hosts with exactly one title, by title id.
    single: Vec<u64>,
    /// Hosts with several titles, by their sorted title ids.
    several: HashMap<Vec<u32>, u64>,
    /// Titles held by a host matching the whole query.
    candidate: Vec<bool>,
}

impl Titles {
    fn new(titles: usize) -> Self {
        Self {
            single: vec![0; titles],
            several: HashMap::new(),
            candidate: vec![false; titles],
        }
    }

    /// Counts a host with `titles` (distinct, sorted).
    fn add(&mut self, titles: &[u32], matches: bool) {
        match titles {
            [] => {}
            [one] => {
                if let Some(n) = self.single.get_mut(*one as usize) {
                    *n += 1;
                }
            }
            many => *self.several.entry(many.to_vec()).or_default() += 1,
        }
        if matches {
            for t in titles {
                if let Some(c) = self.candidate.get_mut(*t as usize) {
                    *c = true;
                }
            }
        }
    }

    /// The titles held by a host matching the whole query.
    fn candidates(&self, index: &EmbeddedIndex) -> BTreeSet<Value> {
        let columns = &index.services.columns;
        self.candidate
            .iter()
            .enumerate()
            .filter(|(_, c)| **c)
            .filter_map(|(i, _)| columns.titles.get(i))
            .map(|t| Value::Product(t.to_string()))
            .collect()
    }

    /// Adds each value's count to `counts`: the hosts holding a title with every word of
    /// its phrase.
    fn count_into(
        &self,
        index: &EmbeddedIndex,
        clauses: &BTreeMap<Value, Clause>,
        counts: &mut BTreeMap<Value, u64>,
    ) {
        let columns = &index.services.columns;
        // Title → the several-title sets holding it.
        let mut sets_of: HashMap<u32, Vec<usize>> = HashMap::new();
        let several: Vec<(&Vec<u32>, u64)> = self.several.iter().map(|(k, n)| (k, *n)).collect();
        for (i, (set, _)) in several.iter().enumerate() {
            for t in *set {
                sets_of.entry(*t).or_default().push(i);
            }
        }
        let mut seen: Vec<usize> = vec![usize::MAX; several.len()];
        for (stamp, (value, clause)) in clauses.iter().enumerate() {
            let Clause::Product(phrase) = clause else {
                continue;
            };
            let holding = columns.titles_with(&words(phrase.as_str()));
            let mut n = 0;
            for t in &holding {
                n += self.single.get(t as usize).copied().unwrap_or(0);
                for set in sets_of.get(&t).into_iter().flatten() {
                    if let Some(mark) = seen.get_mut(*set)
                        && *mark != stamp
                    {
                        *mark = stamp;
                        n += several.get(*set).map_or(0, |(_, k)| *k);
                    }
                }
            }
            *counts.entry(value.clone()).or_default() += n;
        }
    }
}
