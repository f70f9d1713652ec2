//! The observation format as importers write it: plain serde structs of one line, and the
//! check that turns the lines of one scanner record into validated [`Observation`]s.
//!
//! Importers fill a [`Service`] (or a [`Domain`]) per service they found, as loosely as the
//! scanner gave it; [`validate`] writes each one as a JSON line and reads it back through the
//! model's [`ObservationReader`], so an imported record obeys exactly the rules of
//! `docs/observation-format.md` and `periscope convert` writes exactly what ingest applies. If
//! one line of a record breaks a rule, the whole record is rejected (nothing of it is applied).
//!
//! [`write_observation`] goes the other way, from a validated [`Observation`] to its line, for
//! observations changed after import (enrichment) and for `convert`.

use std::collections::BTreeMap;

use periscope_model::Timestamp;
use periscope_model::observation::{
    DomainScan, Observation, ObservationReader, ScanStatus, ServiceObservation, Transport,
};
use periscope_model::record::{AsnAttribution, HostEnrichment};
use serde::Serialize;

use crate::{Imported, Item, Record, Rejected};

/// One `kind: "service"` line.
#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Service {
    pub kind: &'static str,
    pub ip: String,
    pub port: u16,
    pub transport: &'static str,
    pub protocol: &'static str,
    pub observed_at: String,
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<Product>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vulnerabilities: Option<Vulnerabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<Tls>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<Http>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ssh: Option<Ssh>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Host::is_empty")]
    pub host: Host,
}

impl Service {
    /// A completed service observation with nothing captured yet.
    pub fn new(
        ip: String,
        port: u16,
        transport: &'static str,
        protocol: &'static str,
        at: Timestamp,
    ) -> Self {
        Self {
            kind: "service",
            ip,
            port,
            transport,
            protocol,
            observed_at: at.to_string(),
            status: "completed",
            ..Self::default()
        }
    }

    /// Adds one summary field (ignored past the format's bound of 16).
    pub fn summary_field(&mut self, key: &str, value: &str) {
        let summary = self.summary.get_or_insert_with(BTreeMap::new);
        if summary.len() < 16 && !value.is_empty() {
            summary.insert(key.to_owned(), bounded(value, 256));
        }
    }
}

