//! The DNS resolver: A and AAAA queries over `hickory-resolver`, within one time budget.
//!
//! [`DnsResolver`] is a stub resolver: it asks the configured recursive servers (from
//! `/etc/resolv.conf` with [`DnsResolver::system`], or given ones with
//! [`DnsResolver::with_servers`]) for the A and the AAAA records of the name, both queries at
//! once, and waits for them at most the time budget (default [`DEFAULT_TIMEOUT`]) in total.
//! The name is always queried as written, fully qualified: no search list, no `/etc/hosts`.
//!
//! How the two answers make one outcome:
//! 1. Any address from either query: the outcome is those addresses, filtered
//!    ([`DomainResolution::from_answers`]): [`DomainResolution::Resolved`] or
//!    [`DomainResolution::NoPublicAddress`], even if the other query failed or timed out (DNS
//!    is best effort; what came back is used).
//! 2. Otherwise an NXDOMAIN from either query, or "no records" from both:
//!    [`DomainResolution::NotFound`].
//! 3. Otherwise, an error answer (SERVFAIL, REFUSED, …) or a network error from either query:
//!    [`DomainResolution::Failed`]; else (a query ran out of time):
//!    [`DomainResolution::TimedOut`].
//!
//! hickory's own behaviour, as configured here: each query goes to the servers (two at once
//! when several are configured) over UDP, retransmitting within the budget, and over TCP when
//! an answer comes back truncated; an error answer is retried once. A small response cache
//! ([`CACHE_ENTRIES`] responses) keeps positive answers for their TTL but at most
//! [`CACHE_MAX_TTL`], and NXDOMAIN / no-records answers at most [`NEGATIVE_CACHE_MAX_TTL`];
//! errors and timeouts are never cached. Identical queries in flight at the same moment share
//! one request.
//!
//! Lookups run on the caller's tokio runtime (I/O and time drivers enabled), which also runs
//! the background tasks of the resolver's connections: use one [`DnsResolver`] within one
//! runtime. Constructing one needs no runtime.

use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::lookup::Lookup;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError, NoRecords};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use periscope_model::DomainName;
use tokio::time::{Instant, timeout_at};

use crate::{DomainResolution, Resolver};

/// The total time budget of one resolution (both queries) unless configured otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Where [`DnsResolver::system`] reads its servers.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// How many responses the cache keeps at most.
pub const CACHE_ENTRIES: u64 = 1024;

/// The longest a positive answer is cached, whatever its TTL.
pub const CACHE_MAX_TTL: Duration = Duration::from_secs(300);

/// The longest an NXDOMAIN or no-records answer is cached, whatever its TTL.
pub const NEGATIVE_CACHE_MAX_TTL: Duration = Duration::from_secs(60);

/// The number of `nameserver` lines of resolv.conf that are used, as the C library does.
const MAX_RESOLV_CONF_SERVERS: usize = 3;

/// The result of constructing a resolver.
pub type Result<T, E = SetupError> = std::result::Result<T, E>;

