//! Every importer over fixtures written to its scanner's documented output format (Masscan
//! and ZGrab2 cannot reach a network from CI): what is mapped, what is counted as not mapped,
//! and malformed or truncated input rejected record by record with its line, nothing of a
//! bad record kept. Format detection over the same fixtures.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use periscope_import::{Format, Item, Options, Tally, detect, importer, write_observation};
use periscope_model::Timestamp;
use periscope_model::observation::ObservationReader;
use serde_json::Value;

fn options(ports: &[&str]) -> Options {
    let mut options = Options::new(Timestamp::parse("2026-11-26T00:00:00Z").unwrap());
    for p in ports {
        options.zgrab2_ports.add(p).unwrap();
    }
    options
}

/// Imports `input`: the observation lines as JSON, the rejections as text, the tally.
fn import(format: Format, input: &str, ports: &[&str]) -> (Vec<Value>, Vec<String>, Tally) {
    let mut imp = importer(format, Box::new(input.as_bytes()), &options(ports)).unwrap();
    let (mut lines, mut rejected) = (Vec::new(), Vec::new());
    while let Some(item) = imp.next_item().unwrap() {
        match item {
            Item::Record(r) => {
                for o in r.observations {
                    // The line written back from the validated observation reads as the same
                    // observation (what enrichment and convert rely on).
                    let again = write_observation(&o.observation);
                    let mut reader = ObservationReader::new(options(ports).now);
                    assert_eq!(
                        reader.read_line(&again).unwrap(),
                        Some(o.observation.clone()),
                        "{again}"
                    );
                    lines.push(serde_json::from_str(&o.line).unwrap());
                }
            }
            Item::Rejected(r) => rejected.push(r.to_string()),
        }
    }
    (lines, rejected, imp.tally().clone())
}

fn find(lines: &[Value], port: u64) -> &Value {
    lines
        .iter()
        .find(|l| l["port"] == port)
        .unwrap_or_else(|| panic!("no line for port {port}: {lines:?}"))
}

const NMAP: &str = include_str!("fixtures/nmap.xml");

#[test]
fn nmap_maps_services_scripts_and_names_and_counts_the_rest() {
    assert_eq!(detect(NMAP.as_bytes()), Some(Format::NmapXml));
    let (lines, rejected, tally) = import(Format::NmapXml, NMAP, &[]);
    assert!(rejected.is_empty(), "{rejected:?}");
    let protocols: Vec<(u64, &str)> = lines
        .iter()
        .map(|l| (l["port"].as_u64().unwrap(), l["protocol"].as_str().unwrap()))
        .collect();
    assert_eq!(
        protocols,
        [
            (22, "ssh"),
            (3389, "rdp"),
            (445, "samba"),
            (5432, "postgres"),
            (8443, "https")
        ]
    );
    let ssh = find(&lines, 22);
    assert_eq!(ssh["observed_at"], "2026-11-25T09:48:20Z");
    assert_eq!(
        ssh["product"]["cpe"],
        "cpe:2.3:a:openbsd:openssh:8.4p1:*:*:*:*:*:*:*"
    );
    assert_eq!(
        ssh["vulnerabilities"],
        serde_json::json!({"cves": ["CVE-2023-38408", "CVE-2021-41617"], "max_cvss": 9.8, "has_exploits": true})
    );
    assert_eq!(ssh["host"]["reverse_dns"][0], "ptr.corp.example");
    assert_eq!(ssh["host"]["dns_name"], "web.corp.example");
    assert!(
        find(&lines, 3389).get("vulnerabilities").is_none(),
        "no vulners, no CVEs"
    );
    assert_eq!(tally.unmapped.get("tcpwrapped"), Some(&1));
    assert_eq!(tally.skipped.get("port closed"), Some(&995));
    assert_eq!(tally.skipped.get("port filtered"), Some(&1));
    assert_eq!(tally.skipped.get("host down"), Some(&1));
    assert_eq!(tally.records, 2);
}

