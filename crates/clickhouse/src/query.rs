//! The SQL of "which hosts match", built from the typed query: a statement selecting the
//! `addr` of every matching host once.
//!
//! The current services are `services` grouped by `(addr, port, protocol)` with each column
//! taken by `argMax(…, (observed_at, rank))` among the rows inside the retention window (the
//! newest row is current exactly when it is inside the window, so filtering first is the
//! same rule). Service-level clauses must hold for one and the same current service (a
//! `HAVING` on one group); port and protocol are group keys, so they filter rows before
//! grouping. Host-level clauses and ASN queries test the current host facts (`facts` grouped
//! by address) through `addr IN (…)`; an organisation phrase is tested as a row filter on
//! each shard against that shard's own tables (its current enrichment and current
//! certificates), which is exact because all of a host's rows are on one shard.
//!
//! Two shortcuts, both exact (docs/benchmarks.md, "ClickHouse"): without a condition on a
//! current value, the matching hosts are one `GROUP BY addr` of the rows passing the row
//! filters (no per-service aggregation); and conditions on current values that name a value
//! (a product word, CPE, CVE, certificate name, country, organisation) are preceded by cheap
//! pre-filters on raw rows (a service or host can match only if one of its rows does), so the
//! `argMax` aggregation reads only the candidates (see `Statement::parts`). A CVSS range or
//! an exploit flag alone gets none: most rows would pass it.

use std::net::IpAddr;

use periscope_model::{DomainName, Timestamp, ip_order_key};
use periscope_query::{Clause, Query};
use periscope_scan::matching::words;

use crate::rows::{FACT_ENRICHMENT, FACT_LOCATION, FACT_REVERSE_DNS, padded_words};
use crate::sql;

/// The newest-row order of every table.
pub const NEWEST: &str = "(observed_at, rank)";

/// What a query names besides its clauses.
pub enum Target<'a> {
    /// Clauses only.
    Clauses,
    /// One host-order key.
    Ip(u128),
    /// An inclusive range of keys.
    Range(u128, u128),
    /// An ASN.
    Asn(u32),
    /// A domain name and the addresses DNS resolved it to.
    Domain(&'a DomainName, &'a [IpAddr]),
}

/// The per-service columns a statement may read, each as `c_<name>` (its current value).
pub const SERVICE_COLUMNS: [&str; 8] = [
    "product_words",
    "product_title",
    "has_product",
    "cpe",
    "cves",
    "max_cvss",
    "exploit",
    "cert_names",
];

/// A condition on a service's current values (`current`, on the `c_…` columns after
/// aggregating) and the same condition on one raw row (`raw`): a necessary condition, since the
/// current values are one row's. `names_a_value` when it asks for one value among many (a
/// product word, CPE, CVE, certificate name), so few rows pass `raw`; a CVSS range or an
/// exploit flag passes a large share of the rows.
struct Condition {
    current: String,
    raw: String,
    names_a_value: bool,
}

impl Condition {
    /// The condition written by `write` over the current columns and over the raw ones
    /// (`write` gets the column name mapper), naming one value.
    fn on(write: impl Fn(&dyn Fn(&str) -> String) -> String) -> Self {
        Self {
            current: write(&|column| format!("c_{column}")),
            raw: write(&|column| column.to_owned()),
            names_a_value: true,
        }
    }

    /// [`Self::on`] for a condition that many rows pass (a range, a flag).
    fn broad(write: impl Fn(&dyn Fn(&str) -> String) -> String) -> Self {
        Self {
            names_a_value: false,
            ..Self::on(write)
        }
    }
}

/// The conditions of a query, sorted by what they test.
struct Parts {
    /// Conditions on raw `services` rows (before grouping): retention, port, protocol,
    /// address bounds, pre-filters.
    rows: Vec<String>,
    /// The `c_…` columns to aggregate (of [`SERVICE_COLUMNS`]).
    columns: Vec<&'static str>,
    /// Conditions on a service's current values.
    having: Vec<String>,
    /// Conditions on the host (`addr IN (…)` over current facts).
    host: Vec<String>,
}

impl Parts {
    /// The current services satisfying the row filters and the conditions on current values.
    fn services(&self, db: &str) -> String {
        let columns: String = self
            .columns
            .iter()
            .map(|c| format!(", argMax({c}, {NEWEST}) AS c_{c}"))
            .collect();
        let having = if self.having.is_empty() {
            String::new()
        } else {
            format!(" HAVING {}", self.having.join(" AND "))
        };
        format!(
            "SELECT addr, port, protocol{columns} FROM {db}.services \
             WHERE {} GROUP BY addr, port, protocol{having}",
            self.rows.join(" AND ")
        )
    }

