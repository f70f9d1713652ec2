//! Nmap XML (`nmap -oX`, with or without `-sV` and scripts), one `<host>` at a time.
//!
//! **Mapped.** Every `open` port of a host that is up becomes a `service` observation at the
//! host's `endtime` (its `starttime`, or the run's `start`, when Nmap wrote none). The
//! service name (with `tunnel="ssl"`) maps to a token through [`services::NMAP`]; `product`
//! and `version` become the product, and the first application CPE (`cpe:/a:…`, else the
//! first) becomes its CPE 2.3 form ([`crate::cpe`]). Scripts: `ssl-cert` fills the TLS
//! certificate (SANs of type DNS, subject CN and O, issuer CN and O, validity, SHA-256 of the
//! PEM) on TLS-capable tokens; `http-title` and `http-server-header` fill HTTP evidence
//! (`complete` when either answered); `ssh-hostkey` fills the SSH host key (Ed25519 first,
//! then ECDSA, then RSA; fingerprint `SHA256:` of the key as `ssh-keygen -l` prints it),
//! with `protocol 2.0` of `extrainfo` as the protocol version and product and version as
//! the software; `vulners` fills `vulnerabilities` (its CVE ids, the highest CVSS among
//! them, and whether any entry is marked an exploit) — no other source names CVEs.
//! Hostnames of type `PTR` become `reverse_dns` (IPv4 only, as the format requires), the
//! first of type `user` the `dns_name`. `extrainfo` goes to the summary of summary-kind
//! protocols.
//!
//! **Dropped, and counted.** Hosts not `up` (`host down`); ports not `open`, including
//! `open|filtered` and `<extraports>` (`port closed`, `port filtered`, …); services whose name
//! has no row (`unknown`, `tcpwrapped`, `ssl/unknown`, by name) or whose token is not scanned
//! over IPv6 on an IPv6 host; certificate names that are not DNS names. **Dropped
//! silently, as not part of the format:** OS detection, traceroute, MAC addresses, other
//! scripts' output, `reason` and timing data.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::BufRead;
use std::net::IpAddr;

use periscope_model::domain::certificate_name;
use periscope_model::observation::ObservationReader;
use periscope_model::{CveId, DomainName, EvidenceKind, ProtocolToken, Timestamp};

use crate::draft::{self, Certificate, Http, Line, Product, Service, Ssh, Vulnerabilities};
use crate::fingerprint::{certificate_sha256_from_pem, ssh_key_sha256};
use crate::services::{self, NMAP};
use crate::xml::{Element, XmlRecords};
use crate::{Error, Importer, Item, Options, Rejected, Tally, cpe};

/// Reads `nmap -oX` output.
pub struct NmapImporter<R: BufRead> {
    records: XmlRecords<R>,
    reader: ObservationReader,
    tally: Tally,
    pending: VecDeque<Item>,
}

impl<R: BufRead> NmapImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Self {
        Self {
            records: XmlRecords::new(input),
            reader: ObservationReader::new(options.now),
            tally: Tally::default(),
            pending: VecDeque::new(),
        }
    }
}

impl<R: BufRead> Importer for NmapImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        if let Some(item) = self.pending.pop_front() {
            return Ok(Some(item));
        }
        loop {
            let (line, element) = match self.records.next_record() {
                Ok(Some(record)) => record,
                Ok(None) => return Ok(None),
                Err(e) => {
                    return Ok(Some(Item::Rejected(Rejected {
                        line: e.line,
                        field: "(xml)".to_owned(),
                        reason: e.reason,
                    })));
                }
            };
            if line == 0 || element.name != "host" {
                continue;
            }
            if let Some(root) = self.records.root()
                && root.name != "nmaprun"
            {
                return Ok(Some(Item::Rejected(Rejected {
                    line,
                    field: "(xml)".to_owned(),
                    reason: format!("the root element is <{}>, not Nmap's <nmaprun>", root.name),
                })));
            }
            self.tally.records += 1;
            let run_start = self
                .records
                .root()
                .and_then(|r| r.attr("start"))
                .and_then(|s| s.parse::<i64>().ok());
            let item = match host(&element, run_start, &mut self.tally) {
                Ok(lines) => draft::validate(&mut self.reader, line, lines),
                Err((field, reason)) => Item::Rejected(Rejected {
                    line,
                    field,
                    reason,
                }),
            };
            return Ok(Some(item));
        }
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}

type Bad = (String, String);

fn bad(field: &str, reason: impl Into<String>) -> Bad {
    (field.to_owned(), reason.into())
}

