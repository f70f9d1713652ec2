//! Masscan output: `-oJ` (a JSON array of port records, one per line; `-oD` without the
//! array), and `-oX` (XML of the same records), with or without `--banners`. Masscan's
//! binary output is read through `masscan --readscan FILE -oJ`.
//!
//! Masscan writes one record per fact: a port's status (`open`, at its timestamp), then one
//! record per banner of that port (`http`, `ssl`, `X509`, `ssh`, `title`, …), possibly far
//! apart. Records of one address, port and transport are merged while they are pending: a
//! port is written out when it has been pending for [`WINDOW`] records, or at the end of the
//! input, so memory holds at most that many ports whatever the file's size.
//!
//! **Mapped.** Each open port becomes a `service` at its (newest) timestamp. The protocol is
//! the token of a banner's name ([`services::MASSCAN`]; `http` seen with `ssl`/`X509` is
//! `https`); a port with no protocol evidence maps through the registry's well-known ports
//! only when the registry names exactly one token for it (443 → `https`; 8000 is `http` and
//! `hikvision`, so it is reported). Banners fill evidence: `http` the status line and
//! `Server` header (`complete` when a status line was read), `title` the HTTP title, `ssl`
//! the certificate names Masscan lists after the cipher, `X509` (the base64 DER of the leaf)
//! the certificate's SHA-256, subject CN and O, issuer CN and O, validity and DNS names
//! ([`crate::x509`]), `ssh` the identification string (`SSH-2.0-OpenSSH_9.6p1
//! Ubuntu` → protocol `2.0`, software `OpenSSH_9.6p1`, comments `Ubuntu`); on other protocols
//! the banner text (first 256 characters) goes to the summary as `banner`.
//!
//! **Dropped, and counted.** Ports whose status is not `open` (`port closed`), ports with no
//! protocol evidence and no single well-known token (by `port N/tcp`), banner names without a
//! row (by name: `unknown`, `scripting`, …). Masscan's `reason` and `ttl`, and the rest of
//! the certificate, are not part of the format.

use std::collections::{HashMap, VecDeque};
use std::io::BufRead;
use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use periscope_model::observation::ObservationReader;
use periscope_model::{EvidenceKind, Timestamp};

use crate::draft::{self, Certificate, Http, Line, Service, Ssh};
use crate::fingerprint::certificate_sha256_from_base64;
use crate::lines::{self, JsonLine, JsonLines};
use crate::nmap::san;
use crate::services::{self, MASSCAN};
use crate::xml::{Element, XmlRecords};
use crate::{Error, Importer, Item, Options, Rejected, Tally};

/// How many records a port stays pending, waiting for more banners, before it is written.
pub const WINDOW: u64 = 100_000;

/// One Masscan record, whichever syntax it came in.
#[derive(Debug)]
struct Fact {
    ip: IpAddr,
    port: u16,
    transport: &'static str,
    at: i64,
    what: What,
}

#[derive(Debug)]
enum What {
    Status(String),
    Banner { name: String, text: String },
}

/// What is known of one port so far.
#[derive(Debug, Default)]
struct Port {
    first_line: u64,
    last_seen: u64,
    open: bool,
    at: i64,
    /// Banner names in arrival order with their text.
    banners: Vec<(String, String)>,
}

