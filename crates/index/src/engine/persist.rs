//! The index file: a built [`EmbeddedIndex`] written to disk so that a restart loads it
//! instead of rebuilding it from every host record (which takes minutes at ten million
//! hosts; loading is a sequential read).
//!
//! Layout (little-endian): the magic `PSCPIDX\0`, [`FORMAT_VERSION`], the store generation it
//! was built from, the build time, the two settings that shape an index, then the ordinal
//! maps and country ids, service postings and columns, host postings, the per-value host
//! postings of port, protocol, CVSS and exploit, the exposure places (tile, country and
//! position in micro-degrees) and each host's place id, the expiry hours and the domain-scan
//! lookups (`scans`) — in the order [`EmbeddedIndex::save`] writes them — and last a 64-bit
//! checksum of every byte before it (four-lane, see `Checksum`). Fixed-width columns are
//! written and read a block at a time; postings keyed by text (names, words, CPEs,
//! certificate names) are in their compact in-memory form (`strings`: front-coded keys,
//! domain names with their labels reversed), so loading them is a few large reads rather than
//! an allocation per key. Version 8 moved each host's position into its place (a per-host
//! position column took 8 bytes a host); version 7 front-coded those keys; version 6 added
//! the domain-scan lookups (before, a load decoded every domain-scan record of the store to
//! rebuild them — most of a start at ten million hosts; now the records are read by name when
//! a query needs them); version 5 the compact text form, the compact positions and the
//! four-lane checksum; version 4 the CVSS "from" postings and the port and protocol repeats.
//! A file of an older version is stale: it is rebuilt, never read. Bitmaps are roaring's portable
//! serialization, written with run containers where runs are smaller. The file keeps some
//! columns wider than memory does (each service's host, the title and place ids, the CVSS
//! band and exploit flag, every shared set of a string posting as a bitmap): a load checks
//! them and holds them compact, so files written before still load.
//!
//! **Validity:** a file is used only when its generation equals the store snapshot's (every
//! committed batch advances the store's generation) and its settings equal the ones asked
//! for; otherwise [`EmbeddedIndex::load`] says it is stale and the caller rebuilds. A file
//! that does not parse, fails a structural check or its checksum is an error naming what is
//! wrong — the caller rebuilds and overwrites it; it is never half-used.
//! **Writing** goes to a temporary file that is synced and renamed over the old one, so a
//! crash leaves either the old file or the new one.
//!
//! **Delta journal** ([`DeltaJournal`], `scan.delta`): the keys and names a delta was built
//! from, between the base's generation and the delta's, checksummed the same way. A saved
//! base older than the store is used ([`Unattached::attach`]) only together with
//! a journal reaching the store's generation, whose records then shadow the base's.

use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use periscope_model::{DomainName, Timestamp};
use roaring::RoaringBitmap;

use super::scans::ScanRecords;
use super::{EmbeddedIndex, Records};
use crate::durable::StoreSnapshot;
use crate::order_keys::{OrderKeys, OutOfOrder};
use crate::store::IndexConfig;

const MAGIC: &[u8; 8] = b"PSCPIDX\0";
/// The layout written and the only one read.
pub const FORMAT_VERSION: u32 = 8;

