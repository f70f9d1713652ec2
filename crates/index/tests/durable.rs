//! The durable store (`periscope_index::durable`): what a batch stores survives a reopen and a
//! killed writer, equals applying the same observations to in-memory records, does not depend
//! on repetition or the order of batches, nor on acknowledging batches one behind, and corrupt
//! or foreign files are errors, not panics.
//!
//! Data comes from `periscope_synth` (a small synthetic internet with older observations,
//! failed scans and domain lines) or from observation lines written here, parsed by the real
//! reader. Each test works in its own directory under the system temporary directory.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use periscope_index::codec;
use periscope_index::durable::{
    BatchSummary, DurableStore, EncodedHosts, FANOUT, HostEncoder, HostKey, MANIFEST_FILE,
    MAX_RUNS, SCHEMA_VERSION, StoreError,
};
use periscope_index::{DomainScans, HostRecord};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::{Timestamp, ip_order_key};
use periscope_synth::{SynthConfig, write_dataset};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------------
// Helpers.

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
            "periscope-durable-{test}-{}-{nanos}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn store(&self) -> PathBuf {
        self.0.join("scan.store")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ts(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap()
}

/// The instant synthetic datasets describe.
const AS_OF: &str = "2026-11-20T00:00:00Z";

/// Parses observation lines; every non-blank line must be accepted.
fn parse(text: &str, now: Timestamp) -> Vec<Observation> {
    let mut reader = ObservationReader::new(now);
    text.lines()
        .filter_map(|line| {
            reader
                .read_line(line)
                .unwrap_or_else(|e| panic!("{e}\n{line}"))
        })
        .collect()
}

/// The observations of a synthetic internet of `hosts` hosts.
fn synth(hosts: u64, seed: u64) -> Vec<Observation> {
    let cfg = SynthConfig {
        hosts,
        seed,
        as_of: ts(AS_OF),
    };
    let mut out = Vec::new();
    write_dataset(&cfg, &mut out).unwrap();
    parse(&String::from_utf8(out).unwrap(), ts(AS_OF))
}

/// What a store holds, read back through its public API.
#[derive(Debug, PartialEq)]
struct State {
    hosts: Vec<HostRecord>,
    scans: DomainScans,
}

fn state(store: &DurableStore) -> State {
    State {
        hosts: store.hosts().unwrap().collect::<Result<_, _>>().unwrap(),
        scans: store.domain_scans().unwrap(),
    }
}

/// The same observations applied to in-memory records, in host order; addresses with no
/// counting observation are not records.
fn in_memory(observations: &[Observation]) -> State {
    let mut hosts = BTreeMap::<u128, HostRecord>::new();
    let mut scans = DomainScans::default();
    for obs in observations {
        match obs {
            Observation::Service(s) => {
                hosts
                    .entry(ip_order_key(s.ip))
                    .or_insert_with(|| HostRecord::new(s.ip))
                    .apply(s);
            }
            Observation::Domain(d) => {
                scans.apply(d.clone());
            }
        }
    }
    State {
        hosts: hosts
            .into_values()
            .filter(|r| r.enrichment.is_some())
            .collect(),
        scans,
    }
}

/// `observations` in an order drawn from `order` (a proptest's random words).
fn shuffled(observations: &[Observation], order: &[u64]) -> Vec<Observation> {
    let mut keyed: Vec<(u64, Observation)> = observations
        .iter()
        .enumerate()
        .map(|(i, o)| (order[i % order.len()].wrapping_mul(i as u64 + 1), o.clone()))
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    keyed.into_iter().map(|(_, o)| o).collect()
}

fn apply_in_batches(store: &mut DurableStore, observations: &[Observation], size: usize) {
    for batch in observations.chunks(size) {
        store.apply_batch(batch).unwrap();
    }
}

/// A completed `http` line of `ip` at `at` whose product title is `title`.
fn http_line(ip: IpAddr, at: Timestamp, title: &str) -> String {
    format!(
        r#"{{"kind":"service","ip":"{ip}","port":80,"transport":"tcp","protocol":"http","observed_at":"{at}","status":"completed","product":{{"title":"{title}"}}}}"#
    )
}

// ---------------------------------------------------------------------------------------------
// State.

#[test]
fn reopening_gives_the_same_state() {
    let dir = TempDir::new("reopen");
    let observations = synth(400, 7);
    let (before, stats_before) = {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        apply_in_batches(&mut store, &observations, 300);
        (state(&store), store.stats().unwrap())
    };
    assert!(before.hosts.len() > 300, "{} hosts", before.hosts.len());
    assert!(!before.scans.by_name.is_empty());

    let store = DurableStore::open(&dir.store()).unwrap();
    assert_eq!(state(&store), before);
    let stats = store.stats().unwrap();
    assert_eq!(stats.hosts, before.hosts.len() as u64);
    assert_eq!(stats.domain_scans, before.scans.by_name.len() as u64);
    assert_eq!(
        (stats.hosts, stats.domain_scans),
        (stats_before.hosts, stats_before.domain_scans)
    );
    assert!(stats.file_bytes > 0);
}

#[test]
fn the_stored_state_equals_applying_in_memory() {
    let dir = TempDir::new("oracle");
    let observations = synth(500, 3);
    let mut store = DurableStore::open(&dir.store()).unwrap();
    apply_in_batches(&mut store, &observations, 97);

    let expected = in_memory(&observations);
    let stored = state(&store);
    assert_eq!(stored.hosts.len(), expected.hosts.len());
    assert_eq!(stored, expected);
    // Host order: IPv4 first, then IPv6, each ascending.
    assert!(stored.hosts.iter().any(|h| h.ip.is_ipv6()));
    assert!(
        stored
            .hosts
            .windows(2)
            .all(|w| ip_order_key(w[0].ip) < ip_order_key(w[1].ip))
    );
    for record in expected.hosts.iter().step_by(37) {
        assert_eq!(store.host(record.ip).unwrap().as_ref(), Some(record));
    }
    assert_eq!(store.host("10.0.0.1".parse().unwrap()).unwrap(), None);
}

