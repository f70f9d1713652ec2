//! ZGrab2 JSON lines: one object per target, `{"ip", "domain"?, "data": {MODULE: result}}`.
//!
//! ZGrab2 does not record the port it scanned, so the importer refuses to start without
//! `--port` (one port for every module, or `MODULE=PORT` per module, as IVRE's
//! `--zgrab-port`), and refuses a module it has no port for rather than guess.
//!
//! **Mapped.** Each module result becomes a `service` at its `timestamp`. `status` `success`
//! is `completed`; another status with a `result` is `partial` (data was captured before the
//! error); another status without one is `failed`. The raw `error` text goes to `error`
//! (stored, never shown). The protocol: `http` is `http`, or `https` when the response came
//! over TLS; `ssh` is `ssh`; `tls` is the registry's well-known token of the port when it names
//! exactly one TLS-capable token; every other module whose name (or `protocol`) is a registry
//! token is that token. Evidence: the TLS leaf certificate (SANs, subject CN and O, issuer CN
//! and O, validity, SHA-256) and the negotiated version and cipher suite, from the TLS
//! handshake log of `http` or `tls`; HTTP status code, `<title>` of the body and `Server`
//! header; SSH protocol version, software, comment, host-key algorithm and fingerprint
//! (`SHA256:` as OpenSSH prints it); for other protocols the `banner` (first 256
//! characters) as a summary field. `domain` becomes the host's `dns_name`.
//!
//! **Dropped, and counted.** Modules that are no registry token (by module name), `tls` on a
//! port without a single TLS-capable token. Not part of the format: request details, full
//! headers and bodies, certificate chains, key-exchange parameters, ZGrab2's metadata lines.

use std::io::BufRead;
use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use periscope_model::observation::ObservationReader;
use periscope_model::{DomainName, EvidenceKind, ProtocolToken, Timestamp};
use serde_json::{Map, Value};

use crate::draft::{self, Certificate, Http, Line, Service, Ssh, Tls};
use crate::lines::{self, JsonLine, JsonLines};
use crate::nmap::san;
use crate::services;
use crate::{Error, Importer, Item, Options, Rejected, Tally, Zgrab2Ports};

/// Reads ZGrab2 output.
pub struct Zgrab2Importer<R> {
    lines: JsonLines<R>,
    reader: ObservationReader,
    ports: Zgrab2Ports,
    tally: Tally,
}

impl<R: BufRead> Zgrab2Importer<R> {
    /// Reads `input`; `Error::Options` when no port was given.
    pub fn new(input: R, options: &Options) -> Result<Self, Error> {
        if options.zgrab2_ports.is_empty() {
            return Err(Error::Options(
                "ZGrab2 does not record the port it scanned: give it with --port PORT (every \
                 module) or --port MODULE=PORT (repeatable)"
                    .to_owned(),
            ));
        }
        Ok(Self {
            lines: JsonLines::new(input),
            reader: ObservationReader::new(options.now),
            ports: options.zgrab2_ports.clone(),
            tally: Tally::default(),
        })
    }
}

impl<R: BufRead> Importer for Zgrab2Importer<R> {
    fn next_item(&mut self) -> Result<Option<Item>, Error> {
        loop {
            let Some(line) = self.lines.next_line()? else {
                return Ok(None);
            };
            let number = self.lines.number();
            let text = match line {
                JsonLine::Blank => continue,
                JsonLine::Bad(reason) => {
                    self.tally.records += 1;
                    return Ok(Some(rejected(number, "(line)", reason)));
                }
                JsonLine::Text(text) => text,
            };
            self.tally.records += 1;
            let map = match lines::object(&text) {
                Ok(map) => map,
                Err(reason) => return Ok(Some(rejected(number, "(line)", reason))),
            };
            return Ok(Some(match target(&map, &self.ports, &mut self.tally)? {
                Ok(services) => draft::validate(
                    &mut self.reader,
                    number,
                    services
                        .into_iter()
                        .map(|s| Line::Service(Box::new(s)))
                        .collect(),
                ),
                Err((field, reason)) => rejected(number, &field, reason),
            }));
        }
    }

    fn tally(&self) -> &Tally {
        &self.tally
    }
}

fn rejected(line: u64, field: &str, reason: String) -> Item {
    Item::Rejected(Rejected {
        line,
        field: field.to_owned(),
        reason,
    })
}

type Bad = (String, String);

