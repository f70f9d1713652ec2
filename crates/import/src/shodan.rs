//! Shodan banners: the JSON lines of `shodan download` (usually `.json.gz`), one banner (one
//! service of one host) per line.
//!
//! **Mapped.** Each banner becomes a `service` at its `timestamp` (UTC). The protocol is the
//! token of `_shodan.module` (after dropping a `-simple-new`, `-simple` or `-old` suffix)
//! through [`crate::services::SHODAN`], or the module itself when it is a registry token;
//! `http` with an `ssl` block is `https`. `product`/`version` and the first `cpe23` (padded
//! to eleven components) make the product; `vulns` the CVE ids and the highest `cvss`
//! (Shodan does not say whether an exploit is known: `has_exploits` is false); `http`
//! status, title and server; `ssl` the negotiated version and cipher and the leaf
//! certificate's subject CN and O, issuer CN and O, validity and SHA-256; `ssh` the key type,
//! the `SHA256:` fingerprint of its key, HASSH, and the identification string of `data`; for
//! other protocols the first line of `data` as the summary `banner`. Enrichment: `location`
//! (country, city, position), `asn` (as the BGP attribution), `org` and `isp` (network
//! provider), `hostnames` (reverse DNS, IPv4 only) and the first of `domains`.
//!
//! **Dropped, and counted.** Banners whose module maps to no token (by module). Not part of
//! the format: raw `data` beyond its first line, certificate extensions and chains, `opts`,
//! screenshots, tags and Shodan's crawler metadata.

use std::io::BufRead;
use std::net::IpAddr;

use periscope_model::observation::ObservationReader;
use periscope_model::{CveId, DomainName, EvidenceKind, Timestamp};
use serde_json::Value;

use crate::draft::{
    self, Asn, Asns, Certificate, Http, Line, Location, Product, Provider, Service, Ssh, Tls,
    Vulnerabilities,
};
use crate::fingerprint::ssh_key_sha256;
use crate::lines::{self, JsonLine, JsonLines};
use crate::services::{SHODAN, lookup_or_token};
use crate::{Error, Importer, Item, Options, Rejected, Tally};

/// Maps one JSON object to its services, or names the member that is wrong and why.
pub(crate) type MapRecord = fn(&Value, &mut Tally) -> Result<Vec<Service>, (String, String)>;

/// A JSON-lines importer driven by a function from one object to its service.
pub(crate) struct JsonRecords<R> {
    lines: JsonLines<R>,
    reader: ObservationReader,
    pub(crate) tally: Tally,
    map: MapRecord,
}

impl<R: BufRead> JsonRecords<R> {
    pub(crate) fn new(input: R, options: &Options, map: MapRecord) -> Self {
        Self {
            lines: JsonLines::new(input),
            reader: ObservationReader::new(options.now),
            tally: Tally::default(),
            map,
        }
    }

    pub(crate) fn next(&mut self) -> Result<Option<Item>, Error> {
        loop {
            let Some(line) = self.lines.next_line()? else {
                return Ok(None);
            };
            let number = self.lines.number();
            let reject = |field: &str, reason: String| {
                Item::Rejected(Rejected {
                    line: number,
                    field: field.to_owned(),
                    reason,
                })
            };
            let text = match line {
                JsonLine::Blank => continue,
                JsonLine::Bad(reason) => {
                    self.tally.records += 1;
                    return Ok(Some(reject("(line)", reason)));
                }
                JsonLine::Text(text) => text,
            };
            self.tally.records += 1;
            let value = match lines::value(&text) {
                Ok(value) => value,
                Err(reason) => return Ok(Some(reject("(line)", reason))),
            };
            return Ok(Some(match (self.map)(&value, &mut self.tally) {
                Ok(services) => draft::validate(
                    &mut self.reader,
                    number,
                    services
                        .into_iter()
                        .map(|s| Line::Service(Box::new(s)))
                        .collect(),
                ),
                Err((field, reason)) => reject(&field, reason),
            }));
        }
    }
}

/// Reads Shodan banners.
pub struct ShodanImporter<R>(JsonRecords<R>);

impl<R: BufRead> ShodanImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Result<Self, Error> {
        Ok(Self(JsonRecords::new(input, options, banner)))
    }
}

impl<R: BufRead> Importer for ShodanImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        self.0.next()
    }

    fn tally(&self) -> &Tally {
        &self.0.tally
    }
}

pub(crate) fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    match v {
        Value::String(s) => Some(s.as_str()),
        Value::Array(a) => a.first().and_then(Value::as_str),
        _ => None,
    }
}

