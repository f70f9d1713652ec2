//! `periscope convert` and `periscope ingest` over scanner output, end to end, for every
//! format (the fixtures of `crates/import/tests/fixtures`, written to each scanner's
//! documented format, private addresses included): the converted lines pass `validate`;
//! ingesting them gives the same store as ingesting the original, and so do its gzip and
//! standard input. An input of which nothing can be read, an unknown format and ZGrab2 without
//! `--port` stop with one clear error.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::{command, periscope, scratch, text, with_stdin};
use periscope_index::durable::DurableStore;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures")
        .join(name)
}

fn store_contents(data: &Path) -> String {
    let store = DurableStore::open(&data.join("scan.store")).unwrap();
    let hosts: Vec<_> = store.hosts().unwrap().map(|h| h.unwrap()).collect();
    format!("{hosts:?} {:?}", store.domain_scans().unwrap())
}

fn ingest(data: &Path, args: &[&str]) -> String {
    let mut all = vec!["ingest", "--data", data.to_str().unwrap()];
    all.extend(args);
    let out = periscope(&all);
    assert!(
        out.status.success(),
        "{all:?}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn every_format_round_trips_through_convert() {
    let dir = scratch("import_round_trip");
    for (file, extra, not_mapped) in [
        ("nmap.xml", &[][..], Some("tcpwrapped ×1")),
        ("masscan.json", &[][..], Some("port 8000/tcp ×1")),
        ("masscan.xml", &[][..], Some("port 31337/tcp ×1")),
        (
            "zgrab2.jsonl",
            &["--port", "http=443", "--port", "22"][..],
            Some("dnp3 ×1"),
        ),
        ("shodan.jsonl", &[][..], Some("x11 ×1")),
        ("censys.jsonl", &[][..], Some("elasticsearch ×1")),
    ] {
        let original = fixture(file);
        let original = original.to_str().unwrap();
        let converted = dir.join(format!("{file}.converted.jsonl"));
        let mut args = vec!["convert", original, "-o", converted.to_str().unwrap()];
        args.extend(extra);
        let out = periscope(&args);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        if let Some(name) = not_mapped {
            assert!(
                text(&out.stderr).contains(name),
                "{file}: {}",
                text(&out.stderr)
            );
        }
        let out = periscope(&["validate", converted.to_str().unwrap()]);
        assert!(out.status.success(), "{file}: {}", text(&out.stdout));

        let (a, b, c) = (
            dir.join(format!("{file}.a")),
            dir.join(format!("{file}.b")),
            dir.join(format!("{file}.c")),
        );
        let mut args = vec![original];
        args.extend(extra);
        let report = ingest(&a, &args);
        assert!(report.contains("scanner records:"), "{file}: {report}");
        if let Some(name) = not_mapped {
            assert!(report.contains(name), "{file}: {report}");
        }
        ingest(&b, &[converted.to_str().unwrap()]);
        assert_eq!(store_contents(&a), store_contents(&b), "{file}");
        assert!(
            !store_contents(&a).starts_with("[]"),
            "{file}: something was stored"
        );

        // gzip on standard input, format detected.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&std::fs::read(fixture(file)).unwrap())
            .unwrap();
        let gz = gz.finish().unwrap();
        let mut args = vec!["ingest", "--data", c.to_str().unwrap(), "-"];
        args.extend(extra);
        let out = with_stdin(command(&args), &gz);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        assert!(
            text(&out.stdout).contains(", 1 gzip"),
            "{}",
            text(&out.stdout)
        );
        assert_eq!(
            store_contents(&a),
            store_contents(&c),
            "{file} (gzip, stdin)"
        );
    }
}

#[test]
fn inputs_that_cannot_be_read_stop_with_one_clear_error() {
    let dir = scratch("import_errors");
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let nmap = fixture("nmap.xml");
    let nmap = nmap.to_str().unwrap();

    // An XML file named as observation lines: every line rejected, nothing read.
    let out = periscope(&["ingest", "--data", data, "--format", "jsonl", nmap]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("nothing could be read from"), "{stderr}");
    assert!(
        stderr.contains("were rejected, read as jsonl (--format)"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        text(&out.stdout).is_empty(),
        "no summary of zero observations"
    );

    let out = periscope(&["convert", "--format", "zgrab2", "--port", "443", nmap]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nothing could be read from"),
        "{}",
        text(&out.stderr)
    );

    // ZGrab2 output without the port it scanned.
    let zgrab = fixture("zgrab2.jsonl");
    let out = periscope(&["ingest", "--data", data, zgrab.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--port PORT"),
        "{}",
        text(&out.stderr)
    );

    // Something that is no format at all.
    let junk = dir.join("notes.txt");
    std::fs::write(&junk, "hello\n").unwrap();
    let out = periscope(&["convert", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot tell the format"),
        "{}",
        text(&out.stderr)
    );

    // A bad --format names the choices.
    let out = periscope(&["convert", "--format", "nessus", nmap]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nmap-xml"),
        "{}",
        text(&out.stderr)
    );
}
