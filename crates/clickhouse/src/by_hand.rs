//! The benchmark's questions written by hand in SQL: what a person who knows the schema
//! ([`crate::schema`]) would send to ClickHouse for each `ScanIndex` call, so that
//! `periscope bench index --index clickhouse://…` can put every engine call beside the same
//! question asked directly of the same server (docs/benchmarks.md).
//!
//! Written from the schema, not from the engine's statement builder ([`crate::query`]): the
//! current value of a service or fact is `argMax(…, (observed_at, rank))`, a service is
//! current when a row of it lies inside the retention window, and each call fetches what its
//! answer needs — a page: the matching hosts in address order, then their current services,
//! facts and the domain scans listing them; a count: one number; facets: every group's values
//! and counts; exposure: the totals, then tiles with their counts, centroids and countries;
//! host detail: the host's current services, facts and listing domain scans. Where a person
//! would take a shortcut the schema allows, these do (a port or protocol is a key column, so a
//! query naming only those needs no `argMax`; exposure centroids are plain `sum`s in any
//! order, divided by the hosts).
//!
//! Each answer carries a check value (the page's addresses, a count, the facet counts, the
//! tile counts, a host's number of services) that the benchmark compares with the engine's
//! answer, so the hand-written SQL provably answers the same question. Values reach SQL only
//! through [`crate::sql`]'s escaping of values that passed a model type's constructor.
//!
//! Questions outside what the benchmark asks (a certificate-name, CPE or CVE clause in facets,
//! say) are answered too where they are plain conditions on the current service; none is
//! pasted as text.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use periscope_model::{CountryCode, Port, ProtocolToken, Timestamp, ip_order_key};
use periscope_query::{Clause, FilterQuery, Query, Resolution};
use periscope_scan::api::FacetField;
use periscope_scan::facets::{BANDS, Value, query_field};
use periscope_scan::matching::words;
use periscope_scan::store::IndexConfig;

use crate::client::{Client, ClientError};
use crate::rows::{FACT_ENRICHMENT, FACT_LOCATION, FACT_POSITION, FACT_REVERSE_DNS, RESOLUTIONS};
use crate::schema::{self, SchemaError};
use crate::sql;

/// The newest row of a key: the order every table's current value is taken by.
const NEWEST: &str = "(observed_at, rank)";

/// Why a hand-written question failed.
#[derive(Debug, thiserror::Error)]
pub enum ByHandError {
    /// A statement failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// ClickHouse answered rows of another shape.
    #[error("ClickHouse answered something unexpected to a hand-written statement: {0}")]
    Malformed(String),
}

fn malformed(what: impl Into<String>) -> ByHandError {
    ByHandError::Malformed(what.into())
}

/// A page by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// The query names no service and matches more hosts than the configured maximum.
    TooBroad {
        /// Hosts it matches.
        matching: u64,
    },
    /// The hosts of the page and the rows fetched for them.
    Hosts {
        /// The page's hosts in address order (the check value).
        hosts: Vec<IpAddr>,
        /// More hosts match after the last.
        has_more: bool,
        /// Current-service, fact and domain-scan rows fetched for them.
        rows: usize,
    },
}

/// Exposure by hand: the totals and each tile's counts (the check values) and centroid.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Exposure {
    /// Hosts matching.
    pub hosts: u64,
    /// Services counted over them.
    pub services: u64,
    /// Per tile `(x, y)`: hosts, services, centroid latitude and longitude, hosts per country.
    pub tiles: BTreeMap<(u32, u32), Tile>,
}

/// One tile of [`Exposure`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tile {
    /// Positioned hosts in the tile.
    pub hosts: u64,
    /// Services counted for them.
    pub services: u64,
    /// Centroid latitude.
    pub latitude: f64,
    /// Centroid longitude.
    pub longitude: f64,
    /// Hosts per GeoIP country.
    pub countries: BTreeMap<String, u64>,
}

/// One facet group by hand: each candidate value's clause and count of hosts.
pub type FacetCounts = Vec<(FacetField, HashMap<Clause, u64>)>;

/// The hand-written questions over one database.
#[derive(Debug, Clone)]
pub struct ByHand {
    client: Client,
    db: String,
    config: IndexConfig,
}