type Key = (IpAddr, u16, &'static str);

/// The merge of records into ports, shared by both syntaxes.
struct Merger {
    reader: ObservationReader,
    tally: Tally,
    pending: HashMap<Key, Port>,
    order: VecDeque<(Key, u64)>,
    ready: VecDeque<Item>,
    seen: u64,
}

impl Merger {
    fn new(options: &Options) -> Self {
        Self {
            reader: ObservationReader::new(options.now),
            tally: Tally::default(),
            pending: HashMap::new(),
            order: VecDeque::new(),
            ready: VecDeque::new(),
            seen: 0,
        }
    }

    fn add(&mut self, line: u64, fact: Fact) {
        self.seen += 1;
        let key = (fact.ip, fact.port, fact.transport);
        let port = self.pending.entry(key).or_insert_with(|| Port {
            first_line: line,
            ..Port::default()
        });
        port.last_seen = self.seen;
        port.at = port.at.max(fact.at);
        match fact.what {
            What::Status(status) if status == "open" => port.open = true,
            What::Status(status) => self.tally.skipped(&format!("port {status}")),
            What::Banner { name, text } => {
                // A banner means the port answered.
                port.open = true;
                port.banners.push((name, text));
            }
        }
        self.order.push_back((key, self.seen));
        // Write out ports that have waited a whole window since their last record.
        while let Some(&(key, stamp)) = self.order.front() {
            if self.seen - stamp < WINDOW {
                break;
            }
            self.order.pop_front();
            if self.pending.get(&key).is_some_and(|p| p.last_seen == stamp) {
                self.flush(key);
            }
        }
    }

    fn flush_all(&mut self) {
        let mut keys: Vec<(u64, Key)> = self
            .pending
            .iter()
            .map(|(k, p)| (p.first_line, *k))
            .collect();
        keys.sort_unstable_by_key(|(line, _)| *line);
        for (_, key) in keys {
            self.flush(key);
        }
        self.order.clear();
    }

    fn flush(&mut self, key: Key) {
        let Some(port) = self.pending.remove(&key) else {
            return;
        };
        if !port.open {
            return;
        }
        let line = port.first_line;
        let item = match service(key, &port, &mut self.tally) {
            Ok(Some(service)) => draft::validate(
                &mut self.reader,
                line,
                vec![Line::Service(Box::new(service))],
            ),
            Ok(None) => return,
            Err(reason) => Item::Rejected(Rejected {
                line,
                field: format!("{}/{}", key.1, key.2),
                reason,
            }),
        };
        self.ready.push_back(item);
    }
}

/// The service of one merged port, or `None` when it maps to no token (counted).
fn service(key: Key, port: &Port, tally: &mut Tally) -> Result<Option<Service>, String> {
    let (ip, number, transport) = key;
    let has = |n: &str| port.banners.iter().any(|(b, _)| b.eq_ignore_ascii_case(n));
    let tls = has("ssl") || has("x509");
    let mut token = None;
    let mut unmapped = None;
    for (name, _) in &port.banners {
        if matches!(
            name.to_ascii_lowercase().as_str(),
            "ssl" | "x509" | "title" | "html"
        ) {
            continue;
        }
        match services::lookup(MASSCAN, name, transport, tls) {
            Some(t) => {
                token = Some(t);
                break;
            }
            None => unmapped = Some(name.clone()),
        }
    }
    if token.is_none() && (has("title") || has("html")) {
        token = services::lookup(MASSCAN, "http", transport, tls);
    }
    let token = match token.or_else(|| services::well_known(number, transport)) {
        Some(t) => t,
        None => {
            tally.unmapped(&unmapped.unwrap_or_else(|| format!("port {number}/{transport}")));
            return Ok(None);
        }
    };
    if ip.is_ipv6() && !token.entry().ipv6 {
        tally.unmapped(&format!("{} over IPv6", token.as_str()));
        return Ok(None);
    }
    let at = Timestamp::from_unix(port.at)
        .ok_or_else(|| format!("timestamp {} is not a time Periscope stores", port.at))?;
    let mut out = Service::new(ip.to_string(), number, transport, token.as_str(), at);
    let kind = token.entry().evidence_kind;
    for (name, text) in &port.banners {
        match (name.to_ascii_lowercase().as_str(), kind) {
            ("http", EvidenceKind::Http) => http(out.http.get_or_insert_with(Http::default), text),
            ("title", EvidenceKind::Http) => {
                let http = out.http.get_or_insert_with(Http::default);
                http.title = draft::clean(text, 512);
            }
            ("ssl", _) if token.entry().tls => {
                let names = ssl_names(text);
                if !names.is_empty() {
                    certificate(&mut out).subject_alt_names = names;
                }
            }
            ("x509", _) if token.entry().tls => {
                if let Some(fp) = certificate_sha256_from_base64(text) {
                    certificate(&mut out).fingerprint_sha256 = Some(fp);
                }
                let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                if let Some(fields) = STANDARD
                    .decode(compact)
                    .ok()
                    .and_then(|der| crate::x509::read(&der))
                {
                    let c = certificate(&mut out);
                    c.common_name = fields.subject_cn.and_then(|t| draft::clean(&t, 256));
                    c.subject_organization = fields.subject_o.and_then(|t| draft::clean(&t, 256));
                    c.issuer_common_name = fields.issuer_cn.and_then(|t| draft::clean(&t, 256));
                    c.issuer_organization = fields.issuer_o.and_then(|t| draft::clean(&t, 256));
                    c.valid_from = fields.not_before;
                    c.valid_until = fields.not_after;
                    for name in fields.dns_names.iter().filter_map(|n| san(n)) {
                        if !c.subject_alt_names.contains(&name) && c.subject_alt_names.len() < 100 {
                            c.subject_alt_names.push(name);
                        }
                    }
                }
            }
            ("ssh", EvidenceKind::Ssh) => out.ssh = Some(ssh(text)),
            (_, EvidenceKind::Summary) => out.summary_field("banner", text),
            _ => {}
        }
    }
    Ok(Some(out))
}

fn certificate(out: &mut Service) -> &mut Certificate {
    out.tls
        .get_or_insert_with(Default::default)
        .certificate
        .get_or_insert_with(Default::default)
}

/// An `http` banner: the status line and headers Masscan kept.
fn http(out: &mut Http, banner: &str) {
    let mut lines = banner.split(['\n']).map(|l| l.trim_end_matches('\r'));
    if let Some(status) = lines.next()
        && status.starts_with("HTTP/")
        && let Some(code) = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|c| (100..=599).contains(c))
    {
        out.status_code = Some(code);
        out.complete = true;
    }
    for header in lines {
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("server")
        {
            out.server = draft::clean(value, 256);
        }
    }
}