/// Why an index file was not used.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// There is no index file.
    #[error("there is no index file")]
    Missing,
    /// The file was built from another state of the store, or with other settings.
    #[error("the index file is stale: {0}")]
    Stale(String),
    /// The file is damaged or not an index file.
    #[error("the index file is not usable: {0}")]
    Corrupt(String),
    /// Reading the file failed.
    #[error("cannot read the index file: {0}")]
    Io(#[from] io::Error),
    /// Reading the store snapshot failed.
    #[error(transparent)]
    Store(#[from] crate::durable::StoreError),
}

fn corrupt(what: impl Into<String>) -> LoadError {
    LoadError::Corrupt(what.into())
}

/// A streaming 64-bit checksum: 64-bit FNV-1a-style steps over 8-byte words in four
/// independent lanes (word `i` of each 32-byte block goes to lane `i`, the tail zero-padded),
/// folded together with the length at the end — four multiplications in flight instead of
/// one chain, so checking a file of gigabytes costs a fraction of reading it. The writer and
/// the reader agree however their buffers split the bytes.
#[derive(Debug, Clone)]
struct Checksum {
    lanes: [u64; 4],
    pending: [u8; 32],
    filled: usize,
    total: u64,
}

impl Checksum {
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Self {
            lanes: [
                0xcbf2_9ce4_8422_2325,
                0x9e37_79b9_7f4a_7c15,
                0xc2b2_ae3d_27d4_eb4f,
                0x1656_67b1_9e37_79f9,
            ],
            pending: [0; 32],
            filled: 0,
            total: 0,
        }
    }

    fn step(lane: u64, w: u64) -> u64 {
        (lane ^ w).wrapping_mul(Self::PRIME).rotate_left(29)
    }

    #[inline]
    fn block(&mut self, b: &[u8]) {
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i * 8..i * 8 + 8]);
            *lane = Self::step(*lane, u64::from_le_bytes(w));
        }
    }

    fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.filled > 0 {
            let take = (32 - self.filled).min(bytes.len());
            self.pending[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 32 {
                return;
            }
            let pending = self.pending;
            self.block(&pending);
            self.filled = 0;
        }
        let mut blocks = bytes.chunks_exact(32);
        for b in blocks.by_ref() {
            self.block(b);
        }
        let rest = blocks.remainder();
        self.pending[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn finish(&self) -> u64 {
        let mut c = self.clone();
        if c.filled > 0 {
            c.pending[c.filled..].fill(0);
            let pending = c.pending;
            c.block(&pending);
        }
        let mut hash = Self::step(0x5043_5350, c.total);
        for lane in c.lanes {
            hash = Self::step(hash, lane);
        }
        hash
    }
}

/// Writes primitives, checksumming every byte.
pub(super) struct Writer<W: Write> {
    out: W,
    sum: Checksum,
}

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Writer<W> {
    pub fn u16(&mut self, v: u16) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
    pub fn u32(&mut self, v: u32) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
    pub fn i64(&mut self, v: i64) -> io::Result<()> {
        self.write_all(&v.to_le_bytes())
    }
    /// A count or length.
    pub fn len(&mut self, n: usize) -> io::Result<()> {
        self.u64(n as u64)
    }
    pub fn str(&mut self, s: &str) -> io::Result<()> {
        self.len(s.len())?;
        self.write_all(s.as_bytes())
    }
    /// A bitmap, its runs of consecutive ordinals as runs (the hosts of one network, one
    /// country, one hour): smaller in the file and in the memory of the index that loads it.
    pub fn bitmap(&mut self, b: &RoaringBitmap) -> io::Result<()> {
        let mut b = b.clone();
        b.optimize();
        b.serialize_into(&mut *self)
    }
    /// A column of `u32`s (its length is the caller's to write).
    pub fn u32s(&mut self, values: &[u32]) -> io::Result<()> {
        for chunk in values.chunks(1 << 14) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.write_all(&bytes)?;
        }
        Ok(())
    }
    /// A column of `u16`s.
    pub fn u16s(&mut self, values: &[u16]) -> io::Result<()> {
        for chunk in values.chunks(1 << 14) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            self.write_all(&bytes)?;
        }
        Ok(())
    }
    /// A column of `u128`s.
    pub fn u128s(&mut self, values: impl IntoIterator<Item = u128>) -> io::Result<()> {
        let mut bytes = Vec::with_capacity(16 << 12);
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
            if bytes.len() == bytes.capacity() {
                self.write_all(&bytes)?;
                bytes.clear();
            }
        }
        self.write_all(&bytes)
    }
    pub fn bitmaps<'a>(
        &mut self,
        bs: impl ExactSizeIterator<Item = &'a RoaringBitmap>,
    ) -> io::Result<()> {
        self.len(bs.len())?;
        for b in bs {
            self.bitmap(b)?;
        }
        Ok(())
    }
    /// A map, its entries in key order (so equal maps give equal bytes).
    pub fn map<K: Ord>(
        &mut self,
        map: &HashMap<K, RoaringBitmap>,
        mut key: impl FnMut(&mut Self, &K) -> io::Result<()>,
    ) -> io::Result<()> {
        let mut entries: Vec<_> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        self.len(entries.len())?;
        for (k, b) in entries {
            key(self, k)?;
            self.bitmap(b)?;
        }
        Ok(())
    }
}

