//! End-to-end tests of the `periscope` binary: `synth` → `validate` round trips, rejected lines
//! reported with file, line number, field and exit status 1, usage and I/O errors with exit
//! status 2, and `bench synth`.

mod common;

use std::path::PathBuf;

use common::{command, periscope, scratch, text, with_stdin};

/// `1155` as `1,155`, as the report prints counts.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A small synthetic dataset, written by the binary.
fn dataset(dir: &std::path::Path) -> PathBuf {
    let file = dir.join("demo.jsonl");
    let out = periscope(&[
        "synth",
        "--hosts",
        "300",
        "--seed",
        "5",
        "--as-of",
        "2026-01-01",
        "--out",
        file.to_str().expect("UTF-8 path"),
    ]);
    assert!(out.status.success(), "synth failed: {}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("records") && stderr.contains("300 hosts") && stderr.contains("records/s"),
        "{stderr}"
    );
    file
}

#[test]
fn synth_then_validate_accepts_every_line() {
    let dir = scratch("cli-round-trip");
    let file = dataset(&dir);
    let path = file.to_str().expect("UTF-8 path");
    let out = periscope(&["validate", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains(" 0 rejected"), "{stdout}");
    let lines = std::fs::read_to_string(&file)
        .expect("read")
        .lines()
        .count();
    let lines = grouped(lines);
    assert!(
        stdout.contains(&format!("{lines} lines read: {lines} accepted")),
        "{stdout}"
    );
}

#[test]
fn synth_to_stdout_is_the_same_dataset() {
    let dir = scratch("cli-stdout");
    let file = dataset(&dir);
    let out = periscope(&[
        "synth",
        "--hosts",
        "300",
        "--seed",
        "5",
        "--as-of",
        "2026-01-01T00:00:00Z",
        "--out",
        "-",
    ]);
    assert!(out.status.success());
    assert!(
        out.stdout == std::fs::read(&file).expect("read"),
        "stdout differs from the file"
    );
    let other = periscope(&[
        "synth",
        "--hosts",
        "300",
        "--seed",
        "6",
        "--as-of",
        "2026-01-01",
        "--out",
        "-",
    ]);
    assert!(
        other.stdout != out.stdout,
        "another seed gives the same bytes"
    );
}

#[test]
fn validate_reports_bad_lines_with_their_numbers_and_fails() {
    let dir = scratch("cli-bad-lines");
    let good = std::fs::read_to_string(dataset(&dir)).expect("read");
    let mut good_lines = good.lines();
    let first = good_lines.next().expect("a line");
    let second = good_lines.next().expect("a line");
    let bad_port = first.replacen("\"port\":", "\"port\":70000,\"x_port\":", 1);
    let content = format!("{first}\n{bad_port}\nnot json\n\n{second}\r\n");
    let file = dir.join("mixed.jsonl");
    std::fs::write(&file, content).expect("write");
    let path = file.to_str().expect("UTF-8 path");
    let out = periscope(&["validate", path]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(&format!("{path}:line 2: ")), "{stdout}");
    assert!(
        stdout.contains(&format!("{path}:line 3: (line): ")),
        "{stdout}"
    );
    for fine in [1, 4, 5] {
        assert!(
            !stdout.contains(&format!("{path}:line {fine}:")),
            "line {fine} reported: {stdout}"
        );
    }
    assert!(
        stdout.contains("5 lines read: 2 accepted") && stdout.contains("2 rejected, 1 blank"),
        "{stdout}"
    );
}

#[test]
fn validate_reads_stdin_and_caps_the_report() {
    let input = "x\ny\nz\n";
    let out = with_stdin(
        command(&["validate", "--max-errors", "2", "-"]),
        input.as_bytes(),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("<stdin>:line 1: ") && stdout.contains("<stdin>:line 2: "));
    assert!(!stdout.contains("<stdin>:line 3: "), "{stdout}");
    assert!(
        stdout.contains("1 more rejected lines not shown"),
        "{stdout}"
    );
}

#[test]
fn validate_rejects_invalid_utf8_and_goes_on() {
    let dir = scratch("cli-utf8");
    let good = std::fs::read_to_string(dataset(&dir)).expect("read");
    let first = good.lines().next().expect("a line");
    let mut content = b"{\"kind\":\"domain\xff\"}\n".to_vec();
    content.extend_from_slice(first.as_bytes());
    content.push(b'\n');
    let file = dir.join("latin1.jsonl");
    std::fs::write(&file, content).expect("write");
    let out = periscope(&["validate", file.to_str().expect("UTF-8 path")]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(":line 1: (line): not UTF-8"), "{stdout}");
    assert!(stdout.contains("2 lines read: 1 accepted"), "{stdout}");
}

#[test]
fn errors_say_what_is_wrong_and_exit_with_2() {
    let dir = scratch("cli-errors");
    let cases: &[(&[&str], &str)] = &[
        (
            &["synth", "--hosts", "0", "--out", "-"],
            "at least one host",
        ),
        (
            &["synth", "--hosts", "ten", "--out", "-"],
            "not a whole number",
        ),
        (
            &["synth", "--hosts", "5", "--as-of", "tomorrow", "--out", "-"],
            "2026-11-20",
        ),
        (
            &[
                "synth",
                "--hosts",
                "5",
                "--out",
                "/nonexistent-periscope-dir/x.jsonl",
            ],
            "cannot create /nonexistent-periscope-dir/x.jsonl",
        ),
        (
            &["validate", "/nonexistent-periscope-file.jsonl"],
            "cannot open",
        ),
        (&["validate"], "FILE"),
        (
            &["bench", "synth", "--runs", "0", "--hosts", "10"],
            "--runs",
        ),
    ];
    for (args, needle) in cases {
        let out = periscope(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // A gzip file gets a hint instead of a line-by-line flood.
    let gz = dir.join("x.jsonl.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0]).expect("write");
    let out = periscope(&["validate", gz.to_str().expect("UTF-8 path")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("gunzip -c"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bench_synth_reports_rates_and_memory() {
    let out = periscope(&["bench", "synth", "--hosts", "500", "--runs", "3"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert_eq!(stdout.matches("records/s").count(), 4, "{stdout}");
    assert!(stdout.contains("records/s: median "), "{stdout}");
    assert!(stdout.contains("MB/s:      median "), "{stdout}");
    assert!(stdout.contains("peak RSS:"), "{stdout}");
}