#[test]
fn a_failed_observation_of_an_unknown_address_stores_nothing() {
    let dir = TempDir::new("failed");
    let line = r#"{"kind":"service","ip":"240.0.0.9","port":22,"transport":"tcp","protocol":"ssh","observed_at":"2026-11-01T00:00:00Z","status":"failed","error":"reset"}"#;
    let mut store = DurableStore::open(&dir.store()).unwrap();
    let summary = store.apply_batch(&parse(line, ts(AS_OF))).unwrap();
    assert_eq!((summary.ignored, summary.hosts_written), (1, 0));
    assert_eq!(store.stats().unwrap().hosts, 0);
}

#[test]
fn applying_the_same_batch_twice_changes_nothing() {
    let dir = TempDir::new("twice");
    let observations = synth(300, 11);
    let mut store = DurableStore::open(&dir.store()).unwrap();
    assert_eq!(store.snapshot().unwrap().generation(), 0);
    let first = store.apply_batch(&observations).unwrap();
    assert!(first.applied > 0 && first.hosts_written > 0 && first.domain_scans_written > 0);
    let before = state(&store);
    assert_eq!(store.snapshot().unwrap().generation(), 1);

    let second = store.apply_batch(&observations).unwrap();
    // Nothing changed, so the generation (and any index file built from it) stays valid.
    assert_eq!(store.snapshot().unwrap().generation(), 1);
    assert_eq!(second.applied, 0);
    assert_eq!((second.hosts_written, second.domain_scans_written), (0, 0));
    assert_eq!(second.ignored, first.ignored);
    assert_eq!(second.superseded, first.applied + first.superseded);
    assert_eq!(state(&store), before);
}

#[test]
fn the_order_of_batches_does_not_matter() {
    let observations = synth(400, 5);
    let batches: Vec<&[Observation]> = observations.chunks(150).collect();

    let in_order = TempDir::new("in-order");
    let mut store = DurableStore::open(&in_order.store()).unwrap();
    for batch in &batches {
        store.apply_batch(batch).unwrap();
    }
    let expected = state(&store);

    // Batches reversed, each batch reversed too, and then all of it again.
    let reversed = TempDir::new("reversed");
    let mut store = DurableStore::open(&reversed.store()).unwrap();
    for _ in 0..2 {
        for batch in batches.iter().rev() {
            let backwards: Vec<Observation> = batch.iter().rev().cloned().collect();
            store.apply_batch(&backwards).unwrap();
        }
    }
    assert_eq!(state(&store), expected);

    // Interleaved: odd batches first, then even ones.
    let interleaved = TempDir::new("interleaved");
    let mut store = DurableStore::open(&interleaved.store()).unwrap();
    for batch in batches.iter().skip(1).step_by(2) {
        store.apply_batch(batch).unwrap();
    }
    for batch in batches.iter().step_by(2) {
        store.apply_batch(batch).unwrap();
    }
    assert_eq!(state(&store), expected);
}

#[test]
fn many_batches_merge_runs_and_keep_every_record() {
    let observations = synth(600, 11);
    // Small batches: FANOUT runs of a tier are merged into one of the next, so FANOUT²
    // batches and more reach tier 2.
    let batches: Vec<&[Observation]> = observations
        .chunks(observations.len() / (FANOUT * FANOUT + 16))
        .collect();
    assert!(batches.len() >= FANOUT * FANOUT, "{}", batches.len());
    let dir = TempDir::new("many");
    let mut store = DurableStore::open(&dir.store()).unwrap();
    let mut most_runs = 0;
    for batch in &batches {
        store.apply_batch(batch).unwrap();
        most_runs = most_runs.max(run_files(&dir.store()).len());
    }
    let expected = in_memory(&observations);
    assert_eq!(state(&store), expected);
    // Merges run beside the batches, which wait for one only once MAX_RUNS runs pile up; each
    // merge in flight adds its file (this test's runs reach tier 2: two merges at most).
    assert!(most_runs <= MAX_RUNS + 2, "{most_runs} runs");
    store.finish_merges().unwrap();
    assert!(run_files(&dir.store()).len() <= MAX_RUNS);
    let stats = store.stats().unwrap();
    assert_eq!(stats.hosts, expected.hosts.len() as u64);
    assert_eq!(stats.domain_scans, expected.scans.by_name.len() as u64);
    // Every k-th record (`step_by` passes the others without reading them), over all runs.
    assert!(run_files(&dir.store()).len() > 1);
    for step in [2, 7, 50] {
        let sampled: Vec<HostRecord> = store
            .hosts()
            .unwrap()
            .step_by(step)
            .map(Result::unwrap)
            .collect();
        let want: Vec<HostRecord> = expected.hosts.iter().step_by(step).cloned().collect();
        assert_eq!(sampled, want, "every {step}th record");
    }
    // Everything again (all superseded: nothing written), and a reopened store reads alike.
    for batch in &batches {
        assert_eq!(store.apply_batch(batch).unwrap().hosts_written, 0);
    }
    drop(store);
    let store = DurableStore::open(&dir.store()).unwrap();
    assert_eq!(state(&store), expected);
    for record in &expected.hosts {
        assert_eq!(store.host(record.ip).unwrap().as_ref(), Some(record));
    }
}

/// The files under `dir` that this process holds open though their names were removed, as
/// `/proc/self/fd` shows them (`PATH (deleted)`).
fn removed_but_open(dir: &Path) -> Vec<String> {
    let prefix = dir.to_string_lossy().into_owned();
    let mut held: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        // A descriptor another test closes meanwhile has no link to read: not ours.
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.starts_with(&prefix) && target.ends_with(" (deleted)"))
        .collect();
    held.sort();
    held
}

