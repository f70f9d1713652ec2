//! `periscope bench index`: how fast the embedded scan index ingests, starts and answers.
//!
//! The run has three stages, each reported:
//!
//! 1. **Dataset.** `periscope synth` data (`--hosts`, `--seed`, `--as-of`) is written to
//!    `DIR/observations.jsonl` (with `--stream`, generated into a pipe instead), ingested
//!    into `DIR/data` by a process of its own (`periscope bench ingest`, [`ingest_process`])
//!    through the same pipeline as `periscope ingest` ([`ingest_paths`]), and deleted again
//!    unless `--keep-input`.
//!    `DIR/dataset.txt` records what was built, so `--reuse` can skip this stage and measure
//!    the store already there.
//! 2. **Start to serving.** Each start runs in a process of its own (`periscope bench open`,
//!    [`start_process`]), as a server's does: the first start after an ingest builds the
//!    index and saves its file, a restart loads the file; each reports its time and its
//!    resident memory right after opening, once settled and past its first question
//!    ([`SETTLE`]), and at its peak (`VmRSS`, `VmHWM`). Then this process loads the same
//!    file for the queries, and the size of `DIR/data` is read.
//! 3. **Queries.** Query values are drawn from the store itself (every k-th host record, see
//!    [`sample_hosts`]), so each one matches something; every operation cycles through up to
//!    [`VALUES_PER_OP`] of them. After one warm-up pass over every value, operations run one at
//!    a time on this thread, `--runs` times each (`--heavy-runs` for facets and exposure), and
//!    the latency of each call is recorded: p50, p99, minimum and maximum.
//!
//! The index is built current at the dataset's `as_of`, not at the wall clock, so a reused
//! store answers the same on any later day. Figures are compared with the targets of the
//! embedded engine at 10 million hosts ([`Target`]); they are printed as a table on standard
//! output and, with `--json FILE`, written as JSON. Reference: `docs/benchmarks.md`.

use std::collections::HashSet;
use std::fs;
use std::hash::Hash;
use std::hint::black_box;
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use periscope_index::durable::DurableStore;
use periscope_index::{
    HostRecord, IndexConfig, LayeredIndex, LiveIndex, Opened, ScanIndex, SearchOutcome,
    SearchRequest,
};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ObservationReader};
use periscope_query::{FilterQuery, Query, Resolution};
use periscope_synth::{SynthConfig, write_dataset};
use serde_json::{Value, json};

use super::{clickhouse, status_kib};
use crate::ingest::{DEFAULT_BATCH, STORE_FILE, ingest_paths, ingest_synthetic};
use crate::synth::{group, now, parse_as_of, parse_hosts};

/// Hosts unless `--hosts` says otherwise.
const DEFAULT_HOSTS: u64 = 1_000_000;
/// The seed unless `--seed` says otherwise.
const DEFAULT_SEED: u64 = 1;
/// Different values each operation cycles through.
const VALUES_PER_OP: usize = 50;
/// Host records drawn from the store to take values from.
const SAMPLED_HOSTS: u64 = 1_000;
/// Hosts per search page: the API's default `limit`.
pub(super) const PAGE_LIMIT: usize = 25;
/// Services per host-detail page: the largest `limit`.
pub(super) const DETAIL_LIMIT: usize = 20;
/// A host-detail host should have at least this many services.
const DETAIL_MIN_SERVICES: usize = 3;
/// Broad single clauses: first pages and counts cycle through them.
const BROAD: [&str; 6] = [
    "port:443",
    "port:80",
    "port:22",
    "protocol:https",
    "protocol:http",
    "protocol:ssh",
];
/// Three service-level clauses (one service must satisfy all three): the counts and facets of
/// `count-three-service` and `facets-three-service` cycle through them.
const THREE_SERVICE: [&str; 4] = [
    "port:443 protocol:https cvss:7.0-10.0",
    "port:80 protocol:http cvss:7.0-10.0",
    "port:22 protocol:ssh cvss:4.0-10.0",
    "port:443 protocol:https exploit:yes",
];
/// Candidates for the facet and exposure queries; those matching about a third of the hosts
/// are used ([`third_of_hosts`]).
const BROAD_CANDIDATES: [&str; 12] = [
    "port:443",
    "port:80",
    "port:22",
    "protocol:https",
    "protocol:http",
    "protocol:ssh",
    "exploit:no",
    "exploit:yes",
    "cvss:0.0-10.0",
    "cvss:7.0-10.0",
    "cvss:4.0-10.0",
    "cvss:0.0-6.9",
];
/// The dataset description inside the work directory.
const DATASET_FILE: &str = "dataset.txt";
/// The observation file inside the work directory.
const INPUT_FILE: &str = "observations.jsonl";
/// The data directory inside the work directory.
const DATA_DIR: &str = "data";

/// Arguments of `periscope bench index`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without --dir a fresh directory under the system temporary \
    directory is used and kept (the report names it; delete it when done). With --reuse \
    and a directory holding an earlier run's store, the dataset stage is skipped. Values \
    of --hosts, --seed or --as-of that differ from the reused dataset are an error. See \
    docs/benchmarks.md."
)]
pub(crate) struct IndexArgs {
    /// Hosts in the dataset [default: 1,000,000].
    #[arg(long, value_name = "N", value_parser = parse_hosts)]
    hosts: Option<u64>,
    /// Seed of the generator [default: 1].
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// The instant the dataset describes; the index is built current at it
    /// [default: the start of the current UTC day].
    #[arg(long, value_name = "RFC3339|YYYY-MM-DD", value_parser = parse_as_of)]
    as_of: Option<Timestamp>,
    /// Work directory: DIR/observations.jsonl, DIR/data (the store), DIR/dataset.txt. It
    /// must be missing or empty unless --reuse [default: a new directory under the system
    /// temporary directory].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Measure the store an earlier run left in DIR instead of building one.
    #[arg(long)]
    reuse: bool,
    /// Keep DIR/observations.jsonl after ingesting it.
    #[arg(long, conflicts_with = "stream")]
    keep_input: bool,
    /// Generate the dataset into a pipe that ingest reads, instead of a file (for sizes whose
    /// file and store would not fit on the disk together; the generator then shares the CPU
    /// with ingest: about 2 µs an observation, a sixth of what ingest itself takes).
    #[arg(long)]
    stream: bool,
    /// Timed runs of each fast operation.
    #[arg(long, value_name = "R", default_value_t = 200)]
    runs: u32,
    /// Timed runs of facets and exposure (at most --runs).
    #[arg(long, value_name = "R", default_value_t = 30)]
    heavy_runs: u32,
    /// Also write the figures as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// After the queries, apply N observations of another synthetic world (seed + 1 + the
    /// store's generation) through the live index as a server does, time the delta refresh that makes them
    /// searchable, measure every operation again over the base and that delta, then time a
    /// full rebuild of the same store for comparison (it saves the index file, so the store
    /// in DIR keeps the batch and a later --reuse loads it as one base) [default: none].
    #[arg(long, value_name = "N")]
    delta_batch: Option<u64>,
    /// Also measure the ClickHouse scan index at URL
    /// (clickhouse://USER@HOST:PORT/DATABASE?cluster=NAME, as for ingest --index; user, port
    /// and cluster optional): the dataset is loaded into it too (its database must be empty,
    /// unless --reuse and DIR records loading this dataset into it), and every operation runs
    /// on the embedded index, on the ClickHouse engine and as hand-written SQL on the same
    /// server.
    #[arg(long, value_name = "URL", conflicts_with = "delta_batch")]
    index: Option<String>,
    /// Timed runs of each fast operation on ClickHouse, engine and hand-written SQL each.
    #[arg(long, value_name = "R", default_value_t = 20)]
    clickhouse_runs: u32,
    /// Timed runs of facets and exposure on ClickHouse, engine and hand-written SQL each.
    #[arg(long, value_name = "R", default_value_t = 3)]
    clickhouse_heavy_runs: u32,
    /// Measure only these operations (names as in the report, comma-separated), to
    /// re-measure a few on a large dataset [default: every operation].
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    operations: Vec<String>,
}

/// What a dataset was built from; `DIR/dataset.txt`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Dataset {
    pub(super) hosts: u64,
    pub(super) seed: u64,
    pub(super) as_of: Timestamp,
}

