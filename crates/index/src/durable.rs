//! The durable store of the embedded engine: the current host records and domain-scan records
//! as a directory of immutable sorted run files, so a batch is written as one sequential
//! append and a crash loses nothing acknowledged.
//!
//! Layout of the store directory (`DIR/scan.store`, schema version [`SCHEMA_VERSION`]):
//! - `LOCK` ([`LOCK_FILE`]): locked by the one process that has the store open.
//! - `MANIFEST` ([`MANIFEST_FILE`]): a short text file naming the schema version, the
//!   generation (the number of batches that changed something, so an index file can tell
//!   whether it was built from this state), the next run number and the runs, oldest first.
//!   It is replaced atomically (written beside, synced, renamed over, directory synced); the
//!   runs it names are the store, and any other run file is a leftover of an interrupted
//!   batch or merge, removed when the store is opened.
//! - `NNNNNNNNNNNNNNNN.run`: one run. Its records are sorted by key (hosts by [`HostKey`],
//!   which is host order, then domain scans by name); each key holds the whole current
//!   record as of that run, so the newest run holding a key has its record. Format: the magic
//!   [`RUN_MAGIC`], the encoded records ([`codec::encode_host`],
//!   [`codec::encode_domain_scan`]) back to back, the host index (per record: key, offset,
//!   length), the name index (per record: name length, name, offset, length), and a 48-byte
//!   footer (record counts, where the two indexes start, an FNV-1a checksum of the indexes,
//!   [`RUN_END`]).
//!
//! [`DurableStore::apply_batch`] reads the current record of each host and name a batch
//! touches (the newest run holding it), merges the observations by the current-observation
//! rule ([`HostRecord::apply`], [`DomainScans::apply`]), and writes the records whose bytes
//! changed as one new run: written, synced, then named in a new manifest. The batch is
//! acknowledged when the manifest is in place; a batch that fails, or a process that dies
//! before, leaves no trace of it. A store may acknowledge one behind
//! ([`DurableStore::acknowledge_one_behind`]: the run's sync and the manifest on a
//! `store-commit` thread while the next batch is merged, manifests still in batch order).
//! The batch's keys are looked up in ascending order, each run searched onward from where the
//! previous key left it (`Cursors`). Runs are merged when
//! [`FANOUT`] runs are of one tier and every newer run is of that tier or lower (a batch's run
//! is tier 0, the merge of `FANOUT` runs of tier `t` and the few newer ones is of tier
//! `t + 1`), so a store holds a few dozen runs at most and a record is rewritten about once
//! per tier. A merge writes its run past the page cache, and reads the runs merges wrote past
//! it too (`direct`: `O_DIRECT`, so the kernel copies none of their bytes, and the dirty pages
//! of merges hold no other writer back while the disk catches up). A merge runs on a thread
//! of its own while batches go on, and merges of the runs
//! after those of a merge in flight start beside it (a long merge of the largest runs holds up
//! no small one); its run is named by the manifest, in place of its inputs, at the next batch
//! after it finished (or when the store is dropped), and a batch waits for one only once
//! [`MAX_RUNS`] runs have piled up. Until
//! version 1 (one redb B-tree file, `scan.redb`) each batch rewrote pages scattered over the
//! whole key space; see `docs/benchmarks.md`. A store of version 1 is refused with
//! [`StoreError::OldFormat`], never read.
//!
//! Ingest's parsing threads may hand a batch's service observations over already merged per
//! address and encoded ([`HostEncoder`], [`EncodedHosts`]: written from the lines' views by
//! [`codec::RecordBuilder`], with the services a newer observation replaced within the
//! group set aside); [`DurableStore::apply_encoded_drain`] merges those records by the same
//! rule ([`HostRecord::merge_after`]) and writes one as it came when it is all the batch
//! holds of an address no run holds, so the stored bytes, and the counts, are those
//! `apply_batch` gives.
//!
//! The run indexes are held in memory, compact (`HostIndex`: about 8 bytes per IPv4 host
//! record per run, 20 per IPv6 one, against 28 in the file; `NameIndex`: 8 bytes and the
//! name per domain scan); a record is read with one positioned read. A batch's lookups ask
//! each run's key filters first (`bloom`: split-block Bloom filters of its host keys and of its
//! names, made at first use; a merge makes its run's) and search only the runs that may hold
//! the key.
//!
//! **Invariant:** a stored host record has had at least one counting observation applied (an
//! address seen only in failed observations is not stored). Whether it is a host *now* is
//! decided when reading, by the retention window.
//! **Boundary:** this module persists records; it builds no in-memory index. The engine
//! builds its snapshots from a [`StoreSnapshot`] and keeps it to read the records it shows.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use periscope_model::DomainName;
use periscope_model::ip_order_key;
use periscope_model::observation::{DomainScan, Observation, ScanStatus, ServiceView};

use crate::bloom::{self, Filter};
use crate::codec::{self, CodecError};
use crate::order_keys::{OrderKeys, OutOfOrder};
use crate::store::{ApplyOutcome, DomainScans, HostRecord};

mod direct;
use direct::DirectWriter;

/// The layout this build writes and the only one it opens.
pub const SCHEMA_VERSION: u64 = 2;
/// The manifest file in the store directory.
pub const MANIFEST_FILE: &str = "MANIFEST";
/// The lock file in the store directory.
pub const LOCK_FILE: &str = "LOCK";
/// The first line of a manifest.
const MANIFEST_HEADER: &str = "periscope scan store";
/// The first 8 bytes of a run file.
pub const RUN_MAGIC: &[u8; 8] = b"PSCRUN02";
/// The last 8 bytes of a run file.
pub const RUN_END: &[u8; 8] = b"PSCEND02";
/// The footer: four counts and offsets, the checksum, [`RUN_END`].
const FOOTER_LEN: u64 = 48;
/// Runs of one tier merged at once. Sixteen rather than eight: a record is rewritten once per
/// tier, and a bulk ingest writes a third fewer bytes (at a million hosts 1.9 GB instead of
/// 2.9 GB, and the kernel's copying of them into the page cache was 14% of ingest's CPU);
/// a store then holds up to twice as many runs at rest, which reads pay a binary search each.
pub const FANOUT: usize = 16;
/// A batch waits for the merge in flight once the store holds this many runs (merges run on a
/// thread of their own; see [`DurableStore::apply_batch`]).
pub const MAX_RUNS: usize = 4 * FANOUT;
/// The first bytes of a redb database file (the store format of schema version 1).
const REDB_MAGIC: &[u8] = b"redb";

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the store could not be read or written.
    #[error("the scan store failed while {during} ({})", path.display())]
    Io {
        /// What the store was doing.
        during: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Another process has the store open.
    #[error("the scan store {} is open in another process", path.display())]
    Locked {
        /// The store directory.
        path: PathBuf,
    },
    /// A run file or the manifest is not what this build wrote.
    #[error("the scan store file {} is corrupt: {reason}", path.display())]
    CorruptFile {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A stored host record does not decode, or is filed under another address.
    #[error("the stored host record {key} is corrupt: {reason}")]
    CorruptHost {
        /// Its key.
        key: HostKey,
        /// What is wrong.
        reason: String,
        /// The decoding error, when that is what is wrong.
        #[source]
        source: Option<CodecError>,
    },
    /// A stored domain-scan record does not decode, or is filed under another name.
    #[error("the stored domain scan {name:?} is corrupt: {reason}")]
    CorruptDomainScan {
        /// Its key.
        name: String,
        /// What is wrong.
        reason: String,
        /// The decoding error, when that is what is wrong.
        #[source]
        source: Option<CodecError>,
    },
    /// The store was written with another schema version.
    #[error(
        "the scan store {} has schema version {found}; this build reads version {supported} \
         (use the matching build, or ingest again into a new data directory)",
        path.display()
    )]
    VersionMismatch {
        /// The store directory.
        path: PathBuf,
        /// The version recorded in the manifest.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// A store of schema version 1 (one redb file), which this build does not read.
    #[error(
        "{} is a scan store of schema version 1 (one redb file); this build reads only \
         version {SCHEMA_VERSION}: ingest the observations again into a new data directory \
         (periscope ingest --data NEW_DIR FILE…), or keep using the previous release for it",
        path.display()
    )]
    OldFormat {
        /// The redb file.
        path: PathBuf,
    },
    /// On a store acknowledging batches one behind ([`DurableStore::acknowledge_one_behind`]),
    /// the commit of the batch before the one applied failed: neither is stored (the store is
    /// as it was before that batch, and that batch is not acknowledged).
    #[error("the commit of the batch before it failed")]
    PreviousCommit {
        /// Why the commit failed.
        #[source]
        source: Box<StoreError>,
    },
    /// The path is neither a scan store nor empty.
    #[error("{} is not a Periscope scan store: {reason}", path.display())]
    NotAStore {
        /// The path.
        path: PathBuf,
        /// What was found instead.
        reason: &'static str,
    },
}

/// Wraps an I/O error with what the store was doing and where.
fn io_failed<'a>(
    during: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        during,
        path: path.to_owned(),
        source,
    }
}

/// The key of a host record: the address's [`ip_order_key`] as 16 big-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostKey(pub [u8; 16]);

impl HostKey {
    /// The key of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        Self(ip_order_key(ip).to_be_bytes())
    }

    /// The key as the number it orders as (its [`ip_order_key`]).
    fn order(self) -> u128 {
        u128::from_be_bytes(self.0)
    }

    /// The address this key stands for (the inverse of [`ip_order_key`]).
    pub fn ip(self) -> IpAddr {
        let k = self.order();
        match u32::try_from(k) {
            Ok(v4) => IpAddr::V4(Ipv4Addr::from(v4)),
            Err(_) => IpAddr::V6(Ipv6Addr::from(k - (1 << 32))),
        }
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (key ", self.ip())?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// What a batch did, counted per observation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchSummary {
    /// Observations that became current (service observations and domain scans).
    pub applied: u64,
    /// Observations that a newer or equally old one already superseded.
    pub superseded: u64,
    /// Failed observations: they never count.
    pub ignored: u64,
    /// Host records written (changed or new).
    pub hosts_written: u64,
    /// Domain-scan records written (changed or new).
    pub domain_scans_written: u64,
}

impl BatchSummary {
    fn count(&mut self, outcome: ApplyOutcome) {
        match outcome {
            ApplyOutcome::Applied => self.applied += 1,
            ApplyOutcome::Superseded => self.superseded += 1,
            ApplyOutcome::Ignored => self.ignored += 1,
        }
    }
}

/// What batches wrote: the keys of the host records and the names of the domain-scan records
/// written (changed or new), in the order written; see [`DurableStore::apply_batch_noting`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Written {
    /// Keys of the host records written.
    pub hosts: Vec<HostKey>,
    /// Names of the domain-scan records written.
    pub domain_scans: Vec<DomainName>,
}

/// Service observations already merged and encoded into host records, as ingest's parsing
/// threads send them to the store: each group is the record ([`codec::encode_host`] bytes)
/// of a few consecutive observations of one address, with the services that a newer
/// observation of theirs replaced within the group, built by [`HostEncoder`]. The store merges groups
/// ([`DurableStore::apply_encoded_drain`]) exactly as it merges the observations they were
/// built from, and writes a group's bytes as they are when the group is all the batch holds
/// of an address the store does not hold yet (no decoding, moving or freeing of the
/// observations on the store thread).
#[derive(Debug, Default)]
pub struct EncodedHosts {
    /// The groups' records, back to back.
    bytes: Vec<u8>,
    groups: Vec<Group>,
    /// Observations in all groups.
    observations: u64,
}

/// One group of [`EncodedHosts`].
#[derive(Debug, Clone, Copy)]
struct Group {
    key: HostKey,
    /// Where its record is in `bytes` (empty when every observation failed: no record),
    /// then the services replaced within the group (`codec::decode_services`), to `end`.
    start: usize,
    earlier: usize,
    end: usize,
    /// Counting observations that became their service's current one within the group (a
    /// service of the record, or one of the earlier services).
    services: u32,
    /// Counting observations that did not (superseded whatever the store holds).
    superseded: u32,
    /// Failed observations.
    ignored: u32,
}

impl Group {
    fn observations(&self) -> u64 {
        u64::from(self.services) + u64::from(self.superseded) + u64::from(self.ignored)
    }
}

