//! The domain-scan records of a snapshot, indexed both ways the engine asks: by name (every
//! record of a name or of a subdomain of it — the records are filed under the name and each
//! parent domain) and by listed address. Lists keep name order, as the reference returns them.
//!
//! [`ScanRecords`] holds only the lookups — the records' names, ascending (record `i` is the
//! `i`-th), the name and parent-domain postings and the listed addresses with their records —
//! in a compact form the index file holds as it is in memory ([`ScanRecords::write`]). The
//! records themselves are read only when a look-up returns them: from the store snapshot by
//! name (an index of a store), or from memory (an index built from an iterator). A domain
//! search needs only addresses and names: each record's addresses from the inverse of the
//! address lookup (derived by a counting sort when the lookups are made or read), and from
//! the names table only the names of the records listing a host a page shows.
//! So a start from the index file decodes no record, a domain search reads none, and the
//! records are not held twice.
//!
//! [`ScanView`] reads several layers of records as one: a record of a layer is hidden when a
//! later layer holds a record of the same name (a delta holds the records written since the
//! base was built, newest per name, so its record is the current one).

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use periscope_model::observation::DomainScan;
use periscope_model::{DomainName, ip_order_key};

use super::persist::{LoadError, Reader, Writer};
use super::strings::{LabelsReversed, StrPostings, TooLong};
use super::with_causes;
use crate::api::IndexError;
use crate::durable::StoreSnapshot;
use crate::store::DomainScans;

/// Where the records are read.
#[derive(Debug)]
enum Source {
    /// Record `i` is the `i`-th (an index built from an iterator, or a delta).
    Memory(Vec<DomainScan>),
    /// The store snapshot, read by name.
    Store(StoreSnapshot),
}

/// The lookups of the records, newest per name; see the module documentation.
#[derive(Debug)]
pub(super) struct ScanRecords {
    source: Source,
    /// The records' names, ascending: record `i` is the `i`-th key (so held in their own
    /// order, not with their labels reversed: records are numbered by name).
    names: StrPostings,
    /// Per name or parent domain: the records within it.
    within: StrPostings<LabelsReversed>,
    /// The listed addresses, ascending.
    listed: Addresses,
    /// The records listing address `i` are `ids[starts[i]..starts[i + 1]]`, ascending.
    starts: Box<[u32]>,
    ids: Box<[u32]>,
    /// The inverse, derived from the three above when the lookups are made or read: record
    /// `i` lists the addresses `listed[a]` for `a` in `lists[from[i]..from[i + 1]]`, so the
    /// addresses of a name's records are known without reading a record.
    from: Box<[u32]>,
    lists: Box<[u32]>,
}

/// Ascending addresses, IPv4 ones (which order first) as 4 bytes and IPv6 ones as 16, where
/// an `IpAddr` takes 17.
#[derive(Debug, Default)]
struct Addresses {
    v4: Box<[u32]>,
    v6: Box<[u128]>,
}

impl Addresses {
    /// The addresses of `ascending`, which must be strictly ascending.
    fn new(ascending: impl IntoIterator<Item = IpAddr>) -> Self {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for ip in ascending {
            match ip {
                IpAddr::V4(a) => v4.push(u32::from(a)),
                IpAddr::V6(a) => v6.push(u128::from(a)),
            }
        }
        Self {
            v4: v4.into_boxed_slice(),
            v6: v6.into_boxed_slice(),
        }
    }

    fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// The address at position `at`.
    fn get(&self, at: usize) -> Option<IpAddr> {
        match at.checked_sub(self.v4.len()) {
            None => self.v4.get(at).map(|a| IpAddr::V4(Ipv4Addr::from(*a))),
            Some(at) => self.v6.get(at).map(|a| IpAddr::V6(Ipv6Addr::from(*a))),
        }
    }

    /// The position of `ip`, if listed.
    fn find(&self, ip: IpAddr) -> Option<usize> {
        match ip {
            IpAddr::V4(a) => self.v4.binary_search(&u32::from(a)).ok(),
            IpAddr::V6(a) => Some(self.v4.len() + self.v6.binary_search(&u128::from(a)).ok()?),
        }
    }

    /// Every address in order.
    fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        (0..self.len()).filter_map(|at| self.get(at))
    }
}

/// The inverse of `starts` and `ids` (see [`ScanRecords::from`]) for `records` records:
/// a counting sort of the (address, record) pairs by record, keeping address order.
fn invert(starts: &[u32], ids: &[u32], records: usize) -> (Box<[u32]>, Box<[u32]>) {
    let mut from = vec![0u32; records + 1];
    for i in ids {
        from[*i as usize + 1] += 1;
    }
    for n in 1..from.len() {
        from[n] += from[n - 1];
    }
    let mut next: Vec<u32> = from[..records].to_vec();
    let mut lists = vec![0u32; ids.len()];
    for (address, range) in starts.windows(2).enumerate() {
        for i in &ids[range[0] as usize..range[1] as usize] {
            let slot = &mut next[*i as usize];
            lists[*slot as usize] = address as u32;
            *slot += 1;
        }
    }
    (from.into_boxed_slice(), lists.into_boxed_slice())
}