/// Why a [`DnsResolver`] could not be constructed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The resolver configuration file could not be read.
    #[error("cannot read the DNS configuration {}: {source}", path.display())]
    ReadConfig {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A `nameserver` line does not hold an IP address.
    #[error("{}:{line}: nameserver {value:?} is not an IP address", path.display())]
    BadNameserver {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What the line gave.
        value: String,
    },
    /// The configuration file names no server.
    #[error("the DNS configuration {} names no nameserver", path.display())]
    NoNameserver {
        /// The file.
        path: PathBuf,
    },
    /// [`DnsResolver::with_servers`] was given no server.
    #[error("no DNS server is configured")]
    NoServers,
    /// The time budget is zero.
    #[error("the DNS timeout must be longer than zero")]
    ZeroTimeout,
    /// hickory refused the configuration.
    #[error("cannot build the DNS resolver: {0}")]
    Build(#[source] NetError),
}

/// Resolves names over DNS; see the module documentation for the rules.
#[derive(Clone)]
pub struct DnsResolver {
    inner: TokioResolver,
    servers: Vec<SocketAddr>,
    timeout: Duration,
}

impl std::fmt::Debug for DnsResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsResolver")
            .field("servers", &self.servers)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl DnsResolver {
    /// The servers of `/etc/resolv.conf` (its first three `nameserver` lines, port 53) with
    /// the default time budget. Only the server addresses are read from the file: its
    /// `search`, `ndots`, `timeout` and `attempts` options do not apply.
    pub fn system() -> Result<Self> {
        Self::from_resolv_conf(Path::new(RESOLV_CONF), DEFAULT_TIMEOUT)
    }

    /// The servers of a resolv.conf-format file, with a time budget.
    pub fn from_resolv_conf(path: &Path, timeout: Duration) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| SetupError::ReadConfig {
            path: path.to_owned(),
            source,
        })?;
        let servers =
            parse_nameservers(&text).map_err(|(line, value)| SetupError::BadNameserver {
                path: path.to_owned(),
                line,
                value,
            })?;
        if servers.is_empty() {
            return Err(SetupError::NoNameserver {
                path: path.to_owned(),
            });
        }
        let servers: Vec<SocketAddr> = servers
            .into_iter()
            .take(MAX_RESOLV_CONF_SERVERS)
            .map(|ip| SocketAddr::new(ip, 53))
            .collect();
        Self::with_servers(&servers, timeout)
    }

    /// These recursive servers (UDP, and TCP on the same port for truncated answers), with a
    /// time budget for each resolution.
    pub fn with_servers(servers: &[SocketAddr], timeout: Duration) -> Result<Self> {
        if servers.is_empty() {
            return Err(SetupError::NoServers);
        }
        if timeout.is_zero() {
            return Err(SetupError::ZeroTimeout);
        }
        let name_servers = servers
            .iter()
            .map(|server| {
                let connections = [ConnectionConfig::udp(), ConnectionConfig::tcp()]
                    .into_iter()
                    .map(|mut connection| {
                        connection.port = server.port();
                        connection
                    })
                    .collect();
                NameServerConfig::new(server.ip(), true, connections)
            })
            .collect();
        let config = ResolverConfig::from_parts(None, Vec::new(), name_servers);
        let inner = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
            .with_options(options(timeout))
            .build()
            .map_err(SetupError::Build)?;
        Ok(Self {
            inner,
            servers: servers.to_vec(),
            timeout,
        })
    }

    /// The servers asked.
    pub fn servers(&self) -> &[SocketAddr] {
        &self.servers
    }

    /// The time budget of one resolution.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Resolves `name`: both queries at once, within the time budget.
    pub async fn lookup(&self, name: &DomainName) -> DomainResolution {
        // Fully qualified, so neither a search list nor `ndots` applies.
        let Ok(fqdn) = Name::from_ascii(format!("{name}.")) else {
            return DomainResolution::Failed;
        };
        let deadline = Instant::now() + self.timeout;
        let (a, aaaa) = tokio::join!(
            timeout_at(deadline, self.inner.lookup(fqdn.clone(), RecordType::A)),
            timeout_at(deadline, self.inner.lookup(fqdn, RecordType::AAAA)),
        );
        let classify = |result: std::result::Result<_, _>| match result {
            Ok(answer) => QueryOutcome::from_answer(answer),
            Err(_elapsed) => QueryOutcome::TimedOut,
        };
        combine(classify(a), classify(aaaa))
    }
}

impl Resolver for DnsResolver {
    fn resolve<'a>(
        &'a self,
        name: &'a DomainName,
    ) -> Pin<Box<dyn Future<Output = DomainResolution> + Send + 'a>> {
        Box::pin(self.lookup(name))
    }
}

/// hickory's options: its own per-request timeout is the whole budget (the deadline above is
/// what bounds a resolution), one retry of an error answer, a small cache, no hosts file.
fn options(timeout: Duration) -> ResolverOpts {
    let mut options = ResolverOpts::default();
    options.timeout = timeout;
    options.attempts = 1;
    options.cache_size = CACHE_ENTRIES;
    options.positive_max_ttl = Some(CACHE_MAX_TTL);
    options.negative_max_ttl = Some(NEGATIVE_CACHE_MAX_TTL);
    options.use_hosts_file = ResolveHosts::Never;
    options
}

/// The addresses of `nameserver` lines, in order; `Err((line, value))` for one that is not an
/// address. An IPv6 zone (`fe80::1%eth0`) is dropped.
fn parse_nameservers(text: &str) -> std::result::Result<Vec<IpAddr>, (usize, String)> {
    let mut servers = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split(['#', ';']).next().unwrap_or_default();
        let mut words = line.split_whitespace();
        if words.next() != Some("nameserver") {
            continue;
        }
        let value = words.next().unwrap_or_default();
        let address = value.split('%').next().unwrap_or_default();
        match address.parse() {
            Ok(ip) => servers.push(ip),
            Err(_) => return Err((index + 1, value.to_owned())),
        }
    }
    Ok(servers)
}

/// What one query (A or AAAA) brought back.
#[derive(Debug, Clone, PartialEq, Eq)]
enum QueryOutcome {
    /// Address records (the answer may hold other records too, such as a CNAME chain).
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN: the name does not exist, for any type.
    NxDomain,
    /// The name exists but has no record of this type.
    NoData,
    /// No answer within the budget.
    TimedOut,
    /// An error answer or a network error.
    Failed,
}

impl QueryOutcome {
    fn from_answer(answer: std::result::Result<Lookup, NetError>) -> Self {
        match answer {
            Ok(lookup) => {
                let addresses: Vec<IpAddr> = lookup
                    .answers()
                    .iter()
                    .filter_map(|record| match &record.data {
                        RData::A(a) => Some(IpAddr::V4(a.0)),
                        RData::AAAA(aaaa) => Some(IpAddr::V6(aaaa.0)),
                        _ => None,
                    })
                    .collect();
                if addresses.is_empty() {
                    Self::NoData
                } else {
                    Self::Addresses(addresses)
                }
            }
            Err(NetError::Dns(DnsError::NoRecordsFound(NoRecords { response_code, .. }))) => {
                if response_code == ResponseCode::NXDomain {
                    Self::NxDomain
                } else {
                    Self::NoData
                }
            }
            Err(NetError::Timeout) => Self::TimedOut,
            Err(_) => Self::Failed,
        }
    }
}