/// The service lines of one `<host>`.
fn host(el: &Element, run_start: Option<i64>, tally: &mut Tally) -> Result<Vec<Line>, Bad> {
    let state = el
        .child("status")
        .and_then(|s| s.attr("state"))
        .unwrap_or("up");
    if state != "up" {
        tally.skipped(&format!("host {state}"));
        return Ok(Vec::new());
    }
    let address = el
        .children_named("address")
        .find(|a| matches!(a.attr("addrtype"), Some("ipv4" | "ipv6")))
        .and_then(|a| a.attr("addr"))
        .ok_or_else(|| bad("address", "the host has no IPv4 or IPv6 <address>"))?;
    let ip: IpAddr = address
        .parse()
        .map_err(|_| bad("address", format!("{address:?} is not an IP address")))?;
    let seconds = ["endtime", "starttime"]
        .iter()
        .find_map(|a| {
            el.attr(a)
                .and_then(|s| s.parse::<i64>().ok())
                .filter(|s| *s > 0)
        })
        .or(run_start)
        .ok_or_else(|| bad("endtime", "neither the host nor the run records a time"))?;
    let at = Timestamp::from_unix(seconds).ok_or_else(|| {
        bad(
            "endtime",
            format!("{seconds} is not a time Periscope stores"),
        )
    })?;

    let mut host = draft::Host::default();
    for name in el
        .child("hostnames")
        .into_iter()
        .flat_map(|h| h.children_named("hostname"))
    {
        let (Some(n), kind) = (name.attr("name"), name.attr("type")) else {
            continue;
        };
        let Ok(parsed) = DomainName::parse(n) else {
            tally.skipped("hostname not a DNS name");
            continue;
        };
        let parsed = parsed.to_string();
        match kind {
            Some("PTR")
                if ip.is_ipv4()
                    && !host.reverse_dns.contains(&parsed)
                    && host.reverse_dns.len() < 16 =>
            {
                host.reverse_dns.push(parsed);
            }
            Some("user") if host.dns_name.is_none() => host.dns_name = Some(parsed),
            _ => {}
        }
    }

    let mut lines = Vec::new();
    let Some(ports) = el.child("ports") else {
        return Ok(lines);
    };
    for extra in ports.children_named("extraports") {
        let state = extra.attr("state").unwrap_or("unknown");
        let count: u64 = extra
            .attr("count")
            .and_then(|c| c.parse().ok())
            .unwrap_or(1);
        *tally.skipped.entry(format!("port {state}")).or_default() += count;
    }
    for port in ports.children_named("port") {
        if let Some(service) = port_service(port, ip, at, &host, tally)? {
            lines.push(Line::Service(Box::new(service)));
        }
    }
    Ok(lines)
}

fn port_service(
    port: &Element,
    ip: IpAddr,
    at: Timestamp,
    host: &draft::Host,
    tally: &mut Tally,
) -> Result<Option<Service>, Bad> {
    let number: u16 = port
        .attr("portid")
        .and_then(|p| p.parse().ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| bad("port.portid", "missing or not a port number 1..=65535"))?;
    let transport = match port.attr("protocol") {
        Some("tcp") => "tcp",
        Some("udp") => "udp",
        other => {
            tally.skipped(&format!("port over {}", other.unwrap_or("no protocol")));
            return Ok(None);
        }
    };
    let state = port
        .child("state")
        .and_then(|s| s.attr("state"))
        .unwrap_or("unknown");
    if state != "open" {
        tally.skipped(&format!("port {state}"));
        return Ok(None);
    }
    let service = port.child("service");
    let name = service.and_then(|s| s.attr("name")).unwrap_or("");
    let tls = service.and_then(|s| s.attr("tunnel")) == Some("ssl");
    let shown = match (name, tls) {
        ("", _) => "(no service name)".to_owned(),
        (n, true) => format!("ssl/{n}"),
        (n, false) => n.to_owned(),
    };
    let Some(token) = services::lookup(NMAP, name, transport, tls) else {
        tally.unmapped(&shown);
        return Ok(None);
    };
    if ip.is_ipv6() && !token.entry().ipv6 {
        tally.unmapped(&format!("{shown} over IPv6"));
        return Ok(None);
    }
    let mut out = Service::new(ip.to_string(), number, transport, token.as_str(), at);
    out.host = host.clone();
    if let Some(service) = service {
        out.product = product(service, tally);
        if token.entry().evidence_kind == EvidenceKind::Summary
            && let Some(extra) = service.attr("extrainfo")
        {
            out.summary_field("extrainfo", extra);
        }
    }
    for script in port.children_named("script") {
        apply_script(script, token, service, &mut out, tally);
    }
    Ok(Some(out))
}

