//! Black-box tests of the generated dataset: determinism, the documented shares, the safety
//! rules (reserved addresses, `.example` names, private ASNs, nothing after `as_of`) and the
//! format rules, checked by reading the output back as plain JSON; and acceptance of every
//! line by the model's `ObservationReader`.
//!
//! The 20,000-host dataset is generated and measured once and shared by the tests.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;
use std::sync::OnceLock;

use periscope_model::observation::ObservationReader;
use periscope_model::protocol::{EvidenceKind, REGISTRY};
use periscope_model::{Cpe23, CveId, Timestamp};
use periscope_synth::{SynthConfig, SynthStats, alternate_ports, write_dataset};
use serde_json::Value;

const HOSTS: u64 = 20_000;

fn as_of() -> Timestamp {
    Timestamp::parse("2026-11-20T00:00:00Z").expect("a valid timestamp")
}

fn generate(hosts: u64, seed: u64, as_of: Timestamp) -> (Vec<u8>, SynthStats) {
    let mut out = Vec::new();
    let stats = write_dataset(&SynthConfig { hosts, seed, as_of }, &mut out).expect("generated");
    (out, stats)
}

/// What the 20,000-host dataset contains, measured from its text.
#[derive(Debug, Default)]
struct Measured {
    text: Vec<u8>,
    stats: SynthStats,
    lines: u64,
    service_lines: u64,
    domain_lines: u64,
    by_protocol: BTreeMap<String, u64>,
    by_status: BTreeMap<String, u64>,
    hosts_v4: HashSet<IpAddr>,
    hosts_v6: HashSet<IpAddr>,
    hosts_v4_with_rdns: HashSet<IpAddr>,
    v6_lines_with_rdns: u64,
    vulnerable_lines: u64,
    enriched_lines: u64,
    tls_lines: u64,
    /// Observations per service key, with their `observed_at` in file order.
    per_key: HashMap<(IpAddr, u64, String), Vec<i64>>,
    /// CVE sets per CPE.
    cves_per_cpe: HashMap<String, BTreeSet<String>>,
    domain_records_with_v6: u64,
    domain_records_with_several: u64,
    /// Every rule broken, as text.
    violations: Vec<String>,
}

fn dataset() -> &'static Measured {
    static DATA: OnceLock<Measured> = OnceLock::new();
    DATA.get_or_init(|| measure(HOSTS, 1))
}