/// Reads primitives, checksumming every byte.
pub(super) struct Reader<R: Read> {
    input: R,
    sum: Checksum,
}

impl<R: Read> Read for Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.input.read(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
impl<W: Write> Writer<W> {
    /// A writer to `out` (tests of one part's layout).
    pub fn new(out: W) -> Self {
        Self {
            out,
            sum: Checksum::new(),
        }
    }
}

#[cfg(test)]
impl<R: Read> Reader<R> {
    /// A reader of `input` (tests of one part's layout).
    pub fn new(input: R) -> Self {
        Self {
            input,
            sum: Checksum::new(),
        }
    }
}

/// Upper bound for any count in the file (ordinals are 32-bit).
const MAX_COUNT: u64 = u32::MAX as u64 + 1;

impl<R: Read> Reader<R> {
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], LoadError> {
        let mut b = [0u8; N];
        self.read_exact(&mut b).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => corrupt("the file ends early"),
            _ => LoadError::Io(e),
        })?;
        Ok(b)
    }
    pub fn u8(&mut self) -> Result<u8, LoadError> {
        Ok(self.array::<1>()?[0])
    }
    pub fn u16(&mut self) -> Result<u16, LoadError> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    pub fn i64(&mut self) -> Result<i64, LoadError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    pub fn len(&mut self, what: &str) -> Result<usize, LoadError> {
        let n = self.u64()?;
        if n > MAX_COUNT {
            return Err(corrupt(format!("{what}: implausible count {n}")));
        }
        usize::try_from(n).map_err(|_| corrupt(format!("{what}: count {n} too large")))
    }
    pub fn str(&mut self, what: &str) -> Result<Box<str>, LoadError> {
        let n = self.len(what)?;
        if n > 1 << 20 {
            return Err(corrupt(format!("{what}: a string of {n} bytes")));
        }
        let mut b = vec![0u8; n];
        self.read_exact(&mut b)
            .map_err(|_| corrupt(format!("{what}: the file ends early")))?;
        String::from_utf8(b)
            .map(String::into_boxed_str)
            .map_err(|_| corrupt(format!("{what}: not UTF-8")))
    }
    pub fn bitmap(&mut self, what: &str) -> Result<RoaringBitmap, LoadError> {
        RoaringBitmap::deserialize_from(&mut *self)
            .map_err(|e| corrupt(format!("{what}: bad bitmap ({e})")))
    }
    /// `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<Vec<u8>, LoadError> {
        let mut b = vec![0u8; n];
        self.read_exact(&mut b).map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => corrupt("the file ends early"),
            _ => LoadError::Io(e),
        })?;
        Ok(b)
    }
    /// `n` values of `N` bytes each, decoded by `one`, read a block at a time.
    fn column<T, const N: usize>(
        &mut self,
        n: usize,
        one: impl Fn([u8; N]) -> T,
    ) -> Result<Vec<T>, LoadError> {
        let mut out = Vec::with_capacity(n);
        self.each(n, |a| {
            out.push(one(a));
            Ok(())
        })?;
        Ok(out)
    }
    /// `n` values of `N` bytes each, given to `one` in order, read a block at a time.
    fn each<const N: usize>(
        &mut self,
        n: usize,
        mut one: impl FnMut([u8; N]) -> Result<(), LoadError>,
    ) -> Result<(), LoadError> {
        let mut buf = vec![0u8; N * 8192];
        let mut left = n;
        while left > 0 {
            let take = left.min(8192);
            let bytes = &mut buf[..take * N];
            self.read_exact(bytes).map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => corrupt("the file ends early"),
                _ => LoadError::Io(e),
            })?;
            for c in bytes.chunks_exact(N) {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                one(a)?;
            }
            left -= take;
        }
        Ok(())
    }
    /// `n` `u32`s.
    pub fn u32s(&mut self, n: usize) -> Result<Vec<u32>, LoadError> {
        self.column(n, u32::from_le_bytes)
    }
    /// `n` `u16`s.
    pub fn u16s(&mut self, n: usize) -> Result<Vec<u16>, LoadError> {
        self.column(n, u16::from_le_bytes)
    }
    /// `n` strictly ascending host order keys, as `u128`s.
    pub fn order_keys(&mut self, n: usize) -> Result<OrderKeys, LoadError> {
        // How many are IPv4 keys is known only once read: room for all, then shrunk.
        let mut keys = OrderKeys::with_capacity(n, 0);
        self.each(n, |a| {
            keys.push(u128::from_le_bytes(a))
                .map_err(|OutOfOrder| corrupt("host keys out of order"))
        })?;
        keys.shrink_to_fit();
        Ok(keys)
    }
    pub fn bitmaps(&mut self, what: &str) -> Result<Vec<RoaringBitmap>, LoadError> {
        let n = self.len(what)?;
        (0..n).map(|_| self.bitmap(what)).collect()
    }
    pub fn map<K: Hash + Eq>(
        &mut self,
        what: &str,
        mut key: impl FnMut(&mut Self) -> Result<K, LoadError>,
    ) -> Result<HashMap<K, RoaringBitmap>, LoadError> {
        let n = self.len(what)?;
        let mut map = HashMap::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let k = key(self)?;
            let b = self.bitmap(what)?;
            if map.insert(k, b).is_some() {
                return Err(corrupt(format!("{what}: a key appears twice")));
            }
        }
        Ok(map)
    }
    /// `n` fixed-size values.
    pub fn vec<T>(
        &mut self,
        n: usize,
        mut one: impl FnMut(&mut Self) -> Result<T, LoadError>,
    ) -> Result<Vec<T>, LoadError> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(one(self)?);
        }
        Ok(out)
    }
}

