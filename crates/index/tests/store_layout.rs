//! The store's cost per observation on one synthetic dataset (it was first written to compare
//! the redb B-tree of schema version 1 with the sorted runs that replaced it; the figures are
//! in `docs/benchmarks.md`). A measurement, not a test of behaviour (that is `durable.rs`); it
//! does check the store against the same observations applied in memory. Run it in release
//! mode:
//!
//! `cargo test -p periscope-index --release --test store_layout -- --ignored --nocapture`
//!
//! `PERISCOPE_MEASURE_HOSTS` sets the number of synthetic hosts (200,000 unless set),
//! `PERISCOPE_MEASURE_BATCH` the batch size (20,000 observations, ingest's default).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use periscope_index::durable::{BatchSummary, DurableStore, StoreStats};
use periscope_index::{DomainScans, HostRecord};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader};
use periscope_synth::{SynthConfig, write_dataset};

/// A directory of its own under the system temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "periscope-layout-{test}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// This thread's CPU time (user + system), from `/proc/thread-self/stat` (clock ticks of
/// 10 ms).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Bytes this process wrote: through `write` calls (`wchar`) and to storage (`write_bytes`).
fn written() -> (u64, u64) {
    let io = std::fs::read_to_string("/proc/self/io").unwrap();
    let field = |name: &str| -> u64 {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (field("wchar:"), field("write_bytes:"))
}

/// What is measured of a store (a trait so another layout can be measured beside it).
trait Store {
    fn apply(&mut self, batch: &mut Vec<Observation>) -> BatchSummary;
    fn state(&self) -> (Vec<HostRecord>, DomainScans);
    fn stats(&self) -> StoreStats;
}

impl Store for DurableStore {
    fn apply(&mut self, batch: &mut Vec<Observation>) -> BatchSummary {
        self.apply_batch_drain(batch).unwrap()
    }
    fn state(&self) -> (Vec<HostRecord>, DomainScans) {
        let hosts = self.hosts().unwrap().collect::<Result<_, _>>().unwrap();
        (hosts, self.domain_scans().unwrap())
    }
    fn stats(&self) -> StoreStats {
        DurableStore::stats(self).unwrap()
    }
}

/// The observations applied to in-memory records, in host order (addresses with no counting
/// observation are not records).
fn in_memory(batches: &[Vec<Observation>]) -> (Vec<HostRecord>, DomainScans) {
    let mut hosts = std::collections::BTreeMap::<u128, HostRecord>::new();
    let mut scans = DomainScans::default();
    for obs in batches.iter().flatten() {
        match obs {
            Observation::Service(s) => {
                hosts
                    .entry(periscope_model::ip_order_key(s.ip))
                    .or_insert_with(|| HostRecord::new(s.ip))
                    .apply(s);
            }
            Observation::Domain(d) => {
                scans.apply(d.clone());
            }
        }
    }
    let hosts = hosts
        .into_values()
        .filter(|r| r.enrichment.is_some())
        .collect();
    (hosts, scans)
}

/// One pass of every batch through `store`, then a second (every observation superseded).
fn measure(name: &str, store: &mut dyn Store, batches: &[Vec<Observation>]) {
    let observations: usize = batches.iter().map(Vec::len).sum();
    let mut pass = |label: &str| {
        let mut copies: Vec<Vec<Observation>> = batches.to_vec();
        let (wchar, wbytes) = written();
        let cpu = thread_cpu();
        let started = Instant::now();
        let mut total = BatchSummary::default();
        for batch in &mut copies {
            let s = store.apply(batch);
            total.applied += s.applied;
            total.superseded += s.superseded;
            total.hosts_written += s.hosts_written;
        }
        let wall = started.elapsed();
        let cpu = thread_cpu() - cpu;
        let (wchar2, wbytes2) = written();
        let per = |d: Duration| d.as_secs_f64() * 1e6 / observations as f64;
        println!(
            "{name:<4} {label:<7} wall {wall:>8.2?} ({:5.2} µs/obs)  thread CPU {cpu:>8.2?} \
             ({:5.2} µs/obs)  write() {:>6.0} MB  to storage {:>6.0} MB  \
             applied {} superseded {} hosts written {}",
            per(wall),
            per(cpu),
            (wchar2 - wchar) as f64 / 1e6,
            (wbytes2 - wbytes) as f64 / 1e6,
            total.applied,
            total.superseded,
            total.hosts_written,
        );
        total
    };
    let first = pass("ingest");
    let again = pass("again");
    assert_eq!(again.applied, 0);
    assert_eq!(again.superseded, first.applied + first.superseded);
    let started = Instant::now();
    let (hosts, _) = store.state();
    let stats = store.stats();
    println!(
        "{name:<4} read all {} hosts in {:.2?}; {} domain scans; on disk {:.0} MB",
        hosts.len(),
        started.elapsed(),
        stats.domain_scans,
        stats.file_bytes as f64 / 1e6
    );
}

#[test]
#[ignore = "a measurement; run it in release mode"]
fn measure_store_layouts() {
    let hosts: u64 =
        std::env::var("PERISCOPE_MEASURE_HOSTS").map_or(200_000, |v| v.parse().unwrap());
    let batch_size: usize =
        std::env::var("PERISCOPE_MEASURE_BATCH").map_or(20_000, |v| v.parse().unwrap());
    let as_of = Timestamp::parse("2026-11-26T00:00:00Z").unwrap();
    let mut text = Vec::new();
    write_dataset(
        &SynthConfig {
            hosts,
            seed: 1,
            as_of,
        },
        &mut text,
    )
    .unwrap();
    let mut reader = ObservationReader::new(as_of);
    let observations: Vec<Observation> = String::from_utf8(text)
        .unwrap()
        .lines()
        .filter_map(|line| reader.read_line(line).unwrap())
        .collect();
    let batches: Vec<Vec<Observation>> =
        observations.chunks(batch_size).map(<[_]>::to_vec).collect();
    drop(observations);
    println!(
        "{hosts} synthetic hosts, {} observations in {} batches of {batch_size}",
        batches.iter().map(Vec::len).sum::<usize>(),
        batches.len()
    );

    let dir = TempDir::new("layouts");
    let mut runs = DurableStore::open(&dir.0.join("scan.store")).unwrap();
    measure("runs", &mut runs, &batches);
    assert!(
        runs.state() == in_memory(&batches),
        "the store holds other records than applying the observations in memory"
    );
}
