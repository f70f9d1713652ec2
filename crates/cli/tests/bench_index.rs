//! End-to-end tests of `periscope bench index`: a small run reports every operation with
//! hosts matched and writes the same figures as JSON; `--reuse` measures the store a run left
//! behind, and `--delta-batch` a batch applied over it as a delta; a non-empty work directory
//! without `--reuse` is refused with exit status 2. No
//! test asserts a time.

mod common;

use std::path::Path;

use common::{OPERATIONS, path_str, periscope, scratch, text};

/// Runs the benchmark into `dir` with `extra` arguments; returns standard output.
fn bench(dir: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "bench",
        "index",
        "--hosts",
        "2000",
        "--runs",
        "3",
        "--as-of",
        "2026-01-01",
        "--dir",
        path_str(dir),
    ];
    args.extend_from_slice(extra);
    let out = periscope(&args);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    stdout
}

/// The report line of `op`, split into columns.
fn row<'a>(report: &'a str, op: &str) -> Vec<&'a str> {
    let line = report
        .lines()
        .find(|l| l.split_whitespace().next() == Some(op))
        .unwrap_or_else(|| panic!("no line for {op} in\n{report}"));
    line.split_whitespace().collect()
}

#[test]
fn reports_every_operation_with_matches_and_json() {
    let scratch = scratch("bench-index");
    let dir = scratch.join("work");
    let json = scratch.join("report.json");
    let report = bench(&dir, &["--json", path_str(&json)]);

    for label in ["synth:", "ingest:", "start to serving:", "memory:", "disk:"] {
        assert!(
            report.lines().any(|l| l.starts_with(label)),
            "{label}\n{report}"
        );
    }
    assert!(report.contains("2,000 hosts"), "{report}");
    // The ingest ran in a child process; this one only wrote the dataset.
    assert!(report.contains("(it also wrote the dataset)"), "{report}");
    for op in OPERATIONS {
        // operation, values, runs, p50, p99, min, max, matched, target..., example
        let cols = row(&report, op);
        assert_eq!(cols[2], "3", "{op}: runs\n{report}");
        let matched: u64 = cols[7].replace(',', "").parse().expect("matched count");
        assert!(matched > 0, "{op} matched nothing\n{report}");
    }
    // The input is deleted after the ingest; the store and the description stay.
    assert!(!dir.join("observations.jsonl").exists());
    assert!(dir.join("data/scan.store").is_dir());
    assert!(dir.join("dataset.txt").is_file());

    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written"))
            .expect("JSON parses");
    assert_eq!(value["dataset"]["hosts"], 2000);
    assert!(
        value["ingest"]["observations"]
            .as_u64()
            .expect("observations")
            > 0
    );
    assert!(value["start_to_serving"]["seconds"].is_number());
    assert!(value["disk_bytes"].as_u64().expect("disk") > 0);
    let ops = value["operations"].as_array().expect("operations");
    let names: Vec<&str> = ops.iter().filter_map(|o| o["name"].as_str()).collect();
    assert_eq!(names, OPERATIONS);
    for op in ops {
        assert_eq!(op["runs"], 3, "{op}");
        assert!(op["matched"]["min"].as_u64().expect("min") > 0, "{op}");
        for key in ["p50_ms", "p99_ms", "min_ms", "max_ms"] {
            assert!(op[key].as_f64().is_some_and(|v| v >= 0.0), "{key}: {op}");
        }
        assert!(
            op["example"].as_str().is_some_and(|e| !e.is_empty()),
            "{op}"
        );
    }

    // The first start built the index and saved its file; the restart loaded it.
    assert!(
        report.lines().any(|l| l.starts_with("first start:")),
        "{report}"
    );
    assert!(dir.join("data/scan.index").is_file());
    assert!(value["first_start_seconds"].is_number());
    // Each start ran in a process of its own and reported its memory.
    let first = &value["first_start"];
    assert!(first["built_because"].is_string(), "{first}");
    let restart = &value["restart"];
    assert!(restart["built_because"].is_null(), "{restart}");
    for start in [first, restart] {
        let steady = start["vm_rss_steady_bytes"].as_u64().expect("steady");
        let peak = start["vm_hwm_bytes"].as_u64().expect("peak");
        assert!(steady > 0 && peak >= steady, "{start}");
    }
    assert_eq!(
        value["memory"]["restart_vm_rss_steady_bytes"],
        restart["vm_rss_steady_bytes"]
    );
    assert!(
        value["memory"]["serving_bytes"].as_u64().expect("serving")
            >= restart["vm_rss_steady_bytes"].as_u64().expect("steady")
    );

    // A second run measures the same store without building it, loading the index file.
    let again = bench(&dir, &["--reuse"]);
    assert!(again.contains("ingest:           skipped"), "{again}");
    assert!(!again.contains("first start:"), "{again}");
    assert!(
        again.contains("memory:           serving process VmRSS"),
        "{again}"
    );
    assert!(!again.lines().any(|l| l.starts_with("synth:")), "{again}");
    for op in OPERATIONS {
        row(&again, op);
    }

    // A batch applied to the running index: timed delta refresh, the operations again over
    // base and delta, and a full rebuild of the same store.
    let json = dir.join("delta.json");
    let delta = bench(
        &dir,
        &["--reuse", "--delta-batch", "300", "--json", path_str(&json)],
    );
    assert!(
        delta.contains("delta batch:      300 observations"),
        "{delta}"
    );
    assert!(delta.contains("delta refresh:"), "{delta}");
    assert!(delta.contains("full rebuild:"), "{delta}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let d = &value["delta_refresh"];
    assert_eq!(d["observations"], 300, "{d}");
    assert!(d["hosts_written"].as_u64().unwrap() > 0, "{d}");
    assert!(d["delta_addresses"].as_u64().unwrap() > 0, "{d}");
    assert!(d["refresh_seconds"].as_f64().unwrap() >= 0.0, "{d}");
    let ops = d["operations"].as_array().unwrap();
    assert_eq!(ops.len(), OPERATIONS.len(), "{d}");
}

#[test]
fn a_streamed_dataset_ingests_the_same_observations_as_a_file() {
    let scratch = scratch("bench-stream");
    bench(
        &scratch.join("file"),
        &["--json", path_str(&scratch.join("f.json"))],
    );
    let streamed = bench(
        &scratch.join("stream"),
        &["--stream", "--json", path_str(&scratch.join("s.json"))],
    );
    assert!(streamed.contains("streamed into ingest"), "{streamed}");
    // Generator and ingest both ran in the child: this process wrote nothing.
    assert!(!streamed.contains("(it also"), "{streamed}");
    assert!(!scratch.join("stream/observations.jsonl").exists());
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(scratch.join(name)).expect("JSON"))
            .expect("JSON parses")
    };
    let (f, s) = (read("f.json"), read("s.json"));
    assert_eq!(f["ingest"]["observations"], s["ingest"]["observations"]);
    assert_eq!(f["ingest"]["synth_bytes"], s["ingest"]["synth_bytes"]);
    assert_eq!(s["ingest"]["synth_streamed"], true);
    assert_eq!(
        f["start_to_serving"]["index_services"],
        s["start_to_serving"]["index_services"]
    );
}

#[test]
fn refuses_a_non_empty_directory_without_reuse() {
    let dir = scratch("bench-index-non-empty");
    std::fs::write(dir.join("something"), "kept").expect("write");
    let out = periscope(&["bench", "index", "--hosts", "2000", "--dir", path_str(&dir)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not empty") && stderr.contains("--reuse"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("something")).expect("still there"),
        "kept"
    );

    // --reuse on a directory holding no dataset says so.
    let out = periscope(&["bench", "index", "--reuse", "--dir", path_str(&dir)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no complete benchmark dataset"), "{stderr}");
}