fn in_reserved_space(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.octets()[0] >= 240,
        IpAddr::V6(a) => u128::from(a) >> 108 == 0x3fff0,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn measure(hosts: u64, seed: u64) -> Measured {
    let (text, stats) = generate(hosts, seed, as_of());
    let mut m = Measured {
        stats,
        ..Measured::default()
    };
    let as_of = as_of().unix();
    let text_str = std::str::from_utf8(&text).expect("UTF-8");
    for (n, line) in text_str.lines().enumerate() {
        m.lines += 1;
        let mut bad = |why: String| m.violations.push(format!("line {}: {why}", n + 1));
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                bad(format!("not JSON: {e}"));
                continue;
            }
        };
        let check_name = |name: &str, bad: &mut dyn FnMut(String)| {
            let plain = name.strip_prefix("*.").unwrap_or(name);
            if !plain.ends_with(".example") && plain != "example" {
                bad(format!("name {name:?} is not under .example"));
            }
            if plain.split('.').any(|l| {
                l.is_empty()
                    || l.len() > 63
                    || !l
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            }) {
                bad(format!("name {name:?} is not a lowercase DNS name"));
            }
        };
        let check_time = |t: &str, bad: &mut dyn FnMut(String)| -> i64 {
            match Timestamp::parse(t) {
                Ok(ts) => ts.unix(),
                Err(e) => {
                    bad(format!("timestamp {t:?}: {e}"));
                    0
                }
            }
        };
        let observed = check_time(str_of(&v, "observed_at").unwrap_or(""), &mut bad);
        if observed > as_of {
            bad(format!("observed_at {observed} is after as_of"));
        }
        match str_of(&v, "kind") {
            Some("domain") => {
                m.domain_lines += 1;
                check_name(str_of(&v, "name").unwrap_or(""), &mut bad);
                let addresses = v["addresses"].as_array().cloned().unwrap_or_default();
                let ips: Vec<IpAddr> = addresses
                    .iter()
                    .filter_map(|a| a.as_str()?.parse().ok())
                    .collect();
                if ips.is_empty() || ips.len() != addresses.len() {
                    bad("domain record addresses".into());
                }
                if ips.iter().collect::<HashSet<_>>().len() != ips.len() {
                    bad("duplicate address in a domain record".into());
                }
                if ips.iter().any(|ip| !in_reserved_space(*ip)) {
                    bad(format!("address outside the reserved space: {ips:?}"));
                }
                m.domain_records_with_v6 += u64::from(ips.iter().any(IpAddr::is_ipv6));
                m.domain_records_with_several += u64::from(ips.len() > 1);
            }
            Some("service") => {
                m.service_lines += 1;
                let ip: IpAddr = match str_of(&v, "ip").and_then(|s| s.parse().ok()) {
                    Some(ip) => ip,
                    None => {
                        bad("bad ip".into());
                        continue;
                    }
                };
                if !in_reserved_space(ip) {
                    bad(format!("address {ip} outside the reserved space"));
                }
                let protocol = str_of(&v, "protocol").unwrap_or("").to_string();
                let Some(entry) = REGISTRY.iter().find(|e| e.value == protocol) else {
                    bad(format!("unregistered protocol {protocol:?}"));
                    continue;
                };
                let port = v["port"].as_u64().unwrap_or(0);
                let port16 = u16::try_from(port).unwrap_or(0);
                if !entry.ports.contains(&port16) && !alternate_ports(&protocol).contains(&port16) {
                    bad(format!("{protocol} on port {port}"));
                }
                if ip.is_ipv6() && !entry.ipv6 {
                    bad(format!("{protocol} on IPv6"));
                }
                *m.by_protocol.entry(protocol.clone()).or_default() += 1;
                let status = str_of(&v, "status").unwrap_or("").to_string();
                *m.by_status.entry(status.clone()).or_default() += 1;
                if status != "completed" && str_of(&v, "error").is_none() {
                    bad(format!("{status} without an error text"));
                }
                if status == "failed" {
                    for k in [
                        "product",
                        "vulnerabilities",
                        "tls",
                        "http",
                        "ssh",
                        "summary",
                    ] {
                        if v.get(k).is_some() {
                            bad(format!("failed observation carries {k}"));
                        }
                    }
                }
                m.per_key
                    .entry((ip, port, protocol.clone()))
                    .or_default()
                    .push(observed);
                // Evidence matches the protocol.
                let kind = entry.evidence_kind;
                if v.get("http").is_some() && kind != EvidenceKind::Http
                    || v.get("ssh").is_some() && kind != EvidenceKind::Ssh
                    || v.get("summary").is_some() && kind != EvidenceKind::Summary
                {
                    bad(format!("evidence of the wrong kind on {protocol}"));
                }
                if let Some(summary) = v.get("summary").and_then(Value::as_object) {
                    if summary.len() > 16 {
                        bad("summary with more than 16 members".into());
                    }
                    for (key, value) in summary {
                        let ok_key = !key.is_empty()
                            && key.len() <= 64
                            && key
                                .bytes()
                                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                        let ok_value = value.as_str().is_some_and(|s| s.len() <= 256);
                        if !ok_key || !ok_value {
                            bad(format!("summary member {key:?}: {value}"));
                        }
                    }
                }
                if let Some(product) = v.get("product") {
                    let cpe = str_of(product, "cpe").unwrap_or("");
                    match Cpe23::parse(cpe) {
                        Ok(c) if c.as_str() == cpe => {}
                        _ => bad(format!("CPE {cpe:?}")),
                    }
                    if let Some(vulns) = v.get("vulnerabilities") {
                        m.enriched_lines += 1;
                        let cves: BTreeSet<String> = vulns["cves"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|c| c.as_str().map(str::to_string))
                            .collect();
                        if cves.iter().any(|c| CveId::parse(c).is_err()) {
                            bad(format!("CVE ids {cves:?}"));
                        }
                        if !cves.is_empty() {
                            m.vulnerable_lines += 1;
                            if vulns.get("max_cvss").and_then(Value::as_f64).is_none() {
                                bad("CVEs without max_cvss".into());
                            }
                        }
                        let previous = m.cves_per_cpe.insert(cpe.to_string(), cves.clone());
                        if previous.is_some_and(|p| p != cves) {
                            bad(format!(
                                "{cpe} carries different CVEs on different services"
                            ));
                        }
                    }
                } else if v.get("vulnerabilities").is_some() {
                    bad("vulnerabilities without a product".into());
                }
                if let Some(tls) = v.get("tls") {
                    m.tls_lines += 1;
                    if !entry.tls {
                        bad(format!("tls on {protocol}"));
                    }
                    let cert = &tls["certificate"];
                    for san in cert["subject_alt_names"].as_array().into_iter().flatten() {
                        check_name(san.as_str().unwrap_or(""), &mut bad);
                    }
                    check_name(str_of(cert, "common_name").unwrap_or(""), &mut bad);
                    let from = check_time(str_of(cert, "valid_from").unwrap_or(""), &mut bad);
                    let until = check_time(str_of(cert, "valid_until").unwrap_or(""), &mut bad);
                    if from > until {
                        bad("certificate valid_from after valid_until".into());
                    }
                    let fp = str_of(cert, "fingerprint_sha256").unwrap_or("");
                    if fp.len() != 64 || !fp.bytes().all(|b| b.is_ascii_hexdigit()) {
                        bad(format!("fingerprint {fp:?}"));
                    }
                }
                if let Some(ssh) = v.get("ssh").and_then(|s| s.get("hassh")) {
                    let h = ssh.as_str().unwrap_or("");
                    if h.len() != 32 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                        bad(format!("hassh {h:?}"));
                    }
                }
                let host = &v["host"];
                for attribution in ["research", "bgp", "network"] {
                    if let Some(asn) = host["asn"][attribution]["asn"].as_u64() {
                        let private = (64_512..=65_534).contains(&asn)
                            || (4_200_000_000..=4_294_967_294).contains(&asn);
                        if !private {
                            bad(format!("ASN {asn} is not private-use"));
                        }
                    }
                }
                if let Some(cidr) = str_of(&host["whois"], "cidr") {
                    let (net, prefix) = cidr.split_once('/').unwrap_or(("", ""));
                    let contains = match (net.parse::<IpAddr>(), prefix.parse::<u32>(), ip) {
                        (Ok(IpAddr::V4(n)), Ok(p), IpAddr::V4(a)) if p <= 32 => {
                            let mask = u32::MAX.checked_shl(32 - p).unwrap_or(0);
                            u32::from(a) & mask == u32::from(n)
                        }
                        (Ok(IpAddr::V6(n)), Ok(p), IpAddr::V6(a)) if p <= 128 => {
                            let mask = u128::MAX.checked_shl(128 - p).unwrap_or(0);
                            u128::from(a) & mask == u128::from(n)
                        }
                        _ => false,
                    };
                    if !contains {
                        bad(format!("WHOIS cidr {cidr} does not contain {ip}"));
                    }
                }
                let rdns = host["reverse_dns"].as_array().cloned().unwrap_or_default();
                for name in &rdns {
                    check_name(name.as_str().unwrap_or(""), &mut bad);
                }
                for key in ["dns_name", "domain"] {
                    if let Some(name) = str_of(host, key) {
                        check_name(name, &mut bad);
                    }
                }
                if ip.is_ipv6() {
                    m.hosts_v6.insert(ip);
                    m.v6_lines_with_rdns += u64::from(!rdns.is_empty());
                } else {
                    m.hosts_v4.insert(ip);
                    if !rdns.is_empty() {
                        m.hosts_v4_with_rdns.insert(ip);
                    }
                }
            }
            other => bad(format!("kind {other:?}")),
        }
    }
    m.text = text;
    m
}