impl Dataset {
    pub(super) fn to_text(self) -> String {
        format!(
            "# written by periscope bench index once DIR/data held the whole dataset\n\
             hosts={}\nseed={}\nas_of={}\n",
            self.hosts, self.seed, self.as_of
        )
    }

    pub(super) fn from_text(text: &str) -> Option<Self> {
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::trim)
        };
        Some(Self {
            hosts: value("hosts")?.parse().ok()?,
            seed: value("seed")?.parse().ok()?,
            as_of: Timestamp::parse(value("as_of")?).ok()?,
        })
    }
}

/// How the dataset stage went.
#[derive(Debug)]
struct Built {
    records: u64,
    input_bytes: u64,
    synth_seconds: f64,
    observations: u64,
    rejected: u64,
    ingest_seconds: f64,
    input: InputFate,
}

/// What became of the generated observations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputFate {
    /// Written to DIR/observations.jsonl, deleted after ingest.
    Deleted,
    /// Written to DIR/observations.jsonl and kept (`--keep-input`).
    Kept,
    /// Generated into a pipe while ingest read it (`--stream`).
    Streamed,
}

impl InputFate {
    fn describe(self) -> &'static str {
        match self {
            Self::Deleted => "input deleted after ingest",
            Self::Kept => "input kept",
            Self::Streamed => "streamed into ingest through a pipe, concurrently",
        }
    }
}

/// A target of the embedded engine at 10 million hosts.
#[derive(Debug, Clone, Copy)]
enum Target {
    /// Latency p50 at most this many milliseconds.
    P50Ms(f64),
    /// At least this many observations a second.
    ObsPerSecond(f64),
    /// At most this many seconds.
    Seconds(f64),
    /// At most this many bytes.
    Bytes(u64),
}

impl Target {
    fn text(self) -> String {
        match self {
            Self::P50Ms(ms) => format!("≤ {ms} ms"),
            Self::ObsPerSecond(n) => format!("≥ {} obs/s", group(n as u64)),
            Self::Seconds(s) => format!("≤ {s} s"),
            Self::Bytes(b) => format!("≤ {} GB", b as f64 / 1e9),
        }
    }

    fn met(self, value: f64) -> bool {
        match self {
            Self::P50Ms(limit) | Self::Seconds(limit) => value <= limit,
            Self::ObsPerSecond(limit) => value >= limit,
            Self::Bytes(limit) => value <= limit as f64,
        }
    }

    fn verdict(self, value: f64) -> &'static str {
        if self.met(value) { "ok" } else { "MISS" }
    }
}

/// Ingest rate target (issue 17).
const INGEST_TARGET: Target = Target::ObsPerSecond(400_000.0);
/// Start-to-serving target (issue 17).
const SERVING_TARGET: Target = Target::Seconds(3.0);
/// Resident memory target of a serving process (issue 17).
const MEMORY_TARGET: Target = Target::Bytes(1_500_000_000);

/// One call to the index.
#[derive(Debug)]
pub(super) enum Call {
    /// The first page of a search.
    Search(Query),
    /// A count.
    Count(Query),
    /// The six facet groups.
    Facets(FilterQuery),
    /// Exposure at one resolution.
    Exposure(Query, Resolution),
    /// One page of a host's services.
    Detail(IpAddr),
}

/// One value of an operation: its text, the call, and how many hosts it matches.
#[derive(Debug)]
pub(super) struct Case {
    pub(super) text: String,
    pub(super) call: Call,
    matched: u64,
}

/// One measured operation.
#[derive(Debug)]
pub(super) struct Op {
    pub(super) name: &'static str,
    target: Option<Target>,
    runs: u32,
    /// Facets and exposure: `--heavy-runs` (and `--clickhouse-heavy-runs`).
    pub(super) heavy: bool,
    pub(super) cases: Vec<Case>,
}

/// Latencies of one operation's timed calls.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Times {
    pub(super) runs: u32,
    pub(super) p50: Duration,
    pub(super) p99: Duration,
    pub(super) min: Duration,
    pub(super) max: Duration,
}

impl Times {
    /// The figures of `times`.
    pub(super) fn of(mut times: Vec<Duration>) -> Self {
        times.sort();
        Self {
            runs: u32::try_from(times.len()).unwrap_or(u32::MAX),
            p50: percentile(&times, 0.50),
            p99: percentile(&times, 0.99),
            min: times.first().copied().unwrap_or_default(),
            max: times.last().copied().unwrap_or_default(),
        }
    }

    pub(super) fn to_json(self) -> Value {
        json!({
            "runs": self.runs,
            "p50_ms": ms(self.p50),
            "p99_ms": ms(self.p99),
            "min_ms": ms(self.min),
            "max_ms": ms(self.max),
        })
    }
}

/// The figures of one operation.
#[derive(Debug)]
struct OpResult {
    name: &'static str,
    example: String,
    values: usize,
    runs: u32,
    p50: Duration,
    p99: Duration,
    min: Duration,
    max: Duration,
    matched: (u64, u64, u64),
    too_broad: u32,
    target: Option<Target>,
}

impl OpResult {
    fn times(&self) -> Times {
        Times {
            runs: self.runs,
            p50: self.p50,
            p99: self.p99,
            min: self.min,
            max: self.max,
        }
    }
}

