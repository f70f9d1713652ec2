//! The reference engine against `docs/search-semantics.md`, rule by rule.
//!
//! Small datasets are written as observation lines (read by the real `ObservationReader`), and
//! every expectation below was derived by hand from those lines: the comment on each host of
//! the main fixture says what it is there to test. Tests are rows of cases driven by one
//! helper per area (`check` for matching hosts, `org`/`domain_matches` for evidence, ...).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;

use periscope_index::api::{
    AsnMatch, AsnSource, DomainMatch, DomainMatchSource, FacetField, FacetStatus, HostResult,
    IndexError, OrganizationMatch, OrganizationSource, Relation, ScanIndex, SearchOutcome,
    SearchPage, SearchRequest,
};
use periscope_index::reference::tile_of;
use periscope_index::{IndexConfig, ReferenceIndex};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::record::{
    Certificate, DomainEntry, DomainSource, Evidence, Host, Location, Network, Position, Service,
    Ssh, Summary, Tls, TlsEvidence, VulnerabilityView, Whois,
};
use periscope_model::{Asn, CountryCode, Cvss, DomainName, IpCidr, Port, ProtocolToken, Timestamp};
use periscope_query::{Query, Resolution};

// ---------------------------------------------------------------------------------------------
// Building datasets.

const NOW: &str = "2026-11-20T14:00:00Z";
/// The day before: older than T1, still within the retention.
const T0: &str = "2026-11-19T08:00:00Z";
const T1: &str = "2026-11-20T10:00:00Z";
const T2: &str = "2026-11-20T12:00:00Z";
/// More than 30 days before NOW: expired.
const OLD: &str = "2026-09-01T00:00:00Z";

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

fn ts(s: &str) -> Timestamp {
    Timestamp::parse(s).unwrap()
}

/// A service line; `rest` holds further members, each preceded by a comma.
fn line(ip: &str, port: u16, protocol: &str, at: &str, status: &str, rest: &str) -> String {
    format!(
        r#"{{"kind":"service","ip":"{ip}","port":{port},"transport":"tcp","protocol":"{protocol}","observed_at":"{at}","status":"{status}"{rest}}}"#
    )
}

/// A completed service line observed at T1.
fn svc(ip: &str, port: u16, protocol: &str, rest: &str) -> String {
    line(ip, port, protocol, T1, "completed", rest)
}

fn domain_line(name: &str, addresses: &[&str], at: &str) -> String {
    let addresses: Vec<String> = addresses.iter().map(|a| format!("{a:?}")).collect();
    format!(
        r#"{{"kind":"domain","name":"{name}","addresses":[{}],"observed_at":"{at}"}}"#,
        addresses.join(",")
    )
}

fn read(lines: &[String]) -> Vec<Observation> {
    let mut reader = ObservationReader::new(now());
    lines
        .iter()
        .filter_map(|l| reader.read_line(l).unwrap_or_else(|e| panic!("{e}\n{l}")))
        .collect()
}

fn index_of(config: IndexConfig, observations: &[Observation]) -> ReferenceIndex {
    let mut index = ReferenceIndex::new(config);
    for obs in observations {
        index.apply(obs);
    }
    index
}

const H1_HOST: &str = r#""asn":{"research":{"asn":64512,"organization":"Northwind Traders Ltd"},"bgp":{"asn":64513,"organization":"NORTHWIND-AS"},"network":{"asn":64512,"organization":"Example Transit GmbH"}},"provider":{"organization":"Example Hosting","as_organization":"Example Transit GmbH","isp":"Example ISP"},"whois":{"description":"Northwind Traders web hosting","netname":"NORTHWIND-NET","organization":"Northwind Traders Ltd","cidr":"240.0.0.0/24","registry":"ripencc","country_code":"DE"},"dns_name":"www.northwind.example","domain":"northwind.example""#;

