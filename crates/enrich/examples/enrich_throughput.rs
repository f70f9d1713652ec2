//! How many observations per second `Enricher::enrich` fills from a location file.
//!
//! ```text
//! cargo run --release -p periscope-enrich --example enrich_throughput -- \
//!     --geoip-city FILE [--geoip-asn FILE] [--asn-table FILE] [--count N]
//! ```
//!
//! Draws `N` (default 1,000,000) random public IPv4 addresses (a fixed seed, so runs
//! compare), then times `enrich` of a service observation of each, one after the other on one
//! thread, as an importer streams them.

use std::path::PathBuf;
use std::time::Instant;

use periscope_enrich::{EnrichConfig, EnrichStats, Enricher, is_internal};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader};

fn main() {
    let mut config = EnrichConfig::default();
    let mut count = 1_000_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--geoip-city" => config.geoip_city = Some(PathBuf::from(value)),
            "--geoip-asn" => config.geoip_asn = Some(PathBuf::from(value)),
            "--asn-table" => config.asn_table = Some(PathBuf::from(value)),
            "--count" => count = value.parse().unwrap_or_else(|_| usage("--count N")),
            other => usage(&format!("unknown flag {other}")),
        }
    }
    if config.is_empty() {
        usage("name at least one file");
    }

    let started = Instant::now();
    let enricher = Enricher::open(&config).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    println!(
        "opened in {:.2} s: {enricher:?}",
        started.elapsed().as_secs_f64()
    );

    let line = r#"{"kind":"service","ip":"192.0.2.1","port":443,"transport":"tcp","protocol":"https","observed_at":"2026-11-20T13:04:11Z","status":"completed"}"#;
    let now = Timestamp::parse("2026-11-25T00:00:00Z").expect("a timestamp");
    let Ok(Some(Observation::Service(template))) = ObservationReader::new(now).read_line(line)
    else {
        panic!("the template line does not read");
    };
    let mut state = 0x5eed_u64;
    let mut addresses = Vec::with_capacity(count);
    while addresses.len() < count {
        let ip = std::net::Ipv4Addr::from(splitmix64(&mut state) as u32);
        if ip.octets()[0] == 0 || ip.octets()[0] >= 224 || is_internal(ip.into()) {
            continue;
        }
        addresses.push(std::net::IpAddr::from(ip));
    }

    // One observation at a time, as an importer streams them: its host block is emptied
    // (and what the last lookup allocated freed) before each address.
    let mut stats = EnrichStats::default();
    let mut obs = template;
    let started = Instant::now();
    for &ip in &addresses {
        obs.ip = ip;
        obs.host = Default::default();
        stats.record(&enricher.enrich(&mut obs));
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{stats}");
    println!(
        "{count} observations in {seconds:.3} s: {:.0} lookups/s",
        count as f64 / seconds
    );
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn usage(why: &str) -> ! {
    eprintln!(
        "{why}\nusage: enrich_throughput --geoip-city FILE [--geoip-asn FILE] [--asn-table FILE] [--count N]"
    );
    std::process::exit(2)
}
