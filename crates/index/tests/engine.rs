//! The embedded engine against the reference engine.
//!
//! Property tests write random observation lines (IPv4 and IPv6 hosts, several ports per
//! host, missing members, failed, partial, expired and superseded observations, domain
//! scans), read them with the real `ObservationReader`, apply them to a `ReferenceIndex`, build
//! an `EmbeddedIndex` from the reference's records, and require every answer to be equal for
//! random queries of every kind — built mostly from the same small vocabularies as the data
//! so that many match, plus values no host has. Table tests check the engine's own
//! structures (build order, retention at build time, the store path).
//!
//! An index written to its file and loaded back runs the same comparisons.
//!
//! The layered view (`LiveIndex`: a base built from the store and a delta of the batches
//! applied after it) runs the same comparisons: random lines split into the base's and
//! later batches (which supersede, add services to existing hosts, add hosts, IPv4 and IPv6,
//! and write domain scans, as the small vocabularies make them collide), the reference fed
//! with all of them. An ignored test
//! measures the engine on 200,000 synthetic hosts:
//! `cargo test -p periscope-index --release --test engine -- --ignored --nocapture`.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use periscope_index::api::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_index::durable::DurableStore;
use periscope_index::engine::{BuildError, EmbeddedIndex};
use periscope_index::{HostRecord, IndexConfig, ReferenceIndex};
use periscope_model::{DomainName, Timestamp};
use periscope_query::{Query, Resolution};
use proptest::prelude::*;

mod generators;
use generators::*;

