//! The embedded engine against the reference engine.
//!
//! Property tests write random observation lines (IPv4 and IPv6 hosts, several ports per
//! host, missing members, failed, partial, expired and superseded observations, domain
//! scans), read them with the real `ObservationReader`, apply them to a `ReferenceIndex`, build
//! an `EmbeddedIndex` from the reference's records, and require every answer to be equal for
//! random queries of every kind — built mostly from the same small vocabularies as the data
//! so that many match, plus values no host has. Table tests check the engine's own
//! structures (build order, retention at build time, the store path).
//!
//! The layered view (`LiveIndex`: a base built from the store and a delta of the batches
//! applied after it) runs the same comparisons: random lines split into the base's and
//! later batches (which supersede, add services to existing hosts, add hosts, IPv4 and IPv6,
//! and write domain scans, as the small vocabularies make them collide), the reference fed
//! with all of them. An ignored test
//! measures the engine on 200,000 synthetic hosts:
//! `cargo test -p periscope-index --release --test engine -- --ignored --nocapture`.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use periscope_index::api::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_index::engine::{BuildError, EmbeddedIndex};
use periscope_index::{HostRecord, IndexConfig, LiveIndex, ReferenceIndex};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::{
    Asn, CountryCode, Cpe23, CveId, Cvss, CvssRange, DomainName, Ipv4Cidr, Port, ProtocolToken,
    Timestamp,
};
use periscope_query::{Clause, FilterQuery, Phrase, Query, Resolution};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Vocabularies shared by the data and the queries.

const NOW: &str = "2026-11-20T14:00:00Z";
/// Thirty days after `TIMES[1]` and four hours, before thirty days after `TIMES[2]`.
const LATER: &str = "2026-12-19T12:00:00Z";
/// Expired, older, newer, newest.
const TIMES: [&str; 4] = [
    "2026-09-01T00:00:00Z",
    "2026-11-19T08:00:00Z",
    "2026-11-20T10:00:00Z",
    "2026-11-20T12:00:00Z",
];
const ADDRESSES: [&str; 10] = [
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
const PORTS: [u16; 6] = [22, 80, 443, 8080, 25, 993];
const PROTOCOLS: [&str; 7] = ["ssh", "http", "https", "imaps", "smtp", "redis", "ftp"];
const V6_PROTOCOLS: [&str; 3] = ["ssh", "http", "https"];
const TITLES: [&str; 5] = [
    "OpenSSH",
    "nginx",
    "Apache HTTP Server",
    "Apache Tomcat",
    "nginx Plus",
];
const CPES: [&str; 3] = [
    "cpe:2.3:a:openbsd:openssh:9.6:*:*:*:*:*:*:*",
    "cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*",
    "cpe:2.3:a:apache:http_server:2.4.58:*:*:*:*:*:*:*",
];
const CVES: [&str; 3] = ["CVE-2023-48795", "CVE-2021-44228", "CVE-2023-44487"];
const SCORES: [&str; 6] = ["0.0", "3.9", "5.9", "7.0", "9.8", "10.0"];
const SANS: [&str; 4] = ["www.a.example", "a.example", "*.b.example", "x.b.example"];
const COMMON_NAMES: [&str; 3] = ["Mail.A.Example.", "www.a.example", "Example Root CA"];
const ORGS: [&str; 5] = [
    "Northwind Traders Ltd",
    "Example Corp., Ltd",
    "Contoso Example",
    "NORTHWIND-NET",
    "Ltd Example Corp",
];
const ASNS: [u32; 3] = [64512, 64513, 64500];
const COUNTRIES: [&str; 3] = ["DE", "FR", "US"];
const POSITIONS: [(f64, f64); 5] = [
    (48.1374, 11.5755),
    (48.2, 11.6),
    (40.7128, -74.006),
    (-33.8688, 151.2093),
    (85.2, 179.99),
];
const NAMES: [&str; 5] = [
    "a.example",
    "www.a.example",
    "mail.a.example",
    "b.example",
    "x.b.example",
];

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Random observation lines.

fn pick<T: Copy + std::fmt::Debug + 'static>(values: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(values)
}

fn text(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    pick(values).prop_map(|s| format!("{s:?}"))
}