/// Bytes of a listed address in the index file: the family (4 or 6), then 16 bytes.
const ADDRESS_BYTES: usize = 17;

impl ScanRecords {
    /// Indexes the records, keeping them in memory. Fails past 2³² records or 4 GiB of keys.
    pub fn new(domains: DomainScans) -> Result<Self, TooLong> {
        let mut names = StrPostings::default();
        let mut within = StrPostings::<LabelsReversed>::default();
        let mut pairs: Vec<(IpAddr, u32)> = Vec::new();
        let mut scans = Vec::with_capacity(domains.by_name.len());
        for (i, scan) in domains.by_name.into_values().enumerate() {
            let i = u32::try_from(i).map_err(|_| TooLong)?;
            names.insert(scan.name.as_str(), i);
            let mut suffix = scan.name.as_str();
            loop {
                within.insert(suffix, i);
                match suffix.split_once('.') {
                    Some((_, parent)) => suffix = parent,
                    None => break,
                }
            }
            pairs.extend(scan.addresses.iter().map(|a| (*a, i)));
            scans.push(scan);
        }
        names.freeze()?;
        within.freeze()?;
        pairs.sort_unstable();
        pairs.dedup();
        let mut listed = Vec::new();
        let mut starts = Vec::new();
        let mut ids = Vec::with_capacity(pairs.len());
        for (ip, i) in pairs {
            if listed.last() != Some(&ip) {
                starts.push(u32::try_from(ids.len()).map_err(|_| TooLong)?);
                listed.push(ip);
            }
            ids.push(i);
        }
        starts.push(u32::try_from(ids.len()).map_err(|_| TooLong)?);
        let (from, lists) = invert(&starts, &ids, scans.len());
        Ok(Self {
            source: Source::Memory(scans),
            names,
            within,
            listed: Addresses::new(listed),
            starts: starts.into_boxed_slice(),
            ids: ids.into_boxed_slice(),
            from,
            lists,
        })
    }

    /// Reads the records from `snapshot` (which holds them under their names) from now on,
    /// dropping those in memory.
    pub fn read_from(&mut self, snapshot: StoreSnapshot) {
        self.source = Source::Store(snapshot);
    }

    /// Writes the lookups (the index file; see `persist`).
    pub fn write<W: Write>(&self, w: &mut Writer<W>) -> io::Result<()> {
        self.names.write(w)?;
        self.within.write(w)?;
        w.len(self.listed.len())?;
        let mut bytes = Vec::with_capacity(ADDRESS_BYTES << 12);
        for ip in self.listed.iter() {
            let (family, bits) = match ip {
                IpAddr::V4(a) => (4, u128::from(u32::from(a))),
                IpAddr::V6(a) => (6, u128::from(a)),
            };
            bytes.push(family);
            bytes.extend_from_slice(&bits.to_le_bytes());
            if bytes.len() == bytes.capacity() {
                w.write_all(&bytes)?;
                bytes.clear();
            }
        }
        w.write_all(&bytes)?;
        w.len(self.ids.len())?;
        w.u32s(&self.starts)?;
        w.u32s(&self.ids)
    }

