//! A measurement, not a check: synthetic hosts (`periscope-synth`) written to a ClickHouse
//! server the test starts, then the median latency of each kind of call, beside the
//! reference engine over the same observations. Run with
//! `cargo test -p periscope-clickhouse --release --test measure -- --ignored --nocapture`
//! (`PERISCOPE_MEASURE_HOSTS` sets the number of hosts, 100,000 by default).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use periscope_clickhouse::testing::{CLUSTER, Cluster};
use periscope_clickhouse::{ClickHouseIndex, schema};
use periscope_index::api::{ScanIndex, SearchRequest};
use periscope_index::{IndexConfig, ReferenceIndex};
use periscope_model::observation::{Observation, ObservationReader};
use periscope_model::{Port, Timestamp};
use periscope_query::{Clause, FilterQuery, Query, Resolution};

fn p50(mut run: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..11)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}

#[test]
#[ignore = "a measurement: run with --release --ignored --nocapture"]
fn measure_synthetic_hosts() {
    let Some(cluster) = Cluster::start(1, std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))) else {
        return;
    };
    let hosts: u64 = std::env::var("PERISCOPE_MEASURE_HOSTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let as_of = Timestamp::parse("2026-11-20T14:00:00Z").unwrap();
    let cfg = periscope_synth::SynthConfig {
        hosts,
        seed: 7,
        as_of,
    };
    let mut text = Vec::new();
    periscope_synth::write_dataset(&cfg, &mut text).unwrap();
    let mut reader = ObservationReader::new(as_of);
    let observations: Vec<Observation> = std::str::from_utf8(&text)
        .unwrap()
        .lines()
        .filter_map(|l| reader.read_line(l).unwrap())
        .collect();
    let mut reference = ReferenceIndex::new(IndexConfig::default());
    for obs in &observations {
        reference.apply(obs);
    }
    let nodes = cluster.clients();
    schema::init(&nodes, "measure", CLUSTER).unwrap();
    let engine = ClickHouseIndex::new(
        &cluster.urls()[0],
        "measure",
        IndexConfig::default(),
        Duration::from_secs(600),
    )
    .unwrap();
    let t = Instant::now();
    for batch in observations.chunks(50_000) {
        engine.insert(batch).unwrap();
    }
    let took = t.elapsed();
    let disk = nodes[0]
        .execute(
            "SELECT sum(bytes) FROM system.parts WHERE database = 'measure' AND active \
             FORMAT TabSeparated",
        )
        .unwrap();
    eprintln!(
        "{hosts} hosts, {} observations written in {took:.1?} ({:.0} observations/s); \
         {} bytes on disk ({} B/host)",
        observations.len(),
        observations.len() as f64 / took.as_secs_f64(),
        disk.trim(),
        disk.trim().parse::<u64>().unwrap_or(0) / hosts
    );

    let now = as_of;
    let port22 = Query::Filter(FilterQuery::new([Clause::Port(Port::new(22).unwrap())]).unwrap());
    let middle: IpAddr = reference.records().nth(hosts as usize / 2).unwrap().ip;
    let filter22 = port22.as_filter().unwrap().clone();
    let engines: [(&str, &dyn ScanIndex); 2] = [("clickhouse", &engine), ("reference", &reference)];
    for (name, index) in engines {
        let search = p50(|| {
            let req = SearchRequest {
                query: &port22,
                after: None,
                limit: 100,
                resolved: &[],
                now,
            };
            index.search(&req).unwrap();
        });
        let count = p50(|| {
            index.count(&port22, now).unwrap();
        });
        let facets = p50(|| {
            index.facets(&filter22, now).unwrap();
        });
        let exposure = p50(|| {
            index.exposure(&port22, Resolution::Global, now).unwrap();
        });
        let detail = p50(|| {
            index.host_detail(middle, None, 20, now).unwrap();
        });
        eprintln!(
            "{name:>10}: port:22 search page of 100 {search:.1?}, count {count:.1?}, facets \
             {facets:.1?}, exposure {exposure:.1?}; host detail {detail:.1?}"
        );
    }
}
