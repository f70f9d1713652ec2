//! The [`ScanIndex`] trait and its requests and results: the one seam between the search
//! service and whatever engine holds the scan data. `docs/search-semantics.md` defines every
//! answer; engines differ only in speed.

use std::net::IpAddr;

use periscope_model::observation::DomainScan;
use periscope_model::record::Host;
use periscope_model::{Asn, CountryCode, DomainName, Timestamp};
use periscope_query::{Clause, FilterQuery, Query, Resolution};

/// Why an engine could not answer. Each maps to one API error of the specification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// The stored scan data is temporarily busy (503 `search_source_busy`).
    #[error("the scan data is busy")]
    Busy,
    /// The engine gave up within its time budget (504 `search_timeout`).
    #[error("the search did not finish in time")]
    Timeout,
    /// The engine cannot be reached or failed (503 `service_unavailable`).
    #[error("the scan index is unavailable: {0}")]
    Unavailable(String),
    /// A host-detail continuation that this engine did not issue for this address
    /// (422 `validation_failed`, violation `invalid` on `cursor`).
    #[error("the continuation is not valid for this address")]
    InvalidContinuation,
}

/// One page of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest<'a> {
    /// The parsed query.
    pub query: &'a Query,
    /// Continue strictly after this address (host order), or start from the first.
    pub after: Option<IpAddr>,
    /// Hosts per page, 1..=100.
    pub limit: usize,
    /// Domain searches only: the public addresses DNS returned for the name (the service
    /// layer resolves; the index merges). Empty for every other search.
    pub resolved: &'a [IpAddr],
    /// The clock: what is current depends on the retention window.
    pub now: Timestamp,
}

/// The answer of [`ScanIndex::search`].
#[derive(Debug, Clone, PartialEq)]
pub enum SearchOutcome {
    /// A page of results.
    Page(SearchPage),
    /// A query of one host-level clause matched more hosts than one search may return
    /// (violation `query_too_broad`); nothing was returned.
    TooBroad {
        /// How many hosts it matched.
        matching: u64,
    },
}

/// Hosts in ascending host order and whether more follow the last one.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// At most `limit` hosts.
    pub hosts: Vec<HostResult>,
    /// More hosts match after the last one.
    pub has_more: bool,
}

/// A host result: what may be shown of the host, and the evidence linking it to the query.
#[derive(Debug, Clone, PartialEq)]
pub struct HostResult {
    /// The host. On domain and ASN results `services` is empty.
    pub host: Host,
    /// Organization queries only.
    pub organization_matches: Vec<OrganizationMatch>,
    /// Domain queries only.
    pub domain_matches: Vec<DomainMatch>,
    /// ASN queries only.
    pub asn_matches: Vec<AsnMatch>,
}

/// Where an organization phrase matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrganizationSource {
    /// AS organization name of the research-dataset or BGP attribution.
    AsOrganization,
    /// WHOIS description.
    WhoisDescription,
    /// WHOIS netname.
    WhoisNetname,
    /// Network-provider organization, AS organization or ISP.
    NetworkProvider,
    /// Leaf-certificate subject organization.
    CertificateSubject,
    /// Leaf-certificate issuer organization.
    CertificateIssuer,
}

impl OrganizationSource {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AsOrganization => "as_organization",
            Self::WhoisDescription => "whois_description",
            Self::WhoisNetname => "whois_netname",
            Self::NetworkProvider => "network_provider",
            Self::CertificateSubject => "certificate_subject",
            Self::CertificateIssuer => "certificate_issuer",
        }
    }
}

/// One `organization_matches` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationMatch {
    /// The evidence source.
    pub source: OrganizationSource,
    /// The stored value that matched.
    pub value: String,
    /// Certificate sources: the service's port and protocol.
    pub service: Option<(periscope_model::Port, periscope_model::ProtocolToken)>,
}

/// Where a domain query matched a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DomainMatchSource {
    /// The host is a current public A/AAAA answer for the name.
    DnsResolution,
    /// The stored domain equals the name or is a subdomain of it.
    StoredDomain,
    /// The stored DNS name equals the name or is a subdomain of it.
    StoredDnsName,
    /// A stored reverse-DNS name equals the name or is a subdomain of it.
    StoredReverseDns,
    /// A stored domain-scan record of the name or a subdomain lists the address.
    DomainScan,
}

impl DomainMatchSource {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DnsResolution => "dns_resolution",
            Self::StoredDomain => "stored_domain",
            Self::StoredDnsName => "stored_dns_name",
            Self::StoredReverseDns => "stored_reverse_dns",
            Self::DomainScan => "domain_scan",
        }
    }
}

/// One `domain_matches` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainMatch {
    /// The evidence source.
    pub source: DomainMatchSource,
    /// The matched name (the queried name for DNS resolution).
    pub value: String,
}

/// Which ASN attribution matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AsnSource {
    /// The research dataset's best ASN.
    ResearchBestAsn,
    /// The best BGP attribution.
    BgpBestAsn,
    /// The network/location enrichment ASN.
    NetworkAsn,
}

