//! The files in `packaging/`: the systemd unit passes `systemd-analyze verify` (with its
//! `ExecStart` pointed at the binary under test, which must accept the unit's arguments), and
//! keeps the hardening and journald settings docs/deploy.md promises. Needs Debian's `systemd`
//! package; without `systemd-analyze` the test fails under CI and is skipped, loudly, elsewhere.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::path::Path;
use std::process::Command;

use common::{command, scratch, text};

fn unit_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging/periscope.service");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn have(tool: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{tool} is missing (Debian package `systemd`); CI must have it"
        );
        eprintln!("SKIPPED: {tool} is missing (Debian package `systemd`)");
    }
    found
}

#[test]
fn the_systemd_unit_verifies_and_is_hardened() {
    let unit = unit_text();
    for setting in [
        "User=periscope",
        "StateDirectory=periscope",
        "ProtectSystem=strict",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "ProtectHome=yes",
        "Environment=PERISCOPE_LOG_FORMAT=json",
        "StandardError=journal",
        "--data /var/lib/periscope",
    ] {
        assert!(
            unit.lines().any(|l| l.contains(setting)),
            "the unit lacks {setting}"
        );
    }

    // The binary accepts the unit's command line (up to the configuration file it names).
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let args: Vec<&str> = exec.split_whitespace().skip(1).collect();
    assert_eq!(args.first(), Some(&"serve"));
    let dir = scratch("packaging_unit");
    let mut help: Vec<&str> = args.clone();
    help.push("--help");
    let out = command(&help).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    if !have("systemd-analyze") {
        return;
    }
    let binary = env!("CARGO_BIN_EXE_periscope");
    let tested = unit.replace("/usr/local/bin/periscope", binary);
    let path = dir.join("periscope.service");
    std::fs::write(&path, &tested).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {}\n{stderr}",
        out.status
    );

    // The check itself catches a bad unit: a misspelt value is reported.
    let broken = tested.replace("ProtectSystem=strict", "ProtectSystem=stricter");
    std::fs::write(&path, broken).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("stricter"),
        "{}",
        text(&out.stderr)
    );
}
