//! The durable store of the embedded engine: the current host records and domain-scan records
//! in one `redb` file, so a crash loses nothing acknowledged.
//!
//! Tables (names are public so tools and tests can reach them with `redb` directly):
//! - [`META_TABLE`] (`&str → u64`): `schema_version` = [`SCHEMA_VERSION`]; a store of another
//!   version is refused when opened, never read. `generation` ([`GENERATION_KEY`]) counts the
//!   batches that changed something.
//! - [`HOSTS_TABLE`] (`[u8; 16] → bytes`): one [`HostRecord`] per address, keyed by the
//!   big-endian [`ip_order_key`], so iterating the table is host order (IPv4 first, then
//!   IPv6, each ascending); values are [`codec::encode_host`] bytes.
//! - [`DOMAIN_SCANS_TABLE`] (`&str → bytes`): the newest [`DomainScan`] per name.
//!
//! [`DurableStore::apply_batch`] merges a batch of observations in one write transaction:
//! each affected record is read, merged by the current-observation rule
//! ([`HostRecord::apply`], [`DomainScans::apply`]) and written back only when its bytes
//! changed. The batch is acknowledged when the commit returns (redb's default, immediate
//! durability: the data is on disk); a batch that fails, or a process that dies before the
//! commit returns, leaves no trace of it.
//!
//! **Invariant:** a stored host record has had at least one counting observation applied (an
//! address seen only in failed observations is not stored). Whether it is a host *now* is
//! decided when reading, by the retention window.
//! **Boundary:** this module persists records; it builds no in-memory index. The engine
//! builds its snapshots from a [`StoreSnapshot`] and keeps it to read the records it shows.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use periscope_model::DomainName;
use periscope_model::ip_order_key;
use periscope_model::observation::{DomainScan, Observation, ServiceObservation};
use redb::{
    Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition, TableHandle,
};

use crate::codec::{self, CodecError};
use crate::store::{ApplyOutcome, DomainScans, HostRecord};

/// The layout this build writes and the only one it opens.
pub const SCHEMA_VERSION: u64 = 1;

/// The metadata table: `&str → u64`.
pub const META_TABLE: &str = "meta";
/// The key of the schema version in [`META_TABLE`].
pub const SCHEMA_VERSION_KEY: &str = "schema_version";
/// The key of the generation in [`META_TABLE`]: the number of batches committed that changed
/// something (absent before the first), so an index file can tell whether it was built from
/// this state.
pub const GENERATION_KEY: &str = "generation";
/// The host records: 16-byte big-endian host-order key → encoded [`HostRecord`].
pub const HOSTS_TABLE: &str = "hosts";
/// The domain-scan records: name → encoded [`DomainScan`].
pub const DOMAIN_SCANS_TABLE: &str = "domain_scans";

const META: TableDefinition<&str, u64> = TableDefinition::new(META_TABLE);
const HOSTS: TableDefinition<&[u8; 16], &[u8]> = TableDefinition::new(HOSTS_TABLE);
const DOMAIN_SCANS: TableDefinition<&str, &[u8]> = TableDefinition::new(DOMAIN_SCANS_TABLE);

/// What went wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file could not be opened or created as a database.
    #[error("cannot open the scan store {}", path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// What the database said.
        #[source]
        source: Box<redb::Error>,
    },
    /// The database failed during an operation (I/O error, storage corruption, …).
    #[error("the scan store failed while {during}")]
    Database {
        /// What the store was doing.
        during: &'static str,
        /// What the database said.
        #[source]
        source: Box<redb::Error>,
    },
    /// The file's metadata could not be read.
    #[error("cannot read the size of {}", path.display())]
    Io {
        /// The store file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
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
        /// The store file.
        path: PathBuf,
        /// The version recorded in the file.
        found: u64,
        /// The version this build reads.
        supported: u64,
    },
    /// The file is a redb database with tables but no schema version: not a scan store.
    #[error("{} is a database but not a Periscope scan store (it has no schema version)", path.display())]
    NotAStore {
        /// The file.
        path: PathBuf,
    },
}

