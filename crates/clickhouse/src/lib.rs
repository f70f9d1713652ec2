//! The scan index on ClickHouse: [`ClickHouseIndex`] implements `periscope-scan`'s
//! `ScanIndex` over a ClickHouse cluster's HTTP interface, answering exactly as the
//! reference engine does.
//!
//! How an answer is made: SQL finds *which* hosts match (built from the typed query by
//! [`query`], values escaped by [`sql`]); a second round fetches the current rows of just
//! the hosts on the page and rebuilds their [`HostRecord`]s ([`rows::rebuild`]); the shared
//! per-host code of `periscope-scan` (matching evidence, rendering, host-detail pages)
//! answers from those records. So what is said about a host is the reference's own code,
//! and SQL only has to get the set and the order right. Every call is a fixed number of
//! statements (at most six for a search, seven for facets), never one per host.
//!
//! - [`client`]: the HTTP client (TabSeparated in and out).
//! - [`location`]: `clickhouse://HOST:PORT/DATABASE?cluster=NAME` as operators write it.
//! - [`schema`]: the versioned tables (local + Distributed, sharded by address) and
//!   [`schema::init`].
//! - [`rows`]: observations as rows; rows back as records.
//! - [`query`]: the matching SQL.
//! - [`sql`]: literals, keys, identifiers and TabSeparated escaping.
//! - `testing` (feature `testing`): private ClickHouse servers and clusters for tests.
//!
//! Every `ScanIndex` method is implemented: `search` (every query kind: IP, CIDR, ASN,
//! domain, filters of every clause), `count`, `facets` ([`facets`], seven statements),
//! `exposure` ([`exposure`], three statements), `host_detail`, `domain_scans_of_name`,
//! `domain_scans_of_address`.
//!
//! **Boundary:** SQL in the subset ClickHouse 18.16 and current releases both accept.

pub mod by_hand;
pub mod client;
pub mod exposure;
pub mod facets;
pub mod location;
pub mod query;
pub mod rows;
pub mod schema;
pub mod sql;
#[cfg(feature = "testing")]
pub mod testing;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use periscope_model::observation::{DomainScan, Observation};
use periscope_model::{DomainName, Timestamp, ip_order_key};
use periscope_query::{FilterQuery, Query, Resolution};
use periscope_scan::api::{
    Count, Exposure, Facets, HostDetail, IndexError, ScanIndex, SearchOutcome, SearchPage,
    SearchRequest,
};
use periscope_scan::matching::{HostView, Matcher};
use periscope_scan::store::{DomainScans, HostRecord, IndexConfig};
use periscope_scan::{detail, records};

pub use client::{Client, ClientError, Exchange, Recording};
pub use location::{Location, LocationError};
pub use schema::{SCHEMA_VERSION, SchemaError};

use query::{NEWEST, Statement};

/// What an insert wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InsertSummary {
    /// Counting service observations written.
    pub services: u64,
    /// Domain scans written.
    pub domain_scans: u64,
    /// Failed observations: they never count, nothing was written for them.
    pub ignored: u64,
}

/// `ScanIndex` over ClickHouse tables created by [`schema::init`].
#[derive(Debug, Clone)]
pub struct ClickHouseIndex {
    client: Client,
    db: String,
    config: IndexConfig,
}

impl From<ClientError> for IndexError {
    fn from(e: ClientError) -> Self {
        IndexError::Unavailable(e.to_string())
    }
}

fn malformed(what: String) -> IndexError {
    IndexError::Unavailable(format!("ClickHouse answered something unexpected: {what}"))
}

fn parse_key(field: &[u8]) -> Result<u128, IndexError> {
    std::str::from_utf8(field)
        .ok()
        .and_then(|t| u128::from_str_radix(t, 16).ok())
        .ok_or_else(|| malformed(format!("not a hex key: {field:?}")))
}

