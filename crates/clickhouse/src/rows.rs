//! Observations as rows of the three tables (TabSeparated), and rows back as records.
//!
//! A batch's counting service observations are applied, host by host, to one
//! [`HostRecord`] per host by the shared current-observation code ([`Batch`]), and each
//! resulting record is cut into one `services` row per service and one `facts` row per host
//! fact; each row's `rank` is the tie order of `periscope-scan`
//! (`codec::tie`) and its `record` the codec encoding of just that part. The matching
//! columns are computed here, from the same record, by the same helpers the reference uses.

use std::collections::BTreeMap;
use std::net::IpAddr;

use periscope_model::ip_order_key;
use periscope_model::observation::{DomainScan, Observation, ScanStatus};
use periscope_model::record::Position;
use periscope_query::Resolution;
use periscope_scan::codec::{self, tie};
use periscope_scan::exposure::{micro_degrees, tile_of};
use periscope_scan::matching::{comparable_name, words};
use periscope_scan::store::{DomainScans, HostRecord, StoredService};

use crate::sql;

/// The resolutions whose tiles a position row holds, in `tiles` order.
pub const RESOLUTIONS: [Resolution; 3] =
    [Resolution::Global, Resolution::Regional, Resolution::Local];

/// `fact` of the enrichment row.
pub const FACT_ENRICHMENT: u8 = 1;
/// `fact` of the location row.
pub const FACT_LOCATION: u8 = 2;
/// `fact` of the position row.
pub const FACT_POSITION: u8 = 3;
/// `fact` of the reverse-DNS row.
pub const FACT_REVERSE_DNS: u8 = 4;

/// The TabSeparated rows of a batch, one buffer per table ([`Batch::finish`]).
#[derive(Debug, Default)]
pub struct Rows {
    /// `services` rows.
    pub services: String,
    /// `facts` rows.
    pub facts: String,
    /// `domain_scans` rows.
    pub domain_scans: String,
    /// Service observations turned into rows.
    pub service_observations: u64,
    /// Failed observations (they never count, so no row).
    pub ignored: u64,
    /// Domain scans turned into rows.
    pub domain_observations: u64,
}

/// Threads building a batch's rows.
pub const BUILDERS: usize = 2;

/// A batch being collected: each host's observations applied to one record by the shared
/// current-observation code, each name's domain scans to its current one.
///
/// Only the winners of a batch are written: a row that loses to another row of the same batch
/// (an older observation of the same service, an older host fact, an older record of the
/// same name) can never be the newest `(observed_at, rank)` again, so no answer can read it —
/// and a service's newest row is inside the retention window whenever any of its rows is.
/// The synthetic data repeat every host fact on each of a host's ~3 observations: the facts
/// rows of a batch shrink about threefold.
#[derive(Debug, Default)]
pub struct Batch {
    hosts: BTreeMap<u128, HostRecord>,
    scans: DomainScans,
    service_observations: u64,
    ignored: u64,
    domain_observations: u64,
}

impl Batch {
    /// Adds one observation.
    pub fn add(&mut self, obs: &Observation) {
        match obs {
            Observation::Service(s) if s.status == ScanStatus::Failed => self.ignored += 1,
            Observation::Service(s) => {
                self.hosts
                    .entry(ip_order_key(s.ip))
                    .or_insert_with(|| HostRecord::new(s.ip))
                    .apply(s);
                self.service_observations += 1;
            }
            Observation::Domain(d) => {
                self.scans.apply(d.clone());
                self.domain_observations += 1;
            }
        }
    }

