//! The host result on the wire (SPEC "Host result", "Location", "Domain names", "Service"):
//! [`HostResult`] and its parts, built from the index's result records
//! (`periscope_index::HostResult`, `periscope_model::record::Host`).
//!
//! Every member except `ip` is omitted when it has nothing to say: a missing value, an empty
//! list (`domains`, `services`, `certificate_names`, `evidence`, `match_reasons`, the three
//! `*_matches`), or an object with no members left (`location`, `whois`). No member is ever
//! JSON `null`. Timestamps are RFC 3339 UTC with a trailing `Z`.
//!
//! Evidence entries are objects tagged by `kind` (`http`, `ssh`, `summary`), see [`Evidence`].
//!
//! Each type derives its schema in the OpenAPI document (`crate::schema`): the doc comments
//! of the members are their descriptions there.

use std::net::IpAddr;

use periscope_index::api::{
    AsnMatch as IndexAsnMatch, DomainMatch as IndexDomainMatch, HostResult as IndexHostResult,
    OrganizationMatch as IndexOrganizationMatch,
};
use periscope_model::record;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// One unique address. Every member except `ip` may be absent.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HostResult {
    /// The address (IPv4 dotted quad or RFC 5952 IPv6 text).
    #[schemars(schema_with = "crate::schema::ip_address")]
    pub ip: IpAddr,
    /// GeoIP location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// ASN and AS organization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<Network>,
    /// WHOIS without contacts, abuse data or addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whois: Option<Whois>,
    /// The stored reverse-DNS name (IPv4 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse_dns: Option<String>,
    /// Stored DNS names, each once; capped, not a full inventory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domains: Option<Domains>,
    /// Services by port, then protocol. Absent on domain and ASN results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub services: Option<Services>,
    /// Organization queries only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub organization_matches: Vec<OrganizationMatch>,
    /// Domain queries only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub domain_matches: Vec<DomainMatch>,
    /// ASN queries only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub asn_matches: Vec<AsnMatch>,
}

/// GeoIP, coarsest to finest. A level not recorded is absent; a level with the same name as
/// the coarser one shown is left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Location {
    /// Continent name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continent: Option<String>,
    /// ISO-2 country code.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[A-Z]{2}$"))]
    pub country_code: Option<String>,
    /// Country name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_name: Option<String>,
    /// First-level subdivision.
    // A state, a region.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdivision_1: Option<String>,
    /// Second-level subdivision.
    // A county, a district.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdivision_2: Option<String>,
    /// City.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// Degrees north of the most recent observation recording a position.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -90, max = 90))]
    pub latitude: Option<f64>,
    /// Degrees east, same observation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -180, max = 180))]
    pub longitude: Option<f64>,
    /// The radius GeoIP claims for the position.
    // In kilometres. A JSON number in the contract (SPEC "Location"), though whole today.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "number"))]
    pub accuracy_radius_km: Option<u32>,
}

impl Location {
    /// The wire location of a record, `None` when no member would be left. A level equal to
    /// the nearest coarser level shown (compared ignoring case) is left out, so a name appears
    /// once (SPEC "Location").
    pub fn from_record(l: &record::Location) -> Option<Self> {
        let mut place = [
            l.continent.clone(),
            l.country_name.clone(),
            l.subdivision_1.clone(),
            l.subdivision_2.clone(),
            l.city.clone(),
        ];
        let mut shown: Option<String> = None;
        for level in &mut place {
            let Some(name) = level.as_deref() else {
                continue;
            };
            let key = name.to_lowercase();
            if shown.as_deref() == Some(key.as_str()) {
                *level = None;
            } else {
                shown = Some(key);
            }
        }
        let [continent, country_name, subdivision_1, subdivision_2, city] = place;
        let out = Self {
            continent,
            country_code: l.country_code.map(|c| c.as_str().to_owned()),
            country_name,
            subdivision_1,
            subdivision_2,
            city,
            latitude: l.position.map(|p| p.latitude),
            longitude: l.position.map(|p| p.longitude),
            accuracy_radius_km: l.position.and_then(|p| p.accuracy_radius_km),
        };
        (out != Self::default()).then_some(out)
    }
}

