//! [`LiveIndex`]: the embedded engine as a running server uses it — the durable store, the
//! [`EmbeddedIndex`] snapshot currently answering, and the swap from one snapshot to the next.
//!
//! Searches read the current snapshot (an `Arc`, taken under a read lock held only for the
//! clone), so a search never waits for ingest or for a rebuild, and always sees one
//! consistent snapshot from start to end. Batches applied through
//! [`LiveIndex::apply_batch`] are durable when it returns and visible once the next snapshot
//! is built: [`LiveIndex::refresh`] builds it in the caller's thread while the old one goes
//! on answering, then swaps it in; [`LiveIndex::spawn_refresher`] calls it on a background
//! thread every interval, so new data is searchable within one interval plus one build.
//!
//! **The index file:** a built snapshot is saved next to the store (`scan.index` beside
//! `scan.redb`, see [`crate::engine`]'s `persist`), and [`LiveIndex::open`] loads it when it
//! was built from the store's current generation, so a restart reads one file instead of
//! rebuilding from every record; otherwise it builds and saves. Refreshes save too.
//!
//! A snapshot is also rebuilt when it is older than [`LiveIndex::MAX_SNAPSHOT_AGE_SECS`]
//! even without new data, so services leave the retention window as time passes (a snapshot
//! applies the window at the moment it was built; see [`crate::engine`]).
//!
//! **Boundary:** one process owns a store (redb locks the file), so data reaches a running
//! server through that process's [`LiveIndex::apply_batch`], not through a second process
//! writing the file.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use periscope_model::observation::{DomainScan, Observation};
use periscope_model::{DomainName, Timestamp};
use periscope_query::{FilterQuery, Query, Resolution};

use crate::api::{
    Count, Exposure, Facets, HostDetail, IndexError, ScanIndex, SearchOutcome, SearchRequest,
};
use crate::durable::{BatchSummary, DurableStore, StoreError};
use crate::engine::{BuildError, EmbeddedIndex, LoadError};
use crate::store::IndexConfig;

/// The durable store and the snapshot answering searches; see the module documentation.
#[derive(Debug)]
pub struct LiveIndex {
    config: IndexConfig,
    /// Where snapshots are saved.
    index_path: PathBuf,
    store: Mutex<DurableStore>,
    current: RwLock<Arc<EmbeddedIndex>>,
    /// Batches committed since the store was opened.
    committed: AtomicU64,
    /// The value of `committed` the current snapshot was built after.
    built_after: AtomicU64,
    /// Held while a snapshot is being built, so two refreshes never build at once.
    building: Mutex<()>,
}

impl LiveIndex {
    /// A snapshot is rebuilt after this many seconds even without new data, so the
    /// retention window moves on.
    pub const MAX_SNAPSHOT_AGE_SECS: i64 = 3_600;

    /// The index file of the store at `store_path`: the same name with `.index`.
    pub fn index_path(store_path: &Path) -> PathBuf {
        store_path.with_extension("index")
    }

    /// Opens the store at `path` (creating it when missing) and its first snapshot: loaded
    /// from the index file when that was built from the store as it is, otherwise built
    /// current at `now` and saved. Says which it did.
    pub fn open(
        path: &Path,
        config: IndexConfig,
        now: Timestamp,
    ) -> Result<(Self, Opened), BuildError> {
        let store = DurableStore::open(path)?;
        let index_path = Self::index_path(path);
        let (first, opened) = match EmbeddedIndex::load(&index_path, store.snapshot()?, config) {
            Ok(index) => (index, Opened::Loaded),
            Err(why) => {
                let index = EmbeddedIndex::from_store(&store, config, now)?;
                let saved = index.save(&index_path);
                (index, Opened::Built { why, saved })
            }
        };
        let live = Self {
            config,
            index_path,
            store: Mutex::new(store),
            current: RwLock::new(Arc::new(first)),
            committed: AtomicU64::new(0),
            built_after: AtomicU64::new(0),
            building: Mutex::new(()),
        };
        Ok((live, opened))
    }