impl EmbeddedIndex {
    /// Writes the index to `path` (through a temporary file renamed over it), recording the
    /// store generation it was built from.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("index-tmp");
        let file = File::create(&tmp)?;
        let mut w = Writer {
            out: BufWriter::with_capacity(1 << 20, file),
            sum: Checksum::new(),
        };
        self.write(&mut w)?;
        let sum = w.sum.finish();
        let mut file = w.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.write_all(&sum.to_le_bytes())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }

    fn write<W: Write>(&self, w: &mut Writer<W>) -> io::Result<()> {
        w.write_all(MAGIC)?;
        w.u32(FORMAT_VERSION)?;
        w.u64(self.generation)?;
        w.i64(self.built_at.unix())?;
        w.i64(self.config.retention_secs)?;
        w.u64(self.config.max_host_only_results)?;
        w.len(self.keys.len())?;
        w.u128s(self.keys.iter())?;
        w.len(self.service_count() as usize)?;
        w.u32s(&self.service_start)?;
        // Each service's host (the index derives it from the ranges; the file keeps it).
        let mut owners = Vec::with_capacity(1 << 14);
        for (host, range) in self.service_start.windows(2).enumerate() {
            // The hosts are numbered with `u32`.
            owners.extend((range[0]..range[1]).map(|_| host as u32));
            if owners.len() >= 1 << 14 {
                w.u32s(&owners)?;
                owners.clear();
            }
        }
        w.u32s(&owners)?;
        w.u16s(&self.countries)?;
        self.services.write(w)?;
        self.hosts.write(w)?;
        self.value_hosts.write(w)?;
        self.place_ids.write(w)?;
        self.expiry.write(w)?;
        self.scans.write(w)
    }

    /// Loads the index file at `path` built from `snapshot` with `config`; see the module
    /// documentation for when it is refused. The loaded index reads records from `snapshot`.
    pub fn load(
        path: &Path,
        snapshot: StoreSnapshot,
        config: IndexConfig,
    ) -> Result<Self, LoadError> {
        let generation = snapshot.generation();
        Self::read_file(path, config)?.attach(generation, snapshot)
    }

    /// The index file at `path`, built with `config`, read whole and checked, but not yet
    /// joined to the store snapshot whose records it shows ([`Unattached::attach`]): what a
    /// start reads while the store's runs load.
    pub fn read_file(path: &Path, config: IndexConfig) -> Result<Unattached, LoadError> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(LoadError::Missing),
            Err(e) => return Err(e.into()),
        };
        let mut r = Reader {
            input: BufReader::with_capacity(1 << 20, file),
            sum: Checksum::new(),
        };
        if &r.array::<8>()? != MAGIC {
            return Err(corrupt("not a Periscope index file"));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(LoadError::Stale(format!(
                "format version {version}, this build reads {FORMAT_VERSION}"
            )));
        }
        let built_from = r.u64()?;
        let built_at = Timestamp::from_unix(r.i64()?).ok_or_else(|| corrupt("build time"))?;
        let saved = IndexConfig {
            retention_secs: r.i64()?,
            max_host_only_results: r.u64()?,
        };
        if saved != config {
            return Err(LoadError::Stale(format!(
                "built with {saved:?}, asked for {config:?}"
            )));
        }
        let hosts = r.len("hosts")?;
        let keys = r.order_keys(hosts)?;
        let services = r.len("services")?;
        let service_start = r.u32s(hosts + 1)?;
        let ranges_ok = service_start.first() == Some(&0)
            && service_start.last().map(|l| *l as usize) == Some(services)
            && service_start.windows(2).all(|w| w[0] < w[1]);
        if !ranges_ok {
            return Err(corrupt("service ranges do not fit the hosts"));
        }
        // The file keeps each service's host; the index derives it from the ranges, which
        // must say the same.
        let service_hosts = super::ServiceHosts::new(&service_start)
            .ok_or_else(|| corrupt("a host without a service"))?;
        let mut service = 0u32;
        r.each(services, |owner: [u8; 4]| {
            let derived = service_hosts.of(service);
            service += 1;
            if derived == Some(u32::from_le_bytes(owner)) {
                Ok(())
            } else {
                Err(corrupt("a service's host is not the one its range says"))
            }
        })?;
        let countries = r.u16s(hosts)?;
        if countries
            .iter()
            .any(|c| *c != u16::MAX && super::facets::country_of_index(usize::from(*c)).is_none())
        {
            return Err(corrupt("a country id"));
        }
        let service_postings = super::postings::ServicePostings::read(&mut r, services)?;
        let host_postings = super::postings::HostPostings::read(&mut r, hosts)?;
        let value_hosts = super::postings::ValueHosts::read(&mut r, hosts)?;
        let place_ids = super::exposure::Places::read(&mut r, &countries)?;
        let expiry = super::expiry::Expiry::read(&mut r, hosts)?;
        let scans = ScanRecords::read(&mut r)?;
        let computed = r.sum.finish();
        let stored = u64::from_le_bytes(r.array::<8>()?);
        if computed != stored {
            return Err(corrupt("checksum mismatch"));
        }
        if r.read(&mut [0u8; 1])? != 0 {
            return Err(corrupt("bytes after the checksum"));
        }
        Ok(Unattached(Self {
            config,
            built_at,
            generation: built_from,
            keys,
            // Until attached.
            records: Records::Memory(Vec::new()),
            service_start,
            service_hosts,
            countries,
            services: service_postings,
            hosts: host_postings,
            value_hosts,
            place_ids,
            expiry,
            scans,
        }))
    }
}

