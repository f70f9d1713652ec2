//! Censys host records: one host JSON object per line (the `hosts` view of the Search API or
//! its exports; a `{"result": {...}}` or `{"resource": {...}}` wrapper is unwrapped).
//!
//! **Mapped.** Each entry of `services` becomes a `service` at its `observed_at` (else the
//! host's `last_updated_at`). The protocol is the token of the lowercased `service_name`
//! through [`crate::services::CENSYS`], or the name itself when it is a registry token;
//! `HTTP` with TLS (a `tls` block or `extended_service_name` `HTTPS`) is `https`. The first
//! `software` entry with a product makes the product (its `uniform_resource_identifier` as
//! CPE); `http.response` the status code, `html_title` and `Server` header; `tls` the
//! selected version and cipher and the leaf's names, subject CN and O, issuer CN and O,
//! validity and SHA-256; `ssh` the endpoint id (protocol, software, comment), host-key
//! algorithm and fingerprint and HASSH; `banner` (first 256 characters) the summary of other
//! protocols. Enrichment: `location` (continent, country, province, city, coordinates),
//! `autonomous_system` (as the BGP attribution with its name, and `bgp_prefix` as the WHOIS
//! block), and `dns.reverse_dns.names` (IPv4 only).
//!
//! **Dropped, and counted.** Services whose name maps to no token (`UNKNOWN`, …, by name).
//! Not part of the format: labels, operating system, full certificates and chains, HTTP
//! bodies and headers beyond `Server`, Censys' own vulnerability ranks.

use std::io::BufRead;
use std::net::IpAddr;

use periscope_model::{DomainName, EvidenceKind, Timestamp};
use serde_json::Value;

use crate::draft::{
    self, Asn, Asns, Certificate, Http, Location, Product, Service, Ssh, Tls, Whois,
};
use crate::nmap::san;
use crate::services::{CENSYS, lookup_or_token};
use crate::shodan::{JsonRecords, f, padded_cpe, s};
use crate::{Error, Importer, Item, Options, Tally};

/// Reads Censys host records.
pub struct CensysImporter<R>(JsonRecords<R>);

impl<R: BufRead> CensysImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Result<Self, Error> {
        Ok(Self(JsonRecords::new(input, options, host)))
    }
}

impl<R: BufRead> Importer for CensysImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        self.0.next()
    }

    fn tally(&self) -> &Tally {
        &self.0.tally
    }
}

fn bad(field: &str, reason: impl Into<String>) -> (String, String) {
    (field.to_owned(), reason.into())
}

fn clean(v: Option<&str>, max: usize) -> Option<String> {
    v.and_then(|t| draft::clean(t, max))
}

