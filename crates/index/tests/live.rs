//! `LiveIndex`: batches become searchable with the next snapshot, a search keeps the snapshot
//! it started with, the background refresher picks new batches up without being asked, and a
//! snapshot is rebuilt as it ages so expired services leave.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use periscope_index::api::ScanIndex;
use periscope_index::{IndexConfig, LiveIndex};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader};
use periscope_query::Query;

const NOW: &str = "2026-11-20T14:00:00Z";

fn now() -> Timestamp {
    Timestamp::parse(NOW).unwrap()
}

/// A fresh store path in its own directory, removed on drop.
struct TempStore(PathBuf);

impl TempStore {
    fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("periscope-live-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn path(&self) -> PathBuf {
        self.0.join("scan.redb")
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn service(address: &str, port: u16, at: &str) -> Vec<Observation> {
    let line = format!(
        r#"{{"kind":"service","ip":"{address}","port":{port},"transport":"tcp","protocol":"https","observed_at":"{at}","status":"completed"}}"#
    );
    ObservationReader::new(now())
        .read_line(&line)
        .unwrap()
        .into_iter()
        .collect()
}

fn count(index: &impl ScanIndex, text: &str) -> u64 {
    let query: Query = text.parse().unwrap();
    index.count(&query, now()).unwrap().value
}

#[test]
fn a_batch_is_searchable_after_the_next_refresh_and_a_held_snapshot_stays_as_it_was() {
    let dir = TempStore::new("refresh");
    let live = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert_eq!(count(&live, "port:443"), 0);
    assert!(!live.is_stale());
    assert!(!live.refresh(now()).unwrap(), "nothing new: no rebuild");

    live.apply_batch(&service("240.0.0.1", 443, "2026-11-20T10:00:00Z"))
        .unwrap();
    assert!(live.is_stale());
    assert_eq!(count(&live, "port:443"), 0, "not before the next snapshot");
    let held = live.current();

    assert!(live.refresh(now()).unwrap());
    assert!(!live.is_stale());
    assert_eq!(count(&live, "port:443"), 1);
    assert_eq!(
        count(held.as_ref(), "port:443"),
        0,
        "a held snapshot does not change"
    );
    assert!(!live.refresh(now()).unwrap());
}

#[test]
fn the_background_refresher_makes_new_batches_searchable() {
    let dir = TempStore::new("background");
    let live = Arc::new(LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let refresher = live
        .spawn_refresher(Duration::from_millis(20), now, Arc::clone(&stop), |e| {
            panic!("rebuild failed: {e}")
        })
        .unwrap();
    live.apply_batch(&service("240.0.0.7", 8443, "2026-11-20T10:00:00Z"))
        .unwrap();
    // A deadline for liveness, not a speed check: the refresher runs every 20 ms.
    let deadline = Instant::now() + Duration::from_secs(60);
    while count(live.as_ref(), "port:8443") == 0 {
        assert!(Instant::now() < deadline, "the refresher never swapped");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::SeqCst);
    refresher.join().unwrap();
}

#[test]
fn an_aged_snapshot_is_rebuilt_so_expired_services_leave() {
    let dir = TempStore::new("aging");
    let live = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    // Observed 29 days and 23 hours before `now`: current now, expired two hours later.
    live.apply_batch(&service("240.0.0.2", 443, "2026-10-21T15:00:00Z"))
        .unwrap();
    assert!(live.refresh(now()).unwrap());
    assert_eq!(count(&live, "port:443"), 1);

    let soon = Timestamp::from_unix(now().unix() + 60).unwrap();
    assert!(!live.refresh(soon).unwrap(), "young snapshot, nothing new");
    let later =
        Timestamp::from_unix(now().unix() + LiveIndex::MAX_SNAPSHOT_AGE_SECS + 3_600).unwrap();
    assert!(live.refresh(later).unwrap(), "an old snapshot is rebuilt");
    assert_eq!(count(&live, "port:443"), 0);
}