/// One outcome from the A and the AAAA query (the rules of the module documentation).
fn combine(a: QueryOutcome, aaaa: QueryOutcome) -> DomainResolution {
    use QueryOutcome::*;
    let answers = [&a, &aaaa];
    if answers.iter().any(|q| matches!(q, Addresses(_))) {
        let addresses = answers.into_iter().flat_map(|q| match q {
            Addresses(list) => list.as_slice(),
            _ => &[],
        });
        return DomainResolution::from_answers(addresses.copied());
    }
    if answers.contains(&&NxDomain) || (a == NoData && aaaa == NoData) {
        DomainResolution::NotFound
    } else if answers.contains(&&Failed) {
        DomainResolution::Failed
    } else {
        DomainResolution::TimedOut
    }
}

#[cfg(test)]
mod tests {
    use super::QueryOutcome::*;
    use super::*;

    fn addrs(list: &[&str]) -> QueryOutcome {
        Addresses(list.iter().map(|s| s.parse().unwrap()).collect())
    }

    #[test]
    fn combining_the_two_queries() {
        let resolved = |list: &[&str]| {
            DomainResolution::Resolved(list.iter().map(|s| s.parse().unwrap()).collect())
        };
        let rows = [
            (
                addrs(&["1.1.1.1"]),
                addrs(&["2a00::1"]),
                resolved(&["1.1.1.1", "2a00::1"]),
            ),
            (addrs(&["1.1.1.1"]), NoData, resolved(&["1.1.1.1"])),
            (NoData, addrs(&["2a00::1"]), resolved(&["2a00::1"])),
            // What came back is used even when the other query did not answer.
            (addrs(&["1.1.1.1"]), TimedOut, resolved(&["1.1.1.1"])),
            (Failed, addrs(&["2a00::1"]), resolved(&["2a00::1"])),
            (
                addrs(&["10.0.0.1"]),
                TimedOut,
                DomainResolution::NoPublicAddress,
            ),
            (
                addrs(&["10.0.0.1"]),
                addrs(&["fd00::1"]),
                DomainResolution::NoPublicAddress,
            ),
            (NxDomain, NxDomain, DomainResolution::NotFound),
            (NoData, NoData, DomainResolution::NotFound),
            (NxDomain, TimedOut, DomainResolution::NotFound),
            (Failed, NxDomain, DomainResolution::NotFound),
            (NoData, TimedOut, DomainResolution::TimedOut),
            (TimedOut, TimedOut, DomainResolution::TimedOut),
            (NoData, Failed, DomainResolution::Failed),
            (Failed, TimedOut, DomainResolution::Failed),
            (Failed, Failed, DomainResolution::Failed),
        ];
        for (a, aaaa, expect) in rows {
            let label = format!("{a:?} + {aaaa:?}");
            assert_eq!(combine(a, aaaa), expect, "{label}");
        }
    }

    #[test]
    fn classifying_hickory_errors() {
        let query = hickory_resolver::proto::op::Query::query(
            Name::from_ascii("x.example.").unwrap(),
            RecordType::A,
        );
        let no_records = |code| NetError::from(NoRecords::new(query.clone(), code));
        for (error, expect) in [
            (no_records(ResponseCode::NXDomain), NxDomain),
            (no_records(ResponseCode::NoError), NoData),
            (NetError::Timeout, TimedOut),
            (
                NetError::Dns(DnsError::ResponseCode(ResponseCode::ServFail)),
                Failed,
            ),
            (
                NetError::Dns(DnsError::ResponseCode(ResponseCode::Refused)),
                Failed,
            ),
            (
                NetError::from(io::Error::from(io::ErrorKind::ConnectionRefused)),
                Failed,
            ),
            (NetError::NoConnections, Failed),
        ] {
            let label = error.to_string();
            assert_eq!(QueryOutcome::from_answer(Err(error)), expect, "{label}");
        }
    }

    #[test]
    fn nameserver_lines() {
        let text = "# generated\nsearch corp.example\nnameserver 192.0.2.53 # first\n\
                    options ndots:5\n  nameserver\t2001:db8::53\nnameserver fe80::1%eth0\n\
                    ; nameserver 10.9.9.9\nnameservers 10.1.1.1\n";
        let expect: Vec<IpAddr> = ["192.0.2.53", "2001:db8::53", "fe80::1"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(parse_nameservers(text), Ok(expect));
        assert_eq!(
            parse_nameservers("nameserver 1.1.1.1\nnameserver dns.example\n"),
            Err((2, "dns.example".to_owned()))
        );
        assert_eq!(parse_nameservers("search example.com\n"), Ok(Vec::new()));
    }
}