fn product(service: &Element, tally: &mut Tally) -> Option<Product> {
    let title = draft::clean(service.attr("product")?, 256)?;
    let cpes: Vec<&str> = service
        .children_named("cpe")
        .map(|c| c.text.trim())
        .collect();
    let uri = cpes
        .iter()
        .find(|c| c.starts_with("cpe:/a:"))
        .or(cpes.first());
    let cpe = uri.and_then(|u| {
        let converted = cpe::to_cpe23(u).filter(|c| periscope_model::Cpe23::parse(c).is_ok());
        if converted.is_none() {
            tally.skipped("cpe not convertible to CPE 2.3");
        }
        converted
    });
    Some(Product {
        title,
        version: service.attr("version").and_then(|v| draft::clean(v, 128)),
        cpe,
    })
}

/// The text of `<elem key="key">` among `el`'s children.
fn elem<'a>(el: &'a Element, key: &str) -> Option<&'a str> {
    el.children_named("elem")
        .find(|e| e.attr("key") == Some(key))
        .map(|e| e.text.trim())
        .filter(|t| !t.is_empty())
}

/// The child `<table key="key">`.
fn table<'a>(el: &'a Element, key: &str) -> Option<&'a Element> {
    el.children_named("table")
        .find(|t| t.attr("key") == Some(key))
}

fn apply_script(
    script: &Element,
    token: ProtocolToken,
    service: Option<&Element>,
    out: &mut Service,
    tally: &mut Tally,
) {
    let kind = token.entry().evidence_kind;
    match script.attr("id").unwrap_or("") {
        "ssl-cert" => {
            if !token.entry().tls {
                tally.skipped("certificate on a protocol without TLS");
                return;
            }
            let certificate = ssl_cert(script, tally);
            if certificate != Certificate::default() {
                out.tls.get_or_insert_with(Default::default).certificate = Some(certificate);
            }
        }
        "http-title" if kind == EvidenceKind::Http => {
            let http = out.http.get_or_insert_with(Default::default);
            http.complete = true;
            http.title = elem(script, "title").and_then(|t| draft::clean(t, 512));
        }
        "http-server-header" if kind == EvidenceKind::Http => {
            let http: &mut Http = out.http.get_or_insert_with(Default::default);
            http.complete = true;
            let header = script
                .children_named("elem")
                .map(|e| e.text.trim())
                .find(|t| !t.is_empty())
                .or(script.attr("output"));
            http.server = header.and_then(|h| draft::clean(h, 256));
        }
        "ssh-hostkey" if kind == EvidenceKind::Ssh => {
            out.ssh = Some(ssh(script, service));
        }
        "vulners" => out.vulnerabilities = vulners(script),
        _ => {}
    }
}

fn ssl_cert(script: &Element, tally: &mut Tally) -> Certificate {
    let mut c = Certificate::default();
    if let Some(subject) = table(script, "subject") {
        c.common_name = elem(subject, "commonName").and_then(|t| draft::clean(t, 256));
        c.subject_organization =
            elem(subject, "organizationName").and_then(|t| draft::clean(t, 256));
    }
    if let Some(issuer) = table(script, "issuer") {
        c.issuer_common_name = elem(issuer, "commonName").and_then(|t| draft::clean(t, 256));
        c.issuer_organization = elem(issuer, "organizationName").and_then(|t| draft::clean(t, 256));
    }
    if let Some(validity) = table(script, "validity") {
        c.valid_from = elem(validity, "notBefore").and_then(nmap_time);
        c.valid_until = elem(validity, "notAfter").and_then(nmap_time);
    }
    if let Some(extensions) = table(script, "extensions") {
        for ext in extensions.children_named("table") {
            if elem(ext, "name") != Some("X509v3 Subject Alternative Name") {
                continue;
            }
            for entry in elem(ext, "value").unwrap_or("").split(',') {
                let Some(name) = entry.trim().strip_prefix("DNS:") else {
                    continue;
                };
                match san(name) {
                    Some(name) if !c.subject_alt_names.contains(&name) => {
                        if c.subject_alt_names.len() < 100 {
                            c.subject_alt_names.push(name);
                        }
                    }
                    Some(_) => {}
                    None => tally.skipped("certificate name not a DNS name"),
                }
            }
        }
    }
    c.fingerprint_sha256 = elem(script, "pem").and_then(certificate_sha256_from_pem);
    c
}

/// A certificate DNS name as the format stores it ([`certificate_name`], after the white
/// space and trailing dots a scanner may print), or `None` when it is not one.
pub(crate) fn san(name: &str) -> Option<String> {
    certificate_name(name.trim().trim_end_matches('.'))
        .ok()
        .map(Cow::into_owned)
}

