//! The observation reader against `docs/observation-format.md`: accepted lines of every shape
//! with what they become, one rejected line for every rule with the field and reason it must
//! report, and property tests (no panics, right line numbers, member order irrelevant, a
//! repeated `host` block read as it would be alone).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod support;

use std::net::IpAddr;

use periscope_model::observation::{
    LineView, MAX_LINE_BYTES, Observation, ScanStatus, ServiceObservation, Transport,
};
use periscope_model::{CountryCode, Timestamp};
use proptest::prelude::*;
use support::*;

/// What reading one line must give.
enum Expect {
    /// Accepted; the function checks what it became.
    Accept(fn(&Observation)),
    /// A blank line.
    Blank,
    /// Rejected at `field` with a reason containing `reason`.
    Reject {
        field: &'static str,
        reason: &'static str,
    },
}

fn ok(f: fn(&Observation)) -> Expect {
    Expect::Accept(f)
}

fn bad(field: &'static str, reason: &'static str) -> Expect {
    Expect::Reject { field, reason }
}

/// Reads `line` as line 1 of a fresh reader and compares with `expect`.
fn check(name: &str, line: &str, expect: Expect) {
    let shown: String = line.chars().take(300).collect();
    let got = read(line);
    match expect {
        Expect::Accept(f) => match got {
            Ok(Some(obs)) => f(&obs),
            Ok(None) => panic!("{name}: read as blank: {shown}"),
            Err(e) => panic!("{name}: rejected: {e}\n{shown}"),
        },
        Expect::Blank => assert_eq!(got, Ok(None), "{name}: {shown}"),
        Expect::Reject { field, reason } => {
            let Err(e) = got else {
                panic!("{name}: accepted: {shown}");
            };
            assert_eq!(e.line, 1, "{name}");
            assert_eq!(e.field, field, "{name}: {e}\n{shown}");
            assert!(e.reason.contains(reason), "{name}: {e:?} lacks {reason:?}");
        }
    }
}

fn service(obs: &Observation) -> &ServiceObservation {
    match obs {
        Observation::Service(s) => s,
        Observation::Domain(d) => panic!("not a service: {d:?}"),
    }
}

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