/// The `network` member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Network {
    /// The ASN shown for the host.
    #[schemars(range(min = 1, max = 4294967295_u32))]
    pub asn: u32,
    /// Its AS organization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
}

/// The `whois` member: only these five fields are ever shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Whois {
    /// Registrant organization.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub organization: Option<String>,
    /// Network name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netname: Option<String>,
    /// Registered block, e.g. `240.0.0.0/22` or `3fff:12::/48`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cidr: Option<String>,
    /// Registry, e.g. `ripencc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    /// Registration country, ISO-2.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[A-Z]{2}$"))]
    pub country_code: Option<String>,
}

impl Whois {
    /// The wire WHOIS of a record (never its description), `None` when no member would be
    /// left.
    pub fn from_record(w: &record::Whois) -> Option<Self> {
        let out = Self {
            organization: w.organization.clone(),
            netname: w.netname.clone(),
            cidr: w.cidr.map(|c| c.to_string()),
            registry: w.registry.clone(),
            country_code: w.country_code.map(|c| c.as_str().to_owned()),
        };
        (out != Self::default()).then_some(out)
    }
}

/// The `domains` member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Domains {
    /// Names with their sources, each name once.
    pub items: Vec<DomainItem>,
    /// More names exist than the caps let through.
    pub has_more: bool,
}

/// One stored DNS name of a host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DomainItem {
    /// The name.
    pub name: String,
    /// Where the name was recorded.
    #[schemars(extend("enum" = [
        "reverse_dns", "dns_name", "domain", "certificate_subject", "domain_scan"
    ]))]
    pub source: &'static str,
}

/// The `services` member.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(inline)]
pub struct Services {
    /// Services by port, then protocol.
    pub items: Vec<Service>,
    /// More services exist than listed (the preview cap, or further host-detail pages).
    pub has_more: bool,
}

/// One current service.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Service {
    /// Port.
    #[schemars(range(min = 1))]
    pub port: u16,
    /// A protocol token of the registry.
    pub protocol: &'static str,
    /// When the current observation was made. RFC 3339, UTC, with a trailing `Z`.
    #[schemars(schema_with = "crate::schema::timestamp")]
    pub observed_at: String,
    /// Product title from CPE enrichment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Product version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Leaf-certificate names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub certificate_names: Vec<String>,
    /// Vulnerability summary; absent when enrichment was unavailable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vulnerabilities: Option<Vulnerabilities>,
    /// Typed evidence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<Evidence>,
    /// The query's service-level clauses, when this service satisfies all of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub match_reasons: Vec<String>,
}

/// Absent from a service when enrichment was unavailable (not clean).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
pub struct Vulnerabilities {
    /// Number of CVEs.
    pub cve_count: u32,
    /// A public exploit was known at scan time.
    pub has_exploits: bool,
    /// Maximum CVSS over the service summary (0.0 to 10.0, one decimal).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10))]
    pub max_cvss: Option<f64>,
}