/// Runs `periscope bench index`.
pub(crate) fn run(args: &IndexArgs) -> Result<ExitCode> {
    if args.runs == 0 || args.heavy_runs == 0 {
        bail!("--runs and --heavy-runs must be at least 1");
    }
    if args.clickhouse_runs == 0 || args.clickhouse_heavy_runs == 0 {
        bail!("--clickhouse-runs and --clickhouse-heavy-runs must be at least 1");
    }
    let dir = work_dir(args)?;
    let data = dir.join(DATA_DIR);
    let reused = args.reuse && !is_empty_dir(&dir)?;
    let dataset = if reused {
        reused_dataset(&dir, args)?
    } else {
        Dataset {
            hosts: args.hosts.unwrap_or(DEFAULT_HOSTS),
            seed: args.seed.unwrap_or(DEFAULT_SEED),
            as_of: args.as_of.unwrap_or_else(|| now().start_of_day()),
        }
    };
    // ClickHouse is checked before the (long) embedded ingest, so a refusal comes first.
    let server = args.index.as_deref().map(clickhouse::open).transpose()?;
    let must_load = match &server {
        Some(server) => clickhouse::check_holds(server, &dir, dataset, args.reuse)?,
        None => false,
    };
    let fate = if args.stream {
        InputFate::Streamed
    } else if args.keep_input {
        InputFate::Kept
    } else {
        InputFate::Deleted
    };
    // The input file stays until ClickHouse has read it too.
    let delete_after_load = must_load && fate == InputFate::Deleted;
    let built = if reused {
        None
    } else {
        let kept = if delete_after_load {
            InputFate::Kept
        } else {
            fate
        };
        let mut built = build_dataset(&dir, &data, dataset, kept)?;
        built.input = fate;
        Some(built)
    };
    let load = match &server {
        Some(server) if must_load => {
            let input = dir.join(INPUT_FILE);
            let from_file = input.is_file().then_some(input.as_path());
            let load = clickhouse::load(server, &dir, dataset, from_file)?;
            if delete_after_load && !reused {
                fs::remove_file(&input)
                    .with_context(|| format!("cannot delete the input {}", input.display()))?;
            }
            Some(load)
        }
        _ => None,
    };
    let clickhouse_disk = server.as_ref().map(clickhouse::disk_bytes).transpose()?;
    // Each start is measured in a process of its own, as a server starts: the first start
    // after an ingest builds the index and saves its file, a restart loads that file.
    let mut serving = start_process(&data, dataset.as_of)?;
    let mut first_start = None;
    if serving.built.is_some() {
        first_start = Some(serving);
        serving = start_process(&data, dataset.as_of)?;
    }
    if let Some(why) = &serving.built {
        bail!("the index file just saved was not loaded on restart: {why}");
    }
    // This process loads the same file to measure the operations.
    let (live, opened) = open_index(&data, dataset.as_of)?;
    if !matches!(opened, Opened::Loaded) {
        bail!("the index file just loaded by a new process was not loaded here: {opened:?}");
    }
    let index = live.current();
    let disk_bytes = tree_bytes(&data)?;
    let stats = index.stats();

    let sampling = Instant::now();
    let samples = live.with_store(|store| sample_hosts(store, SAMPLED_HOSTS))?;
    let sampling_seconds = sampling.elapsed().as_secs_f64();
    let (ops, third) = plan(&index, &samples, dataset.as_of, args)?;
    let ops = chosen(ops, &args.operations)?;
    eprintln!(
        "bench index: measuring {} operations on {} hosts…",
        ops.len(),
        group(stats.hosts)
    );
    let results = measure(&index, &ops, dataset.as_of)?;
    let rss_after_operations = status_kib("VmRSS");
    drop(index);
    let clickhouse_run = match (server, clickhouse_disk) {
        (Some(server), Some(disk_bytes)) => {
            eprintln!("bench index: the same operations on ClickHouse, engine and by hand…");
            let results = clickhouse::measure(
                &server,
                &ops,
                dataset.as_of,
                args.clickhouse_runs,
                args.clickhouse_heavy_runs,
            )?;
            Some(clickhouse::ChRun {
                location: server.location().clone(),
                load,
                disk_bytes,
                results,
            })
        }
        _ => None,
    };
    let delta = match args.delta_batch {
        Some(n) => Some(delta_refresh(&live, dataset, n, &ops)?),
        None => None,
    };

    let setup = Setup {
        dir: &dir,
        dataset,
        built: built.as_ref(),
        first_start,
        serving,
        index_hosts: stats.hosts,
        index_services: stats.services,
        index_bytes: stats.index_bytes,
        rss_after_operations_kib: rss_after_operations,
        disk_bytes,
        samples: samples.len(),
        sampling_seconds,
        third,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    write_report(&mut out, &setup, &results)?;
    if let Some(delta) = &delta {
        write_delta_report(&mut out, delta)?;
    }
    if let Some(run) = &clickhouse_run {
        writeln!(out)?;
        clickhouse::write_setup(&mut out, run)?;
        let names: Vec<&str> = results.iter().map(|r| r.name).collect();
        let embedded: Vec<Times> = results.iter().map(OpResult::times).collect();
        clickhouse::write_table(&mut out, &names, &embedded, run)?;
    }
    out.flush()?;
    if let Some(path) = &args.json {
        let mut report = to_json(&setup, &results);
        report["delta_refresh"] = delta.as_ref().map_or(Value::Null, delta_json);
        if let Some(run) = &clickhouse_run {
            report["clickhouse"] = clickhouse::to_json(run);
            if let Some(ops) = report["operations"].as_array_mut() {
                for ((op, r), ch) in ops.iter_mut().zip(&results).zip(&run.results) {
                    let (engine, hand, ratio) = clickhouse::operation_json(ch);
                    op["embedded"] = r.times().to_json();
                    op["clickhouse"] = engine;
                    op["by_hand"] = hand;
                    op["ratio"] = ratio;
                }
            }
        }
        let text = serde_json::to_string_pretty(&report).context("encoding the JSON report")?;
        fs::write(path, text + "\n")
            .with_context(|| format!("cannot write the JSON report {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Arguments of the hidden `periscope bench open`.
#[derive(Debug, clap::Args)]
pub(crate) struct OpenArgs {
    /// The data directory (holding `scan.store`).
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// The instant the index is built current at.
    #[arg(long, value_name = "DATE", value_parser = parse_as_of)]
    as_of: Timestamp,
}

/// How long a started process rests before it answers its first question and its steady
/// `VmRSS` is read. The allocator (mimalloc v2) returns pages freed more than its purge
/// delay (10 ms; 100 ms for whole arena blocks) ago, but only when a thread next allocates
/// or frees through its slow path, or ends: an idle thread keeps what it freed. So the
/// steady figure is taken after one question ([`FIRST_QUESTION`]), as a server holds once it
/// serves.
const SETTLE: Duration = Duration::from_secs(2);

/// The question a started process answers before its steady `VmRSS` is read: the facets of
/// a broad query, as the search page asks with every search.
const FIRST_QUESTION: &str = "port:443";

/// What one start of a process measured: `periscope bench open` prints it as JSON, `bench
/// index` reads it back.
#[derive(Debug, Clone, PartialEq)]
struct Start {
    /// Opening the store and building or loading the index.
    seconds: f64,
    /// Why the index file was not used, when the start built the index; `None` when it
    /// loaded the file.
    built: Option<String>,
    /// `VmRSS` right after opening.
    opened_kib: Option<u64>,
    /// `VmRSS` after [`SETTLE`] and the first question: what the process keeps once it serves.
    steady_kib: Option<u64>,
    /// `VmHWM`: the peak of the whole start.
    peak_kib: Option<u64>,
}

impl Start {
    fn to_json(&self) -> Value {
        json!({
            "seconds": self.seconds,
            "built": self.built,
            "vm_rss_opened_kib": self.opened_kib,
            "vm_rss_steady_kib": self.steady_kib,
            "vm_hwm_kib": self.peak_kib,
        })
    }

    fn from_json(value: &Value) -> Option<Self> {
        // Every key must be there; `null` is a figure the child could not read.
        let kib = |key: &str| match value.get(key)? {
            Value::Null => Some(None),
            v => v.as_u64().map(Some),
        };
        let built = match value.get("built")? {
            Value::Null => None,
            v => Some(v.as_str()?.to_string()),
        };
        Some(Self {
            seconds: value["seconds"].as_f64()?,
            built,
            opened_kib: kib("vm_rss_opened_kib")?,
            steady_kib: kib("vm_rss_steady_kib")?,
            peak_kib: kib("vm_hwm_kib")?,
        })
    }

    /// The figures as the report's JSON has them (bytes, not KiB).
    fn report_json(&self) -> Value {
        let bytes = |kib: Option<u64>| kib.map(|k| k * 1024);
        json!({
            "seconds": self.seconds,
            "built_because": self.built,
            "vm_rss_opened_bytes": bytes(self.opened_kib),
            "vm_rss_steady_bytes": bytes(self.steady_kib),
            "vm_hwm_bytes": bytes(self.peak_kib),
        })
    }

    /// `VmRSS 473.1 MiB steady (480.0 MiB when opened), peak VmHWM 500.2 MiB`.
    fn memory_text(&self) -> String {
        let or_unknown = |kib: Option<u64>| kib.map_or_else(|| "unknown".into(), mib);
        format!(
            "VmRSS {} steady ({} when opened), peak VmHWM {}",
            or_unknown(self.steady_kib),
            or_unknown(self.opened_kib),
            or_unknown(self.peak_kib)
        )
    }
}

/// Runs `periscope bench open`: opens the index of `--data` as `serve` does and prints the
/// [`Start`] as one JSON line.
pub(crate) fn open(args: &OpenArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let (live, opened) = open_index(&args.data, args.as_of)?;
    let seconds = started.elapsed().as_secs_f64();
    let built = match opened {
        Opened::Loaded => None,
        Opened::Built { why, saved } => {
            saved.map_err(|e| anyhow::anyhow!("cannot save the index file: {e}"))?;
            Some(why.to_string())
        }
    };
    let opened_kib = status_kib("VmRSS");
    std::thread::sleep(SETTLE);
    let first = query(FIRST_QUESTION)?;
    let first = first
        .as_filter()
        .context("the first question is a filter query")?;
    black_box(live.current().facets(first, args.as_of)?);
    let start = Start {
        seconds,
        built,
        opened_kib,
        steady_kib: status_kib("VmRSS"),
        peak_kib: status_kib("VmHWM"),
    };
    println!("{}", start.to_json());
    drop(live);
    Ok(ExitCode::SUCCESS)
}

/// Starts `periscope bench open` on `data` as a child process and reads what it measured.
fn start_process(data: &Path, as_of: Timestamp) -> Result<Start> {
    child_report(
        "opening the index",
        |command| {
            command
                .args(["bench", "open", "--data"])
                .arg(data)
                .args(["--as-of", &as_of.to_string()]);
        },
        Start::from_json,
    )
}

/// Runs this program again as a child process with the arguments `args` gives (its standard
/// error passed through) and reads the one JSON report it prints on standard output with
/// `read`; `what` says what the child does, for the errors.
fn child_report<T>(
    what: &str,
    args: impl FnOnce(&mut std::process::Command),
    read: impl FnOnce(&Value) -> Option<T>,
) -> Result<T> {
    let exe = std::env::current_exe().context("cannot find this program to start it again")?;
    let mut command = std::process::Command::new(exe);
    args(&mut command);
    let out = command
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start a process {what}"))?;
    if !out.status.success() {
        bail!("the process {what} failed ({})", out.status);
    }
    let value: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("the process {what} printed no JSON"))?;
    read(&value)
        .with_context(|| format!("the process {what} printed an unexpected report: {value}"))
}

/// Opens the scan store in `data` as a server does — a [`LiveIndex`], loading the index file
/// when it matches the store, otherwise building the index (current at `now`) and saving it:
/// everything between a server starting and serving its first search. The one place that
/// knows how the index is opened.
fn open_index(data: &Path, now: Timestamp) -> Result<(LiveIndex, Opened)> {
    let path = data.join(STORE_FILE);
    LiveIndex::open(&path, IndexConfig::default(), now)
        .with_context(|| format!("opening the index of {}", path.display()))
}

/// The work directory, created when missing; refuses a non-empty one without `--reuse`.
fn work_dir(args: &IndexArgs) -> Result<PathBuf> {
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!(
            "periscope-bench-index-{}-{}",
            now().unix(),
            std::process::id()
        )),
    };
    if dir.exists() {
        if !dir.is_dir() {
            bail!("--dir {} is not a directory", dir.display());
        }
        if !args.reuse && !is_empty_dir(&dir)? {
            bail!(
                "the work directory {} is not empty: pass --reuse to measure the store an \
                 earlier run left there, or choose a new --dir",
                dir.display()
            );
        }
    }
    fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the work directory {}", dir.display()))?;
    Ok(dir)
}

fn is_empty_dir(dir: &Path) -> Result<bool> {
    if !dir.exists() {
        return Ok(true);
    }
    let mut entries = fs::read_dir(dir)
        .with_context(|| format!("cannot read the directory {}", dir.display()))?;
    Ok(entries.next().is_none())
}

/// The dataset an earlier run left in `dir`; arguments given must agree with it.
fn reused_dataset(dir: &Path, args: &IndexArgs) -> Result<Dataset> {
    let path = dir.join(DATASET_FILE);
    let store = dir.join(DATA_DIR).join(STORE_FILE);
    if !path.is_file() || !store.is_dir() {
        bail!(
            "{} holds no complete benchmark dataset ({} or {} is missing; a run that stopped \
             before its ingest finished leaves none): choose a new --dir",
            dir.display(),
            path.display(),
            store.display()
        );
    }
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let Some(dataset) = Dataset::from_text(&text) else {
        bail!("{} is not a dataset description", path.display());
    };
    let differs = |what: &str, given: String, found: String| {
        anyhow::anyhow!(
            "--reuse: {} holds a dataset with {what} {found}, not {given}",
            dir.display()
        )
    };
    if let Some(hosts) = args.hosts.filter(|h| *h != dataset.hosts) {
        return Err(differs("--hosts", group(hosts), group(dataset.hosts)));
    }
    if let Some(seed) = args.seed.filter(|s| *s != dataset.seed) {
        return Err(differs(
            "--seed",
            seed.to_string(),
            dataset.seed.to_string(),
        ));
    }
    if let Some(as_of) = args.as_of.filter(|t| *t != dataset.as_of) {
        return Err(differs(
            "--as-of",
            as_of.to_string(),
            dataset.as_of.to_string(),
        ));
    }
    Ok(dataset)
}

/// Writes the dataset, ingests it into `data`, deletes the input unless `keep_input`, and
/// records the dataset in `dir`.
fn build_dataset(dir: &Path, data: &Path, dataset: Dataset, fate: InputFate) -> Result<Built> {
    let cfg = SynthConfig {
        hosts: dataset.hosts,
        seed: dataset.seed,
        as_of: dataset.as_of,
    };
    let (records, input_bytes, synth_seconds, ingested) = if fate == InputFate::Streamed {
        eprintln!(
            "bench index: generating {} hosts into ingest (into {})…",
            group(cfg.hosts),
            data.display()
        );
        let ingested = ingest_process(data, &IngestSource::Synthetic(dataset))?;
        let synth = ingested
            .synth
            .context("the ingest process reported no generator figures")?;
        (synth.records, synth.bytes, synth.seconds, ingested)
    } else {
        let input = dir.join(INPUT_FILE);
        eprintln!(
            "bench index: writing {} hosts to {}…",
            group(dataset.hosts),
            input.display()
        );
        let started = Instant::now();
        let mut file = fs::File::create(&input)
            .with_context(|| format!("cannot create {}", input.display()))?;
        let synth = write_dataset(&cfg, &mut file)
            .with_context(|| format!("writing the dataset to {}", input.display()))?;
        file.sync_all()
            .with_context(|| format!("writing the dataset to {}", input.display()))?;
        drop(file);
        let synth_seconds = started.elapsed().as_secs_f64();
        eprintln!("bench index: ingesting into {}…", data.display());
        let ingested = ingest_process(data, &IngestSource::File(input.clone()))?;
        if fate == InputFate::Deleted {
            fs::remove_file(&input)
                .with_context(|| format!("cannot delete the input {}", input.display()))?;
        }
        (synth.records, synth.bytes, synth_seconds, ingested)
    };
    let path = dir.join(DATASET_FILE);
    fs::write(&path, dataset.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Built {
        records,
        input_bytes,
        synth_seconds,
        observations: ingested.observations,
        rejected: ingested.rejected,
        ingest_seconds: ingested.seconds,
        input: fate,
    })
}

/// What the hidden `periscope bench ingest` ingests.
#[derive(Debug)]
enum IngestSource {
    /// An observation file, as `periscope ingest FILE`.
    File(PathBuf),
    /// The synthetic dataset generated on a thread of the ingesting process into a pipe
    /// ([`ingest_synthetic`]).
    Synthetic(Dataset),
}

/// Arguments of the hidden `periscope bench ingest`.
#[derive(Debug, clap::Args)]
pub(crate) struct IngestArgs {
    /// The data directory to ingest into.
    #[arg(long, value_name = "DIR")]
    data: PathBuf,
    /// The observation file to ingest.
    #[arg(long, value_name = "FILE", required_unless_present = "hosts")]
    input: Option<PathBuf>,
    /// Instead of --input, generate this many synthetic hosts into a pipe that ingest reads.
    #[arg(long, value_name = "N", value_parser = parse_hosts, conflicts_with = "input", requires_all = ["seed", "as_of"])]
    hosts: Option<u64>,
    /// The generator's seed (with --hosts).
    #[arg(long, value_name = "S")]
    seed: Option<u64>,
    /// The instant the generated dataset describes (with --hosts).
    #[arg(long, value_name = "DATE", value_parser = parse_as_of)]
    as_of: Option<Timestamp>,
}

/// What one ingest process measured: `periscope bench ingest` prints it as JSON, `bench
/// index` reads it back.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Ingested {
    observations: u64,
    rejected: u64,
    /// From the first check of the input to the last acknowledged batch.
    seconds: f64,
    /// The generator's figures, when it generated the input.
    synth: Option<Generated>,
}

/// The generator's figures of a streamed ingest.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Generated {
    records: u64,
    bytes: u64,
    seconds: f64,
}