/// The address of a host-order key (the inverse of `ip_order_key`).
fn ip_of(key: u128) -> IpAddr {
    match u32::try_from(key) {
        Ok(v4) => IpAddr::V4(Ipv4Addr::from(v4)),
        Err(_) => IpAddr::V6(Ipv6Addr::from(key - (1 << 32))),
    }
}

fn text(field: &[u8]) -> Result<&str, ByHandError> {
    std::str::from_utf8(field).map_err(|_| malformed(format!("non-UTF-8 field {field:?}")))
}

fn number<T: std::str::FromStr>(field: &[u8]) -> Result<T, ByHandError> {
    text(field)?.parse().map_err(|_| {
        malformed(format!(
            "not a number: {:?}",
            String::from_utf8_lossy(field)
        ))
    })
}

/// A service-level condition on the current values `w` (product words), `t` (title),
/// `cpe`, `cves`, `cvss`, `exploit`, `names` (certificate names); `None` for other clauses.
fn service_condition(clause: &Clause) -> Option<String> {
    Some(match clause {
        Clause::Product(phrase) => {
            let wanted = words(phrase.as_str());
            if wanted.is_empty() {
                return Some("0".into());
            }
            let list: Vec<String> = wanted.iter().map(|w| sql::string(w)).collect();
            format!("hasAll(w, [{}])", list.join(", "))
        }
        Clause::CertificateName(name) => format!("has(names, {})", sql::string(name.as_str())),
        Clause::Cpe(cpe) => format!("cpe = {}", sql::string(&cpe.as_str().to_lowercase())),
        Clause::Cve(id) => format!("has(cves, {})", sql::string(&id.to_string())),
        Clause::Cvss(range) => format!(
            "cvss BETWEEN {} AND {}",
            range.min().tenths(),
            range.max().tenths()
        ),
        Clause::Exploit(flag) => format!("exploit = {}", u8::from(*flag)),
        _ => return None,
    })
}

/// The per-service columns, by the alias [`service_condition`] and the facets use.
const SERVICE_COLUMNS: [(&str, &str); 8] = [
    ("w", "product_words"),
    ("t", "product_title"),
    ("has_product", "has_product"),
    ("cpe", "cpe"),
    ("cves", "cves"),
    ("cvss", "max_cvss"),
    ("exploit", "exploit"),
    ("names", "cert_names"),
];

impl ByHand {
    /// The questions over `database` through `client`, with the engine's configuration
    /// (retention, the too-broad bound).
    pub fn new(client: Client, database: &str, config: IndexConfig) -> Result<Self, SchemaError> {
        let db = schema::database(database)?;
        Ok(Self {
            client,
            db: db.to_owned(),
            config,
        })
    }

    fn cutoff(&self, now: Timestamp) -> i64 {
        now.unix().saturating_sub(self.config.retention_secs)
    }

    /// Conditions on raw `services` rows: inside the retention window and, with `range`,
    /// between its two keys.
    fn row_filters(&self, range: Option<(u128, u128)>, now: Timestamp) -> Vec<String> {
        let mut rows = vec![format!("observed_at >= {}", self.cutoff(now))];
        if let Some((low, high)) = range {
            rows.push(format!(
                "addr BETWEEN {} AND {}",
                sql::key(low),
                sql::key(high)
            ));
        }
        rows
    }

    /// The current services `(addr, port, protocol, <aliases>)` with a row in `[low, high]`
    /// satisfying every port, protocol and service-level clause of `clauses`, with the
    /// columns in `also` besides those the conditions read.
    fn services(
        &self,
        clauses: &[&Clause],
        range: Option<(u128, u128)>,
        also: &[&str],
        now: Timestamp,
    ) -> String {
        let db = &self.db;
        let mut rows = self.row_filters(range, now);
        let mut having = Vec::new();
        for clause in clauses {
            match clause {
                Clause::Port(p) => rows.push(format!("port = {}", p.get())),
                Clause::Protocol(t) => rows.push(format!("protocol = {}", sql::string(t.as_str()))),
                other => having.extend(service_condition(other)),
            }
        }
        let columns: String = SERVICE_COLUMNS
            .iter()
            .filter(|(alias, _)| also.contains(alias) || having.iter().any(|h| mentions(h, alias)))
            .map(|(alias, column)| format!(", argMax({column}, {NEWEST}) AS {alias}"))
            .collect();
        let having = if having.is_empty() {
            String::new()
        } else {
            format!(" HAVING {}", having.join(" AND "))
        };
        format!(
            "SELECT addr, port, protocol{columns} FROM {db}.services WHERE {} \
             GROUP BY addr, port, protocol{having}",
            rows.join(" AND ")
        )
    }