    /// The rows of the batch, in key order. The hosts are cut into [`BUILDERS`] runs whose
    /// rows are built on as many threads (encoding the records is most of an insert's
    /// client time), then joined in order.
    pub fn finish(self) -> Rows {
        let hosts: Vec<&HostRecord> = self.hosts.values().collect();
        let run = hosts.len().div_ceil(BUILDERS).max(1);
        let parts: Vec<Rows> = std::thread::scope(|scope| {
            let building: Vec<_> = hosts
                .chunks(run)
                .map(|chunk| {
                    scope.spawn(move || {
                        let mut rows = Rows::default();
                        for rec in chunk {
                            rows.add_record(rec);
                        }
                        rows
                    })
                })
                .collect();
            building
                .into_iter()
                .map(|b| b.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let mut rows = Rows {
            service_observations: self.service_observations,
            ignored: self.ignored,
            domain_observations: self.domain_observations,
            ..Rows::default()
        };
        for part in parts {
            rows.services.push_str(&part.services);
            rows.facts.push_str(&part.facts);
        }
        for scan in self.scans.by_name.values() {
            rows.add_domain_scan(scan);
        }
        rows
    }
}

/// The 16 key bytes of an address.
pub fn key_bytes(ip: IpAddr) -> [u8; 16] {
    ip_order_key(ip).to_be_bytes()
}

/// Words padded with one space each side, so a contiguous run of words is a substring.
pub fn padded_words(text: &str) -> String {
    let mut out = String::from(" ");
    for w in words(text) {
        out.push_str(&w);
        out.push(' ');
    }
    out
}

fn record_with(ip: IpAddr, fill: impl FnOnce(&mut HostRecord)) -> String {
    let mut rec = HostRecord::new(ip);
    fill(&mut rec);
    sql::hex(&codec::encode_host(&rec))
}

fn push_common(out: &mut String, key: &[u8; 16]) {
    sql::tsv_field(out, key);
    out.push('\t');
}

impl Rows {
    fn add_record(&mut self, rec: &HostRecord) {
        let ip = rec.ip;
        let key = key_bytes(ip);
        for service in rec.services.values() {
            self.add_service(ip, &key, service);
        }
        let empty = HostRecord::new(ip);
        if let Some((e, at)) = &rec.enrichment {
            let asns: Vec<String> = [&e.asn.research, &e.asn.bgp, &e.asn.network]
                .into_iter()
                .map(|a| a.as_ref().map_or(0, |a| a.asn.get()).to_string())
                .collect();
            let mut orgs: Vec<&String> = Vec::new();
            for a in [&e.asn.research, &e.asn.bgp].into_iter().flatten() {
                orgs.extend(a.organization.as_ref());
            }
            if let Some(w) = &e.whois {
                orgs.extend(w.description.as_ref());
                orgs.extend(w.netname.as_ref());
            }
            if let Some(p) = &e.provider {
                orgs.extend(
                    [&p.organization, &p.as_organization, &p.isp]
                        .into_iter()
                        .flatten(),
                );
            }
            let orgs: Vec<String> = orgs.into_iter().map(|o| padded_words(o)).collect();
            let names: Vec<String> = [&e.domain, &e.dns_name]
                .into_iter()
                .flatten()
                .map(|n| n.as_str().to_owned())
                .collect();
            let record = record_with(ip, |r| r.enrichment = Some((e.clone(), *at)));
            self.fact(
                &key,
                FACT_ENRICHMENT,
                at.unix(),
                &tie::enrichment(e, &empty),
                "",
                &asns,
                &orgs,
                &names,
                None,
                &record,
            );
        }
        if let Some((l, at)) = &rec.location {
            let country = l.country_code.map(|c| c.to_string()).unwrap_or_default();
            let record = record_with(ip, |r| r.location = Some((l.clone(), *at)));
            let rank = tie::location(l);
            self.fact(
                &key,
                FACT_LOCATION,
                at.unix(),
                &rank,
                &country,
                &[],
                &[],
                &[],
                None,
                &record,
            );
        }
        if let Some((p, at)) = &rec.position {
            let record = record_with(ip, |r| r.position = Some((*p, *at)));
            let rank = tie::position(p);
            self.fact(
                &key,
                FACT_POSITION,
                at.unix(),
                &rank,
                "",
                &[],
                &[],
                &[],
                Some(p),
                &record,
            );
        }
        if let Some((names, at)) = &rec.reverse_dns {
            let record = record_with(ip, |r| r.reverse_dns = Some((names.clone(), *at)));
            let rank = tie::names(names);
            // Reverse DNS is evidence of IPv4 hosts only.
            let shown: Vec<String> = if ip.is_ipv4() {
                names.iter().map(|n| n.as_str().to_owned()).collect()
            } else {
                Vec::new()
            };
            self.fact(
                &key,
                FACT_REVERSE_DNS,
                at.unix(),
                &rank,
                "",
                &[],
                &[],
                &shown,
                None,
                &record,
            );
        }
    }

    #[allow(clippy::too_many_arguments)] // One row's columns, in table order.
    fn fact(
        &mut self,
        key: &[u8; 16],
        fact: u8,
        at: i64,
        rank: &[u8],
        country: &str,
        asns: &[String],
        orgs: &[String],
        names: &[String],
        position: Option<&Position>,
        record: &str,
    ) {
        let out = &mut self.facts;
        push_common(out, key);
        out.push_str(&format!("{fact}\t{at}\t{}\t", sql::hex(rank)));
        sql::tsv_field(out, country.as_bytes());
        out.push('\t');
        out.push('[');
        out.push_str(&asns.join(","));
        out.push_str("]\t");
        sql::tsv_array(out, orgs.iter().map(|o| o.as_bytes()));
        out.push('\t');
        sql::tsv_array(out, names.iter().map(|n| n.as_bytes()));
        out.push('\t');
        let (lat, lon) = position.map_or((0, 0), |p| {
            (micro_degrees(p.latitude), micro_degrees(p.longitude))
        });
        out.push_str(&format!("{lat}\t{lon}\t"));
        let tiles: Vec<String> = position
            .map(|p| {
                RESOLUTIONS
                    .iter()
                    .map(|r| {
                        let (x, y) = tile_of(p.latitude, p.longitude, r.geotile_precision());
                        format!("{x}/{y}")
                    })
                    .collect()
            })
            .unwrap_or_default();
        sql::tsv_array(out, tiles.iter().map(|t| t.as_bytes()));
        out.push('\t');
        out.push_str(record);
        out.push('\n');
    }

    fn add_service(&mut self, ip: IpAddr, key: &[u8; 16], s: &StoredService) {
        let completed = u8::from(s.status == ScanStatus::Completed);
        let mut rank = vec![completed];
        rank.extend(tie::service(s));
        let product = s.product.as_ref();
        let product_words = product.map(|p| words(&p.title)).unwrap_or_default();
        let cpe = product
            .and_then(|p| p.cpe.as_ref())
            .map(|c| c.as_str().to_lowercase())
            .unwrap_or_default();
        let vulns = s.vulnerabilities.as_ref();
        let cves: Vec<String> = vulns
            .map(|v| v.cves.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let max_cvss = vulns
            .and_then(|v| v.max_cvss)
            .map_or(-1, |c| i16::from(c.tenths()));
        let exploit = vulns.map_or(-1, |v| i8::from(v.has_exploits));
        let certificate = s.tls.as_ref().and_then(|t| t.certificate.as_ref());
        let cert_names: Vec<String> = certificate
            .filter(|_| {
                s.protocol.entry().tls && s.status == ScanStatus::Completed && s.error.is_none()
            })
            .map(|c| {
                c.subject_alt_names
                    .iter()
                    .map(String::as_str)
                    .chain(c.common_name.as_deref())
                    .map(comparable_name)
                    .collect()
            })
            .unwrap_or_default();
        let cert_orgs: Vec<String> = certificate
            .filter(|_| s.protocol.entry().certificate_organization)
            .map(|c| {
                [&c.subject_organization, &c.issuer_organization]
                    .into_iter()
                    .flatten()
                    .map(|o| padded_words(o))
                    .collect()
            })
            .unwrap_or_default();
        let record = record_with(ip, |r| {
            r.services.insert((s.port, s.protocol), s.clone());
        });
        let out = &mut self.services;
        push_common(out, key);
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t",
            s.port,
            s.protocol,
            s.observed_at.unix(),
            sql::hex(&rank)
        ));
        sql::tsv_array(out, product_words.iter().map(|w| w.as_bytes()));
        out.push('\t');
        sql::tsv_field(out, product.map_or(&b""[..], |p| p.title.as_bytes()));
        out.push_str(if product.is_some() { "\t1\t" } else { "\t0\t" });
        sql::tsv_field(out, cpe.as_bytes());
        out.push('\t');
        sql::tsv_array(out, cves.iter().map(|c| c.as_bytes()));
        out.push_str(&format!("\t{max_cvss}\t{exploit}\t"));
        sql::tsv_array(out, cert_names.iter().map(|n| n.as_bytes()));
        out.push('\t');
        sql::tsv_array(out, cert_orgs.iter().map(|o| o.as_bytes()));
        out.push('\t');
        out.push_str(&record);
        out.push('\n');
    }

    fn add_domain_scan(&mut self, d: &DomainScan) {
        let out = &mut self.domain_scans;
        sql::tsv_field(out, d.name.as_str().as_bytes());
        let encoded = sql::hex(&codec::encode_domain_scan(d));
        out.push_str(&format!("\t{}\t{encoded}\t", d.observed_at.unix()));
        let keys: Vec<[u8; 16]> = d
            .addresses
            .iter()
            .map(|a| key_bytes(a.to_canonical()))
            .collect();
        sql::tsv_array(out, keys.iter().map(|k| k.as_slice()));
        out.push('\t');
        out.push_str(&encoded);
        out.push('\n');
    }
}

/// Host records rebuilt from the current rows: `services` rows are `(key, record hex)` of
/// each current service, `facts` rows `(key, fact, record hex)` of each current fact.
pub fn rebuild(
    services: &[(u128, String)],
    facts: &[(u128, u8, String)],
) -> Result<BTreeMap<u128, HostRecord>, String> {
    let mut hosts: BTreeMap<u128, HostRecord> = BTreeMap::new();
    let decode = |hex: &str| -> Result<HostRecord, String> {
        let bytes = sql::unhex(hex)?;
        codec::decode_host(&bytes).map_err(|e| format!("a stored record does not decode: {e}"))
    };
    for (key, hex) in services {
        let part = decode(hex)?;
        let rec = hosts
            .entry(*key)
            .or_insert_with(|| HostRecord::new(part.ip));
        rec.services.extend(part.services);
    }
    for (key, fact, hex) in facts {
        let part = decode(hex)?;
        let Some(rec) = hosts.get_mut(key) else {
            // Facts of an address with no current service: not a host.
            continue;
        };
        match *fact {
            FACT_ENRICHMENT => rec.enrichment = part.enrichment,
            FACT_LOCATION => rec.location = part.location,
            FACT_POSITION => rec.position = part.position,
            FACT_REVERSE_DNS => rec.reverse_dns = part.reverse_dns,
            other => return Err(format!("unknown fact kind {other}")),
        }
    }
    Ok(hosts)
}

/// A domain scan from its record hex.
pub fn domain_scan(hex: &str) -> Result<DomainScan, String> {
    let bytes = sql::unhex(hex)?;
    codec::decode_domain_scan(&bytes)
        .map_err(|e| format!("a stored domain scan does not decode: {e}"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use periscope_model::Timestamp;
    use periscope_model::observation::{Observation, ObservationReader};

    use super::*;

    fn synthetic(hosts: u64) -> Vec<Observation> {
        let as_of = Timestamp::parse("2026-11-20T14:00:00Z").unwrap();
        let cfg = periscope_synth::SynthConfig {
            hosts,
            seed: 7,
            as_of,
        };
        let mut text = Vec::new();
        periscope_synth::write_dataset(&cfg, &mut text).unwrap();
        let mut reader = ObservationReader::new(as_of);
        std::str::from_utf8(&text)
            .unwrap()
            .lines()
            .filter_map(|l| reader.read_line(l).unwrap())
            .collect()
    }

    /// A batch writes one row per service and per host fact: each the winner of the batch,
    /// the same record the store's own code keeps.
    #[test]
    fn a_batch_writes_only_its_winners() {
        let observations = synthetic(300);
        let mut batch = Batch::default();
        let mut store: BTreeMap<IpAddr, HostRecord> = BTreeMap::new();
        for obs in &observations {
            batch.add(obs);
            if let Observation::Service(s) = obs {
                store
                    .entry(s.ip)
                    .or_insert_with(|| HostRecord::new(s.ip))
                    .apply(s);
            }
        }
        let rows = batch.finish();
        let services: Vec<&str> = rows.services.lines().collect();
        let keys: BTreeSet<(&str, &str, &str)> = services
            .iter()
            .map(|l| {
                let mut f = l.split('\t');
                (f.next().unwrap(), f.next().unwrap(), f.next().unwrap())
            })
            .collect();
        assert_eq!(keys.len(), services.len(), "a service written twice");
        let expected: usize = store.values().map(|r| r.services.len()).sum();
        assert_eq!(services.len(), expected);
        assert!(services.len() < observations.len(), "nothing was merged");
        let facts: usize = store
            .values()
            .map(|r| {
                usize::from(r.enrichment.is_some())
                    + usize::from(r.location.is_some())
                    + usize::from(r.position.is_some())
                    + usize::from(r.reverse_dns.is_some())
            })
            .sum();
        assert_eq!(rows.facts.lines().count(), facts);
        // Each row's record is the store's current one.
        let mut rebuilt_services = Vec::new();
        for line in &services {
            let record = line.rsplit('\t').next().unwrap();
            let part = codec::decode_host(&sql::unhex(record).unwrap()).unwrap();
            rebuilt_services.push(part);
        }
        for part in rebuilt_services {
            let current = &store[&part.ip];
            for (key, service) in &part.services {
                assert_eq!(current.services.get(key), Some(service));
            }
        }
    }
}
