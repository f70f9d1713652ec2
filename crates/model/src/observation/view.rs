//! A validated service line that borrows its text from the line: [`ServiceView`].
//!
//! The validation pass builds a view first and the owned [`ServiceObservation`] from it
//! ([`ServiceView::into_owned`]), so both hold exactly what the line's rules accept. A caller
//! that only encodes or compares the observation (ingest, which writes the store's record
//! bytes on its parsing threads) reads the view instead and allocates no string per member;
//! [`ServiceObservation::view`] gives the view of an owned observation, so one encoder serves
//! both.
//!
//! Free text is borrowed as the line held it (after the rules of its member); values that are
//! normalised (DNS names, subject alternative names, hex digests) are borrowed when the line
//! already held them in their normal form and owned otherwise.

use std::borrow::Cow;
use std::net::IpAddr;

use super::{ScanStatus, ServiceObservation, Transport};
use crate::record::{
    AsnAttribution, AsnAttributions, Certificate, HostEnrichment, Http, Location, NetworkProvider,
    Position, Product, Ssh, Summary, Tls, VulnerabilitySummary, Whois,
};
use crate::{
    Asn, CountryCode, Cpe23, CveId, Cvss, DomainName, IpCidr, Port, ProtocolToken, Timestamp,
};

/// A validated service observation borrowing its text (see the module).
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceView<'a> {
    /// The host address.
    pub ip: IpAddr,
    /// The port.
    pub port: Port,
    /// TCP or UDP.
    pub transport: Transport,
    /// The registered protocol token.
    pub protocol: ProtocolToken,
    /// When the scan ran.
    pub observed_at: Timestamp,
    /// How far it got.
    pub status: ScanStatus,
    /// The scanner's error text.
    pub error: Option<&'a str>,
    /// Product identity.
    pub product: Option<ProductView<'a>>,
    /// Vulnerability summary.
    pub vulnerabilities: Option<VulnerabilitiesView<'a>>,
    /// TLS session and leaf certificate.
    pub tls: Option<TlsView<'a>>,
    /// HTTP evidence.
    pub http: Option<HttpView<'a>>,
    /// SSH evidence.
    pub ssh: Option<SshView<'a>>,
    /// Summary evidence.
    pub summary: Option<SummaryView<'a>>,
    /// Host enrichment.
    pub host: HostView<'a>,
}

/// [`Product`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductView<'a> {
    /// Title.
    pub title: &'a str,
    /// Version.
    pub version: Option<&'a str>,
    /// CPE.
    pub cpe: Option<Cow<'a, Cpe23>>,
}

/// [`VulnerabilitySummary`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct VulnerabilitiesView<'a> {
    /// CVE ids, unique.
    pub cves: Cow<'a, [CveId]>,
    /// Highest CVSS score.
    pub max_cvss: Option<Cvss>,
    /// Whether an exploit is known.
    pub has_exploits: bool,
}

/// [`Tls`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsView<'a> {
    /// Protocol version.
    pub version: Option<&'a str>,
    /// Cipher suite.
    pub cipher_suite: Option<&'a str>,
    /// Whether browsers trust the chain.
    pub browser_trusted: Option<bool>,
    /// The leaf certificate.
    pub certificate: Option<CertificateView<'a>>,
}

/// [`Certificate`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct CertificateView<'a> {
    /// Subject alternative names, normalised.
    pub subject_alt_names: Vec<Cow<'a, str>>,
    /// Subject common name.
    pub common_name: Option<&'a str>,
    /// Subject organisation.
    pub subject_organization: Option<&'a str>,
    /// Issuer common name.
    pub issuer_common_name: Option<&'a str>,
    /// Issuer organisation.
    pub issuer_organization: Option<&'a str>,
    /// Start of validity.
    pub valid_from: Option<Timestamp>,
    /// End of validity.
    pub valid_until: Option<Timestamp>,
    /// SHA-256 fingerprint, lowercase hex.
    pub fingerprint_sha256: Option<Cow<'a, str>>,
}

/// [`Http`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpView<'a> {
    /// Status code.
    pub status_code: Option<u16>,
    /// Page title.
    pub title: Option<&'a str>,
    /// `Server` header.
    pub server: Option<&'a str>,
    /// Whether the response was read whole.
    pub complete: bool,
}

/// [`Ssh`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct SshView<'a> {
    /// Protocol version.
    pub protocol_version: Option<&'a str>,
    /// Software version.
    pub software_version: Option<&'a str>,
    /// Host key algorithm.
    pub host_key_algorithm: Option<&'a str>,
    /// Host key fingerprint.
    pub host_key_fingerprint: Option<&'a str>,
    /// Comments.
    pub comments: Option<&'a str>,
    /// HASSH, lowercase hex.
    pub hassh: Option<Cow<'a, str>>,
}

/// [`Summary`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryView<'a> {
    /// The pairs in the order given, keys unique.
    pub fields: Vec<(&'a str, &'a str)>,
}