impl Ingested {
    fn to_json(self) -> Value {
        json!({
            "observations": self.observations,
            "rejected": self.rejected,
            "seconds": self.seconds,
            "synth": self.synth.map(|g| json!({
                "records": g.records,
                "bytes": g.bytes,
                "seconds": g.seconds,
            })),
        })
    }

    fn from_json(value: &Value) -> Option<Self> {
        let synth = match value.get("synth")? {
            Value::Null => None,
            g => Some(Generated {
                records: g.get("records")?.as_u64()?,
                bytes: g.get("bytes")?.as_u64()?,
                seconds: g.get("seconds")?.as_f64()?,
            }),
        };
        Some(Self {
            observations: value.get("observations")?.as_u64()?,
            rejected: value.get("rejected")?.as_u64()?,
            seconds: value.get("seconds")?.as_f64()?,
            synth,
        })
    }
}

/// `periscope bench ingest`: ingests as `periscope ingest` does (the same [`ingest_paths`],
/// batch size and report on standard error), in this process, and prints what it measured
/// as one JSON line. `bench index` runs it as a child process, so the rate is that of a
/// process doing nothing else, as a user's `periscope ingest` is.
pub(crate) fn ingest(args: &IngestArgs) -> Result<ExitCode> {
    let (report, synth) = match (&args.input, args.hosts, args.seed, args.as_of) {
        (Some(input), ..) => {
            let report = ingest_paths(
                &args.data,
                std::slice::from_ref(input),
                DEFAULT_BATCH,
                false,
            )?;
            (report, None)
        }
        (None, Some(hosts), Some(seed), Some(as_of)) => {
            let cfg = SynthConfig { hosts, seed, as_of };
            let (stats, seconds, report) = ingest_synthetic(&cfg, &args.data, DEFAULT_BATCH)?;
            let generated = Generated {
                records: stats.records,
                bytes: stats.bytes,
                seconds,
            };
            (report, Some(generated))
        }
        _ => bail!("bench ingest needs --input FILE, or --hosts, --seed and --as-of"),
    };
    report.write(&mut io::stderr().lock()).ok();
    let ingested = Ingested {
        observations: report.observations(),
        rejected: report.rejected(),
        seconds: report.seconds(),
        synth,
    };
    println!("{}", ingested.to_json());
    Ok(ExitCode::SUCCESS)
}