    /// Reads what [`Self::write`] wrote; the records are read from the snapshot given to
    /// [`Self::read_from`] (until then none is held).
    pub fn read<R: Read>(r: &mut Reader<R>) -> Result<Self, LoadError> {
        let bad = |why: &str| LoadError::Corrupt(format!("domain-scan lookups: {why}"));
        let names = StrPostings::read(r, "domain-scan names", u32::MAX as usize)?;
        let records = names.len();
        let within = StrPostings::read(r, "domain-scan names within", records)?;
        let n = r.len("listed addresses")?;
        let bytes = r.bytes(n.checked_mul(ADDRESS_BYTES).ok_or_else(|| bad("count"))?)?;
        let listed = bytes
            .chunks_exact(ADDRESS_BYTES)
            .map(|c| {
                let mut bits = [0u8; 16];
                bits.copy_from_slice(&c[1..]);
                let bits = u128::from_le_bytes(bits);
                match c[0] {
                    4 => u32::try_from(bits)
                        .ok()
                        .map(|v| IpAddr::V4(Ipv4Addr::from(v))),
                    6 => Some(IpAddr::V6(Ipv6Addr::from(bits))),
                    _ => None,
                }
            })
            .collect::<Option<Vec<IpAddr>>>()
            .ok_or_else(|| bad("an address"))?;
        drop(bytes);
        if listed.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("addresses out of order"));
        }
        let listed = Addresses::new(listed);
        let m = r.len("listed records")?;
        let starts = r.u32s(n + 1)?.into_boxed_slice();
        let ids = r.u32s(m)?.into_boxed_slice();
        let ranges_ok = starts.first() == Some(&0)
            && starts.last().map(|l| *l as usize) == Some(m)
            && starts.windows(2).all(|w| w[0] < w[1]);
        if !ranges_ok {
            return Err(bad("address ranges"));
        }
        if ids.iter().any(|i| *i as usize >= records)
            || starts.windows(2).any(|w| {
                ids[w[0] as usize..w[1] as usize]
                    .windows(2)
                    .any(|p| p[0] >= p[1])
            })
        {
            return Err(bad("a record of an address"));
        }
        let (from, lists) = invert(&starts, &ids, records);
        Ok(Self {
            source: Source::Memory(Vec::new()),
            names,
            within,
            listed,
            starts,
            ids,
            from,
            lists,
        })
    }

    /// The name of record `i`.
    fn name(&self, i: u32) -> String {
        self.names.key(i as usize)
    }

    /// Whether a record of exactly `name` is held.
    fn holds(&self, name: &str) -> bool {
        self.names.get(name).is_some()
    }

    /// The records within `name`, ascending.
    fn within(&self, name: &str) -> Vec<u32> {
        self.within
            .get(name)
            .map(|ids| ids.iter().collect())
            .unwrap_or_default()
    }

    /// The records listing `ip`, ascending.
    fn listing(&self, ip: IpAddr) -> Vec<u32> {
        let Some(at) = self.listed.find(ip) else {
            return Vec::new();
        };
        let (Some(start), Some(end)) = (self.starts.get(at), self.starts.get(at + 1)) else {
            return Vec::new();
        };
        self.ids
            .get(*start as usize..*end as usize)
            .unwrap_or_default()
            .to_vec()
    }

    /// The name of record `i` as a domain name (the lookups hold only valid names; one that
    /// is not is an error, never skipped).
    fn domain_name(&self, i: u32) -> Result<DomainName, IndexError> {
        DomainName::parse(&self.name(i)).map_err(|e| {
            IndexError::Unavailable(format!(
                "the index lists a domain-scan record under an invalid name: {e}"
            ))
        })
    }

    /// The addresses record `i` lists, ascending, without reading the record.
    fn addresses(&self, i: u32) -> impl Iterator<Item = IpAddr> + '_ {
        let i = i as usize;
        let range = match (self.from.get(i), self.from.get(i + 1)) {
            (Some(start), Some(end)) => *start as usize..*end as usize,
            _ => 0..0,
        };
        self.lists
            .get(range)
            .unwrap_or_default()
            .iter()
            .filter_map(|a| self.listed.get(*a as usize))
    }

    /// Record `i`: a record the lookups name that the store does not hold, or cannot read,
    /// is an error.
    fn record(&self, i: u32) -> Result<Cow<'_, DomainScan>, IndexError> {
        match &self.source {
            Source::Memory(scans) => scans.get(i as usize).map(Cow::Borrowed).ok_or_else(|| {
                IndexError::Unavailable(format!("domain-scan record {i} is not held"))
            }),
            Source::Store(snapshot) => {
                let name = self.name(i);
                match snapshot.domain_scan_named(&name) {
                    Ok(Some(scan)) => Ok(Cow::Owned(scan)),
                    Ok(None) => Err(IndexError::Unavailable(format!(
                        "the store holds no domain-scan record of {name}, which the index lists"
                    ))),
                    Err(e) => Err(IndexError::Unavailable(with_causes(&e))),
                }
            }
        }
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
    pub fn of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        self.read(&self.merged(|layer| layer.within(name.as_str())))
    }

    /// Records listing `ip`, by name.
    pub fn listing(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        self.read(&self.merged(|layer| layer.listing(ip)))
    }

    /// Names of the records listing `ip`, by name.
    pub fn names_listing(&self, ip: IpAddr) -> Result<Vec<DomainName>, IndexError> {
        self.merged(|layer| layer.listing(ip))
            .into_iter()
            .map(|(layer, i)| layer.domain_name(i))
            .collect()
    }

    /// The host-order keys of the addresses the records of `name` (or a subdomain) list,
    /// ascending, each once: what a domain query selects hosts by. No name is read; a row
    /// takes the names of the records listing its address from [`ScanView::names_listing`].
    pub fn listed_under(&self, name: &DomainName) -> Vec<u128> {
        let records = self.merged(|layer| layer.within(name.as_str()));
        let mut keys: Vec<u128> = (records.iter())
            .flat_map(|(layer, i)| layer.addresses(*i))
            .map(|a| ip_order_key(a.to_canonical()))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    fn read(&self, found: &[(&'a ScanRecords, u32)]) -> Result<Vec<DomainScan>, IndexError> {
        found
            .iter()
            .map(|(layer, i)| layer.record(*i).map(Cow::into_owned))
            .collect()
    }

    /// The records `lookup` finds in every layer, less those a later layer replaces, by
    /// name.
    fn merged(&self, lookup: impl Fn(&'a ScanRecords) -> Vec<u32>) -> Vec<(&'a ScanRecords, u32)> {
        if let [only] = self.layers[..] {
            return lookup(only).into_iter().map(|i| (only, i)).collect();
        }
        let mut out: Vec<(&'a ScanRecords, u32)> = Vec::new();
        for (n, layer) in self.layers.iter().enumerate() {
            let later = self.layers.get(n + 1..).unwrap_or_default();
            out.extend(
                lookup(layer)
                    .into_iter()
                    .filter(|i| later.iter().all(|l| !l.holds(&layer.name(*i))))
                    .map(|i| (*layer, i)),
            );
        }
        out.sort_by_cached_key(|(layer, i)| layer.name(*i));
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use super::{Addresses, ScanRecords, ScanView};
    use crate::store::DomainScans;
    use periscope_model::observation::DomainScan;
    use periscope_model::{DomainName, Timestamp, ip_order_key};
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    /// A domain query's addresses: every address its records (the name's and its
    /// subdomains', no other) list, once and ascending; and the names of a row's evidence, the
    /// records listing its address within the name, by name.
    #[test]
    fn a_domain_lists_its_records_addresses_once_with_their_names() {
        let scan = |name: &str, addresses: &[&str]| {
            let name = DomainName::parse(name).unwrap();
            let addresses = addresses.iter().map(|a| a.parse().unwrap()).collect();
            let observed_at = Timestamp::from_unix(1_790_000_000).unwrap();
            (
                name.clone(),
                DomainScan {
                    name,
                    addresses,
                    observed_at,
                },
            )
        };
        let by_name = [
            scan("www.a.example", &["240.0.0.2", "3fff::1"]),
            scan("a.example", &["240.0.0.2", "240.0.0.1"]),
            scan("b.example", &["240.0.0.3", "240.0.0.1"]),
        ];
        let records = ScanRecords::new(DomainScans {
            by_name: by_name.into_iter().collect(),
        });
        let records = records.unwrap();
        let view = ScanView::new(vec![&records]);
        let key = |ip: &str| ip_order_key(ip.parse::<IpAddr>().unwrap());
        let a = DomainName::parse("a.example").unwrap();
        let names = |ip: &str| -> Vec<String> {
            let names = view.names_listing(ip.parse().unwrap()).unwrap();
            let within = names.iter().filter(|n| n.is_within(&a));
            within.map(|n| n.as_str().to_owned()).collect()
        };

        let mut expected = vec![key("240.0.0.1"), key("240.0.0.2"), key("3fff::1")];
        expected.sort_unstable();
        assert_eq!(view.listed_under(&a), expected);
        assert_eq!(names("240.0.0.2"), ["a.example", "www.a.example"]);
        assert_eq!(names("240.0.0.1"), ["a.example"]);
        assert_eq!(names("3fff::1"), ["www.a.example"]);
        assert!(names("240.0.0.3").is_empty());

        let none = view.listed_under(&DomainName::parse("c.example").unwrap());
        assert!(none.is_empty());
    }

    proptest! {
        /// The compact addresses answer as the sorted list: each by position, each lookup.
        #[test]
        fn addresses_answer_as_their_list(
            ips in prop::collection::btree_set(prop_oneof![
                any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
                any::<u128>().prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
                (0u128..300).prop_map(|a| IpAddr::V6(Ipv6Addr::from(a))),
            ], 0..60),
            probes in prop::collection::vec(any::<u32>(), 0..20),
        ) {
            let list: Vec<IpAddr> = ips.iter().copied().collect();
            let compact = Addresses::new(list.iter().copied());
            prop_assert_eq!(compact.len(), list.len());
            prop_assert_eq!(compact.iter().collect::<Vec<_>>(), list.clone());
            prop_assert_eq!(compact.get(list.len()), None);
            for (at, ip) in list.iter().enumerate() {
                prop_assert_eq!(compact.get(at), Some(*ip));
                prop_assert_eq!(compact.find(*ip), Some(at));
            }
            let absent: BTreeSet<IpAddr> = probes
                .iter()
                .flat_map(|p| [IpAddr::V4(Ipv4Addr::from(*p)), IpAddr::V6(Ipv6Addr::from(u128::from(*p)))])
                .filter(|ip| !ips.contains(ip))
                .collect();
            for ip in absent {
                prop_assert_eq!(compact.find(ip), None);
            }
        }
    }
}
