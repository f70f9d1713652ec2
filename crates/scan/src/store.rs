//! The current state of the scan data and the rule that merges observations into it.
//!
//! The "current observation" rule (DECISIONS.md, docs/search-semantics.md "What is current"):
//! per service key (address, port, protocol) the newest observation whose status is
//! `completed` or `partial` is current. A `failed` observation never counts and never replaces
//! anything. An observation older than the current one, or as old, never overwrites it, so
//! applying the same input twice, in any order, changes nothing. Observations older than the
//! retention window stop being current; that is decided when reading
//! ([`HostRecord::current_services`]), so records never need rewriting as time passes.
//!
//! Host-level facts come from the counting observations themselves, each fact by its own
//! timestamp, independently of the services:
//! - enrichment (ASNs, provider, WHOIS, dns name, domain) is that of the most recent counting
//!   observation of the host;
//! - the location is that of the most recent counting observation with a location block;
//! - the position (latitude, longitude, accuracy radius) is that of the most recent counting
//!   observation that records one;
//! - reverse DNS is that of the most recent counting observation carrying any (never IPv6).
//!
//! Ties on `observed_at` between two *different* candidates for one fact (a service, the
//! enrichment, the location, the position, reverse DNS, a domain scan) are broken by content:
//! for a service a `completed` observation beats a `partial` one, and otherwise the one whose
//! canonical encoding is greater byte by byte wins (`codec::tie`). The choice is
//! arbitrary but fixed, so the state never depends on the order of arrival; a candidate equal
//! to the current one changes nothing. Because every fact keeps its own
//! timestamp, an observation that is too old for its service (superseded) may still supply a
//! fact that no newer observation recorded (say, the only location block); otherwise the
//! record would depend on the order of arrival.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::net::IpAddr;

use periscope_model::observation::{DomainScan, ScanStatus, ServiceObservation, Transport};
use periscope_model::record::{
    HostEnrichment, Http, Location, Position, Product, Ssh, Summary, Tls, VulnerabilitySummary,
};
use periscope_model::{DomainName, Port, ProtocolToken, Timestamp};

use crate::codec::tie;

/// Settings that change what is current or how much is returned. Numbers from DECISIONS.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConfig {
    /// Observations older than this many seconds before "now" stop being current (30 days).
    pub retention_secs: i64,
    /// Organization alone or country alone is declined by search above this many hosts (10,000).
    pub max_host_only_results: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        Self {
            retention_secs: 30 * 86_400,
            max_host_only_results: 10_000,
        }
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
    /// A newer (or equally old) observation of the service was already current; the service
    /// is unchanged. The observation still counts for host facts that no newer observation
    /// recorded (a location, a position, reverse DNS), so applying it may fill those in.
    Superseded,
    /// A failed observation: it never counts.
    Ignored,
}

