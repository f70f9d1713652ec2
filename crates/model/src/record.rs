//! The records of the specification: what a scan recorded about a host and its services.
//!
//! Two layers live here:
//! - the *stored* parts that an observation carries and the index keeps (location, ASN
//!   attributions, network provider, WHOIS, product, vulnerability summary, TLS, HTTP, SSH and
//!   summary evidence), validated by the observation reader;
//! - the *result* records a search answers with ([`Host`], [`Service`], [`Evidence`],
//!   [`DomainEntry`], match evidence), built from the stored parts by the index. They hold only
//!   the fields the specification allows to be shown: no WHOIS contacts, no raw banners, no
//!   scanner error text.

use std::net::IpAddr;

use crate::{
    Asn, CountryCode, Cpe23, CveId, Cvss, DomainName, IpCidr, Port, ProtocolToken, Timestamp,
};

/// Where GeoIP placed an address, coarsest to finest. Every level may be missing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Location {
    /// Continent name, e.g. `Europe`.
    pub continent: Option<String>,
    /// ISO-2 country code.
    pub country_code: Option<CountryCode>,
    /// Country name, e.g. `Germany`.
    pub country_name: Option<String>,
    /// First-level subdivision, e.g. `Bavaria`.
    pub subdivision_1: Option<String>,
    /// Second-level subdivision, e.g. `Upper Bavaria`.
    pub subdivision_2: Option<String>,
    /// City name.
    pub city: Option<String>,
    /// Coordinates and the radius claimed for them.
    pub position: Option<Position>,
}

/// A GeoIP position. Latitude in -90..=90, longitude in -180..=180.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    /// Degrees north.
    pub latitude: f64,
    /// Degrees east.
    pub longitude: f64,
    /// The GeoIP accuracy radius in kilometres, when recorded.
    pub accuracy_radius_km: Option<u32>,
}

/// One ASN attribution with the AS organisation name it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AsnAttribution {
    /// The autonomous system.
    pub asn: Asn,
    /// The AS organisation name, when the source gave one.
    pub organization: Option<String>,
}

/// The three ASN attributions the specification names. Any of them may be missing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AsnAttributions {
    /// The best ASN of a research dataset.
    pub research: Option<AsnAttribution>,
    /// The best BGP attribution.
    pub bgp: Option<AsnAttribution>,
    /// The ASN of the network/location enrichment.
    pub network: Option<AsnAttribution>,
}

/// Network-provider enrichment from the location data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkProvider {
    /// Provider organisation.
    pub organization: Option<String>,
    /// AS organisation as the provider data names it.
    pub as_organization: Option<String>,
    /// Internet service provider.
    pub isp: Option<String>,
}

/// The WHOIS fields Periscope stores. Contacts, abuse data and postal addresses are not part
/// of the observation format at all, so they can never be shown.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Whois {
    /// The network's description (`descr`).
    pub description: Option<String>,
    /// The network name; may be an identifier rather than a legal name.
    pub netname: Option<String>,
    /// The registrant organisation.
    pub organization: Option<String>,
    /// The registered block.
    pub cidr: Option<IpCidr>,
    /// The registry, e.g. `ripencc`.
    pub registry: Option<String>,
    /// The registration country.
    pub country_code: Option<CountryCode>,
}

/// Host enrichment recorded at scan time, carried by every service observation.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostEnrichment {
    /// GeoIP location.
    pub location: Option<Location>,
    /// The three ASN attributions.
    pub asn: AsnAttributions,
    /// Network-provider enrichment.
    pub provider: Option<NetworkProvider>,
    /// WHOIS.
    pub whois: Option<Whois>,
    /// Reverse DNS names, first one first. Always empty for IPv6.
    pub reverse_dns: Vec<DomainName>,
    /// The forward DNS name the scanner targeted or found.
    pub dns_name: Option<DomainName>,
    /// The stored (registrable) domain.
    pub domain: Option<DomainName>,
}

/// Product identity from registered CPE enrichment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// Human title of the CPE product, e.g. `nginx` or `Apache HTTP Server`.
    pub title: String,
    /// The version, when known.
    pub version: Option<String>,
    /// The CPE 2.3 identity.
    pub cpe: Option<Cpe23>,
}

/// Scan-time vulnerability enrichment of one service. Absent (on the observation) means
/// enrichment was unavailable, not that the service is clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VulnerabilitySummary {
    /// CVE identifiers, unique.
    pub cves: Vec<CveId>,
    /// The maximum CVSS over the service summary; may be absent when no CVE was scored.
    pub max_cvss: Option<Cvss>,
    /// Whether a public exploit was known at scan time.
    pub has_exploits: bool,
}

/// TLS session facts and the leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tls {
    /// Negotiated version, e.g. `TLSv1.3`.
    pub version: Option<String>,
    /// Negotiated cipher suite.
    pub cipher_suite: Option<String>,
    /// Whether the chain validated against browser trust stores.
    pub browser_trusted: Option<bool>,
    /// The leaf certificate.
    pub certificate: Option<Certificate>,
}

/// The safe fields of a leaf certificate.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Certificate {
    /// DNS subject alternative names, lowercased, trailing dot dropped (may include `*.` names).
    pub subject_alt_names: Vec<String>,
    /// Subject common name as recorded.
    pub common_name: Option<String>,
    /// Subject organisation (O).
    pub subject_organization: Option<String>,
    /// Issuer common name.
    pub issuer_common_name: Option<String>,
    /// Issuer organisation.
    pub issuer_organization: Option<String>,
    /// Start of validity.
    pub valid_from: Option<Timestamp>,
    /// End of validity.
    pub valid_until: Option<Timestamp>,
    /// SHA-256 fingerprint, 64 lowercase hex digits.
    pub fingerprint_sha256: Option<String>,
}