impl EncodedHosts {
    /// Groups held.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Observations in group `i`.
    pub fn group_observations(&self, i: usize) -> u64 {
        self.groups[i].observations()
    }

    /// Observations in all groups.
    pub fn observations(&self) -> u64 {
        self.observations
    }

    /// Appends group `i` of `from`.
    pub fn push_group(&mut self, from: &EncodedHosts, i: usize) {
        let g = from.groups[i];
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&from.bytes[g.start..g.end]);
        self.groups.push(Group {
            start,
            earlier: start + (g.earlier - g.start),
            end: self.bytes.len(),
            ..g
        });
        self.observations += g.observations();
    }

    /// Empties it, keeping its memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.groups.clear();
        self.observations = 0;
    }

    fn record(&self, g: &Group) -> &[u8] {
        &self.bytes[g.start..g.earlier]
    }

    fn earlier(&self, g: &Group) -> &[u8] {
        &self.bytes[g.earlier..g.end]
    }
}

/// Builds [`EncodedHosts`] from service observations in arrival order: consecutive
/// observations of one address share a group until it holds `max` observations. The
/// observations are read as views ([`ServiceView`]) and written straight into the record's
/// bytes ([`codec::RecordBuilder`]), so nothing of them is copied or kept.
#[derive(Debug)]
pub struct HostEncoder {
    record: codec::RecordBuilder,
    ignored: u32,
    max: u32,
    /// Whether the last observation pushed has the `host` of the last one added to the open
    /// record (known from the reader's `host_repeated`, never compared).
    same_host: bool,
}

impl HostEncoder {
    /// An encoder whose groups hold at most `max` observations (at least 1).
    pub fn new(max: usize) -> Self {
        Self {
            record: codec::RecordBuilder::new(),
            ignored: 0,
            max: u32::try_from(max.max(1)).unwrap_or(u32::MAX),
            same_host: false,
        }
    }

    /// Adds `obs`, closing the open group into `out` first when `obs` cannot join it; returns
    /// the index in `out` its group will have. `host_repeated`: `obs.host` equals the host of
    /// the observation pushed before it (the reader's [`LineView`] says so).
    ///
    /// [`LineView`]: periscope_model::observation::LineView
    pub fn push(
        &mut self,
        obs: &ServiceView<'_>,
        host_repeated: bool,
        out: &mut EncodedHosts,
    ) -> usize {
        let held = self.record.applied() + self.record.superseded() + self.ignored;
        if self.record.ip() != Some(obs.ip) || held >= self.max {
            self.finish(out);
            self.record.start(obs.ip);
            self.same_host = false;
        }
        let same_host = host_repeated && self.same_host;
        if obs.status == ScanStatus::Failed {
            self.ignored += 1;
            self.same_host = same_host;
        } else {
            if same_host {
                self.record.add_after_same_host(obs);
            } else {
                self.record.add(obs);
            }
            self.same_host = true;
        }
        out.groups.len()
    }

    /// Closes the open group, if any, into `out`.
    pub fn finish(&mut self, out: &mut EncodedHosts) {
        let Some(ip) = self.record.ip() else {
            return;
        };
        let start = out.bytes.len();
        let (services, superseded) = (self.record.applied(), self.record.superseded());
        let record = self.record.finish_into(&mut out.bytes);
        let group = Group {
            key: HostKey::of(ip),
            start,
            earlier: start + record,
            end: out.bytes.len(),
            services,
            superseded,
            ignored: self.ignored,
        };
        out.observations += group.observations();
        out.groups.push(group);
        self.ignored = 0;
    }
}

/// Sizes of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStats {
    /// Stored host records (addresses with a counting observation, expired or not).
    pub hosts: u64,
    /// Stored domain-scan records (one per name).
    pub domain_scans: u64,
    /// Size of the store's files (runs and manifest) in bytes.
    pub file_bytes: u64,
}

// ---------------------------------------------------------------------------------------------
// Runs.

/// Where a record is in its run file.
#[derive(Debug, Clone, Copy)]
struct Loc {
    at: u64,
    len: u32,
}

/// Where the records of one kind in a run lie: back to back, so where one ends the next
/// starts, and one offset per record is kept — its low 32 bits (a record is shorter than
/// 4 GiB, so the high half grows by at most one from one offset to the next, and the few
/// places where it does are kept apart).
#[derive(Default)]
struct Bounds {
    /// The low 32 bits of where each record starts, then of where the last one ends (empty
    /// for no records).
    low: Vec<u32>,
    /// Ascending: from the `i`-th position on, the high half is `i + 1` (none in a run file
    /// under 4 GiB).
    wraps: Vec<usize>,
}

impl Bounds {
    fn with_capacity(records: usize) -> Self {
        Self {
            low: Vec::with_capacity(records + 1),
            wraps: Vec::new(),
        }
    }

    /// Bound `at` (below `low.len()`) whole.
    fn bound(&self, at: usize) -> u64 {
        let high = self.wraps.partition_point(|from| *from <= at) as u64;
        high << 32 | u64::from(self.low[at])
    }

    /// Where the record at position `at` (below the records pushed) is.
    fn loc(&self, at: usize) -> Loc {
        let (start, end) = (self.bound(at), self.bound(at + 1));
        Loc {
            at: start,
            // `push` took the length from a `u32`.
            len: u32::try_from(end - start).unwrap_or(u32::MAX),
        }
    }

    /// Whether the record of `what` at `loc` may come next: it starts where the last one
    /// ends (any first one may); otherwise says where that is.
    fn follows(&self, loc: Loc, what: impl std::fmt::Display) -> Result<(), String> {
        match self.low.len().checked_sub(1).map(|last| self.bound(last)) {
            Some(end) if end != loc.at => Err(format!(
                "the record of {what} starts at {}, not where the previous one ends ({end})",
                loc.at
            )),
            _ => Ok(()),
        }
    }

    /// Adds the record at `loc`, which [`Self::follows`] accepted.
    fn push(&mut self, loc: Loc) {
        if self.low.is_empty() {
            self.push_bound(loc.at);
        }
        self.push_bound(loc.at + u64::from(loc.len));
    }

    /// Adds the next bound, at least the last one.
    fn push_bound(&mut self, bound: u64) {
        while (self.wraps.len() as u64) < bound >> 32 {
            self.wraps.push(self.low.len());
        }
        // The low half.
        self.low.push(bound as u32);
    }

    fn shrink_to_fit(&mut self) {
        self.low.shrink_to_fit();
        self.wraps.shrink_to_fit();
    }
}

/// A run's host index as held in memory: the keys compact ([`OrderKeys`]) and the records'
/// [`Bounds`]. About 8 bytes per IPv4 record where the file's index has 28 and a list of
/// keys and [`Loc`]s 32.
#[derive(Default)]
struct HostIndex {
    keys: OrderKeys,
    bounds: Bounds,
}

impl HostIndex {
    /// An empty index with room for `records`, of which `v4` are IPv4 hosts.
    fn with_capacity(records: usize, v4: usize) -> Self {
        Self {
            keys: OrderKeys::with_capacity(v4, records.saturating_sub(v4)),
            bounds: Bounds::with_capacity(records),
        }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// The key at position `at`.
    fn key(&self, at: usize) -> Option<HostKey> {
        Some(HostKey(self.keys.get(at)?.to_be_bytes()))
    }

    /// Where the record at position `at` (below [`Self::len`]) is.
    fn loc(&self, at: usize) -> Loc {
        self.bounds.loc(at)
    }

    /// Adds the record of `key` at `loc`, which must follow the last one added, in key order
    /// and in the file; otherwise says what is wrong.
    fn push(&mut self, key: HostKey, loc: Loc) -> Result<(), String> {
        self.bounds.follows(loc, key)?;
        self.keys
            .push(key.order())
            .map_err(|OutOfOrder| format!("its host keys are out of order at {key}"))?;
        self.bounds.push(loc);
        Ok(())
    }

    /// Every key with where its record is, in order.
    fn entries(&self) -> impl Iterator<Item = (HostKey, Loc)> + '_ {
        let keys = self.keys.iter().map(|k| HostKey(k.to_be_bytes()));
        keys.enumerate().map(|(at, key)| (key, self.loc(at)))
    }

    /// Releases the room that pushing left over.
    fn shrink_to_fit(&mut self) {
        self.keys.shrink_to_fit();
        self.bounds.shrink_to_fit();
    }

    /// The position of `key`, if the run holds it.
    fn find(&self, key: HostKey) -> Option<usize> {
        self.keys.binary_search(key.order()).ok()
    }

    /// The first position at or after `from` whose key is not below `key`
    /// ([`OrderKeys::gallop`]).
    fn gallop(&self, from: usize, key: HostKey) -> usize {
        self.keys.gallop(from, key.order())
    }
}

/// A run's name index as held in memory: the names, ascending, in one buffer with where
/// each ends, and the records' [`Bounds`] — about 8 bytes and the name's own per domain
/// scan, where a list of names and [`Loc`]s held 32 and an allocation per name.
#[derive(Default)]
struct NameIndex {
    text: String,
    /// Name `i` is `text[ends[i - 1]..ends[i]]` (`ends[-1]` = 0).
    ends: Vec<u32>,
    bounds: Bounds,
}

impl NameIndex {
    /// An empty index with room for `names` names of `bytes` bytes in all.
    fn with_capacity(names: usize, bytes: usize) -> Self {
        Self {
            text: String::with_capacity(bytes),
            ends: Vec::with_capacity(names),
            bounds: Bounds::with_capacity(names),
        }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The name at position `at`.
    fn get(&self, at: usize) -> Option<&str> {
        let end = *self.ends.get(at)? as usize;
        let start = at
            .checked_sub(1)
            .and_then(|p| self.ends.get(p))
            .map_or(0, |e| *e as usize);
        self.text.get(start..end)
    }

    /// Where the record at position `at` (below [`Self::len`]) is.
    fn loc(&self, at: usize) -> Loc {
        self.bounds.loc(at)
    }

    /// The position of `name`, if the run holds it.
    fn find(&self, name: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = low + (high - low) / 2;
            match self.get(mid)?.cmp(name) {
                std::cmp::Ordering::Less => low = mid + 1,
                std::cmp::Ordering::Greater => high = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Adds the record of `name` at `loc`, which must follow the last one added, in name
    /// order and in the file; otherwise says what is wrong.
    fn push(&mut self, name: &str, loc: Loc) -> Result<(), String> {
        if self
            .len()
            .checked_sub(1)
            .and_then(|last| self.get(last))
            .is_some_and(|last| last >= name)
        {
            return Err(format!("its names are out of order at {name:?}"));
        }
        let end = u32::try_from(self.text.len() + name.len())
            .map_err(|_| format!("its names pass 4 GiB at {name:?}"))?;
        self.bounds.follows(loc, format_args!("{name:?}"))?;
        self.bounds.push(loc);
        self.text.push_str(name);
        self.ends.push(end);
        Ok(())
    }

    /// Every name with where its record is, in order.
    fn entries(&self) -> impl Iterator<Item = (&str, Loc)> + '_ {
        let mut start = 0;
        self.ends.iter().enumerate().map(move |(at, end)| {
            let name = &self.text[start..*end as usize];
            start = *end as usize;
            (name, self.loc(at))
        })
    }

    /// Releases the room that pushing left over.
    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.ends.shrink_to_fit();
        self.bounds.shrink_to_fit();
    }
}

/// One immutable run file, with its indexes in memory.
struct Run {
    id: u64,
    tier: u32,
    path: PathBuf,
    file: File,
    bytes: u64,
    hosts: HostIndex,
    names: NameIndex,
    /// The filters of the run's host keys and names, made at their first use
    /// ([`Self::host_filter`], [`Self::name_filter`]).
    host_filter: OnceLock<Filter>,
    name_filter: OnceLock<Filter>,
}

impl Run {
    fn file_name(id: u64) -> String {
        format!("{id:016x}.run")
    }

    fn find_host(&self, key: HostKey) -> Option<Loc> {
        Some(self.hosts.loc(self.hosts.find(key)?))
    }

    fn find_name(&self, name: &str) -> Option<Loc> {
        Some(self.names.loc(self.names.find(name)?))
    }

    /// The filter of the run's host keys (made at the first call): a key it says is absent
    /// is not in the run.
    fn host_filter(&self) -> &Filter {
        self.host_filter.get_or_init(|| {
            let keys = self.hosts.keys.iter();
            Filter::of(self.hosts.len(), keys.map(bloom::host_hash))
        })
    }

