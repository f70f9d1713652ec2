//! [`LiveIndex`]: the embedded engine as a running server uses it — the durable store, the
//! view answering searches ([`LayeredIndex`]: a large base [`EmbeddedIndex`] and a small
//! delta over it), and how new data reaches that view.
//!
//! Searches read the current view (an `Arc`, taken under a read lock held only for the
//! clone), so a search never waits for ingest or for a rebuild, and always sees one
//! consistent view from start to end. Batches applied through [`LiveIndex::apply_batch`]
//! are durable when it returns, and the keys of the records they wrote are noted. They are
//! visible once the next view is swapped in:
//! - **Delta refresh** ([`LiveIndex::refresh`], usually): the base stays; a new delta is
//!   built from only the records written since the base was built (read by key from the
//!   latest store snapshot), and the base's hosts at those addresses are shadowed. Its cost
//!   follows the delta, not the store: milliseconds to a second or so (see
//!   `docs/benchmarks.md`), at any store size.
//! - **Retention:** a base applies the retention window at the moment it was built (see
//!   [`crate::engine`]); as time passes, the base's hosts whose oldest service the window
//!   has reached are re-read into the delta too (the base knows them by the hour of that
//!   service), so services leave the window without a rebuild: a delta refresh runs when
//!   batches were committed or the window entered another hour.
//! - **Full rebuild**: when the delta would hold more addresses than
//!   [`LiveIndex::delta_limit`] allows (by default a tenth of the base, within
//!   [`LiveIndex::MIN_DELTA`]..=[`LiveIndex::MAX_DELTA`]), or the base is older than
//!   [`LiveIndex::MAX_SNAPSHOT_AGE_SECS`] (a day), a new base is built from the whole
//!   store. [`LiveIndex::spawn_refresher`] runs it on a thread of its own while delta
//!   refreshes go on over the old base; when it is done, the new base and a delta of what
//!   was written meanwhile replace the old view in one swap, and only then is the index file
//!   saved.
//!
//! **The index file:** a base is saved next to the store (`scan.index` beside `scan.store`,
//! see [`crate::engine`]'s `persist`) by full rebuilds only; each delta refresh saves the
//! delta journal instead (`scan.delta`: the base's generation, the delta's, and the keys
//! and names in between — small). [`LiveIndex::open`] loads the index file when it was
//! built from the store's current generation, or from an older one that the journal
//! reaches the store's generation from (then it rebuilds the delta from the journal's
//! records), so a restart reads one file and a few records instead of rebuilding from every
//! record; otherwise (batches committed after the last refresh, a damaged or missing file)
//! it builds and saves.
//!
//! **Memory:** a full rebuild holds the old base (answering) and the new one until the swap,
//! as every rebuild did before there was a delta; a delta refresh adds only the delta. The
//! first start that builds (no usable index file) builds and saves on a thread of its own,
//! drops the built index there and then answers from the file loaded back: it holds what a
//! restart holds, not what the build left behind (the allocator returns what a thread freed
//! when the thread ends, see `docs/benchmarks.md`).
//!
//! **Boundary:** one process owns a store (it locks the store directory), so data reaches a running
//! server through that process's [`LiveIndex::apply_batch`], not through a second process
//! writing the file.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use periscope_model::observation::{DomainScan, Observation};
use periscope_model::{DomainName, Timestamp};
use periscope_query::{FilterQuery, Query, Resolution};

use crate::api::{
    Count, Exposure, Facets, HostDetail, IndexError, ScanIndex, SearchOutcome, SearchRequest,
};
use crate::durable::{BatchSummary, DurableStore, StoreError, Written};
use crate::engine::{BuildError, DeltaJournal, EmbeddedIndex, LayeredIndex, LoadError};
use crate::store::IndexConfig;

/// The durable store and the view answering searches; see the module documentation.
#[derive(Debug)]
pub struct LiveIndex {
    config: IndexConfig,
    /// Where bases are saved.
    index_path: PathBuf,
    /// Where the delta journal is saved.
    journal_path: PathBuf,
    store: Mutex<DurableStore>,
    current: RwLock<Arc<LayeredIndex>>,
    /// What batches wrote since the current base was built.
    written: Mutex<Since>,
    /// Batches committed since the store was opened that wrote something.
    committed: AtomicU64,
    /// The value of `committed` the current view was built after.
    built_after: AtomicU64,
    /// Held while a view is built and swapped in (a delta refresh, the end of a full
    /// rebuild), so two never interleave.
    building: Mutex<()>,
    /// Held for a whole full rebuild, so two never run at once.
    rebuilding: Mutex<()>,
    /// [`Self::set_delta_limit`]: `u64::MAX` for the default rule.
    delta_limit: AtomicU64,
}