pub(crate) fn f(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

fn bad(field: &str, reason: &str) -> (String, String) {
    (field.to_owned(), reason.to_owned())
}

/// A Shodan time: `2026-11-20T13:04:11.123456` (UTC, no zone) or RFC 3339.
fn shodan_time(text: &str) -> Option<Timestamp> {
    Timestamp::parse(text)
        .or_else(|_| Timestamp::parse(&format!("{text}Z")))
        .ok()
}

/// A certificate time `20260901000000Z` as RFC 3339.
fn asn1_time(text: &str) -> Option<String> {
    let t = text.trim_end_matches('Z');
    if t.len() != 14 || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let iso = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &t[0..4],
        &t[4..6],
        &t[6..8],
        &t[8..10],
        &t[10..12],
        &t[12..14]
    );
    Timestamp::parse(&iso).ok().map(|t| t.to_string())
}

/// A CPE 2.3 string with its missing trailing components as `*`.
pub(crate) fn padded_cpe(cpe: &str) -> Option<String> {
    let cpe = crate::cpe::to_cpe23(cpe)?;
    let parts = cpe.split(':').count();
    if parts > 13 {
        return None;
    }
    let padded = format!("{cpe}{}", ":*".repeat(13 - parts));
    periscope_model::Cpe23::parse(&padded).ok().map(|_| padded)
}