    /// The filter of the run's names (made at the first call).
    fn name_filter(&self) -> &Filter {
        self.name_filter.get_or_init(|| {
            let names = self.names.entries().map(|(name, _)| bloom::name_hash(name));
            Filter::of(self.names.len(), names)
        })
    }

    /// The bytes at `loc`, into `buf`.
    fn read(&self, loc: Loc, buf: &mut Vec<u8>) -> Result<(), StoreError> {
        buf.resize(loc.len as usize, 0);
        self.file
            .read_exact_at(buf, loc.at)
            .map_err(io_failed("reading a record", &self.path))
    }

    /// Opens and checks the run `id` in `dir`, loading its indexes.
    fn load(dir: &Path, id: u64, tier: u32) -> Result<Self, StoreError> {
        let path = dir.join(Self::file_name(id));
        let file = File::open(&path).map_err(io_failed("opening a run", &path))?;
        let bytes = file
            .metadata()
            .map_err(io_failed("reading the size of a run", &path))?
            .len();
        let corrupt = |reason: String| StoreError::CorruptFile {
            path: path.clone(),
            reason,
        };
        if bytes < RUN_MAGIC.len() as u64 + FOOTER_LEN {
            return Err(corrupt(format!("{bytes} bytes is too short for a run")));
        }
        let mut head = [0u8; 8];
        file.read_exact_at(&mut head, 0)
            .map_err(io_failed("reading a run", &path))?;
        if &head != RUN_MAGIC {
            return Err(corrupt("it does not start as a run file".into()));
        }
        let mut footer = [0u8; FOOTER_LEN as usize];
        file.read_exact_at(&mut footer, bytes - FOOTER_LEN)
            .map_err(io_failed("reading a run", &path))?;
        let word =
            |i: usize| u64::from_le_bytes(footer[i * 8..i * 8 + 8].try_into().unwrap_or_default());
        let (hosts, names, host_index_at, name_index_at, checksum) =
            (word(0), word(1), word(2), word(3), word(4));
        if &footer[40..] != RUN_END {
            return Err(corrupt("it does not end as a complete run".into()));
        }
        let index_end = bytes - FOOTER_LEN;
        if !(8 <= host_index_at && host_index_at <= name_index_at && name_index_at <= index_end) {
            return Err(corrupt("its footer points outside the file".into()));
        }
        let mut index = vec![0u8; (index_end - host_index_at) as usize];
        file.read_exact_at(&mut index, host_index_at)
            .map_err(io_failed("reading a run's index", &path))?;
        if fnv1a(&index) != checksum {
            return Err(corrupt("its index does not match its checksum".into()));
        }
        let (host_part, name_part) = index.split_at((name_index_at - host_index_at) as usize);
        let check_loc = |loc: Loc| {
            if loc.at < 8 || loc.at + u64::from(loc.len) > host_index_at {
                Err(corrupt(format!(
                    "a record at {} of {} bytes lies outside the records",
                    loc.at, loc.len
                )))
            } else {
                Ok(loc)
            }
        };
        if host_part.len() as u64 != hosts * 28 {
            return Err(corrupt(format!(
                "its host index has {} bytes for {hosts} records",
                host_part.len()
            )));
        }
        // The IPv4 keys (the first 12 of 16 bytes zero) come first.
        let v4 = host_part
            .chunks_exact(28)
            .take_while(|entry| entry[..12] == [0; 12])
            .count();
        let mut host_index = HostIndex::with_capacity(hosts as usize, v4);
        for entry in host_part.chunks_exact(28) {
            let key = HostKey(entry[..16].try_into().unwrap_or_default());
            let loc = Loc {
                at: u64::from_le_bytes(entry[16..24].try_into().unwrap_or_default()),
                len: u32::from_le_bytes(entry[24..28].try_into().unwrap_or_default()),
            };
            host_index.push(key, check_loc(loc)?).map_err(corrupt)?;
        }
        // Each entry is a name and 14 bytes.
        let text_bytes = name_part.len().saturating_sub(names as usize * 14);
        let mut name_index = NameIndex::with_capacity(names as usize, text_bytes);
        let mut rest = name_part;
        for _ in 0..names {
            let truncated = || corrupt("its name index is truncated".into());
            let len = usize::from(u16::from_le_bytes(
                rest.get(..2)
                    .ok_or_else(truncated)?
                    .try_into()
                    .unwrap_or_default(),
            ));
            let entry = rest.get(2..2 + len + 12).ok_or_else(truncated)?;
            let name = std::str::from_utf8(&entry[..len])
                .map_err(|_| corrupt("a name in its index is not UTF-8".into()))?;
            let loc = Loc {
                at: u64::from_le_bytes(entry[len..len + 8].try_into().unwrap_or_default()),
                len: u32::from_le_bytes(entry[len + 8..].try_into().unwrap_or_default()),
            };
            name_index.push(name, check_loc(loc)?).map_err(corrupt)?;
            rest = &rest[2 + len + 12..];
        }
        if !rest.is_empty() {
            return Err(corrupt("its name index is longer than its names".into()));
        }
        Ok(Self {
            id,
            tier,
            path,
            file,
            bytes,
            hosts: host_index,
            names: name_index,
            host_filter: OnceLock::new(),
            name_filter: OnceLock::new(),
        })
    }
}

/// FNV-1a, 64 bits: the checksum of a run's indexes (and the start of a name's filter hash,
/// [`bloom::name_hash`]).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Writes a run file: host records in key order, then domain scans in name order, then
/// [`Self::finish`].
struct RunWriter {
    id: u64,
    path: PathBuf,
    out: DirectWriter,
    at: u64,
    hosts: HostIndex,
    names: NameIndex,
}

/// The run a batch writes, created at its first record (a batch that changes nothing writes
/// none).
fn opened<'a>(
    out: &'a mut Option<RunWriter>,
    dir: &Path,
    id: u64,
) -> Result<&'a mut RunWriter, StoreError> {
    let writer = match out.take() {
        Some(writer) => writer,
        None => RunWriter::create(dir, id, false)?,
    };
    Ok(out.insert(writer))
}

impl RunWriter {
    /// Creates the run `id` in `dir`, written past the page cache if `direct` (see
    /// [`direct`]).
    fn create(dir: &Path, id: u64, direct: bool) -> Result<Self, StoreError> {
        let path = dir.join(Run::file_name(id));
        let mut out =
            DirectWriter::create(&path, direct).map_err(io_failed("creating a run", &path))?;
        out.write_all(RUN_MAGIC)
            .map_err(io_failed("writing a run", &path))?;
        Ok(Self {
            id,
            path,
            out,
            at: RUN_MAGIC.len() as u64,
            hosts: HostIndex::default(),
            names: NameIndex::default(),
        })
    }

    fn value(&mut self, bytes: &[u8]) -> Result<Loc, StoreError> {
        self.out
            .write_all(bytes)
            .map_err(io_failed("writing a run", &self.path))?;
        let len = u32::try_from(bytes.len()).map_err(|_| StoreError::CorruptFile {
            path: self.path.clone(),
            reason: format!("a record of {} bytes is too large", bytes.len()),
        })?;
        let loc = Loc { at: self.at, len };
        self.at += u64::from(len);
        Ok(loc)
    }

    /// Adds a host record; keys come in ascending order.
    fn host(&mut self, key: HostKey, bytes: &[u8]) -> Result<(), StoreError> {
        let loc = self.value(bytes)?;
        self.hosts
            .push(key, loc)
            .map_err(|reason| StoreError::CorruptFile {
                path: self.path.clone(),
                reason,
            })
    }

    /// Adds a domain scan; names come in ascending order, after every host.
    fn name(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let loc = self.value(bytes)?;
        self.names
            .push(name, loc)
            .map_err(|reason| StoreError::CorruptFile {
                path: self.path.clone(),
                reason,
            })
    }

    /// Writes the indexes and footer, syncs the file when `sync` says so (a batch's run
    /// committed one behind is synced by its commit, see [`Committing`]), and opens it as a
    /// run of `tier`.
    fn finish(mut self, tier: u32, sync: Syncing) -> Result<Run, StoreError> {
        let mut index = Vec::with_capacity(self.hosts.len() * 28 + self.names.len() * 40);
        for (key, loc) in self.hosts.entries() {
            index.extend_from_slice(&key.0);
            index.extend_from_slice(&loc.at.to_le_bytes());
            index.extend_from_slice(&loc.len.to_le_bytes());
        }
        let name_index_at = self.at + index.len() as u64;
        for (name, loc) in self.names.entries() {
            let len = u16::try_from(name.len()).map_err(|_| StoreError::CorruptFile {
                path: self.path.clone(),
                reason: format!("the name {name:?} is too long for a run"),
            })?;
            index.extend_from_slice(&len.to_le_bytes());
            index.extend_from_slice(name.as_bytes());
            index.extend_from_slice(&loc.at.to_le_bytes());
            index.extend_from_slice(&loc.len.to_le_bytes());
        }
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        for word in [
            self.hosts.len() as u64,
            self.names.len() as u64,
            self.at,
            name_index_at,
            fnv1a(&index),
        ] {
            footer.extend_from_slice(&word.to_le_bytes());
        }
        footer.extend_from_slice(RUN_END);
        let failed = io_failed("writing a run", &self.path);
        self.out.write_all(&index).map_err(failed)?;
        self.out
            .write_all(&footer)
            .map_err(io_failed("writing a run", &self.path))?;
        let file = self
            .out
            .finish()
            .map_err(io_failed("writing a run", &self.path))?;
        if sync == Syncing::Now {
            file.sync_all()
                .map_err(io_failed("syncing a run", &self.path))?;
        }
        let bytes = self.at + index.len() as u64 + FOOTER_LEN;
        let mut hosts = self.hosts;
        hosts.shrink_to_fit();
        let mut names = self.names;
        names.shrink_to_fit();
        Ok(Run {
            id: self.id,
            tier,
            path: self.path,
            file,
            bytes,
            hosts,
            names,
            host_filter: OnceLock::new(),
            name_filter: OnceLock::new(),
        })
    }
}

/// Reads a run's records in file order, so a walk in key order reads each run sequentially.
enum Window {
    /// Through the page cache, [`Window::SIZE`] bytes at a time: the bytes read, and the file
    /// offset of the first.
    Cached { start: u64, buf: Vec<u8> },
    /// Past the page cache, a chunk ahead of the walk (see [`direct`]).
    Direct(DirectWindow),
}

/// A run read past the page cache: the chunks read ahead of the walk.
struct DirectWindow {
    /// The run, opened for direct reads.
    file: File,
    /// The chunks read ahead ([`direct::Ahead`]), and the chunk the walk is in.
    ahead: Option<(direct::Ahead, direct::Chunk)>,
    /// A record that spans chunks, copied whole.
    spill: Vec<u8>,
}

impl Window {
    /// How many bytes a window reads at once (a multiple of the direct reads' alignment).
    const SIZE: usize = 1 << 20;

    /// A window reading through the page cache.
    fn new() -> Self {
        Self::Cached {
            start: 0,
            buf: Vec::new(),
        }
    }

    /// A window reading `run` past the page cache where its filesystem allows (a walk over a
    /// run that a merge wrote past it: see [`direct`]).
    fn direct(run: &Run) -> Result<Self, StoreError> {
        let file =
            direct::open_for_reading(&run.path).map_err(io_failed("opening a run", &run.path))?;
        Ok(match file {
            Some(file) => Self::Direct(DirectWindow {
                file,
                ahead: None,
                spill: Vec::new(),
            }),
            None => Self::new(),
        })
    }

    /// A window for each of `runs`, for a walk over them all in key order (a merge, an index
    /// build): a run a merge wrote is read past the page cache as it was written (it is not
    /// there, and reading it through the cache would cost a copy and the cache's bookkeeping
    /// of every page: at 10M hosts 19 s of a 125 s first build), a chunk ahead of the walk; a
    /// batch's run through the cache (whose own read-ahead keeps ahead of the walk).
    fn walking(runs: &[Arc<Run>]) -> Result<Vec<Self>, StoreError> {
        (runs.iter())
            .map(|run| match run.tier {
                0 => Ok(Self::new()),
                _ => Self::direct(run),
            })
            .collect()
    }

