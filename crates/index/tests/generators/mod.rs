//! Random scan data and random queries, shared by every engine's differential tests (the
//! embedded engine in `engine.rs`, the ClickHouse engine in `crates/clickhouse/tests`, which
//! includes this file by path): observation lines over small vocabularies so that many hosts
//! collide and match, queries of every kind over the same vocabularies plus values no host
//! has, and the comparisons that walk every page of a search or a host detail in two engines.

#![allow(dead_code, clippy::unwrap_used)] // Each including test uses part of it; a panic is the failure report.

use std::net::IpAddr;

use periscope_index::ReferenceIndex;
use periscope_index::api::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::{
    Asn, CountryCode, Cpe23, CveId, Cvss, CvssRange, DomainName, Ipv4Cidr, Port, ProtocolToken,
    Timestamp,
};
use periscope_query::{Clause, FilterQuery, Phrase, Query};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Vocabularies shared by the data and the queries.

pub const NOW: &str = "2026-11-20T14:00:00Z";
/// Thirty days after `TIMES[1]` and four hours, before thirty days after `TIMES[2]`.
pub const LATER: &str = "2026-12-19T12:00:00Z";
/// Expired, older, newer, newest.
pub const TIMES: [&str; 4] = [
    "2026-09-01T00:00:00Z",
    "2026-11-19T08:00:00Z",
    "2026-11-20T10:00:00Z",
    "2026-11-20T12:00:00Z",
];
pub const ADDRESSES: [&str; 10] = [
    "240.0.0.1",
    "240.0.0.2",
    "240.0.0.3",
    "240.0.0.200",
    "240.0.1.1",
    "240.0.1.9",
    "240.1.0.1",
    "3fff::1",
    "3fff::2",
    "3fff::a",
];
pub const PORTS: [u16; 6] = [22, 80, 443, 8080, 25, 993];
pub const PROTOCOLS: [&str; 7] = ["ssh", "http", "https", "imaps", "smtp", "redis", "ftp"];
pub const V6_PROTOCOLS: [&str; 3] = ["ssh", "http", "https"];
pub const TITLES: [&str; 5] = [
    "OpenSSH",
    "nginx",
    "Apache HTTP Server",
    "Apache Tomcat",
    "nginx Plus",
];
pub const CPES: [&str; 3] = [
    "cpe:2.3:a:openbsd:openssh:9.6:*:*:*:*:*:*:*",
    "cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*",
    "cpe:2.3:a:apache:http_server:2.4.58:*:*:*:*:*:*:*",
];
pub const CVES: [&str; 3] = ["CVE-2023-48795", "CVE-2021-44228", "CVE-2023-44487"];
pub const SCORES: [&str; 6] = ["0.0", "3.9", "5.9", "7.0", "9.8", "10.0"];
pub const SANS: [&str; 4] = ["www.a.example", "a.example", "*.b.example", "x.b.example"];
pub const COMMON_NAMES: [&str; 3] = ["Mail.A.Example.", "www.a.example", "Example Root CA"];
pub const ORGS: [&str; 5] = [
    "Northwind Traders Ltd",
    "Example Corp., Ltd",
    "Contoso Example",
    "NORTHWIND-NET",
    "Ltd Example Corp",
];
pub const ASNS: [u32; 3] = [64512, 64513, 64500];
pub const COUNTRIES: [&str; 3] = ["DE", "FR", "US"];
pub const POSITIONS: [(f64, f64); 5] = [
    (48.1374, 11.5755),
    (48.2, 11.6),
    (40.7128, -74.006),
    (-33.8688, 151.2093),
    (85.2, 179.99),
];
pub const NAMES: [&str; 5] = [
    "a.example",
    "www.a.example",
    "mail.a.example",
    "b.example",
    "x.b.example",
];

pub fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Random observation lines.

pub fn pick<T: Copy + std::fmt::Debug + 'static>(values: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(values)
}

pub fn text(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    pick(values).prop_map(|s| format!("{s:?}"))
}