    /// Conditions on `addr` for the host-level clauses of `clauses` (country, organization).
    fn host_conditions(&self, clauses: &[&Clause], now: Timestamp) -> Vec<String> {
        let db = &self.db;
        let mut out = Vec::new();
        for clause in clauses {
            match clause {
                Clause::Country(cc) => out.push(format!(
                    "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_LOCATION} \
                     GROUP BY addr HAVING argMax(country, {NEWEST}) = {})",
                    sql::string(&cc.to_string())
                )),
                Clause::Organization(phrase) => {
                    let wanted = words(phrase.as_str());
                    if wanted.is_empty() {
                        out.push("0".into());
                        continue;
                    }
                    // Organization sources are stored as words padded with spaces, so the
                    // phrase's words in a row are a substring. Only the hosts and services
                    // with a row naming the phrase can match, so only those are aggregated
                    // (each shard asks its own table: a host's rows are all on one shard).
                    let needle = sql::string(&format!(" {} ", wanted.join(" ")));
                    let cutoff = self.cutoff(now);
                    out.push(format!(
                        "(addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_ENRICHMENT} \
                         AND addr IN (SELECT addr FROM {db}.facts_local \
                         WHERE fact = {FACT_ENRICHMENT} \
                         AND arrayExists(o -> position(o, {needle}) > 0, orgs)) \
                         GROUP BY addr HAVING arrayExists(o -> position(o, {needle}) > 0, \
                         argMax(orgs, {NEWEST}))) \
                         OR addr IN (SELECT addr FROM {db}.services WHERE observed_at >= {cutoff} \
                         AND (addr, port, protocol) IN (SELECT addr, port, protocol \
                         FROM {db}.services_local WHERE observed_at >= {cutoff} \
                         AND arrayExists(o -> position(o, {needle}) > 0, cert_orgs)) \
                         GROUP BY addr, port, protocol HAVING arrayExists(o -> \
                         position(o, {needle}) > 0, argMax(cert_orgs, {NEWEST}))))"
                    ));
                }
                _ => {}
            }
        }
        out
    }

