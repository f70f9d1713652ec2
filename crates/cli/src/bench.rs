//! `periscope bench`: measurements of Periscope's parts on this machine.
//!
//! This file dispatches the subcommands and holds `bench synth`; `bench index` (ingest,
//! start-up, memory and query latency of the embedded scan index) lives in [`index`], and
//! its ClickHouse part (`--index clickhouse://…`: the same operations on the ClickHouse
//! engine and as hand-written SQL) in [`clickhouse`]. The hidden `bench open` and `bench
//! ingest` are the child processes `bench index` measures each start of a server and the
//! ingest in.
//!
//! `bench synth` runs the synthetic-data generator into a counting sink (no disk) several
//! times and reports the median, minimum and maximum rate in records and megabytes per second,
//! and the process's peak resident memory (`VmHWM` from `/proc/self/status`, Linux only).
//! This is where the generator's speed target (500,000 records a second on one core) is shown.

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use periscope_model::Timestamp;
use periscope_synth::{SynthConfig, write_dataset};

use crate::synth::{group, parse_hosts};

mod clickhouse;
mod index;

/// `periscope bench` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Measure the synthetic-data generator (records/s, MB/s, peak memory), writing to a
    /// counting sink rather than a disk.
    Synth(SynthArgs),
    /// Measure the embedded scan index: build a synthetic dataset, ingest it, open the
    /// index, and time a fixed mix of searches, counts, facets, exposure and host details;
    /// with --index clickhouse://…, also on ClickHouse, beside the same questions in
    /// hand-written SQL.
    Index(index::IndexArgs),
    /// Open the index of a data directory as `serve` does, in this process, and print what
    /// the start cost (seconds, resident memory) as one JSON line. `bench index` runs it as
    /// a child process, so each start is measured in a process of its own.
    #[command(hide = true)]
    Open(index::OpenArgs),
    /// Ingest a dataset as `periscope ingest` does, in this process, and print what it
    /// measured (observations, rejected lines, seconds) as one JSON line. `bench index` runs
    /// it as a child process, so the ingest is measured in a process of its own.
    #[command(hide = true)]
    Ingest(index::IngestArgs),
}

/// Arguments of `periscope bench synth`.
#[derive(Debug, clap::Args)]
pub(crate) struct SynthArgs {
    /// Hosts per run.
    #[arg(long, value_name = "N", default_value = "200000", value_parser = parse_hosts)]
    hosts: u64,
    /// Number of runs.
    #[arg(long, value_name = "R", default_value_t = 5)]
    runs: u32,
    /// Seed of the generator.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
}

/// Runs a `periscope bench` subcommand.
pub(crate) fn run(command: &Command) -> Result<ExitCode> {
    match command {
        Command::Synth(args) => synth(args),
        Command::Index(args) => index::run(args),
        Command::Open(args) => index::open(args),
        Command::Ingest(args) => index::ingest(args),
    }
}

/// A writer that only counts bytes.
#[derive(Debug, Default)]
struct CountingSink {
    bytes: u64,
}

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One run's rates.
#[derive(Debug, Clone, Copy)]
struct Rate {
    records_per_s: f64,
    mb_per_s: f64,
}

fn synth(args: &SynthArgs) -> Result<ExitCode> {
    if args.runs == 0 {
        bail!("--runs must be at least 1");
    }
    // A fixed date, so that every run and every day measures the same bytes.
    let as_of = Timestamp::parse("2026-01-01T00:00:00Z").context("the benchmark date")?;
    let cfg = SynthConfig {
        hosts: args.hosts,
        seed: args.seed,
        as_of,
    };
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "bench synth: {} hosts, seed {}, {} runs, into a counting sink{}",
        group(args.hosts),
        args.seed,
        args.runs,
        if cfg!(debug_assertions) {
            " (debug build: build with --release for meaningful numbers)"
        } else {
            ""
        }
    )?;
    let mut rates = Vec::with_capacity(args.runs as usize);
    for run in 1..=args.runs {
        let mut sink = CountingSink::default();
        let started = Instant::now();
        let stats = write_dataset(&cfg, &mut sink).context("generating")?;
        let seconds = started.elapsed().as_secs_f64().max(1e-9);
        if sink.bytes != stats.bytes {
            bail!(
                "the generator reported {} bytes but wrote {}",
                stats.bytes,
                sink.bytes
            );
        }
        let rate = Rate {
            records_per_s: stats.records as f64 / seconds,
            mb_per_s: stats.bytes as f64 / 1e6 / seconds,
        };
        writeln!(
            out,
            "run {run}: {} records, {:.1} MB in {:.3} s: {} records/s, {:.0} MB/s",
            group(stats.records),
            stats.bytes as f64 / 1e6,
            seconds,
            group(rate.records_per_s as u64),
            rate.mb_per_s
        )?;
        rates.push(rate);
    }
    let records: Vec<f64> = rates.iter().map(|r| r.records_per_s).collect();
    let mb: Vec<f64> = rates.iter().map(|r| r.mb_per_s).collect();
    let (median, min, max) = spread(&records);
    writeln!(
        out,
        "records/s: median {}, min {}, max {}",
        group(median as u64),
        group(min as u64),
        group(max as u64)
    )?;
    let (median, min, max) = spread(&mb);
    writeln!(
        out,
        "MB/s:      median {median:.0}, min {min:.0}, max {max:.0}"
    )?;
    match status_kib("VmHWM") {
        Some(kib) => writeln!(out, "peak RSS:  {:.1} MiB (VmHWM)", kib as f64 / 1024.0)?,
        None => writeln!(out, "peak RSS:  unknown (no /proc/self/status)")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Median, minimum and maximum of a non-empty list.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

/// A memory figure of this process in KiB from `/proc/self/status` (`VmRSS`: resident now;
/// `VmHWM`: peak resident), Linux only.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_runs() {
        assert_eq!(spread(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(spread(&[4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
        assert_eq!(spread(&[5.0]), (5.0, 5.0, 5.0));
    }

    #[test]
    fn reads_peak_memory() {
        if cfg!(target_os = "linux") {
            assert!(status_kib("VmHWM").is_some_and(|k| k > 0));
            assert!(status_kib("VmRSS").is_some_and(|k| k > 0));
        }
    }
}
