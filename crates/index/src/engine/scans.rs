//! The domain-scan records of a snapshot, indexed both ways the engine asks: by name (every
//! record of a name or of a subdomain of it — the records are filed under the name and each
//! parent domain) and by listed address. Lists keep name order, as the reference returns them.

use std::collections::HashMap;
use std::net::IpAddr;

use periscope_model::observation::DomainScan;
use periscope_model::{DomainName, ip_order_key};

use crate::store::DomainScans;

/// The records, newest per name, in name order, with the two lookups.
#[derive(Debug, Default)]
pub(super) struct ScanRecords {
    scans: Vec<DomainScan>,
    /// Per name or parent domain: the records within it, by index (name order).
    within: HashMap<Box<str>, Vec<u32>>,
    /// Per listed address: the records listing it, by index (name order).
    listing: HashMap<IpAddr, Vec<u32>>,
}

impl ScanRecords {
    /// Indexes the stored records.
    pub fn new(domains: DomainScans) -> Self {
        let mut out = Self::default();
        for (i, scan) in domains.by_name.into_values().enumerate() {
            let Ok(i) = u32::try_from(i) else { break };
            let mut suffix = scan.name.as_str();
            loop {
                out.within.entry(suffix.into()).or_default().push(i);
                match suffix.split_once('.') {
                    Some((_, parent)) => suffix = parent,
                    None => break,
                }
            }
            for address in &scan.addresses {
                let list = out.listing.entry(*address).or_default();
                if list.last() != Some(&i) {
                    list.push(i);
                }
            }
            out.scans.push(scan);
        }
        out
    }

    /// Records of `name` and of its subdomains, by name.
    pub fn of_name(&self, name: &DomainName) -> impl Iterator<Item = &DomainScan> {
        self.resolve(self.within.get(name.as_str()))
    }

    /// Records listing `ip`, by name.
    pub fn listing(&self, ip: IpAddr) -> impl Iterator<Item = &DomainScan> {
        self.resolve(self.listing.get(&ip))
    }

    /// Per host-order key of a listed address: the names of the records of `name` (or a
    /// subdomain) listing it, by name, each once.
    pub fn listed_under(&self, name: &DomainName) -> HashMap<u128, Vec<&DomainName>> {
        let mut out: HashMap<u128, Vec<&DomainName>> = HashMap::new();
        for scan in self.of_name(name) {
            for address in &scan.addresses {
                let names = out.entry(ip_order_key(address.to_canonical())).or_default();
                if !names.contains(&&scan.name) {
                    names.push(&scan.name);
                }
            }
        }
        out
    }

    fn resolve<'a>(&'a self, ids: Option<&'a Vec<u32>>) -> impl Iterator<Item = &'a DomainScan> {
        ids.into_iter()
            .flatten()
            .filter_map(|i| self.scans.get(*i as usize))
    }
}