/// [`HostEnrichment`], borrowed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HostView<'a> {
    /// Location.
    pub location: Option<LocationView<'a>>,
    /// ASN attributions.
    pub asn: AsnsView<'a>,
    /// Network provider.
    pub provider: Option<ProviderView<'a>>,
    /// WHOIS.
    pub whois: Option<WhoisView<'a>>,
    /// Reverse DNS names, unique.
    pub reverse_dns: Cow<'a, [DomainName]>,
    /// DNS name.
    pub dns_name: Option<Cow<'a, DomainName>>,
    /// Domain.
    pub domain: Option<Cow<'a, DomainName>>,
}

/// [`Location`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct LocationView<'a> {
    /// Continent.
    pub continent: Option<&'a str>,
    /// Country code.
    pub country_code: Option<CountryCode>,
    /// Country name.
    pub country_name: Option<&'a str>,
    /// First subdivision.
    pub subdivision_1: Option<&'a str>,
    /// Second subdivision.
    pub subdivision_2: Option<&'a str>,
    /// City.
    pub city: Option<&'a str>,
    /// Position.
    pub position: Option<Position>,
}

/// [`AsnAttributions`], borrowed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AsnsView<'a> {
    /// Research attribution.
    pub research: Option<AsnView<'a>>,
    /// BGP attribution.
    pub bgp: Option<AsnView<'a>>,
    /// Network attribution.
    pub network: Option<AsnView<'a>>,
}

/// [`AsnAttribution`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct AsnView<'a> {
    /// The ASN.
    pub asn: Asn,
    /// Its organisation.
    pub organization: Option<&'a str>,
}

/// [`NetworkProvider`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderView<'a> {
    /// Organisation.
    pub organization: Option<&'a str>,
    /// AS organisation.
    pub as_organization: Option<&'a str>,
    /// ISP.
    pub isp: Option<&'a str>,
}

/// [`Whois`], borrowed.
#[derive(Debug, Clone, PartialEq)]
pub struct WhoisView<'a> {
    /// Description.
    pub description: Option<&'a str>,
    /// Network name.
    pub netname: Option<&'a str>,
    /// Organisation.
    pub organization: Option<&'a str>,
    /// Block.
    pub cidr: Option<IpCidr>,
    /// Registry.
    pub registry: Option<&'a str>,
    /// Country code.
    pub country_code: Option<CountryCode>,
}

fn own(s: Option<&str>) -> Option<String> {
    s.map(str::to_owned)
}

impl ServiceView<'_> {
    /// The owned observation.
    pub fn into_owned(self) -> ServiceObservation {
        ServiceObservation {
            ip: self.ip,
            port: self.port,
            transport: self.transport,
            protocol: self.protocol,
            observed_at: self.observed_at,
            status: self.status,
            error: own(self.error),
            product: self.product.map(|p| Product {
                title: p.title.to_owned(),
                version: own(p.version),
                cpe: p.cpe.map(Cow::into_owned),
            }),
            vulnerabilities: self.vulnerabilities.map(|v| VulnerabilitySummary {
                cves: v.cves.into_owned(),
                max_cvss: v.max_cvss,
                has_exploits: v.has_exploits,
            }),
            tls: self.tls.map(|t| Tls {
                version: own(t.version),
                cipher_suite: own(t.cipher_suite),
                browser_trusted: t.browser_trusted,
                certificate: t.certificate.map(|c| Certificate {
                    subject_alt_names: c
                        .subject_alt_names
                        .into_iter()
                        .map(Cow::into_owned)
                        .collect(),
                    common_name: own(c.common_name),
                    subject_organization: own(c.subject_organization),
                    issuer_common_name: own(c.issuer_common_name),
                    issuer_organization: own(c.issuer_organization),
                    valid_from: c.valid_from,
                    valid_until: c.valid_until,
                    fingerprint_sha256: c.fingerprint_sha256.map(Cow::into_owned),
                }),
            }),
            http: self.http.map(|h| Http {
                status_code: h.status_code,
                title: own(h.title),
                server: own(h.server),
                complete: h.complete,
            }),
            ssh: self.ssh.map(|s| Ssh {
                protocol_version: own(s.protocol_version),
                software_version: own(s.software_version),
                host_key_algorithm: own(s.host_key_algorithm),
                host_key_fingerprint: own(s.host_key_fingerprint),
                comments: own(s.comments),
                hassh: s.hassh.map(Cow::into_owned),
            }),
            summary: self.summary.map(|s| Summary {
                fields: s
                    .fields
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
            }),
            host: self.host.into_owned(),
        }
    }
}

impl HostView<'_> {
    /// The owned enrichment.
    pub fn into_owned(self) -> HostEnrichment {
        let asn = |a: Option<AsnView<'_>>| {
            a.map(|a| AsnAttribution {
                asn: a.asn,
                organization: own(a.organization),
            })
        };
        HostEnrichment {
            location: self.location.map(|l| l.into_owned()),
            asn: AsnAttributions {
                research: asn(self.asn.research),
                bgp: asn(self.asn.bgp),
                network: asn(self.asn.network),
            },
            provider: self.provider.map(|p| NetworkProvider {
                organization: own(p.organization),
                as_organization: own(p.as_organization),
                isp: own(p.isp),
            }),
            whois: self.whois.map(|w| Whois {
                description: own(w.description),
                netname: own(w.netname),
                organization: own(w.organization),
                cidr: w.cidr,
                registry: own(w.registry),
                country_code: w.country_code,
            }),
            reverse_dns: self.reverse_dns.into_owned(),
            dns_name: self.dns_name.map(Cow::into_owned),
            domain: self.domain.map(Cow::into_owned),
        }
    }
}

