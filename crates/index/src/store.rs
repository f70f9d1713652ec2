//! The current state of the scan data and the rule that merges observations into it.
//!
//! The "current observation" rule (DECISIONS.md): per service key (address, port, protocol)
//! the newest observation whose status is `completed` or `partial` is current. A `failed`
//! observation never counts and never replaces an older one. An older observation never
//! overwrites a newer one, whatever the order of arrival, so applying the same input twice
//! changes nothing. Observations older than the retention window stop being current; that is
//! decided when reading ([`HostRecord::current_services`]), so records never need rewriting
//! as time passes.
//!
//! Host-level facts come from the observations themselves:
//! - enrichment (ASNs, provider, WHOIS, dns name, domain, location names) is that of the most
//!   recent counting observation of the host;
//! - the position (latitude, longitude, accuracy radius) is that of the most recent counting
//!   observation that records one;
//! - reverse DNS is that of the most recent counting observation carrying one (never IPv6).

use std::collections::BTreeMap;
use std::net::IpAddr;

use periscope_model::observation::{DomainScan, ScanStatus, ServiceObservation, Transport};
use periscope_model::record::{
    HostEnrichment, Http, Location, Position, Product, Ssh, Summary, Tls, VulnerabilitySummary,
};
use periscope_model::{DomainName, Port, ProtocolToken, Timestamp};

/// Settings that change what is current or how much is returned. Numbers from DECISIONS.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConfig {
    /// Observations older than this many seconds before "now" stop being current (30 days).
    pub retention_secs: i64,
    /// A query naming no service is declined by search above this many hosts (10,000).
    pub max_host_only_results: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self { retention_secs: 30 * 86_400, max_host_only_results: 10_000 }
    }
}

/// One service's current observation: everything the observation captured except the host
/// enrichment, which lives on the [`HostRecord`].
#[derive(Debug, Clone, PartialEq)]
pub struct StoredService {
    /// Port.
    pub port: Port,
    /// Protocol token.
    pub protocol: ProtocolToken,
    /// Transport.
    pub transport: Transport,
    /// When the current observation was made.
    pub observed_at: Timestamp,
    /// `Completed` or `Partial`; never `Failed`.
    pub status: ScanStatus,
    /// Scanner error text: stored, never shown.
    pub error: Option<String>,
    /// Product identity.
    pub product: Option<Product>,
    /// Vulnerability summary; `None` = enrichment unavailable.
    pub vulnerabilities: Option<VulnerabilitySummary>,
    /// TLS facts.
    pub tls: Option<Tls>,
    /// HTTP facts.
    pub http: Option<Http>,
    /// SSH facts.
    pub ssh: Option<Ssh>,
    /// Summary evidence.
    pub summary: Option<Summary>,
}

/// What applying one observation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// It became the current observation of its service (new or newer).
    Applied,
    /// A newer (or the same) observation of the service was already current; nothing changed.
    Superseded,
    /// A failed observation: it never counts.
    Ignored,
}

/// The current state of one address.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRecord {
    /// The address.
    pub ip: IpAddr,
    /// Enrichment of the most recent counting observation (its location and reverse DNS are
    /// superseded by the members below).
    pub enrichment: HostEnrichment,
    /// When that observation was made.
    pub enrichment_at: Timestamp,
    /// Location of the most recent counting observation that has a location block, and when
    /// (its names and country; the position shown comes from `position`).
    pub location: Option<(Location, Timestamp)>,
    /// Position of the most recent counting observation that records one, and when.
    pub position: Option<(Position, Timestamp)>,
    /// Reverse DNS of the most recent counting observation carrying any, and when.
    pub reverse_dns: Option<(Vec<DomainName>, Timestamp)>,
    /// Current services keyed by (port, protocol), in that order.
    pub services: BTreeMap<(Port, ProtocolToken), StoredService>,
}

/// The stored domain-scan records: per name, the newest resolution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DomainScans {
    /// Newest record per name.
    pub by_name: BTreeMap<DomainName, DomainScan>,
}

impl HostRecord {
    /// A record with nothing applied yet (not a host until a counting observation lands).
    pub fn new(ip: IpAddr) -> Self {
        todo!("{ip}")
    }

    /// Merges one service observation of this address by the current-observation rule.
    pub fn apply(&mut self, obs: &ServiceObservation) -> ApplyOutcome {
        todo!("{obs:?}")
    }

    /// The services current at `now`: within `retention_secs` of it, by port then protocol.
    pub fn current_services(
        &self,
        now: Timestamp,
        retention_secs: i64,
    ) -> impl Iterator<Item = &StoredService> {
        todo!("{now} {retention_secs}");
        #[allow(unreachable_code)]
        self.services.values()
    }

    /// True when at least one service is current at `now`.
    pub fn is_host(&self, now: Timestamp, retention_secs: i64) -> bool {
        self.current_services(now, retention_secs).next().is_some()
    }
}

impl DomainScans {
    /// Keeps the newest record per name (ties keep the first).
    pub fn apply(&mut self, scan: DomainScan) -> ApplyOutcome {
        todo!("{scan:?}")
    }

    /// Current records of `name` and of its subdomains, by name.
    pub fn of_name(&self, name: &DomainName) -> impl Iterator<Item = &DomainScan> {
        todo!("{name}");
        #[allow(unreachable_code)]
        self.by_name.values()
    }

    /// Current records that list `ip`, by name.
    pub fn listing(&self, ip: IpAddr) -> impl Iterator<Item = &DomainScan> {
        todo!("{ip}");
        #[allow(unreachable_code)]
        self.by_name.values()
    }
}