#[test]
fn accepted_lines() {
    let cases: Vec<(&str, String, Expect)> = vec![
        (
            "minimal service",
            MINIMAL.into(),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.ip, ip("240.0.0.1"));
                assert_eq!(s.port.get(), 21);
                assert_eq!(s.transport, Transport::Tcp);
                assert_eq!(s.protocol.as_str(), "ftp");
                assert_eq!(s.observed_at, ts("2026-11-20T13:04:11Z"));
                assert_eq!(s.status, ScanStatus::Completed);
                assert!(s.error.is_none() && s.product.is_none() && s.vulnerabilities.is_none());
                assert!(
                    s.tls.is_none() && s.http.is_none() && s.ssh.is_none() && s.summary.is_none()
                );
                assert_eq!(s.host, Default::default());
            }),
        ),
        (
            "full https",
            FULL_HTTPS.into(),
            ok(|o| {
                let s = service(o);
                let p = s.product.as_ref().unwrap();
                assert_eq!(
                    (p.title.as_str(), p.version.as_deref()),
                    ("nginx", Some("1.24.0"))
                );
                assert_eq!(
                    p.cpe.as_ref().unwrap().as_str(),
                    "cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*"
                );
                let v = s.vulnerabilities.as_ref().unwrap();
                assert_eq!(
                    v.cves.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    ["CVE-2023-44487"]
                );
                assert_eq!(v.max_cvss.unwrap().tenths(), 75);
                assert!(v.has_exploits);
                let tls = s.tls.as_ref().unwrap();
                assert_eq!(tls.version.as_deref(), Some("TLSv1.3"));
                assert_eq!(tls.browser_trusted, Some(true));
                let c = tls.certificate.as_ref().unwrap();
                assert_eq!(
                    c.subject_alt_names,
                    ["www.northwind.example", "*.northwind.example"]
                );
                assert_eq!(
                    c.subject_organization.as_deref(),
                    Some("Northwind Traders Ltd")
                );
                assert_eq!(c.valid_until, Some(ts("2026-11-30T23:59:59Z")));
                assert_eq!(
                    c.fingerprint_sha256.as_deref(),
                    Some("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
                );
                let http = s.http.as_ref().unwrap();
                assert_eq!((http.status_code, http.complete), (Some(200), true));
                assert_eq!(http.server.as_deref(), Some("nginx/1.24.0"));
                let h = &s.host;
                let loc = h.location.as_ref().unwrap();
                assert_eq!(loc.country_code, Some(CountryCode::parse("DE").unwrap()));
                assert_eq!(loc.subdivision_2.as_deref(), Some("Upper Bavaria"));
                let pos = loc.position.unwrap();
                assert_eq!(
                    (pos.latitude, pos.longitude, pos.accuracy_radius_km),
                    (48.1374, 11.5755, Some(20))
                );
                assert_eq!(
                    h.asn.bgp.as_ref().unwrap().organization.as_deref(),
                    Some("NORTHWIND-AS")
                );
                assert_eq!(h.asn.research.as_ref().unwrap().asn.get(), 64512);
                assert_eq!(
                    h.provider.as_ref().unwrap().isp.as_deref(),
                    Some("Northwind Traders")
                );
                let w = h.whois.as_ref().unwrap();
                assert_eq!(w.cidr.unwrap().to_string(), "240.12.0.0/20");
                assert_eq!(w.registry.as_deref(), Some("ripencc"));
                assert_eq!(h.reverse_dns[0].as_str(), "www.northwind.example");
                assert_eq!(h.domain.as_ref().unwrap().as_str(), "northwind.example");
            }),
        ),
        (
            "ssh",
            SSH.into(),
            ok(|o| {
                let ssh = service(o).ssh.as_ref().unwrap();
                assert_eq!(ssh.software_version.as_deref(), Some("OpenSSH_9.6p1"));
                assert_eq!(
                    ssh.hassh.as_deref(),
                    Some("ec7378c1a92f5a8dde7e8b7a1ddf33d1")
                );
            }),
        ),
        (
            "summary protocol, in the order given",
            SUMMARY.into(),
            ok(|o| {
                let s = service(o);
                let keys: Vec<&str> = s
                    .summary
                    .as_ref()
                    .unwrap()
                    .fields
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect();
                assert_eq!(keys, ["version", "mode", "role"]);
                assert_eq!(s.tls.as_ref().unwrap().version.as_deref(), Some("TLSv1.2"));
            }),
        ),
        (
            "summary with 16 members and long keys and values",
            set(MINIMAL, "summary", &summary_json(16, 64, 256)),
            ok(|o| {
                assert_eq!(service(o).summary.as_ref().unwrap().fields.len(), 16);
            }),
        ),
        (
            "partial with error text (control characters allowed)",
            set_str(
                &set_str(SSH, "status", "partial"),
                "error",
                "kex failed:\n\ttimeout\u{7f}",
            ),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.status, ScanStatus::Partial);
                assert_eq!(s.error.as_deref(), Some("kex failed:\n\ttimeout\u{7f}"));
                assert!(s.ssh.is_some());
            }),
        ),
        (
            "failed with host only",
            set(
                &set_str(MINIMAL, "status", "failed"),
                "host",
                r#"{"asn":{"bgp":{"asn":1}},"reverse_dns":["a.example"]}"#,
            ),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.status, ScanStatus::Failed);
                assert_eq!(s.host.asn.bgp.as_ref().unwrap().asn.get(), 1);
                assert_eq!(s.host.reverse_dns.len(), 1);
            }),
        ),
        (
            "failed with null captured blocks",
            set(
                &set(&set_str(MINIMAL, "status", "failed"), "tls", "null"),
                "summary",
                "null",
            ),
            ok(|o| assert!(service(o).tls.is_none())),
        ),
        (
            "IPv6",
            set_str(
                &set(SSH, "host", r#"{"reverse_dns":[]}"#),
                "ip",
                "3fff:0:0::22",
            ),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.ip, ip("3fff::22"));
                assert!(s.host.reverse_dns.is_empty());
            }),
        ),
        (
            "IPv4-mapped IPv6 is IPv4 (and may carry reverse DNS)",
            set_str(
                &set(MINIMAL, "host", r#"{"reverse_dns":["a.example"]}"#),
                "ip",
                "::ffff:240.0.0.1",
            ),
            ok(|o| assert_eq!(service(o).ip, ip("240.0.0.1"))),
        ),
        (
            "IPv4-mapped with a protocol not scanned over IPv6",
            set_str(
                &set_str(MINIMAL, "protocol", "modbus"),
                "ip",
                "::ffff:240.0.0.1",
            ),
            ok(|o| assert_eq!(service(o).protocol.as_str(), "modbus")),
        ),
        (
            "offsets and fractions in timestamps",
            set_str(
                &set_str(
                    &set_str(FULL_HTTPS, "observed_at", "2026-11-20T14:04:11.987+01:00"),
                    "tls.certificate.valid_from",
                    "2026-08-31T19:00:00-05:00",
                ),
                "tls.certificate.valid_until",
                "2026-09-01T00:00:00z",
            ),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.observed_at, ts("2026-11-20T13:04:11Z"));
                let c = s.tls.as_ref().unwrap().certificate.as_ref().unwrap();
                assert_eq!(c.valid_from, c.valid_until);
            }),
        ),
        (
            "observed exactly one hour after the clock",
            set_str(MINIMAL, "observed_at", "2026-11-20T15:00:00Z"),
            ok(|o| assert_eq!(service(o).observed_at, ts("2026-11-20T15:00:00Z"))),
        ),
        (
            "certificate valid far in the future",
            set_str(
                FULL_HTTPS,
                "tls.certificate.valid_until",
                "2036-01-01T00:00:00Z",
            ),
            ok(|o| assert!(service(o).tls.is_some())),
        ),
        (
            "nulls everywhere mean absent",
            nulls_everywhere(),
            ok(|o| {
                let s = service(o);
                assert!(
                    s.error.is_none()
                        && s.product.is_none()
                        && s.tls.is_none()
                        && s.summary.is_none()
                );
                assert_eq!(s.host, Default::default());
            }),
        ),
        (
            "null optional members inside blocks",
            set(
                &set(
                    &set(FULL_HTTPS, "product.version", "null"),
                    "http.status_code",
                    "null",
                ),
                "host.location",
                r#"{"latitude":null,"longitude":null,"accuracy_radius_km":null,"city":"X"}"#,
            ),
            ok(|o| {
                let s = service(o);
                assert!(s.product.as_ref().unwrap().version.is_none());
                assert!(s.http.as_ref().unwrap().status_code.is_none());
                assert!(s.host.location.as_ref().unwrap().position.is_none());
            }),
        ),
        (
            "empty blocks",
            set(&set(SUMMARY, "tls", "{}"), "summary", "{}"),
            ok(|o| {
                let s = service(o);
                assert_eq!(s.tls, Some(Default::default()));
                assert_eq!(s.summary.as_ref().unwrap().fields.len(), 0);
            }),
        ),
        (
            "udp",
            set_str(
                &set_str(&set(MINIMAL, "port", "123"), "protocol", "ntp"),
                "transport",
                "udp",
            ),
            ok(|o| assert_eq!(service(o).transport, Transport::Udp)),
        ),
        (
            "port bounds and an integral float",
            set(MINIMAL, "port", "65535.0"),
            ok(|o| assert_eq!(service(o).port.get(), 65535)),
        ),
        (
            "lengths count characters, not bytes",
            set_str(FULL_HTTPS, "product.title", &chars('é', 256)),
            ok(|o| {
                assert_eq!(
                    service(o).product.as_ref().unwrap().title.chars().count(),
                    256
                )
            }),
        ),
        (
            "escapes are decoded",
            set_str(FULL_HTTPS, "http.title", "Caf\u{e9} \"Nord\""),
            ok(|o| {
                assert_eq!(
                    service(o).http.as_ref().unwrap().title.as_deref(),
                    Some("Caf\u{e9} \"Nord\"")
                )
            }),
        ),
        (
            "DNS names normalised",
            set(
                &set_str(MINIMAL, "host.dns_name", "Bücher.Example."),
                "host.reverse_dns",
                r#"["A.Example.","b.example"]"#,
            ),
            ok(|o| {
                let h = &service(o).host;
                assert_eq!(
                    h.dns_name.as_ref().unwrap().as_str(),
                    "xn--bcher-kva.example"
                );
                assert_eq!(h.reverse_dns[0].as_str(), "a.example");
            }),
        ),
        (
            "whois IPv6 block, host bits zeroed",
            set_str(MINIMAL, "host.whois.cidr", "3fff:1::5/32"),
            ok(|o| {
                assert_eq!(
                    service(o)
                        .host
                        .whois
                        .as_ref()
                        .unwrap()
                        .cidr
                        .unwrap()
                        .to_string(),
                    "3fff:1::/32"
                )
            }),
        ),
        (
            "ASN at the top of its range",
            set(MINIMAL, "host.asn.network", r#"{"asn":4294967295}"#),
            ok(|o| {
                assert_eq!(
                    service(o).host.asn.network.as_ref().unwrap().asn.get(),
                    u32::MAX
                )
            }),
        ),
        (
            "coordinate bounds",
            set(
                MINIMAL,
                "host.location",
                r#"{"latitude":-90,"longitude":180,"accuracy_radius_km":20000}"#,
            ),
            ok(|o| {
                assert_eq!(
                    service(o)
                        .host
                        .location
                        .as_ref()
                        .unwrap()
                        .position
                        .unwrap()
                        .longitude,
                    180.0
                )
            }),
        ),
        (
            "vulnerabilities without a score, no CVEs",
            set(
                MINIMAL,
                "vulnerabilities",
                r#"{"cves":[],"has_exploits":false}"#,
            ),
            ok(|o| {
                let v = service(o).vulnerabilities.as_ref().unwrap();
                assert!(v.cves.is_empty() && v.max_cvss.is_none() && !v.has_exploits);
            }),
        ),
        (
            "domain with IPv4 and IPv6",
            DOMAIN.into(),
            ok(|o| match o {
                Observation::Domain(d) => {
                    assert_eq!(d.name.as_str(), "www.northwind.example");
                    assert_eq!(d.addresses, [ip("240.12.7.9"), ip("3fff:120:7::9")]);
                    assert_eq!(d.observed_at, ts("2026-11-20T12:00:00Z"));
                }
                other => panic!("{other:?}"),
            }),
        ),
        (
            "domain with a mapped address",
            set(DOMAIN, "addresses", r#"["::ffff:240.0.0.9"]"#),
            ok(|o| match o {
                Observation::Domain(d) => assert_eq!(d.addresses, [ip("240.0.0.9")]),
                other => panic!("{other:?}"),
            }),
        ),
        (
            "kind not first",
            to_line(&serde_json::from_str(FULL_HTTPS).unwrap(), false),
            ok(|o| assert_eq!(service(o).port.get(), 443)),
        ),
        (
            "whitespace between tokens",
            format!("  {{ \"kind\" : \"domain\" ,{}  ", &DOMAIN[17..]),
            ok(|o| assert!(matches!(o, Observation::Domain(_)))),
        ),
        (
            "CRLF line end",
            format!("{MINIMAL}\r\n"),
            ok(|o| assert_eq!(service(o).port.get(), 21)),
        ),
        (
            "LF line end",
            format!("{DOMAIN}\n"),
            ok(|o| assert!(matches!(o, Observation::Domain(_)))),
        ),
        ("blank", String::new(), Expect::Blank),
        ("whitespace only", " \t \r\n".into(), Expect::Blank),
    ];
    for (name, line, expect) in cases {
        check(name, &line, expect);
    }
}