    fn get<'a>(&'a mut self, run: &Run, loc: Loc) -> Result<&'a [u8], StoreError> {
        if let Self::Direct(direct) = self {
            match direct.bring_to(run.bytes, loc) {
                Ok(()) => {}
                // A filesystem that opens direct but refuses the read: through the cache.
                Err(e) if direct::refused(&e) => *self = Self::new(),
                Err(e) => return Err(io_failed("reading a run", &run.path)(e)),
            }
        }
        let (start, buf) = match self {
            Self::Direct(direct) => return Ok(direct.record(loc)),
            Self::Cached { start, buf } => (start, buf),
        };
        let end = loc.at + u64::from(loc.len);
        if loc.at < *start || end > *start + buf.len() as u64 {
            let want = (loc.len as usize).max(Self::SIZE);
            let available = (run.bytes - loc.at) as usize;
            buf.resize(want.min(available), 0);
            run.file
                .read_exact_at(buf, loc.at)
                .map_err(io_failed("reading a run", &run.path))?;
            *start = loc.at;
        }
        let from = (loc.at - *start) as usize;
        Ok(&buf[from..from + loc.len as usize])
    }
}

impl DirectWindow {
    /// Brings the chunks to the record at `loc` of a run of `end` bytes: after it, the record
    /// is in the chunk taken, or (when it spans chunks) in `spill`.
    fn bring_to(&mut self, end: u64, loc: Loc) -> io::Result<()> {
        let (at, len) = (loc.at, loc.len as usize);
        // A walk goes forward. Behind the chunk taken, or past the one read ahead of it (over
        // records a newer run holds, or a sample's stride), reading starts again at `at`.
        let again = (self.ahead.as_ref())
            .is_none_or(|(_, chunk)| at < chunk.at || at >= chunk.end() + Window::SIZE as u64);
        if again {
            // Dropped first: its thread ends rather than read on beside the new one.
            self.ahead = None;
            let ahead = direct::Ahead::start(&self.file, at, end, Window::SIZE)?;
            let chunk = ahead.next()?;
            self.ahead = Some((ahead, chunk));
        }
        let (ahead, chunk) = self.ahead.as_mut().expect("started");
        while at >= chunk.end() {
            ahead.recycle(std::mem::replace(chunk, ahead.next()?));
        }
        if at + len as u64 <= chunk.end() {
            return Ok(());
        }
        self.spill.clear();
        self.spill
            .extend_from_slice(&chunk.bytes()[(at - chunk.at) as usize..]);
        while self.spill.len() < len {
            ahead.recycle(std::mem::replace(chunk, ahead.next()?));
            let bytes = chunk.bytes();
            let more = (len - self.spill.len()).min(bytes.len());
            self.spill.extend_from_slice(&bytes[..more]);
        }
        Ok(())
    }

    /// The bytes of the record at `loc`, once [`Self::bring_to`] it: in the chunk taken when
    /// they are all there, else in `spill` (the chunk taken then starts after the record).
    fn record(&self, loc: Loc) -> &[u8] {
        let (_, chunk) = self.ahead.as_ref().expect("brought to the record");
        if loc.at >= chunk.at && loc.at + u64::from(loc.len) <= chunk.end() {
            let from = (loc.at - chunk.at) as usize;
            &chunk.bytes()[from..from + loc.len as usize]
        } else {
            &self.spill
        }
    }
}

/// One step of a walk over sorted key lists (one per run, oldest first; `key(run, at)` is
/// the key at position `at` of a run's list) in key order: the newest run holding the
/// smallest key not yet passed, and the key's position there; every list's position is moved
/// past that key.
fn newest_next<K: Ord>(
    pos: &mut [usize],
    key: impl Fn(usize, usize) -> Option<K>,
) -> Option<(usize, usize)> {
    let mut best: Option<(usize, K)> = None;
    for (run, at) in pos.iter().enumerate() {
        if let Some(k) = key(run, *at) {
            // `<=`: among equal keys the later (newer) run wins.
            if best.as_ref().is_none_or(|(_, b)| k <= *b) {
                best = Some((run, k));
            }
        }
    }
    let (run, smallest) = best?;
    let found = pos[run];
    for (r, at) in pos.iter_mut().enumerate() {
        if key(r, *at).as_ref() == Some(&smallest) {
            *at += 1;
        }
    }
    Some((run, found))
}

/// [`newest_next`] as an iterator over `runs` lists.
struct Newest<F> {
    key: F,
    pos: Vec<usize>,
}

impl<K: Ord, F: Fn(usize, usize) -> Option<K>> Newest<F> {
    fn new(runs: usize, key: F) -> Self {
        Self {
            key,
            pos: vec![0; runs],
        }
    }
}

impl<K: Ord, F: Fn(usize, usize) -> Option<K>> Iterator for Newest<F> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        newest_next(&mut self.pos, &self.key)
    }
}

/// The host key at position `at` of run `r` of `runs`: the lists [`newest_next`] walks.
fn host_key(runs: &[Arc<Run>]) -> impl Fn(usize, usize) -> Option<HostKey> + '_ {
    |r, at| runs[r].hosts.key(at)
}

/// The walk in key order over the host records of `runs` ([`Newest`]).
fn newest_hosts(runs: &[Arc<Run>]) -> Newest<impl Fn(usize, usize) -> Option<HostKey> + '_> {
    Newest::new(runs.len(), host_key(runs))
}

/// The walk in name order over the domain scans of `runs` ([`Newest`]).
fn newest_names<'r>(runs: &'r [Arc<Run>]) -> Newest<impl Fn(usize, usize) -> Option<&'r str>> {
    Newest::new(runs.len(), |r, at| runs[r].names.get(at))
}

// ---------------------------------------------------------------------------------------------
// The store.

/// Looks up ascending host keys in the runs of a version: per run, where the previous key
/// left off, so each lookup gallops forward over the keys between the two (a few steps in
/// memory near the last one) instead of a binary search of the whole index. A batch's
/// addresses are spread over the key space, so most lookups in a large run are misses that
/// a whole-index search pays for in cache misses at every level.
///
/// The runs' key filters are asked first, for all the batch's keys at once, run by run
/// ([`Self::new`]): one filter's probes do not depend on each other, so the processor has
/// many of their cache misses in flight at a time, where asking each key's runs in turn
/// (stopping at the first that holds it) waited for them one by one (at 10 million hosts the
/// probes were 30% of the store thread's time).
struct Cursors {
    /// Per run (as in the version), the position of the first key not below the last key
    /// looked up in it.
    at: Vec<usize>,
    /// The keys whose filter answers are known, ascending, and the next one to be looked up.
    keys: Vec<HostKey>,
    next: usize,
    /// Bit `k` of run `r`'s row (`words` words from `r * words`): whether run `r`'s filter
    /// may hold `keys[k]`.
    may: Vec<u64>,
    words: usize,
}

impl Cursors {
    /// Cursors at the start of every run, with the filters' answers for `keys` (ascending,
    /// distinct: the keys the lookups will ask, in their order).
    fn new(runs: &[Arc<Run>], keys: Vec<HostKey>) -> Self {
        debug_assert!(keys.is_sorted() && keys.windows(2).all(|w| w[0] != w[1]));
        let hashes: Vec<u64> = keys.iter().map(|k| bloom::host_hash(k.order())).collect();
        let words = keys.len().div_ceil(64);
        let mut may = vec![0u64; words * runs.len()];
        for (run, row) in runs.iter().zip(may.chunks_mut(words.max(1))) {
            let filter = run.host_filter();
            for (word, hashes) in row.iter_mut().zip(hashes.chunks(64)) {
                for (bit, &hash) in hashes.iter().enumerate() {
                    *word |= u64::from(filter.may_contain(hash)) << bit;
                }
            }
        }
        Self {
            at: vec![0; runs.len()],
            keys,
            next: 0,
            may,
            words,
        }
    }

    /// [`Version::newest_host`] for a key not below any key asked before. A run whose filter
    /// says the key is absent is passed over, its position left where it was (the next
    /// lookup gallops on from there). The filters' answers are those [`Self::new`] found; a
    /// key it was not given asks the filters itself.
    fn newest_host<'r>(&mut self, runs: &'r [Arc<Run>], key: HostKey) -> Option<(&'r Run, Loc)> {
        while self.keys.get(self.next).is_some_and(|k| *k < key) {
            self.next += 1;
        }
        let known = (self.keys.get(self.next) == Some(&key)).then_some(self.next);
        for (r, run) in runs.iter().enumerate().rev() {
            let may_hold = match known {
                Some(k) => self.may[r * self.words + k / 64] >> (k % 64) & 1 == 1,
                None => run.host_filter().may_contain(bloom::host_hash(key.order())),
            };
            if !may_hold {
                continue;
            }
            let at = &mut self.at[r];
            *at = run.hosts.gallop(*at, key);
            if run.hosts.key(*at) == Some(key) {
                return Some((run, run.hosts.loc(*at)));
            }
        }
        None
    }
}

/// One state of the store: the runs (oldest first) and the generation.
struct Version {
    generation: u64,
    runs: Vec<Arc<Run>>,
}

impl Version {
    fn newest_host(&self, key: HostKey) -> Option<(&Run, Loc)> {
        self.runs
            .iter()
            .rev()
            .find_map(|run| run.find_host(key).map(|loc| (&**run, loc)))
    }

    fn newest_name(&self, name: &str) -> Option<(&Run, Loc)> {
        let hash = bloom::name_hash(name);
        self.runs
            .iter()
            .rev()
            .filter(|run| run.name_filter().may_contain(hash))
            .find_map(|run| run.find_name(name).map(|loc| (&**run, loc)))
    }

    fn host(&self, key: HostKey, buf: &mut Vec<u8>) -> Result<Option<HostRecord>, StoreError> {
        let Some((run, loc)) = self.newest_host(key) else {
            return Ok(None);
        };
        run.read(loc, buf)?;
        decode_stored_host(key, buf).map(Some)
    }

    fn domain_scan(&self, name: &str, buf: &mut Vec<u8>) -> Result<Option<DomainScan>, StoreError> {
        let Some((run, loc)) = self.newest_name(name) else {
            return Ok(None);
        };
        run.read(loc, buf)?;
        decode_stored_scan(name, buf).map(Some)
    }
}

/// The scan store: host records and domain-scan records in a directory of sorted runs.
pub struct DurableStore {
    dir: PathBuf,
    /// Held (locked) while the store is open.
    _lock: File,
    /// The state batches are applied to: the last durable one, or on a store acknowledging
    /// one behind, the state with the batch whose commit is in flight.
    current: Arc<Version>,
    next_run: u64,
    /// Whether a batch returns once written, its commit going on beside the next batch (see
    /// [`Self::acknowledge_one_behind`]), rather than once durable.
    behind: bool,
    /// The commit in flight of the newest batch, on a store acknowledging one behind.
    committing: Option<Committing>,
    /// The merges of runs in flight, oldest first, each over runs after the previous one's.
    merging: Vec<Merging>,
    /// How long batches have waited for a merge in flight (see [`Self::merge_waits`]).
    merge_waits: Duration,
}

