//! The six facet groups in SQL, seven statements: for each group, the candidate values (from
//! the services — or, for country, the hosts — of the hosts the whole query matches), and each
//! value's count of hosts that match the query with the value's clause in place of the
//! group's own. Both come from one statement per group (one scan: a value is a candidate
//! when one of the rows counted for it is of a host matching the whole query), except for
//! products, whose counts need the candidates' words first (two statements). The group itself (order, selection, at most five) is `periscope-scan`'s
//! [`group_of`], the same code the reference runs.
//!
//! Port, protocol, CVSS band, exploit and country clauses are equalities on one column, so
//! their counts are one `GROUP BY`; a product value's clause is its title's words, which a
//! service satisfies when its own title has them all, so product counts test every
//! candidate's words against every service (`ARRAY JOIN` over the candidates).

use std::collections::{BTreeMap, BTreeSet};

use periscope_model::{CountryCode, Port, ProtocolToken};
use periscope_query::{Clause, FilterQuery};
use periscope_scan::api::{FacetField, FacetGroup, Facets, IndexError};
use periscope_scan::facets::{BANDS, Value, band_of, clauses_of, group_of, query_field};
use periscope_scan::matching::words;

use crate::client::Client;
use crate::query::{NEWEST, Statement};
use crate::rows::FACT_LOCATION;
use crate::sql;

/// The `c_…` columns a group reads besides those of the query's own conditions (port and
/// protocol are row columns; each other service group reads only its own).
fn columns(field: FacetField) -> &'static [&'static str] {
    match field {
        FacetField::Product => &["product_words", "product_title", "has_product"],
        FacetField::Cvss => &["max_cvss"],
        FacetField::Exploit => &["exploit"],
        FacetField::Port | FacetField::Protocol | FacetField::Country => &[],
    }
}

fn bad(what: &str, field: &[u8]) -> IndexError {
    IndexError::Unavailable(format!(
        "ClickHouse answered something unexpected: {what} {:?}",
        String::from_utf8_lossy(field)
    ))
}

fn text(field: &[u8]) -> Result<&str, IndexError> {
    std::str::from_utf8(field).map_err(|_| bad("non-UTF-8 text", field))
}

/// The value of a group read back from its column's text.
fn value_of(field: FacetField, raw: &[u8]) -> Result<Value, IndexError> {
    let t = text(raw)?;
    let value = match field {
        FacetField::Port => t
            .parse()
            .ok()
            .and_then(|n| Port::new(n).ok())
            .map(Value::Port),
        FacetField::Protocol => ProtocolToken::parse(t).ok().map(Value::Protocol),
        FacetField::Product => Some(Value::Product(t.to_owned())),
        FacetField::Country => CountryCode::parse(t).ok().map(Value::Country),
        FacetField::Cvss => t.parse::<u8>().ok().and_then(band_of).map(Value::Cvss),
        FacetField::Exploit => match t {
            "0" => Some(Value::Exploit(false)),
            "1" => Some(Value::Exploit(true)),
            _ => None,
        },
    };
    value.ok_or_else(|| bad("a facet value", raw))
}

/// The band index of `c_max_cvss` (tenths), from the shared band table.
fn band_expression() -> String {
    let mut parts: Vec<String> = BANDS
        .iter()
        .enumerate()
        .map(|(i, (low, high))| format!("c_max_cvss >= {low} AND c_max_cvss <= {high}, {i}"))
        .collect();
    parts.push("-1".into());
    format!("multiIf({})", parts.join(", "))
}

fn with(host: &str, extra: &[String]) -> String {
    let extra = extra.join(" AND ");
    match (host.is_empty(), extra.is_empty()) {
        (true, true) => String::new(),
        (true, false) => format!(" WHERE {extra}"),
        (false, true) => host.to_owned(),
        (false, false) => format!("{host} AND {extra}"),
    }
}

/// The six groups of `query`.
pub fn facets(
    client: &Client,
    statement: &Statement<'_>,
    query: &FilterQuery,
) -> Result<Facets, IndexError> {
    let full = statement.matching_clauses(query.clauses());
    let mut groups = Vec::with_capacity(FacetField::ALL.len());
    for field in FacetField::ALL {
        groups.push(group(client, statement, query, field, &full)?);
    }
    Ok(Facets { groups })
}