/// `,"name":value` when present.
fn member(name: &str, value: Option<String>) -> String {
    value.map_or_else(String::new, |v| format!(r#","{name}":{v}"#))
}

/// An object from its members (each with a leading comma), or nothing when none is present.
fn object(members: &[String]) -> Option<String> {
    let joined: String = members.concat();
    joined.strip_prefix(',').map(|inner| format!("{{{inner}}}"))
}

fn attribution() -> impl Strategy<Value = Option<String>> {
    proptest::option::of((pick(&ASNS), proptest::option::of(text(&ORGS)))).prop_map(|a| {
        a.and_then(|(asn, org)| object(&[format!(r#","asn":{asn}"#), member("organization", org)]))
    })
}

/// A host block (`,"host":{...}`), maybe empty; `v4` allows reverse DNS.
fn host_block(v4: bool) -> impl Strategy<Value = String> {
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

fn captured() -> impl Strategy<Value = (String, String, String, String)> {
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
fn service_line() -> impl Strategy<Value = String> {
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

fn domain_line() -> impl Strategy<Value = String> {
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

fn lines() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(prop_oneof![6 => service_line(), 1 => domain_line()], 0..40)
}

fn read(lines: &[String]) -> Vec<Observation> {
    let mut reader = ObservationReader::new(now());
    lines
        .iter()
        .filter_map(|l| reader.read_line(l).unwrap_or_else(|e| panic!("{e}\n{l}")))
        .collect()
}

fn both(config: IndexConfig, lines: &[String]) -> (ReferenceIndex, EmbeddedIndex) {
    let mut reference = ReferenceIndex::new(config);
    for obs in read(lines) {
        reference.apply(&obs);
    }
    let engine = EmbeddedIndex::build(
        config,
        now(),
        reference.records().cloned(),
        reference.domain_scans().clone(),
    )
    .unwrap();
    (reference, engine)
}

// ---------------------------------------------------------------------------------------------
// Random queries.

fn phrase(values: &'static [&'static str]) -> impl Strategy<Value = Phrase> {
    pick(values).prop_map(|p| Phrase::new(p).unwrap())
}

fn clause() -> impl Strategy<Value = Clause> {
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

fn filter() -> impl Strategy<Value = FilterQuery> {
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
fn query() -> impl Strategy<Value = (Query, Vec<IpAddr>)> {
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
fn same_search(
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

fn same_detail(
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

fn config(max_host_only_results: u64) -> IndexConfig {
    IndexConfig {
        max_host_only_results,
        ..IndexConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_answer_equals_the_reference(
        lines in lines(),
        max in 0..8u64,
        queries in queries(),
    ) {
        let (reference, engine) = both(config(max), &lines);
        same_answers(now(), &reference, &engine, &queries)?;
    }

    #[test]
    fn host_details_and_domain_scans_equal_the_reference(
        lines in lines(),
        limit in 1..4usize,
    ) {
        let (reference, engine) = both(IndexConfig::default(), &lines);
        same_details(now(), &reference, &engine, limit)?;
    }
}

type Queries = Vec<((Query, Vec<IpAddr>), Option<&'static str>, usize)>;

fn queries() -> impl Strategy<Value = Queries> {
    proptest::collection::vec(
        (query(), proptest::option::of(pick(&ADDRESSES)), 1..5usize),
        1..12,
    )
}

/// Every page, count, exposure and facets answer of `queries` equal in both.
fn same_answers(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    queries: &Queries,
) -> Result<(), TestCaseError> {
    for ((query, resolved), after, limit) in queries {
        same_search(at, reference, engine, query, resolved, None, *limit)?;
        same_search(
            at,
            reference,
            engine,
            query,
            resolved,
            after.map(ip),
            *limit,
        )?;
        prop_assert_eq!(
            engine.count(query, at),
            reference.count(query, at),
            "count {}",
            query
        );
        for resolution in [Resolution::Global, Resolution::Regional, Resolution::Local] {
            prop_assert_eq!(
                engine.exposure(query, resolution, at),
                reference.exposure(query, resolution, at),
                "exposure {} {}",
                query,
                resolution
            );
        }
        if let Query::Filter(f) = query {
            prop_assert_eq!(
                engine.facets(f, at),
                reference.facets(f, at),
                "facets {}",
                query
            );
        }
    }
    Ok(())
}

/// Host details (every page) and domain-scan lookups of every address and name equal.
fn same_details(
    at: Timestamp,
    reference: &ReferenceIndex,
    engine: &dyn ScanIndex,
    limit: usize,
) -> Result<(), TestCaseError> {
    for address in ADDRESSES.iter().copied().chain(["240.9.9.9"]) {
        let address = ip(address);
        same_detail(at, reference, engine, address, limit)?;
        prop_assert_eq!(
            engine.domain_scans_of_address(address),
            reference.domain_scans_of_address(address)
        );
    }
    for garbage in [
        "",
        "hd1.x.22.ssh",
        "hd1.00000000000000000000000000000000.22.ssh",
    ] {
        prop_assert_eq!(
            engine.host_detail(ip("240.0.0.1"), Some(garbage), 2, at),
            reference.host_detail(ip("240.0.0.1"), Some(garbage), 2, at)
        );
    }
    for name in [
        "example",
        "a.example",
        "www.a.example",
        "b.example",
        "x.b.example",
        "c.example",
    ] {
        let name = DomainName::parse(name).unwrap();
        prop_assert_eq!(
            engine.domain_scans_of_name(&name),
            reference.domain_scans_of_name(&name)
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The layered view: a base and a delta of later batches.

/// A fresh directory per case, removed on drop.
struct CaseDir(std::path::PathBuf);

impl CaseDir {
    fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("periscope-layered-{}-{n}", std::process::id()));
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

/// A `LiveIndex` whose base holds `base` (a full rebuild at `now()`) and whose delta holds
/// `later` (each batch applied, and the delta refreshed at `at` after it when its flag says
/// so, then refreshed once more at `at`), with the reference fed everything; checks that the
/// base was not rebuilt. With `at` later than `now()`, services the window leaves between
/// the two go through the delta.
fn layered(
    dir: &CaseDir,
    config: IndexConfig,
    base: &[String],
    later: &[(Vec<String>, bool)],
    at: Timestamp,
) -> (ReferenceIndex, LiveIndex) {
    let (live, _) = LiveIndex::open(&dir.0.join("scan.redb"), config, now()).unwrap();
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

fn batches() -> impl Strategy<Value = Vec<(Vec<String>, bool)>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(prop_oneof![5 => service_line(), 1 => domain_line()], 1..12),
            any::<bool>(),
        ),
        1..4,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_base_and_delta_answer_as_the_reference_of_all_batches(
        base in lines(),
        later in batches(),
        max in 0..8u64,
        queries in queries(),
        limit in 1..4usize,
        later_day in any::<bool>(),
    ) {
        let dir = CaseDir::new();
        // A month later, services observed at TIMES[1] have left the window, TIMES[2] not.
        let at = if later_day { Timestamp::parse(LATER).unwrap() } else { now() };
        let (reference, live) = layered(&dir, config(max), &base, &later, at);
        let view = live.current();
        same_answers(at, &reference, view.as_ref(), &queries)?;
        same_details(at, &reference, view.as_ref(), limit)?;
        // The live index answers through the same view.
        same_answers(at, &reference, &live, &queries)?;
    }
}

// ---------------------------------------------------------------------------------------------
// The engine's own structures.

fn service(address: &str, port: u16, protocol: &str, at: &str, host: &str) -> String {
    format!(
        r#"{{"kind":"service","ip":"{address}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"completed"{host}}}"#
    )
}

/// The hosts (in order) a filter query matches in the engine, checked against the reference.
fn check(lines: &[String], cases: &[(&str, &[&str])]) {
    let (reference, engine) = both(IndexConfig::default(), lines);
    for (text, want) in cases {
        let query: Query = text.parse().unwrap();
        let req = SearchRequest {
            query: &query,
            after: None,
            limit: 100,
            resolved: &[],
            now: now(),
        };
        let SearchOutcome::Page(page) = engine.search(&req).unwrap() else {
            panic!("{text}: too broad")
        };
        let got: Vec<String> = page.hosts.iter().map(|h| h.host.ip.to_string()).collect();
        assert_eq!(got, *want, "{text}");
        assert_eq!(engine.search(&req), reference.search(&req), "{text}");
        assert_eq!(
            engine.count(&query, now()).unwrap().value,
            want.len() as u64
        );
    }
}

#[test]
fn postings_answer_phrases_names_and_ranges() {
    let org = |o: &str| {
        format!(r#","host":{{"provider":{{"organization":"{o}"}},"domain":"shop.a.example"}}"#)
    };
    let lines = vec![
        service("240.0.0.1", 22, "ssh", TIMES[2], &org("Example Corp Ltd")),
        service("240.0.0.2", 22, "ssh", TIMES[2], &org("Corp Example")),
        service(
            "240.0.0.3",
            443,
            "https",
            TIMES[2],
            &org("The Example Big Corp"),
        ),
        service("3fff::1", 443, "https", TIMES[2], ""),
        // Expired: not a host.
        service("240.0.0.4", 22, "ssh", TIMES[0], &org("Example Corp")),
    ];
    check(
        &lines,
        &[
            (r#"organization:"example corp""#, &["240.0.0.1"]),
            (
                r#"organization:"corp""#,
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            (r#"organization:"big""#, &["240.0.0.3"]),
            ("port:443", &["240.0.0.3", "3fff::1"]),
            ("port:22", &["240.0.0.1", "240.0.0.2"]),
            ("domain:a.example", &["240.0.0.1", "240.0.0.2", "240.0.0.3"]),
            (
                "domain:shop.a.example",
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            ("domain:hop.a.example", &[]),
            (
                "cidr:240.0.0.0/30",
                &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
            ),
            ("240.0.0.4", &[]),
            ("3fff::1", &["3fff::1"]),
        ],
    );
}

#[test]
fn retention_is_applied_at_build_time() {
    let lines = vec![
        service("240.0.0.1", 22, "ssh", TIMES[0], ""),
        service("240.0.0.1", 80, "http", TIMES[2], ""),
        service("240.0.0.2", 22, "ssh", TIMES[0], ""),
    ];
    let (_, engine) = both(IndexConfig::default(), &lines);
    let stats = engine.stats();
    assert_eq!((stats.hosts, stats.services), (1, 1));
    assert_eq!(engine.built_at(), now());
    let detail = engine
        .host_detail(ip("240.0.0.1"), None, 20, now())
        .unwrap()
        .unwrap();
    assert_eq!(detail.host.services.len(), 1);
    assert_eq!(
        engine
            .host_detail(ip("240.0.0.2"), None, 20, now())
            .unwrap(),
        None
    );
}

#[test]
fn records_out_of_host_order_are_refused() {
    let records = [ip("3fff::1"), ip("240.0.0.1")].map(HostRecord::new);
    let err = EmbeddedIndex::build(IndexConfig::default(), now(), records, Default::default())
        .unwrap_err();
    assert!(
        matches!(err, BuildError::OutOfOrder { ip: a } if a == ip("240.0.0.1")),
        "{err}"
    );
    let twice = [ip("240.0.0.1"), ip("240.0.0.1")].map(HostRecord::new);
    assert!(
        EmbeddedIndex::build(IndexConfig::default(), now(), twice, Default::default()).is_err()
    );
}

#[test]
fn an_index_can_be_shared_between_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<EmbeddedIndex>();
}

#[test]
fn builds_from_the_durable_store() {
    let dir = std::env::temp_dir().join(format!("periscope-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.redb");
    let _ = std::fs::remove_file(&path);
    let lines = vec![
        service("240.0.0.2", 22, "ssh", TIMES[2], r#","host":{"location":{"country_code":"DE"}}"#),
        service("240.0.0.1", 443, "https", TIMES[3], ""),
        // Expired at `now`: stored, but neither matched nor shown.
        service("240.0.0.1", 80, "http", TIMES[0], ""),
        service("240.0.0.3", 80, "http", TIMES[0], ""),
        service("3fff::1", 22, "ssh", TIMES[1], ""),
        r#"{"kind":"domain","name":"a.example","addresses":["240.0.0.1"],"observed_at":"2026-11-20T10:00:00Z"}"#.to_owned(),
    ];
    let observations = read(&lines);
    let mut store = periscope_index::durable::DurableStore::open(&path).unwrap();
    store.apply_batch(&observations).unwrap();
    let engine = EmbeddedIndex::from_store(&store, IndexConfig::default(), now()).unwrap();
    // A batch committed after the index was opened is not seen by it: it shows the snapshot
    // it was built from, not records that changed under it.
    let later = read(&[
        service("240.0.0.1", 8443, "https", TIMES[3], ""),
        service("240.0.0.9", 443, "https", TIMES[3], ""),
    ]);
    store.apply_batch(&later).unwrap();
    let (reference, from_records) = both(IndexConfig::default(), &lines);
    for address in ["240.0.0.1", "240.0.0.3", "3fff::1", "240.0.0.9"] {
        let detail = engine.host_detail(ip(address), None, 20, now());
        assert_eq!(
            detail,
            reference.host_detail(ip(address), None, 20, now()),
            "{address}"
        );
        assert_eq!(
            detail,
            from_records.host_detail(ip(address), None, 20, now()),
            "{address}"
        );
    }
    for text in [
        "country:DE",
        "port:443",
        "port:80",
        "port:8443",
        "domain:a.example",
        "cidr:240.0.0.0/24",
        "240.0.0.1",
    ] {
        let query: Query = text.parse().unwrap();
        let req = SearchRequest {
            query: &query,
            after: None,
            limit: 10,
            resolved: &[],
            now: now(),
        };
        assert_eq!(engine.search(&req), reference.search(&req), "{text}");
        assert_eq!(engine.search(&req), from_records.search(&req), "{text}");
    }
    drop(engine);
    let reopened = EmbeddedIndex::from_store(&store, IndexConfig::default(), now()).unwrap();
    // The index outlives the store handle it was opened through, and still reads records.
    drop(store);
    let query: Query = "port:8443".parse().unwrap();
    assert_eq!(reopened.count(&query, now()).unwrap().value, 1);
    let detail = reopened
        .host_detail(ip("240.0.0.1"), None, 20, now())
        .unwrap();
    assert_eq!(detail.map(|d| d.host.services.len()), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------------------
// Measurement.

/// Resident memory of this process, in bytes.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn p50(mut run: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..41)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
fn measure_200k_hosts() {
    let as_of = now();
    let cfg = periscope_synth::SynthConfig {
        hosts: 200_000,
        seed: 7,
        as_of,
    };
    let mut loader = periscope_index::LineLoader::new(IndexConfig::default(), as_of);
    let t = Instant::now();
    periscope_synth::write_dataset(&cfg, &mut loader).unwrap();
    let reference = loader.into_index();
    eprintln!("generated and merged in {:.1?}", t.elapsed());

    let before = resident_bytes();
    let t = Instant::now();
    let engine = EmbeddedIndex::build(
        IndexConfig::default(),
        as_of,
        reference.records().cloned(),
        reference.domain_scans().clone(),
    )
    .unwrap();
    let build = t.elapsed();
    let grown = resident_bytes().saturating_sub(before);
    let stats = engine.stats();
    eprintln!(
        "built {} hosts, {} services in {build:.1?}; resident growth {} B/host (records + index); \
         index alone ~{} B/host",
        stats.hosts,
        stats.services,
        grown / stats.hosts.max(1),
        stats.index_bytes / stats.hosts.max(1)
    );

    // Values from the data itself: a host in the middle.
    let middle = reference.records().nth(100_000).unwrap();
    let rec = middle.clone();
    let address = rec.ip;
    let IpAddr::V4(v4) = address else {
        panic!("the middle host is IPv4")
    };
    let network = std::net::Ipv4Addr::from(u32::from(v4) & 0xffff_ff00);
    let enrichment = &rec.enrichment.as_ref().unwrap().0;
    let attribution = [
        &enrichment.asn.research,
        &enrichment.asn.bgp,
        &enrichment.asn.network,
    ]
    .into_iter()
    .flatten()
    .next()
    .unwrap();
    let word = attribution
        .organization
        .as_deref()
        .and_then(|o| o.split_whitespace().next())
        .unwrap_or("Example")
        .to_owned();
    let queries: Vec<(String, Query)> = [
        format!("{address}"),
        format!("cidr:{network}/24"),
        format!("asn:{}", attribution.asn),
        "port:443".to_owned(),
        "protocol:ssh country:DE".to_owned(),
        "port:443 protocol:https country:US".to_owned(),
        format!("organization:\"{word}\""),
    ]
    .into_iter()
    .map(|t| {
        let q: Query = t.parse().unwrap();
        (t, q)
    })
    .collect();
    for (text, query) in &queries {
        let req = SearchRequest {
            query,
            after: None,
            limit: 20,
            resolved: &[],
            now: as_of,
        };
        let matching = engine.count(query, as_of).unwrap().value;
        let took = p50(|| {
            engine.search(&req).unwrap();
        });
        eprintln!("search {text:<40} p50 {took:>10.1?}  ({matching} hosts)");
    }
    let port443: Query = "port:443".parse().unwrap();
    let took = p50(|| {
        engine.count(&port443, as_of).unwrap();
    });
    eprintln!("count  port:443{:<32} p50 {took:>10.1?}", "");
    let f = port443.as_filter().unwrap().clone();
    let took = p50(|| {
        engine.facets(&f, as_of).unwrap();
    });
    eprintln!("facets port:443{:<32} p50 {took:>10.1?}", "");
    let took = p50(|| {
        engine
            .exposure(&port443, Resolution::Global, as_of)
            .unwrap();
    });
    eprintln!("exposure port:443 global{:<23} p50 {took:>10.1?}", "");
    let t = Instant::now();
    let want = reference.facets(&f, as_of).unwrap();
    eprintln!("(reference facets port:443: {:.1?})", t.elapsed());
    assert_eq!(engine.facets(&f, as_of).unwrap(), want);
}