impl fmt::Debug for DurableStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl DurableStore {
    /// Opens the store directory `path`, creating it when missing or empty.
    ///
    /// A new store records [`SCHEMA_VERSION`]; an existing one must carry it. A store of
    /// schema version 1 (a redb file at `path`, or beside it with the extension `redb`) is
    /// refused with [`StoreError::OldFormat`]. The store is locked for this process while
    /// open.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let lock = Self::lock(path)?;
        Self::load(path, lock)
    }

    /// [`Self::open`], running `alongside` on a second thread once the store is locked, while
    /// its runs load: a start reads its index file so. `alongside` runs only when the store
    /// was locked, and is waited for whether the runs then load or not.
    pub fn open_alongside<T: Send>(
        path: &Path,
        alongside: impl FnOnce() -> T + Send,
    ) -> Result<(Self, T), StoreError> {
        let lock = Self::lock(path)?;
        std::thread::scope(|scope| {
            let beside = scope.spawn(alongside);
            let store = Self::load(path, lock);
            let beside = beside
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            store.map(|store| (store, beside))
        })
    }

    /// Creates the store directory when missing and locks it for this process; the lock is
    /// the returned file's. A store of schema version 1 is refused first.
    fn lock(path: &Path) -> Result<File, StoreError> {
        refuse_old_format(path)?;
        fs::create_dir_all(path).map_err(io_failed("creating the store directory", path))?;
        let lock_path = path.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io_failed("opening the lock file", &lock_path))?;
        lock.try_lock().map_err(|e| match e {
            fs::TryLockError::WouldBlock => StoreError::Locked {
                path: path.to_owned(),
            },
            fs::TryLockError::Error(source) => StoreError::Io {
                during: "locking the store",
                path: lock_path.clone(),
                source,
            },
        })?;
        Ok(lock)
    }

    /// Reads the manifest (writing one for a new store) and loads its runs, the store
    /// locked by `lock`.
    fn load(path: &Path, lock: File) -> Result<Self, StoreError> {
        let manifest_path = path.join(MANIFEST_FILE);
        let manifest = match fs::read_to_string(&manifest_path) {
            Ok(text) => Manifest::parse(&text, path)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let foreign = fs::read_dir(path)
                    .map_err(io_failed("listing the store directory", path))?
                    .filter_map(Result::ok)
                    .any(|entry| {
                        entry.file_name() != LOCK_FILE && entry.file_name() != MANIFEST_TMP
                    });
                if foreign {
                    return Err(StoreError::NotAStore {
                        path: path.to_owned(),
                        reason: "the directory holds files but no manifest",
                    });
                }
                let fresh = Manifest {
                    generation: 0,
                    next_run: 1,
                    runs: Vec::new(),
                };
                fresh.write(path)?;
                fresh
            }
            Err(e) => return Err(io_failed("reading the manifest", &manifest_path)(e)),
        };
        let runs = manifest
            .runs
            .iter()
            .map(|&(id, tier)| Run::load(path, id, tier).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        remove_leftovers(path, &manifest)?;
        Ok(Self {
            dir: path.to_owned(),
            _lock: lock,
            current: Arc::new(Version {
                generation: manifest.generation,
                runs,
            }),
            next_run: manifest.next_run,
            behind: false,
            committing: None,
            merging: Vec::new(),
            merge_waits: Duration::ZERO,
        })
    }

    /// The store directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Acknowledges batches one behind from now on: an `apply_*` method returns once the
    /// batch's run is written (to the page cache) and the batch before it is durable, and the
    /// batch's commit (its run synced, then a manifest naming it written as every manifest is)
    /// goes on, on a thread of its own, while the caller prepares and applies the next batch;
    /// [`Self::settle`] waits for it. A bulk ingest, whose batches come one after another,
    /// thus waits on the disk's syncs only when they take longer than a batch's work.
    ///
    /// The guarantees are those of a batch at a time, one batch later: the batch whose commit
    /// is in flight is read by the next batch (and by [`Self::snapshot`]) but survives a crash
    /// only once acknowledged; manifests are written in batch order, the next one only after
    /// the previous commit finished, so a killed process leaves the state of some
    /// acknowledged-or-later batch, never a gap; a batch whose previous commit failed is not
    /// applied ([`StoreError::PreviousCommit`]), and the store is then as it was before the
    /// failed batch. Runs are merged only once committed (a merge starts after the commit in
    /// flight).
    pub fn acknowledge_one_behind(&mut self) {
        self.behind = true;
    }

    /// Waits for the commit in flight of a store acknowledging one behind, if any: once this
    /// returns `Ok`, every batch applied is durable. When the commit failed, the store is
    /// taken back to the state before that batch and its error returned.
    pub fn settle(&mut self) -> Result<(), StoreError> {
        let Some(Committing { before, handle }) = self.committing.take() else {
            return Ok(());
        };
        let committed = handle.join().unwrap_or_else(|_| {
            Err(StoreError::Io {
                during: "committing a batch",
                path: self.dir.clone(),
                source: io::Error::other("the commit thread panicked"),
            })
        });
        if committed.is_err() {
            self.current = before;
        }
        committed
    }

    /// [`Self::settle`] before the store's state changes again: a failure is the previous
    /// batch's ([`StoreError::PreviousCommit`]).
    fn settle_previous(&mut self) -> Result<(), StoreError> {
        self.settle().map_err(|e| StoreError::PreviousCommit {
            source: Box::new(e),
        })
    }

    /// Makes `version`, whose newest run is the batch's and not yet synced, the state the
    /// next batch is applied to, once the previous commit finished, and starts its commit
    /// (see [`Self::acknowledge_one_behind`]).
    fn commit_behind(&mut self, version: Version, next_run: u64) -> Result<(), StoreError> {
        self.settle_previous()?;
        let run = Arc::clone(
            version
                .runs
                .last()
                .expect("a batch's version holds its run"),
        );
        let manifest = Manifest::of(&version, next_run);
        let dir = self.dir.clone();
        let handle = std::thread::Builder::new()
            .name("store-commit".into())
            .spawn(move || {
                run.file
                    .sync_all()
                    .map_err(io_failed("syncing a run", &run.path))?;
                manifest.write(&dir)
            })
            .map_err(io_failed("starting the commit thread", &self.dir))?;
        let before = std::mem::replace(&mut self.current, Arc::new(version));
        self.committing = Some(Committing { before, handle });
        self.next_run = next_run;
        Ok(())
    }

    /// Merges a batch of observations and returns what it did once the batch is durable (its
    /// run synced and named in the synced manifest) — or, on a store acknowledging one behind
    /// ([`Self::acknowledge_one_behind`]), once its run is written and every batch before it
    /// is durable. The same holds for every `apply_*` method.
    ///
    /// Observations are merged by the current-observation rule, in the order given within
    /// each host and name; the outcome does not depend on that order, nor on the order of
    /// batches. On an error nothing of the batch is stored. A corrupt stored record touched
    /// by the batch is an error ([`StoreError::CorruptHost`]): the batch is refused rather
    /// than the record overwritten.
    pub fn apply_batch(
        &mut self,
        observations: &[Observation],
    ) -> Result<BatchSummary, StoreError> {
        let mut slots: Vec<Option<Observation>> = observations.iter().cloned().map(Some).collect();
        self.apply_all(&mut slots, &mut Written::default())
    }

    /// [`Self::apply_batch`], adding to `written` the keys of the host records and the names
    /// of the domain-scan records it wrote (once the batch is durable; on an error `written`
    /// is as it was).
    pub fn apply_batch_noting(
        &mut self,
        observations: &[Observation],
        written: &mut Written,
    ) -> Result<BatchSummary, StoreError> {
        let mut noted = Written::default();
        let mut slots: Vec<Option<Observation>> = observations.iter().cloned().map(Some).collect();
        let summary = self.apply_all(&mut slots, &mut noted)?;
        written.hosts.append(&mut noted.hosts);
        written.domain_scans.append(&mut noted.domain_scans);
        Ok(summary)
    }

    /// [`Self::apply_batch`] for observations the caller gives up: `observations` is left
    /// empty (its capacity kept for the next batch) and their parts are moved into the
    /// records rather than copied.
    pub fn apply_batch_drain(
        &mut self,
        observations: &mut Vec<Observation>,
    ) -> Result<BatchSummary, StoreError> {
        // The batch's own vector holds the observations while they are merged, each position
        // emptied as its observation is moved into a record: no second vector of whole
        // observations (tens of MB for a large batch, fresh pages every batch) is filled.
        // Collecting in place keeps the allocation (`Option<Observation>` is as large).
        let mut slots: Vec<Option<Observation>> =
            std::mem::take(observations).into_iter().map(Some).collect();
        let result = self.apply_all(&mut slots, &mut Written::default());
        slots.clear();
        #[allow(
            clippy::filter_map_identity,
            reason = "`filter_map` collects in place, `flatten` does not: the capacity is kept"
        )]
        let emptied: Vec<Observation> = slots.into_iter().filter_map(|slot| slot).collect();
        *observations = emptied;
        result
    }

    /// Merges the observations of `slots` (each taken out of its slot as it is merged);
    /// notes in `written` what it wrote (meaningful once it is durable).
    fn apply_all(
        &mut self,
        slots: &mut [Option<Observation>],
        written: &mut Written,
    ) -> Result<BatchSummary, StoreError> {
        self.apply_all_with(slots, None, written)
    }

    /// [`Self::apply_batch_drain`] for a batch whose service observations came encoded
    /// ([`EncodedHosts`], built by [`HostEncoder`]): `hosts` is left empty, and so is
    /// `observations` (its capacity kept). Service observations among `observations` are
    /// encoded here and count as arriving after the groups. The records stored, and the
    /// summary, are those [`Self::apply_batch`] gives for the observations the groups were
    /// built from, in the same order.
    pub fn apply_encoded_drain(
        &mut self,
        hosts: &mut EncodedHosts,
        observations: &mut Vec<Observation>,
    ) -> Result<BatchSummary, StoreError> {
        let mut domains = Vec::with_capacity(observations.len());
        let mut encoder = HostEncoder::new(usize::MAX);
        for obs in observations.drain(..) {
            match obs {
                Observation::Service(s) => {
                    encoder.push(&s.view(), false, hosts);
                }
                domain => domains.push(Some(domain)),
            }
        }
        encoder.finish(hosts);
        let result = self.apply_all_with(&mut domains, Some(hosts), &mut Written::default());
        hosts.clear();
        result
    }

    /// [`Self::apply_all`], the service observations coming from `encoded` when given (then
    /// `slots` holds domain scans only).
    fn apply_all_with(
        &mut self,
        slots: &mut [Option<Observation>],
        encoded: Option<&EncodedHosts>,
        written: &mut Written,
    ) -> Result<BatchSummary, StoreError> {
        // Merging runs first, so an error of the merge leaves the batch unapplied.
        self.merge_runs()?;
        let mut order: Vec<(HostKey, usize)> = Vec::with_capacity(slots.len());
        let mut scans: BTreeMap<DomainName, Vec<DomainScan>> = BTreeMap::new();
        for (at, slot) in slots.iter_mut().enumerate() {
            match slot {
                Some(Observation::Service(s)) => order.push((HostKey::of(s.ip), at)),
                Some(Observation::Domain(_)) => {
                    if let Some(Observation::Domain(d)) = slot.take() {
                        scans.entry(d.name.clone()).or_default().push(d);
                    }
                }
                None => {}
            }
        }
        // Host order, then arrival order within a host. The small (key, position) pairs are
        // sorted, not the observations.
        order.sort_unstable();
        let mut service_keys: Vec<HostKey> = order.iter().map(|&(key, _)| key).collect();
        service_keys.dedup();
        let services = order.into_iter().map(|(key, at)| {
            let obs = match slots[at].take() {
                Some(Observation::Service(s)) => Some(s),
                _ => None,
            };
            (key, obs.expect("each service position is taken once"))
        });

        let mut summary = BatchSummary::default();
        let mut out: Option<RunWriter> = None;
        let id = self.next_run;
        let written_before = (written.hosts.len(), written.domain_scans.len());
        // Set once the new manifest may name the run: from then on the file is kept.
        let mut named = false;
        let result = (|| {
            let version = Arc::clone(&self.current);
            let mut stored = Vec::with_capacity(4096);
            let mut buf = Vec::with_capacity(4096);
            let mut services = services.peekable();
            let groups: Vec<(HostKey, usize)> = encoded.map_or_else(Vec::new, |encoded| {
                let mut groups: Vec<_> = (encoded.groups.iter().enumerate())
                    .map(|(at, g)| (g.key, at))
                    .collect();
                groups.sort_unstable();
                groups
            });
            // The batch's keys ascend, so each run is searched onward from where the
            // previous key left it (see `Cursors`), not over its whole index. (With encoded
            // groups, `slots` holds no service observation.)
            let mut keys: Vec<HostKey> = groups.iter().map(|&(key, _)| key).collect();
            keys.dedup();
            keys.append(&mut service_keys);
            let mut cursors = Cursors::new(&version.runs, keys);
            if let Some(encoded) = encoded {
                let mut groups = groups.into_iter().peekable();
                while let Some((key, first)) = groups.next() {
                    let first = &encoded.groups[first];
                    let found = cursors.newest_host(&version.runs, key);
                    let alone = groups.peek().is_none_or(|(next, _)| *next != key);
                    if found.is_none() && alone {
                        // All the batch holds of a new address: its bytes are the record.
                        summary.applied += u64::from(first.services);
                        summary.superseded += u64::from(first.superseded);
                        summary.ignored += u64::from(first.ignored);
                        let bytes = encoded.record(first);
                        if bytes.is_empty() {
                            continue;
                        }
                        opened(&mut out, &self.dir, id)?.host(key, bytes)?;
                        summary.hosts_written += 1;
                        written.hosts.push(key);
                        continue;
                    }
                    let mut record = match found {
                        Some((run, loc)) => {
                            run.read(loc, &mut stored)?;
                            Some(decode_stored_host(key, &stored)?)
                        }
                        None => None,
                    };
                    let mut merge =
                        |g: &Group, record: &mut Option<HostRecord>| {
                            summary.ignored += u64::from(g.ignored);
                            summary.superseded += u64::from(g.superseded);
                            let bytes = encoded.record(g);
                            if bytes.is_empty() {
                                return Ok(());
                            }
                            let group = decode_stored_host(key, bytes)?;
                            match record {
                                None => {
                                    summary.applied += u64::from(g.services);
                                    *record = Some(group);
                                }
                                Some(record) => {
                                    let earlier = codec::decode_services(encoded.earlier(g))
                                        .map_err(|e| StoreError::CorruptHost {
                                            key,
                                            reason: e.to_string(),
                                            source: Some(e),
                                        })?;
                                    for outcome in record.merge_after(earlier, group) {
                                        summary.count(outcome);
                                    }
                                }
                            }
                            Ok::<(), StoreError>(())
                        };
                    merge(first, &mut record)?;
                    while let Some((_, at)) = groups.next_if(|(next, _)| *next == key) {
                        merge(&encoded.groups[at], &mut record)?;
                    }
                    let Some(record) = record.filter(|r| r.enrichment.is_some()) else {
                        continue;
                    };
                    buf.clear();
                    codec::encode_host_into(&record, &mut buf);
                    if found.is_some() && stored == buf {
                        continue;
                    }
                    opened(&mut out, &self.dir, id)?.host(key, &buf)?;
                    summary.hosts_written += 1;
                    written.hosts.push(key);
                }
            }
            while let Some((key, first)) = services.next() {
                let found = cursors.newest_host(&version.runs, key);
                let mut record = match found {
                    Some((run, loc)) => {
                        run.read(loc, &mut stored)?;
                        decode_stored_host(key, &stored)?
                    }
                    None => HostRecord::new(first.ip),
                };
                summary.count(record.apply_owned(first));
                while let Some((_, obs)) = services.next_if(|(next, _)| *next == key) {
                    summary.count(record.apply_owned(obs));
                }
                // Only failed observations of an unknown address: nothing to store.
                if record.enrichment.is_none() {
                    continue;
                }
                buf.clear();
                codec::encode_host_into(&record, &mut buf);
                if found.is_some() && stored == buf {
                    continue;
                }
                opened(&mut out, &self.dir, id)?.host(key, &buf)?;
                summary.hosts_written += 1;
                written.hosts.push(key);
            }
            for (name, batch) in scans {
                let mut current = DomainScans::default();
                if let Some(old) = version.domain_scan(name.as_str(), &mut stored)? {
                    current.by_name.insert(name.clone(), old);
                }
                let mut changed = false;
                for scan in batch {
                    let outcome = current.apply(scan);
                    changed |= outcome == ApplyOutcome::Applied;
                    summary.count(outcome);
                }
                let Some(scan) = current.by_name.get(&name).filter(|_| changed) else {
                    continue;
                };
                opened(&mut out, &self.dir, id)?
                    .name(name.as_str(), &codec::encode_domain_scan(scan))?;
                summary.domain_scans_written += 1;
                written.domain_scans.push(name);
            }
            let Some(out) = out.take() else {
                // Nothing written: acknowledged as soon as the batches before it are.
                return self.settle_previous();
            };
            let sync = if self.behind {
                Syncing::ByCommit
            } else {
                Syncing::Now
            };
            let run = out.finish(0, sync)?;
            let mut runs = version.runs.clone();
            runs.push(Arc::new(run));
            let version = Version {
                generation: version.generation + 1,
                runs,
            };
            if self.behind {
                // Named by the commit's manifest; on an error before it starts, removed.
                return self.commit_behind(version, id + 1);
            }
            named = true;
            self.install(version, id + 1)
        })();
        if let Err(e) = result {
            written.hosts.truncate(written_before.0);
            written.domain_scans.truncate(written_before.1);
            if !named {
                // The run, if any, is named by no manifest: removed now, as opening the store
                // would remove it (so a failure to remove it changes nothing).
                drop(out);
                let _ = fs::remove_file(self.dir.join(Run::file_name(id)));
            }
            return Err(e);
        }
        Ok(summary)
    }

    /// Makes `version` the store's state: writes its manifest (atomically, synced) and only
    /// then takes it as current. No commit is in flight (its manifest would race this one).
    fn install(&mut self, version: Version, next_run: u64) -> Result<(), StoreError> {
        debug_assert!(self.committing.is_none(), "a commit is in flight");
        Manifest::of(&version, next_run).write(&self.dir)?;
        self.current = Arc::new(version);
        self.next_run = next_run;
        Ok(())
    }

    /// Takes in the merges of runs that have finished, then starts the next one if the runs
    /// after every merge in flight call for it (see [`merge_candidate`]). Merges run on
    /// threads of their own, so a batch does not wait for them; it waits only when
    /// [`MAX_RUNS`] runs have piled up, and then for the newest merge (the smallest).
    ///
    /// Merges in flight are over disjoint windows of runs, so a long merge of the largest
    /// runs does not hold up the small merges of the batches that arrive meanwhile (at 10
    /// million hosts the last merge rewrites the whole store; with one merge at a time the
    /// batches behind it waited for it once [`MAX_RUNS`] runs had piled up). A merged run
    /// takes the place of its inputs, wherever the others' have gone meanwhile.
    ///
    /// A merge writes a run file that no manifest names until it is taken in here (a manifest
    /// naming the merged run instead of its inputs, written atomically like a batch's); a
    /// process that dies before leaves a leftover file, removed when the store is opened.
    fn merge_runs(&mut self) -> Result<(), StoreError> {
        let mut i = 0;
        while i < self.merging.len() {
            if self.merging[i].handle.is_finished() {
                self.take_merge(i)?;
            } else {
                i += 1;
            }
        }
        while self.current.runs.len() >= MAX_RUNS && !self.merging.is_empty() {
            let since = Instant::now();
            self.take_merge(self.merging.len() - 1)?;
            self.merge_waits += since.elapsed();
        }
        // A merge reads committed runs only: one due waits for the commit in flight.
        if self.committing.is_some() && self.next_merge().is_some() {
            self.settle_previous()?;
        }
        let Some((from, tier)) = self.next_merge() else {
            return Ok(());
        };
        let inputs: Vec<Arc<Run>> = self.current.runs[from..].to_vec();
        let (dir, id) = (self.dir.clone(), self.next_run);
        // The merged run's number is taken now: above every input's and below every later
        // batch's, so the manifest keeps its runs in ascending order.
        self.next_run += 1;
        let thread_inputs = inputs.clone();
        let handle = std::thread::Builder::new()
            .name("store-merge".into())
            .spawn(move || merge_into(&dir, id, &thread_inputs, tier))
            .map_err(io_failed("starting the merge thread", &self.dir))?;
        self.merging.push(Merging { inputs, handle });
        Ok(())
    }

    /// The merge due among the runs after the newest merge's inputs (the ones it does not
    /// read), if any: where its inputs start in the store's runs, and the merged run's tier.
    fn next_merge(&self) -> Option<(usize, u32)> {
        let runs = &self.current.runs;
        let free = self.merging.last().map_or(0, |m| {
            let last = m.inputs.last().expect("a merge has inputs").id;
            runs.iter()
                .position(|r| r.id == last)
                .expect("the runs of a merge in flight stay in the store")
                + 1
        });
        merge_candidate(&runs[free..]).map(|(from, tier)| (free + from, tier))
    }

    /// How long batches have waited, since the store was opened, for a merge in flight to
    /// finish because [`MAX_RUNS`] runs had piled up behind it: the part of applying batches
    /// that the disk, not the batches, decides.
    pub fn merge_waits(&self) -> Duration {
        self.merge_waits
    }

    /// Waits for merge `i` of those in flight and takes its run in place of its inputs.
    fn take_merge(&mut self, i: usize) -> Result<(), StoreError> {
        // Its manifest follows the commit in flight's.
        self.settle_previous()?;
        let Merging { inputs, handle } = self.merging.remove(i);
        let merged = handle.join().unwrap_or_else(|_| {
            Err(StoreError::Io {
                during: "merging runs",
                path: self.dir.clone(),
                source: io::Error::other("the merge thread panicked"),
            })
        })?;
        let runs = &self.current.runs;
        let from = runs
            .iter()
            .position(|r| r.id == inputs[0].id)
            .filter(|&at| {
                runs.get(at..at + inputs.len())
                    .is_some_and(|w| w.iter().zip(&inputs).all(|(a, b)| a.id == b.id))
            })
            .expect("the runs of a merge in flight stay in the store, in order");
        let mut kept = runs[..from].to_vec();
        kept.push(Arc::new(merged));
        kept.extend_from_slice(&runs[from + inputs.len()..]);
        let next = self.next_run;
        self.install(
            Version {
                generation: self.current.generation,
                runs: kept,
            },
            next,
        )?;
        for run in &inputs {
            fs::remove_file(&run.path).map_err(io_failed("removing a merged run", &run.path))?;
        }
        release(inputs);
        Ok(())
    }

    /// Waits for the merges of runs in flight, if any, and takes them in; starts none.
    /// Dropping the store does this too, ignoring errors (a merge not taken in leaves its
    /// inputs as they were).
    pub fn finish_merges(&mut self) -> Result<(), StoreError> {
        while !self.merging.is_empty() {
            self.take_merge(0)?;
        }
        Ok(())
    }

    /// One consistent read view of the store as of the last batch applied (on a store
    /// acknowledging one behind, with the batch whose commit is in flight); batches applied
    /// later are not seen by it. It keeps the run files it reads open, so they stay
    /// readable after a merge removes them (their disk space is returned when the last
    /// snapshot holding them is dropped: in a server, at the next full rebuild).
    pub fn snapshot(&self) -> Result<StoreSnapshot, StoreError> {
        Ok(StoreSnapshot {
            version: Arc::clone(&self.current),
        })
    }

    /// The stored record of `ip`, if any (expired or not: retention is the reader's call).
    pub fn host(&self, ip: IpAddr) -> Result<Option<HostRecord>, StoreError> {
        self.snapshot()?.host(ip)
    }

    /// Every stored host record in host order, from one consistent snapshot of the store.
    pub fn hosts(&self) -> Result<Hosts, StoreError> {
        self.snapshot()?.hosts()
    }

    /// The stored domain-scan records.
    pub fn domain_scans(&self) -> Result<DomainScans, StoreError> {
        self.snapshot()?.domain_scans()
    }

    /// Record counts and the size of the store's files.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let runs = &self.current.runs;
        let hosts = newest_hosts(runs).count();
        let domain_scans = newest_names(runs).count();
        let manifest_path = self.dir.join(MANIFEST_FILE);
        let manifest = fs::metadata(&manifest_path)
            .map_err(io_failed(
                "reading the size of the manifest",
                &manifest_path,
            ))?
            .len();
        Ok(StoreStats {
            hosts: hosts as u64,
            domain_scans: domain_scans as u64,
            file_bytes: manifest + runs.iter().map(|r| r.bytes).sum::<u64>(),
        })
    }
}

