//! `LiveIndex`: batches become searchable with the next refresh, a search keeps the view it
//! started with, the background refresher picks new batches up without being asked, a
//! refresh after a small batch builds only a delta (the base is the same `Arc`) while a delta
//! past the limit or a day-old base brings a full rebuild, expired services leave through
//! the delta, a
//! delta's hosts are summed among the base's in host order, and the index file: a restart
//! loads it (with the delta journal when batches came after it) when it matches the store,
//! answers exactly as the built view did, and rebuilds when it is stale, damaged or missing.
//! (Every answer of a base with a delta is compared with the reference in `tests/engine.rs`.)

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use periscope_index::api::{ScanIndex, SearchRequest};
use periscope_index::engine::LoadError;
use periscope_index::{IndexConfig, LayeredIndex, LiveIndex, Opened};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader};
use periscope_query::{Query, Resolution};
use periscope_synth::{SynthConfig, write_dataset};

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
        self.0.join("scan.store")
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
    let live = LiveIndex::open(&dir.path(), IndexConfig::default(), now())
        .unwrap()
        .0;
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
    let live = Arc::new(
        LiveIndex::open(&dir.path(), IndexConfig::default(), now())
            .unwrap()
            .0,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let refresher = live
        .spawn_refresher(
            Duration::from_millis(20),
            now,
            Arc::clone(&stop),
            |_, _| {},
            |e| panic!("rebuild failed: {e}"),
        )
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
fn expired_services_leave_through_the_delta_and_a_day_old_base_is_rebuilt() {
    let dir = TempStore::new("aging");
    let live = LiveIndex::open(&dir.path(), IndexConfig::default(), now())
        .unwrap()
        .0;
    // Observed 29 days and 23 hours before `now`: current now, expired two hours later.
    live.apply_batch(&service("240.0.0.2", 443, "2026-10-21T15:00:00Z"))
        .unwrap();
    assert!(live.refresh(now()).unwrap());
    assert_eq!(count(&live, "port:443"), 1);

    let base = Arc::clone(live.current().base());

    let soon = Timestamp::from_unix(now().unix() + 60).unwrap();
    assert!(!live.refresh(soon).unwrap(), "the same hour, nothing new");
    // Two hours later the service has left the window: the delta re-reads its host.
    let later = Timestamp::from_unix(now().unix() + 7_200).unwrap();
    assert!(live.refresh(later).unwrap(), "the window moved");
    assert_eq!(count(&live, "port:443"), 0);
    assert!(
        Arc::ptr_eq(live.current().base(), &base),
        "through the delta"
    );
    assert_eq!(live.current().delta_addresses(), 1);

    let next_day =
        Timestamp::from_unix(now().unix() + LiveIndex::MAX_SNAPSHOT_AGE_SECS + 60).unwrap();
    assert!(live.refresh(next_day).unwrap(), "a day-old base is rebuilt");
    assert!(!Arc::ptr_eq(live.current().base(), &base));
    assert_eq!(live.current().delta_addresses(), 0);
    assert_eq!(count(&live, "port:443"), 0);
}

#[test]
fn a_small_batch_builds_a_delta_and_a_large_one_a_new_base() {
    let dir = TempStore::new("delta");
    let (live, _) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    let first = Arc::clone(live.current().base());
    let at = "2026-11-20T10:00:00Z";
    let batch: Vec<Observation> = (1..=5)
        .flat_map(|i| service(&format!("240.0.0.{i}"), 443, at))
        .collect();
    live.apply_batch(&batch).unwrap();
    live.set_delta_limit(Some(6));
    assert!(!live.full_rebuild_due(now()));
    assert!(live.refresh(now()).unwrap());
    let view = live.current();
    assert!(
        Arc::ptr_eq(view.base(), &first),
        "a delta refresh keeps the base"
    );
    assert_eq!(view.delta_addresses(), 5);
    assert_eq!(count(&live, "port:443"), 5);

    // The same hosts again (a new service each) and two more: 7 addresses in the delta.
    let more: Vec<Observation> = (1..=7)
        .flat_map(|i| service(&format!("240.0.0.{i}"), 8443, at))
        .collect();
    live.apply_batch(&more).unwrap();
    assert!(live.full_rebuild_due(now()), "7 addresses > a limit of 6");
    assert!(live.refresh(now()).unwrap());
    let view = live.current();
    assert!(
        !Arc::ptr_eq(view.base(), &first),
        "past the limit: a new base"
    );
    assert_eq!(view.delta_addresses(), 0);
    assert_eq!(view.base().stats().hosts, 7);
    assert_eq!(
        (count(&live, "port:443"), count(&live, "port:8443")),
        (5, 7)
    );

    // A delta over the new base shadows the base's record of an address it rewrites.
    let rebuilt = Arc::clone(view.base());
    live.apply_batch(&service("240.0.0.1", 22, at)).unwrap();
    assert!(live.refresh(now()).unwrap());
    let view = live.current();
    assert!(Arc::ptr_eq(view.base(), &rebuilt));
    assert_eq!(view.delta_addresses(), 1);
    assert_eq!(view.stats().hosts, 7);
    assert_eq!(count(&live, "port:8443"), 7);
    assert_eq!(count(&live, "port:22"), 1);
    let detail = live
        .host_detail("240.0.0.1".parse().unwrap(), None, 20, now())
        .unwrap()
        .unwrap();
    assert_eq!(detail.host.services.len(), 3);
}

/// One service line of `address` with a position and a country.
fn placed(address: &str, latitude: f64) -> Vec<Observation> {
    let line = format!(
        r#"{{"kind":"service","ip":"{address}","port":443,"transport":"tcp","protocol":"https","observed_at":"2026-11-20T10:00:00Z","status":"completed","host":{{"location":{{"country_code":"DE","latitude":{latitude},"longitude":11.5755}}}}}}"#
    );
    ObservationReader::new(now())
        .read_line(&line)
        .unwrap()
        .into_iter()
        .collect()
}

#[test]
fn a_deltas_hosts_are_summed_with_the_bases_as_the_reference_sums_them() {
    let dir = TempStore::new("centroid");
    let (live, _) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    // As floats, (a + b) + c and (a + c) + b differ in the last bit; the centroid is the mean
    // of whole micro-degrees, the same whichever layer is summed first.
    let (a, b, c) = (48.1067, 48.1424, 48.1382);
    assert_ne!((a + b) + c, (a + c) + b);
    live.apply_batch(&[placed("240.0.0.1", a), placed("240.0.0.3", c)].concat())
        .unwrap();
    live.set_delta_limit(Some(0));
    assert!(live.refresh(now()).unwrap());
    live.set_delta_limit(None);
    live.apply_batch(&placed("240.0.0.2", b)).unwrap();
    assert!(live.refresh(now()).unwrap());
    assert_eq!(live.current().delta_addresses(), 1);
    let query: Query = "port:443".parse().unwrap();
    let exposure = live.exposure(&query, Resolution::Local, now()).unwrap();
    let [bucket] = exposure.buckets.as_slice() else {
        panic!("one tile: {exposure:?}")
    };
    assert_eq!(bucket.unique_hosts, 3);
    assert_eq!(
        bucket.latitude,
        (48_106_700.0 + 48_142_400.0 + 48_138_200.0) / 3.0 / 1e6
    );
}

/// `count` synthetic hosts, observed up to the start of `NOW`'s day.
fn synth(hosts: u64) -> Vec<Observation> {
    let cfg = SynthConfig {
        hosts,
        seed: 7,
        as_of: now().start_of_day(),
    };
    let mut out = Vec::new();
    write_dataset(&cfg, &mut out).unwrap();
    let mut reader = ObservationReader::new(now());
    String::from_utf8(out)
        .unwrap()
        .lines()
        .filter_map(|l| reader.read_line(l).unwrap())
        .collect()
}

/// Every kind of answer of `a`, written out (so they can be compared after `a` is gone: an
/// index holds its store open).
fn answers(a: &LayeredIndex) -> Vec<String> {
    let mut out = vec![format!("{:?} {}", a.stats(), a.generation())];
    let texts = [
        "port:443",
        "port:22 protocol:ssh",
        "product:\"openssh\"",
        "country:DE",
        "exploit:yes",
        "cvss:7.0-10.0",
        "organization:\"example\"",
        "cidr:240.0.0.0/24",
    ];
    for text in texts {
        let query: Query = text.parse().unwrap();
        let mut after = None;
        loop {
            let req = SearchRequest {
                query: &query,
                after,
                limit: 50,
                resolved: &[],
                now: now(),
            };
            let x = a.search(&req).unwrap();
            out.push(format!("{text}: {x:?}"));
            match x {
                periscope_index::SearchOutcome::Page(p) if p.has_more => {
                    after = p.hosts.last().map(|h| h.host.ip);
                }
                _ => break,
            }
        }
        out.push(format!("{text}: {:?}", a.count(&query, now()).unwrap()));
        for resolution in [Resolution::Global, Resolution::Regional, Resolution::Local] {
            let e = a.exposure(&query, resolution, now()).unwrap();
            out.push(format!("{text} {resolution:?}: {e:?}"));
        }
        if let Query::Filter(f) = &query {
            out.push(format!("{text}: {:?}", a.facets(f, now()).unwrap()));
        }
    }
    let all: Query = "port:22".parse().unwrap();
    let req = SearchRequest {
        query: &all,
        after: None,
        limit: 100,
        resolved: &[],
        now: now(),
    };
    if let periscope_index::SearchOutcome::Page(p) = a.search(&req).unwrap() {
        assert!(!p.hosts.is_empty());
        for h in p.hosts {
            let d = a.host_detail(h.host.ip, None, 20, now()).unwrap();
            out.push(format!("{}: {d:?}", h.host.ip));
        }
    }
    out
}

/// The domain-scan answers of `a` for the names and addresses of the domain lines of
/// `observations` and their parent domains: records by name and by address, and the domain
/// searches and counts (which read the records' addresses).
fn scan_answers(a: &LayeredIndex, observations: &[Observation]) -> Vec<String> {
    let mut out = Vec::new();
    let mut found = 0;
    for obs in observations {
        let Observation::Domain(scan) = obs else {
            continue;
        };
        let by_name = a.domain_scans_of_name(&scan.name).unwrap();
        found += by_name.len();
        out.push(format!("{}: {by_name:?}", scan.name));
        for address in &scan.addresses {
            let by_address = a.domain_scans_of_address(*address).unwrap();
            out.push(format!("{address}: {by_address:?}"));
        }
        let parent = scan.name.as_str().split_once('.').map_or("", |(_, p)| p);
        let Ok(query) = format!("domain:{parent}").parse::<Query>() else {
            continue;
        };
        let req = SearchRequest {
            query: &query,
            after: None,
            limit: 20,
            resolved: &[],
            now: now(),
        };
        out.push(format!("{parent}: {:?}", a.search(&req).unwrap()));
        out.push(format!("{parent}: {:?}", a.count(&query, now()).unwrap()));
    }
    assert!(found > 0, "the synthetic data holds domain lines");
    out
}

#[test]
fn a_restart_loads_the_index_file_and_answers_as_the_built_index_did() {
    let dir = TempStore::new("persist");
    let (live, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(
        matches!(
            opened,
            Opened::Built {
                why: LoadError::Missing,
                saved: Ok(())
            }
        ),
        "{opened:?}"
    );
    for batch in synth(1_500).chunks(1_000) {
        live.apply_batch(batch).unwrap();
    }
    assert!(live.refresh(now()).unwrap());
    let built = answers(&live.current());
    let scans = scan_answers(&live.current(), &synth(1_500));
    assert!(count(&live, "port:443") > 0);
    drop(live);

    let (reopened, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(matches!(opened, Opened::Loaded), "{opened:?}");
    assert_eq!(answers(&reopened.current()), built);
    assert_eq!(scan_answers(&reopened.current(), &synth(1_500)), scans);

    // Another batch makes the file stale: the next start rebuilds, and saves again.
    reopened
        .apply_batch(&service("240.0.0.1", 65001, "2026-11-20T10:00:00Z"))
        .unwrap();
    drop(reopened);
    let (again, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(
        matches!(
            opened,
            Opened::Built {
                why: LoadError::Stale(_),
                saved: Ok(())
            }
        ),
        "{opened:?}"
    );
    assert_eq!(count(&again, "port:65001"), 1);
    drop(again);
    let (_, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(matches!(opened, Opened::Loaded), "{opened:?}");

    // Other settings: stale.
    let other = IndexConfig {
        max_host_only_results: 5,
        ..IndexConfig::default()
    };
    let (_, opened) = LiveIndex::open(&dir.path(), other, now()).unwrap();
    assert!(
        matches!(
            opened,
            Opened::Built {
                why: LoadError::Stale(_),
                ..
            }
        ),
        "{opened:?}"
    );
}

/// An index file saved over a store of 300 synthetic hosts.
struct Saved {
    /// What `port:443` counts.
    expected: u64,
    /// The index file.
    file: PathBuf,
    /// Its bytes.
    good: Vec<u8>,
}

/// Fills `dir` with 300 synthetic hosts and saves their index file by a full rebuild (a delta
/// refresh saves none), so that the file holds every record.
fn saved_index(dir: &TempStore) -> Saved {
    let (live, _) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    live.apply_batch(&synth(300)).unwrap();
    live.set_delta_limit(Some(0));
    assert!(live.refresh(now()).unwrap());
    let expected = count(&live, "port:443");
    drop(live);
    let file = LiveIndex::index_path(&dir.path());
    let good = std::fs::read(&file).unwrap();
    Saved {
        expected,
        file,
        good,
    }
}

/// The file keeps each service's host, which a load derives from the hosts' service ranges
/// instead: a column that disagrees with the ranges is refused by that check (before the
/// checksum at the end is compared), and the index is rebuilt.
#[test]
fn a_service_host_column_that_disagrees_with_the_ranges_is_refused() {
    let dir = TempStore::new("owners");
    let Saved {
        expected,
        file,
        good,
    } = saved_index(&dir);
    // Magic, version, generation, build time and the two settings; then the hosts, their
    // 16-byte keys, the services, the hosts' first services and one more, then the column.
    let word = |at: usize| u64::from_le_bytes(good[at..at + 8].try_into().unwrap()) as usize;
    let hosts = word(44);
    let column = 44 + 8 + 16 * hosts + 8 + 4 * (hosts + 1);
    assert!(hosts > 1 && word(44 + 8 + 16 * hosts) > 1);
    let mut moved = good.clone();
    // The first service is the first host's (0); say it is the second's.
    moved[column..column + 4].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(&file, moved).unwrap();
    let (live, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(
        matches!(
            &opened,
            Opened::Built {
                why: LoadError::Corrupt(why),
                saved: Ok(())
            } if why.contains("a service's host is not the one its range says")
        ),
        "{opened:?}"
    );
    assert_eq!(count(&live, "port:443"), expected);
}

#[test]
fn a_damaged_index_file_is_never_used() {
    let dir = TempStore::new("damaged");
    let Saved {
        expected,
        file,
        good,
    } = saved_index(&dir);

    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let truncated = good[..good.len() - 9].to_vec();
    let mut trailing = good.clone();
    trailing.push(0);
    let foreign = b"not an index at all".to_vec();
    for (name, bytes) in [
        ("flipped", flipped),
        ("truncated", truncated),
        ("trailing", trailing),
        ("foreign", foreign),
    ] {
        std::fs::write(&file, bytes).unwrap();
        let (live, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
        assert!(
            matches!(
                opened,
                Opened::Built {
                    why: LoadError::Corrupt(_),
                    saved: Ok(())
                }
            ),
            "{name}: {opened:?}"
        );
        assert_eq!(count(&live, "port:443"), expected, "{name}");
        drop(live);
        // The rebuilt file replaced the damaged one.
        assert_eq!(std::fs::read(&file).unwrap(), good, "{name}");
    }
}

#[test]
fn an_index_file_of_an_older_format_is_reported_stale_and_rebuilt_never_read() {
    let dir = TempStore::new("older-format");
    let Saved {
        expected,
        file,
        good,
    } = saved_index(&dir);
    // The version follows the 8-byte magic.
    assert_eq!(
        good[8..12],
        periscope_index::engine::FORMAT_VERSION.to_le_bytes()
    );
    for old in 1..periscope_index::engine::FORMAT_VERSION {
        let mut bytes = good.clone();
        bytes[8..12].copy_from_slice(&old.to_le_bytes());
        std::fs::write(&file, bytes).unwrap();
        let (live, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
        match &opened {
            Opened::Built {
                why: LoadError::Stale(why),
                saved: Ok(()),
            } => assert!(why.contains(&format!("format version {old}")), "{why}"),
            other => panic!("format {old}: {other:?}"),
        }
        assert_eq!(count(&live, "port:443"), expected, "format {old}");
        drop(live);
        assert_eq!(std::fs::read(&file).unwrap(), good, "format {old}");
    }
}

#[test]
fn an_index_file_that_cannot_be_written_leaves_the_new_snapshot_answering() {
    let dir = TempStore::new("unwritable");
    // A directory where the index file should be: it can be neither read nor replaced.
    std::fs::create_dir_all(LiveIndex::index_path(&dir.path())).unwrap();
    let (live, opened) = LiveIndex::open(&dir.path(), IndexConfig::default(), now()).unwrap();
    assert!(
        matches!(&opened, Opened::Built { saved: Err(_), .. }),
        "{opened:?}"
    );
    live.apply_batch(&service("240.0.0.5", 443, "2026-11-20T10:00:00Z"))
        .unwrap();
    // Only a full rebuild saves the index file.
    live.set_delta_limit(Some(0));
    let err = live.refresh(now()).unwrap_err();
    assert!(
        matches!(err, periscope_index::engine::BuildError::Save { .. }),
        "{err}"
    );
    assert_eq!(
        count(&live, "port:443"),
        1,
        "swapped before the save failed"
    );
    assert!(!live.is_stale());
}