/// Wraps a database error with what the store was doing.
fn failed<E: Into<redb::Error>>(during: &'static str) -> impl FnOnce(E) -> StoreError {
    move |e| StoreError::Database {
        during,
        source: Box::new(e.into()),
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

    /// The address this key stands for (the inverse of [`ip_order_key`]).
    pub fn ip(self) -> IpAddr {
        let k = u128::from_be_bytes(self.0);
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
    pub(crate) fn count(&mut self, outcome: ApplyOutcome) {
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

/// Sizes of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreStats {
    /// Stored host records (addresses with a counting observation, expired or not).
    pub hosts: u64,
    /// Stored domain-scan records (one per name).
    pub domain_scans: u64,
    /// Size of the file in bytes.
    pub file_bytes: u64,
}

/// The scan store: host records and domain-scan records in one redb file.
pub struct DurableStore {
    /// Shared with the snapshots taken of it, which read through it after the store is
    /// dropped (the file stays open and locked until the last of them is gone).
    db: Arc<Database>,
    path: PathBuf,
}

impl fmt::Debug for DurableStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl DurableStore {
    /// Opens the store at `path`, creating it when the file is missing or empty.
    ///
    /// A new store records [`SCHEMA_VERSION`]; an existing one must carry it. The file is
    /// locked for this process while the store is open.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let db = Database::create(path).map_err(|e| StoreError::Open {
            path: path.to_owned(),
            source: Box::new(e.into()),
        })?;
        let txn = db.begin_write().map_err(failed("opening the store"))?;
        {
            let mut meta = txn
                .open_table(META)
                .map_err(failed("opening the meta table"))?;
            let found = meta
                .get(SCHEMA_VERSION_KEY)
                .map_err(failed("reading the schema version"))?
                .map(|v| v.value());
            match found {
                Some(SCHEMA_VERSION) => {}
                Some(found) => {
                    return Err(StoreError::VersionMismatch {
                        path: path.to_owned(),
                        found,
                        supported: SCHEMA_VERSION,
                    });
                }
                None => {
                    let foreign = txn
                        .list_tables()
                        .map_err(failed("listing tables"))?
                        .any(|t| t.name() != META_TABLE);
                    if foreign {
                        return Err(StoreError::NotAStore {
                            path: path.to_owned(),
                        });
                    }
                    meta.insert(SCHEMA_VERSION_KEY, SCHEMA_VERSION)
                        .map_err(failed("recording the schema version"))?;
                }
            }
            txn.open_table(HOSTS)
                .map_err(failed("creating the hosts table"))?;
            txn.open_table(DOMAIN_SCANS)
                .map_err(failed("creating the domain-scans table"))?;
        }
        txn.commit().map_err(failed("initialising the store"))?;
        Ok(Self {
            db: Arc::new(db),
            path: path.to_owned(),
        })
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Merges a batch of observations in one write transaction, and returns what it did once
    /// the transaction is committed (durably: on disk).
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
        self.apply_all(observations.iter().cloned(), &mut Written::default())
    }

    /// [`Self::apply_batch`], adding to `written` the keys of the host records and the names
    /// of the domain-scan records it wrote (once the batch is committed; on an error
    /// `written` is as it was).
    pub fn apply_batch_noting(
        &mut self,
        observations: &[Observation],
        written: &mut Written,
    ) -> Result<BatchSummary, StoreError> {
        let mut noted = Written::default();
        let summary = self.apply_all(observations.iter().cloned(), &mut noted)?;
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
        self.apply_all(observations.drain(..), &mut Written::default())
    }

    /// Merges the batch; notes in `written` what it wrote (meaningful once it committed).
    fn apply_all(
        &mut self,
        observations: impl Iterator<Item = Observation>,
        written: &mut Written,
    ) -> Result<BatchSummary, StoreError> {
        let mut slots: Vec<Option<ServiceObservation>> = Vec::new();
        let mut order: Vec<(HostKey, usize)> = Vec::new();
        let mut scans: Vec<DomainScan> = Vec::new();
        for obs in observations {
            match obs {
                Observation::Service(s) => {
                    order.push((HostKey::of(s.ip), slots.len()));
                    slots.push(Some(s));
                }
                Observation::Domain(d) => scans.push(d),
            }
        }
        // Host order, then arrival order within a host, so the B-tree is walked once. The
        // small (key, position) pairs are sorted, not the observations (moving those around
        // cost the sort most of its time).
        order.sort_unstable();
        let services = order.into_iter().map(|(key, at)| {
            let obs = slots[at].take();
            (key, obs.expect("each position is taken once"))
        });

        let mut summary = BatchSummary::default();
        let txn = self.db.begin_write().map_err(failed("starting a batch"))?;
        {
            let mut hosts = txn
                .open_table(HOSTS)
                .map_err(failed("opening the hosts table"))?;
            let mut buf = Vec::with_capacity(1024);
            let mut services = services.peekable();
            while let Some((key, first)) = services.next() {
                let stored = hosts.get(&key.0).map_err(failed("reading a host record"))?;
                let mut record = match &stored {
                    Some(bytes) => decode_stored_host(key, bytes.value())?,
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
                // Compared in place, then released: the table is borrowed until then.
                let unchanged = stored.is_some_and(|bytes| bytes.value() == buf.as_slice());
                if !unchanged {
                    hosts
                        .insert(&key.0, buf.as_slice())
                        .map_err(failed("writing a host record"))?;
                    summary.hosts_written += 1;
                    written.hosts.push(key);
                }
            }
        }
        if !scans.is_empty() {
            let mut table = txn
                .open_table(DOMAIN_SCANS)
                .map_err(failed("opening the domain-scans table"))?;
            let mut current = DomainScans::default();
            let mut loaded = BTreeSet::<DomainName>::new();
            let mut changed = BTreeSet::<DomainName>::new();
            for scan in scans {
                if loaded.insert(scan.name.clone()) {
                    let stored = table
                        .get(scan.name.as_str())
                        .map_err(failed("reading a domain scan"))?;
                    if let Some(bytes) = stored {
                        let old = decode_stored_scan(scan.name.as_str(), bytes.value())?;
                        current.by_name.insert(old.name.clone(), old);
                    }
                }
                let name = scan.name.clone();
                let outcome = current.apply(scan);
                if outcome == ApplyOutcome::Applied {
                    changed.insert(name);
                }
                summary.count(outcome);
            }
            for name in &changed {
                if let Some(scan) = current.by_name.get(name) {
                    table
                        .insert(name.as_str(), codec::encode_domain_scan(scan).as_slice())
                        .map_err(failed("writing a domain scan"))?;
                    summary.domain_scans_written += 1;
                }
            }
            written.domain_scans.extend(changed);
        }
        if summary.hosts_written + summary.domain_scans_written > 0 {
            let mut meta = txn
                .open_table(META)
                .map_err(failed("opening the meta table"))?;
            let generation = meta
                .get(GENERATION_KEY)
                .map_err(failed("reading the generation"))?
                .map_or(0, |v| v.value());
            meta.insert(GENERATION_KEY, generation + 1)
                .map_err(failed("advancing the generation"))?;
        }
        txn.commit().map_err(failed("committing a batch"))?;
        Ok(summary)
    }

    /// One consistent read view of the store as of the last committed batch; batches
    /// committed later are not seen by it. Holding it keeps the pages it reads from being
    /// reused, so the file grows while a long-lived snapshot and a writer coexist.
    pub fn snapshot(&self) -> Result<StoreSnapshot, StoreError> {
        let txn = self.db.begin_read().map_err(failed("starting a read"))?;
        let hosts = txn
            .open_table(HOSTS)
            .map_err(failed("opening the hosts table"))?;
        let scans = txn
            .open_table(DOMAIN_SCANS)
            .map_err(failed("opening the domain-scans table"))?;
        let generation = txn
            .open_table(META)
            .map_err(failed("opening the meta table"))?
            .get(GENERATION_KEY)
            .map_err(failed("reading the generation"))?
            .map_or(0, |v| v.value());
        Ok(StoreSnapshot {
            hosts,
            scans,
            generation,
            _db: Arc::clone(&self.db),
        })
    }

    /// The stored record of `ip`, if any (expired or not: retention is the reader's call).
    pub fn host(&self, ip: IpAddr) -> Result<Option<HostRecord>, StoreError> {
        self.snapshot()?.host(ip)
    }

    /// Every stored host record in host order, from one consistent snapshot of the store
    /// (batches committed while iterating are not seen).
    pub fn hosts(&self) -> Result<Hosts, StoreError> {
        self.snapshot()?.hosts()
    }

    /// The stored domain-scan records.
    pub fn domain_scans(&self) -> Result<DomainScans, StoreError> {
        self.snapshot()?.domain_scans()
    }

    /// Record counts and the size of the file.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let txn = self.db.begin_read().map_err(failed("starting a read"))?;
        let hosts = txn
            .open_table(HOSTS)
            .map_err(failed("opening the hosts table"))?
            .len()
            .map_err(failed("counting host records"))?;
        let domain_scans = txn
            .open_table(DOMAIN_SCANS)
            .map_err(failed("opening the domain-scans table"))?
            .len()
            .map_err(failed("counting domain scans"))?;
        let file_bytes = std::fs::metadata(&self.path)
            .map_err(|source| StoreError::Io {
                path: self.path.clone(),
                source,
            })?
            .len();
        Ok(StoreStats {
            hosts,
            domain_scans,
            file_bytes,
        })
    }
}