fn host(v: &Value, tally: &mut Tally) -> Result<Vec<Service>, (String, String)> {
    let mut v = v;
    for wrapper in ["result", "resource"] {
        if let Some(inner) = v.get(wrapper).filter(|i| i.get("ip").is_some()) {
            v = inner;
        }
    }
    let ip: IpAddr = s(v, &["ip"])
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| bad("ip", "missing or not an IP address"))?;
    let updated = s(v, &["last_updated_at"]).and_then(|t| Timestamp::parse(t).ok());
    let mut host = draft::Host::default();
    let loc = v.get("location").cloned().unwrap_or(Value::Null);
    let (lat, lon) = (
        f(&loc, &["coordinates", "latitude"]),
        f(&loc, &["coordinates", "longitude"]),
    );
    let location = Location {
        continent: clean(s(&loc, &["continent"]), 128),
        country_code: s(&loc, &["country_code"]).map(str::to_owned),
        country_name: clean(s(&loc, &["country"]), 128),
        subdivision_1: clean(s(&loc, &["province"]), 128),
        city: clean(s(&loc, &["city"]), 128),
        latitude: lat.filter(|_| lon.is_some()),
        longitude: lon.filter(|_| lat.is_some()),
        ..Location::default()
    };
    if location.country_code.is_some() || location.latitude.is_some() || location.city.is_some() {
        host.location = Some(location);
    }
    let asys = v.get("autonomous_system").cloned().unwrap_or(Value::Null);
    if let Some(asn) = f(&asys, &["asn"]).map(|a| a as u32).filter(|a| *a > 0) {
        host.asn = Some(Asns {
            bgp: Some(Asn {
                asn,
                organization: clean(s(&asys, &["name"]), 256),
            }),
            ..Asns::default()
        });
    }
    if let Some(prefix) = s(&asys, &["bgp_prefix"]) {
        host.whois = Some(Whois {
            cidr: Some(prefix.to_owned()),
            description: clean(s(&asys, &["description"]), 256),
            ..Whois::default()
        });
    }
    if ip.is_ipv4()
        && let Some(Value::Array(names)) = v
            .get("dns")
            .and_then(|d| d.get("reverse_dns"))
            .and_then(|r| r.get("names"))
    {
        for name in names.iter().filter_map(Value::as_str) {
            if let Ok(n) = DomainName::parse(name) {
                let n = n.to_string();
                if !host.reverse_dns.contains(&n) && host.reverse_dns.len() < 16 {
                    host.reverse_dns.push(n);
                }
            }
        }
    }
    let Some(services) = v.get("services").and_then(Value::as_array) else {
        return Err(bad("services", "missing or not an array"));
    };
    let mut out = Vec::new();
    for (i, svc) in services.iter().enumerate() {
        let here = |m: &str| format!("services[{i}].{m}");
        let port = f(svc, &["port"])
            .map(|p| p as u64)
            .and_then(|p| u16::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| bad(&here("port"), "missing or not a port number 1..=65535"))?;
        let transport = match s(svc, &["transport_protocol"])
            .unwrap_or("TCP")
            .to_ascii_lowercase()
            .as_str()
        {
            "tcp" | "quic" => "tcp",
            "udp" => "udp",
            _ => return Err(bad(&here("transport_protocol"), "not TCP or UDP")),
        };
        let at = s(svc, &["observed_at"])
            .and_then(|t| Timestamp::parse(t).ok())
            .or(updated)
            .ok_or_else(|| {
                bad(
                    &here("observed_at"),
                    "missing or not a time (and no last_updated_at)",
                )
            })?;
        let name = s(svc, &["service_name"]).unwrap_or("").to_ascii_lowercase();
        let tls = svc.get("tls").is_some_and(|t| !t.is_null())
            || s(svc, &["extended_service_name"]).is_some_and(|e| e.eq_ignore_ascii_case("https"));
        let Some(token) = lookup_or_token(CENSYS, &name, transport, tls) else {
            tally.unmapped(if name.is_empty() {
                "(no service_name)"
            } else {
                &name
            });
            continue;
        };
        if ip.is_ipv6() && !token.entry().ipv6 {
            tally.unmapped(&format!("{name} over IPv6"));
            continue;
        }
        let mut service = Service::new(ip.to_string(), port, transport, token.as_str(), at);
        service.host = host.clone();
        if let Some(Value::Array(software)) = svc.get("software")
            && let Some(sw) = software.iter().find(|s| s.get("product").is_some())
            && let Some(title) = clean(s(sw, &["product"]), 256)
        {
            service.product = Some(Product {
                title,
                version: clean(s(sw, &["version"]), 128),
                cpe: s(sw, &["uniform_resource_identifier"]).and_then(padded_cpe),
            });
        }
        if token.entry().tls
            && let Some(t) = svc.get("tls").filter(|t| t.is_object())
        {
            let leaf = t
                .get("certificates")
                .and_then(|c| c.get("leaf_data"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut c = Certificate {
                common_name: clean(s(&leaf, &["subject", "common_name"]), 256),
                subject_organization: clean(s(&leaf, &["subject", "organization"]), 256),
                issuer_common_name: clean(s(&leaf, &["issuer", "common_name"]), 256),
                issuer_organization: clean(s(&leaf, &["issuer", "organization"]), 256),
                valid_from: s(&leaf, &["validity", "start"])
                    .and_then(|t| Timestamp::parse(t).ok())
                    .map(|t| t.to_string()),
                valid_until: s(&leaf, &["validity", "end"])
                    .and_then(|t| Timestamp::parse(t).ok())
                    .map(|t| t.to_string()),
                fingerprint_sha256: s(&leaf, &["fingerprint"])
                    .filter(|h| h.len() == 64)
                    .map(str::to_lowercase),
                ..Certificate::default()
            };
            if let Some(Value::Array(names)) = leaf.get("names") {
                for n in names.iter().filter_map(Value::as_str) {
                    match san(n) {
                        Some(n)
                            if !c.subject_alt_names.contains(&n)
                                && c.subject_alt_names.len() < 100 =>
                        {
                            c.subject_alt_names.push(n)
                        }
                        Some(_) => {}
                        None => tally.skipped("certificate name not a DNS name"),
                    }
                }
            }
            service.tls = Some(Tls {
                version: clean(s(t, &["version_selected"]), 128),
                cipher_suite: clean(s(t, &["cipher_selected"]), 128),
                browser_trusted: None,
                certificate: (c != Certificate::default()).then_some(c),
            });
        }
        match token.entry().evidence_kind {
            EvidenceKind::Http => {
                if let Some(r) = svc.get("http").and_then(|h| h.get("response")) {
                    let status = f(r, &["status_code"])
                        .map(|c| c as u16)
                        .filter(|c| (100..=599).contains(c));
                    service.http = Some(Http {
                        status_code: status,
                        title: clean(s(r, &["html_title"]), 512),
                        server: clean(
                            s(r, &["headers", "Server"]).or(s(r, &["headers", "server"])),
                            256,
                        ),
                        complete: status.is_some(),
                    });
                }
            }
            EvidenceKind::Ssh => {
                if let Some(ssh) = svc.get("ssh").filter(|s| s.is_object()) {
                    service.ssh = Some(Ssh {
                        protocol_version: clean(s(ssh, &["endpoint_id", "protocol_version"]), 256),
                        software_version: clean(s(ssh, &["endpoint_id", "software_version"]), 256),
                        comments: clean(s(ssh, &["endpoint_id", "comment"]), 256),
                        host_key_algorithm: clean(
                            s(ssh, &["algorithm_selection", "host_key_algorithm"]),
                            256,
                        ),
                        host_key_fingerprint: s(ssh, &["server_host_key", "fingerprint_sha256"])
                            .and_then(hex_to_openssh),
                        hassh: s(ssh, &["hassh_fingerprint"])
                            .filter(|h| h.len() == 32)
                            .map(str::to_lowercase),
                    });
                }
            }
            EvidenceKind::Summary => {
                if let Some(banner) = s(svc, &["banner"]) {
                    service.summary_field("banner", banner);
                }
            }
        }
        out.push(service);
    }
    Ok(out)
}

fn hex_to_openssh(hex: &str) -> Option<String> {
    use base64::Engine;
    let hex = hex.trim();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    Some(format!(
        "SHA256:{}",
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes)
    ))
}