/// The services of one target line; the outer error stops the input (a module without a port).
fn target(
    map: &Map<String, Value>,
    ports: &Zgrab2Ports,
    tally: &mut Tally,
) -> Result<Result<Vec<Service>, Bad>, Error> {
    let ip = match map
        .get("ip")
        .and_then(Value::as_str)
        .map(str::parse::<IpAddr>)
    {
        Some(Ok(ip)) => ip,
        _ => {
            return Ok(Err((
                "ip".to_owned(),
                "missing or not an IP address".to_owned(),
            )));
        }
    };
    let Some(data) = map.get("data").and_then(Value::as_object) else {
        return Ok(Err((
            "data".to_owned(),
            "missing or not an object".to_owned(),
        )));
    };
    let dns_name = map
        .get("domain")
        .and_then(Value::as_str)
        .and_then(|d| DomainName::parse(d).ok())
        .map(|d| d.to_string());
    let mut out = Vec::new();
    for (module, result) in data {
        let Some(result) = result.as_object() else {
            return Ok(Err((format!("data.{module}"), "not an object".to_owned())));
        };
        let kind = result
            .get("protocol")
            .and_then(Value::as_str)
            .unwrap_or(module);
        let port = ports.of(module).or_else(|| ports.of(kind)).ok_or_else(|| {
            Error::Options(format!(
                "no --port for the ZGrab2 module {module:?}: give --port {module}=PORT or one \
                 --port for every module"
            ))
        })?;
        match module_service(ip, port.get(), module, kind, result, tally) {
            Ok(Some(mut service)) => {
                service.host.dns_name.clone_from(&dns_name);
                out.push(service);
            }
            Ok(None) => {}
            Err(reason) => return Ok(Err((format!("data.{module}"), reason))),
        }
    }
    Ok(Ok(out))
}

fn at(v: &Value, path: &[&str]) -> Option<Value> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    Some(v.clone())
}

