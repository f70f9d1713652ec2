//! End-to-end tests of `periscope ingest`: a synthetic dataset ingested from a file, from gzip
//! and from standard input gives the same store; the summary agrees with `periscope validate`;
//! re-ingesting applies nothing; bad lines are reported and skipped; a missing file or a bad
//! `--batch` exits with 2; an ingest killed with SIGKILL keeps its acknowledged batches and
//! is completed by running it again; one whose commit fails stops, says why and keeps exactly
//! what it acknowledged. The data directory ingest creates is private (0700).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{command, periscope, scratch, text, with_stdin};

use periscope_index::DomainScans;
use periscope_index::HostRecord;
use periscope_index::durable::DurableStore;

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// A synthetic dataset of `hosts` hosts, written by the binary.
fn dataset(dir: &Path, hosts: u64) -> PathBuf {
    let file = dir.join("synth.jsonl");
    let out = periscope(&[
        "synth",
        "--hosts",
        &hosts.to_string(),
        "--as-of",
        "2026-01-01",
        "--out",
        path_str(&file),
    ]);
    assert!(out.status.success(), "synth failed: {}", text(&out.stderr));
    file
}

/// Runs `periscope ingest --data DATA ARGS...`, which must succeed; returns its stdout.
fn ingest(data: &Path, args: &[&str]) -> String {
    let mut all = vec!["ingest", "--data", path_str(data)];
    all.extend_from_slice(args);
    let out = periscope(&all);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{all:?}: {stdout}{}",
        text(&out.stderr)
    );
    stdout
}

