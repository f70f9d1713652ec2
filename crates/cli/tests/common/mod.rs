//! Helpers shared by the end-to-end tests of the `periscope` binary: run it (optionally with
//! standard input and environment), make a fresh scratch directory, and read output as text.

#![allow(dead_code)] // Each test crate uses its own subset.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary with `args`, isolated from the caller's `PERISCOPE_DATA`.
pub fn command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_periscope"));
    cmd.args(args).env_remove("PERISCOPE_DATA");
    cmd
}

/// Runs the binary to completion.
pub fn periscope(args: &[&str]) -> Output {
    command(args).output().expect("the binary runs")
}

/// Runs `cmd` with `stdin` written to its standard input.
pub fn with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("the binary finishes")
}

/// A fresh, empty directory named for one test.
pub fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the binary with `args`, isolated also from the caller's ClickHouse index and
/// configuration file (`PERISCOPE_INDEX_URL`, `PERISCOPE_CONFIG`).
pub fn without_index_env(args: &[&str]) -> Output {
    let mut cmd = command(args);
    cmd.env_remove("PERISCOPE_INDEX_URL")
        .env_remove("PERISCOPE_CONFIG");
    cmd.output().expect("the binary runs")
}

/// Standard output of a run that must have succeeded.
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// Standard error of a run that must have failed with status 2.
pub fn failed(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stderr)
}

/// Every operation of the `bench index` report, in order.
pub const OPERATIONS: [&str; 17] = [
    "exact-ipv4",
    "exact-ipv6",
    "cidr-24",
    "asn",
    "domain",
    "broad-first-page",
    "three-clause",
    "organization",
    "product",
    "count",
    "count-three-service",
    "facets",
    "facets-three-service",
    "exposure-global",
    "exposure-regional",
    "exposure-local",
    "host-detail",
];

/// A path as text (the tests' paths are UTF-8).
pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}