/// An index file read and checked ([`EmbeddedIndex::read_file`]) that does not show records
/// yet.
#[derive(Debug)]
pub struct Unattached(EmbeddedIndex);

impl Unattached {
    /// The index, reading the records it shows from `snapshot`, when the file was built from
    /// store generation `generation` (which may be older than `snapshot`'s: for a base whose
    /// records written since are shadowed by a delta, [`super::LayeredIndex`], so that it
    /// never shows a record that changed); otherwise refused as stale.
    pub fn attach(
        self,
        generation: u64,
        snapshot: StoreSnapshot,
    ) -> Result<EmbeddedIndex, LoadError> {
        let mut index = self.0;
        if index.generation != generation {
            return Err(LoadError::Stale(format!(
                "built from store generation {}, the store is at {generation}",
                index.generation
            )));
        }
        index.scans.read_from(snapshot.clone());
        index.records = Records::Store(Box::new(snapshot));
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::Checksum;

    #[test]
    fn the_checksum_does_not_depend_on_how_the_bytes_are_split() {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let mut whole = Checksum::new();
        whole.update(&bytes);
        for split in [1, 3, 7, 8, 9, 500] {
            let mut parts = Checksum::new();
            for chunk in bytes.chunks(split) {
                parts.update(chunk);
            }
            assert_eq!(parts.finish(), whole.finish(), "split {split}");
        }
        let mut other = Checksum::new();
        let mut changed = bytes.clone();
        changed[999] ^= 1;
        other.update(&changed);
        assert_ne!(other.finish(), whole.finish());
    }
}

/// What a delta was built from, saved beside the index file (`scan.delta`) at each delta
/// refresh: the store generation of the base, the generation the delta reached, and the
/// keys and domain-scan names written in between. With it, a restart loads the saved base
/// and rebuilds only the delta ([`crate::live::LiveIndex::open`]) — when the store is still
/// at `generation`; otherwise the journal says nothing about the batches after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaJournal {
    /// The store generation the base (the index file) was built from.
    pub base_generation: u64,
    /// The store generation the delta was built from.
    pub generation: u64,
    /// Host-order keys of the host records written between the two, ascending.
    pub hosts: Vec<u128>,
    /// Names of the domain-scan records written between the two, ascending.
    pub names: Vec<DomainName>,
}

