//! The ClickHouse engine against the reference engine, on real ClickHouse servers the test
//! starts (see `periscope_clickhouse::testing`): random observation lines and random queries from the embedded
//! engine's generators (`crates/index/tests/generators`), written to ClickHouse in two
//! batches and applied to a `ReferenceIndex`, must give equal answers for every `ScanIndex`
//! method the engine implements — every page of every search, counts, every host-detail
//! page, facets, exposure at the three resolutions, domain-scan lookups by name and by
//! address.
//!
//! Half the cases ask again after `OPTIMIZE … FINAL` merged every part: answers must not
//! depend on merge timing. Each case gets its own database, created by `schema::init` (run twice: it is idempotent)
//! and dropped after. One server (a one-shard cluster), then two servers as two shards with
//! hosts spread over both.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

#[path = "../../index/tests/generators/mod.rs"]
mod generators;

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use generators::*;
use periscope_clickhouse::client::{Client, ClientOptions};
use periscope_clickhouse::testing::{CLUSTER, Cluster};
use periscope_clickhouse::{ClickHouseIndex, SCHEMA_VERSION, schema};
use periscope_index::api::{IndexError, ScanIndex};
use periscope_index::{IndexConfig, ReferenceIndex};
use periscope_model::{DomainName, Timestamp};
use periscope_query::{Query, Resolution};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

fn config(max_host_only_results: u64) -> IndexConfig {
    IndexConfig {
        max_host_only_results,
        ..IndexConfig::default()
    }
}