fn config(max_host_only_results: u64) -> IndexConfig {
    IndexConfig {
        max_host_only_results,
        ..IndexConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_answer_equals_the_reference(
        lines in lines(),
        max in 0..8u64,
        queries in queries(),
    ) {
        let (reference, engine) = both(config(max), &lines);
        same_answers(now(), &reference, &engine, &queries)?;
    }

    #[test]
    fn host_details_and_domain_scans_equal_the_reference(
        lines in lines(),
        limit in 1..4usize,
    ) {
        let (reference, engine) = both(IndexConfig::default(), &lines);
        same_details(now(), &reference, &engine, limit)?;
    }
}

type Queries = Vec<((Query, Vec<IpAddr>), Option<&'static str>, usize)>;

fn queries() -> impl Strategy<Value = Queries> {
    proptest::collection::vec(
        (query(), proptest::option::of(pick(&ADDRESSES)), 1..5usize),
        1..12,
    )
}

/// Every page, count, exposure and facets answer of `queries` equal in both.
fn same_answers(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    queries: &Queries,
) -> Result<(), TestCaseError> {
    for ((query, resolved), after, limit) in queries {
        same_search(at, reference, engine, query, resolved, None, *limit)?;
        same_search(
            at,
            reference,
            engine,
            query,
            resolved,
            after.map(ip),
            *limit,
        )?;
        prop_assert_eq!(
            engine.count(query, at),
            reference.count(query, at),
            "count {}",
            query
        );
        for resolution in [Resolution::Global, Resolution::Regional, Resolution::Local] {
            prop_assert_eq!(
                engine.exposure(query, resolution, at),
                reference.exposure(query, resolution, at),
                "exposure {} {}",
                query,
                resolution
            );
        }
        if let Query::Filter(f) = query {
            prop_assert_eq!(
                engine.facets(f, at),
                reference.facets(f, at),
                "facets {}",
                query
            );
        }
    }
    Ok(())
}

/// Host details (every page) and domain-scan lookups of every address and name equal.
fn same_details(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    limit: usize,
) -> Result<(), TestCaseError> {
    for address in ADDRESSES.iter().copied().chain(["240.9.9.9"]) {
        let address = ip(address);
        same_detail(at, reference, engine, address, limit)?;
        prop_assert_eq!(
            engine.domain_scans_of_address(address),
            reference.domain_scans_of_address(address)
        );
    }
    for garbage in [
        "",
        "hd1.x.22.ssh",
        "hd1.00000000000000000000000000000000.22.ssh",
    ] {
        prop_assert_eq!(
            engine.host_detail(ip("240.0.0.1"), Some(garbage), 2, at),
            reference.host_detail(ip("240.0.0.1"), Some(garbage), 2, at)
        );
    }
    for name in [
        "example",
        "a.example",
        "www.a.example",
        "b.example",
        "x.b.example",
        "c.example",
    ] {
        let name = DomainName::parse(name).unwrap();
        prop_assert_eq!(
            engine.domain_scans_of_name(&name),
            reference.domain_scans_of_name(&name)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// An index saved to its file and loaded back (as every restart serves) answers as the
    /// reference: every column, posting and place of the file is read as it was written.
    #[test]
    fn an_index_read_back_from_its_file_answers_as_the_reference(
        lines in lines(),
        max in 0..8u64,
        queries in queries(),
        limit in 1..4usize,
    ) {
        let dir = CaseDir::new("read-back");
        let mut reference = ReferenceIndex::new(config(max));
        let observations = read(&lines);
        for obs in &observations {
            reference.apply(obs);
        }
        let mut store = DurableStore::open(&dir.0.join("scan.store")).unwrap();
        store.apply_batch(&observations).unwrap();
        let file = dir.0.join("scan.index");
        let built = EmbeddedIndex::from_store(&store, config(max), now()).unwrap();
        built.save(&file).unwrap();
        let loaded = EmbeddedIndex::load(&file, store.snapshot().unwrap(), config(max)).unwrap();
        same_answers(now(), &reference, &loaded, &queries)?;
        same_details(now(), &reference, &loaded, limit)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The layered view: a base and a delta of later batches.

fn batches() -> impl Strategy<Value = Vec<(Vec<String>, bool)>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(prop_oneof![5 => service_line(), 1 => domain_line()], 1..12),
            any::<bool>(),
        ),
        1..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_base_and_delta_answer_as_the_reference_of_all_batches(
        base in lines(),
        later in batches(),
        max in 0..8u64,
        queries in queries(),
        limit in 1..4usize,
        later_day in any::<bool>(),
    ) {
        let dir = CaseDir::new("layered");
        // A month later, services observed at TIMES[1] have left the window, TIMES[2] not.
        let at = if later_day { Timestamp::parse(LATER).unwrap() } else { now() };
        let (reference, live) = layered(&dir, config(max), &base, &later, at);
        let view = live.current();
        same_answers(at, &reference, view.as_ref(), &queries)?;
        same_details(at, &reference, view.as_ref(), limit)?;
        // The live index answers through the same view.
        same_answers(at, &reference, &live, &queries)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The engine's own structures.

fn service(address: &str, port: u16, protocol: &str, at: &str, host: &str) -> String {
    format!(
        r#"{{"kind":"service","ip":"{address}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"completed"{host}}}"#
    )
}

/// The hosts (in order) a filter query matches in the engine, checked against the reference.
fn check(lines: &[String], cases: &[(&str, &[&str])]) {
    let (reference, engine) = both(IndexConfig::default(), lines);
    for (text, want) in cases {
        let query: Query = text.parse().unwrap();
        let req = SearchRequest {
            query: &query,
            after: None,
            limit: 100,
            resolved: &[],
            now: now(),
        };
        let SearchOutcome::Page(page) = engine.search(&req).unwrap() else {
            panic!("{text}: too broad")
        };
        let got: Vec<String> = page.hosts.iter().map(|h| h.host.ip.to_string()).collect();
        assert_eq!(got, *want, "{text}");
        assert_eq!(engine.search(&req), reference.search(&req), "{text}");
        assert_eq!(
            engine.count(&query, now()).unwrap().value,
            want.len() as u64
        );
    }
}

#[test]
fn postings_answer_phrases_names_and_ranges() {
    let org = |o: &str| {
        format!(r#","host":{{"provider":{{"organization":"{o}"}},"domain":"shop.a.example"}}"#)
    };
    let lines = vec![
        service("240.0.0.1", 22, "ssh", TIMES[2], &org("Example Corp Ltd")),
        service("240.0.0.2", 22, "ssh", TIMES[2], &org("Corp Example")),
        service(
            "240.0.0.3",
            443,
            "https",
            TIMES[2],
            &org("The Example Big Corp"),
        ),
        service("3fff::1", 443, "https", TIMES[2], ""),
        // Expired: not a host.
        service("240.0.0.4", 22, "ssh", TIMES[0], &org("Example Corp")),
    ];
    check(
        &lines,
        &[
            (r#"organization:"example corp""#, &["240.0.0.1"]),
            (
                r#"organization:"corp""#,
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            (r#"organization:"big""#, &["240.0.0.3"]),
            ("port:443", &["240.0.0.3", "3fff::1"]),
            ("port:22", &["240.0.0.1", "240.0.0.2"]),
            ("domain:a.example", &["240.0.0.1", "240.0.0.2", "240.0.0.3"]),
            (
                "domain:shop.a.example",
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            ("domain:hop.a.example", &[]),
            (
                "cidr:240.0.0.0/30",
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            ("240.0.0.4", &[]),
            ("3fff::1", &["3fff::1"]),
        ],
    );
}

#[test]
fn retention_is_applied_at_build_time() {
    let lines = vec![
        service("240.0.0.1", 22, "ssh", TIMES[0], ""),
        service("240.0.0.1", 80, "http", TIMES[2], ""),
        service("240.0.0.2", 22, "ssh", TIMES[0], ""),
    ];
    let (_, engine) = both(IndexConfig::default(), &lines);
    let stats = engine.stats();
    assert_eq!((stats.hosts, stats.services), (1, 1));
    assert_eq!(engine.built_at(), now());
    let detail = engine
        .host_detail(ip("240.0.0.1"), None, 20, now())
        .unwrap()
        .unwrap();
    assert_eq!(detail.host.services.len(), 1);
    assert_eq!(
        engine
            .host_detail(ip("240.0.0.2"), None, 20, now())
            .unwrap(),
        None
    );
}

#[test]
fn records_out_of_host_order_are_refused() {
    let records = [ip("3fff::1"), ip("240.0.0.1")].map(HostRecord::new);
    let err = EmbeddedIndex::build(IndexConfig::default(), now(), records, Default::default())
        .unwrap_err();
    assert!(
        matches!(err, BuildError::OutOfOrder { ip: a } if a == ip("240.0.0.1")),
        "{err}"
    );
    let twice = [ip("240.0.0.1"), ip("240.0.0.1")].map(HostRecord::new);
    assert!(
        EmbeddedIndex::build(IndexConfig::default(), now(), twice, Default::default()).is_err()
    );
}

#[test]
fn an_index_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<EmbeddedIndex>();
}

#[test]
fn builds_from_the_durable_store() {
    let dir = std::env::temp_dir().join(format!("periscope-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scan.store");
    let _ = std::fs::remove_file(&path);
    let lines = vec![
        service("240.0.0.2", 22, "ssh", TIMES[2], r#","host":{"location":{"country_code":"DE"}}"#),
        service("240.0.0.1", 443, "https", TIMES[3], ""),
        // Expired at `now`: stored, but neither matched nor shown.
        service("240.0.0.1", 80, "http", TIMES[0], ""),
        service("240.0.0.3", 80, "http", TIMES[0], ""),
        service("3fff::1", 22, "ssh", TIMES[1], ""),
        r#"{"kind":"domain","name":"a.example","addresses":["240.0.0.1"],"observed_at":"2026-11-20T10:00:00Z"}"#.to_owned(),
    ];
    let observations = read(&lines);
    let mut store = DurableStore::open(&path).unwrap();
    store.apply_batch(&observations).unwrap();
    let engine = EmbeddedIndex::from_store(&store, IndexConfig::default(), now()).unwrap();
    // A batch committed after the index was opened is not seen by it: it shows the snapshot
    // it was built from, not records that changed under it.
    let later = read(&[
        service("240.0.0.1", 8443, "https", TIMES[3], ""),
        service("240.0.0.9", 443, "https", TIMES[3], ""),
    ]);
    store.apply_batch(&later).unwrap();
    let (reference, from_records) = both(IndexConfig::default(), &lines);
    for address in ["240.0.0.1", "240.0.0.3", "3fff::1", "240.0.0.9"] {
        let detail = engine.host_detail(ip(address), None, 20, now());
        assert_eq!(
            detail,
            reference.host_detail(ip(address), None, 20, now()),
            "{address}"
        );
        assert_eq!(
            detail,
            from_records.host_detail(ip(address), None, 20, now()),
            "{address}"
        );
    }
    for text in [
        "country:DE",
        "port:443",
        "port:80",
        "port:8443",
        "domain:a.example",
        "cidr:240.0.0.0/24",
        "240.0.0.1",
    ] {
        let query: Query = text.parse().unwrap();
        let req = SearchRequest {
            query: &query,
            after: None,
            limit: 10,
            resolved: &[],
            now: now(),
        };
        assert_eq!(engine.search(&req), reference.search(&req), "{text}");
        assert_eq!(engine.search(&req), from_records.search(&req), "{text}");
    }
    drop(engine);
    let reopened = EmbeddedIndex::from_store(&store, IndexConfig::default(), now()).unwrap();
    // The index outlives the store handle it was opened through, and still reads records.
    drop(store);
    let query: Query = "port:8443".parse().unwrap();
    assert_eq!(reopened.count(&query, now()).unwrap().value, 1);
    let detail = reopened
        .host_detail(ip("240.0.0.1"), None, 20, now())
        .unwrap();
    assert_eq!(detail.map(|d| d.host.services.len()), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Measurement.

/// Resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn p50(mut run: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..41)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
fn measure_200k_hosts() {
    let as_of = now();
    let cfg = periscope_synth::SynthConfig {
        hosts: 200_000,
        seed: 7,
        as_of,
    };
    let mut loader = periscope_index::LineLoader::new(IndexConfig::default(), as_of);
    let t = Instant::now();
    periscope_synth::write_dataset(&cfg, &mut loader).unwrap();
    let reference = loader.into_index();
    eprintln!("generated and merged in {:.1?}", t.elapsed());

    let before = resident_bytes();
    let t = Instant::now();
    let engine = EmbeddedIndex::build(
        IndexConfig::default(),
        as_of,
        reference.records().cloned(),
        reference.domain_scans().clone(),
    )
    .unwrap();
    let build = t.elapsed();
    let grown = resident_bytes().saturating_sub(before);
    let stats = engine.stats();
    eprintln!(
        "built {} hosts, {} services in {build:.1?}; resident growth {} B/host (records + index); \
         index alone ~{} B/host",
        stats.hosts,
        stats.services,
        grown / stats.hosts.max(1),
        stats.index_bytes / stats.hosts.max(1)
    );

    // Values from the data itself: a host in the middle.
    let middle = reference.records().nth(100_000).unwrap();
    let rec = middle.clone();
    let address = rec.ip;
    let IpAddr::V4(v4) = address else {
        panic!("the middle host is IPv4")
    };
    let network = std::net::Ipv4Addr::from(u32::from(v4) & 0xffff_ff00);
    let enrichment = &rec.enrichment.as_ref().unwrap().0;
    let attribution = [
        &enrichment.asn.research,
        &enrichment.asn.bgp,
        &enrichment.asn.network,
    ]
    .into_iter()
    .flatten()
    .next()
    .unwrap();
    let word = attribution
        .organization
        .as_deref()
        .and_then(|o| o.split_whitespace().next())
        .unwrap_or("Example")
        .to_owned();
    let queries: Vec<(String, Query)> = [
        format!("{address}"),
        format!("cidr:{network}/24"),
        format!("asn:{}", attribution.asn),
        "port:443".to_owned(),
        "protocol:ssh country:DE".to_owned(),
        "port:443 protocol:https country:US".to_owned(),
        format!("organization:\"{word}\""),
    ]
    .into_iter()
    .map(|t| {
        let q: Query = t.parse().unwrap();
        (t, q)
    })
    .collect();
    for (text, query) in &queries {
        let req = SearchRequest {
            query,
            after: None,
            limit: 20,
            resolved: &[],
            now: as_of,
        };
        let matching = engine.count(query, as_of).unwrap().value;
        let took = p50(|| {
            engine.search(&req).unwrap();
        });
        eprintln!("search {text:<40} p50 {took:>10.1?}  ({matching} hosts)");
    }
    let port443: Query = "port:443".parse().unwrap();
    let took = p50(|| {
        engine.count(&port443, as_of).unwrap();
    });
    eprintln!("count  port:443{:<32} p50 {took:>10.1?}", "");
    let f = port443.as_filter().unwrap().clone();
    let took = p50(|| {
        engine.facets(&f, as_of).unwrap();
    });
    eprintln!("facets port:443{:<32} p50 {took:>10.1?}", "");
    let took = p50(|| {
        engine
            .exposure(&port443, Resolution::Global, as_of)
            .unwrap();
    });
    eprintln!("exposure port:443 global{:<23} p50 {took:>10.1?}", "");
    let t = Instant::now();
    let want = reference.facets(&f, as_of).unwrap();
    eprintln!("(reference facets port:443: {:.1?})", t.elapsed());
    assert_eq!(engine.facets(&f, as_of).unwrap(), want);
}