fn text(field: &[u8]) -> Result<String, IndexError> {
    String::from_utf8(field.to_vec()).map_err(|e| malformed(e.to_string()))
}

impl ClickHouseIndex {
    /// The engine over `database` on the node at `url` (any node of the cluster: it reads and
    /// writes the Distributed tables), each statement bounded by `timeout`.
    pub fn new(
        url: &str,
        database: &str,
        config: IndexConfig,
        timeout: Duration,
    ) -> Result<Self, SchemaError> {
        let db = schema::database(database)?;
        Ok(Self {
            client: Client::new(url, timeout)?,
            db: db.to_owned(),
            config,
        })
    }

    /// The engine over `database` through `client` (say, a recording one).
    pub fn with_client(
        client: Client,
        database: &str,
        config: IndexConfig,
    ) -> Result<Self, SchemaError> {
        let db = schema::database(database)?;
        Ok(Self {
            client,
            db: db.to_owned(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> IndexConfig {
        self.config
    }

    /// Writes a batch of validated observations; acknowledged when every shard holds them.
    ///
    /// Only each host's and each name's winners within the batch become rows
    /// ([`rows::Batch`]); the three tables' inserts run concurrently (each is its own
    /// synchronous Distributed insert), and the batch is acknowledged when all three are.
    pub fn insert(&self, observations: &[Observation]) -> Result<InsertSummary, ClientError> {
        let mut batch = rows::Batch::default();
        for obs in observations {
            batch.add(obs);
        }
        let rows = batch.finish();
        let db = &self.db;
        let inserts: Vec<(String, String)> = [
            ("services", rows.services),
            ("facts", rows.facts),
            ("domain_scans", rows.domain_scans),
        ]
        .into_iter()
        .filter(|(_, data)| !data.is_empty())
        .map(|(table, data)| {
            (
                format!("INSERT INTO {db}.{table} FORMAT TabSeparated"),
                data,
            )
        })
        .collect();
        std::thread::scope(|scope| {
            let running: Vec<_> = inserts
                .into_iter()
                .map(|(statement, data)| scope.spawn(move || self.client.insert(&statement, data)))
                .collect();
            running
                .into_iter()
                .map(|insert| {
                    insert.join().unwrap_or_else(|_| {
                        Err(ClientError::Malformed(
                            "an insert thread panicked".to_owned(),
                        ))
                    })
                })
                .collect::<Result<Vec<()>, ClientError>>()
        })?;
        Ok(InsertSummary {
            services: rows.service_observations,
            domain_scans: rows.domain_observations,
            ignored: rows.ignored,
        })
    }

    fn statement(&self, now: Timestamp) -> Statement<'_> {
        Statement {
            db: &self.db,
            cutoff: Statement::cutoff(now, self.config.retention_secs),
            extra: &[],
        }
    }

    fn count_of(&self, query: &Query, now: Timestamp) -> Result<u64, IndexError> {
        let matching = self.statement(now).matching(query, &[], None);
        let answer = self.client.execute(&format!(
            "SELECT count() FROM ({matching}) FORMAT TabSeparated"
        ))?;
        answer
            .trim()
            .parse()
            .map_err(|_| malformed(format!("not a count: {answer:?}")))
    }

    /// The current records of the hosts with these keys (those with no current service are
    /// absent), in host order.
    fn records_of(
        &self,
        keys: &[u128],
        now: Timestamp,
    ) -> Result<BTreeMap<u128, HostRecord>, IndexError> {
        if keys.is_empty() {
            return Ok(BTreeMap::new());
        }
        let db = &self.db;
        let list: Vec<String> = keys.iter().map(|k| sql::key(*k)).collect();
        let list = list.join(", ");
        let cutoff = self.statement(now).cutoff;
        let services = self.client.rows(&format!(
            "SELECT hex(addr), argMax(record, {NEWEST}) FROM {db}.services \
             WHERE addr IN ({list}) AND observed_at >= {cutoff} \
             GROUP BY addr, port, protocol FORMAT TabSeparated"
        ))?;
        let facts = self.client.rows(&format!(
            "SELECT hex(addr), fact, argMax(record, {NEWEST}) FROM {db}.facts \
             WHERE addr IN ({list}) GROUP BY addr, fact FORMAT TabSeparated"
        ))?;
        let services = services
            .iter()
            .map(|row| match row.as_slice() {
                [key, record] => Ok((parse_key(key)?, text(record)?)),
                _ => Err(malformed(format!("a services row of {} fields", row.len()))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let facts = facts
            .iter()
            .map(|row| match row.as_slice() {
                [key, fact, record] => {
                    let fact = text(fact)?
                        .parse()
                        .map_err(|_| malformed("a fact kind".into()))?;
                    Ok((parse_key(key)?, fact, text(record)?))
                }
                _ => Err(malformed(format!("a facts row of {} fields", row.len()))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        rows::rebuild(&services, &facts).map_err(malformed)
    }

    /// The current domain-scan records of the names `names` (a condition on `name`, the
    /// group key, so it filters rows before grouping) for which `current` (a condition on
    /// the current record) holds, as a [`DomainScans`].
    fn domain_scans_where(&self, names: &str, current: &str) -> Result<DomainScans, IndexError> {
        let db = &self.db;
        let rows = self.client.rows(&format!(
            "SELECT argMax(record, {NEWEST}) AS c_record \
             FROM {db}.domain_scans WHERE {names} GROUP BY name HAVING {current} \
             ORDER BY name FORMAT TabSeparated"
        ))?;
        let mut scans = DomainScans::default();
        for row in rows {
            let record = row
                .first()
                .ok_or_else(|| malformed("an empty domain-scan row".into()))?;
            let scan = rows::domain_scan(&text(record)?).map_err(malformed)?;
            scans.apply(scan);
        }
        Ok(scans)
    }

    /// The current domain-scan records of `name` and its subdomains.
    fn scans_of_name(&self, name: &DomainName) -> Result<DomainScans, IndexError> {
        let n = name.as_str();
        let names = format!(
            "name = {} OR endsWith(name, {})",
            sql::string(n),
            sql::string(&format!(".{n}"))
        );
        self.domain_scans_where(&names, "1")
    }

    /// The current domain-scan records listing any of `ips`.
    fn listing_any(&self, ips: &[IpAddr]) -> Result<DomainScans, IndexError> {
        if ips.is_empty() {
            return Ok(DomainScans::default());
        }
        // The keys as plain literals of their 16 bytes (for the unnested addresses, converted
        // to `FixedString(16)` once, in the set) and as hex strings (for the current record's
        // addresses, through `hex()`, on the few names found): constants, where
        // `toFixedString(unhex(…), 16)` expressions made the statement slow to analyse.
        let keys: Vec<u128> = ips
            .iter()
            .map(|ip| ip_order_key(ip.to_canonical()))
            .collect();
        let literals: Vec<String> = keys.iter().map(|k| sql::key(*k)).collect();
        let list: Vec<String> = keys.iter().map(|k| format!("'{k:032X}'")).collect();
        let list = list.join(", ");
        // Names with any record listing one of them (a name's rows share a shard, so the
        // GLOBAL set is exact), then the current record of each must list one. The listed
        // addresses are unnested and tested against the set (`IN`, a hash lookup per
        // address): `hasAny(addrs, [list])` compared every listed address with every key and
        // was most of a search page's time, and `hex(listed) IN (…)` computed the hex of every
        // listed address (docs/benchmarks.md, "ClickHouse").
        // One key (host detail, the scans of an address): `has` over each scan's array, no
        // unnesting (unnesting every scan's addresses was 2x the by-hand statement).
        let names = match keys.as_slice() {
            [one] => format!(
                "name GLOBAL IN (SELECT name FROM {}.domain_scans \
                 WHERE has(addrs, toFixedString(unhex('{one:032x}'), 16)))",
                self.db
            ),
            _ => format!(
                "name GLOBAL IN (SELECT name FROM {}.domain_scans ARRAY JOIN addrs AS listed \
                 WHERE listed IN ({}))",
                self.db,
                literals.join(", ")
            ),
        };
        self.domain_scans_where(
            &names,
            &format!("hasAny(arrayMap(a -> hex(a), argMax(addrs, {NEWEST})), [{list}])"),
        )
    }
}

fn listing(domains: &DomainScans, ip: IpAddr) -> Vec<&DomainName> {
    domains.listing(ip).map(|scan| &scan.name).collect()
}

impl ScanIndex for ClickHouseIndex {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        if req.query.may_be_too_broad() {
            let matching = self.count_of(req.query, req.now)?;
            if matching > self.config.max_host_only_results {
                return Ok(SearchOutcome::TooBroad { matching });
            }
        }
        let limit = req.limit.max(1);
        let after = req.after.map(|a| ip_order_key(a.to_canonical()));
        let matching = self
            .statement(req.now)
            .matching(req.query, req.resolved, after);
        let rows = self.client.rows(&format!(
            "SELECT hex(addr) FROM ({matching}) ORDER BY addr LIMIT {} FORMAT TabSeparated",
            limit + 1
        ))?;
        let mut keys = rows
            .iter()
            .map(|row| parse_key(row.first().map_or(&[][..], Vec::as_slice)))
            .collect::<Result<Vec<u128>, _>>()?;
        let has_more = keys.len() > limit;
        keys.truncate(limit);
        let records = self.records_of(&keys, req.now)?;
        let ips: Vec<IpAddr> = records.values().map(|r| r.ip).collect();
        let mut domains = self.listing_any(&ips)?;
        if let Query::Domain(name) = req.query {
            for scan in self.scans_of_name(name)?.by_name.into_values() {
                domains.apply(scan);
            }
        }
        let matcher = Matcher::new(req.query, req.resolved, &domains);
        let mut hosts = Vec::with_capacity(keys.len());
        for key in &keys {
            let view = records
                .get(key)
                .and_then(|rec| HostView::current(rec, req.now, self.config.retention_secs))
                .ok_or_else(|| malformed(format!("matched host {key:032x} has no record")))?;
            let ip = view.ip();
            let hit = matcher.hit(view).ok_or_else(|| {
                malformed(format!("SQL matched {ip}, which the query does not match"))
            })?;
            hosts.push(records::row(
                hit,
                matcher.query(),
                matcher.service_clauses(),
                |ip| listing(&domains, ip),
            ));
        }
        Ok(SearchOutcome::Page(SearchPage { hosts, has_more }))
    }

    fn count(&self, query: &Query, now: Timestamp) -> Result<Count, IndexError> {
        Ok(Count::exact(self.count_of(query, now)?))
    }

    fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<Facets, IndexError> {
        facets::facets(&self.client, &self.statement(now), query)
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        exposure::exposure(&self.client, &self.statement(now), query, resolution)
    }

    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        let scans = self.scans_of_name(name)?;
        Ok(scans.of_name(name).cloned().collect())
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        let scans = self.listing_any(&[ip])?;
        Ok(scans.listing(ip).cloned().collect())
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        let after = continuation.map(|c| detail::decode(c, ip)).transpose()?;
        let key = ip_order_key(ip);
        let records = self.records_of(&[key], now)?;
        let Some(view) = records
            .get(&key)
            .and_then(|rec| HostView::current(rec, now, self.config.retention_secs))
        else {
            return Ok(None);
        };
        let domains = self.listing_any(&[ip])?;
        Ok(Some(detail::page(
            &view,
            after,
            limit,
            listing(&domains, ip),
        )))
    }
}
