//! The current-observation rule of `docs/search-semantics.md` ("What is current") against
//! `HostRecord` and `DomainScans`: which observation of a service is current, where each host
//! fact comes from, the retention cut-off, domain-scan records, and the property that the
//! order and repetition of the input never matter.
//!
//! Observations are written as lines of the observation format and parsed by the real reader,
//! so each row reads like the file a scanner would write.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;

use periscope_index::{ApplyOutcome, DomainScans, HostRecord};
use periscope_model::observation::{
    DomainScan, Observation, ObservationReader, ServiceObservation,
};
use periscope_model::{DomainName, Timestamp};
use proptest::prelude::*;

use ApplyOutcome::{Applied, Ignored, Superseded};

/// The reader's clock; every observation below is older.
const NOW: &str = "2026-12-01T00:00:00Z";
/// The address of every service line.
const IP: &str = "240.0.0.1";

const T1: &str = "2026-11-01T00:00:00Z";
const T2: &str = "2026-11-02T00:00:00Z";
const T3: &str = "2026-11-03T00:00:00Z";

// ---------------------------------------------------------------------------------------------
// Helpers.

fn ts(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn name(text: &str) -> DomainName {
    DomainName::parse(text).unwrap()
}

/// Parses lines of the observation format; every line must be accepted.
fn read(lines: &[String]) -> Vec<Observation> {
    let mut reader = ObservationReader::new(ts(NOW));
    lines
        .iter()
        .map(|line| {
            reader
                .read_line(line)
                .unwrap_or_else(|e| panic!("{e}\n{line}"))
                .unwrap_or_else(|| panic!("blank line"))
        })
        .collect()
}

fn services(lines: &[String]) -> Vec<ServiceObservation> {
    read(lines)
        .into_iter()
        .map(|o| match o {
            Observation::Service(s) => s,
            Observation::Domain(d) => panic!("not a service line: {d:?}"),
        })
        .collect()
}

fn domain_scans(lines: &[String]) -> Vec<DomainScan> {
    read(lines)
        .into_iter()
        .map(|o| match o {
            Observation::Domain(d) => d,
            Observation::Service(s) => panic!("not a domain line: {s:?}"),
        })
        .collect()
}

/// A service line of [`IP`]. A counting line carries the product title `"<status> <at>"`, so
/// the current service tells which line it came from; `host` is the `host` member's object
/// (empty: no `host` member).
fn svc(port: u16, protocol: &str, at: &str, status: &str, host: &str) -> String {
    let captured = if status == "failed" {
        r#""error":"connection reset""#.to_owned()
    } else {
        format!(r#""product":{{"title":"{status} {at}"}}"#)
    };
    let host = if host.is_empty() {
        String::new()
    } else {
        format!(r#","host":{host}"#)
    };
    format!(
        r#"{{"kind":"service","ip":"{IP}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"{status}",{captured}{host}}}"#
    )
}

/// A domain-scan line.
fn dom(name: &str, addresses: &[&str], at: &str) -> String {
    let addresses: Vec<String> = addresses.iter().map(|a| format!(r#""{a}""#)).collect();
    format!(
        r#"{{"kind":"domain","name":"{name}","addresses":[{}],"observed_at":"{at}"}}"#,
        addresses.join(",")
    )
}

/// Applies the lines in order to a fresh record of [`IP`].
fn apply_all(lines: &[String]) -> (HostRecord, Vec<ApplyOutcome>) {
    let mut record = HostRecord::new(ip(IP));
    let outcomes = services(lines).iter().map(|o| record.apply(o)).collect();
    (record, outcomes)
}

/// The current services of a record as (port, protocol, product title), long retention.
fn current(record: &HostRecord) -> Vec<(u16, String, String)> {
    record
        .current_services(ts(NOW), 365 * 86_400)
        .map(|s| {
            (
                s.port.get(),
                s.protocol.as_str().to_owned(),
                s.product
                    .as_ref()
                    .map(|p| p.title.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Which observation of a service is current.

struct ServiceCase {
    name: &'static str,
    lines: Vec<String>,
    outcomes: Vec<ApplyOutcome>,
    /// (port, protocol, status, observed_at) of each current service, in order.
    current: Vec<(u16, &'static str, &'static str, &'static str)>,
}

fn check_services(case: ServiceCase) {
    let (record, outcomes) = apply_all(&case.lines);
    assert_eq!(outcomes, case.outcomes, "{}: outcomes", case.name);
    let expected: Vec<(u16, String, String)> = case
        .current
        .iter()
        .map(|(port, protocol, status, at)| (*port, protocol.to_string(), format!("{status} {at}")))
        .collect();
    assert_eq!(
        current(&record),
        expected,
        "{}: current services",
        case.name
    );
    assert_eq!(
        record.is_host(ts(NOW), 365 * 86_400),
        !expected.is_empty(),
        "{}: is_host",
        case.name
    );
    for service in record.services.values() {
        assert_ne!(
            service.status,
            periscope_model::observation::ScanStatus::Failed
        );
    }
}

#[test]
fn current_observation_per_service() {
    let c = "completed";
    let p = "partial";
    let f = "failed";
    let cases = vec![
        ServiceCase {
            name: "one completed observation",
            lines: vec![svc(80, "http", T1, c, "")],
            outcomes: vec![Applied],
            current: vec![(80, "http", c, T1)],
        },
        ServiceCase {
            name: "newer replaces older",
            lines: vec![svc(80, "http", T1, c, ""), svc(80, "http", T2, c, "")],
            outcomes: vec![Applied, Applied],
            current: vec![(80, "http", c, T2)],
        },
        ServiceCase {
            name: "older never overwrites",
            lines: vec![svc(80, "http", T2, c, ""), svc(80, "http", T1, c, "")],
            outcomes: vec![Applied, Superseded],
            current: vec![(80, "http", c, T2)],
        },
        ServiceCase {
            name: "older never overwrites, three in shuffled order",
            lines: vec![
                svc(80, "http", T2, c, ""),
                svc(80, "http", T3, p, ""),
                svc(80, "http", T1, c, ""),
            ],
            outcomes: vec![Applied, Applied, Superseded],
            current: vec![(80, "http", p, T3)],
        },
        ServiceCase {
            name: "only failed observations: no services, not a host",
            lines: vec![svc(80, "http", T1, f, ""), svc(443, "https", T2, f, "")],
            outcomes: vec![Ignored, Ignored],
            current: vec![],
        },
        ServiceCase {
            name: "a newer failed observation never replaces",
            lines: vec![svc(80, "http", T1, c, ""), svc(80, "http", T2, f, "")],
            outcomes: vec![Applied, Ignored],
            current: vec![(80, "http", c, T1)],
        },
        ServiceCase {
            name: "a newer failed observation does not block an older counting one",
            lines: vec![svc(80, "http", T2, f, ""), svc(80, "http", T1, c, "")],
            outcomes: vec![Ignored, Applied],
            current: vec![(80, "http", c, T1)],
        },
        ServiceCase {
            name: "partial counts",
            lines: vec![svc(80, "http", T1, p, "")],
            outcomes: vec![Applied],
            current: vec![(80, "http", p, T1)],
        },
        ServiceCase {
            name: "a newer partial replaces a completed one",
            lines: vec![svc(80, "http", T1, c, ""), svc(80, "http", T2, p, "")],
            outcomes: vec![Applied, Applied],
            current: vec![(80, "http", p, T2)],
        },
        ServiceCase {
            name: "the key is port and protocol; order is port, then protocol",
            lines: vec![
                svc(8080, "https", T1, c, ""),
                svc(443, "https", T2, c, ""),
                svc(8080, "http", T3, c, ""),
            ],
            outcomes: vec![Applied, Applied, Applied],
            current: vec![
                (443, "https", c, T2),
                (8080, "http", c, T3),
                (8080, "https", c, T1),
            ],
        },
        ServiceCase {
            name: "an older observation of a new service key is applied",
            lines: vec![svc(443, "https", T2, c, ""), svc(80, "http", T1, c, "")],
            outcomes: vec![Applied, Applied],
            current: vec![(80, "http", c, T1), (443, "https", c, T2)],
        },
    ];
    for case in cases {
        check_services(case);
    }
}

#[test]
fn failed_observations_change_nothing_at_all() {
    let host = r#"{"location":{"city":"Munich","latitude":48.1,"longitude":11.5},"reverse_dns":["a.example"],"dns_name":"a.example"}"#;
    let (record, outcomes) = apply_all(&[svc(80, "http", T1, "failed", host)]);
    assert_eq!(outcomes, vec![Ignored]);
    assert_eq!(record, HostRecord::new(ip(IP)));
}

#[test]
fn stored_service_keeps_the_service_part() {
    let line = concat!(
        r#"{"kind":"service","ip":"240.0.0.1","port":443,"transport":"tcp","protocol":"https","#,
        r#""observed_at":"2026-11-01T00:00:00Z","status":"partial","error":"tls alert","#,
        r#""product":{"title":"nginx","version":"1.24.0"},"#,
        r#""vulnerabilities":{"cves":["CVE-2023-44487"],"max_cvss":7.5,"has_exploits":true},"#,
        r#""tls":{"version":"TLSv1.3"},"http":{"status_code":200,"complete":false},"#,
        r#""host":{"dns_name":"www.acme.example"}}"#,
    );
    let obs = &services(&[line.to_owned()])[0];
    let mut record = HostRecord::new(ip(IP));
    assert_eq!(record.apply(obs), Applied);
    let stored = record.services.values().next().unwrap();
    assert_eq!(
        (
            stored.port,
            stored.protocol,
            stored.transport,
            stored.observed_at,
            stored.status
        ),
        (
            obs.port,
            obs.protocol,
            obs.transport,
            obs.observed_at,
            obs.status
        )
    );
    assert_eq!(stored.error.as_deref(), Some("tls alert"));
    assert_eq!(stored.product, obs.product);
    assert_eq!(stored.vulnerabilities, obs.vulnerabilities);
    assert_eq!(stored.tls, obs.tls);
    assert_eq!(stored.http, obs.http);
    assert_eq!((&stored.ssh, &stored.summary), (&None, &None));
    assert_eq!(record.enrichment, Some((obs.host.clone(), obs.observed_at)));
}

#[test]
fn reapplying_a_file_changes_nothing() {
    let host = |city: &str, rdns: &str| {
        format!(
            r#"{{"location":{{"city":"{city}","latitude":1.0,"longitude":2.0}},"reverse_dns":["{rdns}"]}}"#
        )
    };
    let file = vec![
        svc(80, "http", T2, "completed", &host("Munich", "a.example")),
        svc(80, "http", T1, "completed", &host("Berlin", "b.example")),
        svc(443, "https", T1, "partial", ""),
        svc(443, "https", T3, "failed", ""),
        svc(22, "ssh", T3, "completed", r#"{"dns_name":"c.example"}"#),
    ];
    let (once, first) = apply_all(&file);
    assert_eq!(first, vec![Applied, Superseded, Applied, Ignored, Applied]);
    let mut twice = once.clone();
    let again: Vec<ApplyOutcome> = services(&file).iter().map(|o| twice.apply(o)).collect();
    assert_eq!(
        again,
        vec![Superseded, Superseded, Superseded, Ignored, Superseded]
    );
    assert_eq!(twice, once);
}

// ---------------------------------------------------------------------------------------------
// Host facts, each from its own most recent counting observation.

/// (value, observed_at) of one host fact, or `None` when the record has none.
type Fact = Option<(&'static str, &'static str)>;

struct FactsCase {
    name: &'static str,
    lines: Vec<String>,
    /// The enrichment's `dns_name` ("" when it has none) and when.
    enrichment: Fact,
    /// The location's city and when.
    location: Fact,
    /// The position's latitude (as written) and when.
    position: Fact,
    /// The first reverse-DNS name and when.
    reverse_dns: Fact,
}

fn fact<T>(
    stored: &Option<(T, Timestamp)>,
    value: impl Fn(&T) -> String,
) -> Option<(String, Timestamp)> {
    stored.as_ref().map(|(v, at)| (value(v), *at))
}

fn expected(f: Fact) -> Option<(String, Timestamp)> {
    f.map(|(value, at)| (value.to_owned(), ts(at)))
}

fn check_facts(case: FactsCase) {
    let (record, _) = apply_all(&case.lines);
    let n = case.name;
    let got = fact(&record.enrichment, |e| {
        e.dns_name
            .as_ref()
            .map(|d| d.to_string())
            .unwrap_or_default()
    });
    assert_eq!(got, expected(case.enrichment), "{n}: enrichment");
    let got = fact(&record.location, |l| l.city.clone().unwrap_or_default());
    assert_eq!(got, expected(case.location), "{n}: location");
    let got = fact(&record.position, |p| p.latitude.to_string());
    assert_eq!(got, expected(case.position), "{n}: position");
    let got = fact(&record.reverse_dns, |r| r[0].to_string());
    assert_eq!(got, expected(case.reverse_dns), "{n}: reverse dns");
}

/// A `host` object: dns name, city (with a position when `lat` is not empty), reverse DNS.
fn host(dns_name: &str, city: &str, lat: &str, rdns: &[&str]) -> String {
    let mut members = Vec::new();
    if !dns_name.is_empty() {
        members.push(format!(r#""dns_name":"{dns_name}""#));
    }
    if !city.is_empty() {
        let position = if lat.is_empty() {
            String::new()
        } else {
            format!(r#","latitude":{lat},"longitude":11.5,"accuracy_radius_km":20"#)
        };
        members.push(format!(r#""location":{{"city":"{city}"{position}}}"#));
    }
    let rdns: Vec<String> = rdns.iter().map(|n| format!(r#""{n}""#)).collect();
    members.push(format!(r#""reverse_dns":[{}]"#, rdns.join(",")));
    format!("{{{}}}", members.join(","))
}

#[test]
fn host_facts_each_from_their_most_recent_observation() {
    let c = "completed";
    let cases = vec![
        FactsCase {
            name: "nothing applied",
            lines: vec![],
            enrichment: None,
            location: None,
            position: None,
            reverse_dns: None,
        },
        FactsCase {
            name: "an observation without a host block still sets the enrichment",
            lines: vec![svc(80, "http", T1, c, "")],
            enrichment: Some(("", T1)),
            location: None,
            position: None,
            reverse_dns: None,
        },
        FactsCase {
            name: "newest enrichment wins, in order",
            lines: vec![
                svc(80, "http", T1, c, &host("a.example", "", "", &[])),
                svc(80, "http", T2, c, &host("b.example", "", "", &[])),
            ],
            enrichment: Some(("b.example", T2)),
            location: None,
            position: None,
            reverse_dns: None,
        },
        FactsCase {
            name: "newest enrichment wins, out of order on another service key",
            lines: vec![
                svc(
                    443,
                    "https",
                    T2,
                    c,
                    &host("b.example", "Berlin", "52.5", &["b.example"]),
                ),
                svc(
                    80,
                    "http",
                    T1,
                    c,
                    &host("a.example", "Munich", "48.1", &["a.example"]),
                ),
            ],
            enrichment: Some(("b.example", T2)),
            location: Some(("Berlin", T2)),
            position: Some(("52.5", T2)),
            reverse_dns: Some(("b.example", T2)),
        },
        FactsCase {
            name: "the most recent enrichment counts even when it records less",
            lines: vec![
                svc(80, "http", T1, c, &host("a.example", "", "", &[])),
                svc(443, "https", T2, c, ""),
            ],
            enrichment: Some(("", T2)),
            location: None,
            position: None,
            reverse_dns: None,
        },
        FactsCase {
            name: "location from the most recent observation with a location block",
            lines: vec![
                svc(80, "http", T1, c, &host("a.example", "Munich", "", &[])),
                svc(80, "http", T2, c, &host("b.example", "", "", &[])),
            ],
            enrichment: Some(("b.example", T2)),
            location: Some(("Munich", T1)),
            position: None,
            reverse_dns: None,
        },
        FactsCase {
            name: "position from the most recent observation recording one",
            lines: vec![
                svc(80, "http", T1, c, &host("", "Munich", "48.1", &[])),
                svc(80, "http", T2, c, &host("", "Berlin", "", &[])),
            ],
            enrichment: Some(("", T2)),
            location: Some(("Berlin", T2)),
            position: Some(("48.1", T1)),
            reverse_dns: None,
        },
        FactsCase {
            name: "reverse DNS from the most recent non-empty list",
            lines: vec![
                svc(
                    80,
                    "http",
                    T1,
                    c,
                    &host("", "", "", &["a.example", "z.example"]),
                ),
                svc(80, "http", T2, c, &host("", "", "", &[])),
            ],
            enrichment: Some(("", T2)),
            location: None,
            position: None,
            reverse_dns: Some(("a.example", T1)),
        },
        FactsCase {
            name: "reverse DNS replaced by a newer non-empty list",
            lines: vec![
                svc(80, "http", T1, c, &host("", "", "", &["a.example"])),
                svc(22, "ssh", T3, c, &host("", "", "", &["c.example"])),
                svc(443, "https", T2, c, &host("", "", "", &["b.example"])),
            ],
            enrichment: Some(("", T3)),
            location: None,
            position: None,
            reverse_dns: Some(("c.example", T3)),
        },
        FactsCase {
            name: "a superseded observation still supplies facts no newer one recorded",
            lines: vec![
                svc(80, "http", T2, c, &host("b.example", "", "", &[])),
                svc(
                    80,
                    "http",
                    T1,
                    c,
                    &host("a.example", "Munich", "48.1", &["a.example"]),
                ),
            ],
            enrichment: Some(("b.example", T2)),
            location: Some(("Munich", T1)),
            position: Some(("48.1", T1)),
            reverse_dns: Some(("a.example", T1)),
        },
        FactsCase {
            name: "partial observations count for host facts",
            lines: vec![
                svc(
                    80,
                    "http",
                    T1,
                    c,
                    &host("a.example", "Munich", "48.1", &["a.example"]),
                ),
                svc(
                    80,
                    "http",
                    T2,
                    "partial",
                    &host("b.example", "Berlin", "52.5", &["b.example"]),
                ),
            ],
            enrichment: Some(("b.example", T2)),
            location: Some(("Berlin", T2)),
            position: Some(("52.5", T2)),
            reverse_dns: Some(("b.example", T2)),
        },
        FactsCase {
            name: "failed observations never supply facts",
            lines: vec![
                svc(
                    80,
                    "http",
                    T1,
                    c,
                    &host("a.example", "Munich", "48.1", &["a.example"]),
                ),
                svc(
                    80,
                    "http",
                    T2,
                    "failed",
                    &host("b.example", "Berlin", "52.5", &["b.example"]),
                ),
            ],
            enrichment: Some(("a.example", T1)),
            location: Some(("Munich", T1)),
            position: Some(("48.1", T1)),
            reverse_dns: Some(("a.example", T1)),
        },
    ];
    for case in cases {
        check_facts(case);
    }
}

// ---------------------------------------------------------------------------------------------
// Retention.

/// Two different observations of one service in the same second, with different host facts:
/// whichever arrives first, the same one is current and the same facts are kept.
#[test]
fn ties_are_broken_by_content_not_by_arrival() {
    let c = "completed";
    let p = "partial";
    let pairs = [
        [svc(80, "http", T1, p, ""), svc(80, "http", T1, c, "")],
        [
            svc(
                80,
                "http",
                T1,
                c,
                &host("a.example", "Munich", "48.1", &["a.example"]),
            ),
            svc(
                443,
                "https",
                T1,
                c,
                &host("b.example", "Berlin", "52.5", &["b.example"]),
            ),
        ],
    ];
    // A completed observation beats a partial one of the same second, in either order.
    for lines in [
        pairs[0].to_vec(),
        vec![pairs[0][1].clone(), pairs[0][0].clone()],
    ] {
        let (record, _) = apply_all(&lines);
        assert_eq!(
            current(&record),
            [(80, "http".to_owned(), format!("{c} {T1}"))]
        );
    }
    for [first, second] in pairs {
        let both = [first.clone(), second.clone()];
        let (forward, outcomes) = apply_all(&both);
        let (backward, _) = apply_all(&[second, first]);
        assert_eq!(forward, backward, "{both:?}");
        assert_eq!(outcomes[0], Applied);
        // Either one again changes nothing.
        let mut again = forward.clone();
        for o in services(&both) {
            assert_ne!(again.apply(&o), Applied, "{both:?}");
        }
        assert_eq!(again, forward);
    }
    let a = "240.0.0.1";
    let b = "240.0.0.2";
    let one = dom("acme.example", &[a], T1);
    let other = dom("acme.example", &[b], T1);
    let (forward, outcomes) = scans(&[one.clone(), other.clone()]);
    let (backward, _) = scans(&[other, one]);
    assert_eq!(forward, backward);
    assert_eq!(outcomes[0], Applied);
}

#[test]
fn retention_cuts_off_at_the_exact_boundary() {
    const RETENTION: i64 = 86_400;
    let now = ts("2026-11-10T12:00:00Z");
    let lines = vec![
        svc(21, "ftp", "2026-11-09T11:59:59Z", "completed", ""), // one second too old
        svc(22, "ssh", "2026-11-09T12:00:00Z", "completed", ""), // exactly at the boundary
        svc(80, "http", "2026-11-10T12:00:00Z", "completed", ""), // now
        svc(443, "https", "2026-11-10T11:00:00Z", "partial", ""),
    ];
    let (record, _) = apply_all(&lines);
    let ports = |now: Timestamp| -> Vec<u16> {
        record
            .current_services(now, RETENTION)
            .map(|s| s.port.get())
            .collect()
    };
    assert_eq!(ports(now), vec![22, 80, 443]);
    assert_eq!(ports(ts("2026-11-10T12:00:01Z")), vec![80, 443]);
    assert_eq!(ports(ts("2026-11-09T12:00:00Z")), vec![21, 22, 80, 443]);
    // Nothing is rewritten: the expired service is still stored.
    assert_eq!(record.services.len(), 4);
    assert!(record.is_host(now, RETENTION));
    assert!(!record.is_host(ts("2026-11-12T00:00:00Z"), RETENTION));
    assert!(record.is_host(ts("2026-11-12T00:00:00Z"), 3 * RETENTION));
}

// ---------------------------------------------------------------------------------------------
// Domain-scan records.

fn scans(lines: &[String]) -> (DomainScans, Vec<ApplyOutcome>) {
    let mut scans = DomainScans::default();
    let outcomes = domain_scans(lines)
        .into_iter()
        .map(|s| scans.apply(s))
        .collect();
    (scans, outcomes)
}

/// (name, observed_at) of each record.
fn names<'a>(records: impl Iterator<Item = &'a DomainScan>) -> Vec<(String, Timestamp)> {
    records
        .map(|r| (r.name.to_string(), r.observed_at))
        .collect()
}

#[test]
fn domain_scans_keep_the_newest_record_per_name() {
    struct Case {
        name: &'static str,
        lines: Vec<String>,
        outcomes: Vec<ApplyOutcome>,
        /// (name, first address, observed_at) of every record.
        stored: Vec<(&'static str, &'static str, &'static str)>,
    }
    let a = "240.0.0.1";
    let b = "240.0.0.2";
    let cases = vec![
        Case {
            name: "newer replaces older",
            lines: vec![dom("acme.example", &[a], T1), dom("acme.example", &[b], T2)],
            outcomes: vec![Applied, Applied],
            stored: vec![("acme.example", b, T2)],
        },
        Case {
            name: "older never overwrites",
            lines: vec![dom("acme.example", &[b], T2), dom("acme.example", &[a], T1)],
            outcomes: vec![Applied, Superseded],
            stored: vec![("acme.example", b, T2)],
        },
        Case {
            name: "names are independent, stored by name",
            lines: vec![
                dom("www.acme.example", &[b], T1),
                dom("acme.example", &[a], T2),
            ],
            outcomes: vec![Applied, Applied],
            stored: vec![("acme.example", a, T2), ("www.acme.example", b, T1)],
        },
        Case {
            name: "names are normalised before comparing",
            lines: vec![
                dom("Acme.Example.", &[a], T1),
                dom("acme.example", &[b], T2),
            ],
            outcomes: vec![Applied, Applied],
            stored: vec![("acme.example", b, T2)],
        },
    ];
    for case in cases {
        let (scans, outcomes) = scans(&case.lines);
        assert_eq!(outcomes, case.outcomes, "{}: outcomes", case.name);
        let stored: Vec<(String, IpAddr, Timestamp)> = scans
            .by_name
            .values()
            .map(|r| (r.name.to_string(), r.addresses[0], r.observed_at))
            .collect();
        let expected: Vec<(String, IpAddr, Timestamp)> = case
            .stored
            .iter()
            .map(|(n, a, at)| (n.to_string(), ip(a), ts(at)))
            .collect();
        assert_eq!(stored, expected, "{}: records", case.name);
    }
}

#[test]
fn domain_scans_of_a_name_and_listing_an_address() {
    let a = "240.0.0.1";
    let b = "240.0.0.2";
    let v6 = "3fff:120:7::9";
    let (stored, _) = scans(&[
        dom("acme.example", &[a], T1),
        dom("www.acme.example", &[a, v6], T1),
        dom("deep.mail.acme.example", &[b], T1),
        dom("notacme.example", &[a, b], T1),
        dom("acme.example.org", &[a], T1),
        dom("example", &[b], T1),
        // Newer record of www: still lists v6 but no longer a.
        dom("www.acme.example", &[v6, b], T2),
    ]);
    let of = |n: &str| -> Vec<String> {
        stored
            .of_name(&name(n))
            .map(|r| r.name.to_string())
            .collect()
    };
    assert_eq!(
        of("acme.example"),
        vec!["acme.example", "deep.mail.acme.example", "www.acme.example"]
    );
    assert_eq!(of("mail.acme.example"), vec!["deep.mail.acme.example"]);
    assert_eq!(of("www.acme.example"), vec!["www.acme.example"]);
    assert_eq!(of("cme.example"), Vec::<String>::new());
    assert_eq!(of("other.example"), Vec::<String>::new());
    assert_eq!(of("example").len(), 5);
    assert_eq!(
        names(stored.of_name(&name("www.acme.example"))),
        vec![("www.acme.example".to_owned(), ts(T2))]
    );

    let listing = |addr: &str| -> Vec<String> {
        stored
            .listing(ip(addr))
            .map(|r| r.name.to_string())
            .collect()
    };
    assert_eq!(
        listing(a),
        vec!["acme.example", "acme.example.org", "notacme.example"]
    );
    assert_eq!(
        listing(b),
        vec![
            "deep.mail.acme.example",
            "example",
            "notacme.example",
            "www.acme.example"
        ]
    );
    assert_eq!(listing(v6), vec!["www.acme.example"]);
    assert_eq!(listing("240.0.0.3"), Vec::<String>::new());
    // An IPv4-mapped address in a line means the IPv4 address.
    let (mapped, _) = scans(&[dom("mapped.example", &["::ffff:240.0.0.1"], T1)]);
    assert_eq!(mapped.listing(ip(a)).count(), 1);
}

// ---------------------------------------------------------------------------------------------
// Order and repetition never matter.

/// One generated service observation, before it gets its (unique) time.
#[derive(Debug, Clone)]
struct Spec {
    key: usize,
    status: &'static str,
    dns_name: Option<&'static str>,
    /// None: no location; Some(false): a location without position; Some(true): with one.
    location: Option<bool>,
    rdns: &'static [&'static str],
}

const KEYS: [(u16, &str); 3] = [(80, "http"), (443, "https"), (8080, "http")];

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..KEYS.len(),
        prop::sample::select(vec!["completed", "partial", "failed"]),
        prop::option::of(prop::sample::select(vec!["a.example", "b.example"])),
        prop::option::of(any::<bool>()),
        prop::sample::select(vec![
            &[][..],
            &["a.example"][..],
            &["b.example", "a.example"][..],
        ]),
    )
        .prop_map(|(key, status, dns_name, location, rdns)| Spec {
            key,
            status,
            dns_name,
            location,
            rdns,
        })
}

/// The service line of `spec` observed `minute` minutes after T1; `tag` tells lines apart.
fn spec_line(spec: &Spec, minute: usize, tag: usize) -> String {
    let at = minutes_after_t1(minute);
    let (port, protocol) = KEYS[spec.key];
    let mut members = Vec::new();
    if let Some(d) = spec.dns_name {
        members.push(format!(r#""dns_name":"{d}""#));
    }
    match spec.location {
        None => {}
        Some(false) => members.push(format!(r#""location":{{"city":"City {tag}"}}"#)),
        Some(true) => members.push(format!(
            r#""location":{{"city":"City {tag}","latitude":{tag}.5,"longitude":-{tag}.25}}"#
        )),
    }
    let rdns: Vec<String> = spec.rdns.iter().map(|n| format!(r#""{n}""#)).collect();
    members.push(format!(r#""reverse_dns":[{}]"#, rdns.join(",")));
    svc(
        port,
        protocol,
        &at,
        spec.status,
        &format!("{{{}}}", members.join(",")),
    )
}

/// Observations with pairwise distinct times (so [`model`], which knows no tie-break, applies),
/// plus an application order that visits each at least once, with repetitions, shuffled.
fn observations_and_order() -> impl Strategy<Value = (Vec<ServiceObservation>, Vec<usize>)> {
    prop::collection::vec(spec(), 1..10).prop_flat_map(|specs| {
        let n = specs.len();
        let minutes = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
        with_order(specs, minutes)
    })
}

/// Observations of which many share a time (each at minute 0, 1 or 2), plus an application
/// order as above.
fn tied_observations_and_order() -> impl Strategy<Value = (Vec<ServiceObservation>, Vec<usize>)> {
    prop::collection::vec(spec(), 2..10).prop_flat_map(|specs| {
        let n = specs.len();
        let minutes = prop::collection::vec(0..3usize, n);
        with_order(specs, minutes)
    })
}

/// The lines of `specs` at their `minutes`, and an order that applies each at least once.
fn with_order(
    specs: Vec<Spec>,
    minutes: impl Strategy<Value = Vec<usize>>,
) -> impl Strategy<Value = (Vec<ServiceObservation>, Vec<usize>)> {
    let n = specs.len();
    let extra = prop::collection::vec(0..n, 0..2 * n);
    (Just(specs), minutes, extra).prop_flat_map(|(specs, minutes, extra)| {
        let lines: Vec<String> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| spec_line(s, minutes[i], i))
            .collect();
        let observations = services(&lines);
        let order: Vec<usize> = (0..observations.len()).chain(extra).collect();
        (Just(observations), Just(order).prop_shuffle())
    })
}

/// The record by a literal reading of the rules, computed from the whole set at once.
fn model(observations: &[ServiceObservation]) -> HostRecord {
    let counting: Vec<&ServiceObservation> = observations
        .iter()
        .filter(|o| o.status != periscope_model::observation::ScanStatus::Failed)
        .collect();
    let newest = |keep: &dyn Fn(&ServiceObservation) -> bool| {
        counting
            .iter()
            .copied()
            .filter(|o| keep(o))
            .max_by_key(|o| o.observed_at)
    };
    let mut record = HostRecord::new(ip(IP));
    record.enrichment = newest(&|_| true).map(|o| (o.host.clone(), o.observed_at));
    record.location = newest(&|o| o.host.location.is_some())
        .map(|o| (o.host.location.clone().unwrap(), o.observed_at));
    record.position = newest(&|o| {
        o.host
            .location
            .as_ref()
            .is_some_and(|l| l.position.is_some())
    })
    .map(|o| {
        (
            o.host.location.as_ref().unwrap().position.unwrap(),
            o.observed_at,
        )
    });
    record.reverse_dns = newest(&|o| !o.host.reverse_dns.is_empty())
        .map(|o| (o.host.reverse_dns.clone(), o.observed_at));
    for (port, protocol) in KEYS {
        let key = |o: &ServiceObservation| o.port.get() == port && o.protocol.as_str() == protocol;
        if let Some(o) = newest(&key) {
            // The stored service of the newest counting observation, as applying it alone gives.
            let mut alone = HostRecord::new(ip(IP));
            alone.apply(o);
            record.services.append(&mut alone.services);
        }
    }
    record
}

/// Domain-scan records at two times (so many tie) over three names (one a look-alike) and
/// three addresses, plus a shuffled application order with repetitions.
fn domain_records_and_order() -> impl Strategy<Value = (Vec<DomainScan>, Vec<usize>)> {
    prop::collection::vec((0..3usize, 0..3usize), 1..10)
        .prop_flat_map(|specs| {
            let n = specs.len();
            // Two minutes for up to nine records: many share a time.
            let minutes = prop::collection::vec(0..2usize, n);
            (Just(specs), minutes, prop::collection::vec(0..n, 0..2 * n))
        })
        .prop_flat_map(|(specs, minutes, extra)| {
            let names = ["acme.example", "www.acme.example", "notacme.example"];
            let lines: Vec<String> = specs
                .iter()
                .enumerate()
                .map(|(i, (n, a))| {
                    dom(
                        names[*n],
                        &[&format!("240.0.0.{a}")],
                        &minutes_after_t1(minutes[i]),
                    )
                })
                .collect();
            let records = domain_scans(&lines);
            let order: Vec<usize> = (0..records.len()).chain(extra).collect();
            (Just(records), Just(order).prop_shuffle())
        })
}

/// The timestamp `minutes` minutes after T1, as RFC 3339.
fn minutes_after_t1(minutes: usize) -> String {
    let secs = ts(T1).unix() + 60 * i64::try_from(minutes).unwrap();
    Timestamp::from_unix(secs).unwrap().to_string()
}

proptest! {
    #[test]
    fn order_and_repetition_never_matter((observations, order) in observations_and_order()) {
        let mut in_order = HostRecord::new(ip(IP));
        for o in &observations {
            in_order.apply(o);
        }
        let mut shuffled = HostRecord::new(ip(IP));
        for &i in &order {
            shuffled.apply(&observations[i]);
        }
        prop_assert_eq!(&shuffled, &in_order);
        prop_assert_eq!(&in_order, &model(&observations));
        // Applying everything once more changes nothing and applies nothing.
        let mut again = shuffled.clone();
        for o in &observations {
            prop_assert_ne!(again.apply(o), Applied);
        }
        prop_assert_eq!(&again, &shuffled);
    }

    /// Ties on `observed_at` (different content, same second) are broken by content, so
    /// they never depend on the order either.
    #[test]
    fn ties_never_depend_on_order((observations, order) in tied_observations_and_order()) {
        let mut in_order = HostRecord::new(ip(IP));
        for o in &observations {
            in_order.apply(o);
        }
        let mut reversed = HostRecord::new(ip(IP));
        for o in observations.iter().rev() {
            reversed.apply(o);
        }
        let mut shuffled = HostRecord::new(ip(IP));
        for &i in &order {
            shuffled.apply(&observations[i]);
        }
        prop_assert_eq!(&reversed, &in_order);
        prop_assert_eq!(&shuffled, &in_order);
        let mut again = shuffled.clone();
        for o in &observations {
            prop_assert_ne!(again.apply(o), Applied);
        }
        prop_assert_eq!(&again, &shuffled);
    }

    #[test]
    fn domain_scans_order_and_repetition_never_matter(
        (records, order) in domain_records_and_order()
    ) {
        let mut in_order = DomainScans::default();
        for r in &records {
            in_order.apply(r.clone());
        }
        let mut shuffled = DomainScans::default();
        for &i in &order {
            shuffled.apply(records[i].clone());
        }
        prop_assert_eq!(&shuffled, &in_order);
        for (name, stored) in &in_order.by_name {
            let newest = records.iter().filter(|r| &r.name == name).map(|r| r.observed_at).max();
            prop_assert_eq!(Some(stored.observed_at), newest);
        }
    }
}