/// Per key (and per domain-scan name): the batch (a value of `committed`) that last wrote it.
/// Entries are dropped when a base that includes them is swapped in, so every entry is a
/// record the current base does not have.
#[derive(Debug, Default)]
struct Since {
    hosts: BTreeMap<u128, u64>,
    names: BTreeMap<DomainName, u64>,
}

impl Since {
    /// The keys and names written after batch `after`, ascending.
    fn after(&self, after: u64) -> (Vec<u128>, Vec<DomainName>) {
        let hosts = self
            .hosts
            .iter()
            .filter(|(_, b)| **b > after)
            .map(|(k, _)| *k)
            .collect();
        let names = self
            .names
            .iter()
            .filter(|(_, b)| **b > after)
            .map(|(n, _)| n.clone())
            .collect();
        (hosts, names)
    }
}

/// Removes the file at `path`; a missing file is fine.
fn remove_if_present(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Which refresh swapped in a new view ([`LiveIndex::spawn_refresher`]'s `on_swap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshKind {
    /// A full rebuild of the base.
    Full,
    /// A delta over the current base.
    Delta,
}

impl RefreshKind {
    /// `full` or `delta`, as metrics label it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Delta => "delta",
        }
    }
}

impl LiveIndex {
    /// A base is rebuilt after this many seconds even when its delta is small. (The
    /// retention window moves through the delta: hosts it reaches are re-read into the delta
    /// each hour. A daily base also lets the store reuse the pages its snapshot holds.)
    pub const MAX_SNAPSHOT_AGE_SECS: i64 = 86_400;

    /// The default delta limit is a tenth of the base's hosts, but never below this…
    pub const MIN_DELTA: u64 = 20_000;

    /// …nor above this: a delta refresh takes about two seconds per 100,000 addresses on
    /// the 2-core machine (`docs/benchmarks.md`), so a refresh stays within a few seconds.
    pub const MAX_DELTA: u64 = 200_000;

    /// The index file of the store at `path`: the same name with `.index`.
    pub fn index_path(store_path: &Path) -> PathBuf {
        store_path.with_extension("index")
    }

    /// The delta journal of the store at `path`: the same name with `.delta`.
    pub fn journal_path(store_path: &Path) -> PathBuf {
        store_path.with_extension("delta")
    }

    /// Opens the store at `path` (creating it when missing) and its first view: the base
    /// loaded from the index file when that was built from the store as it is — or from an
    /// older generation that the delta journal covers up to the store's, the delta then
    /// rebuilt from the journal's records (current at `now`) — otherwise built current at
    /// `now` and saved. Says which it did.
    pub fn open(
        path: &Path,
        config: IndexConfig,
        now: Timestamp,
    ) -> Result<(Self, Opened), BuildError> {
        let index_path = Self::index_path(path);
        let journal_path = Self::journal_path(path);
        // The index file is read on a second thread while the store's runs load: at ten
        // million hosts each takes about a second.
        let (store, file) =
            DurableStore::open_alongside(path, || EmbeddedIndex::read_file(&index_path, config))?;
        let snapshot = store.snapshot()?;
        let journal = DeltaJournal::load(&journal_path)
            .ok()
            .filter(|j| j.generation == snapshot.generation());
        let (base_generation, journal) = match journal {
            Some(j) => (j.base_generation, Some(j)),
            None => (snapshot.generation(), None),
        };
        let loaded = file.and_then(|file| file.attach(base_generation, snapshot));
        let (first, journal, opened) = match loaded {
            Ok(index) => (index, journal, Opened::Loaded),
            Err(why) => {
                let (built, saved) =
                    build_and_save(&store, config, now, &index_path, &journal_path)?;
                // Saved: the index answering is the file loaded, as a restart would load it,
                // so that the first start holds what every later one does (the build's
                // transient allocations all freed, nothing sized for growth).
                let index = match built {
                    Some(built) => built,
                    None => EmbeddedIndex::load(&index_path, store.snapshot()?, config).map_err(
                        |source| BuildError::Reload {
                            path: index_path.clone(),
                            source,
                        },
                    )?,
                };
                (index, None, Opened::Built { why, saved })
            }
        };
        let first = Arc::new(first);
        let mut since = Since::default();
        let view = match journal {
            Some(j) => {
                let view =
                    LayeredIndex::with_delta(first, store.snapshot()?, &j.hosts, &j.names, now)?;
                // Batch 1: what the journal holds, written before this process started.
                since.hosts = j.hosts.into_iter().map(|k| (k, 1)).collect();
                since.names = j.names.into_iter().map(|n| (n, 1)).collect();
                view
            }
            None => LayeredIndex::new(first),
        };
        let live = Self {
            config,
            index_path,
            journal_path,
            store: Mutex::new(store),
            current: RwLock::new(Arc::new(view)),
            written: Mutex::new(since),
            committed: AtomicU64::new(1),
            built_after: AtomicU64::new(1),
            building: Mutex::new(()),
            rebuilding: Mutex::new(()),
            delta_limit: AtomicU64::new(u64::MAX),
        };
        Ok((live, opened))
    }