const JOURNAL_MAGIC: &[u8; 8] = b"PSCPDLT\0";

impl DeltaJournal {
    /// Writes the journal to `path` (through a temporary file renamed over it).
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let tmp = path.with_extension("delta-tmp");
        let file = File::create(&tmp)?;
        let mut w = Writer {
            out: BufWriter::with_capacity(1 << 16, file),
            sum: Checksum::new(),
        };
        w.write_all(JOURNAL_MAGIC)?;
        w.u32(FORMAT_VERSION)?;
        w.u64(self.base_generation)?;
        w.u64(self.generation)?;
        w.len(self.hosts.len())?;
        for k in &self.hosts {
            w.write_all(&k.to_le_bytes())?;
        }
        w.len(self.names.len())?;
        for n in &self.names {
            w.str(n.as_str())?;
        }
        let sum = w.sum.finish();
        let mut file = w.out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.write_all(&sum.to_le_bytes())?;
        drop(file);
        std::fs::rename(&tmp, path)
    }

    /// Reads what [`Self::save`] wrote.
    pub fn load(path: &Path) -> Result<Self, LoadError> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(LoadError::Missing),
            Err(e) => return Err(e.into()),
        };
        let mut r = Reader {
            input: BufReader::with_capacity(1 << 16, file),
            sum: Checksum::new(),
        };
        if &r.array::<8>()? != JOURNAL_MAGIC {
            return Err(corrupt("not a Periscope delta journal"));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(LoadError::Stale(format!(
                "format version {version}, this build reads {FORMAT_VERSION}"
            )));
        }
        let base_generation = r.u64()?;
        let generation = r.u64()?;
        let n = r.len("journal keys")?;
        let hosts = r.vec(n, |r| Ok(u128::from_le_bytes(r.array()?)))?;
        if hosts.windows(2).any(|w| w[0] >= w[1]) {
            return Err(corrupt("journal keys out of order"));
        }
        let n = r.len("journal names")?;
        let names = r.vec(n, |r| {
            let text = r.str("a journal name")?;
            DomainName::parse(&text).map_err(|_| corrupt("a journal name"))
        })?;
        let computed = r.sum.finish();
        let stored = u64::from_le_bytes(r.array::<8>()?);
        if computed != stored {
            return Err(corrupt("checksum mismatch"));
        }
        if r.read(&mut [0u8; 1])? != 0 {
            return Err(corrupt("bytes after the checksum"));
        }
        Ok(Self {
            base_generation,
            generation,
            hosts,
            names,
        })
    }
}