const FINGERPRINT: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// The main fixture. Hosts:
/// - H1 240.0.0.1: the full host. 22/ssh (T1, location Munich with a position, reverse DNS)
///   and 443/https (T2, location block Berlin without a position, no reverse DNS): location
///   names from T2, position from T1. ASN 64512 research and network, 64513 BGP.
/// - H2 240.0.0.2: ssh on 22, http on 80 (same-service rule); location DE at T1, FR at T2; a
///   newer failed ssh observation that changes nothing; listed by a domain scan.
/// - H3 240.0.0.3: http on 22; ASN 64512 only as network attribution; stored DNS name under
///   northwind.example; http exchange not complete (evidence withheld).
/// - H4 240.0.0.4: certificate-name exclusions: partial https, https with error text, imaps
///   whose common name differs in case and has a trailing dot; a summary without a score.
/// - H5 240.0.0.5: vulnerabilities (CVSS 10.0, exploit yes; ftp with no score, exploit no;
///   telnet without a summary); provider "Contoso Example Corp., Ltd"; look-alike names.
/// - H6 240.0.0.6: Apache Tomcat, CVSS exactly 7.0; look-alike reverse DNS; an older domain
///   scan listed it.
/// - H7 240.0.1.7: certificate organisations on smtp 25 and smtps 465, and on redis (not a
///   certificate-organisation family).
/// - 240.0.0.8 failed only, 240.0.0.9 expired only, 240.0.0.10 domain scans only: not hosts.
/// - H11 240.0.0.11: seven services (preview bound), JP.
/// - H12 240.0.0.12: many names (domains caps).
/// - V1 3fff::1: https with a certificate name; ASN 64500 research and BGP with the same
///   organisation; stored domain northwind.example.
/// - V2 3fff::2: ssh, listed by a domain scan; a TLS certificate is injected into its ssh
///   observation (the reader refuses one) to see non-TLS protocols excluded.
fn main_lines() -> Vec<String> {
    let h1_ssh_host = format!(
        r#","host":{{"location":{{"continent":"Europe","country_code":"DE","country_name":"Germany","city":"Munich","latitude":48.1374,"longitude":11.5755,"accuracy_radius_km":20}},{H1_HOST},"reverse_dns":["mail.northwind.example","h1.rdns.example"]}}"#
    );
    let h1_https_host = format!(
        r#","host":{{"location":{{"country_code":"DE","country_name":"Germany","city":"Berlin"}},{H1_HOST}}}"#
    );
    let caps_rdns: Vec<String> = (1..=12)
        .map(|i| format!("\"r{i:02}.caps.example\""))
        .collect();
    let caps_sans: Vec<String> = std::iter::once("\"caps.example\"".to_owned())
        .chain((1..=15).map(|i| format!("\"c{i:02}.caps.example\"")))
        .collect();
    let mut lines = vec![
        // H1
        svc(
            "240.0.0.1",
            22,
            "ssh",
            &format!(
                r#","product":{{"title":"OpenSSH","version":"9.6","cpe":"cpe:2.3:a:openbsd:openssh:9.6:*:*:*:*:*:*:*"}},"vulnerabilities":{{"cves":["CVE-2023-48795"],"max_cvss":5.9,"has_exploits":false}},"ssh":{{"protocol_version":"2.0","software_version":"OpenSSH_9.6p1","host_key_algorithm":"ssh-ed25519","host_key_fingerprint":"SHA256:abc","comments":"Ubuntu-3ubuntu13","hassh":"ec7378c1a92f5a8dde7e8b7a1ddf33d1"}}{h1_ssh_host}"#
            ),
        ),
        line(
            "240.0.0.1",
            443,
            "https",
            T2,
            "completed",
            &format!(
                r#","product":{{"title":"nginx","version":"1.24.0","cpe":"cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*"}},"vulnerabilities":{{"cves":["CVE-2023-44487"],"max_cvss":7.5,"has_exploits":true}},"tls":{{"version":"TLSv1.3","cipher_suite":"TLS_AES_128_GCM_SHA256","browser_trusted":true,"certificate":{{"subject_alt_names":["www.northwind.example","northwind.example","*.cdn.northwind.example"],"common_name":"www.northwind.example","subject_organization":"Northwind Traders Ltd","issuer_common_name":"Example Trust RSA CA","issuer_organization":"Example Trust Services","valid_from":"2026-09-01T00:00:00Z","valid_until":"2026-11-30T23:59:59Z","fingerprint_sha256":"{FINGERPRINT}"}}}},"http":{{"status_code":200,"title":"Northwind Traders","server":"nginx/1.24.0","complete":true}}{h1_https_host}"#
            ),
        ),
        // H2
        svc(
            "240.0.0.2",
            22,
            "ssh",
            r#","product":{"title":"OpenSSH"},"host":{"location":{"country_code":"DE"},"asn":{"bgp":{"asn":64512,"organization":"Other Org"}}}"#,
        ),
        line(
            "240.0.0.2",
            80,
            "http",
            T2,
            "completed",
            r#","http":{"status_code":200,"title":"Welcome","complete":true},"host":{"location":{"country_code":"FR","country_name":"France","city":"Paris","latitude":48.8566,"longitude":2.3522},"asn":{"bgp":{"asn":64512,"organization":"Other Org"}}}"#,
        ),
        line(
            "240.0.0.2",
            22,
            "ssh",
            T2,
            "failed",
            r#","error":"connection reset""#,
        ),
        // H3
        svc(
            "240.0.0.3",
            22,
            "http",
            r#","http":{"status_code":200,"title":"Hidden","server":"x","complete":false},"host":{"location":{"country_code":"DE"},"asn":{"network":{"asn":64512,"organization":"Fabrikam Networks"}},"dns_name":"api.northwind.example"}"#,
        ),
        // H4
        line(
            "240.0.0.4",
            443,
            "https",
            T1,
            "partial",
            r#","tls":{"version":"TLSv1.2","certificate":{"subject_alt_names":["shop.example","*.wild.example"]}},"http":{"status_code":500,"complete":false},"host":{"location":{"country_code":"US","country_name":"United States","latitude":37.75,"longitude":-97.82}}"#,
        ),
        svc(
            "240.0.0.4",
            8443,
            "https",
            r#","error":"tls: handshake timeout reading body","tls":{"certificate":{"subject_alt_names":["err.example"]}}"#,
        ),
        svc(
            "240.0.0.4",
            993,
            "imaps",
            r#","vulnerabilities":{"cves":[],"has_exploits":false},"tls":{"certificate":{"common_name":"Mail.Example."}}"#,
        ),
        // H5
        svc(
            "240.0.0.5",
            8080,
            "http",
            r#","product":{"title":"Apache HTTP Server","version":"2.4.58","cpe":"cpe:2.3:a:apache:http_server:2.4.58:*:*:*:*:*:*:*"},"vulnerabilities":{"cves":["CVE-2021-44228","CVE-2023-0001"],"max_cvss":10.0,"has_exploits":true},"host":{"location":{"country_code":"US"},"provider":{"organization":"Contoso Example Corp., Ltd"},"dns_name":"northwind.example.evil.example"}"#,
        ),
        // Older than 8080, so 8080's host block is the newest enrichment whatever the order.
        line(
            "240.0.0.5",
            21,
            "ftp",
            T0,
            "completed",
            r#","vulnerabilities":{"cves":[],"has_exploits":false},"summary":{"banner_kind":"vsftpd"}"#,
        ),
        line(
            "240.0.0.5",
            23,
            "telnet",
            T0,
            "completed",
            r#","summary":{}"#,
        ),
        // H6
        svc(
            "240.0.0.6",
            80,
            "http",
            r#","product":{"title":"Apache Tomcat"},"vulnerabilities":{"cves":["CVE-2020-1938"],"max_cvss":7.0,"has_exploits":false},"host":{"reverse_dns":["xnorthwind.example"]}"#,
        ),
        // H7
        svc(
            "240.0.1.7",
            25,
            "smtp",
            r#","tls":{"certificate":{"subject_organization":"Example Corp Mail","issuer_organization":"Example Corp Root"}}"#,
        ),
        svc(
            "240.0.1.7",
            465,
            "smtps",
            r#","tls":{"certificate":{"subject_organization":"Example Corp Secure"}}"#,
        ),
        svc(
            "240.0.1.7",
            6379,
            "redis",
            r#","tls":{"certificate":{"subject_organization":"Example Corp Redis","issuer_organization":"Example Corp Root"}}"#,
        ),
        // Not hosts.
        line("240.0.0.8", 22, "ssh", T1, "failed", ""),
        line(
            "240.0.0.9",
            22,
            "ssh",
            OLD,
            "completed",
            r#","product":{"title":"OpenSSH"}"#,
        ),
        // H11
        svc(
            "240.0.0.11",
            21,
            "ftp",
            r#","host":{"location":{"country_code":"JP"}}"#,
        ),
        svc("240.0.0.11", 22, "ssh", r#","product":{"title":"OpenSSH"}"#),
        svc("240.0.0.11", 23, "telnet", ""),
        svc("240.0.0.11", 25, "smtp", ""),
        svc("240.0.0.11", 80, "http", ""),
        svc("240.0.0.11", 110, "pop3", ""),
        svc("240.0.0.11", 443, "https", ""),
        // H12
        svc(
            "240.0.0.12",
            443,
            "https",
            &format!(
                r#","tls":{{"certificate":{{"subject_alt_names":[{}]}}}},"host":{{"reverse_dns":[{}],"dns_name":"r01.caps.example","domain":"caps.example"}}"#,
                caps_sans.join(","),
                caps_rdns.join(",")
            ),
        ),
        // V1, V2
        svc(
            "3fff::1",
            443,
            "https",
            r#","tls":{"certificate":{"subject_alt_names":["v6.northwind.example"]}},"host":{"location":{"country_code":"NL","latitude":52.37,"longitude":4.89},"asn":{"research":{"asn":64500,"organization":"Northwind Traders Ltd"},"bgp":{"asn":64500,"organization":"Northwind Traders Ltd"}},"domain":"northwind.example"}"#,
        ),
        svc("3fff::2", 22, "ssh", ""),
        // Domain scans.
        domain_line(
            "scan.northwind.example",
            &["240.0.0.2", "240.0.0.10", "3fff::2"],
            T1,
        ),
        domain_line("scan.northwind.example", &["240.0.0.6"], T0),
        domain_line("northwind.example.evil.example", &["240.0.0.5"], T1),
        domain_line("notnorthwind.example", &["240.0.0.6"], T1),
        domain_line("legacy.example", &["240.0.0.1"], T1),
    ];
    for i in 1..=5 {
        lines.push(domain_line(
            &format!("s{i}.caps.example"),
            &["240.0.0.12"],
            T1,
        ));
    }
    lines
}

fn main_observations() -> Vec<Observation> {
    let mut observations = read(&main_lines());
    // V2's ssh observation with a leaf certificate: ssh is not TLS-capable, so the reader
    // would refuse this; certificate-name search must ignore it all the same.
    for obs in &mut observations {
        if let Observation::Service(s) = obs
            && s.ip == ip("3fff::2")
        {
            s.tls = Some(Tls {
                certificate: Some(Certificate {
                    subject_alt_names: vec!["ssh.example".into()],
                    ..Certificate::default()
                }),
                ..Tls::default()
            });
        }
    }
    observations
}

fn main_index() -> ReferenceIndex {
    index_of(IndexConfig::default(), &main_observations())
}

// ---------------------------------------------------------------------------------------------
// Asking.

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn query(text: &str) -> Query {
    periscope_query::parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"))
}

fn page_of(
    index: &ReferenceIndex,
    q: &Query,
    resolved: &[IpAddr],
    after: Option<&str>,
    limit: usize,
) -> SearchPage {
    let req = SearchRequest {
        query: q,
        after: after.map(ip),
        limit,
        resolved,
        now: now(),
    };
    match index.search(&req).unwrap() {
        SearchOutcome::Page(page) => page,
        SearchOutcome::TooBroad { matching } => panic!("{q}: too broad ({matching})"),
    }
}

fn rows(index: &ReferenceIndex, text: &str, resolved: &[&str]) -> Vec<HostResult> {
    let resolved: Vec<IpAddr> = resolved.iter().map(|s| ip(s)).collect();
    let page = page_of(index, &query(text), &resolved, None, 100);
    assert!(!page.has_more, "{text}");
    page.hosts
}

fn row(index: &ReferenceIndex, text: &str, resolved: &[&str], host: &str) -> HostResult {
    rows(index, text, resolved)
        .into_iter()
        .find(|r| r.host.ip == ip(host))
        .unwrap_or_else(|| panic!("{text}: no row for {host}"))
}

fn ips(results: &[HostResult]) -> Vec<String> {
    results.iter().map(|r| r.host.ip.to_string()).collect()
}

/// The hosts `text` matches, in order (and, for ASN and filter queries, its count).
fn check(index: &ReferenceIndex, text: &str, expected: &[&str]) {
    check_resolved(index, text, &[], expected);
}

fn check_resolved(index: &ReferenceIndex, text: &str, resolved: &[&str], expected: &[&str]) {
    let got = ips(&rows(index, text, resolved));
    assert_eq!(got, expected, "{text}");
    let q = query(text);
    if matches!(q, Query::Asn(_) | Query::Filter(_)) {
        let count = index.count(&q, now()).unwrap();
        assert_eq!(count.value, expected.len() as u64, "count of {text}");
        assert_eq!(count.relation, Relation::Exact);
    }
}

fn port(n: u16) -> Port {
    Port::new(n).unwrap()
}

fn token(s: &str) -> ProtocolToken {
    ProtocolToken::parse(s).unwrap()
}

fn cc(s: &str) -> CountryCode {
    CountryCode::parse(s).unwrap()
}

fn cvss(s: &str) -> Cvss {
    Cvss::parse(s).unwrap()
}

fn dn(s: &str) -> DomainName {
    DomainName::parse(s).unwrap()
}

fn entry(name: &str, source: DomainSource) -> DomainEntry {
    DomainEntry {
        name: name.into(),
        source,
    }
}

fn service_keys(services: &[Service]) -> Vec<String> {
    services
        .iter()
        .map(|s| format!("{}/{}", s.port, s.protocol))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// What is a host; exact IP; CIDR.

#[test]
fn exact_ip_finds_only_hosts() {
    let index = main_index();
    for (text, expected) in [
        ("240.0.0.1", &["240.0.0.1"][..]),
        ("3fff::1", &["3fff::1"]),
        ("3fff:0:0::0001", &["3fff::1"]),
        ("240.0.0.2", &["240.0.0.2"]),
        // Failed only, expired only, domain scans only, never seen.
        ("240.0.0.8", &[]),
        ("240.0.0.9", &[]),
        ("240.0.0.10", &[]),
        ("240.0.0.99", &[]),
        ("3fff::99", &[]),
    ] {
        check(&index, text, expected);
    }
}

#[test]
fn failed_and_older_observations_change_nothing() {
    // H2's newer failed ssh observation did not remove the ssh service.
    let index = main_index();
    let h2 = row(&index, "240.0.0.2", &[], "240.0.0.2");
    assert_eq!(service_keys(&h2.host.services), ["22/ssh", "80/http"]);
    // Re-applying everything, in reverse order, gives the same answers.
    let mut observations = main_observations();
    observations.extend(main_observations());
    observations.reverse();
    let twice = index_of(IndexConfig::default(), &observations);
    for text in [
        "240.0.0.1",
        "240.0.0.2",
        "cidr:240.0.0.0/24",
        "protocol:ssh",
    ] {
        assert_eq!(rows(&twice, text, &[]), rows(&index, text, &[]), "{text}");
    }
}

#[test]
fn cidr_matches_ipv4_hosts_in_the_block() {
    let index = main_index();
    for (text, expected) in [
        (
            "240.0.0.0/24",
            &[
                "240.0.0.1",
                "240.0.0.2",
                "240.0.0.3",
                "240.0.0.4",
                "240.0.0.5",
                "240.0.0.6",
                "240.0.0.11",
                "240.0.0.12",
            ][..],
        ),
        ("cidr:240.0.1.0/24", &["240.0.1.7"]),
        ("240.0.0.1/32", &["240.0.0.1"]),
        ("240.0.0.8/29", &["240.0.0.11", "240.0.0.12"]),
        ("240.0.2.0/24", &[]),
    ] {
        check(&index, text, expected);
    }
}

// ---------------------------------------------------------------------------------------------
// ASN.

#[test]
fn asn_matches_any_attribution() {
    let index = main_index();
    check(
        &index,
        "asn:64512",
        &["240.0.0.1", "240.0.0.2", "240.0.0.3"],
    );
    check(&index, "asn:64513", &["240.0.0.1"]);
    check(&index, "asn:64500", &["3fff::1"]);
    check(&index, "asn:1", &[]);
    let m = |source| AsnMatch {
        source,
        asn: Asn::new(64512).unwrap(),
    };
    for (host, expected) in [
        (
            "240.0.0.1",
            vec![m(AsnSource::ResearchBestAsn), m(AsnSource::NetworkAsn)],
        ),
        ("240.0.0.2", vec![m(AsnSource::BgpBestAsn)]),
        ("240.0.0.3", vec![m(AsnSource::NetworkAsn)]),
    ] {
        let r = row(&index, "asn:64512", &[], host);
        assert_eq!(r.asn_matches, expected, "{host}");
        assert!(r.host.services.is_empty(), "ASN rows carry no services");
        assert!(r.domain_matches.is_empty() && r.organization_matches.is_empty());
    }
    let r = row(&index, "asn:64500", &[], "3fff::1");
    let m = |source| AsnMatch {
        source,
        asn: Asn::new(64500).unwrap(),
    };
    assert_eq!(
        r.asn_matches,
        vec![m(AsnSource::ResearchBestAsn), m(AsnSource::BgpBestAsn)]
    );
}

// ---------------------------------------------------------------------------------------------
// Domain.

#[test]
fn domain_is_the_union_of_every_link() {
    let index = main_index();
    let resolved = ["240.0.0.1", "240.0.0.8", "3fff::1"];
    check_resolved(
        &index,
        "domain:northwind.example",
        &resolved,
        &["240.0.0.1", "240.0.0.2", "240.0.0.3", "3fff::1", "3fff::2"],
    );
    // Without DNS: the stored names and domain scans alone.
    check(
        &index,
        "domain:northwind.example",
        &["240.0.0.1", "240.0.0.2", "240.0.0.3", "3fff::1", "3fff::2"],
    );
    check(
        &index,
        "domain:scan.northwind.example",
        &["240.0.0.2", "3fff::2"],
    );
    check(&index, "domain:api.northwind.example", &["240.0.0.3"]);
    // A resolved address that is a host is linked even with no stored name.
    check_resolved(
        &index,
        "domain:other.example",
        &["240.0.0.11", "240.0.0.9"],
        &["240.0.0.11"],
    );
    // Look-alikes: xnorthwind.example, northwind.example.evil.example, notnorthwind.example.
    check(&index, "domain:evil.example", &["240.0.0.5"]);
    check(&index, "domain:xnorthwind.example", &["240.0.0.6"]);
    check(&index, "domain:notnorthwind.example", &["240.0.0.6"]);

    let dm = |source, value: &str| DomainMatch {
        source,
        value: value.into(),
    };
    use DomainMatchSource::*;
    for (host, expected) in [
        (
            "240.0.0.1",
            vec![
                dm(DnsResolution, "northwind.example"),
                dm(StoredDomain, "northwind.example"),
                dm(StoredDnsName, "www.northwind.example"),
                dm(StoredReverseDns, "mail.northwind.example"),
            ],
        ),
        ("240.0.0.2", vec![dm(DomainScan, "scan.northwind.example")]),
        (
            "240.0.0.3",
            vec![dm(StoredDnsName, "api.northwind.example")],
        ),
        (
            "3fff::1",
            vec![
                dm(DnsResolution, "northwind.example"),
                dm(StoredDomain, "northwind.example"),
            ],
        ),
        ("3fff::2", vec![dm(DomainScan, "scan.northwind.example")]),
    ] {
        let r = row(&index, "domain:northwind.example", &resolved, host);
        assert_eq!(r.domain_matches, expected, "{host}");
        assert!(r.host.services.is_empty(), "domain rows carry no services");
        assert!(!r.host.services_has_more);
        assert!(r.asn_matches.is_empty() && r.organization_matches.is_empty());
    }
    // Every reverse-DNS name under the query is listed, each once; domain scans by name.
    let r = row(&index, "domain:caps.example", &[], "240.0.0.12");
    let mut expected = vec![
        dm(StoredDomain, "caps.example"),
        dm(StoredDnsName, "r01.caps.example"),
    ];
    expected.extend((1..=12).map(|i| dm(StoredReverseDns, &format!("r{i:02}.caps.example"))));
    expected.extend((1..=5).map(|i| dm(DomainScan, &format!("s{i}.caps.example"))));
    assert_eq!(r.domain_matches, expected);
}

#[test]
fn domain_scan_records() {
    let index = main_index();
    let names =
        |scans: Vec<periscope_model::observation::DomainScan>| -> Vec<(String, Vec<IpAddr>)> {
            scans
                .into_iter()
                .map(|s| (s.name.to_string(), s.addresses))
                .collect()
        };
    // The newest record per name only: the older one listed 240.0.0.6.
    assert_eq!(
        names(
            index
                .domain_scans_of_name(&dn("northwind.example"))
                .unwrap()
        ),
        vec![(
            "scan.northwind.example".to_owned(),
            vec![ip("240.0.0.2"), ip("240.0.0.10"), ip("3fff::2")]
        )]
    );
    assert_eq!(
        names(index.domain_scans_of_address(ip("240.0.0.1")).unwrap()),
        vec![("legacy.example".to_owned(), vec![ip("240.0.0.1")])]
    );
    assert!(
        index
            .domain_scans_of_address(ip("240.0.0.6"))
            .unwrap()
            .len()
            == 1
    );
    assert!(
        index
            .domain_scans_of_name(&dn("nothing.example"))
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Filter clauses.

#[test]
fn filter_clauses() {
    let index = main_index();
    let cases: &[(&str, &[&str])] = &[
        // Same-service rule.
        ("port:22 protocol:http", &["240.0.0.3"]),
        (
            "port:22 protocol:ssh",
            &["240.0.0.1", "240.0.0.2", "240.0.0.11", "3fff::2"],
        ),
        (
            "port:80 protocol:http",
            &["240.0.0.2", "240.0.0.6", "240.0.0.11"],
        ),
        ("port:80 protocol:ssh", &[]),
        ("cve:CVE-2021-44228 exploit:no", &[]),
        ("port:21 exploit:no", &["240.0.0.5"]),
        // Port and protocol (exact token: http is not https).
        (
            "port:443",
            &[
                "240.0.0.1",
                "240.0.0.4",
                "240.0.0.11",
                "240.0.0.12",
                "3fff::1",
            ],
        ),
        (
            "protocol:https",
            &[
                "240.0.0.1",
                "240.0.0.4",
                "240.0.0.11",
                "240.0.0.12",
                "3fff::1",
            ],
        ),
        (
            "protocol:http",
            &[
                "240.0.0.2",
                "240.0.0.3",
                "240.0.0.5",
                "240.0.0.6",
                "240.0.0.11",
            ],
        ),
        ("protocol:imaps", &["240.0.0.4"]),
        ("protocol:imap", &[]),
        // Product: every word of the phrase, any order, whole words, case-insensitive.
        (
            "product:\"openssh\"",
            &["240.0.0.1", "240.0.0.2", "240.0.0.11"],
        ),
        ("product:\"HTTP Apache\"", &["240.0.0.5"]),
        ("product:\"Apache Server HTTP\"", &["240.0.0.5"]),
        ("product:\"apache\"", &["240.0.0.5", "240.0.0.6"]),
        ("product:\"Apache HTTPS\"", &[]),
        ("product:\"ngin\"", &[]),
        ("product:\"nginx\" port:22", &[]),
        // Certificate name: exact SAN or CN; completed, no error, TLS-capable protocol.
        ("certificate.name:www.northwind.example", &["240.0.0.1"]),
        ("certificate.name:northwind.example", &["240.0.0.1"]),
        ("certificate.name:WWW.Northwind.Example.", &["240.0.0.1"]),
        ("certificate.name:cdn.northwind.example", &[]),
        ("certificate.name:x.cdn.northwind.example", &[]),
        ("certificate.name:northwind", &[]),
        ("certificate.name:shop.example", &[]),
        ("certificate.name:wild.example", &[]),
        ("certificate.name:err.example", &[]),
        ("certificate.name:mail.example", &["240.0.0.4"]),
        ("certificate.name:v6.northwind.example", &["3fff::1"]),
        ("certificate.name:ssh.example", &[]),
        // CPE: exact, case-insensitive.
        (
            "cpe:\"cpe:2.3:a:apache:http_server:2.4.58:*:*:*:*:*:*:*\"",
            &["240.0.0.5"],
        ),
        (
            "cpe:\"cpe:2.3:a:Apache:HTTP_Server:2.4.58:*:*:*:*:*:*:*\"",
            &["240.0.0.5"],
        ),
        (
            "cpe:\"cpe:2.3:a:apache:http_server:2.4.57:*:*:*:*:*:*:*\"",
            &[],
        ),
        ("cpe:\"cpe:2.3:a:apache:http_server:*:*:*:*:*:*:*:*\"", &[]),
        // CVE.
        ("cve:CVE-2021-44228", &["240.0.0.5"]),
        ("cve:CVE-2023-44487", &["240.0.0.1"]),
        ("cve:CVE-1999-0001", &[]),
        // CVSS: bounds inclusive, no score no match.
        ("cvss:7.0-7.0", &["240.0.0.6"]),
        ("cvss:7.5-10.0", &["240.0.0.1", "240.0.0.5"]),
        ("cvss:0.0-10.0", &["240.0.0.1", "240.0.0.5", "240.0.0.6"]),
        ("cvss:9.0-9.9", &[]),
        ("cvss:5.9-5.9", &["240.0.0.1"]),
        ("cvss:6.0-6.9", &[]),
        // Exploit: the flag of a summary; no summary is neither.
        ("exploit:yes", &["240.0.0.1", "240.0.0.5"]),
        (
            "exploit:no",
            &["240.0.0.1", "240.0.0.4", "240.0.0.5", "240.0.0.6"],
        ),
        ("exploit:yes port:22", &[]),
        // Country: the latest location block's country.
        ("country:DE", &["240.0.0.1", "240.0.0.3"]),
        ("country:FR", &["240.0.0.2"]),
        ("country:US", &["240.0.0.4", "240.0.0.5"]),
        ("country:NL", &["3fff::1"]),
        ("country:JP port:443", &["240.0.0.11"]),
        ("country:DE port:22", &["240.0.0.1", "240.0.0.3"]),
        ("country:DE protocol:https", &["240.0.0.1"]),
        ("country:GB", &[]),
    ];
    for (text, expected) in cases {
        check(&index, text, expected);
    }
}

#[test]
fn organization_sources() {
    let index = main_index();
    let cases: &[(&str, &[&str])] = &[
        ("organization:\"Example Corp\"", &["240.0.0.5", "240.0.1.7"]),
        ("organization:\"example corp ltd\"", &["240.0.0.5"]),
        ("organization:\"Corp Example\"", &[]),
        ("organization:\"Example Ltd\"", &[]),
        ("organization:\"Example Corp Redis\"", &[]),
        ("organization:\"Fabrikam\"", &[]),
        ("organization:\"Other Org\"", &["240.0.0.2"]),
        ("organization:\"NORTHWIND-AS\"", &["240.0.0.1"]),
        (
            "organization:\"Northwind Traders\"",
            &["240.0.0.1", "3fff::1"],
        ),
        ("organization:\"northwind net\"", &["240.0.0.1"]),
        ("organization:\"Example Trust\"", &["240.0.0.1"]),
        ("organization:\"Example Corp\" port:25", &["240.0.1.7"]),
        ("organization:\"Example Corp\" country:US", &["240.0.0.5"]),
        ("organization:\"web hosting\"", &["240.0.0.1"]),
        ("organization:\"Ubuntu\"", &[]),
    ];
    for (text, expected) in cases {
        check(&index, text, expected);
    }

    use OrganizationSource::*;
    let om = |source, value: &str| OrganizationMatch {
        source,
        value: value.into(),
        service: None,
    };
    let cert = |source, value: &str, p: u16, t: &str| OrganizationMatch {
        source,
        value: value.into(),
        service: Some((port(p), token(t))),
    };
    let rows_cases: Vec<(&str, &str, Vec<OrganizationMatch>)> = vec![
        (
            "organization:\"Example Corp\"",
            "240.0.0.5",
            vec![om(NetworkProvider, "Contoso Example Corp., Ltd")],
        ),
        (
            "organization:\"Example Corp\"",
            "240.0.1.7",
            vec![
                cert(CertificateSubject, "Example Corp Mail", 25, "smtp"),
                cert(CertificateSubject, "Example Corp Secure", 465, "smtps"),
                cert(CertificateIssuer, "Example Corp Root", 25, "smtp"),
            ],
        ),
        (
            "organization:\"Northwind Traders\"",
            "240.0.0.1",
            vec![
                om(AsOrganization, "Northwind Traders Ltd"),
                om(WhoisDescription, "Northwind Traders web hosting"),
                cert(CertificateSubject, "Northwind Traders Ltd", 443, "https"),
            ],
        ),
        (
            "organization:\"Northwind Traders\"",
            "3fff::1",
            vec![om(AsOrganization, "Northwind Traders Ltd")],
        ),
        (
            "organization:\"northwind net\"",
            "240.0.0.1",
            vec![om(WhoisNetname, "NORTHWIND-NET")],
        ),
        (
            "organization:\"Example Transit\"",
            "240.0.0.1",
            vec![om(NetworkProvider, "Example Transit GmbH")],
        ),
        (
            "organization:\"Example ISP\"",
            "240.0.0.1",
            vec![om(NetworkProvider, "Example ISP")],
        ),
        (
            "organization:\"Example\"",
            "240.0.0.1",
            vec![
                om(NetworkProvider, "Example Hosting"),
                om(NetworkProvider, "Example Transit GmbH"),
                om(NetworkProvider, "Example ISP"),
                cert(CertificateIssuer, "Example Trust Services", 443, "https"),
            ],
        ),
    ];
    for (text, host, expected) in rows_cases {
        assert_eq!(
            row(&index, text, &[], host).organization_matches,
            expected,
            "{text} {host}"
        );
    }
    // Other queries carry no organization matches.
    assert!(
        row(&index, "country:US", &[], "240.0.0.5")
            .organization_matches
            .is_empty()
    );
}

#[test]
fn too_broad_applies_to_host_only_queries() {
    let observations = main_observations();
    let strict = index_of(
        IndexConfig {
            max_host_only_results: 1,
            ..IndexConfig::default()
        },
        &observations,
    );
    let search = |text: &str| {
        let q = query(text);
        let req = SearchRequest {
            query: &q,
            after: None,
            limit: 10,
            resolved: &[],
            now: now(),
        };
        strict.search(&req).unwrap()
    };
    for (text, matching) in [
        ("organization:\"Example Corp\"", 2),
        ("country:DE", 2),
        ("country:US", 2),
    ] {
        assert_eq!(search(text), SearchOutcome::TooBroad { matching }, "{text}");
        assert_eq!(strict.count(&query(text), now()).unwrap().value, matching);
        assert_eq!(
            strict
                .exposure(&query(text), Resolution::Global, now())
                .unwrap()
                .unique_hosts
                .value,
            matching
        );
        let Query::Filter(f) = query(text) else {
            unreachable!()
        };
        assert!(strict.facets(&f, now()).is_ok());
    }
    // At the threshold, and with a service-level clause, the query runs.
    for (text, expected) in [
        ("country:FR", &["240.0.0.2"][..]),
        ("country:DE port:22", &["240.0.0.1", "240.0.0.3"]),
        (
            "port:22 protocol:ssh",
            &["240.0.0.1", "240.0.0.2", "240.0.0.11", "3fff::2"],
        ),
    ] {
        check(&strict, text, expected);
    }
    let at_limit = index_of(
        IndexConfig {
            max_host_only_results: 2,
            ..IndexConfig::default()
        },
        &observations,
    );
    check(&at_limit, "country:DE", &["240.0.0.1", "240.0.0.3"]);
}

// ---------------------------------------------------------------------------------------------
// Pages.

#[test]
fn pages_follow_host_order() {
    let index = main_index();
    let q = query("protocol:ssh");
    let cases: &[(Option<&str>, usize, &[&str], bool)] = &[
        (
            None,
            100,
            &["240.0.0.1", "240.0.0.2", "240.0.0.11", "3fff::2"],
            false,
        ),
        (None, 2, &["240.0.0.1", "240.0.0.2"], true),
        (Some("240.0.0.2"), 2, &["240.0.0.11", "3fff::2"], false),
        (None, 3, &["240.0.0.1", "240.0.0.2", "240.0.0.11"], true),
        (
            None,
            4,
            &["240.0.0.1", "240.0.0.2", "240.0.0.11", "3fff::2"],
            false,
        ),
        (Some("240.0.0.11"), 1, &["3fff::2"], false),
        (Some("240.0.0.3"), 1, &["240.0.0.11"], true),
        // After an address that is not a host, and after the last IPv4 address.
        (Some("240.0.0.5"), 1, &["240.0.0.11"], true),
        (Some("255.255.255.255"), 5, &["3fff::2"], false),
        (Some("3fff::1"), 5, &["3fff::2"], false),
        (Some("3fff::2"), 5, &[], false),
        (Some("::"), 5, &["3fff::2"], false),
    ];
    for (after, limit, expected, has_more) in cases {
        let page = page_of(&index, &q, &[], *after, *limit);
        assert_eq!(ips(&page.hosts), *expected, "after {after:?} limit {limit}");
        assert_eq!(page.has_more, *has_more, "after {after:?} limit {limit}");
    }
    // Exact IP and CIDR pages continue strictly after the address too.
    let exact = query("240.0.0.1");
    assert!(
        page_of(&index, &exact, &[], Some("240.0.0.1"), 10)
            .hosts
            .is_empty()
    );
    assert_eq!(
        ips(&page_of(&index, &exact, &[], Some("240.0.0.0"), 10).hosts),
        ["240.0.0.1"]
    );
    let cidr = query("240.0.0.0/24");
    let page = page_of(&index, &cidr, &[], Some("240.0.0.5"), 2);
    assert_eq!(
        (ips(&page.hosts), page.has_more),
        (vec!["240.0.0.6".into(), "240.0.0.11".into()], true)
    );
    let page = page_of(
        &index,
        &query("domain:northwind.example"),
        &[ip("3fff::1")],
        Some("240.0.0.3"),
        1,
    );
    assert_eq!(
        (ips(&page.hosts), page.has_more),
        (vec!["3fff::1".into()], true)
    );
}

// ---------------------------------------------------------------------------------------------
// Host results.

#[test]
fn service_preview() {
    let index = main_index();
    /// `port/protocol` and match reasons of each previewed service.
    type Preview = Vec<(String, Vec<String>)>;
    let preview = |text: &str, host: &str| -> (Preview, bool) {
        let r = row(&index, text, &[], host);
        let services = r
            .host
            .services
            .iter()
            .map(|s| {
                (
                    format!("{}/{}", s.port, s.protocol),
                    s.match_reasons.clone(),
                )
            })
            .collect();
        (services, r.host.services_has_more)
    };
    let s = |key: &str, reasons: &[&str]| -> (String, Vec<String>) {
        (
            key.to_owned(),
            reasons.iter().map(|r| (*r).to_owned()).collect(),
        )
    };
    let cases: Vec<(&str, &str, Preview, bool)> = vec![
        (
            "protocol:https",
            "240.0.0.11",
            vec![
                s("443/https", &["protocol:https"]),
                s("21/ftp", &[]),
                s("22/ssh", &[]),
                s("23/telnet", &[]),
                s("25/smtp", &[]),
            ],
            true,
        ),
        (
            "port:443 protocol:https",
            "240.0.0.11",
            vec![
                s("443/https", &["port:443", "protocol:https"]),
                s("21/ftp", &[]),
                s("22/ssh", &[]),
                s("23/telnet", &[]),
                s("25/smtp", &[]),
            ],
            true,
        ),
        (
            "country:JP",
            "240.0.0.11",
            vec![
                s("21/ftp", &[]),
                s("22/ssh", &[]),
                s("23/telnet", &[]),
                s("25/smtp", &[]),
                s("80/http", &[]),
            ],
            true,
        ),
        (
            "240.0.0.11",
            "240.0.0.11",
            vec![
                s("21/ftp", &[]),
                s("22/ssh", &[]),
                s("23/telnet", &[]),
                s("25/smtp", &[]),
                s("80/http", &[]),
            ],
            true,
        ),
        (
            "exploit:no",
            "240.0.0.5",
            vec![
                s("21/ftp", &["exploit:no"]),
                s("23/telnet", &[]),
                s("8080/http", &[]),
            ],
            false,
        ),
        (
            "exploit:no",
            "240.0.0.1",
            vec![s("22/ssh", &["exploit:no"]), s("443/https", &[])],
            false,
        ),
        (
            "country:US exploit:no",
            "240.0.0.4",
            vec![
                s("993/imaps", &["exploit:no"]),
                s("443/https", &[]),
                s("8443/https", &[]),
            ],
            false,
        ),
        (
            "organization:\"Example Corp\"",
            "240.0.1.7",
            vec![s("25/smtp", &[]), s("465/smtps", &[]), s("6379/redis", &[])],
            false,
        ),
        (
            "240.0.0.0/24",
            "240.0.0.2",
            vec![s("22/ssh", &[]), s("80/http", &[])],
            false,
        ),
    ];
    for (text, host, expected, has_more) in cases {
        assert_eq!(preview(text, host), (expected, has_more), "{text} {host}");
    }
}

#[test]
fn the_full_host_record() {
    let index = main_index();
    let ssh = Service {
        port: port(22),
        protocol: token("ssh"),
        observed_at: ts(T1),
        product: Some("OpenSSH".into()),
        version: Some("9.6".into()),
        certificate_names: vec![],
        vulnerabilities: Some(VulnerabilityView {
            cve_count: 1,
            has_exploits: false,
            max_cvss: Some(cvss("5.9")),
        }),
        evidence: vec![Evidence::Ssh(Ssh {
            protocol_version: Some("2.0".into()),
            software_version: Some("OpenSSH_9.6p1".into()),
            host_key_algorithm: Some("ssh-ed25519".into()),
            host_key_fingerprint: Some("SHA256:abc".into()),
            comments: Some("Ubuntu-3ubuntu13".into()),
            hassh: Some("ec7378c1a92f5a8dde7e8b7a1ddf33d1".into()),
        })],
        match_reasons: vec![],
    };
    let https = Service {
        port: port(443),
        protocol: token("https"),
        observed_at: ts(T2),
        product: Some("nginx".into()),
        version: Some("1.24.0".into()),
        certificate_names: vec![
            "www.northwind.example".into(),
            "northwind.example".into(),
            "*.cdn.northwind.example".into(),
        ],
        vulnerabilities: Some(VulnerabilityView {
            cve_count: 1,
            has_exploits: true,
            max_cvss: Some(cvss("7.5")),
        }),
        evidence: vec![Evidence::Http {
            status_code: Some(200),
            title: Some("Northwind Traders".into()),
            server: Some("nginx/1.24.0".into()),
            tls: Some(TlsEvidence {
                version: Some("TLSv1.3".into()),
                cipher_suite: Some("TLS_AES_128_GCM_SHA256".into()),
                issuer_common_name: Some("Example Trust RSA CA".into()),
                valid_from: Some(ts("2026-09-01T00:00:00Z")),
                valid_until: Some(ts("2026-11-30T23:59:59Z")),
                fingerprint_sha256: Some(FINGERPRINT.into()),
                browser_trusted: Some(true),
            }),
        }],
        match_reasons: vec![],
    };
    let expected = Host {
        ip: ip("240.0.0.1"),
        // Names from the newest location block (T2, Berlin), position from T1.
        location: Some(Location {
            continent: None,
            country_code: Some(cc("DE")),
            country_name: Some("Germany".into()),
            subdivision_1: None,
            subdivision_2: None,
            city: Some("Berlin".into()),
            position: Some(Position {
                latitude: 48.1374,
                longitude: 11.5755,
                accuracy_radius_km: Some(20),
            }),
        }),
        network: Some(Network {
            asn: Asn::new(64512).unwrap(),
            organization: Some("Northwind Traders Ltd".into()),
        }),
        whois: Some(Whois {
            description: None,
            netname: Some("NORTHWIND-NET".into()),
            organization: Some("Northwind Traders Ltd".into()),
            cidr: Some(IpCidr::parse("240.0.0.0/24").unwrap()),
            registry: Some("ripencc".into()),
            country_code: Some(cc("DE")),
        }),
        reverse_dns: Some(dn("mail.northwind.example")),
        domains: vec![
            entry("mail.northwind.example", DomainSource::ReverseDns),
            entry("h1.rdns.example", DomainSource::ReverseDns),
            entry("www.northwind.example", DomainSource::DnsName),
            entry("northwind.example", DomainSource::Domain),
            entry("*.cdn.northwind.example", DomainSource::CertificateSubject),
        ],
        domains_has_more: false,
        services: vec![ssh.clone(), https.clone()],
        services_has_more: false,
    };
    assert_eq!(row(&index, "240.0.0.1", &[], "240.0.0.1").host, expected);
    assert_eq!(row(&index, "240.0.0.0/24", &[], "240.0.0.1").host, expected);

    // Host detail: the same record, with the names of domain scans listing the address.
    let detail = index
        .host_detail(ip("240.0.0.1"), None, 20, now())
        .unwrap()
        .unwrap();
    let mut with_scans = expected.clone();
    with_scans
        .domains
        .push(entry("legacy.example", DomainSource::DomainScan));
    assert_eq!(detail.host, with_scans);
    assert_eq!(detail.next, None);

    // A domain row: no services, domain-scan names included.
    let domain_row = row(&index, "domain:northwind.example", &[], "240.0.0.1");
    let without_services = Host {
        services: vec![],
        ..with_scans
    };
    assert_eq!(domain_row.host, without_services);

    // A filter row marks what matched.
    let marked = row(&index, "cve:CVE-2023-44487", &[], "240.0.0.1");
    let https_marked = Service {
        match_reasons: vec!["cve:CVE-2023-44487".into()],
        ..https
    };
    assert_eq!(marked.host.services, vec![https_marked, ssh]);
}

#[test]
fn small_host_records() {
    let index = main_index();
    let host = |text: &str, h: &str| row(&index, text, &[], h).host;
    // H2: network from the BGP attribution; location from the newest block (FR, Paris).
    let h2 = host("240.0.0.2", "240.0.0.2");
    assert_eq!(
        h2.network,
        Some(Network {
            asn: Asn::new(64512).unwrap(),
            organization: Some("Other Org".into())
        })
    );
    assert_eq!(
        h2.location.as_ref().and_then(|l| l.city.as_deref()),
        Some("Paris")
    );
    assert_eq!(h2.whois, None);
    assert_eq!(h2.reverse_dns, None);
    assert!(h2.domains.is_empty());
    assert_eq!(
        h2.services[1].evidence,
        vec![Evidence::Http {
            status_code: Some(200),
            title: Some("Welcome".into()),
            server: None,
            tls: None
        }]
    );
    // H3: network attribution only; incomplete http exchange shows nothing, so no evidence.
    let h3 = host("240.0.0.3", "240.0.0.3");
    assert_eq!(
        h3.network,
        Some(Network {
            asn: Asn::new(64512).unwrap(),
            organization: Some("Fabrikam Networks".into())
        })
    );
    assert_eq!(
        h3.location,
        Some(Location {
            country_code: Some(cc("DE")),
            ..Location::default()
        })
    );
    assert_eq!(
        h3.domains,
        vec![entry("api.northwind.example", DomainSource::DnsName)]
    );
    assert!(h3.services[0].evidence.is_empty());
    // H4: partial https shows TLS only; the error text is never shown; the imaps common name
    // is a DNS name (canonical form); a summary without a score.
    let h4 = host("240.0.0.4", "240.0.0.4");
    assert_eq!(
        service_keys(&h4.services),
        ["443/https", "993/imaps", "8443/https"]
    );
    assert_eq!(
        h4.services[0].evidence,
        vec![Evidence::Http {
            status_code: None,
            title: None,
            server: None,
            tls: Some(TlsEvidence {
                version: Some("TLSv1.2".into()),
                ..TlsEvidence::default()
            }),
        }]
    );
    assert_eq!(
        h4.services[0].certificate_names,
        ["shop.example", "*.wild.example"]
    );
    assert_eq!(h4.services[1].certificate_names, ["mail.example"]);
    assert!(
        h4.services[1].evidence.is_empty(),
        "imaps has summary evidence, and none"
    );
    assert_eq!(
        h4.services[1].vulnerabilities,
        Some(VulnerabilityView {
            cve_count: 0,
            has_exploits: false,
            max_cvss: None
        })
    );
    // The 8443 certificate carries names only: no TLS evidence field, so nothing to show.
    assert!(h4.services[2].evidence.is_empty());
    assert!(
        !format!("{h4:?}").contains("timeout"),
        "error text leaked: {h4:?}"
    );
    assert_eq!(
        h4.domains,
        vec![
            entry("shop.example", DomainSource::CertificateSubject),
            entry("*.wild.example", DomainSource::CertificateSubject),
            entry("mail.example", DomainSource::CertificateSubject),
            entry("err.example", DomainSource::CertificateSubject),
        ]
    );
    assert_eq!(h4.network, None);
    assert_eq!(
        h4.location.as_ref().and_then(|l| l.position),
        Some(Position {
            latitude: 37.75,
            longitude: -97.82,
            accuracy_radius_km: None
        })
    );
    // H5: summary shown, empty summary withheld, no vulnerabilities block means none.
    let h5 = host("240.0.0.5", "240.0.0.5");
    assert_eq!(
        service_keys(&h5.services),
        ["21/ftp", "23/telnet", "8080/http"]
    );
    assert_eq!(
        h5.services[0].evidence,
        vec![Evidence::Summary(Summary {
            fields: vec![("banner_kind".into(), "vsftpd".into())]
        })]
    );
    assert!(h5.services[1].evidence.is_empty());
    assert_eq!(h5.services[1].vulnerabilities, None);
    assert_eq!(
        h5.services[2].vulnerabilities,
        Some(VulnerabilityView {
            cve_count: 2,
            has_exploits: true,
            max_cvss: Some(cvss("10.0"))
        })
    );
    assert_eq!(
        h5.services[2].product.as_deref(),
        Some("Apache HTTP Server")
    );
    assert_eq!(h5.services[2].version.as_deref(), Some("2.4.58"));
    // IPv6: never reverse DNS; certificate names listed.
    let v1 = host("3fff::1", "3fff::1");
    assert_eq!(v1.reverse_dns, None);
    assert_eq!(
        v1.domains,
        vec![
            entry("northwind.example", DomainSource::Domain),
            entry("v6.northwind.example", DomainSource::CertificateSubject),
        ]
    );
    assert_eq!(
        v1.network,
        Some(Network {
            asn: Asn::new(64500).unwrap(),
            organization: Some("Northwind Traders Ltd".into())
        })
    );
}

#[test]
fn domain_lists_are_capped() {
    let index = main_index();
    let names = |from: char, range: std::ops::RangeInclusive<u32>, source| -> Vec<DomainEntry> {
        range
            .map(|i| entry(&format!("{from}{i:02}.caps.example"), source))
            .collect()
    };
    // A plain row: 10 of 12 reverse-DNS names (the DNS name r01 is one of them), the domain,
    // 10 of 15 certificate names (caps.example was listed already): 21, has_more.
    let mut expected = names('r', 1..=10, DomainSource::ReverseDns);
    expected.push(entry("caps.example", DomainSource::Domain));
    expected.extend(names('c', 1..=10, DomainSource::CertificateSubject));
    let plain = row(&index, "240.0.0.12", &[], "240.0.0.12").host;
    assert_eq!(plain.domains, expected);
    assert!(plain.domains_has_more);
    // A domain row and host detail: 4 of the 5 domain-scan names fit under the 25 cap.
    for i in 1..=4 {
        expected.push(entry(
            &format!("s{i}.caps.example"),
            DomainSource::DomainScan,
        ));
    }
    let domain_row = row(&index, "domain:caps.example", &[], "240.0.0.12").host;
    assert_eq!(domain_row.domains, expected);
    assert!(domain_row.domains_has_more);
    let detail = index
        .host_detail(ip("240.0.0.12"), None, 20, now())
        .unwrap()
        .unwrap();
    assert_eq!(detail.host.domains, expected);
    assert!(detail.host.domains_has_more);
}

// ---------------------------------------------------------------------------------------------
// Host detail.

#[test]
fn host_detail_pages_and_continuations() {
    let index = main_index();
    let detail =
        |host: &str, cont: Option<&str>, limit| index.host_detail(ip(host), cont, limit, now());
    // Three pages of three over H11's seven services.
    let mut cont: Option<String> = None;
    let mut pages = Vec::new();
    loop {
        let d = detail("240.0.0.11", cont.as_deref(), 3).unwrap().unwrap();
        assert_eq!(d.host.services_has_more, d.next.is_some());
        assert!(d.host.services.iter().all(|s| s.match_reasons.is_empty()));
        pages.push(service_keys(&d.host.services));
        match d.next {
            Some(next) => cont = Some(next),
            None => break,
        }
    }
    assert_eq!(
        pages,
        vec![
            vec!["21/ftp", "22/ssh", "23/telnet"],
            vec!["25/smtp", "80/http", "110/pop3"],
            vec!["443/https"],
        ]
    );
    // Exactly a page of services: no continuation.
    let all = detail("240.0.0.11", None, 7).unwrap().unwrap();
    assert_eq!((all.host.services.len(), all.next), (7, None));
    let all = detail("240.0.0.11", None, 20).unwrap().unwrap();
    assert_eq!(all.host.services.len(), 7);
    // Not hosts.
    for host in [
        "240.0.0.8",
        "240.0.0.9",
        "240.0.0.10",
        "240.0.0.99",
        "3fff::99",
    ] {
        assert_eq!(detail(host, None, 20).unwrap(), None, "{host}");
    }
    // A continuation of another address, or a malformed one, is refused.
    let first = detail("240.0.0.11", None, 1)
        .unwrap()
        .unwrap()
        .next
        .unwrap();
    assert_eq!(
        detail("240.0.0.1", Some(&first), 5),
        Err(IndexError::InvalidContinuation)
    );
    assert_eq!(
        detail("3fff::1", Some(&first), 5),
        Err(IndexError::InvalidContinuation)
    );
    for bad in [
        "",
        "abc",
        "21/ftp",
        "hd1",
        &first[..first.len() - 1],
        &format!("{first}x"),
    ] {
        assert_eq!(
            detail("240.0.0.11", Some(bad), 5),
            Err(IndexError::InvalidContinuation),
            "{bad:?}"
        );
    }
    // Continuing from the first page of one service.
    let rest = detail("240.0.0.11", Some(&first), 20).unwrap().unwrap();
    assert_eq!(
        service_keys(&rest.host.services),
        [
            "22/ssh",
            "23/telnet",
            "25/smtp",
            "80/http",
            "110/pop3",
            "443/https"
        ]
    );
    assert_eq!(rest.next, None);
    // IPv6 host detail.
    let v2 = detail("3fff::2", None, 20).unwrap().unwrap();
    assert_eq!(service_keys(&v2.host.services), ["22/ssh"]);
    assert_eq!(
        v2.host.domains,
        vec![
            entry("ssh.example", DomainSource::CertificateSubject),
            entry("scan.northwind.example", DomainSource::DomainScan),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Facets.

/// The facet fixture:
/// - F1 240.1.0.1 DE: 22/ssh OpenSSH (5.0, no exploit), 80/http nginx (9.8, exploit)
/// - F2 240.1.0.2 DE: 22/ssh OpenSSH (7.5, exploit)
/// - F3 240.1.0.3 FR: 22/ssh Dropbear SSH (no summary), 443/https nginx (4.0, no exploit)
/// - F4 240.1.0.4 US: 80/http nginx (no summary)
/// - F5 240.1.0.5 (no country): 2222/ssh OpenSSH (9.0, exploit), 8080/http Apache HTTP Server
/// - F6 240.1.0.6 NL: 21/ftp 23/telnet 25/smtp 110/pop3 143/imap 3306/mysql
fn facet_index() -> ReferenceIndex {
    let vulns = |cvss: &str, exploit: bool| {
        format!(
            r#","vulnerabilities":{{"cves":["CVE-2024-0001"],"max_cvss":{cvss},"has_exploits":{exploit}}}"#
        )
    };
    let product = |title: &str| format!(r#","product":{{"title":"{title}"}}"#);
    let country = |c: &str| format!(r#","host":{{"location":{{"country_code":"{c}"}}}}"#);
    let lines = vec![
        svc(
            "240.1.0.1",
            22,
            "ssh",
            &format!(
                "{}{}{}",
                product("OpenSSH"),
                vulns("5.0", false),
                country("DE")
            ),
        ),
        svc(
            "240.1.0.1",
            80,
            "http",
            &format!("{}{}", product("nginx"), vulns("9.8", true)),
        ),
        svc(
            "240.1.0.2",
            22,
            "ssh",
            &format!(
                "{}{}{}",
                product("OpenSSH"),
                vulns("7.5", true),
                country("DE")
            ),
        ),
        svc(
            "240.1.0.3",
            22,
            "ssh",
            &format!("{}{}", product("Dropbear SSH"), country("FR")),
        ),
        svc(
            "240.1.0.3",
            443,
            "https",
            &format!("{}{}", product("nginx"), vulns("4.0", false)),
        ),
        svc(
            "240.1.0.4",
            80,
            "http",
            &format!("{}{}", product("nginx"), country("US")),
        ),
        svc(
            "240.1.0.5",
            2222,
            "ssh",
            &format!("{}{}", product("OpenSSH"), vulns("9.0", true)),
        ),
        svc("240.1.0.5", 8080, "http", &product("Apache HTTP Server")),
        svc("240.1.0.6", 21, "ftp", &country("NL")),
        svc("240.1.0.6", 23, "telnet", ""),
        svc("240.1.0.6", 25, "smtp", ""),
        svc("240.1.0.6", 110, "pop3", ""),
        svc("240.1.0.6", 143, "imap", ""),
        svc("240.1.0.6", 3306, "mysql", ""),
    ];
    index_of(IndexConfig::default(), &read(&lines))
}

/// Each group as `(value, clause text, selected, count)` rows, in response order.
type Group = Vec<(String, String, bool, u64)>;

fn facets_of(index: &ReferenceIndex, text: &str) -> Vec<(FacetField, Group)> {
    let Query::Filter(f) = query(text) else {
        panic!("{text} is not a filter")
    };
    let facets = index.facets(&f, now()).unwrap();
    facets
        .groups
        .into_iter()
        .map(|g| {
            assert_eq!(g.status, FacetStatus::Available);
            assert!(g.items.len() <= 5);
            let items = g
                .items
                .into_iter()
                .map(|i| {
                    assert_eq!(i.unique_hosts.relation, Relation::Exact);
                    (
                        i.value,
                        i.clause.to_string(),
                        i.selected,
                        i.unique_hosts.value,
                    )
                })
                .collect();
            (g.field, items)
        })
        .collect()
}

fn item(value: &str, clause: &str, selected: bool, n: u64) -> (String, String, bool, u64) {
    (value.into(), clause.into(), selected, n)
}

#[test]
fn facet_groups() {
    let index = facet_index();
    use FacetField::*;
    let cases: Vec<(&str, Vec<(FacetField, Group)>)> = vec![
        (
            "protocol:ssh",
            vec![
                (
                    Port,
                    vec![
                        item("22", "port:22", false, 3),
                        item("2222", "port:2222", false, 1),
                    ],
                ),
                (
                    Protocol,
                    vec![
                        item("ssh", "protocol:ssh", true, 4),
                        item("http", "protocol:http", false, 3),
                        item("https", "protocol:https", false, 1),
                    ],
                ),
                (
                    Product,
                    vec![
                        item("OpenSSH", "product:\"OpenSSH\"", false, 3),
                        item("Dropbear SSH", "product:\"Dropbear SSH\"", false, 1),
                    ],
                ),
                (
                    Country,
                    vec![
                        item("DE", "country:DE", false, 2),
                        item("FR", "country:FR", false, 1),
                    ],
                ),
                (
                    Cvss,
                    vec![
                        item("4.0-6.9", "cvss:4.0-6.9", false, 1),
                        item("7.0-8.9", "cvss:7.0-8.9", false, 1),
                        item("9.0-10.0", "cvss:9.0-10.0", false, 1),
                    ],
                ),
                (
                    Exploit,
                    vec![
                        item("yes", "exploit:yes", false, 2),
                        item("no", "exploit:no", false, 1),
                    ],
                ),
            ],
        ),
        (
            "product:\"nginx\"",
            vec![
                (
                    Port,
                    vec![
                        item("80", "port:80", false, 2),
                        item("443", "port:443", false, 1),
                    ],
                ),
                (
                    Protocol,
                    vec![
                        item("http", "protocol:http", false, 2),
                        item("https", "protocol:https", false, 1),
                    ],
                ),
                (
                    Product,
                    vec![
                        item("nginx", "product:\"nginx\"", true, 3),
                        item("OpenSSH", "product:\"OpenSSH\"", false, 3),
                        item("Dropbear SSH", "product:\"Dropbear SSH\"", false, 1),
                    ],
                ),
                (
                    Country,
                    vec![
                        item("DE", "country:DE", false, 1),
                        item("FR", "country:FR", false, 1),
                        item("US", "country:US", false, 1),
                    ],
                ),
                (
                    Cvss,
                    vec![
                        item("4.0-6.9", "cvss:4.0-6.9", false, 1),
                        item("9.0-10.0", "cvss:9.0-10.0", false, 1),
                    ],
                ),
                (
                    Exploit,
                    vec![
                        item("no", "exploit:no", false, 1),
                        item("yes", "exploit:yes", false, 1),
                    ],
                ),
            ],
        ),
        (
            // Host-level only: six candidates, five shown, ports in numeric order.
            "country:NL",
            vec![
                (
                    Port,
                    vec![
                        item("21", "port:21", false, 1),
                        item("23", "port:23", false, 1),
                        item("25", "port:25", false, 1),
                        item("110", "port:110", false, 1),
                        item("143", "port:143", false, 1),
                    ],
                ),
                (
                    Protocol,
                    vec![
                        item("ftp", "protocol:ftp", false, 1),
                        item("imap", "protocol:imap", false, 1),
                        item("mysql", "protocol:mysql", false, 1),
                        item("pop3", "protocol:pop3", false, 1),
                        item("smtp", "protocol:smtp", false, 1),
                    ],
                ),
                (Product, vec![]),
                (Country, vec![item("NL", "country:NL", true, 1)]),
                (Cvss, vec![]),
                (Exploit, vec![]),
            ],
        ),
        (
            // Three clauses: the country value makes a fourth, and is still counted.
            "port:22 protocol:ssh exploit:yes",
            vec![
                (Port, vec![item("22", "port:22", true, 1)]),
                (Protocol, vec![item("ssh", "protocol:ssh", true, 1)]),
                (
                    Product,
                    vec![item("OpenSSH", "product:\"OpenSSH\"", false, 1)],
                ),
                (Country, vec![item("DE", "country:DE", false, 1)]),
                (Cvss, vec![item("7.0-8.9", "cvss:7.0-8.9", false, 1)]),
                (Exploit, vec![item("yes", "exploit:yes", true, 1)]),
            ],
        ),
        (
            // Candidates whose count would be zero (port 22, port 8080, Apache HTTP Server,
            // exploit:no) are left out; the selected value comes first.
            "cvss:9.0-10.0",
            vec![
                (
                    Port,
                    vec![
                        item("80", "port:80", false, 1),
                        item("2222", "port:2222", false, 1),
                    ],
                ),
                (
                    Protocol,
                    vec![
                        item("http", "protocol:http", false, 1),
                        item("ssh", "protocol:ssh", false, 1),
                    ],
                ),
                (
                    Product,
                    vec![
                        item("OpenSSH", "product:\"OpenSSH\"", false, 1),
                        item("nginx", "product:\"nginx\"", false, 1),
                    ],
                ),
                (Country, vec![item("DE", "country:DE", false, 1)]),
                (
                    Cvss,
                    vec![
                        item("9.0-10.0", "cvss:9.0-10.0", true, 2),
                        item("4.0-6.9", "cvss:4.0-6.9", false, 2),
                    ],
                ),
                (Exploit, vec![item("yes", "exploit:yes", false, 2)]),
            ],
        ),
        (
            "port:9999",
            vec![
                (Port, vec![]),
                (Protocol, vec![]),
                (Product, vec![]),
                (Country, vec![]),
                (Cvss, vec![]),
                (Exploit, vec![]),
            ],
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(facets_of(&index, text), expected, "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Exposure.

/// The exposure fixture (global tiles derived with the web-mercator formula):
/// - E1 240.2.0.1 (0.5, 0.5) DE: 22/ssh, 80/http   → 4/8/7
/// - E2 240.2.0.2 (1.5, 1.5) FR: 22/ssh            → 4/8/7
/// - E3 240.2.0.3 (2.0, 2.0) FR: 443/https         → 4/8/7
/// - E4 240.2.0.4 Sydney, no country: 22/ssh       → 4/14/9
/// - E5 240.2.0.5 no position, DE: 22/ssh          → no tile
/// - E6 3fff::10 New York, US: 80/http, 8080/http  → 4/4/6
/// - E7 240.2.0.7 (40.0, -74.5) US: 22/ssh         → 4/4/6
fn exposure_index() -> ReferenceIndex {
    let at = |lat: f64, lon: f64, c: Option<&str>| {
        let country = c
            .map(|c| format!(r#""country_code":"{c}","#))
            .unwrap_or_default();
        format!(r#","host":{{"location":{{{country}"latitude":{lat},"longitude":{lon}}}}}"#)
    };
    let lines = vec![
        svc("240.2.0.1", 22, "ssh", &at(0.5, 0.5, Some("DE"))),
        svc("240.2.0.1", 80, "http", ""),
        svc("240.2.0.2", 22, "ssh", &at(1.5, 1.5, Some("FR"))),
        svc("240.2.0.3", 443, "https", &at(2.0, 2.0, Some("FR"))),
        svc("240.2.0.4", 22, "ssh", &at(-33.8688, 151.2093, None)),
        svc(
            "240.2.0.5",
            22,
            "ssh",
            r#","host":{"location":{"country_code":"DE"}}"#,
        ),
        svc("3fff::10", 80, "http", &at(40.7128, -74.006, Some("US"))),
        svc("3fff::10", 8080, "http", ""),
        svc("240.2.0.7", 22, "ssh", &at(40.0, -74.5, Some("US"))),
    ];
    index_of(IndexConfig::default(), &read(&lines))
}

/// `(key, latitude, longitude, hosts, services, country)` per bucket.
type Bucket = (String, f64, f64, u64, u64, Option<(CountryCode, u32)>);

fn check_exposure(
    index: &ReferenceIndex,
    text: &str,
    resolution: Resolution,
    hosts: u64,
    services: u64,
    expected: &[Bucket],
) {
    let e = index.exposure(&query(text), resolution, now()).unwrap();
    assert_eq!(e.unique_hosts.value, hosts, "{text}");
    assert_eq!(e.unique_hosts.relation, Relation::Exact);
    assert_eq!(e.service_count, services, "{text}");
    assert_eq!(e.resolution, resolution);
    assert!(!e.bounded);
    assert_eq!(e.buckets.len(), expected.len(), "{text}: {:?}", e.buckets);
    for (b, (key, lat, lon, h, s, country)) in e.buckets.iter().zip(expected) {
        assert_eq!(&b.key, key, "{text}");
        assert!(
            (b.latitude - lat).abs() < 1e-9,
            "{text} {key}: latitude {}",
            b.latitude
        );
        assert!(
            (b.longitude - lon).abs() < 1e-9,
            "{text} {key}: longitude {}",
            b.longitude
        );
        assert_eq!(
            (b.unique_hosts, b.service_count, b.country),
            (*h, *s, *country),
            "{text} {key}"
        );
    }
}

#[test]
fn exposure_tiles() {
    let index = exposure_index();
    let b =
        |key: &str, lat: f64, lon: f64, h: u64, s: u64, country: Option<(&str, u32)>| -> Bucket {
            (key.into(), lat, lon, h, s, country.map(|(c, n)| (cc(c), n)))
        };
    // Service-level query: only the services satisfying it count. Equal host counts order by
    // key text ("4/14/9" before "4/4/6"); a DE/FR tie goes to DE.
    check_exposure(
        &index,
        "port:22",
        Resolution::Global,
        5,
        5,
        &[
            b("4/8/7", 1.0, 1.0, 2, 2, Some(("DE", 2))),
            b("4/14/9", -33.8688, 151.2093, 1, 1, None),
            b("4/4/6", 40.0, -74.5, 1, 1, Some(("US", 1))),
        ],
    );
    // No service-level clause: every current service of the matching hosts.
    check_exposure(
        &index,
        "240.2.0.0/24",
        Resolution::Global,
        6,
        7,
        &[
            b("4/8/7", 4.0 / 3.0, 4.0 / 3.0, 3, 4, Some(("FR", 2))),
            b("4/14/9", -33.8688, 151.2093, 1, 1, None),
            b("4/4/6", 40.0, -74.5, 1, 1, Some(("US", 1))),
        ],
    );
    check_exposure(
        &index,
        "protocol:http",
        Resolution::Regional,
        2,
        3,
        &[
            b("6/18/24", 40.7128, -74.006, 1, 2, Some(("US", 1))),
            b("6/32/31", 0.5, 0.5, 1, 1, Some(("DE", 1))),
        ],
    );
    check_exposure(
        &index,
        "country:US",
        Resolution::Global,
        2,
        3,
        &[b(
            "4/4/6",
            (40.7128 + 40.0) / 2.0,
            (-74.006 - 74.5) / 2.0,
            2,
            3,
            Some(("US", 1)),
        )],
    );
    check_exposure(&index, "240.2.0.5", Resolution::Local, 1, 1, &[]);
    check_exposure(
        &index,
        "3fff::10",
        Resolution::Local,
        1,
        2,
        &[b("8/75/96", 40.7128, -74.006, 1, 2, Some(("US", 1)))],
    );
    check_exposure(&index, "port:9999", Resolution::Global, 0, 0, &[]);
}

#[test]
fn exposure_is_bounded_at_500_buckets() {
    // n hosts on distinct zoom-8 tiles (1.5° apart in longitude, wider than a 1.40625° tile;
    // rows 5° apart), each with one ssh service.
    let spread = |n: usize| -> Vec<String> {
        (0..n)
            .map(|i| {
                let lon = -175.0 + 1.5 * (i % 200) as f64;
                let lat = -20.0 + 5.0 * (i / 200) as f64;
                svc(
                    &format!("240.3.{}.{}", i / 256, i % 256),
                    22,
                    "ssh",
                    &format!(r#","host":{{"location":{{"latitude":{lat},"longitude":{lon}}}}}"#),
                )
            })
            .collect()
    };
    let exactly = index_of(IndexConfig::default(), &read(&spread(500)));
    let e = exactly
        .exposure(&query("port:22"), Resolution::Local, now())
        .unwrap();
    assert_eq!(
        (
            e.unique_hosts.value,
            e.service_count,
            e.buckets.len(),
            e.bounded
        ),
        (500, 500, 500, false)
    );

    // 600 tiles, and a second host on the last one's position: that tile comes first.
    let mut lines = spread(600);
    lines.push(svc(
        "240.3.9.9",
        22,
        "ssh",
        r#","host":{"location":{"country_code":"BR","latitude":-10.0,"longitude":123.5}}"#,
    ));
    let many = index_of(IndexConfig::default(), &read(&lines));
    let e = many
        .exposure(&query("port:22"), Resolution::Local, now())
        .unwrap();
    assert_eq!((e.unique_hosts.value, e.service_count), (601, 601));
    assert!(e.bounded);
    assert_eq!(e.buckets.len(), 500);
    let first = &e.buckets[0];
    assert_eq!((first.unique_hosts, first.service_count), (2, 2));
    assert_eq!((first.latitude, first.longitude), (-10.0, 123.5));
    assert_eq!(first.country, Some((cc("BR"), 1)));
    assert!(
        e.buckets[1..]
            .iter()
            .all(|b| b.unique_hosts == 1 && b.country.is_none())
    );
    assert!(
        e.buckets[1..].windows(2).all(|w| w[0].key < w[1].key),
        "ties ordered by key"
    );
}

#[test]
fn tile_math_known_tiles() {
    for (lat, lon, zoom, expected) in [
        (0.0, 0.0, 4, (8, 8)),
        (48.1374, 11.5755, 8, (136, 88)),
        (40.7128, -74.006, 4, (4, 6)),
        (40.7128, -74.006, 8, (75, 96)),
        (-33.8688, 151.2093, 6, (58, 38)),
        (89.9, -180.0, 4, (0, 0)),
        (-89.9, 180.0, 4, (15, 15)),
    ] {
        assert_eq!(tile_of(lat, lon, zoom), expected, "{lat} {lon} {zoom}");
    }
}