/// One typed evidence entry, tagged by `kind`:
/// - `{"kind":"http", status_code?, title?, server?, tls?}`;
/// - `{"kind":"ssh", protocol_version?, software_version?, host_key_algorithm?,
///   host_key_fingerprint?, comments?, hassh?}`;
/// - `{"kind":"summary", "fields": {"<key>": "<value>", …}}` (at most 16 string fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[schemars(description = "Tagged by `kind`.")]
pub enum Evidence {
    /// HTTP and HTTPS. Status, title and server only when the exchange completed cleanly.
    Http {
        /// Status code (only when the exchange completed cleanly).
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 100, max = 599))]
        status_code: Option<u16>,
        /// HTML title (same condition).
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// `Server` header (same condition).
        #[serde(skip_serializing_if = "Option::is_none")]
        server: Option<String>,
        /// TLS facts (HTTPS only).
        #[serde(skip_serializing_if = "Option::is_none")]
        tls: Option<Tls>,
    },
    /// SSH.
    Ssh {
        /// e.g. `2.0`.
        #[serde(skip_serializing_if = "Option::is_none")]
        protocol_version: Option<String>,
        /// e.g. `OpenSSH_9.6p1`.
        #[serde(skip_serializing_if = "Option::is_none")]
        software_version: Option<String>,
        /// e.g. `ssh-ed25519`.
        #[serde(skip_serializing_if = "Option::is_none")]
        host_key_algorithm: Option<String>,
        /// e.g. `SHA256:…`.
        #[serde(skip_serializing_if = "Option::is_none")]
        host_key_fingerprint: Option<String>,
        /// The comments part of the identification string.
        #[serde(skip_serializing_if = "Option::is_none")]
        comments: Option<String>,
        /// HASSH fingerprint of the server's key-exchange offer.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schemars(regex(pattern = "^[0-9a-f]{32}$"))]
        hassh: Option<String>,
    },
    /// Every other protocol: a bounded summary.
    Summary {
        /// A bounded summary of the service, key to value.
        // In the scanner's order.
        fields: SummaryFields,
    },
}

/// The `fields` of summary evidence: a JSON object of strings, written in the scanner's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummaryFields(pub Vec<(String, String)>);

/// An object of at most 16 strings, in place.
impl JsonSchema for SummaryFields {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SummaryFields".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "object",
            "additionalProperties": { "type": "string" },
            "maxProperties": 16
        })
    }
}

impl Serialize for SummaryFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// HTTPS only. Never chains, keys or full distinguished names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Tls {
    /// Negotiated version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Negotiated cipher suite.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cipher_suite: Option<String>,
    /// Leaf-certificate issuer common name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issuer_common_name: Option<String>,
    /// Start of validity. RFC 3339, UTC, with a trailing `Z`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::timestamp")]
    pub valid_from: Option<String>,
    /// End of validity. RFC 3339, UTC, with a trailing `Z`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::timestamp")]
    pub valid_until: Option<String>,
    /// SHA-256 fingerprint, 64 lowercase hex digits.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[0-9a-f]{64}$"))]
    pub fingerprint_sha256: Option<String>,
    /// Whether the chain validated against browser trust stores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_trusted: Option<bool>,
}

/// One `organization_matches` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OrganizationMatch {
    /// The evidence source.
    #[schemars(extend("enum" = [
        "as_organization", "whois_description", "whois_netname", "network_provider",
        "certificate_subject", "certificate_issuer"
    ]))]
    pub source: &'static str,
    /// The stored value that matched.
    pub value: String,
    /// Certificate sources only.
    // The port of the service whose certificate matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub port: Option<u16>,
    /// Certificate sources only.
    // The protocol of that service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
}

/// One `domain_matches` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DomainMatch {
    /// The evidence source.
    #[schemars(extend("enum" = [
        "dns_resolution", "stored_domain", "stored_dns_name", "stored_reverse_dns",
        "domain_scan"
    ]))]
    pub source: &'static str,
    /// The matched name.
    pub value: String,
}

/// One `asn_matches` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AsnMatch {
    /// The attribution.
    #[schemars(extend("enum" = ["research_best_asn", "bgp_best_asn", "network_asn"]))]
    pub source: &'static str,
    /// The ASN.
    #[schemars(range(min = 1, max = 4294967295_u32))]
    pub asn: u32,
}