/// Runs `periscope bench ingest` of `source` into `data` as a child process and reads what
/// it measured; the child's report goes to this process's standard error.
fn ingest_process(data: &Path, source: &IngestSource) -> Result<Ingested> {
    child_report(
        "ingesting the dataset",
        |command| {
            command.args(["bench", "ingest", "--data"]).arg(data);
            match source {
                IngestSource::File(input) => {
                    command.arg("--input").arg(input);
                }
                IngestSource::Synthetic(dataset) => {
                    command
                        .args(["--hosts", &dataset.hosts.to_string()])
                        .args(["--seed", &dataset.seed.to_string()])
                        .args(["--as-of", &dataset.as_of.to_string()]);
                }
            }
        },
        Ingested::from_json,
    )
}

/// Bytes of the files under `path`.
fn tree_bytes(path: &Path) -> Result<u64> {
    let meta = fs::metadata(path)
        .with_context(|| format!("cannot read the size of {}", path.display()))?;
    if !meta.is_dir() {
        return Ok(meta.len());
    }
    let mut total = 0;
    for entry in fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))? {
        let entry = entry.with_context(|| format!("cannot read {}", path.display()))?;
        total += tree_bytes(&entry.path())?;
    }
    Ok(total)
}

/// About `want` host records spread evenly over the store (every k-th in host order).
fn sample_hosts(store: &DurableStore, want: u64) -> Result<Vec<HostRecord>> {
    let total = store.stats()?.hosts;
    let step = usize::try_from((total / want.max(1)).max(1)).unwrap_or(usize::MAX);
    let mut samples = Vec::new();
    for rec in store.hosts()?.step_by(step) {
        samples.push(rec?);
    }
    Ok(samples)
}

/// `n` values spread evenly over the distinct values of `values`, in their order.
fn pick<T: Clone + Eq + Hash>(values: impl IntoIterator<Item = T>, n: usize) -> Vec<T> {
    let mut seen = HashSet::new();
    let distinct: Vec<T> = values
        .into_iter()
        .filter(|v| seen.insert(v.clone()))
        .collect();
    if distinct.len() <= n {
        return distinct;
    }
    (0..n)
        .filter_map(|i| distinct.get(i * distinct.len() / n).cloned())
        .collect()
}

/// The query of `text`; the texts here are built to be valid.
fn query(text: &str) -> Result<Query> {
    periscope_query::parse(text).map_err(|e| anyhow::anyhow!("the benchmark query {text:?}: {e}"))
}

/// Hosts matching `query` (untimed; for the `matched` column).
fn matching(index: &LayeredIndex, query: &Query, now: Timestamp) -> Result<u64> {
    Ok(index.count(query, now)?.value)
}

/// Search cases of `texts`, skipping texts that do not parse (a stored value the query
/// language cannot spell, such as a phrase with a `"`).
fn searches(index: &LayeredIndex, texts: Vec<String>, now: Timestamp) -> Result<Vec<Case>> {
    let mut cases = Vec::new();
    for text in texts {
        let Ok(q) = periscope_query::parse(&text) else {
            continue;
        };
        cases.push(Case {
            matched: matching(index, &q, now)?,
            text: q.to_string(),
            call: Call::Search(q),
        });
    }
    Ok(cases)
}

/// The queries of [`BROAD_CANDIDATES`] that match about a third of the hosts (a quarter to
/// 42%), closest first, at most three; the closest one when none does. Also the fraction of
/// the closest.
fn third_of_hosts(index: &LayeredIndex, now: Timestamp) -> Result<(Vec<(Query, u64)>, f64)> {
    let total = index.stats().hosts.max(1) as f64;
    let mut scored = Vec::new();
    for text in BROAD_CANDIDATES {
        let q = query(text)?;
        let n = matching(index, &q, now)?;
        scored.push((q, n, (n as f64 / total - 1.0 / 3.0).abs()));
    }
    scored.sort_by(|a, b| a.2.total_cmp(&b.2));
    let closest = scored.first().map_or(0.0, |(_, n, _)| *n as f64 / total);
    let near: Vec<(Query, u64)> = scored
        .iter()
        .filter(|(_, n, _)| (0.25..=0.42).contains(&(*n as f64 / total)))
        .take(3)
        .map(|(q, n, _)| (q.clone(), *n))
        .collect();
    if near.is_empty() {
        let first = scored.into_iter().next().map(|(q, n, _)| (q, n));
        return Ok((first.into_iter().collect(), closest));
    }
    Ok((near, closest))
}