/// Where the runs (oldest first) call for a merge: the first position from which [`FANOUT`]
/// runs are of one tier and every later run is of that tier or lower. Merging that suffix
/// gives one run of the next tier in its place.
fn merge_candidate(runs: &[Arc<Run>]) -> Option<(usize, u32)> {
    (0..runs.len().saturating_sub(FANOUT - 1)).find_map(|from| {
        let tier = runs[from].tier;
        let window = runs[from..from + FANOUT].iter().all(|r| r.tier == tier);
        let after = runs[from + FANOUT..].iter().all(|r| r.tier <= tier);
        (window && after).then_some((from, tier + 1))
    })
}

/// Writes the run `id` of `tier` in `dir`, holding the newest record of every key of `runs`
/// (oldest first); on an error its file is removed.
fn merge_into(dir: &Path, id: u64, runs: &[Arc<Run>], tier: u32) -> Result<Run, StoreError> {
    #[cfg(test)]
    tests::held_merges::wait(dir, tier);
    let result = (|| {
        let mut out = RunWriter::create(dir, id, true)?;
        let mut windows = Window::walking(runs)?;
        for (r, at) in newest_hosts(runs) {
            let hosts = &runs[r].hosts;
            let bytes = windows[r].get(&runs[r], hosts.loc(at))?;
            let key = hosts.key(at).expect("the walk yields positions of the run");
            out.host(key, bytes)?;
        }
        for (r, at) in newest_names(runs) {
            let names = &runs[r].names;
            let bytes = windows[r].get(&runs[r], names.loc(at))?;
            let name = names.get(at).expect("the walk yields positions of the run");
            out.name(name, bytes)?;
        }
        let run = out.finish(tier, Syncing::Now)?;
        // Made here, on the merge's thread, rather than by the first batch that reads it.
        run.host_filter();
        run.name_filter();
        Ok(run)
    })();
    if result.is_err() {
        let _ = fs::remove_file(dir.join(Run::file_name(id)));
    }
    result
}