    /// Runs `f` on the store (under the lock batches are applied under).
    pub fn with_store<T>(&self, f: impl FnOnce(&DurableStore) -> T) -> T {
        f(&self.store.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The snapshot answering now.
    pub fn current(&self) -> Arc<EmbeddedIndex> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Applies a batch to the store (one durable transaction, as
    /// [`DurableStore::apply_batch`]); it becomes searchable with the next snapshot.
    pub fn apply_batch(&self, observations: &[Observation]) -> Result<BatchSummary, StoreError> {
        let mut store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
        let summary = store.apply_batch(observations)?;
        self.committed.fetch_add(1, Ordering::SeqCst);
        Ok(summary)
    }

    /// True when batches were committed after the current snapshot was built.
    pub fn is_stale(&self) -> bool {
        self.committed.load(Ordering::SeqCst) != self.built_after.load(Ordering::SeqCst)
    }

    /// Builds a new snapshot current at `now` and swaps it in, when batches were committed
    /// since the current one was built or it is older than [`Self::MAX_SNAPSHOT_AGE_SECS`],
    /// then saves it to the index file. Returns whether it swapped. Searches go on against
    /// the old snapshot meanwhile. A failed save ([`BuildError::Save`]) comes after the swap:
    /// the new snapshot answers, and the next start rebuilds.
    pub fn refresh(&self, now: Timestamp) -> Result<bool, BuildError> {
        let _building = self.building.lock().unwrap_or_else(PoisonError::into_inner);
        let age = now.unix() - self.current().built_at().unix();
        if !self.is_stale() && age < Self::MAX_SNAPSHOT_AGE_SECS {
            return Ok(false);
        }
        // Read the counter before taking the store snapshot: a batch committed in between is
        // in the snapshot and counted again later, which costs at most one extra rebuild.
        let committed = self.committed.load(Ordering::SeqCst);
        let snapshot = {
            let store = self.store.lock().unwrap_or_else(PoisonError::into_inner);
            store.snapshot()?
        };
        let next = EmbeddedIndex::from_snapshot(snapshot, self.config, now)?;
        let next = Arc::new(next);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&next);
        self.built_after.store(committed, Ordering::SeqCst);
        next.save(&self.index_path)
            .map_err(|source| BuildError::Save {
                path: self.index_path.clone(),
                source,
            })?;
        Ok(true)
    }

    /// Calls [`Self::refresh`] every `interval` on a background thread, with `clock` giving
    /// the time, until `stop` is set. A failed rebuild keeps the old snapshot answering and
    /// is passed to `on_error`; the next interval tries again.
    pub fn spawn_refresher(
        self: &Arc<Self>,
        interval: Duration,
        clock: impl Fn() -> Timestamp + Send + 'static,
        stop: Arc<AtomicBool>,
        on_error: impl Fn(&BuildError) + Send + 'static,
    ) -> std::io::Result<JoinHandle<()>> {
        let live = Arc::clone(self);
        std::thread::Builder::new()
            .name("index-refresh".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(interval);
                    if let Err(e) = live.refresh(clock()) {
                        on_error(&e);
                    }
                }
            })
    }
}

/// How [`LiveIndex::open`] got its first snapshot.
#[derive(Debug)]
pub enum Opened {
    /// Loaded from the index file.
    Loaded,
    /// Built from the store because the index file could not be used, then saved (or not).
    Built {
        /// Why the file was not used (missing, stale, corrupt).
        why: LoadError,
        /// Whether saving the new file worked.
        saved: std::io::Result<()>,
    },
}

impl ScanIndex for LiveIndex {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        self.current().search(req)
    }

    fn count(&self, query: &Query, now: Timestamp) -> Result<Count, IndexError> {
        self.current().count(query, now)
    }

    fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<Facets, IndexError> {
        self.current().facets(query, now)
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        self.current().exposure(query, resolution, now)
    }

    fn domain_scans_of_name(&self, name: &DomainName) -> Result<Vec<DomainScan>, IndexError> {
        self.current().domain_scans_of_name(name)
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        self.current().domain_scans_of_address(ip)
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        self.current().host_detail(ip, continuation, limit, now)
    }
}