/// `,"name":value` when present.
pub fn member(name: &str, value: Option<String>) -> String {
    value.map_or_else(String::new, |v| format!(r#","{name}":{v}"#))
}

/// An object from its members (each with a leading comma), or nothing when none is present.
pub fn object(members: &[String]) -> Option<String> {
    let joined: String = members.concat();
    joined.strip_prefix(',').map(|inner| format!("{{{inner}}}"))
}

pub fn attribution() -> impl Strategy<Value = Option<String>> {
    proptest::option::of((pick(&ASNS), proptest::option::of(text(&ORGS)))).prop_map(|a| {
        a.and_then(|(asn, org)| object(&[format!(r#","asn":{asn}"#), member("organization", org)]))
    })
}

/// A host block (`,"host":{...}`), maybe empty; `v4` allows reverse DNS.
pub fn host_block(v4: bool) -> impl Strategy<Value = String> {
    let location = proptest::option::of((
        proptest::option::of(text(&COUNTRIES)),
        proptest::option::of(pick(&POSITIONS)),
    ));
    let provider = proptest::option::of((
        proptest::option::of(text(&ORGS)),
        proptest::option::of(text(&ORGS)),
        proptest::option::of(text(&ORGS)),
    ));
    let whois = proptest::option::of((
        proptest::option::of(text(&ORGS)),
        proptest::option::of(text(&ORGS)),
    ));
    let names = (
        proptest::option::of(text(&NAMES)),
        proptest::option::of(text(&NAMES)),
        proptest::sample::subsequence(NAMES.to_vec(), 0..=2),
    );
    (
        location,
        (attribution(), attribution(), attribution()),
        provider,
        whois,
        names,
    )
        .prop_map(
            move |(location, (research, bgp, network), provider, whois, names)| {
                let location = location.and_then(|(cc, pos)| {
                    let pos =
                        pos.map(|(lat, lon)| format!(r#","latitude":{lat},"longitude":{lon}"#));
                    object(&[member("country_code", cc), pos.unwrap_or_default()])
                });
                let asn = object(&[
                    member("research", research),
                    member("bgp", bgp),
                    member("network", network),
                ]);
                let provider = provider.and_then(|(o, a, i)| {
                    object(&[
                        member("organization", o),
                        member("as_organization", a),
                        member("isp", i),
                    ])
                });
                let whois = whois
                    .and_then(|(d, n)| object(&[member("description", d), member("netname", n)]));
                let (dns_name, domain, rdns) = names;
                let rdns = (v4 && !rdns.is_empty()).then(|| {
                    let quoted: Vec<String> = rdns.iter().map(|n| format!("{n:?}")).collect();
                    format!("[{}]", quoted.join(","))
                });
                object(&[
                    member("location", location),
                    member("asn", asn),
                    member("provider", provider),
                    member("whois", whois),
                    member("dns_name", dns_name),
                    member("domain", domain),
                    member("reverse_dns", rdns),
                ])
                .map_or_else(String::new, |h| format!(r#","host":{h}"#))
            },
        )
}

pub fn captured() -> impl Strategy<Value = (String, String, String, String)> {
    let product = proptest::option::of((pick(&TITLES), proptest::option::of(pick(&CPES))))
        .prop_map(|p| {
            p.map_or_else(String::new, |(title, cpe)| {
                format!(
                    r#","product":{{"title":{title:?}{}}}"#,
                    member("cpe", cpe.map(|c| format!("{c:?}")))
                )
            })
        });
    let vulns = proptest::option::of((
        proptest::sample::subsequence(CVES.to_vec(), 0..=2),
        proptest::option::of(pick(&SCORES)),
        any::<bool>(),
    ))
    .prop_map(|v| {
        v.map_or_else(String::new, |(cves, score, exploit)| {
            let cves: Vec<String> = cves.iter().map(|c| format!("{c:?}")).collect();
            format!(
                r#","vulnerabilities":{{"cves":[{}]{},"has_exploits":{exploit}}}"#,
                cves.join(","),
                member("max_cvss", score.map(str::to_owned))
            )
        })
    });
    let tls = proptest::option::of((
        proptest::sample::subsequence(SANS.to_vec(), 0..=3),
        proptest::option::of(text(&COMMON_NAMES)),
        proptest::option::of(text(&ORGS)),
        proptest::option::of(text(&ORGS)),
    ))
    .prop_map(|t| {
        t.map_or_else(String::new, |(sans, cn, subject, issuer)| {
            let sans: Vec<String> = sans.iter().map(|s| format!("{s:?}")).collect();
            format!(
                r#","tls":{{"version":"TLSv1.3","certificate":{{"subject_alt_names":[{}]{}{}{}}}}}"#,
                sans.join(","),
                member("common_name", cn),
                member("subject_organization", subject),
                member("issuer_organization", issuer)
            )
        })
    });
    let http = proptest::option::of(any::<bool>()).prop_map(|h| {
        h.map_or_else(String::new, |complete| {
            format!(r#","http":{{"status_code":200,"title":"Welcome","complete":{complete}}}"#)
        })
    });
    (product, vulns, tls, http)
}

/// One service line.
pub fn service_line() -> impl Strategy<Value = String> {
    (
        0..ADDRESSES.len(),
        pick(&PORTS),
        0..PROTOCOLS.len(),
        pick(&TIMES),
        0..8u8,
        captured(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(a, port, p, at, status, captured, error, with_host)| {
            let address = ADDRESSES[a];
            let v4 = !address.contains(':');
            let host = if with_host {
                host_block(v4).boxed()
            } else {
                Just(String::new()).boxed()
            };
            host.prop_map(move |host| {
                let protocol = if v4 {
                    PROTOCOLS[p]
                } else {
                    V6_PROTOCOLS[p % V6_PROTOCOLS.len()]
                };
                let token = ProtocolToken::parse(protocol).unwrap();
                let status = match status {
                    0 => "failed",
                    1 => "partial",
                    _ => "completed",
                };
                let error = if error || status == "failed" {
                    r#","error":"connection reset""#
                } else {
                    ""
                };
                let (product, vulns, tls, http) = &captured;
                let mut rest = String::from(error);
                if status != "failed" {
                    rest.push_str(product);
                    rest.push_str(vulns);
                    if token.entry().tls {
                        rest.push_str(tls);
                    }
                    if matches!(protocol, "http" | "https") {
                        rest.push_str(http);
                    }
                }
                rest.push_str(&host);
                format!(
                    r#"{{"kind":"service","ip":"{address}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"{status}"{rest}}}"#
                )
            })
        })
}

pub fn domain_line() -> impl Strategy<Value = String> {
    (
        pick(&NAMES),
        proptest::sample::subsequence(ADDRESSES.to_vec(), 1..=3),
        pick(&TIMES),
    )
        .prop_map(|(name, addresses, at)| {
            let addresses: Vec<String> = addresses.iter().map(|a| format!("{a:?}")).collect();
            format!(
                r#"{{"kind":"domain","name":"{name}","addresses":[{}],"observed_at":"{at}"}}"#,
                addresses.join(",")
            )
        })
}

pub fn lines() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(prop_oneof![6 => service_line(), 1 => domain_line()], 0..40)
}

pub fn read(lines: &[String]) -> Vec<Observation> {
    let mut reader = ObservationReader::new(now());
    lines
        .iter()
        .filter_map(|l| reader.read_line(l).unwrap_or_else(|e| panic!("{e}\n{l}")))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Random queries.

pub fn phrase(values: &'static [&'static str]) -> impl Strategy<Value = Phrase> {
    pick(values).prop_map(|p| Phrase::new(p).unwrap())
}

pub fn clause() -> impl Strategy<Value = Clause> {
    prop_oneof![
        pick(&[22u16, 80, 443, 8080, 25, 993, 9999])
            .prop_map(|p| Clause::Port(Port::new(p).unwrap())),
        pick(&PROTOCOLS).prop_map(|p| Clause::Protocol(ProtocolToken::parse(p).unwrap())),
        phrase(&[
            "Northwind",
            "northwind traders",
            "Example Corp",
            "Corp Example",
            "Ltd",
            "Northwind-Net",
            "Traders Ltd",
            "Contoso Example",
            "nomatch",
        ])
        .prop_map(Clause::Organization),
        phrase(&[
            "OpenSSH",
            "nginx",
            "Apache",
            "tomcat apache",
            "NGINX plus",
            "server http",
            "zzz"
        ])
        .prop_map(Clause::Product),
        pick(&[
            "www.a.example",
            "a.example",
            "mail.a.example",
            "x.b.example",
            "b.example"
        ])
        .prop_map(|n| Clause::CertificateName(DomainName::parse(n).unwrap())),
        pick(&["DE", "FR", "US", "JP"])
            .prop_map(|c| Clause::Country(CountryCode::parse(c).unwrap())),
        pick(&[
            CPES[0],
            CPES[1],
            CPES[2],
            "cpe:2.3:a:F5:NGINX:1.24.0:*:*:*:*:*:*:*"
        ])
        .prop_map(|c| Clause::Cpe(Cpe23::parse(c).unwrap())),
        pick(&[CVES[0], CVES[1], CVES[2], "CVE-2000-0001"])
            .prop_map(|c| Clause::Cve(CveId::parse(c).unwrap())),
        (
            pick(&[0u8, 39, 40, 59, 70, 98, 100]),
            pick(&[0u8, 39, 59, 70, 89, 100])
        )
            .prop_map(|(a, b)| {
                let (low, high) = (a.min(b), a.max(b));
                Clause::Cvss(
                    CvssRange::new(
                        Cvss::from_tenths(low).unwrap(),
                        Cvss::from_tenths(high).unwrap(),
                    )
                    .unwrap(),
                )
            }),
        any::<bool>().prop_map(Clause::Exploit),
    ]
}

pub fn filter() -> impl Strategy<Value = FilterQuery> {
    proptest::collection::vec(clause(), 1..=3).prop_map(|clauses| {
        let mut distinct: Vec<Clause> = Vec::new();
        for c in clauses {
            if distinct.iter().all(|d| d.field() != c.field()) {
                distinct.push(c);
            }
        }
        FilterQuery::new(distinct).unwrap()
    })
}

/// A query and, for domain queries, the addresses "DNS" resolved.
pub fn query() -> impl Strategy<Value = (Query, Vec<IpAddr>)> {
    let address = pick(&ADDRESSES).prop_map(ip);
    prop_oneof![
        1 => address.prop_map(|a| (Query::Ip(a), vec![])),
        1 => Just((Query::Ip(ip("240.9.9.9")), vec![])),
        1 => (pick(&ADDRESSES[..7]), pick(&[24u8, 28, 31, 32])).prop_map(|(a, prefix)| {
            let IpAddr::V4(v4) = ip(a) else { unreachable!() };
            let mask = u32::MAX << (32 - prefix);
            let network = std::net::Ipv4Addr::from(u32::from(v4) & mask);
            (Query::Cidr(Ipv4Cidr::new(network, prefix).unwrap()), vec![])
        }),
        1 => pick(&[64512u32, 64513, 64500, 65000]).prop_map(|a| (Query::Asn(Asn::new(a).unwrap()), vec![])),
        1 => (
            pick(&["example", "a.example", "www.a.example", "b.example", "c.example"]),
            proptest::sample::subsequence(vec![ip("240.0.0.1"), ip("3fff::2"), ip("240.9.9.9")], 0..=2),
        )
            .prop_map(|(n, resolved)| (Query::Domain(DomainName::parse(n).unwrap()), resolved)),
        4 => filter().prop_map(|f| (Query::Filter(f), vec![])),
    ]
}

// ---------------------------------------------------------------------------------------------
// Comparing every answer.

/// Walks every page of `query` from `after` in both engines, requiring equal pages.
pub fn same_search(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    query: &Query,
    resolved: &[IpAddr],
    mut after: Option<IpAddr>,
    limit: usize,
) -> Result<(), TestCaseError> {
    for _ in 0..100 {
        let req = SearchRequest {
            query,
            after,
            limit,
            resolved,
            now: at,
        };
        let want = reference.search(&req).unwrap();
        let got = engine.search(&req).unwrap();
        prop_assert_eq!(
            &got,
            &want,
            "search {} after {:?} limit {}",
            query,
            after,
            limit
        );
        match want {
            SearchOutcome::Page(page) if page.has_more => {
                after = page.hosts.last().map(|h| h.host.ip);
            }
            _ => return Ok(()),
        }
    }
    Err(TestCaseError::fail("more than 100 pages"))
}

pub fn same_detail(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    address: IpAddr,
    limit: usize,
) -> Result<(), TestCaseError> {
    let mut continuation: Option<String> = None;
    for _ in 0..100 {
        let want = reference
            .host_detail(address, continuation.as_deref(), limit, at)
            .unwrap();
        let got = engine
            .host_detail(address, continuation.as_deref(), limit, at)
            .unwrap();
        prop_assert_eq!(&got, &want, "detail {} after {:?}", address, continuation);
        match want.and_then(|d| d.next) {
            Some(next) => {
                // Bound to its address: refused for another one by both.
                let other = ip("240.0.0.2");
                if other != address {
                    prop_assert_eq!(
                        engine.host_detail(other, Some(&next), limit, at),
                        reference.host_detail(other, Some(&next), limit, at)
                    );
                }
                continuation = Some(next);
            }
            None => return Ok(()),
        }
    }
    Err(TestCaseError::fail("more than 100 detail pages"))
}

/// A fresh directory per case (named by `purpose`, the process and a counter), removed on drop.
pub struct CaseDir(pub std::path::PathBuf);

impl CaseDir {
    pub fn new(purpose: &str) -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("periscope-{purpose}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for CaseDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The reference over `lines` and the embedded engine built from its records at [`now`].
pub fn both(
    config: periscope_index::IndexConfig,
    lines: &[String],
) -> (ReferenceIndex, periscope_index::EmbeddedIndex) {
    let mut reference = ReferenceIndex::new(config);
    for obs in read(lines) {
        reference.apply(&obs);
    }
    let engine = periscope_index::EmbeddedIndex::build(
        config,
        now(),
        reference.records().cloned(),
        reference.domain_scans().clone(),
    )
    .unwrap();
    (reference, engine)
}

/// A `LiveIndex` whose base holds `base` (a full rebuild at `now()`) and whose delta holds
/// `later` (each batch applied, and the delta refreshed at `at` after it when its flag says
/// so, then refreshed once more at `at`), with the reference fed everything; checks that the
/// base was not rebuilt. With `at` later than `now()`, services the window leaves between
/// the two go through the delta.
pub fn layered(
    dir: &CaseDir,
    config: periscope_index::IndexConfig,
    base: &[String],
    later: &[(Vec<String>, bool)],
    at: Timestamp,
) -> (ReferenceIndex, periscope_index::LiveIndex) {
    let (live, _) =
        periscope_index::LiveIndex::open(&dir.0.join("scan.store"), config, now()).unwrap();
    let mut reference = ReferenceIndex::new(config);
    let observations = read(base);
    for obs in &observations {
        reference.apply(obs);
    }
    live.apply_batch(&observations).unwrap();
    live.set_delta_limit(Some(0));
    live.refresh(now()).unwrap();
    live.set_delta_limit(None);
    let first = std::sync::Arc::clone(live.current().base());
    assert_eq!(live.current().delta_addresses(), 0);
    for (batch, refresh) in later {
        let observations = read(batch);
        for obs in &observations {
            reference.apply(obs);
        }
        live.apply_batch(&observations).unwrap();
        if *refresh {
            live.refresh_delta(at).unwrap();
        }
    }
    live.refresh_delta(at).unwrap();
    assert!(!live.is_stale());
    assert!(
        std::sync::Arc::ptr_eq(&first, live.current().base()),
        "a delta refresh rebuilt the base"
    );
    (reference, live)
}
