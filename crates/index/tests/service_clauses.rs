//! Queries of several service-level clauses against the reference engine: their counts and
//! facets take paths of their own in the embedded engine (the hosts of an intersection of
//! service postings counted through the port and protocol repeats, CVSS ranges read from
//! whole-unit postings, facet groups of port, protocol, CVSS and exploit counted value by
//! value), so they get data made for them: few addresses holding several services on one
//! port (other protocols) and of one protocol (other ports), maximum CVSS scores of any
//! tenth, exploit flags and product titles; and queries of two or three service-level
//! clauses (at most three make a query) over port, protocol, CVSS, exploit and product,
//! sometimes with a country.
//!
//! Each case compares count, facets and the first pages with the reference, over an index
//! built at once, over a base and a delta of later batches (whose shadow the new paths
//! subtract as services), and over that base and delta reopened from their files.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use periscope_index::api::ScanIndex;
use periscope_index::{IndexConfig, LiveIndex, ReferenceIndex};
use periscope_model::{CountryCode, Cvss, CvssRange, Port, ProtocolToken, Timestamp};
use periscope_query::{Clause, FilterQuery, Query};
use proptest::prelude::*;

mod generators;
use generators::*;

const SERVICE_PORTS: [u16; 4] = [22, 80, 443, 8080];
const SERVICE_PROTOCOLS: [&str; 3] = ["ssh", "http", "https"];

/// `t` tenths as a score, `7.3`.
fn score(t: u8) -> String {
    format!("{}.{}", t / 10, t % 10)
}

/// One completed service observation of a current time, with an optional vulnerability
/// summary (any tenth), product and country.
fn scored_line() -> impl Strategy<Value = String> {
    (
        0..ADDRESSES.len(),
        pick(&SERVICE_PORTS),
        pick(&SERVICE_PROTOCOLS),
        pick(&TIMES[1..]),
        proptest::option::of((0..=100u8, any::<bool>(), any::<bool>())),
        proptest::option::of(pick(&TITLES)),
        proptest::option::of(pick(&COUNTRIES)),
    )
        .prop_map(|(a, port, protocol, at, vulns, title, country)| {
            let address = ADDRESSES[a];
            let mut rest = String::new();
            if let Some((tenths, exploit, scored)) = vulns {
                let max = if scored {
                    format!(r#","max_cvss":{}"#, score(tenths))
                } else {
                    String::new()
                };
                rest.push_str(&format!(
                    r#","vulnerabilities":{{"cves":[]{max},"has_exploits":{exploit}}}"#
                ));
            }
            if let Some(title) = title {
                rest.push_str(&format!(r#","product":{{"title":{title:?}}}"#));
            }
            if let Some(cc) = country {
                rest.push_str(&format!(r#","host":{{"location":{{"country_code":"{cc}"}}}}"#));
            }
            format!(
                r#"{{"kind":"service","ip":"{address}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"completed"{rest}}}"#
            )
        })
}

fn scored_lines(most: usize) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(scored_line(), 0..most)
}

/// A service-level clause on port, protocol, CVSS (any range of tenths), exploit or
/// product, over the data's values and a few no service holds.
fn service_clause() -> impl Strategy<Value = Clause> {
    prop_oneof![
        pick(&[22u16, 80, 443, 8080, 25]).prop_map(|p| Clause::Port(Port::new(p).unwrap())),
        pick(&["ssh", "http", "https", "smtp"])
            .prop_map(|p| Clause::Protocol(ProtocolToken::parse(p).unwrap())),
        (0..=100u8, 0..=100u8).prop_map(|(a, b)| {
            let range = CvssRange::new(
                Cvss::from_tenths(a.min(b)).unwrap(),
                Cvss::from_tenths(a.max(b)).unwrap(),
            );
            Clause::Cvss(range.unwrap())
        }),
        any::<bool>().prop_map(Clause::Exploit),
        phrase(&["OpenSSH", "nginx", "Apache", "nginx plus", "zzz"]).prop_map(Clause::Product),
    ]
}

/// Two or three service-level clauses on distinct fields (a query holds at most three),
/// sometimes with a country beside two.
fn several() -> impl Strategy<Value = FilterQuery> {
    (
        proptest::collection::vec(service_clause(), 2..=6),
        proptest::option::of(pick(&["DE", "FR", "US"])),
    )
        .prop_filter_map("two service fields", |(clauses, country)| {
            let mut distinct: Vec<Clause> = Vec::new();
            for c in clauses {
                if distinct.len() < 3 && distinct.iter().all(|d| d.field() != c.field()) {
                    distinct.push(c);
                }
            }
            if distinct.len() < 2 {
                return None;
            }
            if distinct.len() < 3 {
                distinct.extend(country.map(|c| Clause::Country(CountryCode::parse(c).unwrap())));
            }
            Some(FilterQuery::new(distinct).unwrap())
        })
}

/// Count, facets and every page (two hosts a page) of each query equal in both.
fn same(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    queries: &[FilterQuery],
) -> Result<(), TestCaseError> {
    for f in queries {
        let query = Query::Filter(f.clone());
        prop_assert_eq!(
            engine.count(&query, at).unwrap(),
            reference.count(&query, at).unwrap(),
            "count {}",
            f
        );
        prop_assert_eq!(
            engine.facets(f, at).unwrap(),
            reference.facets(f, at).unwrap(),
            "facets {}",
            f
        );
        same_search(at, reference, engine, &query, &[], None, 2)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn several_service_clauses_count_and_facet_as_the_reference(
        lines in scored_lines(60),
        queries in proptest::collection::vec(several(), 1..10),
    ) {
        let (reference, engine) = both(IndexConfig::default(), &lines);
        same(now(), &reference, &engine, &queries)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn several_service_clauses_over_a_base_and_delta_as_the_reference(
        base in scored_lines(60),
        later in proptest::collection::vec(scored_lines(12), 1..3),
        queries in proptest::collection::vec(several(), 1..10),
        later_day in any::<bool>(),
    ) {
        let dir = CaseDir::new("service-clauses");
        let config = IndexConfig::default();
        // A month later, services observed at TIMES[1] have left the window.
        let at = if later_day { Timestamp::parse(LATER).unwrap() } else { now() };
        let every: Vec<(Vec<String>, bool)> = later.into_iter().map(|b| (b, true)).collect();
        let reference = {
            let (reference, live) = layered(&dir, config, &base, &every, at);
            same(at, &reference, &live, &queries)?;
            reference
        };
        // Reopened: the saved base (and the journal of its delta) read back from their files.
        let (live, _) = LiveIndex::open(&dir.0.join("scan.store"), config, at).unwrap();
        same(at, &reference, &live, &queries)?;
    }
}