/// `part / whole` is within `lo..=hi`.
fn check_share(what: &str, part: u64, whole: u64, lo: f64, hi: f64) {
    let share = part as f64 / whole as f64;
    assert!(
        (lo..=hi).contains(&share),
        "{what}: {part}/{whole} = {share:.4}, expected {lo}..={hi}"
    );
}

#[test]
fn same_inputs_same_bytes_and_other_inputs_other_bytes() {
    let a = generate(3_000, 7, as_of());
    let b = generate(3_000, 7, as_of());
    assert!(a.0 == b.0, "two runs with the same seed differ");
    assert_eq!(a.1, b.1);
    let c = generate(3_000, 8, as_of());
    assert!(a.0 != c.0, "another seed gives the same bytes");
    let later = Timestamp::from_unix(as_of().unix() + 86_400).unwrap();
    let d = generate(3_000, 7, later);
    assert!(a.0 != d.0, "another as_of gives the same bytes");
    // A larger dataset is a different world, not a prefix of this one, but it is still
    // deterministic.
    assert_eq!(generate(3_001, 7, as_of()).0, generate(3_001, 7, as_of()).0);
}

/// FNV-1a, 64 bits.
fn digest(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[test]
fn the_bytes_are_pinned() {
    // The same inputs give the same bytes on every platform and after every dependency
    // upgrade. When a change to the generator is intended, update the digest (and say so in
    // the change: every dataset changes with it).
    let (text, _) = generate(500, 1, as_of());
    assert_eq!(
        format!("{:016x}", digest(&text)),
        "25cebc4b860b0335",
        "the dataset of 500 hosts, seed 1 changed"
    );
}

#[test]
fn rejects_an_empty_dataset() {
    let err = write_dataset(
        &SynthConfig {
            hosts: 0,
            seed: 1,
            as_of: as_of(),
        },
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn tiny_datasets_work() {
    for hosts in [1, 2, 3, 10] {
        let (text, stats) = generate(hosts, 1, as_of());
        assert_eq!(stats.hosts_v4 + stats.hosts_v6, hosts);
        assert!(stats.service_observations >= hosts);
        assert_eq!(stats.bytes, text.len() as u64);
    }
}

#[test]
fn every_rule_holds() {
    let m = dataset();
    assert!(
        m.violations.is_empty(),
        "{} violations, first: {:#?}",
        m.violations.len(),
        &m.violations[..m.violations.len().min(10)]
    );
}

#[test]
fn stats_agree_with_the_text() {
    let m = dataset();
    let s = &m.stats;
    assert_eq!(s.bytes, m.text.len() as u64);
    assert_eq!(s.records, m.lines);
    assert_eq!(s.service_observations, m.service_lines);
    assert_eq!(s.domain_records, m.domain_lines);
    assert_eq!(s.hosts_v4, m.hosts_v4.len() as u64);
    assert_eq!(s.hosts_v6, m.hosts_v6.len() as u64);
    assert_eq!(
        s.hosts_v4 + s.hosts_v6,
        HOSTS,
        "every host has a service line"
    );
    assert_eq!(s.by_status.completed, m.by_status["completed"]);
    assert_eq!(s.by_status.partial, m.by_status["partial"]);
    assert_eq!(s.by_status.failed, m.by_status["failed"]);
    assert_eq!(s.vulnerable_observations, m.vulnerable_lines);
    let older: u64 = m.per_key.values().map(|v| v.len() as u64 - 1).sum();
    assert_eq!(s.older_observations, older);
}

#[test]
fn web_and_ssh_dominate_with_a_long_tail() {
    let m = dataset();
    let count = |p: &str| m.by_protocol.get(p).copied().unwrap_or(0);
    let big = count("http") + count("https") + count("ssh");
    check_share("http+https+ssh", big, m.service_lines, 0.5, 0.8);
    for p in ["http", "https", "ssh"] {
        let c = count(p);
        let others = m
            .by_protocol
            .iter()
            .filter(|(k, _)| !["http", "https", "ssh"].contains(&k.as_str()))
            .map(|(_, v)| *v)
            .max()
            .unwrap_or(0);
        assert!(
            c > others,
            "{p} ({c}) is not above every long-tail protocol ({others})"
        );
    }
    assert!(
        m.by_protocol.len() >= 80,
        "only {} distinct protocols: {:?}",
        m.by_protocol.len(),
        m.by_protocol.keys()
    );
}

#[test]
fn about_one_host_in_ten_is_ipv6() {
    let m = dataset();
    check_share("IPv6 hosts", m.hosts_v6.len() as u64, HOSTS, 0.07, 0.13);
}

#[test]
fn reverse_dns_on_about_six_in_ten_ipv4_hosts_and_never_on_ipv6() {
    let m = dataset();
    check_share(
        "IPv4 hosts with reverse DNS",
        m.hosts_v4_with_rdns.len() as u64,
        m.hosts_v4.len() as u64,
        0.5,
        0.7,
    );
    assert_eq!(m.v6_lines_with_rdns, 0);
}

#[test]
fn a_minority_of_services_is_vulnerable() {
    let m = dataset();
    check_share(
        "vulnerable service lines",
        m.vulnerable_lines,
        m.service_lines,
        0.08,
        0.35,
    );
    check_share(
        "enriched service lines",
        m.enriched_lines,
        m.service_lines,
        0.3,
        0.9,
    );
    assert!(
        m.cves_per_cpe.values().any(BTreeSet::is_empty),
        "clean versions exist"
    );
    check_share("TLS service lines", m.tls_lines, m.service_lines, 0.2, 0.6);
}

#[test]
fn some_observations_are_partial_or_failed() {
    let m = dataset();
    check_share(
        "partial",
        m.by_status["partial"],
        m.service_lines,
        0.02,
        0.045,
    );
    check_share(
        "failed",
        m.by_status["failed"],
        m.service_lines,
        0.02,
        0.045,
    );
}

#[test]
fn about_one_service_in_ten_has_a_superseded_observation() {
    let m = dataset();
    let keys = m.per_key.len() as u64;
    let superseded = m.per_key.values().filter(|v| v.len() > 1).count() as u64;
    check_share(
        "services with an older observation",
        superseded,
        keys,
        0.07,
        0.14,
    );
    let older_first = m
        .per_key
        .values()
        .filter(|v| v.len() == 2 && v[0] < v[1])
        .count();
    let older_last = m
        .per_key
        .values()
        .filter(|v| v.len() == 2 && v[0] > v[1])
        .count();
    assert!(
        older_first > 100 && older_last > 100,
        "{older_first} / {older_last}"
    );
    assert!(m.per_key.values().all(|v| v.len() <= 2));
}

#[test]
fn domain_records_resolve_to_one_or_several_hosts_of_both_families() {
    let m = dataset();
    check_share("domain records", m.domain_lines, m.lines, 0.03, 0.2);
    assert!(
        m.domain_records_with_v6 > 10,
        "{}",
        m.domain_records_with_v6
    );
    assert!(
        m.domain_records_with_several > 100,
        "{}",
        m.domain_records_with_several
    );
}

#[test]
fn every_line_is_accepted_by_the_observation_reader() {
    let m = dataset();
    // The reader's clock is the dataset's as_of: nothing may be in its future.
    let mut reader = ObservationReader::new(as_of());
    let text = std::str::from_utf8(&m.text).unwrap();
    let mut rejected = Vec::new();
    let mut accepted = 0u64;
    for line in text.lines() {
        match reader.read_line(line) {
            Ok(Some(_)) => accepted += 1,
            Ok(None) => {}
            Err(e) => rejected.push(e.to_string()),
        }
    }
    assert!(
        rejected.is_empty(),
        "{} of {} lines rejected, first: {:#?}",
        rejected.len(),
        m.lines,
        &rejected[..rejected.len().min(5)]
    );
    assert_eq!(accepted, m.lines);
}