impl AsnSource {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ResearchBestAsn => "research_best_asn",
            Self::BgpBestAsn => "bgp_best_asn",
            Self::NetworkAsn => "network_asn",
        }
    }
}

/// One `asn_matches` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsnMatch {
    /// The attribution.
    pub source: AsnSource,
    /// Its ASN (the queried one).
    pub asn: Asn,
}

/// Whether a count is exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// Exact.
    Exact,
    /// An estimate.
    Approximate,
}

/// A count of unique hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The number.
    pub value: u64,
    /// Exact or estimated.
    pub relation: Relation,
}

impl Count {
    /// An exact count.
    pub fn exact(value: u64) -> Self {
        Self {
            value,
            relation: Relation::Exact,
        }
    }
}

/// The six facet groups, in response order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FacetField {
    /// Ports.
    Port,
    /// Protocol tokens.
    Protocol,
    /// Product titles.
    Product,
    /// GeoIP countries.
    Country,
    /// CVSS severity bands.
    Cvss,
    /// Exploit flag.
    Exploit,
}

impl FacetField {
    /// All six, in response order.
    pub const ALL: [FacetField; 6] = [
        Self::Port,
        Self::Protocol,
        Self::Product,
        Self::Country,
        Self::Cvss,
        Self::Exploit,
    ];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Port => "port",
            Self::Protocol => "protocol",
            Self::Product => "product",
            Self::Country => "country",
            Self::Cvss => "cvss",
            Self::Exploit => "exploit",
        }
    }
}

/// Whether a facet group came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FacetStatus {
    /// It did.
    Available,
    /// It failed (`facet_unavailable`).
    Unavailable,
    /// It ran out of time (`facet_timeout`).
    TimedOut,
}

/// One suggested value.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetValue {
    /// Display value, e.g. `22`, `ssh`, `nginx`, `DE`, `9.0-10.0`, `yes`.
    pub value: String,
    /// The ready-to-use clause.
    pub clause: Clause,
    /// The clause is already in the query.
    pub selected: bool,
    /// Hosts the query would match with this clause added (the current total if selected).
    pub unique_hosts: Count,
}

/// One facet group.
#[derive(Debug, Clone, PartialEq)]
pub struct FacetGroup {
    /// Which group.
    pub field: FacetField,
    /// Whether it came back.
    pub status: FacetStatus,
    /// At most five values.
    pub items: Vec<FacetValue>,
}

/// All six groups.
#[derive(Debug, Clone, PartialEq)]
pub struct Facets {
    /// In [`FacetField::ALL`] order.
    pub groups: Vec<FacetGroup>,
}

/// One geotile bucket of an exposure answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposureBucket {
    /// `<zoom>/<x>/<y>` of the web-mercator tile.
    pub key: String,
    /// Centroid latitude of the bucket's hosts' positions.
    pub latitude: f64,
    /// Centroid longitude.
    pub longitude: f64,
    /// Hosts in the bucket.
    pub unique_hosts: u64,
    /// Services counted for those hosts (see the semantics doc).
    pub service_count: u64,
    /// The country with most hosts in the bucket and the number of distinct countries;
    /// `None` when no host in the bucket has a GeoIP country.
    pub country: Option<(CountryCode, u32)>,
}

/// The answer of [`ScanIndex::exposure`].
#[derive(Debug, Clone, PartialEq)]
pub struct Exposure {
    /// Hosts matching the query (all of them, positioned or not).
    pub unique_hosts: Count,
    /// Services counted over the whole matching set.
    pub service_count: u64,
    /// The resolution answered.
    pub resolution: Resolution,
    /// At most 500 buckets, most hosts first.
    pub buckets: Vec<ExposureBucket>,
    /// More than 500 buckets existed (`locations_relation: bounded`).
    pub bounded: bool,
}

/// The answer of [`ScanIndex::host_detail`].
#[derive(Debug, Clone, PartialEq)]
pub struct HostDetail {
    /// The host with one page of its services (all current services, whatever the query).
    pub host: Host,
    /// Continuation for the next page of services, scoped to this address.
    pub next: Option<String>,
}

/// What the search service needs of an engine. Implementations are `Send + Sync` and answer
/// from a consistent snapshot per call.
pub trait ScanIndex: Send + Sync {
    /// One page of hosts matching the query, in host order. Declines a query naming no
    /// service that matches more hosts than the configured maximum.
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError>;

    /// Unique hosts matching an ASN or filter query (callers refuse other kinds first).
    fn count(&self, query: &Query, now: Timestamp) -> Result<Count, IndexError>;

    /// The six facet groups for a filter query.
    fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<Facets, IndexError>;

    /// Geotile buckets of the hosts matching a non-domain query.
    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, IndexError>;

    /// Stored domain-scan records (newest per name) of `name` and of its subdomains.
    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError>;

    /// Stored domain-scan records (newest per name) that list `ip`.
    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError>;

    /// One address with a page of its current services; `None` when it has none.
    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError>;
}
