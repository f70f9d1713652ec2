//! A `kind: "service"` line: the service identity and scan outcome, and the rules that tie
//! the captured blocks to the protocol and the status (TLS only on TLS-capable protocols, each
//! evidence block only on its evidence kind, nothing captured on a `failed` scan).

use std::net::IpAddr;

use super::check::{At, Invalid, integer, ip, observed_at, parsed, quoted, raw_text, required};
use super::raw::{RawService, Text};
use super::view::ServiceView;
use super::{ScanStatus, Transport, captured, host};
use crate::record::HostEnrichment;
use crate::{EvidenceKind, Port, ProtocolToken, Timestamp};

/// The longest scanner error text, in characters.
const MAX_ERROR_CHARS: usize = 4096;

/// Validates a service line; `now` is the reader's clock. The view borrows from `raw`, and
/// its host block from `repeated` when given: the enrichment of the previous block, which this
/// line repeats byte for byte (so `raw.host` was not read).
pub(super) fn service<'r>(
    raw: &'r RawService<'_>,
    now: Timestamp,
    repeated: Option<&'r HostEnrichment>,
) -> Result<ServiceView<'r>, Invalid> {
    let ip = required(raw.ip.as_ref()).and_then(ip).at("ip")?;
    let port = required(raw.port.as_ref()).and_then(port).at("port")?;
    let transport = required(raw.transport.as_ref())
        .and_then(transport)
        .at("transport")?;
    let protocol = required(raw.protocol.as_ref())
        .and_then(|p| protocol(p, ip))
        .at("protocol")?;
    let observed_at = required(raw.observed_at.as_ref())
        .and_then(|t| observed_at(t, now))
        .at("observed_at")?;
    let status = required(raw.status.as_ref())
        .and_then(status)
        .at("status")?;
    let error = raw
        .error
        .as_ref()
        .map(|e| raw_text(e, MAX_ERROR_CHARS))
        .transpose()
        .at("error")?;
    let scan = Scan { protocol, status };
    Ok(ServiceView {
        ip,
        port,
        transport,
        protocol,
        observed_at,
        status,
        error,
        product: scan.block(
            "product",
            Carrier::Any,
            raw.product.as_ref(),
            captured::product,
        )?,
        vulnerabilities: scan.block(
            "vulnerabilities",
            Carrier::Any,
            raw.vulnerabilities.as_ref(),
            captured::vulnerabilities,
        )?,
        tls: scan.block("tls", Carrier::Tls, raw.tls.as_deref(), captured::tls)?,
        http: scan.block(
            "http",
            Carrier::Kind(EvidenceKind::Http),
            raw.http.as_ref(),
            captured::http,
        )?,
        ssh: scan.block(
            "ssh",
            Carrier::Kind(EvidenceKind::Ssh),
            raw.ssh.as_ref(),
            captured::ssh,
        )?,
        summary: scan.block(
            "summary",
            Carrier::Kind(EvidenceKind::Summary),
            raw.summary.as_ref(),
            captured::summary,
        )?,
        host: match repeated {
            Some(enrichment) => host::repeated(enrichment, ip).at("host")?,
            None => raw
                .host
                .as_deref()
                .map(|h| host::host(h, ip))
                .transpose()
                .at("host")?
                .unwrap_or_default(),
        },
    })
}

fn port(n: &serde_json::Number) -> Result<Port, Invalid> {
    // In range 1..=65535: the cast is exact.
    Ok(Port::new(integer(n, 1, 65_535)? as u16)?)
}

fn transport(t: &Text<'_>) -> Result<Transport, Invalid> {
    match &*t.0 {
        "tcp" => Ok(Transport::Tcp),
        "udp" => Ok(Transport::Udp),
        other => Err(Invalid::here(format!(
            "{} is not a transport; expected \"tcp\" or \"udp\"",
            quoted(other)
        ))),
    }
}

fn status(s: &Text<'_>) -> Result<ScanStatus, Invalid> {
    match &*s.0 {
        "completed" => Ok(ScanStatus::Completed),
        "partial" => Ok(ScanStatus::Partial),
        "failed" => Ok(ScanStatus::Failed),
        other => Err(Invalid::here(format!(
            "{} is not a status; expected \"completed\", \"partial\" or \"failed\"",
            quoted(other)
        ))),
    }
}

/// A registered token, exact and lowercase, scanned over the address family of `ip`.
fn protocol(p: &Text<'_>, ip: IpAddr) -> Result<ProtocolToken, Invalid> {
    let token =
        parsed(p, ProtocolToken::parse).map_err(
            |e| match ProtocolToken::parse_case_insensitive(&p.0) {
                Ok(t) => Invalid::here(format!(
                    "{} is not registered; tokens are exact lowercase: {:?}",
                    quoted(&p.0),
                    t.as_str()
                )),
                Err(_) => e,
            },
        )?;
    if ip.is_ipv6() && !token.entry().ipv6 {
        return Err(Invalid::here(format!(
            "{:?} is not registered for IPv6 (its registry entry has ipv6: false)",
            token.as_str()
        )));
    }
    Ok(token)
}

/// What decides which captured blocks a line may carry.
struct Scan {
    protocol: ProtocolToken,
    status: ScanStatus,
}

/// Which protocols may carry a block.
#[derive(Clone, Copy)]
enum Carrier {
    /// Every protocol.
    Any,
    /// The registry's TLS-capable protocols.
    Tls,
    /// The protocols of one evidence kind.
    Kind(EvidenceKind),
}

impl Scan {
    /// Validates an optional captured block named `name`, after checking that this line may
    /// carry it at all.
    fn block<R, T>(
        &self,
        name: &str,
        carrier: Carrier,
        raw: Option<R>,
        validate: impl FnOnce(R) -> Result<T, Invalid>,
    ) -> Result<Option<T>, Invalid> {
        let Some(raw) = raw else {
            return Ok(None);
        };
        self.may_carry(name, carrier).at(name)?;
        validate(raw).map(Some).at(name)
    }

    fn may_carry(&self, name: &str, carrier: Carrier) -> Result<(), Invalid> {
        if self.status == ScanStatus::Failed {
            return Err(Invalid::here(format!(
                "a failed observation carries no captured data; remove {name}, or report \
                 status \"partial\" if data was captured"
            )));
        }
        let entry = self.protocol.entry();
        let token = entry.value;
        let refused = match carrier {
            Carrier::Any => return Ok(()),
            Carrier::Tls if entry.tls => return Ok(()),
            Carrier::Kind(kind) if entry.evidence_kind == kind => return Ok(()),
            Carrier::Tls => format!("only TLS-capable protocols carry tls; {token:?} is not one"),
            Carrier::Kind(EvidenceKind::Http) => {
                format!("only http and https carry http; {token:?} is not one")
            }
            Carrier::Kind(EvidenceKind::Ssh) => {
                format!("only ssh carries ssh; {token:?} is not one")
            }
            Carrier::Kind(EvidenceKind::Summary) => format!(
                "only protocols with summary evidence carry summary; {token:?} has {} evidence",
                entry.evidence_kind.as_str()
            ),
        };
        Err(Invalid::here(refused))
    }
}
