//! The domain-scan records of a snapshot, indexed both ways the engine asks: by name (every
//! record of a name or of a subdomain of it — the records are filed under the name and each
//! parent domain) and by listed address. Lists keep name order, as the reference returns them.
//!
//! [`ScanView`] reads several layers of records as one: a record of a layer is hidden when a
//! later layer holds a record of the same name (a delta holds the records written since the
//! base was built, newest per name, so its record is the current one).

use std::collections::HashMap;
use std::net::IpAddr;

use periscope_model::observation::DomainScan;
use periscope_model::{DomainName, ip_order_key};

use crate::store::DomainScans;

/// Per host-order key of a listed address: the names of the records listing it.
pub(super) type Listed<'a> = HashMap<u128, Vec<&'a DomainName>>;

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

    /// Whether a record of exactly `name` is held.
    fn holds(&self, name: &DomainName) -> bool {
        self.resolve(self.within.get(name.as_str()))
            .any(|scan| scan.name == *name)
    }

    fn resolve<'a>(&'a self, ids: Option<&'a Vec<u32>>) -> impl Iterator<Item = &'a DomainScan> {
        ids.into_iter()
            .flatten()
            .filter_map(|i| self.scans.get(*i as usize))
    }
}

/// Layers of records read as one, later layers hiding earlier records of the same name.
#[derive(Debug)]
pub(super) struct ScanView<'a> {
    layers: Vec<&'a ScanRecords>,
}

impl<'a> ScanView<'a> {
    /// The view of `layers`, oldest first.
    pub fn new(layers: Vec<&'a ScanRecords>) -> Self {
        Self { layers }
    }

    /// Records of `name` and of its subdomains, by name.
    pub fn of_name(&self, name: &DomainName) -> Vec<&'a DomainScan> {
        self.merged(|layer| layer.within.get(name.as_str()))
    }

    /// Records listing `ip`, by name.
    pub fn listing(&self, ip: IpAddr) -> Vec<&'a DomainScan> {
        self.merged(|layer| layer.listing.get(&ip))
    }

    /// Names of the records listing `ip`, by name.
    pub fn names_listing(&self, ip: IpAddr) -> Vec<&'a DomainName> {
        self.listing(ip)
            .into_iter()
            .map(|scan| &scan.name)
            .collect()
    }

    /// Per host-order key of a listed address: the names of the records of `name` (or a
    /// subdomain) listing it, by name, each once.
    pub fn listed_under(&self, name: &DomainName) -> Listed<'a> {
        let mut out: Listed<'a> = HashMap::new();
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

    /// The records `lookup` finds in every layer (by index), less those a later layer
    /// replaces, by name.
    fn merged(
        &self,
        lookup: impl Fn(&'a ScanRecords) -> Option<&'a Vec<u32>>,
    ) -> Vec<&'a DomainScan> {
        if let [only] = self.layers[..] {
            return only.resolve(lookup(only)).collect();
        }
        let mut out: Vec<&'a DomainScan> = Vec::new();
        for (i, layer) in self.layers.iter().enumerate() {
            let later = self.layers.get(i + 1..).unwrap_or_default();
            out.extend(
                layer
                    .resolve(lookup(layer))
                    .filter(|scan| later.iter().all(|l| !l.holds(&scan.name))),
            );
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}