    /// ` WHERE …` of the host conditions, or nothing.
    fn host_where(&self) -> String {
        if self.host.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.host.join(" AND "))
        }
    }
}

/// The pieces of one statement.
pub struct Statement<'a> {
    /// The database.
    pub db: &'a str,
    /// Services observed before this second are not current.
    pub cutoff: i64,
    /// `c_…` columns to select whether or not a condition reads them (of
    /// [`SERVICE_COLUMNS`]).
    pub extra: &'a [&'a str],
}

impl Statement<'_> {
    /// The retention cutoff at `now`.
    pub fn cutoff(now: Timestamp, retention_secs: i64) -> i64 {
        now.unix().saturating_sub(retention_secs)
    }

    /// `SELECT addr` of every host matching `query` whose key is greater than `after`;
    /// `resolved` are a domain search's DNS answers.
    pub fn matching(&self, query: &Query, resolved: &[IpAddr], after: Option<u128>) -> String {
        self.hosts_of(&self.query_parts(query, resolved, after))
    }

    /// `SELECT addr` of every host matching all of `clauses` (every current host for none).
    pub fn matching_clauses(&self, clauses: &[Clause]) -> String {
        self.hosts_of(&self.parts(clauses, &Target::Clauses, None))
    }

    /// `SELECT addr` of the hosts of `parts`, once each. Without a condition on a current
    /// value, a host has a current service passing the row filters exactly when some row
    /// passes them (the newest row of a service is inside the retention window whenever any
    /// is), so the hosts are those rows' addresses: one `GROUP BY addr`, no per-service
    /// aggregation.
    fn hosts_of(&self, parts: &Parts) -> String {
        let host = parts.host_where();
        if parts.having.is_empty() && parts.columns.is_empty() {
            let hosts = format!(
                "SELECT addr FROM {}.services WHERE {} GROUP BY addr",
                self.db,
                parts.rows.join(" AND ")
            );
            if host.is_empty() {
                hosts
            } else {
                format!("SELECT addr FROM ({hosts}){host}")
            }
        } else {
            format!(
                "SELECT addr FROM ({}){host} GROUP BY addr",
                parts.services(self.db)
            )
        }
    }

    /// The current services (one row per `(addr, port, protocol)` with its `c_…` columns)
    /// satisfying every service-level clause of `clauses`, and the ` WHERE …` (or nothing)
    /// that keeps those of hosts satisfying its host-level clauses.
    pub fn services_of(
        &self,
        clauses: &[Clause],
        target: &Target<'_>,
        after: Option<u128>,
    ) -> (String, String) {
        let parts = self.parts(clauses, target, after);
        (parts.services(self.db), parts.host_where())
    }

    /// [`Self::services_of`] for counting hosts per value of a service: without a condition
    /// on a current value nor a `c_…` column to read, the rows passing the row filters
    /// themselves (a service is current exactly when one of its rows passes them; a service's
    /// rows may repeat, so only distinct hosts may be counted over them).
    pub fn service_rows_of(&self, clauses: &[Clause]) -> (String, String) {
        let parts = self.parts(clauses, &Target::Clauses, None);
        let services = if parts.having.is_empty() && parts.columns.is_empty() {
            format!(
                "SELECT addr, port, protocol FROM {}.services WHERE {}",
                self.db,
                parts.rows.join(" AND ")
            )
        } else {
            parts.services(self.db)
        };
        (services, parts.host_where())
    }

    /// The conditions of `clauses` and `target`, sorted by what they test.
    ///
    /// Pre-filters (cheap, necessary conditions on raw rows, tested on each shard against its
    /// own local table): a service can satisfy a condition on its current values only if one
    /// of its rows inside the retention window does, so `(addr, port, protocol) IN (…)` over
    /// the rows satisfying the raw conditions bounds the per-service aggregation to those
    /// services; likewise a host can satisfy a host-level condition only if one of its fact
    /// rows does. The conditions on current values are still tested after aggregating, so
    /// the answer is exact; the pre-filters only spare aggregating services and hosts that
    /// cannot match. (All a host's rows are on one shard, so the shard's local table holds
    /// every row the test needs.) The service pre-filter is taken only when a condition names
    /// a value (see [`Condition`]).
    fn parts(&self, clauses: &[Clause], target: &Target<'_>, after: Option<u128>) -> Parts {
        let db = self.db;
        let mut rows = vec![format!("observed_at >= {}", self.cutoff)];
        let mut having: Vec<Condition> = Vec::new();
        let mut host: Vec<String> = Vec::new();
        let mut low = 0u128;
        let mut high = u128::MAX;
        match target {
            Target::Clauses => {}
            Target::Ip(k) => (low, high) = (*k, *k),
            Target::Range(l, h) => (low, high) = (*l, *h),
            Target::Asn(asn) => {
                let candidates = format!(
                    "addr IN (SELECT addr FROM {db}.facts_local WHERE fact = {FACT_ENRICHMENT} \
                     AND has(asns, {asn}))"
                );
                host.push(format!(
                    "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_ENRICHMENT} \
                     AND {candidates} GROUP BY addr HAVING has(argMax(asns, {NEWEST}), {asn}))"
                ));
                rows.push(candidates);
            }
            Target::Domain(name, resolved) => host.push(self.domain(name, resolved)),
        }
        for clause in clauses {
            self.clause(clause, &mut rows, &mut having, &mut host);
        }
        if let Some(after) = after {
            match after.checked_add(1) {
                Some(next) => low = low.max(next),
                None => rows.push("0".into()),
            }
        }
        if low > 0 {
            rows.push(format!("addr >= {}", sql::key(low)));
        }
        if high < u128::MAX {
            rows.push(format!("addr <= {}", sql::key(high)));
        }
        // Only the columns a condition (or the caller) reads: each is an argMax per service.
        let columns: Vec<&'static str> = SERVICE_COLUMNS
            .iter()
            .filter(|c| {
                let alias = format!("c_{c}");
                having.iter().any(|h| h.current.contains(&alias)) || self.extra.contains(c)
            })
            .copied()
            .collect();
        // Worth its set only when a condition names a value: behind a range or a flag alone,
        // most services pass the raw test, and the set costs more than the aggregation it
        // spares (docs/benchmarks.md, "Three service clauses over ClickHouse").
        if having.iter().any(|h| h.names_a_value) {
            let raw: Vec<&str> = having.iter().map(|h| h.raw.as_str()).collect();
            rows.push(format!(
                "(addr, port, protocol) IN (SELECT addr, port, protocol FROM {db}.services_local \
                 WHERE {} AND {})",
                rows.join(" AND "),
                raw.join(" AND ")
            ));
        }
        Parts {
            rows,
            columns,
            having: having.into_iter().map(|h| h.current).collect(),
            host,
        }
    }

    /// The current services of the hosts matching `query` (see [`Self::services_of`]).
    pub fn current_services(
        &self,
        query: &Query,
        resolved: &[IpAddr],
        after: Option<u128>,
    ) -> (String, String) {
        let parts = self.query_parts(query, resolved, after);
        (parts.services(self.db), parts.host_where())
    }

    fn query_parts(&self, query: &Query, resolved: &[IpAddr], after: Option<u128>) -> Parts {
        match query {
            Query::Ip(ip) => {
                let k = ip_order_key(ip.to_canonical());
                self.parts(&[], &Target::Ip(k), after)
            }
            Query::Cidr(c) => {
                let low = ip_order_key(IpAddr::V4(c.network()));
                let high = ip_order_key(IpAddr::V4(c.last()));
                self.parts(&[], &Target::Range(low, high), after)
            }
            Query::Asn(asn) => self.parts(&[], &Target::Asn(asn.get()), after),
            Query::Domain(name) => self.parts(&[], &Target::Domain(name, resolved), after),
            Query::Filter(f) => self.parts(f.clauses(), &Target::Clauses, after),
        }
    }

    /// A host matches a domain search when DNS resolved the name to it, its stored domain,
    /// DNS name or (IPv4) reverse-DNS name is the name or under it, or a current
    /// domain-scan record of the name or a subdomain lists it.
    fn domain(&self, name: &DomainName, resolved: &[IpAddr]) -> String {
        let db = self.db;
        let exact = sql::string(name.as_str());
        let under = sql::string(&format!(".{}", name.as_str()));
        let mut sources = Vec::new();
        if !resolved.is_empty() {
            let keys: Vec<String> = resolved
                .iter()
                .map(|ip| sql::key(ip_order_key(ip.to_canonical())))
                .collect();
            sources.push(format!("addr IN ({})", keys.join(", ")));
        }
        // Pre-filtered as in `parts`: only hosts with a names row naming it are aggregated.
        let named = format!("arrayExists(n -> n = {exact} OR endsWith(n, {under}), names)");
        sources.push(format!(
            "addr IN (SELECT addr FROM {db}.facts WHERE fact IN ({FACT_ENRICHMENT}, \
             {FACT_REVERSE_DNS}) AND addr IN (SELECT addr FROM {db}.facts_local \
             WHERE fact IN ({FACT_ENRICHMENT}, {FACT_REVERSE_DNS}) AND {named}) \
             GROUP BY addr, fact HAVING arrayExists(n -> n = {exact} \
             OR endsWith(n, {under}), argMax(names, {NEWEST})))"
        ));
        sources.push(format!(
            "addr IN (SELECT arrayJoin(c_addrs) FROM (SELECT argMax(addrs, {NEWEST}) AS c_addrs \
             FROM {db}.domain_scans WHERE name = {exact} OR endsWith(name, {under}) \
             GROUP BY name))"
        ));
        format!("({})", sources.join(" OR "))
    }

    fn clause(
        &self,
        clause: &Clause,
        rows: &mut Vec<String>,
        having: &mut Vec<Condition>,
        host: &mut Vec<String>,
    ) {
        let db = self.db;
        match clause {
            Clause::Port(p) => rows.push(format!("port = {}", p.get())),
            Clause::Protocol(t) => rows.push(format!("protocol = {}", sql::string(t.as_str()))),
            Clause::Product(phrase) => {
                let wanted = words(phrase.as_str());
                if wanted.is_empty() {
                    having.push(Condition::on(|_| "0".to_owned()));
                }
                for w in wanted {
                    let w = sql::string(&w);
                    having.push(Condition::on(|c| {
                        format!("has({}, {w})", c("product_words"))
                    }));
                }
            }
            Clause::CertificateName(name) => {
                let name = sql::string(name.as_str());
                having.push(Condition::on(|c| {
                    format!("has({}, {name})", c("cert_names"))
                }))
            }
            Clause::Cpe(cpe) => {
                let cpe = sql::string(&cpe.as_str().to_lowercase());
                having.push(Condition::on(|c| format!("{} = {cpe}", c("cpe"))))
            }
            Clause::Cve(id) => {
                let id = sql::string(&id.to_string());
                having.push(Condition::on(|c| format!("has({}, {id})", c("cves"))))
            }
            Clause::Cvss(range) => {
                let (min, max) = (range.min().tenths(), range.max().tenths());
                having.push(Condition::broad(|c| {
                    let v = c("max_cvss");
                    format!("{v} >= {min} AND {v} <= {max}")
                }))
            }
            Clause::Exploit(flag) => {
                let flag = u8::from(*flag);
                having.push(Condition::broad(|c| format!("{} = {flag}", c("exploit"))))
            }
            Clause::Country(cc) => {
                let cc = sql::string(&cc.to_string());
                let candidates = format!(
                    "addr IN (SELECT addr FROM {db}.facts_local WHERE fact = {FACT_LOCATION} \
                     AND country = {cc})"
                );
                host.push(format!(
                    "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_LOCATION} \
                     AND {candidates} GROUP BY addr HAVING argMax(country, {NEWEST}) = {cc})"
                ));
                rows.push(candidates);
            }
            Clause::Organization(phrase) => {
                let wanted = words(phrase.as_str());
                if wanted.is_empty() {
                    host.push("0".into());
                    return;
                }
                let pattern = sql::string(&padded_words(&wanted.join(" ")));
                let names = |column: &str| {
                    format!("arrayExists(x -> position(x, {pattern}) > 0, {column})")
                };
                // Exact, and tested on each shard against its own tables (all of a host's rows
                // are on one shard, so its current values there are its current values): the
                // hosts whose current enrichment names the phrase, or one of whose current
                // services does in its certificate. Each is pre-filtered as in `parts`: only
                // the hosts and services with a row naming the phrase are aggregated.
                let cutoff = self.cutoff;
                rows.push(format!(
                    "(addr IN (SELECT addr FROM {db}.facts_local WHERE fact = {FACT_ENRICHMENT} \
                     AND addr IN (SELECT addr FROM {db}.facts_local \
                     WHERE fact = {FACT_ENRICHMENT} AND {raw_orgs}) \
                     GROUP BY addr HAVING {current_orgs}) \
                     OR addr IN (SELECT addr FROM {db}.services_local \
                     WHERE observed_at >= {cutoff} AND (addr, port, protocol) IN \
                     (SELECT addr, port, protocol FROM {db}.services_local \
                     WHERE observed_at >= {cutoff} AND {raw_cert_orgs}) \
                     GROUP BY addr, port, protocol HAVING {current_cert_orgs}))",
                    raw_orgs = names("orgs"),
                    current_orgs = names(&format!("argMax(orgs, {NEWEST})")),
                    raw_cert_orgs = names("cert_orgs"),
                    current_cert_orgs = names(&format!("argMax(cert_orgs, {NEWEST})")),
                ));
            }
        }
    }
}