/// A consistent read view of the store; see [`DurableStore::snapshot`].
pub struct StoreSnapshot {
    hosts: redb::ReadOnlyTable<&'static [u8; 16], &'static [u8]>,
    scans: redb::ReadOnlyTable<&'static str, &'static [u8]>,
    generation: u64,
    /// Keeps the database open: redb refuses reads once it is closed.
    _db: Arc<Database>,
}

impl fmt::Debug for StoreSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreSnapshot").finish_non_exhaustive()
    }
}

impl StoreSnapshot {
    /// The store's generation when this snapshot was taken ([`GENERATION_KEY`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The record of `ip`, if stored (expired or not).
    pub fn host(&self, ip: IpAddr) -> Result<Option<HostRecord>, StoreError> {
        self.host_by_key(HostKey::of(ip))
    }

    /// The record stored under `key`, if any.
    pub fn host_by_key(&self, key: HostKey) -> Result<Option<HostRecord>, StoreError> {
        let stored = self
            .hosts
            .get(&key.0)
            .map_err(failed("reading a host record"))?;
        stored
            .map(|v| decode_stored_host(key, v.value()))
            .transpose()
    }

    /// Every record in host order.
    pub fn hosts(&self) -> Result<Hosts, StoreError> {
        let range = self
            .hosts
            .range::<&[u8; 16]>(..)
            .map_err(failed("reading the hosts table"))?;
        Ok(Hosts { range })
    }