#[test]
fn nmap_truncated_and_bad_hosts_are_rejected_whole_with_their_line() {
    // A bad address rejects its host; the file cut inside the third host rejects that one.
    let cut = NMAP
        .find("<host starttime=\"1795600000\" endtime=\"1795600100\"><status state=\"down\"")
        .unwrap();
    let input = format!(
        "{}<host endtime=\"1795600100\"><status state=\"up\"/><address addr=\"10.1.2.999\" addrtype=\"ipv4\"/></host>\n{}",
        &NMAP[..cut],
        &NMAP[..NMAP.find("<port protocol=\"tcp\" portid=\"445\">").unwrap()]
            .split_once("<host ")
            .map(|(_, rest)| format!("<host {rest}"))
            .unwrap()
    );
    let (lines, rejected, _) = import(Format::NmapXml, &input, &[]);
    assert_eq!(lines.len(), 5, "the first host is kept whole");
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(
        rejected[0].starts_with("line 21: address: \"10.1.2.999\""),
        "{rejected:?}"
    );
    assert!(
        rejected[1].contains("ends inside <host> begun on line 22"),
        "{rejected:?}"
    );
    // A host whose service breaks a rule of the format (a CPE-less product title too long is
    // cut, but an out-of-range time is not) is rejected whole: none of its ports are kept.
    let future = NMAP.replace(
        "endtime=\"1795600100\"><status state=\"up\"",
        "endtime=\"4102444800\"><status state=\"up\"",
    );
    let (lines, rejected, _) = import(Format::NmapXml, &future, &[]);
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!(rejected.len(), 1);
    assert!(
        rejected[0].contains("22/tcp ssh: observed_at"),
        "{rejected:?}"
    );
}

const MASSCAN_JSON: &str = include_str!("fixtures/masscan.json");

#[test]
fn masscan_json_merges_banners_and_rejects_bad_records_by_line() {
    assert_eq!(detect(MASSCAN_JSON.as_bytes()), Some(Format::MasscanJson));
    let (lines, rejected, tally) = import(Format::MasscanJson, MASSCAN_JSON, &[]);
    assert_eq!(lines.len(), 2, "{lines:?}");
    let https = find(&lines, 443);
    assert_eq!(https["protocol"], "https");
    assert_eq!(
        https["observed_at"], "2026-11-25T09:46:46Z",
        "the newest record's time"
    );
    assert_eq!(https["http"]["server"], "nginx/1.24.0");
    assert_eq!(https["http"]["status_code"], 200);
    // The `ssl` banner's names, then the `X509` certificate's (a leaf made with openssl).
    let certificate = &https["tls"]["certificate"];
    assert_eq!(
        certificate["subject_alt_names"],
        serde_json::json!([
            "www.corp.example",
            "corp.example",
            "www.loopback-test.example",
            "api.loopback-test.example"
        ])
    );
    assert_eq!(
        certificate["fingerprint_sha256"],
        "69a883d3a4dabb577929f7565ecee01f379a322c4856682380a2427444283bd0"
    );
    assert_eq!(
        certificate["subject_organization"],
        "Northwind Loopback Ltd"
    );
    assert_eq!(certificate["issuer_common_name"], "Periscope Test Root");
    assert_eq!(certificate["valid_until"], "2026-12-15T16:27:07Z");
    let ssh = find(&lines, 22);
    assert_eq!(ssh["ssh"]["software_version"], "OpenSSH_9.6p1");
    assert_eq!(
        tally.unmapped.get("port 8000/tcp"),
        Some(&1),
        "http and hikvision"
    );
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(
        rejected[0].starts_with("line 14: ports[0].port: "),
        "{rejected:?}"
    );
    assert!(
        rejected[1].starts_with("line 16: (record): the record is cut short"),
        "{rejected:?}"
    );
}

const MASSCAN_XML: &str = include_str!("fixtures/masscan.xml");