/// HTTP exchange facts. Status, title and server are shown only when `complete` is true.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Http {
    /// Status code, 100..=599.
    pub status_code: Option<u16>,
    /// The HTML title.
    pub title: Option<String>,
    /// The `Server` header.
    pub server: Option<String>,
    /// Whether the exchange completed cleanly.
    pub complete: bool,
}

/// SSH handshake facts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ssh {
    /// e.g. `2.0`.
    pub protocol_version: Option<String>,
    /// e.g. `OpenSSH_9.6p1`.
    pub software_version: Option<String>,
    /// e.g. `ssh-ed25519`.
    pub host_key_algorithm: Option<String>,
    /// e.g. `SHA256:…`.
    pub host_key_fingerprint: Option<String>,
    /// The comments part of the identification string.
    pub comments: Option<String>,
    /// The HASSH fingerprint of the server's key exchange offer.
    pub hassh: Option<String>,
}

/// A bounded summary for protocols without a richer evidence kind: at most
/// [`Summary::MAX_FIELDS`] `key → value` pairs, keys unique.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// The pairs in the order the scanner gave them.
    pub fields: Vec<(String, String)>,
}

impl Summary {
    /// Maximum number of fields.
    pub const MAX_FIELDS: usize = 16;
    /// Maximum key length in characters.
    pub const MAX_KEY: usize = 64;
    /// Maximum value length in characters.
    pub const MAX_VALUE: usize = 256;
}

// ---------------------------------------------------------------------------------------------
// Result records.

/// The `network` member of a host result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// The ASN shown for the host.
    pub asn: Asn,
    /// Its organisation.
    pub organization: Option<String>,
}

/// Where a name in a host's `domains` list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DomainSource {
    /// The stored reverse-DNS name.
    ReverseDns,
    /// The stored forward DNS name.
    DnsName,
    /// The stored domain.
    Domain,
    /// A subject name of a leaf certificate presented by a service.
    CertificateSubject,
    /// A stored domain-scan record that resolved to the address.
    DomainScan,
}

impl DomainSource {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReverseDns => "reverse_dns",
            Self::DnsName => "dns_name",
            Self::Domain => "domain",
            Self::CertificateSubject => "certificate_subject",
            Self::DomainScan => "domain_scan",
        }
    }
}

/// One entry of a host's `domains` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainEntry {
    /// The name.
    pub name: String,
    /// Its source.
    pub source: DomainSource,
}

/// Typed evidence of a service, holding only fields the specification allows to be shown.
#[derive(Debug, Clone, PartialEq)]
pub enum Evidence {
    /// HTTP and HTTPS.
    Http {
        /// Status code (only when the exchange completed).
        status_code: Option<u16>,
        /// Title (only when the exchange completed).
        title: Option<String>,
        /// Server header (only when the exchange completed).
        server: Option<String>,
        /// TLS facts (HTTPS only).
        tls: Option<TlsEvidence>,
    },
    /// SSH.
    Ssh(Ssh),
    /// Every other protocol.
    Summary(Summary),
}

/// The `tls` object of HTTP evidence.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsEvidence {
    /// Version.
    pub version: Option<String>,
    /// Cipher suite.
    pub cipher_suite: Option<String>,
    /// Issuer common name.
    pub issuer_common_name: Option<String>,
    /// Start of validity.
    pub valid_from: Option<Timestamp>,
    /// End of validity.
    pub valid_until: Option<Timestamp>,
    /// SHA-256 fingerprint.
    pub fingerprint_sha256: Option<String>,
    /// Browser trust.
    pub browser_trusted: Option<bool>,
}

/// One current service of a host, as a result shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Service {
    /// Port.
    pub port: Port,
    /// Protocol token.
    pub protocol: ProtocolToken,
    /// When the current observation was made.
    pub observed_at: Timestamp,
    /// Product title.
    pub product: Option<String>,
    /// Product version.
    pub version: Option<String>,
    /// Leaf-certificate names.
    pub certificate_names: Vec<String>,
    /// `cve_count`, `has_exploits`, `max_cvss`; absent when enrichment was unavailable.
    pub vulnerabilities: Option<VulnerabilityView>,
    /// Typed evidence, when its safe fields exist.
    pub evidence: Vec<Evidence>,
    /// The canonical text of each service-level clause of the query, when this service
    /// satisfies all of them; empty otherwise and on host detail.
    pub match_reasons: Vec<String>,
}

/// The `vulnerabilities` member of a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VulnerabilityView {
    /// Number of CVEs.
    pub cve_count: u32,
    /// Exploit flag.
    pub has_exploits: bool,
    /// Maximum CVSS.
    pub max_cvss: Option<Cvss>,
}

/// A host result: one unique address and what may be shown of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    /// The address.
    pub ip: IpAddr,
    /// Location of the most recent observation that records a position.
    pub location: Option<Location>,
    /// ASN and organisation.
    pub network: Option<Network>,
    /// WHOIS without contacts.
    pub whois: Option<Whois>,
    /// First stored reverse-DNS name of the most recent observation carrying one (IPv4 only).
    pub reverse_dns: Option<DomainName>,
    /// Stored names with their sources.
    pub domains: Vec<DomainEntry>,
    /// Whether more names exist than `domains` holds.
    pub domains_has_more: bool,
    /// Current services, by port then protocol.
    pub services: Vec<Service>,
    /// Whether more services exist than `services` holds.
    pub services_has_more: bool,
}