/// A fresh database on every node of `cluster` with the schema, and the engine over it.
fn fresh(cluster: &Cluster, config: IndexConfig) -> (ClickHouseIndex, String) {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let db = format!("case_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let nodes = cluster.clients();
    schema::init(&nodes, &db, CLUSTER).unwrap();
    schema::init(&nodes, &db, CLUSTER).unwrap();
    let engine =
        ClickHouseIndex::new(&cluster.urls()[0], &db, config, Duration::from_secs(30)).unwrap();
    (engine, db)
}

fn drop_database(cluster: &Cluster, db: &str) {
    for node in cluster.clients() {
        node.execute(&format!("DROP DATABASE IF EXISTS {db}"))
            .unwrap();
    }
}

/// Every answer of `engine` equals the reference's, now and later (when services observed
/// before the data's "newer" time have left the retention window).
fn same_answers(
    reference: &ReferenceIndex,
    engine: &ClickHouseIndex,
    queries: &[(Query, Vec<IpAddr>)],
    limit: usize,
) -> Result<(), TestCaseError> {
    for at in [now(), Timestamp::parse(LATER).unwrap()] {
        same_answers_at(at, reference, engine, queries, limit)?;
    }
    Ok(())
}

fn same_answers_at(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &ClickHouseIndex,
    queries: &[(Query, Vec<IpAddr>)],
    limit: usize,
) -> Result<(), TestCaseError> {
    for (query, resolved) in queries {
        same_search(at, reference, engine, query, resolved, None, limit)?;
        if let Query::Domain(_) = query {
            // Callers count ASN and filter queries only; domain searches are not counted.
            continue;
        }
        prop_assert_eq!(
            engine.count(query, at).unwrap(),
            reference.count(query, at).unwrap(),
            "count {}",
            query
        );
        for resolution in [Resolution::Global, Resolution::Regional, Resolution::Local] {
            prop_assert_eq!(
                engine.exposure(query, resolution, at).unwrap(),
                reference.exposure(query, resolution, at).unwrap(),
                "exposure {} {:?}",
                query,
                resolution
            );
        }
        if let Some(filter) = query.as_filter() {
            prop_assert_eq!(
                engine.facets(filter, at).unwrap(),
                reference.facets(filter, at).unwrap(),
                "facets {}",
                query
            );
        }
    }
    for address in ADDRESSES.iter().map(|a| ip(a)).chain([ip("240.9.9.9")]) {
        same_detail(at, reference, engine, address, limit)?;
        prop_assert_eq!(
            engine.domain_scans_of_address(address).unwrap(),
            reference.domain_scans_of_address(address).unwrap(),
            "domain scans listing {}",
            address
        );
    }
    for name in [
        "example",
        "a.example",
        "b.example",
        "www.a.example",
        "c.example",
    ] {
        let name = DomainName::parse(name).unwrap();
        prop_assert_eq!(
            engine.domain_scans_of_name(&name).unwrap(),
            reference.domain_scans_of_name(&name).unwrap(),
            "domain scans of {}",
            name
        );
    }
    Ok(())
}

fn differential(shards: usize, cases: u32) {
    let Some(cluster) = Cluster::start(shards, std::path::Path::new(env!("CARGO_TARGET_TMPDIR")))
    else {
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let spread = AtomicBool::new(false);
    let strategy = (
        lines(),
        0..8u64,
        proptest::collection::vec(query(), 1..8),
        1..4usize,
        0..40usize,
    );
    runner
        .run(&strategy, |(lines, max, queries, limit, split)| {
            let observations = read(&lines);
            let mut reference = ReferenceIndex::new(config(max));
            for obs in &observations {
                reference.apply(obs);
            }
            let (engine, db) = fresh(&cluster, config(max));
            let split = split.min(observations.len());
            engine.insert(&observations[..split]).unwrap();
            engine.insert(&observations[split..]).unwrap();
            let mut outcome = same_answers(&reference, &engine, &queries, limit);
            if outcome.is_ok() && split % 2 == 0 {
                // Answers do not depend on merges: merge everything, ask again.
                for node in cluster.clients() {
                    for table in ["services_local", "facts_local", "domain_scans_local"] {
                        node.execute(&format!("OPTIMIZE TABLE {db}.{table} FINAL"))
                            .unwrap();
                    }
                }
                outcome = same_answers(&reference, &engine, &queries, limit);
            }
            let on_every_shard = cluster.clients().iter().all(|node| {
                let n = node
                    .execute(&format!("SELECT count() FROM {db}.services_local"))
                    .unwrap();
                n.trim() != "0"
            });
            if on_every_shard {
                spread.store(true, Ordering::Relaxed);
            }
            drop_database(&cluster, &db);
            outcome
        })
        .unwrap();
    assert!(
        spread.load(Ordering::Relaxed),
        "no case had services on every one of the {shards} shards"
    );
}

/// The statements the engine sends, checked against a current ClickHouse release: a few
/// random cases run on the started server through a recording client (and are compared with
/// the reference as above), then `replay_chdb.py` replays every statement on chdb —
/// ClickHouse 26.x in process, from `$PERISCOPE_TEST_CHDB_PYTHON` (`scripts/chdb-venv`) —
/// and requires every SELECT to give the same rows there.
#[test]
fn the_statements_run_alike_on_a_current_release() {
    let python = match std::env::var("PERISCOPE_TEST_CHDB_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!(
                "PERISCOPE_TEST_CHDB_PYTHON is not set: CI must check the SQL on a current ClickHouse (scripts/chdb-venv)"
            )
        }
        _ => {
            eprintln!(
                "\n\n*** SKIPPED: PERISCOPE_TEST_CHDB_PYTHON is not set (scripts/chdb-venv); \
                 the ClickHouse SQL was NOT checked on a current release ***\n\n"
            );
            return;
        }
    };
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let mut runner = TestRunner::new(Config {
        cases: 6,
        failure_persistence: None,
        ..Config::default()
    });
    let exchanges = std::sync::Mutex::new(Vec::new());
    let strategy = (
        lines(),
        0..8u64,
        proptest::collection::vec(query(), 1..6),
        1..4usize,
    );
    runner
        .run(&strategy, |(lines, max, queries, limit)| {
            let observations = read(&lines);
            let mut reference = ReferenceIndex::new(config(max));
            for obs in &observations {
                reference.apply(obs);
            }
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let db = format!("replay_{}", NEXT.fetch_add(1, Ordering::Relaxed));
            let (client, recording) =
                periscope_clickhouse::Client::new(&cluster.urls()[0], Duration::from_secs(30))
                    .unwrap()
                    .recording();
            schema::init(std::slice::from_ref(&client), &db, CLUSTER).unwrap();
            let engine = ClickHouseIndex::with_client(client, &db, config(max)).unwrap();
            engine.insert(&observations).unwrap();
            let outcome = same_answers(&reference, &engine, &queries, limit);
            exchanges
                .lock()
                .unwrap()
                .extend(recording.lock().unwrap().drain(..));
            drop_database(&cluster, &db);
            outcome
        })
        .unwrap();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "clickhouse-statements-{}.jsonl",
        std::process::id()
    ));
    let mut out = String::new();
    for ex in exchanges.lock().unwrap().iter() {
        let line = serde_json::json!({
            "statement": ex.statement,
            "data": ex.data,
            "answer": ex.answer,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    std::fs::write(&path, out).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/replay_chdb.py");
    let run = std::process::Command::new(&python)
        .arg(script)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "replay on chdb failed:\n{stdout}\n{stderr}"
    );
    let compared: usize = stdout
        .lines()
        .find_map(|l| l.strip_prefix("compared "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        compared > 50,
        "only {compared} SELECTs were compared:\n{stdout}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn one_server_answers_as_the_reference() {
    differential(1, 48);
}

#[test]
fn two_shards_answer_as_the_reference() {
    differential(2, 24);
}

/// Centroids are integer sums of micro-degrees: three hosts in one tile whose latitudes sum to
/// different `f64`s in host order and in reverse, written in reverse order in separate
/// batches, give the reference's bucket bit for bit.
#[test]
fn centroids_do_not_depend_on_the_order_hosts_are_written_in() {
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let latitudes = [0.1, 0.2, 0.3];
    assert_ne!(
        (latitudes[0] + latitudes[1]) + latitudes[2],
        (latitudes[2] + latitudes[1]) + latitudes[0],
        "the data must tell the orders apart"
    );
    let lines: Vec<String> = latitudes
        .iter()
        .enumerate()
        .map(|(i, lat)| {
            format!(
                r#"{{"kind":"service","ip":"240.0.0.{}","port":22,"transport":"tcp","protocol":"ssh","observed_at":"2026-11-20T12:00:00Z","status":"completed","host":{{"location":{{"country_code":"DE","latitude":{lat},"longitude":1.0}}}}}}"#,
                i + 1
            )
        })
        .collect();
    let observations = read(&lines);
    assert_eq!(observations.len(), 3);
    let mut reference = ReferenceIndex::new(IndexConfig::default());
    for obs in &observations {
        reference.apply(obs);
    }
    let (engine, db) = fresh(&cluster, IndexConfig::default());
    for obs in observations.iter().rev() {
        engine.insert(std::slice::from_ref(obs)).unwrap();
    }
    let query = Query::Cidr(periscope_model::Ipv4Cidr::parse("240.0.0.0/24").unwrap());
    let want = reference
        .exposure(&query, Resolution::Global, now())
        .unwrap();
    assert_eq!(want.buckets.len(), 1);
    assert_eq!(
        want.buckets[0].latitude,
        (100_000.0 + 200_000.0 + 300_000.0) / 3.0 / 1e6,
        "the mean of the positions in whole micro-degrees"
    );
    let got = engine.exposure(&query, Resolution::Global, now()).unwrap();
    drop_database(&cluster, &db);
    assert_eq!(got, want);
}

/// A database holding another schema version (here version 1, the default granularity) is
/// refused by `init` with the node and both versions named, and its tables are not touched.
#[test]
fn init_refuses_another_schema_version() {
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let node = &cluster.clients()[0];
    node.execute("CREATE DATABASE old_schema").unwrap();
    node.execute("CREATE TABLE old_schema.schema_version (version UInt32) ENGINE = TinyLog")
        .unwrap();
    node.execute("INSERT INTO old_schema.schema_version VALUES (1)")
        .unwrap();
    let err = schema::init(std::slice::from_ref(node), "old_schema", CLUSTER).unwrap_err();
    assert_eq!(
        err,
        schema::SchemaError::Version {
            url: cluster.urls()[0].clone(),
            found: "1".into()
        }
    );
    assert!(
        err.to_string().contains(&format!(
            "schema version 1; this build uses {SCHEMA_VERSION}"
        )),
        "{err}"
    );
    let tables = node
        .execute(
            "SELECT count() FROM system.tables WHERE database = 'old_schema' FORMAT TabSeparated",
        )
        .unwrap();
    assert_eq!(
        tables.trim(),
        "1",
        "only schema_version: nothing was created"
    );
}

/// Every statement carries the memory bound of `[index] memory_limit_mb`: the server applies
/// it (its settings say so), a call needing more fails with ClickHouse's memory-limit error as
/// `IndexError::Unavailable` (which the service answers 503, nothing charged) instead of
/// growing the server until it is killed, and the server goes on answering.
#[test]
fn a_call_over_the_memory_bound_fails_and_the_server_keeps_serving() {
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let bounded = |bytes: u64| {
        let mut options = ClientOptions::new(Duration::from_secs(30));
        options.memory_limit = Some(bytes);
        Client::with_options(&cluster.urls()[0], &options).unwrap()
    };
    let settings = bounded(64 << 20)
        .execute(
            "SELECT name, value FROM system.settings WHERE name IN ('max_memory_usage', \
             'max_bytes_before_external_group_by', 'max_bytes_before_external_sort') \
             ORDER BY name FORMAT TabSeparated",
        )
        .unwrap();
    let half = (32u64 << 20).to_string();
    assert_eq!(
        settings,
        format!(
            "max_bytes_before_external_group_by\t{half}\nmax_bytes_before_external_sort\t{half}\n\
             max_memory_usage\t{}\n",
            64u64 << 20
        )
    );

    let lines = lines()
        .new_tree(&mut TestRunner::deterministic())
        .unwrap()
        .current();
    let observations = read(&lines);
    let mut reference = ReferenceIndex::new(config(0));
    for obs in &observations {
        reference.apply(obs);
    }
    let (engine, db) = fresh(&cluster, config(0));
    engine.insert(&observations).unwrap();
    let query = periscope_query::parse("port:443").unwrap();
    let starved = ClickHouseIndex::with_client(bounded(64 << 10), &db, config(0)).unwrap();
    match starved.count(&query, now()) {
        Err(IndexError::Unavailable(message)) => {
            assert!(message.contains("Memory limit"), "{message}")
        }
        other => panic!("a call over the bound must fail as unavailable: {other:?}"),
    }
    assert_eq!(
        engine.count(&query, now()).unwrap(),
        reference.count(&query, now()).unwrap(),
        "the server answers the next call"
    );
    drop_database(&cluster, &db);
}