impl LocationView<'_> {
    /// The owned location.
    pub fn into_owned(self) -> Location {
        Location {
            continent: own(self.continent),
            country_code: self.country_code,
            country_name: own(self.country_name),
            subdivision_1: own(self.subdivision_1),
            subdivision_2: own(self.subdivision_2),
            city: own(self.city),
            position: self.position,
        }
    }
}

impl ServiceObservation {
    /// The view of this observation (borrowing everything but the subject alternative
    /// names' list and the summary's pairs, which it lists anew).
    pub fn view(&self) -> ServiceView<'_> {
        ServiceView {
            ip: self.ip,
            port: self.port,
            transport: self.transport,
            protocol: self.protocol,
            observed_at: self.observed_at,
            status: self.status,
            error: self.error.as_deref(),
            product: self.product.as_ref().map(|p| ProductView {
                title: &p.title,
                version: p.version.as_deref(),
                cpe: p.cpe.as_ref().map(Cow::Borrowed),
            }),
            vulnerabilities: self.vulnerabilities.as_ref().map(|v| VulnerabilitiesView {
                cves: Cow::Borrowed(&v.cves),
                max_cvss: v.max_cvss,
                has_exploits: v.has_exploits,
            }),
            tls: self.tls.as_ref().map(|t| TlsView {
                version: t.version.as_deref(),
                cipher_suite: t.cipher_suite.as_deref(),
                browser_trusted: t.browser_trusted,
                certificate: t.certificate.as_ref().map(|c| CertificateView {
                    subject_alt_names: c
                        .subject_alt_names
                        .iter()
                        .map(|n| Cow::Borrowed(n.as_str()))
                        .collect(),
                    common_name: c.common_name.as_deref(),
                    subject_organization: c.subject_organization.as_deref(),
                    issuer_common_name: c.issuer_common_name.as_deref(),
                    issuer_organization: c.issuer_organization.as_deref(),
                    valid_from: c.valid_from,
                    valid_until: c.valid_until,
                    fingerprint_sha256: c.fingerprint_sha256.as_deref().map(Cow::Borrowed),
                }),
            }),
            http: self.http.as_ref().map(|h| HttpView {
                status_code: h.status_code,
                title: h.title.as_deref(),
                server: h.server.as_deref(),
                complete: h.complete,
            }),
            ssh: self.ssh.as_ref().map(|s| SshView {
                protocol_version: s.protocol_version.as_deref(),
                software_version: s.software_version.as_deref(),
                host_key_algorithm: s.host_key_algorithm.as_deref(),
                host_key_fingerprint: s.host_key_fingerprint.as_deref(),
                comments: s.comments.as_deref(),
                hassh: s.hassh.as_deref().map(Cow::Borrowed),
            }),
            summary: self.summary.as_ref().map(|s| SummaryView {
                fields: s
                    .fields
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect(),
            }),
            host: HostView::of(&self.host),
        }
    }
}

impl<'a> HostView<'a> {
    /// The view of an owned enrichment.
    pub fn of(h: &'a HostEnrichment) -> Self {
        let asn = |a: &'a Option<AsnAttribution>| {
            a.as_ref().map(|a| AsnView {
                asn: a.asn,
                organization: a.organization.as_deref(),
            })
        };
        HostView {
            location: h.location.as_ref().map(LocationView::of),
            asn: AsnsView {
                research: asn(&h.asn.research),
                bgp: asn(&h.asn.bgp),
                network: asn(&h.asn.network),
            },
            provider: h.provider.as_ref().map(|p| ProviderView {
                organization: p.organization.as_deref(),
                as_organization: p.as_organization.as_deref(),
                isp: p.isp.as_deref(),
            }),
            whois: h.whois.as_ref().map(|w| WhoisView {
                description: w.description.as_deref(),
                netname: w.netname.as_deref(),
                organization: w.organization.as_deref(),
                cidr: w.cidr,
                registry: w.registry.as_deref(),
                country_code: w.country_code,
            }),
            reverse_dns: Cow::Borrowed(&h.reverse_dns),
            dns_name: h.dns_name.as_ref().map(Cow::Borrowed),
            domain: h.domain.as_ref().map(Cow::Borrowed),
        }
    }
}

impl<'a> LocationView<'a> {
    /// The view of an owned location.
    pub fn of(l: &'a Location) -> Self {
        LocationView {
            continent: l.continent.as_deref(),
            country_code: l.country_code,
            country_name: l.country_name.as_deref(),
            subdivision_1: l.subdivision_1.as_deref(),
            subdivision_2: l.subdivision_2.as_deref(),
            city: l.city.as_deref(),
            position: l.position,
        }
    }
}