/// The operations and their values, drawn from `samples`; also the matched fraction of the
/// facet query.
fn plan(
    index: &LayeredIndex,
    samples: &[HostRecord],
    now: Timestamp,
    args: &IndexArgs,
) -> Result<(Vec<Op>, f64)> {
    let runs = args.runs;
    let heavy = args.heavy_runs.min(args.runs);
    let enrichment = |r: &HostRecord| r.enrichment.as_ref().map(|(e, _)| e.clone());
    let v4 = samples.iter().filter(|r| r.ip.is_ipv4());
    let v6 = samples.iter().filter(|r| r.ip.is_ipv6());

    let exact4 = pick(v4.clone().map(|r| r.ip.to_string()), VALUES_PER_OP);
    let exact6 = pick(v6.map(|r| r.ip.to_string()), VALUES_PER_OP);
    let cidrs = pick(
        v4.filter_map(|r| match r.ip {
            IpAddr::V4(ip) => {
                let [a, b, c, _] = ip.octets();
                Some(format!("cidr:{a}.{b}.{c}.0/24"))
            }
            IpAddr::V6(_) => None,
        }),
        VALUES_PER_OP,
    );
    let asns = pick(
        samples.iter().filter_map(|r| {
            let e = enrichment(r)?;
            let a = e.asn.research.or(e.asn.bgp).or(e.asn.network)?;
            Some(format!("asn:{}", a.asn))
        }),
        VALUES_PER_OP,
    );
    let domains = pick(
        samples
            .iter()
            .filter_map(|r| Some(format!("domain:{}", enrichment(r)?.domain?))),
        VALUES_PER_OP,
    );
    let three = pick(
        samples.iter().filter_map(|r| {
            let country = r.location.as_ref()?.0.country_code?;
            let s = r.services.values().next()?;
            Some(format!(
                "port:{} protocol:{} country:{country}",
                s.port, s.protocol
            ))
        }),
        VALUES_PER_OP,
    );
    let orgs = pick(
        samples.iter().filter_map(|r| {
            let e = enrichment(r)?;
            let name = e
                .provider
                .and_then(|p| p.organization)
                .or_else(|| e.asn.research.and_then(|a| a.organization))?;
            Some(format!("organization:\"{name}\""))
        }),
        VALUES_PER_OP,
    );
    let products = pick(
        samples.iter().flat_map(|r| {
            r.services
                .values()
                .filter_map(|s| Some(format!("product:\"{}\"", s.product.as_ref()?.title)))
        }),
        VALUES_PER_OP,
    );
    let broad: Vec<String> = BROAD.iter().map(|s| (*s).to_string()).collect();
    let several: Vec<&HostRecord> = samples
        .iter()
        .filter(|r| r.services.len() >= DETAIL_MIN_SERVICES)
        .collect();
    let detail_hosts = if several.is_empty() {
        pick(samples.iter().map(|r| r.ip), VALUES_PER_OP)
    } else {
        pick(several.iter().map(|r| r.ip), VALUES_PER_OP)
    };

    let mut counts = Vec::new();
    for text in &broad {
        let q = query(text)?;
        counts.push(Case {
            matched: matching(index, &q, now)?,
            text: q.to_string(),
            call: Call::Count(q),
        });
    }
    let mut three_counts = Vec::new();
    let mut three_facets = Vec::new();
    for text in THREE_SERVICE {
        let q = query(text)?;
        let matched = matching(index, &q, now)?;
        if let Some(filter) = q.as_filter() {
            three_facets.push(Case {
                matched,
                text: q.to_string(),
                call: Call::Facets(filter.clone()),
            });
        }
        three_counts.push(Case {
            matched,
            text: q.to_string(),
            call: Call::Count(q),
        });
    }
    let (thirds, fraction) = third_of_hosts(index, now)?;
    let facets = thirds
        .iter()
        .filter_map(|(q, n)| {
            Some(Case {
                text: q.to_string(),
                call: Call::Facets(q.as_filter()?.clone()),
                matched: *n,
            })
        })
        .collect();
    let exposure = |resolution: Resolution| -> Vec<Case> {
        thirds
            .iter()
            .map(|(q, n)| Case {
                text: format!("{q} ({})", resolution.as_str()),
                call: Call::Exposure(q.clone(), resolution),
                matched: *n,
            })
            .collect()
    };
    let details = detail_hosts
        .into_iter()
        .map(|ip| {
            let found = index.host_detail(ip, None, DETAIL_LIMIT, now)?.is_some();
            Ok(Case {
                text: format!("{ip} (limit {DETAIL_LIMIT})"),
                call: Call::Detail(ip),
                matched: u64::from(found),
            })
        })
        .collect::<Result<Vec<_>>>()?;

    let op = |name, target, is_heavy: bool, cases| Op {
        name,
        target,
        runs: if is_heavy { heavy } else { runs },
        heavy: is_heavy,
        cases,
    };
    let ms = |ms| Some(Target::P50Ms(ms));
    let ops = vec![
        op("exact-ipv4", ms(1.0), false, searches(index, exact4, now)?),
        op("exact-ipv6", ms(1.0), false, searches(index, exact6, now)?),
        op("cidr-24", ms(1.0), false, searches(index, cidrs, now)?),
        op("asn", ms(1.0), false, searches(index, asns, now)?),
        op("domain", None, false, searches(index, domains, now)?),
        op(
            "broad-first-page",
            ms(5.0),
            false,
            searches(index, broad, now)?,
        ),
        op(
            "three-clause",
            ms(20.0),
            false,
            searches(index, three, now)?,
        ),
        op("organization", None, false, searches(index, orgs, now)?),
        op("product", None, false, searches(index, products, now)?),
        op("count", ms(10.0), false, counts),
        op("count-three-service", None, false, three_counts),
        op("facets", ms(150.0), true, facets),
        op("facets-three-service", None, true, three_facets),
        op(
            "exposure-global",
            ms(150.0),
            true,
            exposure(Resolution::Global),
        ),
        op(
            "exposure-regional",
            ms(150.0),
            true,
            exposure(Resolution::Regional),
        ),
        op(
            "exposure-local",
            ms(150.0),
            true,
            exposure(Resolution::Local),
        ),
        op("host-detail", ms(1.0), false, details),
    ];
    Ok((ops, fraction))
}

/// The operations of `ops` named in `names` (all of them when none is), in the report's order;
/// a name that is no operation is an error listing the names there are.
fn chosen(ops: Vec<Op>, names: &[String]) -> Result<Vec<Op>> {
    if names.is_empty() {
        return Ok(ops);
    }
    if let Some(unknown) = names
        .iter()
        .find(|n| !ops.iter().any(|op| op.name == n.as_str()))
    {
        let known: Vec<&str> = ops.iter().map(|op| op.name).collect();
        bail!(
            "--operations: no operation is named {unknown:?}; the operations are {}",
            known.join(", ")
        );
    }
    Ok(ops
        .into_iter()
        .filter(|op| names.iter().any(|n| n == op.name))
        .collect())
}

/// Makes one call; true when a search was declined as too broad.
fn execute(index: &LayeredIndex, call: &Call, now: Timestamp) -> Result<bool> {
    match call {
        Call::Search(query) => {
            let outcome = index.search(&SearchRequest {
                query,
                after: None,
                limit: PAGE_LIMIT,
                resolved: &[],
                now,
            })?;
            let too_broad = matches!(outcome, SearchOutcome::TooBroad { .. });
            black_box(outcome);
            Ok(too_broad)
        }
        Call::Count(query) => {
            black_box(index.count(query, now)?);
            Ok(false)
        }
        Call::Facets(query) => {
            black_box(index.facets(query, now)?);
            Ok(false)
        }
        Call::Exposure(query, resolution) => {
            black_box(index.exposure(query, *resolution, now)?);
            Ok(false)
        }
        Call::Detail(ip) => {
            black_box(index.host_detail(*ip, None, DETAIL_LIMIT, now)?);
            Ok(false)
        }
    }
}

/// A warm-up pass over every value, then each operation's timed runs, one call at a time.
fn measure(index: &LayeredIndex, ops: &[Op], now: Timestamp) -> Result<Vec<OpResult>> {
    for op in ops {
        for case in &op.cases {
            execute(index, &case.call, now)?;
        }
    }
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        let mut times = Vec::with_capacity(op.runs as usize);
        let mut matched = Vec::with_capacity(op.runs as usize);
        let mut too_broad = 0;
        if !op.cases.is_empty() {
            for (_, case) in (0..op.runs).zip(op.cases.iter().cycle()) {
                let started = Instant::now();
                let declined = execute(index, &case.call, now)?;
                times.push(started.elapsed());
                too_broad += u32::from(declined);
                matched.push(case.matched);
            }
        }
        times.sort();
        matched.sort_unstable();
        let at = |p: f64| percentile(&times, p);
        results.push(OpResult {
            name: op.name,
            example: op
                .cases
                .first()
                .map_or_else(String::new, |c| c.text.clone()),
            values: op.cases.len(),
            runs: if op.cases.is_empty() { 0 } else { op.runs },
            p50: at(0.50),
            p99: at(0.99),
            min: times.first().copied().unwrap_or_default(),
            max: times.last().copied().unwrap_or_default(),
            matched: (
                matched.first().copied().unwrap_or(0),
                percentile(&matched, 0.5),
                matched.last().copied().unwrap_or(0),
            ),
            too_broad,
            target: op.target,
        });
    }
    Ok(results)
}

/// What `--delta-batch` measured.
#[derive(Debug)]
struct DeltaRun {
    observations: u64,
    hosts_written: u64,
    new_hosts: u64,
    apply_seconds: f64,
    /// The delta refresh: seconds, addresses in the delta, hosts of the view after it.
    refresh_seconds: f64,
    delta_addresses: usize,
    view_hosts: u64,
    /// The operations over the base and the delta.
    results: Vec<OpResult>,
    /// The full rebuild of the same store, for comparison (seconds, including the save).
    full_seconds: f64,
}

/// `n` observations of another synthetic world, as of the same instant: its seed follows
/// the dataset's by the store's generation, so a batch applied by an earlier run (which
/// advanced the generation) is not applied again.
fn delta_observations(dataset: Dataset, generation: u64, n: u64) -> Result<Vec<Observation>> {
    let cfg = SynthConfig {
        // About three observations per host.
        hosts: (n / 3).max(1),
        seed: dataset.seed.wrapping_add(1).wrapping_add(generation),
        as_of: dataset.as_of,
    };
    let mut text = Vec::new();
    write_dataset(&cfg, &mut text).context("generating the delta batch")?;
    let text = String::from_utf8(text).context("the generator wrote invalid UTF-8")?;
    let mut reader = ObservationReader::new(dataset.as_of);
    let mut out = Vec::new();
    for line in text.lines() {
        if out.len() as u64 >= n {
            break;
        }
        if let Some(obs) = reader
            .read_line(line)
            .map_err(|e| anyhow::anyhow!("a generated line does not read: {e}"))?
        {
            out.push(obs);
        }
    }
    Ok(out)
}

