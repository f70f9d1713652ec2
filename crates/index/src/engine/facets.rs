//! Facets from bitmaps. Per group: the query's other clauses give a service set (their
//! service-level postings intersected) and a host set (their host-level postings); candidate
//! values are read from the columns of the matching hosts' services in that service set (or
//! the matching hosts' countries); a value's count is the cardinality of
//! `hosts(value's posting ∩ service set) ∩ host set`. Ordering, the selected value and the
//! cap come from the reference's [`group_of`], so only the sets are computed here.

use std::collections::BTreeSet;

use periscope_query::{Clause, FilterQuery};
use roaring::RoaringBitmap;

use super::EmbeddedIndex;
use super::postings::{NONE_U8, NONE_U32};
use crate::api::{FacetField, FacetGroup, Facets};
use crate::reference::facets::{Value, clauses_of, group_of, query_field};

/// The six groups for `query`.
pub(super) fn facets(index: &EmbeddedIndex, query: &FilterQuery) -> Facets {
    let (matching, _) = index.filter(query.clauses());
    Facets {
        groups: FacetField::ALL
            .into_iter()
            .map(|field| group(index, query, field, &matching))
            .collect(),
    }
}

fn group(
    index: &EmbeddedIndex,
    query: &FilterQuery,
    field: FacetField,
    matching: &RoaringBitmap,
) -> FacetGroup {
    let own = query_field(field);
    let others: Vec<&Clause> = query
        .clauses()
        .iter()
        .filter(|c| c.field() != own)
        .collect();
    let services = index.services_satisfying(others.iter().copied());
    let hosts = index.hosts_satisfying(others.iter().copied());
    let clauses = clauses_of(candidates(index, field, matching, services.as_ref()));
    if field == FacetField::Country {
        // Hosts matching every other clause; each counts for its own country.
        let mut base = match &services {
            Some(s) => index.hosts_of(s),
            None => index.all_hosts(),
        };
        if let Some(h) = &hosts {
            base &= h;
        }
        return group_of(query, field, &clauses, |value| match value {
            Value::Country(cc) => index.hosts.country(*cc).intersection_len(&base),
            _ => 0,
        });
    }
    group_of(query, field, &clauses, |value| {
        let Some(clause) = clauses.get(value) else {
            return 0;
        };
        let mut with_value = index.services.posting(clause).into_owned();
        if let Some(s) = &services {
            with_value &= s;
        }
        let owners = index.hosts_of(&with_value);
        match &hosts {
            Some(h) => owners.intersection_len(h),
            None => owners.len(),
        }
    })
}

/// The group's values among the matching hosts: their countries, or the values of their
/// services that satisfy the other service-level clauses.
fn candidates(
    index: &EmbeddedIndex,
    field: FacetField,
    matching: &RoaringBitmap,
    services: Option<&RoaringBitmap>,
) -> BTreeSet<Value> {
    if field == FacetField::Country {
        return matching
            .iter()
            .filter_map(|h| index.places.get(h as usize).and_then(|(_, cc)| *cc))
            .map(Value::Country)
            .collect();
    }
    let columns = &index.services.columns;
    // Distinct raw column values first, turned into values once.
    let mut raw: BTreeSet<u32> = BTreeSet::new();
    for h in matching {
        for s in index.service_range(h) {
            if services.is_some_and(|set| !set.contains(s)) {
                continue;
            }
            let s = s as usize;
            let value = match field {
                FacetField::Port => columns.port.get(s).map(|p| u32::from(p.get())),
                FacetField::Protocol => columns.protocol.get(s).map(|t| t.index() as u32),
                FacetField::Product => columns.title.get(s).copied().filter(|t| *t != NONE_U32),
                FacetField::Cvss => columns
                    .band
                    .get(s)
                    .filter(|b| **b != NONE_U8)
                    .map(|b| u32::from(*b)),
                FacetField::Exploit => columns
                    .exploit
                    .get(s)
                    .filter(|e| **e != NONE_U8)
                    .map(|e| u32::from(*e)),
                FacetField::Country => None,
            };
            raw.extend(value);
        }
    }
    raw.into_iter()
        .filter_map(|v| value_of(index, field, v))
        .collect()
}

/// The facet value of a raw column value.
fn value_of(index: &EmbeddedIndex, field: FacetField, raw: u32) -> Option<Value> {
    let columns = &index.services.columns;
    Some(match field {
        FacetField::Port => Value::Port(periscope_model::Port::new(u16::try_from(raw).ok()?).ok()?),
        FacetField::Protocol => {
            Value::Protocol(periscope_model::ProtocolToken::all().nth(raw as usize)?)
        }
        FacetField::Product => Value::Product(columns.titles.get(raw as usize)?.to_string()),
        FacetField::Cvss => Value::Cvss(raw as usize),
        FacetField::Exploit => Value::Exploit(raw == 1),
        FacetField::Country => return None,
    })
}
