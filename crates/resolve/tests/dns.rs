//! `DnsResolver` against a real DNS server on 127.0.0.1: every outcome, end to end.
//!
//! Each test starts its own server (tests/support) on a random loopback port and points
//! `DnsResolver::with_servers` at it, so hickory never reads the system configuration and
//! nothing leaves the machine. Runtimes are multi-threaded, as in the service.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use periscope_model::DomainName;
use periscope_resolve::{DnsResolver, DomainResolution, Resolver, SetupError};
use support::{DnsServer, Entry, Reply, Zone};

/// The budget of the tests that wait for a silent server.
const SHORT: Duration = Duration::from_millis(300);
/// The budget of the others: answers come at once, this only bounds a broken test.
const LONG: Duration = Duration::from_secs(5);

const ZONE: &str = "resolve-test.example";

fn name(label: &str) -> DomainName {
    DomainName::parse(&format!("{label}.{ZONE}")).unwrap()
}

fn resolved(list: &[&str]) -> DomainResolution {
    DomainResolution::Resolved(list.iter().map(|s| s.parse().unwrap()).collect())
}

/// A zone of `(label, entry)` rows under [`ZONE`].
fn zone(rows: &[(&str, Entry)]) -> Zone {
    rows.iter().fold(Zone::default(), |zone, (label, entry)| {
        zone.with(&format!("{label}.{ZONE}"), entry.clone())
    })
}

/// Resolves every label and compares the outcome.
async fn check(resolver: &DnsResolver, rows: &[(&str, DomainResolution)]) {
    for (label, expect) in rows {
        let outcome = resolver.resolve(&name(label)).await;
        assert_eq!(&outcome, expect, "{label}");
    }
}