/// The names of an `ssl` banner: `TLS/1.2 cipher:0xc02f, www.example.com, example.com`.
fn ssl_names(banner: &str) -> Vec<String> {
    let mut names = Vec::new();
    for part in banner.split(',').skip(1) {
        if let Some(name) = san(part)
            && !names.contains(&name)
            && names.len() < 100
        {
            names.push(name);
        }
    }
    names
}

/// An SSH identification string: `SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13`.
fn ssh(banner: &str) -> Ssh {
    let first = banner.lines().next().unwrap_or("").trim();
    let mut out = Ssh::default();
    if let Some(rest) = first.strip_prefix("SSH-")
        && let Some((version, software)) = rest.split_once('-')
    {
        out.protocol_version = draft::clean(version, 256);
        let (software, comments) = software.split_once(' ').unwrap_or((software, ""));
        out.software_version = draft::clean(software, 256);
        out.comments = draft::clean(comments, 256);
    }
    out
}

fn parse_ip(text: &str) -> Result<IpAddr, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not an IP address"))
}

fn parse_transport(text: &str) -> Result<&'static str, String> {
    match text {
        "tcp" => Ok("tcp"),
        "udp" => Ok("udp"),
        other => Err(format!("{other:?} is not tcp or udp")),
    }
}

fn parse_port(value: Option<&serde_json::Value>) -> Result<u16, String> {
    let port = match value {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    port.and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .ok_or_else(|| "missing or not a port number 1..=65535".to_owned())
}

fn parse_time(value: Option<&serde_json::Value>) -> Result<i64, String> {
    let at = match value {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    at.filter(|t| *t > 0)
        .ok_or_else(|| "missing or not Unix seconds".to_owned())
}

/// Reads `masscan -oJ` (and `-oD`) output.
pub struct MasscanJsonImporter<R> {
    lines: JsonLines<R>,
    merger: Merger,
    done: bool,
}

impl<R: BufRead> MasscanJsonImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Self {
        Self {
            lines: JsonLines::new(input),
            merger: Merger::new(options),
            done: false,
        }
    }

    /// The facts of one JSON record (`-oJ`: `ports` array; `-oD`: `port`, `rec_type`, `data`).
    fn facts(
        map: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<Fact>, (String, String)> {
        let field = |f: &'static str| move |r: String| (f.to_owned(), r);
        let ip =
            parse_ip(map.get("ip").and_then(|v| v.as_str()).unwrap_or("")).map_err(field("ip"))?;
        let at = parse_time(map.get("timestamp")).map_err(field("timestamp"))?;
        let mut facts = Vec::new();
        if let Some(ports) = map.get("ports") {
            let ports = ports
                .as_array()
                .ok_or_else(|| ("ports".to_owned(), "not an array".to_owned()))?;
            for (i, p) in ports.iter().enumerate() {
                let here = format!("ports[{i}]");
                let p = p
                    .as_object()
                    .ok_or_else(|| (here.clone(), "not an object".to_owned()))?;
                let port = parse_port(p.get("port")).map_err(|r| (format!("{here}.port"), r))?;
                let transport =
                    parse_transport(p.get("proto").and_then(|v| v.as_str()).unwrap_or(""))
                        .map_err(|r| (format!("{here}.proto"), r))?;
                let at = p
                    .get("timestamp")
                    .map_or(Ok(at), |t| parse_time(Some(t)))
                    .map_err(|r| (format!("{here}.timestamp"), r))?;
                let what = if let Some(service) = p.get("service") {
                    let name = service
                        .get("name")
                        .and_then(|v| v.as_str())
                        .ok_or_else(|| (format!("{here}.service.name"), "missing".to_owned()))?;
                    let text = service.get("banner").and_then(|v| v.as_str()).unwrap_or("");
                    What::Banner {
                        name: name.to_owned(),
                        text: text.to_owned(),
                    }
                } else {
                    let status = p.get("status").and_then(|v| v.as_str()).ok_or_else(|| {
                        (
                            format!("{here}.status"),
                            "neither a status nor a service".to_owned(),
                        )
                    })?;
                    What::Status(status.to_owned())
                };
                facts.push(Fact {
                    ip,
                    port,
                    transport,
                    at,
                    what,
                });
            }
        } else {
            let port = parse_port(map.get("port")).map_err(field("port"))?;
            let transport =
                parse_transport(map.get("proto").and_then(|v| v.as_str()).unwrap_or(""))
                    .map_err(field("proto"))?;
            let data = map.get("data").and_then(|d| d.as_object());
            let what = match map.get("rec_type").and_then(|v| v.as_str()) {
                Some("status") => What::Status(
                    data.and_then(|d| d.get("status"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("unknown")
                        .to_owned(),
                ),
                Some("banner") => What::Banner {
                    name: data
                        .and_then(|d| d.get("service_name"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("unknown")
                        .to_owned(),
                    text: data
                        .and_then(|d| d.get("banner"))
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_owned(),
                },
                _ => {
                    return Err((
                        "rec_type".to_owned(),
                        "neither status nor banner".to_owned(),
                    ));
                }
            };
            facts.push(Fact {
                ip,
                port,
                transport,
                at,
                what,
            });
        }
        Ok(facts)
    }
}

impl<R: BufRead> Importer for MasscanJsonImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(item) = self.merger.ready.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let Some(line) = self.lines.next_line()? else {
                self.done = true;
                self.merger.flush_all();
                continue;
            };
            let number = self.lines.number();
            let text = match line {
                JsonLine::Blank => continue,
                JsonLine::Bad(reason) => {
                    self.merger.tally.records += 1;
                    return Ok(Some(rejected(number, "(line)", reason)));
                }
                JsonLine::Text(text) => text,
            };
            // The array's punctuation: `[`, `]`, a lone `,`, and a `,` before or after a record.
            let record = text
                .trim()
                .trim_start_matches(',')
                .trim_end_matches(',')
                .trim();
            if record.is_empty() || record == "[" || record == "]" {
                continue;
            }
            let record = record.strip_prefix('[').unwrap_or(record).trim();
            let record = record.strip_suffix(']').map_or(record, str::trim);
            self.merger.tally.records += 1;
            let map = match lines::object(record) {
                Ok(map) => map,
                Err(reason) => return Ok(Some(rejected(number, "(record)", reason))),
            };
            match Self::facts(&map) {
                Ok(facts) => {
                    for fact in facts {
                        self.merger.add(number, fact);
                    }
                }
                Err((field, reason)) => return Ok(Some(rejected(number, &field, reason))),
            }
        }
    }

    fn tally(&self) -> &Tally {
        &self.merger.tally
    }
}

fn rejected(line: u64, field: &str, reason: String) -> Item {
    Item::Rejected(Rejected {
        line,
        field: field.to_owned(),
        reason,
    })
}

/// Reads `masscan -oX` output.
pub struct MasscanXmlImporter<R: BufRead> {
    records: XmlRecords<R>,
    merger: Merger,
    done: bool,
}

impl<R: BufRead> MasscanXmlImporter<R> {
    /// Reads `input`.
    pub fn new(input: R, options: &Options) -> Self {
        Self {
            records: XmlRecords::new(input),
            merger: Merger::new(options),
            done: false,
        }
    }

    fn facts(host: &Element) -> Result<Vec<Fact>, (String, String)> {
        let at = host
            .attr("endtime")
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|t| *t > 0)
            .ok_or_else(|| {
                (
                    "host.endtime".to_owned(),
                    "missing or not Unix seconds".to_owned(),
                )
            })?;
        let address = host
            .child("address")
            .and_then(|a| a.attr("addr"))
            .ok_or_else(|| ("host.address".to_owned(), "missing".to_owned()))?;
        let ip = parse_ip(address).map_err(|r| ("host.address".to_owned(), r))?;
        let mut facts = Vec::new();
        for port in host
            .child("ports")
            .into_iter()
            .flat_map(|p| p.children_named("port"))
        {
            let number: u16 = port
                .attr("portid")
                .and_then(|p| p.parse().ok())
                .filter(|p| *p > 0)
                .ok_or_else(|| {
                    (
                        "port.portid".to_owned(),
                        "missing or not a port number 1..=65535".to_owned(),
                    )
                })?;
            let transport = parse_transport(port.attr("protocol").unwrap_or(""))
                .map_err(|r| ("port.protocol".to_owned(), r))?;
            let what = if let Some(service) = port.child("service") {
                What::Banner {
                    name: service.attr("name").unwrap_or("unknown").to_owned(),
                    text: service.attr("banner").unwrap_or("").to_owned(),
                }
            } else {
                let state = port
                    .child("state")
                    .and_then(|s| s.attr("state"))
                    .ok_or_else(|| {
                        (
                            "port.state".to_owned(),
                            "neither a state nor a service".to_owned(),
                        )
                    })?;
                What::Status(state.to_owned())
            };
            facts.push(Fact {
                ip,
                port: number,
                transport,
                at,
                what,
            });
        }
        Ok(facts)
    }
}

impl<R: BufRead> Importer for MasscanXmlImporter<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        loop {
            if let Some(item) = self.merger.ready.pop_front() {
                return Ok(Some(item));
            }
            if self.done {
                return Ok(None);
            }
            let (line, host) = match self.records.next_record() {
                Ok(Some(record)) => record,
                Ok(None) => {
                    self.done = true;
                    self.merger.flush_all();
                    continue;
                }
                Err(e) => {
                    // Reading stops; what was read before is still written out.
                    self.done = true;
                    self.merger.flush_all();
                    self.merger
                        .ready
                        .push_back(rejected(e.line, "(xml)", e.reason));
                    continue;
                }
            };
            if host.name != "host" {
                continue;
            }
            self.merger.tally.records += 1;
            match Self::facts(&host) {
                Ok(facts) => {
                    for fact in facts {
                        self.merger.add(line, fact);
                    }
                }
                Err((field, reason)) => return Ok(Some(rejected(line, &field, reason))),
            }
        }
    }

    fn tally(&self) -> &Tally {
        &self.merger.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banners() {
        let s = ssh("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n");
        assert_eq!(s.protocol_version.as_deref(), Some("2.0"));
        assert_eq!(s.software_version.as_deref(), Some("OpenSSH_9.6p1"));
        assert_eq!(s.comments.as_deref(), Some("Ubuntu-3ubuntu13"));
        assert_eq!(
            ssl_names("TLS/1.2 cipher:0xc02f, www.example.com, Example.com., bad name"),
            ["www.example.com", "example.com"]
        );
        let mut h = Http::default();
        http(
            &mut h,
            "HTTP/1.1 301 Moved\r\nServer: nginx/1.24.0\r\nLocation: /x",
        );
        assert_eq!(
            (h.status_code, h.server.as_deref(), h.complete),
            (Some(301), Some("nginx/1.24.0"), true)
        );
    }
}