    /// `SELECT addr` (once each, unordered) of the hosts matching `query`, and the current
    /// services counted for each (as `n`) when `per_host`.
    fn matching(&self, query: &Query, now: Timestamp, per_host: bool) -> String {
        let db = &self.db;
        let (clauses, range, mut hosts): (Vec<&Clause>, _, Vec<String>) = match query {
            Query::Ip(ip) => {
                let k = ip_order_key(ip.to_canonical());
                (Vec::new(), Some((k, k)), Vec::new())
            }
            Query::Cidr(c) => (
                Vec::new(),
                Some((
                    ip_order_key(IpAddr::V4(c.network())),
                    ip_order_key(IpAddr::V4(c.last())),
                )),
                Vec::new(),
            ),
            Query::Asn(asn) => (
                Vec::new(),
                None,
                vec![format!(
                    "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_ENRICHMENT} \
                     GROUP BY addr HAVING has(argMax(asns, {NEWEST}), {}))",
                    asn.get()
                )],
            ),
            Query::Domain(name) => {
                let exact = sql::string(name.as_str());
                let under = sql::string(&format!(".{}", name.as_str()));
                // The host's stored domain, DNS name or reverse-DNS name is the name or under
                // it, or the current domain-scan record of the name or a subdomain lists it.
                (
                    Vec::new(),
                    None,
                    vec![format!(
                        "(addr IN (SELECT addr FROM {db}.facts WHERE fact IN ({FACT_ENRICHMENT}, \
                         {FACT_REVERSE_DNS}) GROUP BY addr, fact HAVING arrayExists(n -> \
                         n = {exact} OR endsWith(n, {under}), argMax(names, {NEWEST}))) \
                         OR addr GLOBAL IN (SELECT arrayJoin(listed) FROM (SELECT \
                         argMax(addrs, {NEWEST}) AS listed FROM {db}.domain_scans \
                         WHERE name = {exact} OR endsWith(name, {under}) GROUP BY name)))"
                    )],
                )
            }
            Query::Filter(f) => (f.clauses().iter().collect(), None, Vec::new()),
        };
        hosts.extend(self.host_conditions(&clauses, now));
        let filter = if hosts.is_empty() {
            String::new()
        } else {
            format!(" AND {}", hosts.join(" AND "))
        };
        let needs_current = per_host || clauses.iter().any(|c| service_condition(c).is_some());
        let n = if per_host { ", count() AS n" } else { "" };
        if needs_current {
            format!(
                "SELECT addr{n} FROM ({}) WHERE 1{filter} GROUP BY addr",
                self.services(&clauses, range, &[], now)
            )
        } else {
            // Port and protocol are key columns: any row of the service inside the window
            // makes it current, so no argMax is needed.
            let mut rows = self.row_filters(range, now);
            for clause in &clauses {
                match clause {
                    Clause::Port(p) => rows.push(format!("port = {}", p.get())),
                    Clause::Protocol(t) => {
                        rows.push(format!("protocol = {}", sql::string(t.as_str())))
                    }
                    _ => {}
                }
            }
            format!(
                "SELECT addr FROM {db}.services WHERE {}{filter} GROUP BY addr",
                rows.join(" AND ")
            )
        }
    }

    /// Hosts matching `query`.
    pub fn count(&self, query: &Query, now: Timestamp) -> Result<u64, ByHandError> {
        let matching = self.matching(query, now, false);
        let answer = self.client.execute(&format!(
            "SELECT count() FROM ({matching}) FORMAT TabSeparated"
        ))?;
        number(answer.trim().as_bytes())
    }

    /// The first page of `limit` hosts matching `query`, with their current services, facts
    /// and listing domain scans; declined as the engine declines a too-broad query.
    pub fn page(&self, query: &Query, limit: usize, now: Timestamp) -> Result<Page, ByHandError> {
        if query.may_be_too_broad() {
            let matching = self.count(query, now)?;
            if matching > self.config.max_host_only_results {
                return Ok(Page::TooBroad { matching });
            }
        }
        let matching = self.matching(query, now, false);
        let keys = self.client.rows(&format!(
            "SELECT hex(addr) FROM ({matching}) ORDER BY addr LIMIT {} FORMAT TabSeparated",
            limit + 1
        ))?;
        let mut keys = keys
            .iter()
            .map(|row| {
                let field = row.first().map_or(&[][..], Vec::as_slice);
                u128::from_str_radix(text(field)?, 16)
                    .map_err(|_| malformed(format!("not a hex address: {field:?}")))
            })
            .collect::<Result<Vec<u128>, _>>()?;
        let has_more = keys.len() > limit;
        keys.truncate(limit);
        let rows = self.records(&keys, now)?;
        Ok(Page::Hosts {
            hosts: keys.into_iter().map(ip_of).collect(),
            has_more,
            rows,
        })
    }

    /// Fetches the current services, facts and listing domain scans of `keys`; the number of
    /// rows.
    fn records(&self, keys: &[u128], now: Timestamp) -> Result<usize, ByHandError> {
        if keys.is_empty() {
            return Ok(0);
        }
        let db = &self.db;
        let list: Vec<String> = keys.iter().map(|k| sql::key(*k)).collect();
        let list = list.join(", ");
        let cutoff = self.cutoff(now);
        let services = self.client.rows(&format!(
            "SELECT hex(addr), argMax(record, {NEWEST}) FROM {db}.services \
             WHERE addr IN ({list}) AND observed_at >= {cutoff} GROUP BY addr, port, protocol \
             FORMAT TabSeparated"
        ))?;
        let facts = self.client.rows(&format!(
            "SELECT hex(addr), argMax(record, {NEWEST}) FROM {db}.facts \
             WHERE addr IN ({list}) GROUP BY addr, fact FORMAT TabSeparated"
        ))?;
        // Domain scans are sharded by name: the names with a row listing one of the hosts,
        // from every shard, then each one's current record must still list one.
        let scans = self.client.rows(&format!(
            "SELECT name, argMax(record, {NEWEST}) FROM {db}.domain_scans \
             WHERE name GLOBAL IN (SELECT name FROM {db}.domain_scans ARRAY JOIN addrs AS a \
             WHERE a IN ({list})) GROUP BY name \
             HAVING arrayExists(a -> a IN ({list}), argMax(addrs, {NEWEST})) \
             FORMAT TabSeparated"
        ))?;
        Ok(services.len() + facts.len() + scans.len())
    }