fn banner(v: &Value, tally: &mut Tally) -> Result<Vec<Service>, (String, String)> {
    let map = v
        .as_object()
        .ok_or_else(|| bad("(line)", "not a JSON object"))?;
    let ip: IpAddr = s(v, &["ip_str"])
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("ip_str", "missing or not an IP address"))?;
    let port = map
        .get("port")
        .and_then(Value::as_u64)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| bad("port", "missing or not a port number 1..=65535"))?;
    let transport = match s(v, &["transport"]).unwrap_or("tcp") {
        "tcp" => "tcp",
        "udp" => "udp",
        _ => return Err(bad("transport", "not tcp or udp")),
    };
    let at = s(v, &["timestamp"])
        .and_then(shodan_time)
        .ok_or_else(|| bad("timestamp", "missing or not a time"))?;
    let module = s(v, &["_shodan", "module"]).unwrap_or("");
    let base = ["-simple-new", "-simple", "-old"]
        .iter()
        .find_map(|suffix| module.strip_suffix(suffix))
        .unwrap_or(module);
    let tls = map.get("ssl").is_some_and(|s| !s.is_null());
    let Some(token) = lookup_or_token(SHODAN, base, transport, tls) else {
        tally.unmapped(if module.is_empty() {
            "(no module)"
        } else {
            module
        });
        return Ok(Vec::new());
    };
    if ip.is_ipv6() && !token.entry().ipv6 {
        tally.unmapped(&format!("{module} over IPv6"));
        return Ok(Vec::new());
    }
    let mut out = Service::new(ip.to_string(), port, transport, token.as_str(), at);
    if let Some(title) = s(v, &["product"]).and_then(|p| draft::clean(p, 256)) {
        out.product = Some(Product {
            title,
            version: s(v, &["version"]).and_then(|p| draft::clean(p, 128)),
            cpe: s(v, &["cpe23"]).and_then(padded_cpe),
        });
    }
    if let Some(vulns) = map.get("vulns").and_then(Value::as_object) {
        let mut vs = Vulnerabilities::default();
        for (id, detail) in vulns {
            if let Ok(cve) = CveId::parse(id)
                && vs.cves.len() < 1000
            {
                vs.cves.push(cve.to_string());
                if let Some(score) = f(detail, &["cvss"]).filter(|c| (0.0..=10.0).contains(c)) {
                    let score = (score * 10.0).round() / 10.0;
                    vs.max_cvss = Some(vs.max_cvss.map_or(score, |m: f64| m.max(score)));
                }
            }
        }
        out.vulnerabilities = Some(vs);
    }
    let data = s(v, &["data"]).unwrap_or("");
    if token.entry().tls && tls {
        let cert = v
            .get("ssl")
            .and_then(|s| s.get("cert"))
            .cloned()
            .unwrap_or(Value::Null);
        let c = Certificate {
            common_name: s(&cert, &["subject", "CN"]).and_then(|t| draft::clean(t, 256)),
            subject_organization: s(&cert, &["subject", "O"]).and_then(|t| draft::clean(t, 256)),
            issuer_common_name: s(&cert, &["issuer", "CN"]).and_then(|t| draft::clean(t, 256)),
            issuer_organization: s(&cert, &["issuer", "O"]).and_then(|t| draft::clean(t, 256)),
            valid_from: s(&cert, &["issued"]).and_then(asn1_time),
            valid_until: s(&cert, &["expires"]).and_then(asn1_time),
            fingerprint_sha256: s(&cert, &["fingerprint", "sha256"])
                .filter(|h| h.len() == 64)
                .map(str::to_lowercase),
            ..Certificate::default()
        };
        out.tls = Some(Tls {
            version: s(v, &["ssl", "cipher", "version"]).and_then(|t| draft::clean(t, 128)),
            cipher_suite: s(v, &["ssl", "cipher", "name"]).and_then(|t| draft::clean(t, 128)),
            browser_trusted: None,
            certificate: (c != Certificate::default()).then_some(c),
        });
    }
    match token.entry().evidence_kind {
        EvidenceKind::Http => {
            if let Some(http) = v.get("http").filter(|h| h.is_object()) {
                out.http = Some(Http {
                    status_code: f(http, &["status"])
                        .map(|c| c as u16)
                        .filter(|c| (100..=599).contains(c)),
                    title: s(http, &["title"]).and_then(|t| draft::clean(t, 512)),
                    server: s(http, &["server"]).and_then(|t| draft::clean(t, 256)),
                    complete: f(http, &["status"]).is_some(),
                });
            }
        }
        EvidenceKind::Ssh => {
            let ident = data.lines().next().unwrap_or("").trim();
            let (version, software) = ident
                .strip_prefix("SSH-")
                .and_then(|r| r.split_once('-'))
                .unwrap_or(("", ""));
            let (software, comments) = software.split_once(' ').unwrap_or((software, ""));
            out.ssh = Some(Ssh {
                protocol_version: draft::clean(version, 256),
                software_version: draft::clean(software, 256),
                comments: draft::clean(comments, 256),
                host_key_algorithm: s(v, &["ssh", "type"]).and_then(|t| draft::clean(t, 256)),
                host_key_fingerprint: s(v, &["ssh", "key"]).and_then(ssh_key_sha256),
                hassh: s(v, &["ssh", "hassh"])
                    .filter(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                    .map(str::to_lowercase),
            });
        }
        EvidenceKind::Summary => {
            if let Some(first) = data.lines().next() {
                out.summary_field("banner", first);
            }
        }
    }
    let loc = v.get("location").cloned().unwrap_or(Value::Null);
    let location = Location {
        country_code: s(&loc, &["country_code"]).map(str::to_owned),
        country_name: s(&loc, &["country_name"]).and_then(|t| draft::clean(t, 128)),
        city: s(&loc, &["city"]).and_then(|t| draft::clean(t, 128)),
        latitude: f(&loc, &["latitude"]).filter(|_| f(&loc, &["longitude"]).is_some()),
        longitude: f(&loc, &["longitude"]).filter(|_| f(&loc, &["latitude"]).is_some()),
        ..Location::default()
    };
    if location.country_code.is_some() || location.latitude.is_some() || location.city.is_some() {
        out.host.location = Some(location);
    }
    if let Some(asn) = s(v, &["asn"])
        .and_then(|a| a.trim_start_matches("AS").parse::<u32>().ok())
        .filter(|a| *a > 0)
    {
        out.host.asn = Some(Asns {
            bgp: Some(Asn {
                asn,
                organization: None,
            }),
            ..Asns::default()
        });
    }
    let (org, isp) = (s(v, &["org"]), s(v, &["isp"]));
    if org.is_some() || isp.is_some() {
        out.host.provider = Some(Provider {
            organization: org.and_then(|t| draft::clean(t, 256)),
            isp: isp.and_then(|t| draft::clean(t, 256)),
            as_organization: None,
        });
    }
    if ip.is_ipv4()
        && let Some(Value::Array(names)) = map.get("hostnames")
    {
        for name in names.iter().filter_map(Value::as_str) {
            if let Ok(n) = DomainName::parse(name) {
                let n = n.to_string();
                if !out.host.reverse_dns.contains(&n) && out.host.reverse_dns.len() < 16 {
                    out.host.reverse_dns.push(n);
                }
            }
        }
    }
    out.host.domain = s(v, &["domains"])
        .and_then(|d| DomainName::parse(d).ok())
        .map(|d| d.to_string());
    Ok(vec![out])
}