/// [`removed_but_open`] once it is `expected`, or after ten seconds: merged runs are closed on
/// a thread of their own, a moment after the merge is taken in.
fn removed_but_open_after_release(dir: &Path, expected: &[String]) -> Vec<String> {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let held = removed_but_open(dir);
        if held == expected || Instant::now() > deadline {
            return held;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn merged_runs_are_closed_once_taken_in_unless_a_snapshot_holds_them() {
    let observations = synth(400, 19);
    let batches: Vec<&[Observation]> = observations
        .chunks(observations.len() / (4 * FANOUT) + 1)
        .collect();
    let (first, second) = batches.split_at(batches.len() / 2);
    let dir = TempDir::new("release");
    let mut store = DurableStore::open(&dir.store()).unwrap();
    for batch in first {
        store.apply_batch(batch).unwrap();
    }
    store.finish_merges().unwrap();
    assert!(run_files(&dir.store()).len() < first.len(), "no merge ran");
    assert_eq!(
        removed_but_open_after_release(&dir.0, &[]),
        Vec::<String>::new()
    );

    // The runs a snapshot reads stay open while it lives, merged away or not.
    let snapshot = store.snapshot().unwrap();
    let runs_read = run_files(&dir.store());
    for batch in second {
        store.apply_batch(batch).unwrap();
    }
    store.finish_merges().unwrap();
    let merged_away: Vec<String> = runs_read
        .iter()
        .filter(|run| !run.exists())
        .map(|run| format!("{} (deleted)", run.display()))
        .collect();
    assert!(
        !merged_away.is_empty(),
        "no run the snapshot reads was merged"
    );
    // Those, and no run merged after the snapshot, once the release thread closed those.
    assert_eq!(
        removed_but_open_after_release(&dir.0, &merged_away),
        merged_away
    );
    assert_eq!(
        snapshot.hosts().unwrap().count(),
        in_memory(&first.concat()).hosts.len()
    );
    drop(snapshot);
    assert_eq!(
        removed_but_open_after_release(&dir.0, &[]),
        Vec::<String>::new()
    );
    assert_eq!(state(&store), in_memory(&observations));
}

#[test]
fn a_drained_batch_stores_what_a_borrowed_one_does() {
    let observations = synth(300, 9);
    let borrowed = TempDir::new("borrowed");
    let mut store = DurableStore::open(&borrowed.store()).unwrap();
    let mut summaries = Vec::new();
    for batch in observations.chunks(120) {
        summaries.push(store.apply_batch(batch).unwrap());
    }
    let expected = state(&store);

    let drained = TempDir::new("drained");
    let mut store = DurableStore::open(&drained.store()).unwrap();
    for (batch, summary) in observations.chunks(120).zip(&summaries) {
        let mut owned = batch.to_vec();
        let capacity = owned.capacity();
        assert_eq!(&store.apply_batch_drain(&mut owned).unwrap(), summary);
        assert!(owned.is_empty(), "the batch is drained");
        assert_eq!(owned.capacity(), capacity, "the batch keeps its capacity");
    }
    assert_eq!(state(&store), expected);
}

// ---------------------------------------------------------------------------------------------
// Acknowledging one behind.

/// Applies `batches` to a new store acknowledging one behind; returns each batch's summary and
/// the state once settled.
fn apply_behind(dir: &TempDir, batches: &[&[Observation]]) -> (Vec<BatchSummary>, State) {
    let mut store = DurableStore::open(&dir.store()).unwrap();
    store.acknowledge_one_behind();
    let summaries = batches
        .iter()
        .map(|batch| store.apply_batch_drain(&mut batch.to_vec()).unwrap())
        .collect();
    store.settle().unwrap();
    (summaries, state(&store))
}

#[test]
fn acknowledging_one_behind_stores_what_a_batch_at_a_time_does() {
    let observations = synth(600, 13);
    // Enough small batches for merges of two tiers, some of them changing nothing.
    let mut batches: Vec<&[Observation]> = observations
        .chunks(observations.len() / (FANOUT * FANOUT + 16))
        .collect();
    let again = batches[..FANOUT].to_vec();
    batches.extend(again);
    let at_a_time = TempDir::new("at-a-time");
    let mut store = DurableStore::open(&at_a_time.store()).unwrap();
    let summaries: Vec<BatchSummary> = (batches.iter())
        .map(|batch| store.apply_batch(batch).unwrap())
        .collect();
    let expected = state(&store);
    assert_eq!(expected, in_memory(&observations));

    let behind = TempDir::new("behind");
    let (behind_summaries, behind_state) = apply_behind(&behind, &batches);
    assert_eq!(behind_summaries, summaries);
    assert_eq!(behind_state, expected);
    // Settled, the manifest names every batch: a reopened store reads alike.
    let store = DurableStore::open(&behind.store()).unwrap();
    assert_eq!(state(&store), expected);
}

#[test]
fn a_store_dropped_with_a_commit_in_flight_keeps_the_batch() {
    let observations = synth(200, 17);
    let dir = TempDir::new("drop-behind");
    {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        store.acknowledge_one_behind();
        for batch in observations.chunks(100) {
            store.apply_batch(batch).unwrap();
        }
        // Dropped unsettled: dropping waits for the commit.
    }
    let store = DurableStore::open(&dir.store()).unwrap();
    assert_eq!(state(&store), in_memory(&observations));
}

#[test]
fn a_failed_commit_behind_fails_the_next_batch_and_stores_neither() {
    let observations = synth(300, 19);
    let batches: Vec<&[Observation]> = observations.chunks(observations.len() / 3 + 1).collect();
    assert_eq!(batches.len(), 3);
    let dir = TempDir::new("failed-commit");
    let mut store = DurableStore::open(&dir.store()).unwrap();
    store.acknowledge_one_behind();
    store.apply_batch(batches[0]).unwrap();
    store.settle().unwrap();
    let first = state(&store);
    // The manifest cannot be written while a directory takes its temporary file's name.
    let blocker = dir.store().join("MANIFEST.tmp");
    std::fs::create_dir(&blocker).unwrap();
    store.apply_batch(batches[1]).unwrap();
    let failed = store.apply_batch(batches[2]).unwrap_err();
    let StoreError::PreviousCommit { source } = &failed else {
        panic!("not the previous commit's failure: {failed:?}");
    };
    assert!(
        matches!(
            **source,
            StoreError::Io {
                during: "writing the manifest",
                ..
            }
        ),
        "{source:?}"
    );
    assert_eq!(
        failed.to_string(),
        "the commit of the batch before it failed"
    );
    // Neither the failed batch nor the refused one is stored, in memory or on disk.
    assert_eq!(state(&store), first);
    std::fs::remove_dir(&blocker).unwrap();
    store.apply_batch(batches[1]).unwrap();
    store.apply_batch(batches[2]).unwrap();
    store.settle().unwrap();
    let expected = in_memory(&observations);
    assert_eq!(state(&store), expected);
    drop(store);
    let store = DurableStore::open(&dir.store()).unwrap();
    assert_eq!(state(&store), expected);
    assert_eq!(
        run_files(&dir.store()).len(),
        3,
        "the unnamed runs were removed"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Any order and batch size: a store acknowledging one behind holds, once settled and
    /// after a reopen, what applying the observations in memory gives.
    #[test]
    fn acknowledging_one_behind_stores_the_current_observations_in_any_order(
        seed in 0u64..1000,
        order in proptest::collection::vec(any::<u64>(), 1..400),
        size in 1usize..200,
    ) {
        let observations = synth(40, seed);
        let shuffled = shuffled(&observations, &order);
        let dir = TempDir::new(&format!("behind-prop-{seed}-{size}"));
        let batches: Vec<&[Observation]> = shuffled.chunks(size).collect();
        let (_, settled) = apply_behind(&dir, &batches);
        let expected = in_memory(&observations);
        prop_assert_eq!(&settled, &expected);
        let store = DurableStore::open(&dir.store()).unwrap();
        prop_assert_eq!(state(&store), expected);
    }
}

/// Applies `batch` as ingest does when its parsing threads encode: the service observations
/// merged into groups of at most `max` (per chunk of `chunk` lines, copied group by group into
/// the batch), except every `plain`-th one (from 1), which goes as an observation. Returns the
/// summary and the order in which the observations count as arriving (groups, then the
/// plain services, domain scans among them in their order).
fn apply_encoded(
    store: &mut DurableStore,
    batch: &[Observation],
    max: usize,
    chunk: usize,
    plain: usize,
) -> (BatchSummary, Vec<Observation>) {
    let mut hosts = EncodedHosts::default();
    let mut rest = Vec::new();
    let mut arrival = Vec::new();
    let mut late = Vec::new();
    let mut services = 0;
    for lines in batch.chunks(chunk) {
        let mut encoder = HostEncoder::new(max);
        let mut encoded = EncodedHosts::default();
        // What a reader says of a line whose host block repeats the last one's.
        let mut last_host = None;
        for obs in lines {
            match obs {
                Observation::Service(s) => {
                    services += 1;
                    if plain > 0 && services % plain == 0 {
                        rest.push(obs.clone());
                        late.push(obs.clone());
                    } else {
                        let host_repeated = last_host == Some(&s.host);
                        last_host = Some(&s.host);
                        encoder.push(&s.view(), host_repeated, &mut encoded);
                        arrival.push(obs.clone());
                    }
                }
                Observation::Domain(_) => {
                    rest.push(obs.clone());
                    arrival.push(obs.clone());
                }
            }
        }
        encoder.finish(&mut encoded);
        for g in 0..encoded.groups() {
            hosts.push_group(&encoded, g);
        }
    }
    let expected_len = batch.len() as u64
        - late.len() as u64
        - batch
            .iter()
            .filter(|o| matches!(o, Observation::Domain(_)))
            .count() as u64;
    assert_eq!(hosts.observations(), expected_len);
    arrival.extend(late);
    let capacity = rest.capacity();
    let summary = store.apply_encoded_drain(&mut hosts, &mut rest).unwrap();
    assert!(
        rest.is_empty() && hosts.groups() == 0,
        "the batch is drained"
    );
    assert_eq!(rest.capacity(), capacity, "the batch keeps its capacity");
    (summary, arrival)
}

/// Applies `observations` in batches of `size`, encoded and as observations, into two stores;
/// both hold the same records and every batch's summary is the same.
fn encoded_matches_observations(
    name: &str,
    passes: &[Vec<Observation>],
    size: usize,
    max: usize,
    chunk: usize,
    plain: usize,
) {
    let encoded_dir = TempDir::new(&format!("{name}-encoded"));
    let plain_dir = TempDir::new(&format!("{name}-plain"));
    let mut encoded = DurableStore::open(&encoded_dir.store()).unwrap();
    let mut reference = DurableStore::open(&plain_dir.store()).unwrap();
    for pass in passes {
        for batch in pass.chunks(size) {
            let (summary, arrival) = apply_encoded(&mut encoded, batch, max, chunk, plain);
            assert_eq!(summary, reference.apply_batch(&arrival).unwrap());
        }
    }
    let expected = state(&reference);
    assert_eq!(state(&encoded), expected);
    let all: Vec<Observation> = passes.concat();
    assert_eq!(expected, in_memory(&all));
    drop(encoded);
    assert_eq!(
        state(&DurableStore::open(&encoded_dir.store()).unwrap()),
        expected
    );
}

#[test]
fn encoded_batches_store_what_observations_do() {
    let observations = synth(300, 21);
    let reversed: Vec<Observation> = observations.iter().rev().cloned().collect();
    // Groups of one, a few, or as many as fit; chunks cutting groups; some plain services.
    for (max, chunk, plain) in [(1, 1000, 0), (3, 7, 0), (usize::MAX, 64, 5)] {
        encoded_matches_observations(
            "encoded",
            &[observations.clone(), reversed.clone(), observations.clone()],
            150,
            max,
            chunk,
            plain,
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any order, batch size, group bound and chunking: the encoded path stores what the
    /// observations store, with the same counts, over a store already holding records.
    #[test]
    fn encoded_batches_match_in_any_order(
        seed in 0u64..1000,
        order in proptest::collection::vec(any::<u64>(), 1..400),
        size in 1usize..200,
        max in 1usize..6,
        chunk in 1usize..50,
        plain in 0usize..4,
    ) {
        let observations = synth(40, seed);
        let shuffled = shuffled(&observations, &order);
        encoded_matches_observations(
            &format!("prop-{seed}-{size}-{max}-{chunk}-{plain}"),
            &[observations, shuffled],
            size,
            max,
            chunk,
            plain,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Corrupt and foreign files.

/// The run files of a closed store.
fn run_files(store: &Path) -> Vec<PathBuf> {
    let mut runs: Vec<PathBuf> = std::fs::read_dir(store)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "run"))
        .collect();
    runs.sort();
    runs
}

/// Overwrites, in the one run file of a closed store, the bytes `old` with `new` (of the same
/// length): the record's place in the file, found by its encoding.
fn poke(store: &Path, old: &[u8], new: &[u8]) {
    assert_eq!(old.len(), new.len());
    let runs = run_files(store);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let mut bytes = std::fs::read(&runs[0]).unwrap();
    let at = bytes
        .windows(old.len())
        .position(|w| w == old)
        .expect("the record is in the run");
    bytes[at..at + old.len()].copy_from_slice(new);
    std::fs::write(&runs[0], bytes).unwrap();
}

/// `bytes` with its first byte (the codec's format version) replaced by one no codec knows.
fn garbled(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[0] = 0xff;
    out
}

#[test]
fn a_corrupt_host_record_is_an_error_naming_its_key() {
    let dir = TempDir::new("corrupt");
    let a: IpAddr = "240.0.0.1".parse().unwrap();
    let b: IpAddr = "240.0.0.2".parse().unwrap();
    let at = ts("2026-11-01T00:00:00Z");
    let stored = {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        let lines = [http_line(a, at, "one"), http_line(b, at, "one")].join("\n");
        store.apply_batch(&parse(&lines, ts(AS_OF))).unwrap();
        codec::encode_host(&store.host(a).unwrap().unwrap())
    };
    let key = HostKey::of(a);
    poke(&dir.store(), &stored, &garbled(&stored));

    let mut store = DurableStore::open(&dir.store()).unwrap();
    let names_the_key = |e: StoreError| match e {
        StoreError::CorruptHost { key: k, .. } if k == key => e.to_string(),
        other => panic!("unexpected error {other}"),
    };
    let message = names_the_key(store.host(a).unwrap_err());
    assert!(message.contains("240.0.0.1"), "{message}");
    assert!(
        message.contains("000000000000000000000000f0000001"),
        "{message}"
    );
    // The intact record still reads; iteration reports the corrupt one where it lies.
    assert!(store.host(b).unwrap().is_some());
    let mut hosts = store.hosts().unwrap();
    names_the_key(hosts.next().unwrap().unwrap_err());
    assert_eq!(hosts.next().unwrap().unwrap().ip, b);

    // A batch touching the corrupt record is refused as a whole: b is not updated either.
    let later = ts("2026-11-02T00:00:00Z");
    let lines = [http_line(b, later, "two"), http_line(a, later, "two")].join("\n");
    names_the_key(store.apply_batch(&parse(&lines, ts(AS_OF))).unwrap_err());
    let b_record = store.host(b).unwrap().unwrap();
    assert_eq!(b_record.services.values().next().unwrap().observed_at, at);
    assert_eq!(
        run_files(&dir.store()).len(),
        1,
        "the refused batch left a run"
    );
}

#[test]
fn a_record_filed_under_another_address_is_corrupt() {
    let dir = TempDir::new("misfiled");
    // Two addresses whose records have the same length; b's bytes are put in a's place.
    let a: IpAddr = "240.0.0.1".parse().unwrap();
    let b: IpAddr = "240.0.0.2".parse().unwrap();
    let (bytes_a, bytes_b) = {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        let at = ts("2026-11-01T00:00:00Z");
        let lines = [http_line(a, at, "one"), http_line(b, at, "one")].join("\n");
        store.apply_batch(&parse(&lines, ts(AS_OF))).unwrap();
        let encoded = |ip| codec::encode_host(&store.host(ip).unwrap().unwrap());
        (encoded(a), encoded(b))
    };
    poke(&dir.store(), &bytes_a, &bytes_b);

    let store = DurableStore::open(&dir.store()).unwrap();
    let err = store.host(a).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptHost { key, source: None, .. } if *key == HostKey::of(a)),
        "{err}"
    );
    assert!(err.to_string().contains("240.0.0.2"), "{err}");
}

#[test]
fn a_corrupt_domain_scan_is_an_error_naming_it() {
    let dir = TempDir::new("corrupt-scan");
    let stored = {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        let line = r#"{"kind":"domain","name":"www.example","addresses":["240.0.0.1"],"observed_at":"2026-11-01T00:00:00Z"}"#;
        store.apply_batch(&parse(line, ts(AS_OF))).unwrap();
        let scans = store.domain_scans().unwrap();
        assert_eq!(scans.by_name.len(), 1);
        codec::encode_domain_scan(scans.by_name.values().next().unwrap())
    };
    poke(&dir.store(), &stored, &garbled(&stored));
    let store = DurableStore::open(&dir.store()).unwrap();
    let err = store.domain_scans().unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptDomainScan { name, .. } if name == "www.example"),
        "{err}"
    );
}

/// An index loaded from its file reads domain-scan records by name when a query needs them
/// (a start decodes none): a corrupt one is then that query's error, never skipped.
#[test]
fn a_corrupt_domain_scan_under_a_loaded_index_is_an_error_of_the_lookup_that_reads_it() {
    use periscope_index::api::{ScanIndex, SearchRequest};
    use periscope_index::{EmbeddedIndex, IndexConfig};
    use periscope_model::DomainName;
    use periscope_query::Query;

    let dir = TempDir::new("corrupt-scan-loaded");
    let file = dir.0.join("scan.index");
    let now = ts(AS_OF);
    let line = r#"{"kind":"domain","name":"www.example","addresses":["240.0.0.1"],"observed_at":"2026-11-01T00:00:00Z"}"#;
    let other = r#"{"kind":"domain","name":"other.test","addresses":["240.0.0.2"],"observed_at":"2026-11-01T00:00:00Z"}"#;
    let host = r#"{"kind":"service","ip":"240.0.0.1","port":80,"transport":"tcp","protocol":"http","observed_at":"2026-11-01T00:00:00Z","status":"completed","product":{"title":"t"}}"#;
    let query: Query = "domain:www.example".parse().unwrap();
    let req = SearchRequest {
        query: &query,
        after: None,
        limit: 10,
        resolved: &[],
        now,
    };
    let (stored, before) = {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        store
            .apply_batch(&parse(&format!("{line}\n{other}\n{host}"), now))
            .unwrap();
        let index = EmbeddedIndex::from_store(&store, IndexConfig::default(), now).unwrap();
        index.save(&file).unwrap();
        let scans = store.domain_scans().unwrap();
        let www = DomainName::parse("www.example").unwrap();
        let before = (
            index.count(&query, now).unwrap(),
            index.search(&req).unwrap(),
        );
        (codec::encode_domain_scan(&scans.by_name[&www]), before)
    };
    poke(&dir.store(), &stored, &garbled(&stored));
    let store = DurableStore::open(&dir.store()).unwrap();
    let index = EmbeddedIndex::load(&file, store.snapshot().unwrap(), IndexConfig::default())
        .expect("a start reads no domain-scan record");
    let names_it = |e: periscope_index::api::IndexError| {
        assert!(e.to_string().contains("www.example"), "{e}");
    };
    names_it(
        index
            .domain_scans_of_name(&DomainName::parse("example").unwrap())
            .unwrap_err(),
    );
    names_it(
        index
            .domain_scans_of_address("240.0.0.1".parse().unwrap())
            .unwrap_err(),
    );
    // A domain search and count answer from the index's lookups (names and addresses),
    // reading no record, so the damaged record does not change their answer.
    assert_eq!(index.count(&query, now).unwrap(), before.0);
    assert_eq!(index.search(&req).unwrap(), before.1);
    assert_eq!(
        before.0.value, 1,
        "the search finds the damaged record's address"
    );
    // The intact record is read as stored.
    let intact = index
        .domain_scans_of_name(&DomainName::parse("test").unwrap())
        .unwrap();
    assert_eq!(intact.len(), 1);
    assert_eq!(intact[0].name.as_str(), "other.test");
}

#[test]
fn a_damaged_run_or_manifest_is_refused() {
    let dir = TempDir::new("damaged");
    {
        let mut store = DurableStore::open(&dir.store()).unwrap();
        apply_in_batches(&mut store, &synth(50, 3), 1000);
    }
    let run = run_files(&dir.store()).pop().unwrap();
    let intact = std::fs::read(&run).unwrap();
    // Cut short (a torn file), and a flipped bit in its index: both named, neither read.
    std::fs::write(&run, &intact[..intact.len() - 10]).unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(
        matches!(&err, StoreError::CorruptFile { path, .. } if *path == run),
        "{err}"
    );
    let mut flipped = intact.clone();
    let at = intact.len() - 60;
    flipped[at] ^= 1;
    std::fs::write(&run, &flipped).unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
    std::fs::write(&run, &intact).unwrap();
    assert!(DurableStore::open(&dir.store()).is_ok());

    // A manifest naming a run that is not there.
    std::fs::remove_file(&run).unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
}

#[test]
fn another_schema_version_is_refused() {
    let dir = TempDir::new("version");
    drop(DurableStore::open(&dir.store()).unwrap());
    let manifest = dir.store().join(MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest).unwrap();
    let other = text.replace(
        &format!("schema_version {SCHEMA_VERSION}\n"),
        &format!("schema_version {}\n", SCHEMA_VERSION + 1),
    );
    assert_ne!(text, other);
    std::fs::write(&manifest, other).unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(
        matches!(err, StoreError::VersionMismatch { found, supported, .. }
            if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
        "{err}"
    );
    assert!(err.to_string().contains("schema version 3"), "{err}");
}

#[test]
fn a_foreign_directory_or_file_is_refused() {
    let dir = TempDir::new("foreign");
    // A directory with files but no manifest.
    std::fs::create_dir_all(dir.store()).unwrap();
    std::fs::write(dir.store().join("notes.txt"), "not a store").unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    // A manifest of something else.
    std::fs::write(dir.store().join(MANIFEST_FILE), "some other program\n").unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
    // A plain file where the directory should be.
    let text = dir.0.join("notes.txt");
    std::fs::write(&text, "not a database, just some text that is long enough").unwrap();
    let err = DurableStore::open(&text).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}

#[test]
fn a_second_process_cannot_open_an_open_store() {
    let dir = TempDir::new("locked");
    let store = DurableStore::open(&dir.store()).unwrap();
    let err = DurableStore::open(&dir.store()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    drop(store);
    assert!(DurableStore::open(&dir.store()).is_ok());
}

/// Writes a store of schema version 1, as the redb store wrote it: a `meta` table with the
/// schema version and generation, and one record in `hosts` and `domain_scans`.
fn write_version_1_store(path: &Path, record: &HostRecord) {
    let db = redb::Database::create(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta = txn
            .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .unwrap();
        meta.insert("schema_version", 1).unwrap();
        meta.insert("generation", 1).unwrap();
        let mut hosts = txn
            .open_table(redb::TableDefinition::<&[u8; 16], &[u8]>::new("hosts"))
            .unwrap();
        hosts
            .insert(
                &HostKey::of(record.ip).0,
                codec::encode_host(record).as_slice(),
            )
            .unwrap();
        txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("domain_scans"))
            .unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn a_store_of_schema_version_1_is_refused_with_what_to_do() {
    let dir = TempDir::new("version-1");
    let mut record = HostRecord::new("240.0.0.1".parse().unwrap());
    for obs in parse(
        &http_line(record.ip, ts("2026-11-01T00:00:00Z"), "one"),
        ts(AS_OF),
    ) {
        let Observation::Service(s) = obs else {
            panic!()
        };
        record.apply(&s);
    }
    let old = dir.0.join("scan.redb");
    write_version_1_store(&old, &record);
    let before = std::fs::read(&old).unwrap();

    // Opening the new store of that data directory, and opening the old file itself.
    for path in [dir.store(), old.clone()] {
        let err = DurableStore::open(&path).unwrap_err();
        assert!(
            matches!(&err, StoreError::OldFormat { path } if *path == old),
            "{err}"
        );
        let message = err.to_string();
        for part in [
            "scan.redb",
            "schema version 1",
            "ingest",
            "new data directory",
        ] {
            assert!(message.contains(part), "{part:?} missing from: {message}");
        }
    }
    // Never read as an empty store, and nothing written: no new store beside it, the old
    // file as it was.
    assert!(!dir.store().exists());
    assert_eq!(std::fs::read(&old).unwrap(), before);
}

// ---------------------------------------------------------------------------------------------
// A killed writer.

/// Selects the child mode of the killed-writer tests ([`killed_writer`]): the path of the
/// store it writes.
const CRASH_CHILD_ENV: &str = "PERISCOPE_DURABLE_CRASH_CHILD";
/// New hosts per batch: batch `k` adds hosts `k * NEW + i`.
const NEW_PER_BATCH: u32 = 3000;
/// Hosts every batch rewrites, with the product title `batch k`.
const SHARED: u32 = 200;
/// First address of the shared hosts (241.0.0.0); new hosts count up from 240.0.0.0.
const SHARED_BASE: u32 = 0xf100_0000;

fn crash_time(k: u32) -> Timestamp {
    Timestamp::from_unix(1_790_000_000 + i64::from(k)).unwrap()
}

/// Batch `k`: [`NEW_PER_BATCH`] hosts no other batch touches, and every shared host, all
/// titled `batch k`.
fn crash_batch(k: u32) -> Vec<Observation> {
    let title = format!("batch {k}");
    let new = (0..NEW_PER_BATCH).map(|i| 0xf000_0000 + k * NEW_PER_BATCH + i);
    let shared = (0..SHARED).map(|i| SHARED_BASE + i);
    let lines: Vec<String> = new
        .chain(shared)
        .map(|a| http_line(IpAddr::from(a.to_be_bytes()), crash_time(k), &title))
        .collect();
    parse(&lines.join("\n"), crash_time(u32::MAX >> 8))
}

/// The batch a record was last written by.
fn batch_of(record: &HostRecord) -> u32 {
    let title = &record
        .services
        .values()
        .next()
        .unwrap()
        .product
        .as_ref()
        .unwrap()
        .title;
    title.strip_prefix("batch ").unwrap().parse().unwrap()
}

/// The child: applies batches 1, 2, … until killed, printing `committed k` once batch `k` is
/// acknowledged: after its apply returns, or acknowledging one behind, after the next one's.
fn crash_child(path: &Path, behind: bool) {
    let mut store = DurableStore::open(path).unwrap();
    if behind {
        store.acknowledge_one_behind();
    }
    let mut out = std::io::stdout().lock();
    let mut batch = crash_batch(1);
    for k in 1..10_000 {
        store.apply_batch(&batch).unwrap();
        // Built before reporting, so a kill right after the report lands inside the next
        // batch's transaction rather than in parsing.
        batch = crash_batch(k + 1);
        let acknowledged = if behind { k - 1 } else { k };
        if acknowledged > 0 {
            writeln!(out, "committed {acknowledged}").unwrap();
            out.flush().unwrap();
        }
    }
}

#[test]
fn a_killed_writer_loses_no_acknowledged_batch() {
    killed_writer("a_killed_writer_loses_no_acknowledged_batch", false);
}

#[test]
fn a_killed_writer_acknowledging_one_behind_loses_no_acknowledged_batch() {
    killed_writer(
        "a_killed_writer_acknowledging_one_behind_loses_no_acknowledged_batch",
        true,
    );
}

/// Runs the test `test` as a child writing batches (acknowledging one behind if `behind`),
/// kills it mid-batch, and checks that every acknowledged batch is stored whole, and any later
/// one whole or not at all.
fn killed_writer(test: &str, behind: bool) {
    if let Some(path) = std::env::var_os(CRASH_CHILD_ENV) {
        crash_child(Path::new(&path), behind);
        return;
    }
    let dir = TempDir::new("crash");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .env(CRASH_CHILD_ENV, dir.store())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acknowledged = 0;
    for line in lines.by_ref() {
        if let Some(k) = line.unwrap().strip_prefix("committed ") {
            acknowledged = k.parse().unwrap();
            if acknowledged == FANOUT as u32 {
                break;
            }
        }
    }
    assert_eq!(
        acknowledged, FANOUT as u32,
        "the child stopped before committing {FANOUT} batches"
    );
    // Kill it while it works on the next batch (SIGKILL: no destructors, no flush), at a
    // varying point: while it merges the first FANOUT runs (which that batch does first),
    // while it writes its run, its manifest, or after; acknowledging one behind, also while
    // the commit of the batch before goes on.
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    std::thread::sleep(std::time::Duration::from_micros(u64::from(nanos % 25_000)));
    child.kill().unwrap();
    for line in lines {
        if let Some(k) = line.unwrap().strip_prefix("committed ") {
            acknowledged = k.parse().unwrap();
        }
    }
    child.wait().unwrap();

    let store = DurableStore::open(&dir.store()).unwrap();
    let mut new_by_batch = BTreeMap::<u32, u32>::new();
    let mut shared_batches = BTreeMap::<u32, u32>::new();
    for record in store.hosts().unwrap() {
        let record = record.unwrap();
        let IpAddr::V4(a) = record.ip else {
            panic!("unexpected {}", record.ip)
        };
        let k = batch_of(&record);
        if u32::from(a) >= SHARED_BASE {
            *shared_batches.entry(k).or_default() += 1;
        } else {
            assert_eq!((u32::from(a) - 0xf000_0000) / NEW_PER_BATCH, k);
            *new_by_batch.entry(k).or_default() += 1;
        }
    }
    // Every acknowledged batch is complete; at most one more (committed, not yet reported) is
    // present, two acknowledging one behind (the next one's commit may have finished too), and
    // each is complete too.
    let last = *new_by_batch.keys().last().unwrap();
    eprintln!("acknowledged {acknowledged}, stored {last}");
    let later = if behind { 2 } else { 1 };
    assert!(
        (acknowledged..=acknowledged + later).contains(&last),
        "{last} vs {acknowledged}"
    );
    let expected: BTreeMap<u32, u32> = (1..=last).map(|k| (k, NEW_PER_BATCH)).collect();
    assert_eq!(new_by_batch, expected);
    // The shared hosts all carry the last committed batch: none is half-updated.
    assert_eq!(shared_batches, BTreeMap::from([(last, SHARED)]));
}

// ---------------------------------------------------------------------------------------------
// Measurement.

/// Apply throughput on a synthetic dataset:
/// `cargo test -p periscope-index --release --test durable -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run it in release mode"]
fn measure_apply_throughput() {
    const OBSERVATIONS: usize = 200_000;
    // The batch size, 10,000 unless PERISCOPE_MEASURE_BATCH says otherwise.
    let batch_size: usize =
        std::env::var("PERISCOPE_MEASURE_BATCH").map_or(10_000, |v| v.parse().unwrap());
    let dir = TempDir::new("measure");
    let cfg = SynthConfig {
        hosts: 90_000,
        seed: 1,
        as_of: ts(AS_OF),
    };
    let started = Instant::now();
    let mut text = Vec::new();
    write_dataset(&cfg, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let synth_time = started.elapsed();

    let started = Instant::now();
    let mut reader = ObservationReader::new(ts(AS_OF));
    let observations: Vec<Observation> = text
        .lines()
        .filter_map(|line| reader.read_line(line).unwrap())
        .take(OBSERVATIONS)
        .collect();
    let parse_time = started.elapsed();
    assert_eq!(observations.len(), OBSERVATIONS, "the dataset is too small");
    let json_bytes: usize = text.lines().take(OBSERVATIONS).map(|l| l.len() + 1).sum();

    // The merge alone, in memory: the floor of any store.
    let started = Instant::now();
    let expected = in_memory(&observations);
    let merge_time = started.elapsed();
    let started = Instant::now();
    let encoded: usize = expected
        .hosts
        .iter()
        .map(|h| periscope_index::codec::encode_host(h).len())
        .sum();
    let encode_time = started.elapsed();
    let started = Instant::now();
    for h in &expected.hosts {
        let bytes = periscope_index::codec::encode_host(h);
        periscope_index::codec::decode_host(&bytes).unwrap();
    }
    let round_trip_time = started.elapsed();

    let mut store = DurableStore::open(&dir.store()).unwrap();
    let started = Instant::now();
    let mut commits = std::time::Duration::ZERO;
    for batch in observations.chunks(batch_size) {
        let t = Instant::now();
        store.apply_batch(batch).unwrap();
        commits += t.elapsed();
    }
    let apply_time = started.elapsed();
    let stats = store.stats().unwrap();

    // Again: every observation superseded, nothing written (reads, decodes, merges, encodes).
    let started = Instant::now();
    for batch in observations.chunks(batch_size) {
        let s = store.apply_batch(batch).unwrap();
        assert_eq!(s.applied, 0);
    }
    let reapply_time = started.elapsed();

    let started = Instant::now();
    let reread: usize = store
        .hosts()
        .unwrap()
        .map(|h| h.unwrap().services.len())
        .sum();
    let read_time = started.elapsed();
    assert_eq!(state(&store), expected);

    let rate = |d: std::time::Duration| OBSERVATIONS as f64 / d.as_secs_f64();
    println!(
        "observations: {OBSERVATIONS} in batches of {batch_size} ({json_bytes} bytes of JSON)"
    );
    println!(
        "in-memory sizes: StoredService {} bytes, HostRecord {} bytes",
        std::mem::size_of::<periscope_index::StoredService>(),
        std::mem::size_of::<HostRecord>()
    );
    println!(
        "hosts stored: {}, domain scans: {}, services: {reread}",
        stats.hosts, stats.domain_scans
    );
    println!("synth (whole dataset): {synth_time:.2?}");
    println!("parse: {parse_time:.2?} ({:.0} obs/s)", rate(parse_time));
    println!(
        "in-memory merge: {merge_time:.2?} ({:.0} obs/s)",
        rate(merge_time)
    );
    println!(
        "encode all records: {encode_time:.2?}; encode+decode: {round_trip_time:.2?}; \
         {encoded} bytes encoded ({:.0} per host)",
        encoded as f64 / stats.hosts as f64
    );
    println!(
        "apply_batch (durable): {apply_time:.2?} ({:.0} obs/s), {:.1} ms per batch",
        rate(apply_time),
        commits.as_secs_f64() * 1000.0 / OBSERVATIONS.div_ceil(batch_size) as f64
    );
    println!(
        "re-apply (nothing written): {reapply_time:.2?} ({:.0} obs/s)",
        rate(reapply_time)
    );
    println!("read all hosts: {read_time:.2?}");
    println!(
        "file: {} bytes ({:.0} per host)",
        stats.file_bytes,
        stats.file_bytes as f64 / stats.hosts as f64
    );
}