    /// The current services of `ip` (all of them: the check value is their number), its
    /// facts and the domain scans listing it; `None` when it has no current service.
    pub fn host_detail(&self, ip: IpAddr, now: Timestamp) -> Result<Option<usize>, ByHandError> {
        let db = &self.db;
        // A FixedString(16) constant: `has` wants the array's element type, where `IN` and
        // comparisons convert a plain literal.
        let key = format!(
            "toFixedString({}, 16)",
            sql::key(ip_order_key(ip.to_canonical()))
        );
        let services = self.client.rows(&format!(
            "SELECT port, protocol, argMax(record, {NEWEST}) FROM {db}.services \
             WHERE addr = {key} AND observed_at >= {} GROUP BY port, protocol \
             ORDER BY port, protocol FORMAT TabSeparated",
            self.cutoff(now)
        ))?;
        if services.is_empty() {
            return Ok(None);
        }
        self.client.rows(&format!(
            "SELECT fact, argMax(record, {NEWEST}) FROM {db}.facts WHERE addr = {key} \
             GROUP BY fact FORMAT TabSeparated"
        ))?;
        self.client.rows(&format!(
            "SELECT name, argMax(record, {NEWEST}) FROM {db}.domain_scans \
             WHERE name GLOBAL IN (SELECT name FROM {db}.domain_scans WHERE has(addrs, {key})) \
             GROUP BY name HAVING has(argMax(addrs, {NEWEST}), {key}) FORMAT TabSeparated"
        ))?;
        Ok(Some(services.len()))
    }

    /// Exposure of `query` at `resolution`: totals, then per tile and country the hosts,
    /// services and coordinate sums (one statement), folded into tiles here.
    pub fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, ByHandError> {
        let db = &self.db;
        let index = RESOLUTIONS
            .iter()
            .position(|r| *r == resolution)
            .map_or(1, |i| i + 1);
        let per_host = self.matching(query, now, true);
        let totals = self.client.rows(&format!(
            "SELECT count(), sum(n) FROM ({per_host}) FORMAT TabSeparated"
        ))?;
        let mut out = Exposure::default();
        match totals.first().map(Vec::as_slice) {
            Some([hosts, services]) => {
                out.hosts = number(hosts)?;
                out.services = number(services)?;
            }
            _ => return Err(malformed("exposure totals")),
        }
        // Positions and countries in one grouping (it can spill to disk), the matching hosts
        // joined to it: the join holds only them.
        let rows = self.client.rows(&format!(
            "SELECT tile, country, count(), sum(n), sum(lat), sum(lon) FROM ( \
               SELECT addr, argMaxIf(tiles, {NEWEST}, fact = {FACT_POSITION})[{index}] AS tile, \
                 argMaxIf(lat, {NEWEST}, fact = {FACT_POSITION}) AS lat, \
                 argMaxIf(lon, {NEWEST}, fact = {FACT_POSITION}) AS lon, \
                 argMaxIf(country, {NEWEST}, fact = {FACT_LOCATION}) AS country \
               FROM {db}.facts WHERE fact IN ({FACT_POSITION}, {FACT_LOCATION}) \
               GROUP BY addr HAVING countIf(fact = {FACT_POSITION}) > 0) \
             ANY INNER JOIN ({per_host}) USING addr \
             GROUP BY tile, country FORMAT TabSeparated"
        ))?;
        // Micro-degree sums per tile, divided once every country's rows are in.
        let mut sums: BTreeMap<(u32, u32), (i64, i64)> = BTreeMap::new();
        for row in rows {
            let [tile, country, hosts, services, lat, lon] = row.as_slice() else {
                return Err(malformed(format!("a tile row of {} fields", row.len())));
            };
            let (x, y) = text(tile)?
                .split_once('/')
                .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
                .ok_or_else(|| malformed(format!("a tile {tile:?}")))?;
            let entry = out.tiles.entry((x, y)).or_default();
            let hosts: u64 = number(hosts)?;
            entry.hosts += hosts;
            entry.services += number::<u64>(services)?;
            let sum = sums.entry((x, y)).or_default();
            sum.0 += number::<i64>(lat)?;
            sum.1 += number::<i64>(lon)?;
            let country = text(country)?;
            if !country.is_empty() {
                *entry.countries.entry(country.to_owned()).or_default() += hosts;
            }
        }
        for (key, tile) in &mut out.tiles {
            let (lat, lon) = sums.get(key).copied().unwrap_or_default();
            let n = tile.hosts.max(1) as f64;
            tile.latitude = lat as f64 / n / 1e6;
            tile.longitude = lon as f64 / n / 1e6;
        }
        Ok(out)
    }

