//! Lines and line surgery shared by the observation tests: valid base lines of every shape,
//! and helpers that set or remove one member by its dotted path, so that each test row reads
//! as "this base line, with this one change".

#![allow(dead_code)] // Each test crate uses a different part of this module.
#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader, ReadError};
use serde_json::{Map, Value};

/// The reader's clock in every test: an hour after the example lines were observed.
pub const NOW: &str = "2026-11-20T14:00:00Z";

/// A reader whose clock reads [`NOW`].
pub fn reader() -> ObservationReader {
    ObservationReader::new(Timestamp::parse(NOW).unwrap())
}

/// Reads `line` as the first line of a fresh reader.
pub fn read(line: &str) -> Result<Option<Observation>, ReadError> {
    reader().read_line(line)
}

/// The smallest complete service line.
pub const MINIMAL: &str = r#"{"kind":"service","ip":"240.0.0.1","port":21,"transport":"tcp","protocol":"ftp","observed_at":"2026-11-20T13:04:11Z","status":"completed"}"#;

/// The example of the format doc: an HTTPS service with every block and every host member.
/// (Mixed-case fingerprint, CPE and SANs, to see them normalised.)
pub const FULL_HTTPS: &str = concat!(
    r#"{"kind":"service","ip":"240.12.7.9","port":443,"transport":"tcp","protocol":"https","#,
    r#""observed_at":"2026-11-20T13:04:11Z","status":"completed","#,
    r#""product":{"title":"nginx","version":"1.24.0","cpe":"cpe:2.3:a:F5:Nginx:1.24.0:*:*:*:*:*:*:*"},"#,
    r#""vulnerabilities":{"cves":["CVE-2023-44487"],"max_cvss":7.5,"has_exploits":true},"#,
    r#""tls":{"version":"TLSv1.3","cipher_suite":"TLS_AES_128_GCM_SHA256","browser_trusted":true,"#,
    r#""certificate":{"subject_alt_names":["WWW.Northwind.example.","*.northwind.example"],"#,
    r#""common_name":"www.northwind.example","subject_organization":"Northwind Traders Ltd","#,
    r#""issuer_common_name":"Example Trust RSA CA","issuer_organization":"Example Trust Services","#,
    r#""valid_from":"2026-09-01T00:00:00Z","valid_until":"2026-11-30T23:59:59Z","#,
    r#""fingerprint_sha256":"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"}},"#,
    r#""http":{"status_code":200,"title":"Northwind Traders","server":"nginx/1.24.0","complete":true},"#,
    r#""host":{"location":{"continent":"Europe","country_code":"DE","country_name":"Germany","#,
    r#""subdivision_1":"Bavaria","subdivision_2":"Upper Bavaria","city":"Munich","#,
    r#""latitude":48.1374,"longitude":11.5755,"accuracy_radius_km":20},"#,
    r#""asn":{"research":{"asn":64512,"organization":"Northwind Traders Ltd"},"#,
    r#""bgp":{"asn":64512,"organization":"NORTHWIND-AS"},"#,
    r#""network":{"asn":64512,"organization":"Northwind Traders Ltd"}},"#,
    r#""provider":{"organization":"Northwind Traders Ltd","as_organization":"Northwind Traders Ltd","isp":"Northwind Traders"},"#,
    r#""whois":{"description":"Northwind Traders web hosting","netname":"NORTHWIND-NET","#,
    r#""organization":"Northwind Traders Ltd","cidr":"240.12.7.9/20","registry":"ripencc","country_code":"DE"},"#,
    r#""reverse_dns":["www.northwind.example"],"dns_name":"www.northwind.example","domain":"northwind.example"}}"#,
);

/// An SSH service.
pub const SSH: &str = concat!(
    r#"{"kind":"service","ip":"240.0.0.22","port":22,"transport":"tcp","protocol":"ssh","#,
    r#""observed_at":"2026-11-20T13:00:00Z","status":"completed","#,
    r#""ssh":{"protocol_version":"2.0","software_version":"OpenSSH_9.6p1","host_key_algorithm":"ssh-ed25519","#,
    r#""host_key_fingerprint":"SHA256:abc","comments":"Ubuntu-3ubuntu13","hassh":"EC7378C1A92F5A8DDE7E8B7A1DDF33D1"}}"#,
);

/// A TLS-capable protocol of summary evidence, with both blocks.
pub const SUMMARY: &str = concat!(
    r#"{"kind":"service","ip":"240.0.0.63","port":6379,"transport":"tcp","protocol":"redis","#,
    r#""observed_at":"2026-11-20T13:00:00Z","status":"completed","#,
    r#""tls":{"version":"TLSv1.2"},"summary":{"version":"7.2.4","mode":"standalone","role":"master"}}"#,
);

/// A domain record with an IPv4 and an IPv6 address.
pub const DOMAIN: &str = r#"{"kind":"domain","name":"www.northwind.example","addresses":["240.12.7.9","3fff:120:7::9"],"observed_at":"2026-11-20T12:00:00Z"}"#;

/// Every valid base line.
pub const BASES: [&str; 5] = [MINIMAL, FULL_HTTPS, SSH, SUMMARY, DOMAIN];

/// `line` with the member at dotted `path` set to the JSON text `json`; missing objects on the
/// way are created.
pub fn set(line: &str, path: &str, json: &str) -> String {
    let value: Value = serde_json::from_str(json).unwrap();
    edit(line, path, |parent, name| {
        parent.insert(name.to_owned(), value);
    })
}

/// `line` with the member at dotted `path` set to a JSON string holding `text`.
pub fn set_str(line: &str, path: &str, text: &str) -> String {
    set(line, path, &Value::String(text.to_owned()).to_string())
}

/// `line` without the member at dotted `path`.
pub fn remove(line: &str, path: &str) -> String {
    edit(line, path, |parent, name| {
        parent.remove(name);
    })
}

fn edit(line: &str, path: &str, change: impl FnOnce(&mut Map<String, Value>, &str)) -> String {
    let mut root: Value = serde_json::from_str(line).unwrap();
    let (parents, name) = path.rsplit_once('.').unwrap_or(("", path));
    let mut node = &mut root;
    for segment in parents.split('.').filter(|s| !s.is_empty()) {
        let object = node.as_object_mut().unwrap();
        let child = object
            .entry(segment.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if child.is_null() {
            *child = Value::Object(Map::new());
        }
        node = child;
    }
    change(node.as_object_mut().unwrap(), name);
    to_line(&root, true)
}

/// Writes an object as one line, `kind` first when `kind_first` (else last).
pub fn to_line(root: &Value, kind_first: bool) -> String {
    let mut members = root.as_object().unwrap().clone();
    let kind = members.remove("kind");
    let mut parts: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
        .collect();
    if let Some(kind) = kind {
        let kind = format!("\"kind\":{kind}");
        if kind_first {
            parts.insert(0, kind);
        } else {
            parts.push(kind);
        }
    }
    format!("{{{}}}", parts.join(","))
}

/// `n` characters of `c`.
pub fn chars(c: char, n: usize) -> String {
    std::iter::repeat_n(c, n).collect()
}