/// One `kind: "domain"` line.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Domain {
    pub kind: &'static str,
    pub name: String,
    pub addresses: Vec<String>,
    pub observed_at: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Product {
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpe: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Vulnerabilities {
    pub cves: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cvss: Option<f64>,
    pub has_exploits: bool,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Tls {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher_suite: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_trusted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<Certificate>,
}

#[derive(Debug, Clone, Serialize, Default, PartialEq)]
pub(crate) struct Certificate {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subject_alt_names: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub common_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer_common_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer_organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint_sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Http {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_code: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub complete: bool,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Ssh {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub software_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_key_algorithm: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_key_fingerprint: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comments: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hassh: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Host {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asn: Option<Asns>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<Provider>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whois: Option<Whois>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reverse_dns: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dns_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

impl Host {
    fn is_empty(&self) -> bool {
        self.location.is_none()
            && self.asn.is_none()
            && self.provider.is_none()
            && self.whois.is_none()
            && self.reverse_dns.is_empty()
            && self.dns_name.is_none()
            && self.domain.is_none()
    }
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdivision_1: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdivision_2: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latitude: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longitude: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy_radius_km: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Asns {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub research: Option<Asn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp: Option<Asn>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Asn>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Asn {
    pub asn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Provider {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub as_organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub isp: Option<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub(crate) struct Whois {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netname: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
}

/// One line of a record, before validation.
#[derive(Debug, Clone)]
pub(crate) enum Line {
    Service(Box<Service>),
}

/// Validates the lines of one scanner record (starting at `line` of its input): all of them
/// become observations, or the record is rejected whole with the first broken rule.
pub(crate) fn validate(reader: &mut ObservationReader, line: u64, lines: Vec<Line>) -> Item {
    let mut observations = Vec::with_capacity(lines.len());
    for draft in lines {
        let (text, what) = match &draft {
            Line::Service(s) => (
                serde_json::to_string(s),
                format!("{}/{} {}", s.port, s.transport, s.protocol),
            ),
        };
        let text = match text {
            Ok(text) => text,
            Err(e) => {
                return Item::Rejected(Rejected {
                    line,
                    field: what,
                    reason: format!("cannot be written as JSON: {e}"),
                });
            }
        };
        match reader.read_line(&text) {
            Ok(Some(observation)) => observations.push(Imported {
                observation,
                line: text,
            }),
            Ok(None) => {}
            Err(e) => {
                return Item::Rejected(Rejected {
                    line,
                    field: format!("{what}: {}", e.field),
                    reason: e.reason,
                });
            }
        }
    }
    Item::Record(Record { line, observations })
}

/// Cuts `text` to at most `max` characters (on a character boundary).
pub(crate) fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// `text` without control characters (replaced by spaces), trimmed and bounded; `None` when
/// nothing is left.
pub(crate) fn clean(text: &str, max: usize) -> Option<String> {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = cleaned.trim();
    (!trimmed.is_empty()).then(|| bounded(trimmed, max))
}

/// The line of a validated observation, as `docs/observation-format.md` writes it. Reading
/// it back gives an equal observation.
pub fn write_observation(observation: &Observation) -> String {
    let text = match observation {
        Observation::Service(s) => serde_json::to_string(&from_service(s)),
        Observation::Domain(d) => serde_json::to_string(&from_domain(d)),
    };
    // Plain structs of strings and numbers always serialize.
    text.unwrap_or_default()
}

fn from_domain(d: &DomainScan) -> Domain {
    Domain {
        kind: "domain",
        name: d.name.to_string(),
        addresses: d.addresses.iter().map(ToString::to_string).collect(),
        observed_at: d.observed_at.to_string(),
    }
}

fn from_service(s: &ServiceObservation) -> Service {
    let transport = match s.transport {
        Transport::Tcp => "tcp",
        Transport::Udp => "udp",
    };
    let mut out = Service::new(
        s.ip.to_string(),
        s.port.get(),
        transport,
        s.protocol.as_str(),
        s.observed_at,
    );
    out.status = match s.status {
        ScanStatus::Completed => "completed",
        ScanStatus::Partial => "partial",
        ScanStatus::Failed => "failed",
    };
    out.error.clone_from(&s.error);
    out.product = s.product.as_ref().map(|p| Product {
        title: p.title.clone(),
        version: p.version.clone(),
        cpe: p.cpe.as_ref().map(|c| c.as_str().to_owned()),
    });
    out.vulnerabilities = s.vulnerabilities.as_ref().map(|v| Vulnerabilities {
        cves: v.cves.iter().map(ToString::to_string).collect(),
        max_cvss: v.max_cvss.map(|c| c.as_f64()),
        has_exploits: v.has_exploits,
    });
    out.tls = s.tls.as_ref().map(|t| Tls {
        version: t.version.clone(),
        cipher_suite: t.cipher_suite.clone(),
        browser_trusted: t.browser_trusted,
        certificate: t.certificate.as_ref().map(|c| Certificate {
            subject_alt_names: c.subject_alt_names.clone(),
            common_name: c.common_name.clone(),
            subject_organization: c.subject_organization.clone(),
            issuer_common_name: c.issuer_common_name.clone(),
            issuer_organization: c.issuer_organization.clone(),
            valid_from: c.valid_from.map(|t| t.to_string()),
            valid_until: c.valid_until.map(|t| t.to_string()),
            fingerprint_sha256: c.fingerprint_sha256.clone(),
        }),
    });
    out.http = s.http.as_ref().map(|h| Http {
        status_code: h.status_code,
        title: h.title.clone(),
        server: h.server.clone(),
        complete: h.complete,
    });
    out.ssh = s.ssh.as_ref().map(|h| Ssh {
        protocol_version: h.protocol_version.clone(),
        software_version: h.software_version.clone(),
        host_key_algorithm: h.host_key_algorithm.clone(),
        host_key_fingerprint: h.host_key_fingerprint.clone(),
        comments: h.comments.clone(),
        hassh: h.hassh.clone(),
    });
    out.summary = s
        .summary
        .as_ref()
        .map(|sum| sum.fields.iter().cloned().collect());
    out.host = from_host(&s.host);
    out
}

fn from_host(h: &HostEnrichment) -> Host {
    let asn = |a: &Option<AsnAttribution>| {
        a.as_ref().map(|a| Asn {
            asn: a.asn.get(),
            organization: a.organization.clone(),
        })
    };
    let asns = Asns {
        research: asn(&h.asn.research),
        bgp: asn(&h.asn.bgp),
        network: asn(&h.asn.network),
    };
    let any_asn = asns.research.is_some() || asns.bgp.is_some() || asns.network.is_some();
    Host {
        location: h.location.as_ref().map(|l| Location {
            continent: l.continent.clone(),
            country_code: l.country_code.map(|c| c.to_string()),
            country_name: l.country_name.clone(),
            subdivision_1: l.subdivision_1.clone(),
            subdivision_2: l.subdivision_2.clone(),
            city: l.city.clone(),
            latitude: l.position.map(|p| p.latitude),
            longitude: l.position.map(|p| p.longitude),
            accuracy_radius_km: l.position.and_then(|p| p.accuracy_radius_km),
        }),
        asn: any_asn.then_some(asns),
        provider: h.provider.as_ref().map(|p| Provider {
            organization: p.organization.clone(),
            as_organization: p.as_organization.clone(),
            isp: p.isp.clone(),
        }),
        whois: h.whois.as_ref().map(|w| Whois {
            description: w.description.clone(),
            netname: w.netname.clone(),
            organization: w.organization.clone(),
            cidr: w.cidr.map(|c| c.to_string()),
            registry: w.registry.clone(),
            country_code: w.country_code.map(|c| c.to_string()),
        }),
        reverse_dns: h.reverse_dns.iter().map(ToString::to_string).collect(),
        dns_name: h.dns_name.as_ref().map(ToString::to_string),
        domain: h.domain.as_ref().map(ToString::to_string),
    }
}