impl From<&record::Host> for HostResult {
    fn from(h: &record::Host) -> Self {
        Self {
            ip: h.ip,
            location: h.location.as_ref().and_then(Location::from_record),
            network: h.network.as_ref().map(|n| Network {
                asn: n.asn.get(),
                organization: n.organization.clone(),
            }),
            whois: h.whois.as_ref().and_then(Whois::from_record),
            reverse_dns: h.reverse_dns.as_ref().map(|d| d.as_str().to_owned()),
            domains: (!h.domains.is_empty() || h.domains_has_more).then(|| Domains {
                items: h
                    .domains
                    .iter()
                    .map(|d| DomainItem {
                        name: d.name.clone(),
                        source: d.source.as_str(),
                    })
                    .collect(),
                has_more: h.domains_has_more,
            }),
            services: (!h.services.is_empty() || h.services_has_more).then(|| Services {
                items: h.services.iter().map(Service::from).collect(),
                has_more: h.services_has_more,
            }),
            organization_matches: Vec::new(),
            domain_matches: Vec::new(),
            asn_matches: Vec::new(),
        }
    }
}

impl From<&IndexHostResult> for HostResult {
    fn from(r: &IndexHostResult) -> Self {
        Self {
            organization_matches: r
                .organization_matches
                .iter()
                .map(OrganizationMatch::from)
                .collect(),
            domain_matches: r.domain_matches.iter().map(DomainMatch::from).collect(),
            asn_matches: r.asn_matches.iter().map(AsnMatch::from).collect(),
            ..Self::from(&r.host)
        }
    }
}

impl From<&record::Service> for Service {
    fn from(s: &record::Service) -> Self {
        Self {
            port: s.port.get(),
            protocol: s.protocol.as_str(),
            observed_at: s.observed_at.to_string(),
            product: s.product.clone(),
            version: s.version.clone(),
            certificate_names: s.certificate_names.clone(),
            vulnerabilities: s.vulnerabilities.map(|v| Vulnerabilities {
                cve_count: v.cve_count,
                has_exploits: v.has_exploits,
                max_cvss: v.max_cvss.map(|c| c.as_f64()),
            }),
            evidence: s.evidence.iter().map(Evidence::from).collect(),
            match_reasons: s.match_reasons.clone(),
        }
    }
}

impl From<&record::Evidence> for Evidence {
    fn from(e: &record::Evidence) -> Self {
        match e {
            record::Evidence::Http {
                status_code,
                title,
                server,
                tls,
            } => Self::Http {
                status_code: *status_code,
                title: title.clone(),
                server: server.clone(),
                tls: tls.as_ref().map(|t| Tls {
                    version: t.version.clone(),
                    cipher_suite: t.cipher_suite.clone(),
                    issuer_common_name: t.issuer_common_name.clone(),
                    valid_from: t.valid_from.map(|v| v.to_string()),
                    valid_until: t.valid_until.map(|v| v.to_string()),
                    fingerprint_sha256: t.fingerprint_sha256.clone(),
                    browser_trusted: t.browser_trusted,
                }),
            },
            record::Evidence::Ssh(s) => Self::Ssh {
                protocol_version: s.protocol_version.clone(),
                software_version: s.software_version.clone(),
                host_key_algorithm: s.host_key_algorithm.clone(),
                host_key_fingerprint: s.host_key_fingerprint.clone(),
                comments: s.comments.clone(),
                hassh: s.hassh.clone(),
            },
            record::Evidence::Summary(s) => Self::Summary {
                fields: SummaryFields(s.fields.clone()),
            },
        }
    }
}

impl From<&IndexOrganizationMatch> for OrganizationMatch {
    fn from(m: &IndexOrganizationMatch) -> Self {
        Self {
            source: m.source.as_str(),
            value: m.value.clone(),
            port: m.service.map(|(port, _)| port.get()),
            protocol: m.service.map(|(_, protocol)| protocol.as_str()),
        }
    }
}

impl From<&IndexDomainMatch> for DomainMatch {
    fn from(m: &IndexDomainMatch) -> Self {
        Self {
            source: m.source.as_str(),
            value: m.value.clone(),
        }
    }
}

impl From<&IndexAsnMatch> for AsnMatch {
    fn from(m: &IndexAsnMatch) -> Self {
        Self {
            source: m.source.as_str(),
            asn: m.asn.get(),
        }
    }
}