fn text(v: &Value, path: &[&str]) -> Option<String> {
    match at(v, path)? {
        Value::String(s) => Some(s),
        Value::Array(items) => items.first().and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn module_service(
    ip: IpAddr,
    port: u16,
    module: &str,
    kind: &str,
    result: &Map<String, Value>,
    tally: &mut Tally,
) -> Result<Option<Service>, String> {
    let body = result.get("result").filter(|r| !r.is_null());
    let status = result.get("status").and_then(Value::as_str).unwrap_or("");
    let handshake = body.and_then(|b| {
        at(b, &["response", "request", "tls_log", "handshake_log"])
            .or_else(|| at(b, &["handshake_log"]))
            .or_else(|| at(b, &["tls", "handshake_log"]))
    });
    let token: Option<ProtocolToken> = match kind {
        "http" => ProtocolToken::parse(if handshake.is_some() { "https" } else { "http" }).ok(),
        "tls" => services::well_known(port, "tcp").filter(|t| t.entry().tls),
        other => ProtocolToken::parse(other).ok(),
    };
    let Some(token) = token else {
        tally.unmapped(&if kind == "tls" {
            format!("tls on port {port}")
        } else {
            module.to_owned()
        });
        return Ok(None);
    };
    if ip.is_ipv6() && !token.entry().ipv6 {
        tally.unmapped(&format!("{module} over IPv6"));
        return Ok(None);
    }
    let when = result
        .get("timestamp")
        .and_then(Value::as_str)
        .ok_or("timestamp: missing")?;
    let when = Timestamp::parse(when).map_err(|e| format!("timestamp: {e}"))?;
    let mut out = Service::new(ip.to_string(), port, "tcp", token.as_str(), when);
    out.status = match (status, body) {
        ("success", _) => "completed",
        (_, Some(_)) => "partial",
        (_, None) => "failed",
    };
    out.error = result
        .get("error")
        .and_then(Value::as_str)
        .map(|e| draft::bounded(e, 4096));
    let Some(body) = body else {
        return Ok(Some(out));
    };
    if token.entry().tls
        && let Some(handshake) = &handshake
    {
        out.tls = Some(tls(handshake, tally));
    }
    match token.entry().evidence_kind {
        EvidenceKind::Http => {
            let response = at(body, &["response"]).unwrap_or(Value::Null);
            let mut http = Http {
                status_code: at(&response, &["status_code"])
                    .and_then(|c| c.as_u64())
                    .and_then(|c| u16::try_from(c).ok())
                    .filter(|c| (100..=599).contains(c)),
                complete: status == "success",
                ..Http::default()
            };
            http.server =
                text(&response, &["headers", "server"]).and_then(|s| draft::clean(&s, 256));
            http.title = text(&response, &["body"])
                .and_then(|b| html_title(&b))
                .and_then(|t| draft::clean(&t, 512));
            out.http = Some(http);
        }
        EvidenceKind::Ssh => {
            let id = at(body, &["server_id"]).unwrap_or(Value::Null);
            let key = at(body, &["server_host_key"])
                .or_else(|| at(body, &["key_exchange", "server_host_key"]))
                .unwrap_or(Value::Null);
            out.ssh = Some(Ssh {
                protocol_version: text(&id, &["version"]).and_then(|s| draft::clean(&s, 256)),
                software_version: text(&id, &["software"]).and_then(|s| draft::clean(&s, 256)),
                comments: text(&id, &["comment"]).and_then(|s| draft::clean(&s, 256)),
                host_key_algorithm: text(body, &["algorithm_selection", "host_key_algorithm"])
                    .and_then(|s| draft::clean(&s, 256)),
                host_key_fingerprint: text(&key, &["fingerprint_sha256"])
                    .and_then(|hex| openssh_fingerprint(&hex)),
                hassh: None,
            });
        }
        EvidenceKind::Summary => {
            if let Some(banner) = text(body, &["banner"]) {
                out.summary_field("banner", &banner);
            }
        }
    }
    Ok(Some(out))
}

fn tls(handshake: &Value, tally: &mut Tally) -> Tls {
    let hello = at(handshake, &["server_hello"]).unwrap_or(Value::Null);
    let parsed =
        at(handshake, &["server_certificates", "certificate", "parsed"]).unwrap_or(Value::Null);
    let mut c = Certificate {
        common_name: text(&parsed, &["subject", "common_name"]).and_then(|s| draft::clean(&s, 256)),
        subject_organization: text(&parsed, &["subject", "organization"])
            .and_then(|s| draft::clean(&s, 256)),
        issuer_common_name: text(&parsed, &["issuer", "common_name"])
            .and_then(|s| draft::clean(&s, 256)),
        issuer_organization: text(&parsed, &["issuer", "organization"])
            .and_then(|s| draft::clean(&s, 256)),
        valid_from: text(&parsed, &["validity", "start"])
            .and_then(|t| Timestamp::parse(&t).ok())
            .map(|t| t.to_string()),
        valid_until: text(&parsed, &["validity", "end"])
            .and_then(|t| Timestamp::parse(&t).ok())
            .map(|t| t.to_string()),
        fingerprint_sha256: text(&parsed, &["fingerprint_sha256"]).map(|f| f.to_lowercase()),
        ..Certificate::default()
    };
    if let Some(Value::Array(names)) = at(&parsed, &["extensions", "subject_alt_name", "dns_names"])
    {
        for name in names.iter().filter_map(Value::as_str) {
            match san(name) {
                Some(n) if !c.subject_alt_names.contains(&n) && c.subject_alt_names.len() < 100 => {
                    c.subject_alt_names.push(n);
                }
                Some(_) => {}
                None => tally.skipped("certificate name not a DNS name"),
            }
        }
    }
    Tls {
        version: text(&hello, &["version", "name"]).and_then(|s| draft::clean(&s, 128)),
        cipher_suite: text(&hello, &["cipher_suite", "name"]).and_then(|s| draft::clean(&s, 128)),
        browser_trusted: at(
            handshake,
            &["server_certificates", "validation", "browser_trusted"],
        )
        .and_then(|v| v.as_bool()),
        certificate: (c != Certificate::default()).then_some(c),
    }
}

/// `SHA256:` and the unpadded base64 of a hex SHA-256, as OpenSSH prints fingerprints.
fn openssh_fingerprint(hex: &str) -> Option<String> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
        .collect();
    Some(format!("SHA256:{}", STANDARD_NO_PAD.encode(bytes)))
}

/// The text of the first `<title>` of an HTML body.
pub(crate) fn html_title(body: &str) -> Option<String> {
    let lower = body.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = start + lower[start..].find('>')? + 1;
    let close = open_end + lower[open_end..].find("</title")?;
    let title = body.get(open_end..close)?.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_and_fingerprints() {
        assert_eq!(
            html_title("<html><HEAD><Title id=x> Hi there </TITLE>").as_deref(),
            Some("Hi there")
        );
        assert_eq!(html_title("<html>"), None);
        assert_eq!(
            openssh_fingerprint("f83898df0bef57a4ee24985ba598ac17fccb0c0d333cc4af1dd92be14bc23aa5")
                .as_deref(),
            Some("SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU")
        );
    }
}