/// The number after `label` in a report (`applied:           1,234` → 1234).
fn count(report: &str, label: &str) -> u64 {
    let at = report
        .find(label)
        .unwrap_or_else(|| panic!("no {label:?} in {report}"));
    let digits: String = report[at + label.len()..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in {report}"))
}

/// Everything in the store of `data`: host records in host order and domain scans.
fn contents(data: &Path) -> (Vec<HostRecord>, DomainScans) {
    let store = DurableStore::open(&data.join("scan.store")).expect("the store opens");
    let hosts = store
        .hosts()
        .expect("hosts")
        .collect::<Result<Vec<_>, _>>()
        .expect("records decode");
    (hosts, store.domain_scans().expect("domain scans"))
}

#[test]
fn summary_agrees_with_validate_and_reingest_applies_nothing() {
    let dir = scratch("ingest-summary");
    let file = dataset(&dir, 2000);
    let data = dir.join("data");
    let report = ingest(&data, &[path_str(&file)]);
    // The data directory ingest creates will hold state.db's secrets: private from the start.
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{}", data.display());
    let validate = text(&periscope(&["validate", path_str(&file)]).stdout);

    let lines = count(&validate, ": ");
    assert_eq!(count(&report, "lines read:"), lines, "{report}{validate}");
    assert!(report.contains("(0 rejected, 0 blank)"), "{report}");
    let accepted = count(&validate, "lines read:");
    let applied = count(&report, "applied:");
    let superseded = count(&report, "superseded:");
    let ignored = count(&report, "ignored (failed):");
    assert!(applied > 0 && superseded > 0, "{report}");
    assert_eq!(
        applied + superseded + ignored,
        accepted,
        "{report}{validate}"
    );
    assert_eq!(count(&report, "observations:"), accepted, "{report}");
    assert_eq!(ignored, count(&validate, "partial,"), "{report}{validate}");
    assert_eq!(
        count(&report, "service,"),
        count(&validate, "failed;"),
        "{report}{validate}"
    );
    let (hosts, scans) = contents(&data);
    assert_eq!(
        count(&report, "scan.store:"),
        hosts.len() as u64,
        "{report}"
    );
    assert_eq!(
        count(&report, "hosts,"),
        scans.by_name.len() as u64,
        "{report}"
    );
    assert!(hosts.len() > 1900 && hosts.len() <= 2000, "{}", hosts.len());

    let again = ingest(&data, &[path_str(&file)]);
    assert_eq!(count(&again, "applied:"), 0, "{again}");
    assert_eq!(
        count(&again, "superseded:"),
        applied + superseded,
        "{again}"
    );
    assert_eq!(count(&again, "records written:"), 0, "{again}");
    assert_eq!(
        contents(&data),
        (hosts, scans),
        "re-ingesting changed the store"
    );
}

#[test]
fn gzip_and_stdin_give_the_same_store() {
    let dir = scratch("ingest-gzip-stdin");
    let file = dataset(&dir, 500);
    let plain = dir.join("plain");
    ingest(&plain, &[path_str(&file)]);
    let expected = contents(&plain);
    assert!(!expected.0.is_empty());

    // Two gzip members, in a file whose name does not say gzip: the magic bytes decide.
    let bytes = std::fs::read(&file).expect("read");
    let half = bytes[..bytes.len() / 2]
        .iter()
        .rposition(|b| *b == b'\n')
        .expect("a line end")
        + 1;
    let mut gz = Vec::new();
    for part in [&bytes[..half], &bytes[half..]] {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(part).expect("compress");
        gz.extend(encoder.finish().expect("compress"));
    }
    let gz_file = dir.join("observations.dat");
    std::fs::write(&gz_file, &gz).expect("write");
    let from_gz = dir.join("gz");
    let report = ingest(&from_gz, &[path_str(&gz_file)]);
    assert!(report.contains("1 file, 1 gzip"), "{report}");
    assert_eq!(
        contents(&from_gz),
        expected,
        "gzip input gave another store"
    );

    // Standard input, gzip-compressed, with the data directory from the environment.
    let from_stdin = dir.join("stdin");
    let mut cmd = command(&["ingest", "-"]);
    cmd.env("PERISCOPE_DATA", &from_stdin);
    let out = with_stdin(cmd, &gz);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(contents(&from_stdin), expected, "stdin gave another store");
}

#[test]
fn bad_lines_are_reported_and_the_good_ones_applied() {
    let dir = scratch("ingest-bad-lines");
    let good = std::fs::read_to_string(dataset(&dir, 50)).expect("read");
    let mut good_lines = good.lines();
    let first = good_lines.next().expect("a line");
    let second = good_lines.next().expect("a line");
    let bad_port = first.replacen("\"port\":", "\"port\":70000,\"x_port\":", 1);
    let mut content = format!("{first}\n{bad_port}\nnot json\n\n{second}\r\n").into_bytes();
    content.extend_from_slice(b"{\"kind\":\"domain\xff\"}\n");
    for _ in 0..22 {
        content.extend_from_slice(b"[]\n");
    }
    let file = dir.join("mixed.jsonl");
    std::fs::write(&file, content).expect("write");
    let path = path_str(&file);
    let data = dir.join("data");
    let report = ingest(&data, &["--batch", "1", path]);

    assert!(report.contains(&format!("{path}:line 2: ")), "{report}");
    assert!(
        report.contains(&format!("{path}:line 3: (line): ")),
        "{report}"
    );
    assert!(
        report.contains(&format!("{path}:line 6: (line): not UTF-8")),
        "{report}"
    );
    for fine in [1, 4, 5] {
        assert!(
            !report.contains(&format!("{path}:line {fine}:")),
            "line {fine} reported: {report}"
        );
    }
    // 25 rejected: the first 20 are shown.
    assert!(report.contains(&format!("{path}:line 23: ")), "{report}");
    assert!(!report.contains(&format!("{path}:line 24: ")), "{report}");
    assert!(
        report.contains("5 more rejected lines not shown"),
        "{report}"
    );
    assert!(report.contains("28 (25 rejected, 1 blank)"), "{report}");
    assert_eq!(count(&report, "observations:"), 2, "{report}");
    assert_eq!(
        count(&report, "applied:")
            + count(&report, "superseded:")
            + count(&report, "ignored (failed):"),
        2
    );
    assert!(
        report.contains("batches:           2 of up to 1;"),
        "{report}"
    );
}

#[test]
fn errors_exit_with_2_and_say_what_is_wrong() {
    let dir = scratch("ingest-errors");
    let file = dataset(&dir, 10);
    let data = dir.join("data");
    let cases: &[(&[&str], &str)] = &[
        (
            &[path_str(&file), "/nonexistent-periscope-file.jsonl"],
            "cannot open /nonexistent-periscope-file.jsonl",
        ),
        (&["--batch", "0", path_str(&file)], "1 to 1,000,000"),
        (&["--batch", "1000001", path_str(&file)], "1 to 1,000,000"),
        (&[], "FILE"),
        // The store and a ClickHouse index at once.
        (
            &["--index", "clickhouse://127.0.0.1:1/scans", path_str(&file)],
            "--data names the embedded store, but the index is ClickHouse",
        ),
        // A configuration flag's value its key refuses.
        (
            &["--geoip-city", " ", path_str(&file)],
            "invalid value ' ' for '--geoip-city <FILE>': `enrich.geoip_city` expects",
        ),
    ];
    for (args, needle) in cases {
        let mut all = vec!["ingest", "--data", path_str(&data)];
        all.extend_from_slice(args);
        let out = periscope(&all);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert_eq!(stderr.matches("error:").count(), 1, "{args:?}: {stderr}");
    }
    assert!(!data.exists(), "a refused run created the data directory");

    // A data directory that is a file.
    let out = periscope(&["ingest", "--data", path_str(&file), path_str(&file)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot create the data directory"),
        "{}",
        text(&out.stderr)
    );

    // A store another process holds.
    let held = dir.join("held");
    std::fs::create_dir_all(&held).expect("mkdir");
    let store = DurableStore::open(&held.join("scan.store")).expect("the store opens");
    let out = periscope(&["ingest", "--data", path_str(&held), path_str(&file)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("scan store").count(),
        1,
        "the store is named once: {stderr}"
    );
    assert_eq!(
        stderr.matches("is open in another process").count(),
        1,
        "{stderr}"
    );
    drop(store);

    // A data directory holding a store of schema version 1 (the redb file `scan.redb`): refused
    // with what to do, nothing written beside it.
    let old = dir.join("old");
    std::fs::create_dir_all(&old).expect("mkdir");
    {
        let db = redb::Database::create(old.join("scan.redb")).expect("a redb file");
        let txn = db.begin_write().expect("a write");
        txn.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .expect("the meta table")
            .insert("schema_version", 1)
            .expect("the version");
        txn.commit().expect("commit");
    }
    for command in [
        vec!["ingest", "--data", path_str(&old), path_str(&file)],
        vec![
            "serve",
            "--demo",
            "--demo-hosts",
            "10",
            "--data",
            path_str(&old),
            "--listen",
            "127.0.0.1:0",
        ],
    ] {
        let out = periscope(&command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(
            stderr.contains("scan.redb is a scan store of schema version 1")
                && stderr.contains("ingest the observations again into a new data directory"),
            "{command:?}: {stderr}"
        );
    }
    assert!(
        !old.join("scan.store").exists(),
        "a store was created beside the old one"
    );

    // A truncated gzip file is an input error, not a rejected line.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder
        .write_all(&std::fs::read(&file).expect("read"))
        .expect("compress");
    let gz = encoder.finish().expect("compress");
    let truncated = dir.join("truncated.jsonl.gz");
    std::fs::write(&truncated, &gz[..gz.len() / 2]).expect("write");
    let out = periscope(&["ingest", "--data", path_str(&data), path_str(&truncated)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("ingest stopped after 0 observations") && stderr.contains("reading (gzip)"),
        "{stderr}"
    );
}

#[test]
fn killed_ingest_keeps_acknowledged_batches_and_completes_on_rerun() {
    let dir = scratch("ingest-kill");
    let file = dataset(&dir, 5000);
    let data = dir.join("data");
    let args = [
        "ingest",
        "--data",
        path_str(&data),
        "--batch",
        "50",
        "--log-batches",
        path_str(&file),
    ];
    let mut child = command(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let stderr = child.stderr.take().expect("stderr");
    let mut acknowledged = 0u64;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("stderr is text");
        if line.starts_with("ingest: batch 3 acknowledged") {
            acknowledged = count(&line, "observations,");
            break;
        }
    }
    // Three batches of at most 50 (a batch closes early rather than split the lines of one
    // address that the parsing threads merged).
    assert!(
        (3..=150).contains(&acknowledged),
        "no batch acknowledged before the kill, or batches over --batch: {acknowledged}"
    );
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the ingest ended before the kill");
    }
    let (partial, _) = contents(&data);
    assert!(!partial.is_empty(), "acknowledged batches were lost");

    let rerun = ingest(&data, &args[3..]);
    assert!(count(&rerun, "superseded:") > 0, "{rerun}");
    let clean = dir.join("clean");
    ingest(&clean, &[path_str(&file)]);
    let (complete, scans) = contents(&data);
    assert!(
        partial.len() < complete.len(),
        "the kill came after the end"
    );
    assert_eq!(
        (complete, scans),
        contents(&clean),
        "killed + rerun differs from one clean ingest"
    );
}

/// The total of the last `--log-batches` line (`ingest: batch 7 acknowledged: 50 observations,
/// 350 in all`), or 0 when no batch was acknowledged.
fn acknowledged_in_all(log: &str) -> u64 {
    log.lines()
        .rfind(|line| line.starts_with("ingest: batch ") && line.contains(" acknowledged: "))
        .map_or(0, |line| {
            let (_, total) = line.rsplit_once(", ").expect("a total");
            count(total, "")
        })
}

#[test]
fn a_failed_commit_stops_ingest_and_keeps_exactly_what_it_acknowledged() {
    let dir = scratch("ingest-failed-commit");
    let file = dataset(&dir, 5000);
    let input = std::fs::read(&file).expect("read");
    // Half the input: more than the reader holds before it hands on its first chunks, so that
    // batches are applied before the rest comes.
    let head = input[..input.len() / 2]
        .iter()
        .rposition(|b| *b == b'\n')
        .expect("a line end")
        + 1;
    let data = dir.join("data");
    let args = ["ingest", "--data", path_str(&data), "--batch", "50"];
    let mut child = command(&[&args[..], &["--log-batches", "-"]].concat())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let (obstacle_made, obstacle_in_place) = std::sync::mpsc::channel::<()>();
    let fed = input.clone();
    // The head, then the rest once the obstacle is in place — or after a minute, so that a
    // run that never acknowledges a batch ends (and the test fails) instead of waiting for
    // input. The ingest stops reading once the commit fails: the rest may not all be taken.
    let writer = std::thread::spawn(move || {
        if stdin.write_all(&fed[..head]).is_ok() {
            let _ = obstacle_in_place.recv_timeout(std::time::Duration::from_secs(60));
            let _ = stdin.write_all(&fed[head..]);
        }
    });
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut log = String::new();
    for line in stderr.by_ref() {
        let line = line.expect("stderr is text");
        log.push_str(&line);
        log.push('\n');
        if line.starts_with("ingest: batch 1 acknowledged") {
            break;
        }
    }
    assert!(
        acknowledged_in_all(&log) > 0,
        "no batch acknowledged: {log}"
    );
    // A directory where the next manifest is written: the next commit cannot write it. (A
    // commit writing its manifest there now holds the name until it renames the file.)
    let obstacle = data.join("scan.store").join("MANIFEST.tmp");
    while let Err(e) = std::fs::create_dir(&obstacle) {
        assert_eq!(
            e.kind(),
            std::io::ErrorKind::AlreadyExists,
            "the obstacle: {e}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let _ = obstacle_made.send(());
    for line in stderr {
        log.push_str(&line.expect("stderr is text"));
        log.push('\n');
    }
    let status = child.wait().expect("wait");
    writer.join().expect("the writer");
    assert_eq!(status.code(), Some(2), "{log}");
    assert!(
        log.contains("writing the manifest") && log.contains("MANIFEST.tmp"),
        "the error does not say what failed: {log}"
    );
    let acknowledged = acknowledged_in_all(&log);
    assert_eq!(
        count(&log, "ingest stopped after"),
        acknowledged,
        "the error and the log disagree on what was acknowledged: {log}"
    );
    assert!(
        acknowledged < input.split(|b| *b == b'\n').count() as u64,
        "every observation acknowledged: the commit never failed: {log}"
    );

    // The store holds exactly the acknowledged observations: the first lines, as many.
    std::fs::remove_dir(&obstacle).expect("the obstacle removed");
    let lines = usize::try_from(acknowledged).expect("a count");
    let prefix_end = input
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(lines - 1)
        .map(|(at, _)| at + 1)
        .expect("as many lines");
    let prefix = dir.join("prefix.jsonl");
    std::fs::write(&prefix, &input[..prefix_end]).expect("write");
    let clean_prefix = dir.join("clean-prefix");
    ingest(&clean_prefix, &[path_str(&prefix)]);
    assert_eq!(
        contents(&data),
        contents(&clean_prefix),
        "the store is not the {acknowledged} observations acknowledged"
    );

    // Run again, it completes the ingest.
    ingest(&data, &[&args[3..], &[path_str(&file)]].concat());
    let clean = dir.join("clean");
    ingest(&clean, &[path_str(&file)]);
    assert_eq!(
        contents(&data),
        contents(&clean),
        "failed + rerun differs from one clean ingest"
    );
}