    /// Runs `f` on the store (under the lock batches are applied under).
    pub fn with_store<T>(&self, f: impl FnOnce(&DurableStore) -> T) -> T {
        f(&lock(&self.store))
    }

    /// The view answering now: the base and its delta.
    pub fn current(&self) -> Arc<LayeredIndex> {
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Applies a batch to the store (one durable transaction, as
    /// [`DurableStore::apply_batch`]); it becomes searchable with the next refresh.
    pub fn apply_batch(&self, observations: &[Observation]) -> Result<BatchSummary, StoreError> {
        let mut store = lock(&self.store);
        let mut written = Written::default();
        let summary = store.apply_batch_noting(observations, &mut written)?;
        if written.hosts.is_empty() && written.domain_scans.is_empty() {
            return Ok(summary);
        }
        // Noted and counted under the store lock: a refresh that takes a store snapshot
        // under it sees exactly the batches counted and their keys.
        let batch = self.committed.load(Ordering::SeqCst) + 1;
        let mut since = lock(&self.written);
        for key in written.hosts {
            since.hosts.insert(u128::from_be_bytes(key.0), batch);
        }
        for name in written.domain_scans {
            since.names.insert(name, batch);
        }
        self.committed.store(batch, Ordering::SeqCst);
        Ok(summary)
    }

    /// True when batches were committed after the current view was built.
    pub fn is_stale(&self) -> bool {
        self.committed.load(Ordering::SeqCst) != self.built_after.load(Ordering::SeqCst)
    }

    /// At most this many addresses in a delta before a full rebuild is due, for a base of
    /// `base_hosts` hosts.
    pub fn delta_limit(&self, base_hosts: u64) -> u64 {
        match self.delta_limit.load(Ordering::SeqCst) {
            u64::MAX => (base_hosts / 10).clamp(Self::MIN_DELTA, Self::MAX_DELTA),
            fixed => fixed,
        }
    }

    /// Replaces the default delta limit with a fixed number of addresses (`Some(0)`: every
    /// refresh is a full rebuild), or restores the default (`None`).
    pub fn set_delta_limit(&self, addresses: Option<u64>) {
        let stored = addresses.map_or(u64::MAX, |n| n.min(u64::MAX - 1));
        self.delta_limit.store(stored, Ordering::SeqCst);
    }

    /// Whether a full rebuild is due at `now`: the base is older than
    /// [`Self::MAX_SNAPSHOT_AGE_SECS`] or the records written since it was built and its
    /// hosts the retention window has reached are more than [`Self::delta_limit`].
    pub fn full_rebuild_due(&self, now: Timestamp) -> bool {
        let view = self.current();
        let base = view.base();
        let age = now.unix() - base.built_at().unix();
        let pending = lock(&self.written).hosts.len() as u64 + view.expiring(now);
        age >= Self::MAX_SNAPSHOT_AGE_SECS || pending > self.delta_limit(base.stats().hosts)
    }

    /// Whether the retention window has entered another hour since the current view applied
    /// it, so that more base hosts may have lost a service (see [`LayeredIndex::with_delta`]).
    fn window_moved(&self, now: Timestamp) -> bool {
        let hour = |t: Timestamp| {
            t.unix()
                .saturating_sub(self.config.retention_secs)
                .div_euclid(3_600)
        };
        hour(now) != hour(self.current().as_of())
    }

    /// Makes every committed batch searchable, current at `now`: a full rebuild in the
    /// caller's thread when one is due ([`Self::full_rebuild_due`]) and none is running,
    /// otherwise a delta refresh when batches were committed since the current view or the
    /// retention window moved into another hour ([`Self::refresh_delta`]).
    /// Returns whether it swapped. Searches go on against the old view meanwhile. A failed
    /// save ([`BuildError::Save`]) comes after the swap: the new view answers, and the next
    /// start rebuilds.
    pub fn refresh(&self, now: Timestamp) -> Result<bool, BuildError> {
        if self.full_rebuild_due(now) {
            let guard = match self.rebuilding.try_lock() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if guard.is_some() {
                self.rebuild(now)?;
                return Ok(true);
            }
        }
        self.refresh_delta(now)
    }

    /// Rebuilds the delta from the records written since the base was built and those of
    /// base hosts the retention window has reached, current at `now`, and swaps it in, when
    /// batches were committed since the current view was built or the window entered
    /// another hour. Returns whether it swapped.
    pub fn refresh_delta(&self, now: Timestamp) -> Result<bool, BuildError> {
        let _building = lock(&self.building);
        if !self.is_stale() && !self.window_moved(now) {
            return Ok(false);
        }
        let (snapshot, committed, (keys, names)) = {
            let store = lock(&self.store);
            let committed = self.committed.load(Ordering::SeqCst);
            (store.snapshot()?, committed, lock(&self.written).after(0))
        };
        let base = Arc::clone(self.current().base());
        let next = Arc::new(LayeredIndex::with_delta(
            base, snapshot, &keys, &names, now,
        )?);
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&next);
        self.built_after.store(committed, Ordering::SeqCst);
        self.save_journal(&next)?;
        Ok(true)
    }

    /// Saves the delta journal of `view` (the caller holds `building`, so journals are
    /// written in the order views are swapped in).
    fn save_journal(&self, view: &LayeredIndex) -> Result<(), BuildError> {
        let Some(journal) = view.journal() else {
            return Ok(());
        };
        journal
            .save(&self.journal_path)
            .map_err(|source| BuildError::Save {
                path: self.journal_path.clone(),
                source,
            })
    }

    /// A full rebuild (the caller holds `rebuilding`): a new base from the whole store,
    /// current at `now`, and a delta of what was written while it was built, swapped in
    /// together; then the base is saved.
    fn rebuild(&self, now: Timestamp) -> Result<(), BuildError> {
        let (snapshot, included) = {
            let store = lock(&self.store);
            (store.snapshot()?, self.committed.load(Ordering::SeqCst))
        };
        let base = Arc::new(EmbeddedIndex::from_snapshot(snapshot, self.config, now)?);
        let failed = |path: &Path| {
            let path = path.to_owned();
            move |source| BuildError::Save { path, source }
        };
        {
            let _building = lock(&self.building);
            let (snapshot, committed, (keys, names)) = {
                let store = lock(&self.store);
                let committed = self.committed.load(Ordering::SeqCst);
                (
                    store.snapshot()?,
                    committed,
                    lock(&self.written).after(included),
                )
            };
            let next = LayeredIndex::with_delta(Arc::clone(&base), snapshot, &keys, &names, now)?;
            *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
            self.built_after.store(committed, Ordering::SeqCst);
            let mut since = lock(&self.written);
            since.hosts.retain(|_, b| *b > included);
            since.names.retain(|_, b| *b > included);
            // The journal on disk belongs to the old base: removed before the new file is
            // written, so a crash in between never pairs it with the new file.
            remove_if_present(&self.journal_path).map_err(failed(&self.journal_path))?;
        }
        // Delta refreshes go on while the file is written; a journal one of them saves
        // meanwhile names the new base, which a restart pairs only with the new file.
        base.save(&self.index_path)
            .map_err(failed(&self.index_path))?;
        let _building = lock(&self.building);
        let view = self.current();
        if Arc::ptr_eq(view.base(), &base) {
            self.save_journal(&view)?;
        }
        Ok(())
    }

    /// Every `interval` on a background thread, with `clock` giving the time, until `stop`
    /// is set: starts a full rebuild on a thread of its own when one is due and none runs,
    /// and refreshes the delta (so new data stays searchable within about an interval while
    /// a full rebuild takes minutes). Each refresh that swapped in a new view is passed to
    /// `on_swap` with its kind and how long it took (for metrics). A failed build keeps the
    /// old view answering and is passed to `on_error`; the next interval tries again.
    pub fn spawn_refresher(
        self: &Arc<Self>,
        interval: Duration,
        clock: impl Fn() -> Timestamp + Send + 'static,
        stop: Arc<AtomicBool>,
        on_swap: impl Fn(RefreshKind, Duration) + Send + Sync + 'static,
        on_error: impl Fn(&BuildError) + Send + Sync + 'static,
    ) -> std::io::Result<JoinHandle<()>> {
        let live = Arc::clone(self);
        let on_swap = Arc::new(on_swap);
        let on_error = Arc::new(on_error);
        std::thread::Builder::new()
            .name("index-refresh".into())
            .spawn(move || {
                let rebuilding = Arc::new(AtomicBool::new(false));
                while !stop.load(Ordering::SeqCst) {
                    std::thread::sleep(interval);
                    let now = clock();
                    if live.full_rebuild_due(now) && !rebuilding.swap(true, Ordering::SeqCst) {
                        let (flag, swapped, report) = (
                            Arc::clone(&rebuilding),
                            Arc::clone(&on_swap),
                            Arc::clone(&on_error),
                        );
                        let started = Instant::now();
                        let spawned = live.spawn_rebuild(now, move |outcome| {
                            match outcome {
                                Ok(true) => swapped(RefreshKind::Full, started.elapsed()),
                                Ok(false) => {}
                                Err(e) => report(&e),
                            }
                            flag.store(false, Ordering::SeqCst);
                        });
                        if spawned.is_err() {
                            // No thread for it: rebuild here, delaying this refresh.
                            rebuilding.store(false, Ordering::SeqCst);
                            match live.refresh(now) {
                                Ok(true) => on_swap(RefreshKind::Full, started.elapsed()),
                                Ok(false) => {}
                                Err(e) => on_error(&e),
                            }
                        }
                    }
                    let started = Instant::now();
                    match live.refresh_delta(now) {
                        Ok(true) => on_swap(RefreshKind::Delta, started.elapsed()),
                        Ok(false) => {}
                        Err(e) => on_error(&e),
                    }
                }
            })
    }

    /// Runs a full rebuild current at `now` on a thread of its own (unless one runs
    /// already), then calls `done` with its outcome: whether it rebuilt.
    fn spawn_rebuild(
        self: &Arc<Self>,
        now: Timestamp,
        done: impl FnOnce(Result<bool, BuildError>) + Send + 'static,
    ) -> std::io::Result<JoinHandle<()>> {
        let live = Arc::clone(self);
        std::thread::Builder::new()
            .name("index-rebuild".into())
            .spawn(move || {
                let guard = match live.rebuilding.try_lock() {
                    Ok(guard) => guard,
                    Err(TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(TryLockError::WouldBlock) => return done(Ok(false)),
                };
                let outcome = live.rebuild(now).map(|()| true);
                drop(guard);
                done(outcome);
            })
    }
}

/// How long the thread of a first build rests after it has dropped what it built: past the
/// allocator's purge delays (mimalloc v2: 10 ms for a segment's pages, 100 ms for an
/// arena's blocks), so that what the build freed last is returned too when the thread ends
/// (at a million hosts it returned about 2 MiB more than ending at once, see
/// `docs/benchmarks.md`).
const BUILD_SETTLE: Duration = Duration::from_millis(250);

/// A first start's build: builds the index of the whole store and saves its file, on a
/// thread of its own. Gives back the index built only when it could not be saved
/// (`None`: read the file back), and whether it was saved.
///
/// Why a thread of its own: the allocator keeps pages the build freed until the thread that
/// freed them next allocates, and a server's starting thread goes on to serve, allocating
/// little; a thread returns what it freed as it ends. Built on the starting thread, a first
/// start held up to 40% more than a restart at a million hosts; built here, what a restart
/// holds (see `docs/benchmarks.md`).
fn build_and_save(
    store: &DurableStore,
    config: IndexConfig,
    now: Timestamp,
    index_path: &Path,
    journal_path: &Path,
) -> Result<(Option<EmbeddedIndex>, std::io::Result<()>), BuildError> {
    std::thread::scope(|scope| {
        let builder = scope.spawn(|| {
            let built = EmbeddedIndex::from_store(store, config, now)?;
            // A journal of an older file would never match again; it goes with it.
            let saved = remove_if_present(journal_path).and_then(|()| built.save(index_path));
            if saved.is_err() {
                return Ok((Some(built), saved));
            }
            drop(built);
            std::thread::sleep(BUILD_SETTLE);
            Ok((None, saved))
        });
        builder
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// How [`LiveIndex::open`] got its first base.
#[derive(Debug)]
pub enum Opened {
    /// Loaded from the index file (with a delta from the delta journal when batches were
    /// committed after the file was saved).
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