/// Drops merged runs on a short-lived thread of their own. Their files are unlinked already, so
/// closing the last handle of one returns its blocks to the filesystem, which waits for the
/// device where the filesystem discards them (ext4 mounted with `discard`: 1.25 s of the store
/// thread's time in an ingest of a million hosts); their indexes are freed there too. A run a
/// snapshot still holds is closed when that snapshot is dropped, as before. Should the thread
/// not start, the runs are dropped here, as before.
fn release(runs: Vec<Arc<Run>>) {
    let _started = std::thread::Builder::new()
        .name("store-release".into())
        .spawn(move || drop(runs));
}

/// The commit of a batch acknowledged one behind, on a thread of its own (see
/// [`DurableStore::acknowledge_one_behind`]): its run synced, then a manifest naming it
/// written. `before` is the store's state without the batch, taken back if the commit fails.
struct Committing {
    before: Arc<Version>,
    handle: std::thread::JoinHandle<Result<(), StoreError>>,
}

/// Whether a run file is synced as it is finished, or later by the commit that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syncing {
    Now,
    ByCommit,
}

/// A merge of runs on a thread of its own: its inputs (the runs from where it started to the
/// newest then) and the thread, which returns the merged run.
struct Merging {
    inputs: Vec<Arc<Run>>,
    handle: std::thread::JoinHandle<Result<Run, StoreError>>,
}

impl Drop for DurableStore {
    fn drop(&mut self) {
        // The commit in flight finished (or failed: the batch is then not stored).
        let _ = self.settle();
        // Each merge taken in, or not (an error leaves its inputs as they were).
        while !self.merging.is_empty() {
            let _ = self.take_merge(0);
        }
    }
}

/// Refuses a store of schema version 1 ([`StoreError::OldFormat`]): a redb file at `path` or
/// beside it (`scan.redb` beside `scan.store`). [`DurableStore::open`] checks this first; a
/// caller that only asks whether a store exists checks it too, so an old store is never
/// taken for a missing one.
pub fn refuse_old_format(path: &Path) -> Result<(), StoreError> {
    let is_redb = |p: &Path| -> Result<bool, StoreError> {
        let mut head = [0u8; 4];
        let file = File::open(p).map_err(io_failed("reading the store", p))?;
        Ok(file.read_exact_at(&mut head, 0).is_ok() && head == REDB_MAGIC)
    };
    if path.is_file() {
        if is_redb(path)? {
            return Err(StoreError::OldFormat {
                path: path.to_owned(),
            });
        }
        return Err(StoreError::NotAStore {
            path: path.to_owned(),
            reason: "it is a file, not a store directory",
        });
    }
    let beside = path.with_extension("redb");
    if path.extension().is_some_and(|e| e != "redb") && beside.is_file() && is_redb(&beside)? {
        return Err(StoreError::OldFormat { path: beside });
    }
    Ok(())
}

/// Removes run files no manifest names and a half-written manifest: leftovers of a batch or
/// merge that was interrupted.
fn remove_leftovers(dir: &Path, manifest: &Manifest) -> Result<(), StoreError> {
    let named: Vec<String> = manifest
        .runs
        .iter()
        .map(|(id, _)| Run::file_name(*id))
        .collect();
    for entry in fs::read_dir(dir).map_err(io_failed("listing the store directory", dir))? {
        let entry = entry.map_err(io_failed("listing the store directory", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let leftover =
            (name.ends_with(".run") && !named.iter().any(|n| n == name)) || name == MANIFEST_TMP;
        if leftover {
            let path = entry.path();
            fs::remove_file(&path).map_err(io_failed("removing a leftover file", &path))?;
        }
    }
    Ok(())
}

/// The manifest being written, before it is renamed over [`MANIFEST_FILE`].
const MANIFEST_TMP: &str = "MANIFEST.tmp";

/// The manifest: which runs make the store.
struct Manifest {
    generation: u64,
    next_run: u64,
    /// (run number, tier), oldest first.
    runs: Vec<(u64, u32)>,
}

impl Manifest {
    /// The manifest naming `version`'s runs.
    fn of(version: &Version, next_run: u64) -> Self {
        Self {
            generation: version.generation,
            next_run,
            runs: version.runs.iter().map(|r| (r.id, r.tier)).collect(),
        }
    }

    fn parse(text: &str, dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(MANIFEST_FILE);
        let corrupt = |reason: String| StoreError::CorruptFile {
            path: path.clone(),
            reason,
        };
        let mut lines = text.lines();
        if lines.next() != Some(MANIFEST_HEADER) {
            return Err(StoreError::NotAStore {
                path: dir.to_owned(),
                reason: "its manifest is not a scan store's",
            });
        }
        let mut field = |name: &str| -> Result<u64, StoreError> {
            let line = lines.next().unwrap_or_default();
            line.strip_prefix(name)
                .and_then(|v| v.strip_prefix(' '))
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| corrupt(format!("expected `{name} N`, found {line:?}")))
        };
        let version = field("schema_version")?;
        if version != SCHEMA_VERSION {
            return Err(StoreError::VersionMismatch {
                path: dir.to_owned(),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        let generation = field("generation")?;
        let next_run = field("next_run")?;
        let mut runs = Vec::new();
        for line in lines {
            let run = line
                .strip_prefix("run ")
                .and_then(|rest| rest.split_once(' '))
                .and_then(|(id, tier)| {
                    Some((u64::from_str_radix(id, 16).ok()?, tier.parse::<u32>().ok()?))
                })
                .ok_or_else(|| corrupt(format!("expected `run ID TIER`, found {line:?}")))?;
            if run.0 >= next_run || runs.last().is_some_and(|(last, _)| *last >= run.0) {
                return Err(corrupt(format!("the run {line:?} is out of order")));
            }
            runs.push(run);
        }
        Ok(Self {
            generation,
            next_run,
            runs,
        })
    }

    /// Replaces the manifest in `dir` atomically and durably.
    fn write(&self, dir: &Path) -> Result<(), StoreError> {
        let mut text = format!(
            "{MANIFEST_HEADER}\nschema_version {SCHEMA_VERSION}\ngeneration {}\nnext_run {}\n",
            self.generation, self.next_run
        );
        for (id, tier) in &self.runs {
            text.push_str(&format!("run {id:016x} {tier}\n"));
        }
        let tmp = dir.join(MANIFEST_TMP);
        let mut file = File::create(&tmp).map_err(io_failed("writing the manifest", &tmp))?;
        file.write_all(text.as_bytes())
            .map_err(io_failed("writing the manifest", &tmp))?;
        file.sync_all()
            .map_err(io_failed("syncing the manifest", &tmp))?;
        let path = dir.join(MANIFEST_FILE);
        fs::rename(&tmp, &path).map_err(io_failed("replacing the manifest", &path))?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(io_failed("syncing the store directory", dir))
    }
}

/// A consistent read view of the store; see [`DurableStore::snapshot`].
#[derive(Clone)]
pub struct StoreSnapshot {
    version: Arc<Version>,
}

impl fmt::Debug for StoreSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSnapshot")
            .field("generation", &self.version.generation)
            .field("runs", &self.version.runs.len())
            .finish()
    }
}

impl StoreSnapshot {
    /// The store's generation when this snapshot was taken.
    pub fn generation(&self) -> u64 {
        self.version.generation
    }

    /// The record of `ip`, if stored (expired or not).
    pub fn host(&self, ip: IpAddr) -> Result<Option<HostRecord>, StoreError> {
        self.host_by_key(HostKey::of(ip))
    }

    /// The record stored under `key`, if any.
    pub fn host_by_key(&self, key: HostKey) -> Result<Option<HostRecord>, StoreError> {
        self.version.host(key, &mut Vec::new())
    }

    /// Every record in host order.
    pub fn hosts(&self) -> Result<Hosts, StoreError> {
        let version = Arc::clone(&self.version);
        let windows = Window::walking(&version.runs)?;
        let pos = vec![0; version.runs.len()];
        Ok(Hosts {
            version,
            windows,
            pos,
        })
    }

    /// The domain-scan record of `name`, if stored.
    pub fn domain_scan(&self, name: &DomainName) -> Result<Option<DomainScan>, StoreError> {
        self.version.domain_scan(name.as_str(), &mut Vec::new())
    }

    /// The domain-scan record stored under `name` (a name as [`DomainName::as_str`] gives
    /// it), if any: [`Self::domain_scan`] for a name already known to be normalised.
    pub fn domain_scan_named(&self, name: &str) -> Result<Option<DomainScan>, StoreError> {
        self.version.domain_scan(name, &mut Vec::new())
    }

    /// The domain-scan records.
    pub fn domain_scans(&self) -> Result<DomainScans, StoreError> {
        let runs = &self.version.runs;
        let mut windows = Window::walking(runs)?;
        let mut scans = DomainScans::default();
        for (r, at) in newest_names(runs) {
            let names = &runs[r].names;
            let bytes = windows[r].get(&runs[r], names.loc(at))?;
            let name = names.get(at).expect("the walk yields positions of the run");
            let scan = decode_stored_scan(name, bytes)?;
            scans.by_name.insert(scan.name.clone(), scan);
        }
        Ok(scans)
    }
}

/// The stored host records in host order; see [`DurableStore::hosts`].
pub struct Hosts {
    version: Arc<Version>,
    windows: Vec<Window>,
    pos: Vec<usize>,
}

impl fmt::Debug for Hosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosts").finish_non_exhaustive()
    }
}

impl Iterator for Hosts {
    type Item = Result<HostRecord, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let runs = &self.version.runs;
        let (r, at) = newest_next(&mut self.pos, host_key(runs))?;
        let run = &runs[r];
        let key = run.hosts.key(at)?;
        Some(
            self.windows[r]
                .get(run, run.hosts.loc(at))
                .and_then(|bytes| decode_stored_host(key, bytes)),
        )
    }

    /// Passes `n` records without reading them (`step_by` samples with it).
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        let runs = &self.version.runs;
        for _ in 0..n {
            newest_next(&mut self.pos, host_key(runs))?;
        }
        self.next()
    }
}

/// Decodes the record stored under `key`, which must be the record of that address.
fn decode_stored_host(key: HostKey, bytes: &[u8]) -> Result<HostRecord, StoreError> {
    let record = codec::decode_host(bytes).map_err(|e| StoreError::CorruptHost {
        key,
        reason: e.to_string(),
        source: Some(e),
    })?;
    if HostKey::of(record.ip) != key {
        return Err(StoreError::CorruptHost {
            key,
            reason: format!("it holds the record of {}", record.ip),
            source: None,
        });
    }
    Ok(record)
}

/// Decodes the scan stored under `name`, which must be the scan of that name.
fn decode_stored_scan(name: &str, bytes: &[u8]) -> Result<DomainScan, StoreError> {
    let scan = codec::decode_domain_scan(bytes).map_err(|e| StoreError::CorruptDomainScan {
        name: name.to_owned(),
        reason: e.to_string(),
        source: Some(e),
    })?;
    if scan.name.as_str() != name {
        return Err(StoreError::CorruptDomainScan {
            name: name.to_owned(),
            reason: format!("it holds the record of {}", scan.name),
            source: None,
        });
    }
    Ok(scan)
}