/// The current state of one address.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRecord {
    /// The address.
    pub ip: IpAddr,
    /// Enrichment of the most recent counting observation, and when it was made; `None`
    /// until a counting observation lands. Its `location` and `reverse_dns` are those of that
    /// one observation: read the members below instead, which follow their own most recent
    /// observation.
    pub enrichment: Option<(HostEnrichment, Timestamp)>,
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
        Self {
            ip,
            enrichment: None,
            location: None,
            position: None,
            reverse_dns: None,
            services: BTreeMap::new(),
        }
    }

    /// Merges one service observation of this address by the current-observation rule.
    ///
    /// `Applied` when it became the current observation of its service, `Superseded` when
    /// that service already had one at least as new, `Ignored` for a failed observation
    /// (which changes nothing at all). Host facts are merged for every counting observation,
    /// each by its own timestamp.
    pub fn apply(&mut self, obs: &ServiceObservation) -> ApplyOutcome {
        if obs.status == ScanStatus::Failed {
            return ApplyOutcome::Ignored;
        }
        self.apply_owned(obs.clone())
    }

    /// [`Self::apply`] for an observation the caller gives up: its parts are moved into the
    /// record rather than copied (what ingest uses).
    pub fn apply_owned(&mut self, obs: ServiceObservation) -> ApplyOutcome {
        debug_assert_eq!(
            self.ip, obs.ip,
            "observation applied to another address's record"
        );
        if obs.status == ScanStatus::Failed {
            return ApplyOutcome::Ignored;
        }
        let at = obs.observed_at;
        let key = (obs.port, obs.protocol);
        let (service, host) = StoredService::split(obs);
        self.merge_host_facts(host, at);
        self.merge_service(key, service)
    }

    /// Makes `service` the current one of `key` when it is newer than the stored one (or as
    /// new and greater by its tie bytes).
    fn merge_service(
        &mut self,
        key: (Port, ProtocolToken),
        service: StoredService,
    ) -> ApplyOutcome {
        let wins = match self.services.get(&key) {
            None => true,
            Some(current) => match service.observed_at.cmp(&current.observed_at) {
                Ordering::Greater => true,
                Ordering::Less => false,
                // A completed observation beats a partial one of the same second.
                Ordering::Equal => {
                    let completed = |s: &StoredService| s.status == ScanStatus::Completed;
                    (completed(&service), tie::service(&service))
                        > (completed(current), tie::service(current))
                }
            },
        };
        if !wins {
            return ApplyOutcome::Superseded;
        }
        self.services.insert(key, service);
        ApplyOutcome::Applied
    }

    /// Merges `other`, a record of the same address, as if the observations it was built
    /// from were applied here one by one, and says what each of its services did (`Applied`
    /// or `Superseded`, in (port, protocol) order).
    ///
    /// Every fact of a record is the greatest of its candidates (by timestamp, then by tie
    /// bytes), so the merged record is exactly the one applying those observations gives.
    /// The outcomes are too when `other` was built from at most one counting observation per
    /// service (then each of its services is that observation); for a record in which a
    /// newer observation replaced a service, [`Self::merge_after`] takes the replaced ones
    /// too (what ingest's parsing threads build: [`crate::codec::RecordBuilder`]).
    pub fn merge(&mut self, other: HostRecord) -> Vec<ApplyOutcome> {
        debug_assert_eq!(self.ip, other.ip, "record merged into another address's");
        let Some((host, at)) = other.enrichment else {
            return Vec::new();
        };
        if let Some((location, at)) = other.location
            && replaces(&self.location, &location, at, tie::location)
        {
            self.location = Some((location, at));
        }
        if let Some((position, at)) = other.position
            && replaces(&self.position, &position, at, tie::position)
        {
            self.position = Some((position, at));
        }
        if let Some((names, at)) = other.reverse_dns
            && replaces(&self.reverse_dns, &names, at, |n| tie::names(n))
        {
            self.reverse_dns = Some((names, at));
        }
        let empty = HostRecord::new(self.ip);
        if replaces(&self.enrichment, &host, at, |e| tie::enrichment(e, &empty)) {
            self.enrichment = Some((host, at));
        }
        other
            .services
            .into_iter()
            .map(|(key, service)| self.merge_service(key, service))
            .collect()
    }

    /// [`Self::merge`] of a record built from observations among which some replaced an
    /// earlier observation of their service: `earlier` holds those replaced services in the
    /// order they were replaced (what [`crate::codec::RecordBuilder`] keeps aside). They are
    /// merged first, so the outcomes are those of applying the observations one by one, except
    /// that an observation that did not replace its service's within `other` is not among
    /// them (it is superseded whatever this record holds).
    pub fn merge_after(
        &mut self,
        earlier: Vec<StoredService>,
        other: HostRecord,
    ) -> Vec<ApplyOutcome> {
        let mut outcomes: Vec<ApplyOutcome> = earlier
            .into_iter()
            .map(|service| self.merge_service((service.port, service.protocol), service))
            .collect();
        outcomes.extend(self.merge(other));
        outcomes
    }

    /// Takes each host fact of `host` that replaces the stored one: newer, or as new and
    /// greater by its tie bytes.
    fn merge_host_facts(&mut self, host: HostEnrichment, at: Timestamp) {
        if let Some(location) = &host.location {
            if replaces(&self.location, location, at, tie::location) {
                self.location = Some((location.clone(), at));
            }
            if let Some(position) = location.position
                && replaces(&self.position, &position, at, tie::position)
            {
                self.position = Some((position, at));
            }
        }
        if !host.reverse_dns.is_empty()
            && replaces(&self.reverse_dns, &host.reverse_dns, at, |n| tie::names(n))
        {
            self.reverse_dns = Some((host.reverse_dns.clone(), at));
        }
        let empty = HostRecord::new(self.ip);
        if replaces(&self.enrichment, &host, at, |e| tie::enrichment(e, &empty)) {
            self.enrichment = Some((host, at));
        }
    }

    /// The services current at `now`: within `retention_secs` of it, by port then protocol.
    ///
    /// A service observed exactly `retention_secs` before `now` is still current.
    pub fn current_services(
        &self,
        now: Timestamp,
        retention_secs: i64,
    ) -> impl Iterator<Item = &StoredService> {
        let cutoff = now.unix().saturating_sub(retention_secs);
        self.services
            .values()
            .filter(move |s| s.observed_at.unix() >= cutoff)
    }

    /// True when at least one service is current at `now`.
    pub fn is_host(&self, now: Timestamp, retention_secs: i64) -> bool {
        self.current_services(now, retention_secs).next().is_some()
    }
}