/// `--delta-batch`: a batch applied to the running index, the delta refresh timed, the
/// operations measured again over base and delta, and a full rebuild timed.
fn delta_refresh(live: &LiveIndex, dataset: Dataset, n: u64, ops: &[Op]) -> Result<DeltaRun> {
    let batch = delta_observations(dataset, live.current().generation(), n)?;
    eprintln!(
        "bench index: applying {} observations and refreshing the delta…",
        group(batch.len() as u64)
    );
    let before = live.current().stats().hosts;
    let started = Instant::now();
    let summary = live.apply_batch(&batch)?;
    let apply_seconds = started.elapsed().as_secs_f64();
    let base = Arc::clone(live.current().base());
    let started = Instant::now();
    if !live.refresh_delta(dataset.as_of)? {
        bail!("the delta batch wrote nothing, so there was no delta to refresh");
    }
    let refresh_seconds = started.elapsed().as_secs_f64();
    let view = live.current();
    if !Arc::ptr_eq(view.base(), &base) {
        bail!("the delta refresh replaced the base");
    }
    let view_hosts = view.stats().hosts;
    eprintln!("bench index: measuring the operations over the base and the delta…");
    let results = measure(&view, ops, dataset.as_of)?;
    let delta_addresses = view.delta_addresses();
    drop(view);
    eprintln!("bench index: a full rebuild of the same store, for comparison…");
    live.set_delta_limit(Some(0));
    let started = Instant::now();
    live.refresh(dataset.as_of)?;
    let full_seconds = started.elapsed().as_secs_f64();
    live.set_delta_limit(None);
    Ok(DeltaRun {
        observations: batch.len() as u64,
        hosts_written: summary.hosts_written,
        new_hosts: view_hosts.saturating_sub(before),
        apply_seconds,
        refresh_seconds,
        delta_addresses,
        view_hosts,
        results,
        full_seconds,
    })
}

/// The nearest-rank percentile `p` (0 to 1) of sorted `values`; the default when empty.
fn percentile<T: Copy + Default>(sorted: &[T], p: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Everything of the run but the operations.
#[derive(Debug)]
struct Setup<'a> {
    dir: &'a Path,
    dataset: Dataset,
    built: Option<&'a Built>,
    /// The first start, when it built the index.
    first_start: Option<Start>,
    /// Start to serving: a new process loading the index file.
    serving: Start,
    index_hosts: u64,
    index_services: u64,
    index_bytes: u64,
    /// This process's `VmRSS` after the operations (it loaded the same index file; it also
    /// ingested when the dataset was built in this run).
    rss_after_operations_kib: Option<u64>,
    disk_bytes: u64,
    samples: usize,
    sampling_seconds: f64,
    third: f64,
}

impl Setup<'_> {
    /// The resident memory a serving process holds: the restart's steady `VmRSS`, or this
    /// process's after the operations when it only loaded the index (`--reuse`) and holds
    /// more (pages of the index the operations touched).
    fn serving_kib(&self) -> Option<u64> {
        let after = self
            .rss_after_operations_kib
            .filter(|_| self.built.is_none());
        match (self.serving.steady_kib, after) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn write_report(out: &mut impl Write, s: &Setup<'_>, results: &[OpResult]) -> io::Result<()> {
    write_setup(out, s)?;
    write_table(out, results)?;
    for r in results.iter().filter(|r| r.too_broad > 0) {
        writeln!(
            out,
            "{}: {} of {} runs were declined as query_too_broad (more than {} hosts, no \
             service named), as the API would",
            r.name,
            r.too_broad,
            r.runs,
            group(IndexConfig::default().max_host_only_results)
        )?;
    }
    Ok(())
}

/// The `--delta-batch` lines and the operations over the base and the delta.
fn write_delta_report(out: &mut impl Write, d: &DeltaRun) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "delta batch:      {} observations applied in {:.2} s: {} host records written, {} \
         new hosts",
        group(d.observations),
        d.apply_seconds,
        group(d.hosts_written),
        group(d.new_hosts)
    )?;
    writeln!(
        out,
        "delta refresh:    {:.3} s (a delta of {} addresses over the base; {} hosts \
         searchable)",
        d.refresh_seconds,
        group(d.delta_addresses as u64),
        group(d.view_hosts)
    )?;
    writeln!(
        out,
        "full rebuild:     {:.2} s (the same store, every record, index file saved)",
        d.full_seconds
    )?;
    writeln!(out)?;
    writeln!(
        out,
        "the operations over the base and the delta (matched: as counted before the batch):"
    )?;
    write_table(out, &d.results)
}

fn delta_json(d: &DeltaRun) -> Value {
    json!({
        "observations": d.observations,
        "hosts_written": d.hosts_written,
        "new_hosts": d.new_hosts,
        "apply_seconds": d.apply_seconds,
        "refresh_seconds": d.refresh_seconds,
        "delta_addresses": d.delta_addresses,
        "view_hosts": d.view_hosts,
        "full_rebuild_seconds": d.full_seconds,
        "operations": operations_json(&d.results),
    })
}

fn write_setup(out: &mut impl Write, s: &Setup<'_>) -> io::Result<()> {
    let d = s.dataset;
    writeln!(
        out,
        "bench index: {} hosts, seed {}, as of {}{}",
        group(d.hosts),
        d.seed,
        d.as_of,
        if cfg!(debug_assertions) {
            " (debug build: build with --release for meaningful numbers)"
        } else {
            ""
        }
    )?;
    writeln!(out, "work directory:   {}", s.dir.display())?;
    match s.built {
        Some(b) => {
            writeln!(
                out,
                "synth:            {} records, {} in {:.1} s ({})",
                group(b.records),
                megabytes(b.input_bytes),
                b.synth_seconds,
                b.input.describe()
            )?;
            let rate = b.observations as f64 / b.ingest_seconds.max(1e-9);
            writeln!(
                out,
                "ingest:           {} observations ({} rejected lines) in {:.1} s: {} obs/s   \
                 target {} {}",
                group(b.observations),
                group(b.rejected),
                b.ingest_seconds,
                group(rate as u64),
                INGEST_TARGET.text(),
                INGEST_TARGET.verdict(rate)
            )?;
        }
        None => writeln!(
            out,
            "ingest:           skipped (--reuse: the store in DIR/data is measured as it is)"
        )?,
    }
    if let Some(first) = &s.first_start {
        writeln!(
            out,
            "first start:      {:.2} s (a new process: open the store, build the index and \
             save its file: {}); {}",
            first.seconds,
            first.built.as_deref().unwrap_or("built"),
            first.memory_text()
        )?;
    }
    writeln!(
        out,
        "start to serving: {:.2} s (a new process: open the store, load the index file: {} \
         hosts, {} services, postings {})   target {} {}",
        s.serving.seconds,
        group(s.index_hosts),
        group(s.index_services),
        megabytes(s.index_bytes),
        SERVING_TARGET.text(),
        SERVING_TARGET.verdict(s.serving.seconds)
    )?;
    let verdict = match s.serving_kib() {
        Some(kib) => format!(
            "   target {} {}",
            MEMORY_TARGET.text(),
            MEMORY_TARGET.verdict(kib as f64 * 1024.0)
        ),
        None => String::new(),
    };
    writeln!(
        out,
        "memory:           serving process {}; this process after the operations VmRSS {}{}{}",
        s.serving.memory_text(),
        s.rss_after_operations_kib
            .map_or_else(|| "unknown".into(), mib),
        match &s.built {
            Some(built) if built.input != InputFate::Streamed => " (it also wrote the dataset)",
            _ => "",
        },
        verdict
    )?;
    writeln!(
        out,
        "disk:             DIR/data {}",
        megabytes(s.disk_bytes)
    )?;
    writeln!(
        out,
        "values:           from {} host records sampled from the store in {:.1} s; facets \
         and exposure query matches {:.1}% of hosts",
        group(s.samples as u64),
        s.sampling_seconds,
        s.third * 100.0
    )?;
    writeln!(out)
}

