//! Suggested filters: six groups (port, protocol, product, country, cvss, exploit). Candidate
//! values come from the hosts the query matches; a value's count is the number of hosts the
//! query matches with the value's clause in place of the group's clause (or added), computed
//! for every value of a group in one pass over the hosts.

use std::collections::{BTreeMap, BTreeSet};

use periscope_model::{CountryCode, Cvss, CvssRange, Port, ProtocolToken};
use periscope_query::{Clause, Field, FilterQuery, Phrase};

use crate::api::{Count, FacetField, FacetGroup, FacetStatus, FacetValue, Facets};
use crate::matching::{Conditions, HostView, satisfies, satisfies_all};
use crate::store::StoredService;

/// At most this many values per group.
pub const MAX_VALUES: usize = 5;

/// The CVSS severity bands, in tenths: `0.0-3.9`, `4.0-6.9`, `7.0-8.9`, `9.0-10.0`.
pub const BANDS: [(u8, u8); 4] = [(0, 39), (40, 69), (70, 89), (90, 100)];

/// One facet value, ordered as "value ascending" orders them: ports numerically, the rest by
/// their text (protocol tokens and countries alphabetically, bands low to high, `no` before
/// `yes`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// A port.
    Port(Port),
    /// A protocol token.
    Protocol(ProtocolToken),
    /// A product title.
    Product(String),
    /// A GeoIP country.
    Country(CountryCode),
    /// A band, by its index in [`BANDS`].
    Cvss(usize),
    /// The exploit flag.
    Exploit(bool),
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Port(p) => p.to_string(),
            Value::Protocol(t) => t.to_string(),
            Value::Product(title) => title.clone(),
            Value::Country(c) => c.to_string(),
            Value::Cvss(band) => band_range(*band).map(|r| r.to_string()).unwrap_or_default(),
            Value::Exploit(true) => "yes".into(),
            Value::Exploit(false) => "no".into(),
        }
    }

    /// The ready-to-use clause; `None` for a product title that cannot be a phrase.
    pub fn clause(&self) -> Option<Clause> {
        Some(match self {
            Value::Port(p) => Clause::Port(*p),
            Value::Protocol(t) => Clause::Protocol(*t),
            Value::Product(title) => Clause::Product(Phrase::new(title).ok()?),
            Value::Country(c) => Clause::Country(*c),
            Value::Cvss(band) => Clause::Cvss(band_range(*band)?),
            Value::Exploit(flag) => Clause::Exploit(*flag),
        })
    }
}

fn band_range(band: usize) -> Option<CvssRange> {
    let (low, high) = *BANDS.get(band)?;
    CvssRange::new(Cvss::from_tenths(low).ok()?, Cvss::from_tenths(high).ok()?).ok()
}

/// The query field of a facet group.
pub fn query_field(field: FacetField) -> Field {
    match field {
        FacetField::Port => Field::Port,
        FacetField::Protocol => Field::Protocol,
        FacetField::Product => Field::Product,
        FacetField::Country => Field::Country,
        FacetField::Cvss => Field::Cvss,
        FacetField::Exploit => Field::Exploit,
    }
}

/// The band (index in [`BANDS`]) holding a score in tenths.
pub fn band_of(tenths: u8) -> Option<usize> {
    BANDS
        .iter()
        .position(|(low, high)| (*low..=*high).contains(&tenths))
}

/// The value of a service for a service-level group, if it has one.
fn service_value(field: FacetField, s: &StoredService) -> Option<Value> {
    let vulns = s.vulnerabilities.as_ref();
    match field {
        FacetField::Port => Some(Value::Port(s.port)),
        FacetField::Protocol => Some(Value::Protocol(s.protocol)),
        FacetField::Product => s.product.as_ref().map(|p| Value::Product(p.title.clone())),
        FacetField::Cvss => band_of(vulns?.max_cvss?.tenths()).map(Value::Cvss),
        FacetField::Exploit => vulns.map(|v| Value::Exploit(v.has_exploits)),
        FacetField::Country => None,
    }
}