async fn start(rows: &[(&str, Entry)], timeout: Duration) -> (DnsServer, DnsResolver) {
    let server = DnsServer::start(zone(rows)).await;
    let resolver = DnsResolver::with_servers(&[server.addr], timeout).unwrap();
    (server, resolver)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolved_keeps_only_public_addresses_in_host_order() {
    let rows = [
        ("a-only", Entry::records(&["8.8.8.8", "1.1.1.1"])),
        ("aaaa-only", Entry::records(&["2606:4700:4700::1111"])),
        (
            "both",
            Entry::records(&["2a00:1450::2", "9.9.9.9", "2a00:1450::1", "1.0.0.1"]),
        ),
        (
            "mixed",
            Entry::records(&[
                "10.0.0.1",
                "9.9.9.9",
                "100.64.1.1",
                "192.168.1.1",
                "127.0.0.1",
                "fd00::1",
                "2a00:1450::1",
                "fe80::1",
                "::1",
            ]),
        ),
        // An AAAA record holding an IPv4-mapped address counts as that IPv4 address.
        (
            "mapped",
            Entry::split(
                Reply::Records(vec![]),
                Reply::Records(vec!["::ffff:1.0.0.1".parse().unwrap()]),
            ),
        ),
        ("_underscore", Entry::records(&["1.1.1.1"])),
    ];
    let (_server, resolver) = start(&rows, LONG).await;
    check(
        &resolver,
        &[
            ("a-only", resolved(&["1.1.1.1", "8.8.8.8"])),
            ("aaaa-only", resolved(&["2606:4700:4700::1111"])),
            (
                "both",
                resolved(&["1.0.0.1", "9.9.9.9", "2a00:1450::1", "2a00:1450::2"]),
            ),
            ("mixed", resolved(&["9.9.9.9", "2a00:1450::1"])),
            ("mapped", resolved(&["1.0.0.1"])),
            ("_underscore", resolved(&["1.1.1.1"])),
        ],
    )
    .await;
    let outcome = resolver.resolve(&name("mixed")).await;
    assert_eq!((outcome.status(), outcome.address_count()), ("resolved", 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_answer_is_fetched_over_tcp() {
    let many: Vec<String> = (1..=60).map(|i| format!("1.0.{i}.1")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut entry = Entry::records(&many);
    entry.truncate_udp = true;
    let (server, resolver) = start(&[("many", entry)], LONG).await;
    let outcome = resolver.resolve(&name("many")).await;
    assert_eq!(outcome.status(), "resolved");
    assert_eq!(outcome.address_count(), 60);
    assert!(outcome.addresses().is_sorted());
    assert!(server.tcp_questions.load(Ordering::SeqCst) >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_for_nxdomain_and_for_no_address_records() {
    let rows = [
        ("nxdomain", Entry::both(Reply::NxDomain)),
        ("empty", Entry::records(&[])),
    ];
    let (_server, resolver) = start(&rows, LONG).await;
    check(
        &resolver,
        &[
            ("nxdomain", DomainResolution::NotFound),
            ("empty", DomainResolution::NotFound),
            // Not in the zone at all: the server answers NXDOMAIN.
            ("unknown", DomainResolution::NotFound),
        ],
    )
    .await;
    assert_eq!(resolver.resolve(&name("empty")).await.status(), "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_for_servfail_and_refused() {
    let rows = [
        ("servfail", Entry::both(Reply::ServFail)),
        ("refused", Entry::both(Reply::Refused)),
        (
            "servfail-a-empty-aaaa",
            Entry::split(Reply::ServFail, Reply::Records(vec![])),
        ),
        // What came back is used even when the other question failed.
        (
            "servfail-a-public-aaaa",
            Entry::split(
                Reply::ServFail,
                Reply::Records(vec!["2a00::1".parse().unwrap()]),
            ),
        ),
    ];
    let (_server, resolver) = start(&rows, LONG).await;
    check(
        &resolver,
        &[
            ("servfail", DomainResolution::Failed),
            ("refused", DomainResolution::Failed),
            ("servfail-a-empty-aaaa", DomainResolution::Failed),
            ("servfail-a-public-aaaa", resolved(&["2a00::1"])),
        ],
    )
    .await;
    assert_eq!(resolver.resolve(&name("refused")).await.status(), "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_public_address_for_special_purpose_answers_only() {
    let rows = [
        (
            "private",
            Entry::records(&["10.1.2.3", "172.16.0.1", "192.168.0.1", "fd12::1"]),
        ),
        ("loopback", Entry::records(&["127.0.0.1", "::1"])),
        ("link-local", Entry::records(&["169.254.1.1", "fe80::1"])),
        ("cgnat", Entry::records(&["100.64.0.1", "100.127.255.255"])),
        (
            "benchmarking",
            Entry::records(&["198.18.0.1", "198.19.255.255", "2001:2::1"]),
        ),
        (
            "documentation",
            Entry::records(&["192.0.2.1", "198.51.100.1", "203.0.113.1", "2001:db8::1"]),
        ),
        // The synthetic demo data's address space: DNS can never point into it.
        ("demo", Entry::records(&["240.0.0.1", "3fff::1"])),
    ];
    let (_server, resolver) = start(&rows, LONG).await;
    let expect: Vec<_> = rows
        .iter()
        .map(|(label, _)| (*label, DomainResolution::NoPublicAddress))
        .collect();
    check(&resolver, &expect).await;
    let outcome = resolver.resolve(&name("private")).await;
    assert_eq!(
        (outcome.status(), outcome.address_count()),
        ("no_public_address", 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_within_the_budget() {
    let public = Reply::Records(vec!["1.1.1.1".parse().unwrap()]);
    let rows = [
        ("silent", Entry::both(Reply::Silent)),
        (
            "empty-a-silent-aaaa",
            Entry::split(Reply::Records(vec![]), Reply::Silent),
        ),
        ("public-a-silent-aaaa", Entry::split(public, Reply::Silent)),
        (
            "nxdomain-a-silent-aaaa",
            Entry::split(Reply::NxDomain, Reply::Silent),
        ),
        (
            "servfail-a-silent-aaaa",
            Entry::split(Reply::ServFail, Reply::Silent),
        ),
    ];
    let (server, resolver) = start(&rows, SHORT).await;
    for (label, expect) in [
        ("silent", DomainResolution::TimedOut),
        ("empty-a-silent-aaaa", DomainResolution::TimedOut),
        ("public-a-silent-aaaa", resolved(&["1.1.1.1"])),
        ("nxdomain-a-silent-aaaa", DomainResolution::NotFound),
        ("servfail-a-silent-aaaa", DomainResolution::Failed),
    ] {
        let started = Instant::now();
        let outcome = resolver.resolve(&name(label)).await;
        let took = started.elapsed();
        assert_eq!(outcome, expect, "{label}");
        // The budget is spent waiting for the silent question, and not much more: hickory
        // neither retries past the deadline nor turns to other servers.
        assert!(
            took >= SHORT - Duration::from_millis(20),
            "{label}: {took:?}"
        );
        assert!(
            took < SHORT + Duration::from_millis(1000),
            "{label}: {took:?}"
        );
    }
    assert_eq!(
        resolver.resolve(&name("silent")).await.status(),
        "timed_out"
    );
    assert!(server.udp_questions.load(Ordering::SeqCst) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_fails_or_times_out_within_the_budget() {
    // Bind and drop: the port is then (almost certainly) closed.
    let addr = {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.local_addr().unwrap()
    };
    let resolver = DnsResolver::with_servers(&[addr], SHORT).unwrap();
    let started = Instant::now();
    let outcome = resolver.resolve(&name("anything")).await;
    assert!(
        matches!(
            outcome,
            DomainResolution::Failed | DomainResolution::TimedOut
        ),
        "{outcome:?}"
    );
    assert!(started.elapsed() < SHORT + Duration::from_millis(1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_server_answers_when_the_first_is_silent() {
    let silent = DnsServer::start(zone(&[("name", Entry::both(Reply::Silent))])).await;
    let answering = DnsServer::start(zone(&[("name", Entry::records(&["1.1.1.1"]))])).await;
    let resolver =
        DnsResolver::with_servers(&[silent.addr, answering.addr], Duration::from_secs(2)).unwrap();
    assert_eq!(resolver.servers(), &[silent.addr, answering.addr]);
    assert_eq!(
        resolver.resolve(&name("name")).await,
        resolved(&["1.1.1.1"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_searches_share_one_resolver() {
    let rows: Vec<(String, Entry)> = (1..=24u8)
        .map(|i| (format!("host{i}"), Entry::records(&[&format!("1.2.3.{i}")])))
        .collect();
    let rows: Vec<(&str, Entry)> = rows.iter().map(|(l, e)| (l.as_str(), e.clone())).collect();
    let (_server, resolver) = start(&rows, LONG).await;
    let resolver: Arc<dyn Resolver> = Arc::new(resolver);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 1..=24u8 {
        let resolver = resolver.clone();
        tasks.spawn(async move {
            let outcome = resolver.resolve(&name(&format!("host{i}"))).await;
            (i, outcome)
        });
    }
    let mut seen = 0;
    while let Some(joined) = tasks.join_next().await {
        let (i, outcome) = joined.unwrap();
        let expect: IpAddr = format!("1.2.3.{i}").parse().unwrap();
        assert_eq!(outcome.addresses(), &[expect]);
        seen += 1;
    }
    assert_eq!(seen, 24);
}

#[test]
fn setup_errors_are_clear() {
    let no_servers: &[SocketAddr] = &[];
    assert!(matches!(
        DnsResolver::with_servers(no_servers, LONG),
        Err(SetupError::NoServers)
    ));
    let server: SocketAddr = "127.0.0.1:53".parse().unwrap();
    assert!(matches!(
        DnsResolver::with_servers(&[server], Duration::ZERO),
        Err(SetupError::ZeroTimeout)
    ));
}

/// A scratch file, removed when dropped.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "periscope-resolve-{}-{tag}.conf",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        Self(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn resolv_conf_servers_are_read_and_bad_files_are_named() {
    let good = TempFile::new(
        "good",
        "search corp.example\nnameserver 127.0.0.53\nnameserver ::1 # v6\n\
         nameserver 127.0.0.54\nnameserver 127.0.0.55\noptions timeout:30 attempts:5\n",
    );
    let resolver = DnsResolver::from_resolv_conf(&good.0, Duration::from_millis(1500)).unwrap();
    let expect: Vec<SocketAddr> = ["127.0.0.53:53", "[::1]:53", "127.0.0.54:53"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(resolver.servers(), expect.as_slice());
    assert_eq!(resolver.timeout(), Duration::from_millis(1500));

    let missing = std::env::temp_dir().join("periscope-resolve-missing/resolv.conf");
    let error = DnsResolver::from_resolv_conf(&missing, LONG).unwrap_err();
    assert!(matches!(error, SetupError::ReadConfig { .. }));
    assert!(
        error.to_string().contains(&missing.display().to_string()),
        "{error}"
    );

    let empty = TempFile::new("empty", "search corp.example\n");
    let error = DnsResolver::from_resolv_conf(&empty.0, LONG).unwrap_err();
    assert!(matches!(error, SetupError::NoNameserver { .. }), "{error}");

    let bad = TempFile::new(
        "bad",
        "nameserver 127.0.0.53\nnameserver dns.corp.example\n",
    );
    let error = DnsResolver::from_resolv_conf(&bad.0, LONG).unwrap_err();
    assert!(
        matches!(&error, SetupError::BadNameserver { line: 2, value, .. } if value == "dns.corp.example"),
        "{error}"
    );
    assert!(error.to_string().contains(":2:"), "{error}");
}

#[test]
fn the_system_configuration_is_read_or_named() {
    // Whatever this machine has: either servers are read, or the error names the file.
    match DnsResolver::system() {
        Ok(resolver) => {
            assert!(!resolver.servers().is_empty());
            assert_eq!(resolver.timeout(), periscope_resolve::DEFAULT_TIMEOUT);
        }
        Err(error) => assert!(error.to_string().contains("/etc/resolv.conf"), "{error}"),
    }
}