    /// The domain-scan record of `name`, if stored.
    pub fn domain_scan(&self, name: &DomainName) -> Result<Option<DomainScan>, StoreError> {
        let stored = self
            .scans
            .get(name.as_str())
            .map_err(failed("reading a domain scan"))?;
        stored
            .map(|v| decode_stored_scan(name.as_str(), v.value()))
            .transpose()
    }

    /// The domain-scan records.
    pub fn domain_scans(&self) -> Result<DomainScans, StoreError> {
        let mut scans = DomainScans::default();
        for entry in self
            .scans
            .iter()
            .map_err(failed("reading the domain scans"))?
        {
            let (name, bytes) = entry.map_err(failed("reading the domain scans"))?;
            let scan = decode_stored_scan(name.value(), bytes.value())?;
            scans.by_name.insert(scan.name.clone(), scan);
        }
        Ok(scans)
    }
}

/// The stored host records in host order; see [`DurableStore::hosts`].
pub struct Hosts {
    range: redb::Range<'static, &'static [u8; 16], &'static [u8]>,
}

impl fmt::Debug for Hosts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hosts").finish_non_exhaustive()
    }
}

impl Iterator for Hosts {
    type Item = Result<HostRecord, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.range.next()?;
        Some(
            entry
                .map_err(failed("reading the hosts table"))
                .and_then(|(key, value)| decode_stored_host(HostKey(*key.value()), value.value())),
        )
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