fn write_table(out: &mut impl Write, results: &[OpResult]) -> io::Result<()> {
    writeln!(
        out,
        "{:<20} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>4}  example",
        "operation",
        "values",
        "runs",
        "p50 ms",
        "p99 ms",
        "min ms",
        "max ms",
        "matched",
        "target",
        "ok"
    )?;
    for r in results {
        let (target, ok) = match r.target {
            Some(t) if r.runs > 0 => (t.text(), t.verdict(ms(r.p50))),
            Some(t) => (t.text(), "-"),
            None => ("-".into(), "-"),
        };
        writeln!(
            out,
            "{:<20} {:>6} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>10} {:>9} {:>4}  {}",
            r.name,
            r.values,
            r.runs,
            ms(r.p50),
            ms(r.p99),
            ms(r.min),
            ms(r.max),
            group(r.matched.1),
            target,
            ok,
            if r.values == 0 {
                "(no value in the sample)"
            } else {
                &r.example
            }
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "matched: hosts the query matches (median over the runs; host-detail: 1 when the host \
         was found). Targets are for 10,000,000 hosts."
    )
}

fn to_json(s: &Setup<'_>, results: &[OpResult]) -> Value {
    let bytes = |kib: Option<u64>| kib.map(|k| k * 1024);
    let ingest = s.built.map(|b| {
        let rate = b.observations as f64 / b.ingest_seconds.max(1e-9);
        json!({
            "synth_records": b.records,
            "synth_bytes": b.input_bytes,
            "synth_seconds": b.synth_seconds,
            "synth_streamed": b.input == InputFate::Streamed,
            "observations": b.observations,
            "rejected_lines": b.rejected,
            "seconds": b.ingest_seconds,
            "observations_per_second": rate,
            "target": INGEST_TARGET.text(),
            "ok": INGEST_TARGET.met(rate),
        })
    });
    let serving = s.serving_kib().map(|k| k as f64 * 1024.0);
    json!({
        "debug_build": cfg!(debug_assertions),
        "dataset": {
            "hosts": s.dataset.hosts,
            "seed": s.dataset.seed,
            "as_of": s.dataset.as_of.to_string(),
            "dir": s.dir.display().to_string(),
            "reused": s.built.is_none(),
        },
        "ingest": ingest,
        "first_start_seconds": s.first_start.as_ref().map(|f| f.seconds),
        "first_start": s.first_start.as_ref().map(Start::report_json),
        "restart": s.serving.report_json(),
        "start_to_serving": {
            "seconds": s.serving.seconds,
            "index_hosts": s.index_hosts,
            "index_services": s.index_services,
            "index_bytes": s.index_bytes,
            "target": SERVING_TARGET.text(),
            "ok": SERVING_TARGET.met(s.serving.seconds),
        },
        "memory": {
            "serving_bytes": bytes(s.serving_kib()),
            "restart_vm_rss_steady_bytes": bytes(s.serving.steady_kib),
            "restart_vm_hwm_bytes": bytes(s.serving.peak_kib),
            "first_start_vm_rss_steady_bytes": bytes(s.first_start.as_ref().and_then(|f| f.steady_kib)),
            "first_start_vm_hwm_bytes": bytes(s.first_start.as_ref().and_then(|f| f.peak_kib)),
            "after_operations_vm_rss_bytes": bytes(s.rss_after_operations_kib),
            "target": MEMORY_TARGET.text(),
            "ok": serving.map(|r| MEMORY_TARGET.met(r)),
        },
        "disk_bytes": s.disk_bytes,
        "sampled_hosts": s.samples,
        "facet_query_fraction": s.third,
        "operations": operations_json(results),
    })
}

fn operations_json(results: &[OpResult]) -> Vec<Value> {
    results
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "example": r.example,
                "values": r.values,
                "runs": r.runs,
                "p50_ms": ms(r.p50),
                "p99_ms": ms(r.p99),
                "min_ms": ms(r.min),
                "max_ms": ms(r.max),
                "matched": { "min": r.matched.0, "median": r.matched.1, "max": r.matched.2 },
                "declined_too_broad": r.too_broad,
                "target": r.target.map(Target::text),
                "ok": r.target.filter(|_| r.runs > 0).map(|t| t.met(ms(r.p50))),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_reads_back_what_the_child_printed() {
        let built = Start {
            seconds: 1.25,
            built: Some("there is no index file".into()),
            opened_kib: Some(600),
            steady_kib: Some(500),
            peak_kib: Some(900),
        };
        assert_eq!(Start::from_json(&built.to_json()), Some(built.clone()));
        let unknown = Start {
            built: None,
            opened_kib: None,
            steady_kib: None,
            peak_kib: None,
            ..built
        };
        assert_eq!(Start::from_json(&unknown.to_json()), Some(unknown));
        // A report missing a figure or with one of the wrong type is not read as unknown.
        let mut value = built_json();
        value
            .as_object_mut()
            .expect("an object")
            .remove("vm_hwm_kib");
        assert_eq!(Start::from_json(&value), None);
        let mut value = built_json();
        value["vm_rss_steady_kib"] = json!("500");
        assert_eq!(Start::from_json(&value), None);
        let mut value = built_json();
        value["built"] = json!(true);
        assert_eq!(Start::from_json(&value), None);
    }

    #[test]
    fn an_ingest_reads_back_what_the_child_printed() {
        let streamed = Ingested {
            observations: 3_128_392,
            rejected: 2,
            seconds: 7.5,
            synth: Some(Generated {
                records: 3_128_394,
                bytes: 3_953_200_000,
                seconds: 6.25,
            }),
        };
        assert_eq!(Ingested::from_json(&streamed.to_json()), Some(streamed));
        let from_file = Ingested {
            synth: None,
            ..streamed
        };
        assert_eq!(Ingested::from_json(&from_file.to_json()), Some(from_file));
        // A report missing a figure, or with one of the wrong type, is not read.
        for broken in [
            json!({"observations": 1, "rejected": 0, "seconds": 1.0}),
            json!({"observations": "1", "rejected": 0, "seconds": 1.0, "synth": null}),
            json!({"observations": 1, "rejected": 0, "seconds": 1.0, "synth": {"records": 1}}),
        ] {
            assert_eq!(Ingested::from_json(&broken), None, "{broken}");
        }
    }

    fn built_json() -> Value {
        json!({
            "seconds": 2.0,
            "built": "stale",
            "vm_rss_opened_kib": 1,
            "vm_rss_steady_kib": 2,
            "vm_hwm_kib": 3,
        })
    }

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&[7u32], 0.99), 7);
        assert_eq!(percentile(&[1u32, 2, 3], 0.99), 3);
        assert_eq!(percentile::<u32>(&[], 0.5), 0);
    }

    #[test]
    fn picks_distinct_values_evenly() {
        assert_eq!(pick([1, 1, 2, 3, 2], 10), vec![1, 2, 3]);
        assert_eq!(pick(0..10, 5), vec![0, 2, 4, 6, 8]);
    }

    #[test]
    fn dataset_text_round_trips() {
        let as_of = Timestamp::parse("2026-01-01T00:00:00Z").expect("timestamp");
        let d = Dataset {
            hosts: 2000,
            seed: 3,
            as_of,
        };
        assert_eq!(Dataset::from_text(&d.to_text()), Some(d));
        assert_eq!(Dataset::from_text("hosts=1\n"), None);
    }

    #[test]
    fn targets() {
        assert!(Target::P50Ms(1.0).met(0.5));
        assert!(!Target::P50Ms(1.0).met(1.5));
        assert!(Target::ObsPerSecond(200_000.0).met(250_000.0));
        assert_eq!(MEMORY_TARGET.text(), "≤ 1.5 GB");
        assert!(MEMORY_TARGET.met(1.4e9) && !MEMORY_TARGET.met(1.6e9));
        assert_eq!(INGEST_TARGET.text(), "≥ 400,000 obs/s");
        assert_eq!(SERVING_TARGET.text(), "≤ 3 s");
    }

    #[test]
    fn operations_are_chosen_by_name_in_report_order() {
        let ops = || {
            ["count", "facets", "host-detail"].map(|name| Op {
                name,
                target: None,
                runs: 1,
                heavy: false,
                cases: Vec::new(),
            })
        };
        let names = |ops: Vec<Op>| ops.iter().map(|op| op.name).collect::<Vec<_>>();
        let all = chosen(ops().into(), &[]).unwrap();
        assert_eq!(names(all), ["count", "facets", "host-detail"]);
        let two = chosen(ops().into(), &["host-detail".into(), "count".into()]).unwrap();
        assert_eq!(names(two), ["count", "host-detail"]);
        let error = chosen(ops().into(), &["cont".into()])
            .unwrap_err()
            .to_string();
        assert!(error.contains("\"cont\""), "{error}");
        assert!(error.contains("count, facets, host-detail"), "{error}");
    }
}