    /// The six facet groups of `query`: for each, every candidate value (from the services —
    /// for country, the hosts — of the hosts the whole query matches) with its count of hosts
    /// matching the query with the value's clause in place of the group's own clauses.
    pub fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<FacetCounts, ByHandError> {
        let all: Vec<&Clause> = query.clauses().iter().collect();
        let full = self.matching(&Query::Filter(query.clone()), now, false);
        let mut groups = Vec::new();
        for field in FacetField::ALL {
            let own = query_field(field);
            let others: Vec<&Clause> = all.iter().copied().filter(|c| c.field() != own).collect();
            let counts = if field == FacetField::Country {
                self.country_counts(&others, &full, now)?
            } else {
                self.service_counts(field, &others, &full, now)?
            };
            groups.push((field, counts));
        }
        Ok(groups)
    }

    /// `rows` of `(value, hosts, candidate)` as clauses and counts, candidates only.
    fn counted(
        rows: Vec<Vec<Vec<u8>>>,
        value: impl Fn(&str) -> Option<Value>,
    ) -> Result<HashMap<Clause, u64>, ByHandError> {
        let mut out = HashMap::new();
        for row in rows {
            let [v, n, candidate] = row.as_slice() else {
                return Err(malformed(format!("a facet row of {} fields", row.len())));
            };
            if number::<u8>(candidate)? == 0 {
                continue;
            }
            let raw = text(v)?;
            let value = value(raw).ok_or_else(|| malformed(format!("a facet value {raw:?}")))?;
            if let Some(clause) = value.clause() {
                out.insert(clause, number(n)?);
            }
        }
        Ok(out)
    }

    fn country_counts(
        &self,
        others: &[&Clause],
        full: &str,
        now: Timestamp,
    ) -> Result<HashMap<Clause, u64>, ByHandError> {
        let db = &self.db;
        let matching = match FilterQuery::new(others.iter().map(|c| (*c).clone())) {
            Ok(f) => self.matching(&Query::Filter(f), now, false),
            // No clause left: every current host.
            Err(_) => format!(
                "SELECT addr FROM {db}.services WHERE observed_at >= {} GROUP BY addr",
                self.cutoff(now)
            ),
        };
        let rows = self.client.rows(&format!(
            "SELECT country, uniqExact(addr), max(addr IN ({full})) FROM (SELECT addr, \
             argMax(country, {NEWEST}) AS country FROM {db}.facts WHERE fact = {FACT_LOCATION} \
             GROUP BY addr) WHERE country != '' AND addr IN ({matching}) GROUP BY country \
             FORMAT TabSeparated"
        ))?;
        Self::counted(rows, |c| CountryCode::parse(c).ok().map(Value::Country))
    }

