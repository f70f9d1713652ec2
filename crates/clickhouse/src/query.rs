//! The SQL of "which hosts match", built from the typed query: a statement selecting the
//! `addr` of every matching host once.
//!
//! The current services are `services` grouped by `(addr, port, protocol)` with each column
//! taken by `argMax(…, (observed_at, rank))` among the rows inside the retention window (the
//! newest row is current exactly when it is inside the window, so filtering first is the
//! same rule). Service-level clauses must hold for one and the same current service (a
//! `HAVING` on one group); port and protocol are group keys, so they filter rows before
//! grouping. Host-level clauses and ASN queries test the current host facts (`facts` grouped
//! by address) through `addr IN (…)`.

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
        let (services, host) = self.current_services(query, resolved, after);
        format!("SELECT addr FROM ({services}){host} GROUP BY addr")
    }

    /// `SELECT addr` of every host matching all of `clauses` (every current host for none).
    pub fn matching_clauses(&self, clauses: &[Clause]) -> String {
        let (services, host) = self.services_of(clauses, &Target::Clauses, None);
        format!("SELECT addr FROM ({services}){host} GROUP BY addr")
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
        let db = self.db;
        let mut row_filters = vec![format!("observed_at >= {}", self.cutoff)];
        let mut having: Vec<String> = Vec::new();
        let mut host: Vec<String> = Vec::new();
        let mut low = 0u128;
        let mut high = u128::MAX;
        match target {
            Target::Clauses => {}
            Target::Ip(k) => (low, high) = (*k, *k),
            Target::Range(l, h) => (low, high) = (*l, *h),
            Target::Asn(asn) => host.push(format!(
                "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_ENRICHMENT} \
                 GROUP BY addr HAVING has(argMax(asns, {NEWEST}), {asn}))"
            )),
            Target::Domain(name, resolved) => host.push(self.domain(name, resolved)),
        }
        for clause in clauses {
            self.clause(clause, &mut row_filters, &mut having, &mut host);
        }
        if let Some(after) = after {
            match after.checked_add(1) {
                Some(next) => low = low.max(next),
                None => row_filters.push("0".into()),
            }
        }
        if low > 0 {
            row_filters.push(format!("addr >= {}", sql::key(low)));
        }
        if high < u128::MAX {
            row_filters.push(format!("addr <= {}", sql::key(high)));
        }
        // Only the columns a condition (or the caller) reads: each is an argMax per service.
        let columns: String = SERVICE_COLUMNS
            .iter()
            .filter(|c| {
                let alias = format!("c_{c}");
                having.iter().any(|h| h.contains(&alias)) || self.extra.contains(c)
            })
            .map(|c| format!(", argMax({c}, {NEWEST}) AS c_{c}"))
            .collect();
        let having = if having.is_empty() {
            String::new()
        } else {
            format!(" HAVING {}", having.join(" AND "))
        };
        let host = if host.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", host.join(" AND "))
        };
        (
            format!(
                "SELECT addr, port, protocol{columns} FROM {db}.services \
                 WHERE {} GROUP BY addr, port, protocol{having}",
                row_filters.join(" AND ")
            ),
            host,
        )
    }

    /// The current services of the hosts matching `query` (see [`Self::services_of`]).
    pub fn current_services(
        &self,
        query: &Query,
        resolved: &[IpAddr],
        after: Option<u128>,
    ) -> (String, String) {
        match query {
            Query::Ip(ip) => {
                let k = ip_order_key(ip.to_canonical());
                self.services_of(&[], &Target::Ip(k), after)
            }
            Query::Cidr(c) => {
                let low = ip_order_key(IpAddr::V4(c.network()));
                let high = ip_order_key(IpAddr::V4(c.last()));
                self.services_of(&[], &Target::Range(low, high), after)
            }
            Query::Asn(asn) => self.services_of(&[], &Target::Asn(asn.get()), after),
            Query::Domain(name) => self.services_of(&[], &Target::Domain(name, resolved), after),
            Query::Filter(f) => self.services_of(f.clauses(), &Target::Clauses, after),
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
        sources.push(format!(
            "addr IN (SELECT addr FROM {db}.facts WHERE fact IN ({FACT_ENRICHMENT}, \
             {FACT_REVERSE_DNS}) GROUP BY addr, fact HAVING arrayExists(n -> n = {exact} \
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
        having: &mut Vec<String>,
        host: &mut Vec<String>,
    ) {
        let db = self.db;
        match clause {
            Clause::Port(p) => rows.push(format!("port = {}", p.get())),
            Clause::Protocol(t) => rows.push(format!("protocol = {}", sql::string(t.as_str()))),
            Clause::Product(phrase) => {
                let wanted = words(phrase.as_str());
                if wanted.is_empty() {
                    having.push("0".into());
                }
                for w in wanted {
                    having.push(format!("has(c_product_words, {})", sql::string(&w)));
                }
            }
            Clause::CertificateName(name) => {
                having.push(format!("has(c_cert_names, {})", sql::string(name.as_str())))
            }
            Clause::Cpe(cpe) => having.push(format!(
                "c_cpe = {}",
                sql::string(&cpe.as_str().to_lowercase())
            )),
            Clause::Cve(id) => {
                having.push(format!("has(c_cves, {})", sql::string(&id.to_string())))
            }
            Clause::Cvss(range) => having.push(format!(
                "c_max_cvss >= {} AND c_max_cvss <= {}",
                range.min().tenths(),
                range.max().tenths()
            )),
            Clause::Exploit(flag) => having.push(format!("c_exploit = {}", u8::from(*flag))),
            Clause::Country(cc) => host.push(format!(
                "addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_LOCATION} \
                 GROUP BY addr HAVING argMax(country, {NEWEST}) = {})",
                sql::string(&cc.to_string())
            )),
            Clause::Organization(phrase) => {
                let wanted = words(phrase.as_str());
                if wanted.is_empty() {
                    host.push("0".into());
                    return;
                }
                let pattern = sql::string(&padded_words(&wanted.join(" ")));
                host.push(format!(
                    "(addr IN (SELECT addr FROM {db}.facts WHERE fact = {FACT_ENRICHMENT} \
                     GROUP BY addr HAVING arrayExists(x -> position(x, {pattern}) > 0, \
                     argMax(orgs, {NEWEST}))) \
                     OR addr IN (SELECT addr FROM (SELECT addr, \
                     argMax(cert_orgs, {NEWEST}) AS c_orgs FROM {db}.services \
                     WHERE observed_at >= {cutoff} GROUP BY addr, port, protocol) \
                     WHERE arrayExists(x -> position(x, {pattern}) > 0, c_orgs)))",
                    cutoff = self.cutoff
                ));
            }
        }
    }
}
