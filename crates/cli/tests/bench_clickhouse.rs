//! End-to-end tests of `periscope bench index --index clickhouse://…` against a one-server
//! ClickHouse cluster the test starts (`periscope_clickhouse::testing`): a small run loads the
//! dataset into ClickHouse and reports, for every operation, the embedded index's, the
//! ClickHouse engine's and the hand-written SQL's latencies and the engine/hand ratio, with
//! the ClickHouse ingest rate and disk, in the table and the JSON (the run itself fails if a
//! hand-written answer disagrees with the engine's); `--reuse` measures the database it
//! loaded without loading it again; a database holding other data is refused, with or
//! without `--reuse`. No test asserts a time.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::path::Path;
use std::process::Output;

use common::{OPERATIONS, failed, ok, path_str, scratch, without_index_env};
use periscope_clickhouse::testing::Cluster;

fn index_url(cluster: &Cluster, db: &str) -> String {
    format!(
        "{}/{db}",
        cluster.urls()[0].replace("http://", "clickhouse://")
    )
}

/// `bench index` at 2,000 hosts into `dir` over `url`, few runs, with `extra` arguments.
fn bench(dir: &Path, url: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "bench",
        "index",
        "--hosts",
        "2000",
        "--runs",
        "3",
        "--heavy-runs",
        "2",
        "--clickhouse-runs",
        "2",
        "--clickhouse-heavy-runs",
        "1",
        "--as-of",
        "2026-01-01",
        "--dir",
        path_str(dir),
        "--index",
        url,
    ];
    args.extend_from_slice(extra);
    without_index_env(&args)
}

fn positive(value: &serde_json::Value, what: &str) -> f64 {
    let n = value
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {value}"));
    assert!(n > 0.0, "{what}: {n}");
    n
}

#[test]
fn bench_index_over_clickhouse_reports_engine_and_hand_written_sql() {
    let root = scratch("bench-clickhouse");
    let Some(cluster) = Cluster::start(1, &root) else {
        return;
    };
    let url = index_url(&cluster, "bench");
    let dir = root.join("work");
    let json = root.join("report.json");
    let report = ok(&bench(&dir, &url, &["--json", path_str(&json)]));
    eprintln!("{report}");

    for label in ["ingest:", "clickhouse:", "clickhouse disk:"] {
        assert!(
            report.lines().any(|l| l.starts_with(label)),
            "{label}\n{report}"
        );
    }
    // The ClickHouse table: a line per operation with a ratio.
    let table = report
        .split_once("engine p50")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no ClickHouse table in\n{report}"));
    for op in OPERATIONS {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(op))
            .unwrap_or_else(|| panic!("no ClickHouse line for {op} in\n{report}"));
        let ratio: f64 = line.split_whitespace().nth(7).unwrap().parse().unwrap();
        assert!(ratio > 0.0, "{line}");
    }
    // The input was read by both ingests, then deleted; the load is recorded.
    assert!(!dir.join("observations.jsonl").exists());
    assert!(dir.join("clickhouse.txt").is_file());

    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ch = &value["clickhouse"];
    assert_eq!(ch["database"], "bench");
    let observations = value["ingest"]["observations"].as_u64().unwrap();
    assert_eq!(ch["ingest"]["observations"].as_u64(), Some(observations));
    positive(
        &ch["ingest"]["observations_per_second"],
        "ClickHouse ingest rate",
    );
    positive(&ch["disk_bytes"], "ClickHouse disk");
    let ops = value["operations"].as_array().unwrap();
    let names: Vec<&str> = ops.iter().filter_map(|o| o["name"].as_str()).collect();
    assert_eq!(names, OPERATIONS);
    for op in ops {
        let heavy = op["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("facets") || n.starts_with("exposure"));
        let runs = if heavy { 1 } else { 2 };
        positive(&op["embedded"]["p50_ms"], "embedded p50");
        for engine in ["clickhouse", "by_hand"] {
            assert_eq!(op[engine]["runs"], runs, "{engine}: {op}");
            positive(&op[engine]["p50_ms"], engine);
            positive(&op[engine]["p99_ms"], engine);
        }
        let ratio = positive(&op["ratio"]["value"], "ratio");
        let expected = op["clickhouse"]["p50_ms"].as_f64().unwrap()
            / op["by_hand"]["p50_ms"].as_f64().unwrap();
        assert!((ratio - expected).abs() < 1e-9, "{op}");
        assert!(op["ratio"]["ok"].is_boolean(), "{op}");
        assert!(op["ratio"]["failure"].is_null(), "{op}");
    }

    // Again over the same directory and database: nothing is loaded, all is measured.
    let again = ok(&bench(&dir, &url, &["--reuse", "--json", path_str(&json)]));
    assert!(again.contains("loaded by an earlier run"), "{again}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(value["clickhouse"]["ingest"].is_null(), "{value}");
    assert_eq!(
        value["operations"].as_array().unwrap().len(),
        OPERATIONS.len()
    );

    // The same database with another dataset's directory is refused.
    let other = root.join("other");
    let refused = failed(&bench(&other, &url, &["--reuse", "--seed", "9"]));
    assert!(refused.contains("is not empty"), "{refused}");
    assert!(refused.contains("records no dataset"), "{refused}");
}

#[test]
fn a_database_holding_other_data_is_refused() {
    let root = scratch("bench-clickhouse-refused");
    let Some(cluster) = Cluster::start(1, &root) else {
        return;
    };
    let url = index_url(&cluster, "taken");
    ok(&without_index_env(&["clickhouse", "init", "--index", &url]));
    let data = root.join("other.jsonl");
    ok(&without_index_env(&[
        "synth",
        "--hosts",
        "50",
        "--as-of",
        "2026-01-01",
        "--out",
        path_str(&data),
    ]));
    ok(&without_index_env(&[
        "ingest",
        "--index",
        &url,
        path_str(&data),
    ]));

    let dir = root.join("work");
    let refused = failed(&bench(&dir, &url, &[]));
    assert!(
        refused.contains("ClickHouse database taken at")
            && refused.contains("is not empty")
            && refused.contains("loads its dataset into an empty database"),
        "{refused}"
    );
    // Refused before anything was built.
    assert!(!dir.join("data").exists(), "the embedded store was built");

    let refused = failed(&bench(&dir, &url, &["--reuse"]));
    assert!(
        refused.contains("is not empty") && refused.contains("records no dataset"),
        "{refused}"
    );
    // What it held is untouched.
    let rows = cluster.clients()[0]
        .execute("SELECT count() FROM taken.services FORMAT TabSeparated")
        .unwrap();
    assert!(rows.trim().parse::<u64>().unwrap() > 0, "{rows}");
}