    fn service_counts(
        &self,
        field: FacetField,
        others: &[&Clause],
        full: &str,
        now: Timestamp,
    ) -> Result<HashMap<Clause, u64>, ByHandError> {
        let bands: Vec<String> = BANDS
            .iter()
            .enumerate()
            .map(|(i, (low, high))| format!("cvss BETWEEN {low} AND {high}, {i}"))
            .collect();
        let band = format!("multiIf({}, -1)", bands.join(", "));
        let (value, present, also): (String, &str, &[&str]) = match field {
            FacetField::Port => ("toString(port)".into(), "1", &[]),
            FacetField::Protocol => ("protocol".into(), "1", &[]),
            FacetField::Product => ("t".into(), "has_product = 1", &["t", "has_product", "w"]),
            FacetField::Cvss => (format!("toString({band})"), "cvss >= 0", &["cvss"]),
            _ => ("toString(exploit)".into(), "exploit >= 0", &["exploit"]),
        };
        let services = self.services(others, None, also, now);
        let hosts = self.host_conditions(others, now);
        let mut filter = vec![present.to_owned()];
        filter.extend(hosts);
        let filter = filter.join(" AND ");
        let rows = self.client.rows(&format!(
            "SELECT {value} AS v, uniqExact(addr), max(addr IN ({full})) FROM ({services}) \
             WHERE {filter} GROUP BY v FORMAT TabSeparated"
        ))?;
        match field {
            FacetField::Port => Self::counted(rows, |v| {
                v.parse()
                    .ok()
                    .and_then(|n| Port::new(n).ok())
                    .map(Value::Port)
            }),
            FacetField::Protocol => {
                Self::counted(rows, |v| ProtocolToken::parse(v).ok().map(Value::Protocol))
            }
            FacetField::Cvss => Self::counted(rows, |v| v.parse().ok().map(Value::Cvss)),
            FacetField::Product => {
                // A title's clause is its words, which a service satisfies when its own title
                // has them all: counted for every candidate title in a second statement.
                let titles = Self::counted(rows, |v| Some(Value::Product(v.to_owned())))?;
                let wanted: Vec<(Clause, Vec<String>)> = titles
                    .into_keys()
                    .filter_map(|c| match &c {
                        Clause::Product(phrase) => {
                            let w = words(phrase.as_str());
                            (!w.is_empty()).then_some((c, w))
                        }
                        _ => None,
                    })
                    .collect();
                let mut out = HashMap::new();
                if wanted.is_empty() {
                    return Ok(out);
                }
                let arrays: Vec<String> = wanted
                    .iter()
                    .map(|(_, w)| {
                        let items: Vec<String> = w.iter().map(|x| sql::string(x)).collect();
                        format!("[{}]", items.join(", "))
                    })
                    .collect();
                let rows = self.client.rows(&format!(
                    "SELECT i, uniqExact(addr) FROM ({services}) \
                     ARRAY JOIN arrayEnumerate([{list}]) AS i \
                     WHERE {filter} AND hasAll(w, [{list}][i]) GROUP BY i FORMAT TabSeparated",
                    list = arrays.join(", ")
                ))?;
                for row in rows {
                    let [i, n] = row.as_slice() else {
                        return Err(malformed("a product count row"));
                    };
                    let i: usize = number(i)?;
                    let (clause, _) = wanted
                        .get(i.wrapping_sub(1))
                        .ok_or_else(|| malformed(format!("a product index {i}")))?;
                    out.insert(clause.clone(), number(n)?);
                }
                Ok(out)
            }
            _ => Self::counted(rows, |v| match v {
                "0" => Some(Value::Exploit(false)),
                "1" => Some(Value::Exploit(true)),
                _ => None,
            }),
        }
    }
}

/// `condition` reads the column aliased `alias` (a whole word of it).
fn mentions(condition: &str, alias: &str) -> bool {
    condition
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == alias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_back_to_addresses() {
        for ip in [
            "0.0.0.0",
            "203.0.113.9",
            "255.255.255.255",
            "::",
            "2001:db8::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            assert_eq!(ip_of(ip_order_key(ip)), ip);
        }
    }

    #[test]
    fn conditions_name_their_columns() {
        assert!(mentions("hasAll(w, ['nginx'])", "w"));
        assert!(!mentions("hasAll(w, ['nginx'])", "t"));
        assert!(mentions("cvss BETWEEN 70 AND 100", "cvss"));
        assert!(!mentions("has(names, 'a.example')", "exploit"));
    }
}