/// The six groups for `query` over `hosts` (every host current at the query's instant).
pub fn facets(query: &FilterQuery, hosts: &[HostView<'_>]) -> Facets {
    let conditions = Conditions::of(query.clauses());
    let matching: Vec<&HostView<'_>> = hosts.iter().filter(|h| conditions.matches(h)).collect();
    let groups = FacetField::ALL
        .into_iter()
        .map(|field| group(query, field, &matching, hosts))
        .collect();
    Facets { groups }
}

fn group(
    query: &FilterQuery,
    field: FacetField,
    matching: &[&HostView<'_>],
    hosts: &[HostView<'_>],
) -> FacetGroup {
    let own = query_field(field);
    let others = Conditions::of(query.clauses().iter().filter(|c| c.field() != own));
    // Candidates: from the matching hosts.
    let mut candidates: BTreeSet<Value> = BTreeSet::new();
    for host in matching {
        if field == FacetField::Country {
            candidates.extend(host.country().map(Value::Country));
        } else {
            let services = host
                .services
                .iter()
                .filter(|s| satisfies_all(&others.service, s));
            candidates.extend(services.filter_map(|s| service_value(field, s)));
        }
    }
    let clauses = clauses_of(candidates);
    // Counts: a host counts for every value whose clause, with the other clauses, it matches.
    let host_level = Conditions {
        service: Vec::new(),
        host: others.host.clone(),
    };
    let mut counts: BTreeMap<&Value, u64> = BTreeMap::new();
    for host in hosts.iter().filter(|h| host_level.matches(h)) {
        let mut satisfied: BTreeSet<&Value> = BTreeSet::new();
        let services = host
            .services
            .iter()
            .filter(|s| satisfies_all(&others.service, s));
        if field == FacetField::Country {
            let services_ok = others.service.is_empty() || services.count() > 0;
            let country = host.country().map(Value::Country);
            if let Some((value, _)) = country.and_then(|c| clauses.get_key_value(&c))
                && services_ok
            {
                satisfied.insert(value);
            }
        } else {
            for s in services {
                satisfied.extend(
                    clauses
                        .iter()
                        .filter(|(_, c)| satisfies(c, s))
                        .map(|(v, _)| v),
                );
            }
        }
        for v in satisfied {
            *counts.entry(v).or_default() += 1;
        }
    }
    group_of(query, field, &clauses, |value| {
        counts.get(value).copied().unwrap_or(0)
    })
}

/// The candidate values that make a clause, with their clauses, in value order.
pub fn clauses_of(candidates: BTreeSet<Value>) -> BTreeMap<Value, Clause> {
    candidates
        .into_iter()
        .filter_map(|v| v.clause().map(|c| (v, c)))
        .collect()
}

/// The group of `field` from its candidates and each one's count of hosts: the selected value
/// first, then by count descending and value ascending, values with no host left out, at
/// most [`MAX_VALUES`].
pub fn group_of(
    query: &FilterQuery,
    field: FacetField,
    clauses: &BTreeMap<Value, Clause>,
    count: impl Fn(&Value) -> u64,
) -> FacetGroup {
    let own = query_field(field);
    let selected = query.get(own);
    let mut items: Vec<FacetValue> = clauses
        .iter()
        .filter_map(|(value, clause)| {
            let n = count(value);
            (n > 0).then(|| FacetValue {
                value: value.text(),
                clause: clause.clone(),
                selected: selected == Some(clause),
                unique_hosts: Count::exact(n),
            })
        })
        .collect();
    // `clauses` is in value order, and the sort is stable: equal counts stay in value order.
    items.sort_by(|a, b| {
        b.selected
            .cmp(&a.selected)
            .then_with(|| b.unique_hosts.value.cmp(&a.unique_hosts.value))
    });
    items.truncate(MAX_VALUES);
    FacetGroup {
        field,
        status: FacetStatus::Available,
        items,
    }
}