/// Nmap's certificate times (`2026-11-25T16:00:00`, UTC, sometimes with an offset) as
/// RFC 3339.
fn nmap_time(text: &str) -> Option<String> {
    let text = text.trim();
    let with_zone = if text.ends_with('Z')
        || text.contains('+')
        || text.get(10..).unwrap_or("").contains('-')
    {
        text.to_owned()
    } else {
        format!("{text}Z")
    };
    Timestamp::parse(&with_zone).ok().map(|t| t.to_string())
}

fn ssh(script: &Element, service: Option<&Element>) -> Ssh {
    let mut keys: Vec<(&str, &str)> = script
        .children_named("table")
        .filter_map(|t| Some((elem(t, "type")?, elem(t, "key")?)))
        .collect();
    let rank = |kind: &str| match kind {
        "ssh-ed25519" => 0,
        k if k.starts_with("ecdsa-") => 1,
        "ssh-rsa" => 2,
        _ => 3,
    };
    keys.sort_by_key(|(kind, _)| rank(kind));
    let mut ssh = Ssh::default();
    if let Some((kind, key)) = keys.first() {
        ssh.host_key_algorithm = draft::clean(kind, 256);
        ssh.host_key_fingerprint = ssh_key_sha256(key);
    }
    if let Some(service) = service {
        ssh.protocol_version = service
            .attr("extrainfo")
            .and_then(|e| {
                e.split(';')
                    .find_map(|part| part.trim().strip_prefix("protocol "))
            })
            .and_then(|v| draft::clean(v, 256));
        ssh.software_version = match (service.attr("product"), service.attr("version")) {
            (Some(p), Some(v)) => draft::clean(&format!("{p} {v}"), 256),
            (Some(p), None) => draft::clean(p, 256),
            _ => None,
        };
    }
    ssh
}

/// The `vulners` script: structured tables (`id`, `cvss`, `type`, `is_exploit`) when Nmap
/// wrote them, else its text output (`CVE-…<TAB>9.8<TAB>url<TAB>*EXPLOIT*`).
fn vulners(script: &Element) -> Option<Vulnerabilities> {
    let mut entries: Vec<(String, Option<f64>, bool)> = Vec::new();
    for per_cpe in script.children_named("table") {
        for entry in per_cpe.children_named("table") {
            let Some(id) = elem(entry, "id") else {
                continue;
            };
            let cvss = elem(entry, "cvss").and_then(|c| c.parse::<f64>().ok());
            let exploit = elem(entry, "is_exploit") == Some("true");
            entries.push((id.to_owned(), cvss, exploit));
        }
    }
    if entries.is_empty() {
        for line in script.attr("output").unwrap_or("").lines() {
            let mut fields = line.split_whitespace();
            let Some(id) = fields.next() else { continue };
            let cvss = fields.next().and_then(|c| c.parse::<f64>().ok());
            entries.push((id.to_owned(), cvss, line.contains("*EXPLOIT*")));
        }
    }
    if entries.is_empty() {
        return None;
    }
    let mut out = Vulnerabilities::default();
    for (id, cvss, exploit) in entries {
        out.has_exploits |= exploit;
        let Ok(cve) = CveId::parse(&id) else { continue };
        let cve = cve.to_string();
        if out.cves.len() < 1000 && !out.cves.contains(&cve) {
            out.cves.push(cve);
        }
        if let Some(score) = cvss.filter(|s| (0.0..=10.0).contains(s)) {
            let score = (score * 10.0).round() / 10.0;
            out.max_cvss = Some(out.max_cvss.map_or(score, |m: f64| m.max(score)));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn certificate_times() {
        assert_eq!(
            nmap_time("2026-11-25T16:00:00").as_deref(),
            Some("2026-11-25T16:00:00Z")
        );
        assert_eq!(
            nmap_time("2026-11-25T16:00:00+00:00").as_deref(),
            Some("2026-11-25T16:00:00Z")
        );
    }

    #[test]
    fn certificate_names_as_the_format_holds_them() {
        for (printed, stored) in [
            ("www.example.com", Some("www.example.com")),
            (" *.Example.COM.. ", Some("*.example.com")),
            ("Bücher.example", Some("xn--bcher-kva.example")),
            ("192.0.2.7", None),
            ("a.*.example", None),
            ("", None),
        ] {
            assert_eq!(san(printed).as_deref(), stored, "{printed:?}");
        }
        let longest = format!("*.{}{}", "abcdefghi.".repeat(24), "abcdefghi");
        assert_eq!(san(&longest).map(|s| s.len()), Some(251));
        assert_eq!(san(&format!("{longest}jkl")), None, "254 characters");
    }
}