fn group(
    client: &Client,
    statement: &Statement<'_>,
    query: &FilterQuery,
    field: FacetField,
    full: &str,
) -> Result<FacetGroup, IndexError> {
    let own = query_field(field);
    let others: Vec<Clause> = query
        .clauses()
        .iter()
        .filter(|c| c.field() != own)
        .cloned()
        .collect();
    // `from`: the rows the counts are taken over (the current values of the hosts matching
    // the query without the group's own clause); a value is a candidate when one of those
    // rows is of a host matching the whole query.
    let statement = &Statement {
        extra: columns(field),
        ..*statement
    };
    let (column, count_column, from) = if field == FacetField::Country {
        let db = statement.db;
        let matching_others = statement.matching_clauses(&others);
        let from = format!(
            "(SELECT addr, argMax(country, {NEWEST}) AS c_country FROM {db}.facts \
             WHERE fact = {FACT_LOCATION} GROUP BY addr) \
             WHERE c_country != '' AND addr IN ({matching_others})"
        );
        ("c_country".to_owned(), "c_country".to_owned(), from)
    } else {
        let (services, host) = statement.service_rows_of(&others);
        let (column, present) = match field {
            FacetField::Port => ("toString(port)", "1"),
            FacetField::Protocol => ("protocol", "1"),
            FacetField::Product => ("c_product_title", "c_has_product = 1"),
            FacetField::Cvss => ("toString(c_max_cvss)", "c_max_cvss >= 0"),
            _ => ("toString(c_exploit)", "c_exploit >= 0"),
        };
        let count_column = match field {
            FacetField::Cvss => format!("toString({})", band_expression()),
            _ => column.to_owned(),
        };
        let from = format!("({services}){}", with(&host, &[present.to_owned()]));
        (column.to_owned(), count_column, from)
    };
    let mut candidates = BTreeSet::new();
    let mut counted: BTreeMap<Value, u64> = BTreeMap::new();
    if field == FacetField::Product {
        let rows = client.rows(&format!(
            "SELECT DISTINCT {column} FROM (SELECT addr, {column} FROM {from}) \
             WHERE addr IN ({full}) FORMAT TabSeparated"
        ))?;
        for row in rows {
            let raw = row.first().map_or(&[][..], Vec::as_slice);
            candidates.insert(value_of(field, raw)?);
        }
    } else {
        // One statement for both: each value's count of hosts, and whether any is of a host
        // matching the whole query (then the value is a candidate). For CVSS the values are
        // bands: a band is a candidate when one of its scores is.
        let rows = client.rows(&format!(
            "SELECT {count_column} AS v, uniqExact(addr), max(addr IN ({full})) FROM {from} \
             GROUP BY v FORMAT TabSeparated"
        ))?;
        for row in rows {
            let [v, n, candidate] = row.as_slice() else {
                return Err(bad("a count row", &row.concat()));
            };
            let n: u64 = text(n)?.parse().map_err(|_| bad("a count", n))?;
            let value = if field == FacetField::Cvss {
                let band: usize = text(v)?.parse().map_err(|_| bad("a band", v))?;
                if band >= BANDS.len() {
                    return Err(bad("a band", v));
                }
                Value::Cvss(band)
            } else {
                value_of(field, v)?
            };
            if text(candidate)? == "1" {
                candidates.insert(value.clone());
            }
            counted.insert(value, n);
        }
    }
    let clauses = clauses_of(candidates);
    let mut counts: BTreeMap<Value, u64> = BTreeMap::new();
    if field == FacetField::Product {
        // Each candidate's clause words; a clause without words matches nothing.
        let wanted: Vec<(&Value, Vec<String>)> = clauses
            .iter()
            .filter_map(|(value, clause)| match clause {
                Clause::Product(phrase) => Some((value, words(phrase.as_str()))),
                _ => None,
            })
            .filter(|(_, w)| !w.is_empty())
            .collect();
        if !wanted.is_empty() {
            let arrays: Vec<String> = wanted
                .iter()
                .map(|(_, w)| {
                    let items: Vec<String> = w.iter().map(|x| sql::string(x)).collect();
                    format!("[{}]", items.join(", "))
                })
                .collect();
            let candidates = format!("[{}]", arrays.join(", "));
            let rows = client.rows(&format!(
                "SELECT i, uniqExact(addr) FROM (SELECT addr, c_product_words FROM {from}) \
                 ARRAY JOIN arrayEnumerate({candidates}) AS i \
                 WHERE hasAll(c_product_words, arrayElement({candidates}, i)) \
                 GROUP BY i FORMAT TabSeparated"
            ))?;
            for row in rows {
                let [i, n] = row.as_slice() else {
                    return Err(bad("a product count row", &row.concat()));
                };
                let i: usize = text(i)?.parse().map_err(|_| bad("an index", i))?;
                let n: u64 = text(n)?.parse().map_err(|_| bad("a count", n))?;
                let (value, _) = wanted
                    .get(i.wrapping_sub(1))
                    .ok_or_else(|| bad("an index", text(&row[0]).unwrap_or("").as_bytes()))?;
                counts.insert((*value).clone(), n);
            }
        }
    } else {
        counts = counted;
    }
    Ok(group_of(query, field, &clauses, |value| {
        counts.get(value).copied().unwrap_or(0)
    }))
}