/// A summary object of `n` members with keys of `key_len` and values of `value_len`.
fn summary_json(n: usize, key_len: usize, value_len: usize) -> String {
    let members: Vec<String> = (0..n)
        .map(|i| {
            let key = format!("{i:0>key_len$}");
            format!("\"{key}\":\"{}\"", chars('v', value_len))
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

fn nulls_everywhere() -> String {
    let mut line = MINIMAL.to_owned();
    for member in [
        "error",
        "product",
        "vulnerabilities",
        "tls",
        "http",
        "ssh",
        "summary",
        "host",
    ] {
        line = set(&line, member, "null");
    }
    line
}

/// One rejected line for every rule of the format doc.
#[rustfmt::skip] // A table: one row per line.
#[test]
fn rejected_lines() {
    let https = FULL_HTTPS;
    let cases: Vec<(&str, String, Expect)> = vec![
        // The line as a whole.
        ("not JSON", "x".into(), bad("(line)", "not JSON: expected value at column 1")),
        ("truncated", MINIMAL[..40].into(), bad("(line)", "not JSON")),
        ("trailing characters", format!("{MINIMAL} {{}}"), bad("(line)", "not JSON: trailing characters")),
        ("raw control character in a string", MINIMAL.replace("ftp", "f\tp"), bad("(line)", "not JSON: control character")),
        ("not an object", "[1,2]".into(), bad("(line)", "expected an object, found an array")),
        ("a bare string", "\"service\"".into(), bad("(line)", "expected an object")),
        ("over 1 MiB", set_str(MINIMAL, "error", &chars('a', MAX_LINE_BYTES)), bad("(line)", "the limit is 1 MiB")),
        ("blank but over 1 MiB", chars(' ', MAX_LINE_BYTES + 1), bad("(line)", "the limit is 1 MiB")),
        // kind.
        ("no kind", remove(MINIMAL, "kind"), bad("kind", "missing")),
        ("null kind", set(MINIMAL, "kind", "null"), bad("kind", "missing")),
        ("unknown kind", set_str(MINIMAL, "kind", "host"), bad("kind", "\"host\" is not a kind of line")),
        ("kind in capitals", set_str(MINIMAL, "kind", "Service"), bad("kind", "expected \"service\" or \"domain\"")),
        ("kind not a string", set(MINIMAL, "kind", "1"), bad("kind", "expected a string, found the number 1")),
        ("duplicate kind", format!("{{\"kind\":\"domain\",{}", &MINIMAL[1..]), bad("kind", "duplicate member")),
        ("duplicate member", MINIMAL.replace("\"port\":21", "\"port\":21,\"port\":22"), bad("port", "duplicate member")),
        // Unknown members, at every level.
        ("unknown member", set(MINIMAL, "ports", "1"), bad("ports", "unknown member; the members here are: kind, ip, port")),
        ("unknown member named with a newline", set(MINIMAL, "a\nline 2: x", "1"), bad("a\\nline 2: x", "unknown member")),
        ("unknown member with a long name", set(MINIMAL, &chars('n', 5000), "1"), bad(leak(format!("{}…", chars('n', 256))), "unknown member")),
        ("domain member on a service", set(MINIMAL, "addresses", "[]"), bad("addresses", "unknown member")),
        ("unknown in product", set(https, "product.vendor", "1"), bad("product.vendor", "unknown member")),
        ("unknown in vulnerabilities", set(https, "vulnerabilities.cve", "1"), bad("vulnerabilities.cve", "unknown member")),
        ("unknown in tls", set(https, "tls.chain", "1"), bad("tls.chain", "unknown member")),
        ("unknown in certificate", set(https, "tls.certificate.subject", "1"), bad("tls.certificate.subject", "unknown member")),
        ("unknown in http", set(https, "http.body", "1"), bad("http.body", "unknown member")),
        ("unknown in ssh", set(SSH, "ssh.banner", "1"), bad("ssh.banner", "unknown member")),
        ("unknown in host", set(https, "host.contacts", "1"), bad("host.contacts", "unknown member")),
        ("unknown in location", set(https, "host.location.postal_code", "1"), bad("host.location.postal_code", "unknown member")),
        ("unknown in asn", set(https, "host.asn.whois", "1"), bad("host.asn.whois", "unknown member")),
        ("unknown in an attribution", set(https, "host.asn.bgp.name", "1"), bad("host.asn.bgp.name", "unknown member")),
        ("unknown in provider", set(https, "host.provider.asn", "1"), bad("host.provider.asn", "unknown member")),
        ("unknown in whois", set(https, "host.whois.abuse", "1"), bad("host.whois.abuse", "unknown member")),
        ("unknown in domain", set(DOMAIN, "ttl", "1"), bad("ttl", "unknown member; the members here are: kind, name, addresses, observed_at")),
        ("service member on a domain", set(DOMAIN, "port", "1"), bad("port", "unknown member")),
        // Required members, absent or null.
        ("no ip", remove(MINIMAL, "ip"), bad("ip", "missing")),
        ("null port", set(MINIMAL, "port", "null"), bad("port", "missing")),
        ("no transport", remove(MINIMAL, "transport"), bad("transport", "missing")),
        ("no protocol", remove(MINIMAL, "protocol"), bad("protocol", "missing")),
        ("no observed_at", remove(MINIMAL, "observed_at"), bad("observed_at", "missing")),
        ("no status", remove(MINIMAL, "status"), bad("status", "missing")),
        // Types.
        ("port as a string", set_str(MINIMAL, "port", "21"), bad("port", "expected a number, found the string \"21\"")),
        ("block as an array", set(https, "tls", "[]"), bad("tls", "expected an object, found an array")),
        ("array as a string", set_str(https, "host.reverse_dns", "a.example"), bad("host.reverse_dns", "expected an array")),
        ("boolean as a string", set_str(https, "http.complete", "true"), bad("http.complete", "expected a boolean")),
        ("null array item", set(https, "vulnerabilities.cves", r#"["CVE-2023-44487",null]"#), bad("vulnerabilities.cves[1]", "expected a string, found null")),
        // Strings in general.
        ("control character", set_str(https, "http.server", "nginx\u{0}"), bad("http.server", "control character U+0000")),
        ("DEL", set_str(https, "host.location.city", "Mu\u{7f}nich"), bad("host.location.city", "control character U+007F")),
        ("default bound of 1024", set_str(https, "host.asn.bgp.organization", &chars('a', 1025)), bad("host.asn.bgp.organization", "1025 characters long; the limit is 1024")),
        ("default bound on a parsed value", set_str(MINIMAL, "ip", &chars('1', 1025)), bad("ip", "the limit is 1024")),
        // Timestamps.
        ("not RFC 3339", set_str(MINIMAL, "observed_at", "2026-11-20 13:04:11Z"), bad("observed_at", "RFC 3339")),
        ("no offset", set_str(MINIMAL, "observed_at", "2026-11-20T13:04:11"), bad("observed_at", "RFC 3339")),
        ("offset without colon", set_str(MINIMAL, "observed_at", "2026-11-20T13:04:11+0100"), bad("observed_at", "offset")),
        ("before 1970", set_str(MINIMAL, "observed_at", "1969-12-31T23:59:59Z"), bad("observed_at", "1970")),
        ("no such date", set_str(MINIMAL, "observed_at", "2026-02-29T00:00:00Z"), bad("observed_at", "no such date")),
        ("more than an hour ahead", set_str(MINIMAL, "observed_at", "2026-11-20T15:00:01Z"), bad("observed_at", "more than one hour after the reader's clock")),
        ("ahead through an offset", set_str(MINIMAL, "observed_at", "2026-11-20T10:00:01-05:00"), bad("observed_at", "more than one hour")),
        // Identity.
        ("bad ip", set_str(MINIMAL, "ip", "240.0.0.01"), bad("ip", "not an IPv4 or IPv6 address")),
        ("zone index", set_str(MINIMAL, "ip", "fe80::1%eth0"), bad("ip", "not an IPv4 or IPv6 address")),
        ("port 0", set(MINIMAL, "port", "0"), bad("port", "0 is out of range 1..=65535")),
        ("port too high", set(MINIMAL, "port", "70000"), bad("port", "70000 is out of range 1..=65535")),
        ("negative port", set(MINIMAL, "port", "-21"), bad("port", "out of range")),
        ("fractional port", set(MINIMAL, "port", "21.5"), bad("port", "21.5 is not an integer")),
        ("huge port", set(MINIMAL, "port", "18446744073709551616"), bad("port", "out of range")),
        ("transport", set_str(MINIMAL, "transport", "sctp"), bad("transport", "\"sctp\" is not a transport")),
        ("transport in capitals", set_str(MINIMAL, "transport", "TCP"), bad("transport", "expected \"tcp\" or \"udp\"")),
        ("unregistered protocol", set_str(MINIMAL, "protocol", "web"), bad("protocol", "not a registered protocol token")),
        ("protocol in capitals", set_str(MINIMAL, "protocol", "FTP"), bad("protocol", "exact lowercase: \"ftp\"")),
        ("protocol not scanned over IPv6", set_str(set_str(MINIMAL, "ip", "3fff::1").as_str(), "protocol", "modbus"), bad("protocol", "\"modbus\" is not registered for IPv6")),
        ("status", set_str(MINIMAL, "status", "done"), bad("status", "\"done\" is not a status")),
        ("error too long", set_str(MINIMAL, "error", &chars('e', 4097)), bad("error", "4097 characters long; the limit is 4096")),
        // A failed scan captured nothing.
        ("failed with product", set_str(https, "status", "failed"), bad("product", "a failed observation carries no captured data")),
        ("failed with vulnerabilities", set_str(&set(MINIMAL, "vulnerabilities", r#"{"cves":[],"has_exploits":false}"#), "status", "failed"), bad("vulnerabilities", "failed observation")),
        ("failed with tls", set_str(&set(MINIMAL, "tls", "{}"), "status", "failed"), bad("tls", "failed observation")),
        ("failed with http", set_str(&remove(&remove(&remove(&remove(https, "product"), "vulnerabilities"), "tls"), "host"), "status", "failed"), bad("http", "failed observation")),
        ("failed with ssh", set_str(SSH, "status", "failed"), bad("ssh", "failed observation")),
        ("failed with summary", set_str(&remove(SUMMARY, "tls"), "status", "failed"), bad("summary", "failed observation")),
        // product.
        ("product without title", remove(https, "product.title"), bad("product.title", "missing")),
        ("product title blank", set_str(https, "product.title", "  "), bad("product.title", "empty")),
        ("product title too long", set_str(https, "product.title", &chars('t', 257)), bad("product.title", "the limit is 256")),
        ("product version too long", set_str(https, "product.version", &chars('1', 129)), bad("product.version", "the limit is 128")),
        ("CPE 2.2 URI", set_str(https, "product.cpe", "cpe:/a:f5:nginx:1.24.0"), bad("product.cpe", "CPE 2.2")),
        ("incomplete CPE", set_str(https, "product.cpe", "cpe:2.3:a:f5:nginx"), bad("product.cpe", "expected 11 components")),
        ("wildcard in a CPE value", set_str(https, "product.cpe", "cpe:2.3:a:f5:nginx:1.*:*:*:*:*:*:*:*"), bad("product.cpe", "wildcard")),
        // vulnerabilities.
        ("no cves", remove(https, "vulnerabilities.cves"), bad("vulnerabilities.cves", "missing")),
        ("lowercase CVE", set(https, "vulnerabilities.cves", r#"["CVE-2023-44487","cve-2014-0160"]"#), bad("vulnerabilities.cves[1]", "uppercase")),
        ("duplicate CVE", set(https, "vulnerabilities.cves", r#"["CVE-2014-0160","CVE-2023-44487","CVE-2014-0160"]"#), bad("vulnerabilities.cves[2]", "duplicate of [0]")),
        ("too many CVEs", set(https, "vulnerabilities.cves", &cves(1001)), bad("vulnerabilities.cves", "1001 entries; at most 1000")),
        ("CVSS above 10", set(https, "vulnerabilities.max_cvss", "10.1"), bad("vulnerabilities.max_cvss", "outside 0.0..=10.0")),
        ("negative CVSS", set(https, "vulnerabilities.max_cvss", "-1"), bad("vulnerabilities.max_cvss", "outside")),
        ("CVSS with two decimals", set(https, "vulnerabilities.max_cvss", "7.55"), bad("vulnerabilities.max_cvss", "more than one decimal")),
        ("no has_exploits", set(https, "vulnerabilities.has_exploits", "null"), bad("vulnerabilities.has_exploits", "missing")),
        // tls.
        ("tls on ssh", set(SSH, "tls", "{}"), bad("tls", "only TLS-capable protocols carry tls; \"ssh\" is not one")),
        ("tls on http", set(&set_str(&remove(https, "tls"), "protocol", "http"), "tls", "{}"), bad("tls", "\"http\" is not one")),
        ("tls version too long", set_str(https, "tls.version", &chars('v', 129)), bad("tls.version", "the limit is 128")),
        ("cipher suite too long", set_str(https, "tls.cipher_suite", &chars('c', 129)), bad("tls.cipher_suite", "the limit is 128")),
        ("browser_trusted not boolean", set(https, "tls.browser_trusted", "1"), bad("tls.browser_trusted", "expected a boolean")),
        ("common name too long", set_str(https, "tls.certificate.common_name", &chars('c', 257)), bad("tls.certificate.common_name", "the limit is 256")),
        ("subject organization too long", set_str(https, "tls.certificate.subject_organization", &chars('o', 257)), bad("tls.certificate.subject_organization", "256")),
        ("issuer common name too long", set_str(https, "tls.certificate.issuer_common_name", &chars('o', 257)), bad("tls.certificate.issuer_common_name", "256")),
        ("issuer organization too long", set_str(https, "tls.certificate.issuer_organization", &chars('o', 257)), bad("tls.certificate.issuer_organization", "256")),
        ("SAN with an empty label", set(https, "tls.certificate.subject_alt_names", r#"["a.example","a..example"]"#), bad("tls.certificate.subject_alt_names[1]", "empty label")),
        ("SAN with an inner wildcard", set(https, "tls.certificate.subject_alt_names", r#"["a.*.example"]"#), bad("tls.certificate.subject_alt_names[0]", "wildcard")),
        ("SAN that is only a wildcard", set(https, "tls.certificate.subject_alt_names", r#"["*"]"#), bad("tls.certificate.subject_alt_names[0]", "wildcard")),
        ("SAN too long", set(https, "tls.certificate.subject_alt_names", &format!("[\"*.{}\"]", long_name(252))), bad("tls.certificate.subject_alt_names[0]", "at most 253")),
        ("too many SANs", set(https, "tls.certificate.subject_alt_names", &names(101)), bad("tls.certificate.subject_alt_names", "101 entries; at most 100")),
        ("valid_from after valid_until", set_str(https, "tls.certificate.valid_from", "2026-12-01T00:00:00Z"), bad("tls.certificate.valid_until", "is before valid_from")),
        ("bad valid_until", set_str(https, "tls.certificate.valid_until", "2026-11-31T00:00:00Z"), bad("tls.certificate.valid_until", "no such date")),
        ("short fingerprint", set_str(https, "tls.certificate.fingerprint_sha256", &chars('a', 63)), bad("tls.certificate.fingerprint_sha256", "63 hex digits; expected exactly 64")),
        ("fingerprint with colons", set_str(https, "tls.certificate.fingerprint_sha256", "9F:86"), bad("tls.certificate.fingerprint_sha256", "':' is not a hexadecimal digit")),
        // http.
        ("http on ftp", set(MINIMAL, "http", r#"{"complete":true}"#), bad("http", "only http and https carry http; \"ftp\" is not one")),
        ("status code too low", set(https, "http.status_code", "99"), bad("http.status_code", "99 is out of range 100..=599")),
        ("status code too high", set(https, "http.status_code", "600"), bad("http.status_code", "out of range")),
        ("http title too long", set_str(https, "http.title", &chars('t', 513)), bad("http.title", "the limit is 512")),
        ("http server too long", set_str(https, "http.server", &chars('s', 257)), bad("http.server", "the limit is 256")),
        ("no complete", remove(https, "http.complete"), bad("http.complete", "missing")),
        // ssh.
        ("ssh on https", set(https, "ssh", "{}"), bad("ssh", "only ssh carries ssh; \"https\" is not one")),
        ("short hassh", set_str(SSH, "ssh.hassh", &chars('a', 31)), bad("ssh.hassh", "expected exactly 32")),
        ("hassh not hex", set_str(SSH, "ssh.hassh", &chars('z', 32)), bad("ssh.hassh", "'z' is not a hexadecimal digit")),
        ("ssh software too long", set_str(SSH, "ssh.software_version", &chars('s', 257)), bad("ssh.software_version", "256")),
        ("ssh comments too long", set_str(SSH, "ssh.comments", &chars('s', 257)), bad("ssh.comments", "256")),
        // summary.
        ("summary on https", set(https, "summary", "{}"), bad("summary", "only protocols with summary evidence carry summary; \"https\" has http evidence")),
        ("summary on ssh", set(SSH, "summary", "{}"), bad("summary", "\"ssh\" has ssh evidence")),
        ("17 summary members", set(MINIMAL, "summary", &summary_json(17, 2, 1)), bad("summary", "17 members; at most 16")),
        ("summary key with capitals", set(MINIMAL, "summary", r#"{"Version":"1"}"#), bad("summary", "key \"Version\" is not 1 to 64 characters of a-z, 0-9 and _")),
        ("summary key with a dash", set(MINIMAL, "summary", r#"{"server-name":"1"}"#), bad("summary", "a-z, 0-9 and _")),
        ("empty summary key", set(MINIMAL, "summary", r#"{"":"1"}"#), bad("summary", "key \"\"")),
        ("summary key too long", set(MINIMAL, "summary", &summary_json(1, 65, 1)), bad("summary", "1 to 64 characters")),
        ("summary value too long", set(MINIMAL, "summary", &summary_json(1, 3, 257)), bad("summary.000", "the limit is 256")),
        ("summary value not a string", set(MINIMAL, "summary", r#"{"port":21}"#), bad("summary.port", "expected a string, found the number 21")),
        ("summary value with a control character", set(MINIMAL, "summary", r#"{"banner":"220\r\n"}"#), bad("summary.banner", "control character U+000D")),
        ("duplicate summary key", set(MINIMAL, "summary", r#"{"a":"1","b":"2"}"#) .replace(r#""b":"2""#, r#""b":"2","a":"3""#), bad("summary.a", "duplicate member")),
        // host.location.
        ("latitude without longitude", set(https, "host.location.longitude", "null"), bad("host.location.longitude", "latitude is given")),
        ("longitude without latitude", remove(https, "host.location.latitude"), bad("host.location.latitude", "longitude is given")),
        ("accuracy without a position", set(MINIMAL, "host.location", r#"{"accuracy_radius_km":5}"#), bad("host.location.accuracy_radius_km", "needs a position")),
        ("latitude out of range", set(https, "host.location.latitude", "90.5"), bad("host.location.latitude", "90.5 is out of range -90..=90")),
        ("longitude out of range", set(https, "host.location.longitude", "-180.01"), bad("host.location.longitude", "out of range -180..=180")),
        ("accuracy out of range", set(https, "host.location.accuracy_radius_km", "20001"), bad("host.location.accuracy_radius_km", "out of range 0..=20000")),
        ("accuracy not an integer", set(https, "host.location.accuracy_radius_km", "2.5"), bad("host.location.accuracy_radius_km", "not an integer")),
        ("lowercase country", set_str(https, "host.location.country_code", "de"), bad("host.location.country_code", "not two uppercase letters")),
        ("unassigned country", set_str(https, "host.location.country_code", "XX"), bad("host.location.country_code", "not an assigned ISO 3166-1 code")),
        ("continent too long", set_str(https, "host.location.continent", &chars('c', 129)), bad("host.location.continent", "the limit is 128")),
        ("city too long", set_str(https, "host.location.city", &chars('c', 129)), bad("host.location.city", "128")),
        // host.asn.
        ("ASN 0", set(https, "host.asn.research.asn", "0"), bad("host.asn.research.asn", "0 is out of range 1..=4294967295")),
        ("ASN too high", set(https, "host.asn.bgp.asn", "4294967296"), bad("host.asn.bgp.asn", "out of range")),
        ("attribution without asn", set(https, "host.asn.network", r#"{"organization":"X"}"#), bad("host.asn.network.asn", "missing")),
        ("ASN as a string", set_str(https, "host.asn.network.asn", "AS64512"), bad("host.asn.network.asn", "expected a number")),
        // host.provider and host.whois.
        ("provider organization too long", set_str(https, "host.provider.organization", &chars('p', 257)), bad("host.provider.organization", "256")),
        ("isp too long", set_str(https, "host.provider.isp", &chars('p', 257)), bad("host.provider.isp", "256")),
        ("whois description too long", set_str(https, "host.whois.description", &chars('d', 257)), bad("host.whois.description", "256")),
        ("whois netname too long", set_str(https, "host.whois.netname", &chars('d', 257)), bad("host.whois.netname", "256")),
        ("whois cidr without prefix", set_str(https, "host.whois.cidr", "240.12.0.0"), bad("host.whois.cidr", "expected <address>/<prefix>")),
        ("whois cidr prefix too long", set_str(https, "host.whois.cidr", "240.12.0.0/33"), bad("host.whois.cidr", "longer than /32")),
        ("whois registry too long", set_str(https, "host.whois.registry", &chars('r', 65)), bad("host.whois.registry", "the limit is 64")),
        ("whois country", set_str(https, "host.whois.country_code", "EU"), bad("host.whois.country_code", "not an assigned")),
        // host names.
        ("reverse DNS on IPv6", set_str(https, "ip", "3fff::9"), bad("host.reverse_dns", "IPv6 observations carry no reverse DNS")),
        ("too many reverse names", set(MINIMAL, "host.reverse_dns", &names(17)), bad("host.reverse_dns", "17 entries; at most 16")),
        ("duplicate reverse names after case folding", set(MINIMAL, "host.reverse_dns", r#"["a.example","b.example","A.Example."]"#), bad("host.reverse_dns[2]", "duplicate of [0]")),
        ("bad reverse name", set(MINIMAL, "host.reverse_dns", r#"["a.example","b.example","c .example"]"#), bad("host.reverse_dns[2]", "not allowed")),
        ("dns_name as URL", set_str(https, "host.dns_name", "https://northwind.example"), bad("host.dns_name", "not allowed")),
        ("wildcard domain", set_str(https, "host.domain", "*.northwind.example"), bad("host.domain", "wildcards are not allowed")),
        ("numeric top-level label", set_str(https, "host.domain", "10.0.0.1"), bad("host.domain", "all digits")),
        // kind: "domain".
        ("domain without name", remove(DOMAIN, "name"), bad("name", "missing")),
        ("wildcard name", set_str(DOMAIN, "name", "*.northwind.example"), bad("name", "wildcards are not allowed")),
        ("name label too long", set_str(DOMAIN, "name", &format!("{}.example", chars('a', 64))), bad("name", "longer than 63")),
        ("name too long", set_str(DOMAIN, "name", &long_name(254)), bad("name", "longer than 253")),
        ("no addresses", remove(DOMAIN, "addresses"), bad("addresses", "missing")),
        ("empty addresses", set(DOMAIN, "addresses", "[]"), bad("addresses", "at least one address")),
        ("too many addresses", set(DOMAIN, "addresses", &addresses(257)), bad("addresses", "257 entries; at most 256")),
        ("duplicate address through mapping", set(DOMAIN, "addresses", r#"["240.0.0.1","::ffff:240.0.0.1"]"#), bad("addresses[1]", "240.0.0.1 is a duplicate of [0]")),
        ("bad address", set(DOMAIN, "addresses", r#"["240.0.0.1","240.0.0"]"#), bad("addresses[1]", "not an IPv4 or IPv6 address")),
        ("domain observed in the future", set_str(DOMAIN, "observed_at", "2027-01-01T00:00:00Z"), bad("observed_at", "more than one hour")),
        ("domain without observed_at", set(DOMAIN, "observed_at", "null"), bad("observed_at", "missing")),
    ];
    for (name, line, expect) in cases {
        check(name, &line, expect);
    }
}

/// A `'static` copy of `s`, for an expected field built at run time.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// A JSON array of `n` distinct CVE ids.
fn cves(n: usize) -> String {
    let ids: Vec<String> = (0..n)
        .map(|i| format!("\"CVE-2020-{:05}\"", 10_000 + i))
        .collect();
    format!("[{}]", ids.join(","))
}

/// A JSON array of `n` distinct DNS names.
fn names(n: usize) -> String {
    let names: Vec<String> = (0..n).map(|i| format!("\"h{i}.example\"")).collect();
    format!("[{}]", names.join(","))
}

/// A JSON array of `n` distinct IPv4 addresses.
fn addresses(n: usize) -> String {
    let ips: Vec<String> = (0..n)
        .map(|i| format!("\"240.0.{}.{}\"", i / 256, i % 256))
        .collect();
    format!("[{}]", ips.join(","))
}

/// A valid DNS name of exactly `len` characters (labels of up to 63).
fn long_name(len: usize) -> String {
    let mut name = String::new();
    while name.len() < len {
        if !name.is_empty() {
            name.push('.');
        }
        let label = (len - name.len()).min(63);
        name.push_str(&chars('a', label));
    }
    if name.ends_with('.') || name.len() != len {
        panic!("cannot build a name of {len}");
    }
    name
}

#[test]
fn line_numbers_count_every_line() {
    let mut r = reader();
    let lines = [MINIMAL, "", "garbage", DOMAIN, "   ", "{\"kind\":\"x\"}"];
    let got: Vec<Option<u64>> = lines
        .iter()
        .map(|l| r.read_line(l).err().map(|e| e.line))
        .collect();
    assert_eq!(got, [None, None, Some(3), None, None, Some(6)]);
    let e = r.read_line("{").unwrap_err();
    assert_eq!(e.to_string(), format!("line 7: (line): {}", e.reason));
}

#[test]
fn the_doc_examples_of_errors() {
    // docs/observation-format.md, "Errors".
    let mut r = reader();
    for _ in 1..17 {
        r.read_line("").unwrap();
    }
    let lines = [
        set(MINIMAL, "port", "70000"),
        set(SSH, "tls", "{}"),
        set_str(FULL_HTTPS, "ip", "3fff::9"),
        "x".to_owned(),
    ];
    let got: Vec<String> = lines
        .iter()
        .map(|l| r.read_line(l).unwrap_err().to_string())
        .collect();
    assert_eq!(got[0], "line 17: port: 70000 is out of range 1..=65535");
    assert_eq!(
        got[1],
        "line 18: tls: only TLS-capable protocols carry tls; \"ssh\" is not one"
    );
    assert!(
        got[2].starts_with("line 19: host.reverse_dns: IPv6 observations carry no reverse DNS"),
        "{}",
        got[2]
    );
    assert_eq!(
        got[3],
        "line 20: (line): not JSON: expected value at column 1"
    );
}

/// Valid lines and small edits of them, as a strategy.
fn mutated_line() -> impl Strategy<Value = String> {
    let base = prop::sample::select(BASES.to_vec());
    let edit = prop_oneof![
        Just(Edit::Delete),
        Just(Edit::Duplicate),
        any::<char>().prop_map(Edit::Insert),
        prop::sample::select(r#"{}[]":,0-9.e+-\ nulltruefalse"#.chars().collect::<Vec<_>>())
            .prop_map(Edit::Replace),
    ];
    (
        base,
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
                edit,
            ),
            1..4,
        ),
    )
        .prop_map(|(base, edits)| {
            let mut chars: Vec<char> = base.chars().collect();
            for (at, len, edit) in edits {
                let i = at.index(chars.len().max(1)).min(chars.len());
                let n = len.index(8) + 1;
                let j = (i + n).min(chars.len());
                match edit {
                    Edit::Delete => drop(chars.drain(i..j)),
                    Edit::Duplicate => {
                        let slice: Vec<char> = chars[i..j].to_vec();
                        chars.splice(i..i, slice);
                    }
                    Edit::Insert(c) => chars.insert(i, c),
                    Edit::Replace(c) if i < chars.len() => chars[i] = c,
                    Edit::Replace(c) => chars.push(c),
                }
            }
            chars.into_iter().collect()
        })
}

#[derive(Debug, Clone)]
enum Edit {
    Delete,
    Duplicate,
    Insert(char),
    Replace(char),
}

/// A line of some kind: valid, blank, mutated or random.
fn any_line() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(BASES.to_vec()).prop_map(str::to_owned),
        Just(String::new()),
        mutated_line(),
        any::<String>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let r = read(&text);
        if let Err(e) = r {
            prop_assert_eq!(e.line, 1);
            prop_assert!(!e.field.is_empty() && !e.reason.is_empty());
        }
    }

    #[test]
    fn json_like_text_never_panics(text in r#"[{}\[\]":, a-z0-9.\-]{0,80}"#) {
        let _ = read(&text);
    }

    #[test]
    fn mutated_lines_never_panic(line in mutated_line()) {
        if let Err(e) = read(&line) {
            prop_assert_eq!(e.line, 1);
            prop_assert!(!e.field.is_empty() && !e.reason.is_empty());
            prop_assert!(e.reason.len() < 2048, "reason of {} bytes", e.reason.len());
            // Printed to logs line by line: no control character may get through.
            let shown = e.to_string();
            prop_assert!(!shown.chars().any(char::is_control), "{}", shown);
        }
    }

    #[test]
    fn errors_carry_their_line_number(lines in prop::collection::vec(any_line(), 1..20)) {
        let mut r = reader();
        for (i, line) in lines.iter().enumerate() {
            let alone = read(line);
            let here = r.read_line(line);
            match (&alone, &here) {
                (Err(a), Err(h)) => {
                    prop_assert_eq!(h.line, i as u64 + 1);
                    prop_assert_eq!((&a.field, &a.reason), (&h.field, &h.reason));
                }
                _ => prop_assert_eq!(alone.is_ok(), here.is_ok()),
            }
        }
    }

    #[test]
    fn member_order_does_not_matter(base in prop::sample::select(BASES.to_vec()), seed in any::<u64>()) {
        let value: serde_json::Value = serde_json::from_str(base).unwrap();
        let mut members: Vec<(String, serde_json::Value)> =
            value.as_object().unwrap().clone().into_iter().collect();
        // A deterministic shuffle from the seed.
        let mut s = seed | 1;
        for i in (1..members.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            members.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let parts: Vec<String> = members.iter().map(|(k, v)| format!("{}:{v}", serde_json::Value::String(k.clone()))).collect();
        let shuffled = format!("{{{}}}", parts.join(","));
        // The same members, kind first (nested objects keep serde_json's order in both).
        prop_assert_eq!(read(&shuffled).unwrap(), read(&to_line(&value, true)).unwrap());
    }
}

/// The `host` values the lines of [`repeated_host_lines`] carry, as raw text (spacing and
/// escapes kept): with and without reverse DNS (which an IPv6 line may not carry), empty,
/// `null`, invalid, escaped, spaced, and two that share a prefix.
const HOSTS: [&str; 9] = [
    r#"{"location":{"country_code":"DE","city":"Munich","latitude":48.1374,"longitude":11.5755},"asn":{"bgp":{"asn":64512,"organization":"NORTHWIND-AS"}},"reverse_dns":["www.northwind.example"],"domain":"northwind.example"}"#,
    r#"{"location":{"country_code":"DE","city":"Munich","latitude":48.1374,"longitude":11.5755},"asn":{"bgp":{"asn":64512,"organization":"NORTHWIND-AS"}},"domain":"northwind.example"}"#,
    "{}",
    "null",
    r#"{"location":{"country_code":"ZZ"}}"#,
    r#"{"location":{"city":"M\u00fcnchen \"Mitte\""},"dns_name":"a.example"}"#,
    r#"{ "dns_name" : "a.example" , "reverse_dns" : [ ] }"#,
    r#"{"dns_name":"a.example"}"#,
    r#"{"dns_name":"a.example"},"x":1}"#,
];

/// Service lines of a few addresses (IPv4 and IPv6) carrying a few `host` values, most
/// repeating the block of the line before (in runs, as the reader keeps blocks while they
/// repeat), some with a mutation anywhere in the line.
fn repeated_host_lines() -> impl Strategy<Value = Vec<String>> {
    let line = (
        prop::sample::select(vec![MINIMAL, FULL_HTTPS, SSH, SUMMARY]),
        prop::sample::select(vec!["240.0.0.1", "240.12.7.9", "3fff:120:7::9", "3fff::1"]),
        prop::option::weighted(0.4, prop::sample::select(HOSTS.to_vec())),
        prop::option::weighted(0.15, (any::<prop::sample::Index>(), any::<char>())),
    );
    prop::collection::vec(line, 1..16).prop_map(|lines| {
        let mut host = HOSTS[0];
        let mut out = Vec::new();
        for (base, ip, other, mutation) in lines {
            // `None`: the block of the line before.
            host = other.unwrap_or(host);
            let base = remove(&set_str(base, "ip", ip), "host");
            let mut line = format!("{},\"host\":{host}}}", &base[..base.len() - 1]);
            if let Some((at, c)) = mutation {
                let mut chars: Vec<char> = line.chars().collect();
                let i = at.index(chars.len());
                chars[i] = c;
                line = chars.into_iter().collect();
            }
            out.push(line);
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A reader that takes a repeated `host` block from the line before reads every line
    /// exactly as a fresh reader reads it alone: the same observation or the same error.
    #[test]
    fn a_repeated_host_block_reads_as_it_would_alone(lines in repeated_host_lines()) {
        let mut r = reader();
        for line in &lines {
            let here = r.read_line(line);
            match (read(line), here) {
                (Ok(alone), Ok(here)) => prop_assert_eq!(alone, here, "{}", line),
                (Err(alone), Err(here)) => {
                    prop_assert_eq!((alone.field, alone.reason), (here.field, here.reason), "{}", line);
                }
                (alone, here) => prop_assert!(false, "{line}: alone {alone:?}, after the others {here:?}"),
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A line the reader says repeats the host carries the host of the service line it gave
    /// before (what an encoder relies on to skip writing it).
    #[test]
    fn a_host_said_to_repeat_is_the_last_given_lines(lines in repeated_host_lines()) {
        let mut r = reader();
        let mut last = None;
        for line in &lines {
            let given = r.read_line_with(line, |view| match view {
                LineView::Service { view, host_repeated } => {
                    Some((view.host.into_owned(), host_repeated))
                }
                LineView::Domain(_) => None,
            });
            if let Ok(Some(Some((host, repeated)))) = given {
                if repeated {
                    prop_assert_eq!(Some(&host), last.as_ref(), "{}", line);
                }
                last = Some(host);
            }
        }
    }
}

/// The reader says a host repeats only after a line that carried that block: not after one
/// without a `host`, though the block it keeps is the same. (It keeps a block once it saw it
/// twice in a row, so the second line reads it again.)
#[test]
fn a_host_repeats_only_the_line_given_before() {
    let with = |host: &str| {
        let base = remove(&set_str(FULL_HTTPS, "ip", "240.12.7.9"), "host");
        format!("{},\"host\":{host}}}", &base[..base.len() - 1])
    };
    let mut r = reader();
    let flags: Vec<bool> = [HOSTS[0], HOSTS[0], HOSTS[0], "null", HOSTS[0], HOSTS[0]]
        .iter()
        .map(|host| {
            r.read_line_with(&with(host), |view| match view {
                LineView::Service { host_repeated, .. } => host_repeated,
                LineView::Domain(_) => panic!("a service line"),
            })
            .unwrap()
            .unwrap()
        })
        .collect();
    assert_eq!(flags, [false, false, true, false, false, true]);
}

#[test]
fn a_repeated_host_block_with_reverse_dns_is_refused_on_an_ipv6_line() {
    let host = HOSTS[0];
    let with = |ip: &str| {
        let base = remove(&set_str(FULL_HTTPS, "ip", ip), "host");
        format!("{},\"host\":{host}}}", &base[..base.len() - 1])
    };
    let mut r = reader();
    let v4 = r.read_line(&with("240.12.7.9")).unwrap().unwrap();
    assert_eq!(service(&v4).host.reverse_dns.len(), 1);
    // Read again and found to repeat: from here the reader keeps its enrichment.
    assert_eq!(r.read_line(&with("240.12.7.9")).unwrap().unwrap(), v4);
    let v6 = r.read_line(&with("3fff:120:7::9")).unwrap_err();
    assert_eq!(v6.field, "host.reverse_dns");
    assert!(
        v6.reason.contains("IPv6 observations carry no reverse DNS"),
        "{v6}"
    );
    assert_eq!(
        (v6.field, v6.reason),
        read(&with("3fff:120:7::9"))
            .map(|_| ())
            .map_err(|e| (e.field, e.reason))
            .unwrap_err()
    );
    // The block the reader keeps is still the IPv4 line's: a third line repeating it reads.
    assert_eq!(r.read_line(&with("240.12.7.9")).unwrap().unwrap(), v4);
}

/// Reader throughput on a typical mix. Run in release:
/// `cargo test -p periscope-model --release --test observation_reader -- --ignored --nocapture`
#[test]
#[ignore = "a measurement, not a check; run it in release"]
fn throughput() {
    let lines: Vec<String> = (0..200_000u32)
        .map(|i| {
            let ip = format!("240.{}.{}.{}", (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff);
            let base = match i % 10 {
                0..=3 => SUMMARY,
                4..=6 => FULL_HTTPS,
                7 => SSH,
                8 => MINIMAL,
                _ => DOMAIN,
            };
            if base == DOMAIN {
                set(DOMAIN, "addresses", &format!("[\"{ip}\"]"))
            } else {
                set_str(base, "ip", &ip)
            }
        })
        .collect();
    let bytes: usize = lines.iter().map(String::len).sum();
    let mut best = f64::MAX;
    for _ in 0..3 {
        let mut r = reader();
        let start = std::time::Instant::now();
        let accepted = lines
            .iter()
            .filter(|l| matches!(r.read_line(l), Ok(Some(_))))
            .count();
        best = best.min(start.elapsed().as_secs_f64());
        assert_eq!(accepted, lines.len());
    }
    println!(
        "{} lines ({:.0} bytes on average): {:.0} lines/s, {:.0} MB/s",
        lines.len(),
        bytes as f64 / lines.len() as f64,
        lines.len() as f64 / best,
        bytes as f64 / best / 1e6
    );
}