#[cfg(test)]
mod tests {
    use super::{
        DurableStore, FANOUT, HostIndex, HostKey, Loc, MAX_RUNS, NameIndex, RunWriter, Window,
    };
    use crate::order_keys::{gallop, key_sets};
    use periscope_model::Timestamp;
    use periscope_model::observation::{Observation, ObservationReader};
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Merges a test holds back: a merge into a tier listed for its store directory waits
    /// until the test lets it go (or 30 s pass, so a store that waits for it fails the test
    /// rather than hanging it).
    pub(super) mod held_merges {
        use std::path::{Path, PathBuf};
        use std::sync::{Condvar, Mutex};
        use std::time::{Duration, Instant};

        static HELD: Mutex<Vec<(PathBuf, u32)>> = Mutex::new(Vec::new());
        static CHANGED: Condvar = Condvar::new();

        pub(in crate::durable) fn hold(dir: &Path, tier: u32) {
            HELD.lock().unwrap().push((dir.to_owned(), tier));
        }

        pub(in crate::durable) fn release(dir: &Path) {
            HELD.lock().unwrap().retain(|(held, _)| held != dir);
            CHANGED.notify_all();
        }

        pub(in crate::durable) fn wait(dir: &Path, tier: u32) {
            let until = Instant::now() + Duration::from_secs(30);
            let mut held = HELD.lock().unwrap();
            while held.iter().any(|(d, t)| d == dir && *t == tier) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return;
                }
                held = CHANGED.wait_timeout(held, left).unwrap().0;
            }
        }
    }

    /// The observations of a synthetic internet of `hosts` hosts.
    fn synth(hosts: u64) -> Vec<Observation> {
        let as_of = Timestamp::parse("2026-11-20T00:00:00Z").unwrap();
        let cfg = periscope_synth::SynthConfig {
            hosts,
            seed: 5,
            as_of,
        };
        let mut out = Vec::new();
        periscope_synth::write_dataset(&cfg, &mut out).unwrap();
        let mut reader = ObservationReader::new(as_of);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .filter_map(|line| reader.read_line(line).unwrap())
            .collect()
    }

    /// A long merge of the largest runs holds up no merge of the newer ones: while the merge
    /// into tier 2 is held, the batches after it are merged into tier 1 beside it, the runs
    /// never pile up to [`MAX_RUNS`], and the store ends as a store whose merges ran one at a
    /// time.
    #[test]
    fn merges_of_newer_runs_go_on_beside_a_long_one() {
        let observations = synth(400);
        let batches: Vec<&[Observation]> = observations
            .chunks(observations.len() / (FANOUT * FANOUT + 3 * FANOUT))
            .collect();
        assert!(batches.len() >= FANOUT * FANOUT + 2 * FANOUT);
        let base = std::env::temp_dir().join(format!(
            "periscope-held-merges-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let (held, free) = (base.join("held"), base.join("free"));
        held_merges::hold(&held, 2);
        let mut store = DurableStore::open(&held).unwrap();
        let mut reference = DurableStore::open(&free).unwrap();
        let (mut most_merging, mut most_runs) = (0, 0);
        for batch in &batches {
            store.apply_batch(batch).unwrap();
            reference.apply_batch(batch).unwrap();
            reference.finish_merges().unwrap();
            most_merging = most_merging.max(store.merging.len());
            most_runs = most_runs.max(store.current.runs.len());
        }
        // FANOUT runs of tier 1 and the newer ones of tier 0 then.
        let held_tier_2 = store.merging.first().map(|m| m.inputs.len() >= FANOUT);
        held_merges::release(&held);
        store.finish_merges().unwrap();
        assert_eq!(
            held_tier_2,
            Some(true),
            "the merge into tier 2 was held to the end"
        );
        assert_eq!(most_merging, 2, "a merge into tier 1 ran beside it");
        assert!(most_runs < MAX_RUNS, "{most_runs} runs piled up");
        assert_eq!(store.merge_waits(), std::time::Duration::ZERO);
        let all = |s: &DurableStore| s.hosts().unwrap().collect::<Result<Vec<_>, _>>().unwrap();
        assert_eq!(all(&store), all(&reference));
        assert_eq!(
            store.domain_scans().unwrap(),
            reference.domain_scans().unwrap()
        );
        drop((store, reference));
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// Record `i` of a run written by [`a_walk_reads_every_record_where_it_is`]: bytes that
    /// differ from record to record and from position to position.
    fn record_bytes(i: usize, len: u32) -> Vec<u8> {
        (0..len as usize)
            .map(|j| (i * 31 + j % 251 + j / 4093) as u8)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// A direct window gives every record's bytes however the walk goes: forward over
        /// records within a chunk, across chunks (copied whole), larger than a chunk, forward
        /// past many chunks (a sample's stride), and back.
        #[test]
        fn a_walk_reads_every_record_where_it_is(
            lens in prop::collection::vec(
                prop_oneof![8 => 0u32..5000, 1 => 300_000u32..2_500_000], 1..40),
            visits in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        ) {
            // Beside the test binary: the target directory is on a disk filesystem, which
            // reads direct.
            let exe = std::env::current_exe().unwrap();
            let dir = exe.with_file_name(format!(
                "walk-{}-{:?}", std::process::id(), std::thread::current().id()));
            std::fs::create_dir_all(&dir).unwrap();
            let mut out = RunWriter::create(&dir, 1, true).unwrap();
            for (i, len) in lens.iter().enumerate() {
                out.host(HostKey((i as u128).to_be_bytes()), &record_bytes(i, *len)).unwrap();
            }
            let run = out.finish(1, super::Syncing::Now).unwrap();
            let mut window = Window::direct(&run).unwrap();
            let every = 0..lens.len();
            let some = visits.iter().map(|v| v.index(lens.len()));
            for i in every.clone().chain(some).chain(every.rev()) {
                let bytes = window.get(&run, run.hosts.loc(i)).unwrap();
                prop_assert!(bytes == record_bytes(i, lens[i]), "record {}", i);
            }
            prop_assert!(matches!(window, Window::Direct(_)), "the walk read past the page cache");
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// `apply_batch_drain` turns the batch's vector into one of `Option<Observation>` and
    /// back in place, which keeps the allocation only when the two are of one size.
    #[test]
    fn an_optional_observation_is_as_large_as_an_observation() {
        assert_eq!(
            size_of::<Option<Observation>>(),
            size_of::<Observation>(),
            "collecting in place would allocate a second vector per batch"
        );
    }

    /// Keys for a host index: IPv4 and IPv6 mixed, ascending, each record `len` bytes long
    /// and back to back from offset 8.
    fn records(keys: &BTreeSet<u128>, lens: &[u32]) -> Vec<(HostKey, Loc)> {
        let mut at = 8;
        keys.iter()
            .zip(lens.iter().cycle())
            .map(|(key, len)| {
                let loc = Loc { at, len: *len };
                at += u64::from(*len);
                (HostKey(key.to_be_bytes()), loc)
            })
            .collect()
    }

    proptest! {
        /// The compact index answers as the list of keys and locations it was built from:
        /// every key and location by position, every lookup, every gallop from every start;
        /// records of up to 4 GiB carry their offsets past one 4 GiB boundary and more.
        #[test]
        fn a_host_index_answers_as_its_list(
            keys in key_sets(),
            lens in prop::collection::vec(prop_oneof![0u32..5000, (1u32 << 31)..=u32::MAX], 1..20),
            probes in prop::collection::vec(any::<u128>(), 0..40),
        ) {
            let list = records(&keys, &lens);
            let mut index = HostIndex::default();
            for (key, loc) in &list {
                index.push(*key, *loc).map_err(TestCaseError::fail)?;
            }
            prop_assert_eq!(index.len(), list.len());
            prop_assert_eq!(index.key(list.len()), None);
            for (at, (key, loc)) in list.iter().enumerate() {
                prop_assert_eq!(index.key(at), Some(*key));
                prop_assert_eq!((index.loc(at).at, index.loc(at).len), (loc.at, loc.len));
                prop_assert_eq!(index.find(*key), Some(at));
            }
            let keys: Vec<HostKey> = list.iter().map(|(k, _)| *k).collect();
            let probes = probes.into_iter().chain([0, 1 << 32, u128::from(u32::MAX)]);
            for probe in probes.map(|p| HostKey(p.to_be_bytes())) {
                prop_assert_eq!(index.find(probe), keys.binary_search(&probe).ok());
                for from in 0..=keys.len() {
                    prop_assert_eq!(index.gallop(from, probe), gallop(&keys, from, &probe));
                }
            }
        }
    }

    /// A host index refuses keys out of order and records that are not back to back, saying
    /// which.
    #[test]
    fn a_host_index_refuses_what_a_run_never_holds() {
        let key = |k: u128| HostKey(k.to_be_bytes());
        let mut index = HostIndex::default();
        index
            .push(key(5), Loc { at: 8, len: 10 })
            .expect("the first record");
        let twice = index.push(key(5), Loc { at: 18, len: 1 });
        assert!(twice.is_err_and(|e| e.contains("out of order")));
        let gap = index.push(key(1 << 40), Loc { at: 19, len: 1 });
        assert!(
            gap.is_err_and(|e| e.contains("starts at 19, not where the previous one ends (18)"))
        );
        index
            .push(key(1 << 40), Loc { at: 18, len: 3 })
            .expect("the next record");
        let v4_after_v6 = index.push(key(7), Loc { at: 21, len: 1 });
        assert!(v4_after_v6.is_err_and(|e| e.contains("out of order")));
        assert_eq!(index.len(), 2);
    }

    proptest! {
        /// The name index answers as the list of names and locations it was built from:
        /// every name and location by position, every lookup, the entries in order.
        #[test]
        fn a_name_index_answers_as_its_list(
            names in prop::collection::btree_set("[a-z.]{0,12}", 0..60),
            lens in prop::collection::vec(prop_oneof![0u32..5000, (1u32 << 31)..=u32::MAX], 1..20),
            probes in prop::collection::vec("[a-z.]{0,12}", 0..20),
        ) {
            let mut at = 1 << 20;
            let list: Vec<(String, Loc)> = names
                .iter()
                .zip(lens.iter().cycle())
                .map(|(name, len)| {
                    let loc = Loc { at, len: *len };
                    at += u64::from(*len);
                    (name.clone(), loc)
                })
                .collect();
            let mut index = NameIndex::default();
            for (name, loc) in &list {
                index.push(name, *loc).map_err(TestCaseError::fail)?;
            }
            prop_assert_eq!(index.len(), list.len());
            prop_assert_eq!(index.get(list.len()), None);
            for (at, (name, loc)) in list.iter().enumerate() {
                prop_assert_eq!(index.get(at), Some(name.as_str()));
                prop_assert_eq!((index.loc(at).at, index.loc(at).len), (loc.at, loc.len));
                prop_assert_eq!(index.find(name), Some(at));
            }
            let entries: Vec<(&str, u64, u32)> =
                index.entries().map(|(n, l)| (n, l.at, l.len)).collect();
            let expected: Vec<(&str, u64, u32)> =
                list.iter().map(|(n, l)| (n.as_str(), l.at, l.len)).collect();
            prop_assert_eq!(entries, expected);
            for probe in &probes {
                let found = list.iter().position(|(n, _)| n == probe);
                prop_assert_eq!(index.find(probe), found);
            }
        }
    }

    /// A name index refuses names out of order and records that are not back to back.
    #[test]
    fn a_name_index_refuses_what_a_run_never_holds() {
        let mut index = NameIndex::default();
        index
            .push("b.example", Loc { at: 8, len: 10 })
            .expect("the first record");
        let twice = index.push("b.example", Loc { at: 18, len: 1 });
        assert!(twice.is_err_and(|e| e.contains("out of order")));
        let before = index.push("a.example", Loc { at: 18, len: 1 });
        assert!(before.is_err_and(|e| e.contains("out of order")));
        let gap = index.push("c.example", Loc { at: 19, len: 1 });
        assert!(
            gap.is_err_and(|e| e.contains("starts at 19, not where the previous one ends (18)"))
        );
        index
            .push("c.example", Loc { at: 18, len: 3 })
            .expect("the next record");
        assert_eq!(index.len(), 2);
        assert_eq!(index.get(1), Some("c.example"));
    }
}