#[test]
fn masscan_xml_maps_well_known_ports_and_stops_at_truncation() {
    assert_eq!(detect(MASSCAN_XML.as_bytes()), Some(Format::MasscanXml));
    let (lines, rejected, tally) = import(Format::MasscanXml, MASSCAN_XML, &[]);
    let got: Vec<(u64, &str)> = lines
        .iter()
        .map(|l| (l["port"].as_u64().unwrap(), l["protocol"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [(22, "ssh"), (80, "http")]);
    assert_eq!(find(&lines, 80)["http"]["title"], "Corp & Co intranet");
    assert_eq!(tally.unmapped.get("port 31337/tcp"), Some(&1));
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(
        rejected[0].starts_with("line 8: host.endtime: "),
        "{rejected:?}"
    );
    assert!(
        rejected[1].contains("line 9") || rejected[1].contains("truncated"),
        "{rejected:?}"
    );
}

const ZGRAB2: &str = include_str!("fixtures/zgrab2.jsonl");

#[test]
fn zgrab2_statuses_evidence_and_bad_lines() {
    assert_eq!(detect(ZGRAB2.as_bytes()), Some(Format::Zgrab2));
    let (lines, rejected, tally) = import(Format::Zgrab2, ZGRAB2, &["http=443", "22"]);
    assert_eq!(lines.len(), 4, "{lines:?}");
    let https = &lines[0];
    assert_eq!(
        (https["port"].as_u64(), https["protocol"].as_str()),
        (Some(443), Some("https"))
    );
    assert_eq!(https["http"]["title"], "Portal");
    assert_eq!(
        https["tls"]["certificate"]["subject_organization"],
        "Corp Ltd"
    );
    assert_eq!(https["tls"]["browser_trusted"], false);
    assert_eq!(https["host"]["dns_name"], "portal.corp.example");
    let ssh = &lines[1];
    assert_eq!(ssh["port"], 22);
    assert_eq!(
        ssh["ssh"]["host_key_fingerprint"],
        "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU"
    );
    assert_eq!(lines[2]["status"], "partial");
    assert_eq!(lines[2]["error"], "read tcp: i/o timeout");
    assert_eq!(lines[3]["status"], "failed");
    assert_eq!(tally.unmapped.get("dnp3"), Some(&1));
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(
        rejected[0].starts_with("line 6: data.http: timestamp"),
        "{rejected:?}"
    );
    assert!(
        rejected[1].starts_with("line 7: (line): the record is cut short"),
        "{rejected:?}"
    );
}

#[test]
fn zgrab2_without_a_port_is_refused() {
    let err = importer(Format::Zgrab2, Box::new(ZGRAB2.as_bytes()), &options(&[]))
        .err()
        .unwrap();
    assert!(err.to_string().contains("--port"), "{err}");
    let mut imp = importer(
        Format::Zgrab2,
        Box::new(ZGRAB2.as_bytes()),
        &options(&["ssh=22"]),
    )
    .unwrap();
    let err = imp.next_item().unwrap_err();
    assert!(
        err.to_string()
            .contains("no --port for the ZGrab2 module \"http\""),
        "{err}"
    );
}

#[test]
fn detection_of_observation_lines_and_unknown_input() {
    let line = r#"{"kind":"domain","name":"a.example","addresses":["240.0.0.1"],"observed_at":"2026-11-20T00:00:00Z"}"#;
    assert_eq!(detect(line.as_bytes()), Some(Format::Jsonl));
    assert_eq!(detect(b"hello"), None);
    assert_eq!(detect(b"<html></html>"), None);
}

const SHODAN: &str = include_str!("fixtures/shodan.jsonl");

#[test]
fn shodan_banners_with_enrichment() {
    assert_eq!(detect(SHODAN.as_bytes()), Some(Format::Shodan));
    let (lines, rejected, tally) = import(Format::Shodan, SHODAN, &[]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!(l["protocol"], "https");
    assert_eq!(l["observed_at"], "2026-11-20T13:04:11Z");
    assert_eq!(
        l["product"]["cpe"],
        "cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*"
    );
    assert_eq!(l["vulnerabilities"]["cves"][0], "CVE-2023-44487");
    assert_eq!(
        l["tls"]["certificate"]["valid_until"],
        "2026-11-30T23:59:59Z"
    );
    assert_eq!(l["host"]["location"]["country_code"], "DE");
    assert_eq!(l["host"]["asn"]["bgp"]["asn"], 64512);
    assert_eq!(tally.unmapped.get("x11"), Some(&1));
    assert_eq!(
        rejected,
        ["line 3: port: missing or not a port number 1..=65535"]
    );
}

const CENSYS: &str = include_str!("fixtures/censys.jsonl");

#[test]
fn censys_hosts_with_enrichment_and_a_bad_service_rejecting_its_host() {
    assert_eq!(detect(CENSYS.as_bytes()), Some(Format::Censys));
    let (lines, rejected, tally) = import(Format::Censys, CENSYS, &[]);
    let got: Vec<(u64, &str)> = lines
        .iter()
        .map(|l| (l["port"].as_u64().unwrap(), l["protocol"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [(22, "ssh"), (443, "https")],
        "the second host is rejected whole"
    );
    assert_eq!(
        lines[0]["ssh"]["host_key_fingerprint"],
        "SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU"
    );
    assert_eq!(
        lines[1]["tls"]["certificate"]["subject_organization"],
        "Corp Ltd"
    );
    assert_eq!(lines[1]["host"]["whois"]["cidr"], "10.3.0.0/16");
    assert_eq!(tally.unmapped.get("elasticsearch"), Some(&1));
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(
        rejected[0].starts_with("line 2: services[1].observed_at"),
        "{rejected:?}"
    );
}