/// True when `candidate`, observed at `at`, replaces `stored`: there is none yet, it is
/// older, or it is as old and `tie_bytes` of the candidate are greater (an equal candidate
/// changes nothing).
fn replaces<T>(
    stored: &Option<(T, Timestamp)>,
    candidate: &T,
    at: Timestamp,
    tie_bytes: impl Fn(&T) -> Vec<u8>,
) -> bool {
    match stored {
        None => true,
        Some((current, stored_at)) => match at.cmp(stored_at) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => tie_bytes(candidate) > tie_bytes(current),
        },
    }
}

impl StoredService {
    /// A counting observation split into its service part and its host enrichment.
    fn split(obs: ServiceObservation) -> (Self, HostEnrichment) {
        let ServiceObservation {
            ip: _,
            port,
            transport,
            protocol,
            observed_at,
            status,
            error,
            product,
            vulnerabilities,
            tls,
            http,
            ssh,
            summary,
            host,
        } = obs;
        let service = Self {
            port,
            protocol,
            transport,
            observed_at,
            status,
            error,
            product,
            vulnerabilities,
            tls,
            http,
            ssh,
            summary,
        };
        (service, host)
    }
}

impl DomainScans {
    /// Keeps the newest record per name (a tie goes to the greater encoding).
    pub fn apply(&mut self, scan: DomainScan) -> ApplyOutcome {
        let wins = match self.by_name.get(&scan.name) {
            None => true,
            Some(current) => match scan.observed_at.cmp(&current.observed_at) {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => {
                    crate::codec::encode_domain_scan(&scan)
                        > crate::codec::encode_domain_scan(current)
                }
            },
        };
        if !wins {
            return ApplyOutcome::Superseded;
        }
        self.by_name.insert(scan.name.clone(), scan);
        ApplyOutcome::Applied
    }

    /// Current records of `name` and of its subdomains, by name.
    pub fn of_name(&self, name: &DomainName) -> impl Iterator<Item = &DomainScan> {
        self.by_name
            .iter()
            .filter(move |(stored, _)| stored.is_within(name))
            .map(|(_, scan)| scan)
    }

    /// Current records that list `ip`, by name.
    pub fn listing(&self, ip: IpAddr) -> impl Iterator<Item = &DomainScan> {
        self.by_name
            .values()
            .filter(move |scan| scan.addresses.contains(&ip))
    }
}
