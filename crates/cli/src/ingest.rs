//! `periscope ingest`: reads observation files (JSON Lines, optionally gzip-compressed, `-` for
//! standard input) into the scan store `DIR/scan.store`, in batches that are each one durable
//! run of the store (see `periscope_index::durable`).
//!
//! The work is shared by threads so every core is busy: this one (the reader) cuts the input
//! into chunks of whole lines, a pool of parsing threads, one per core ([`parallel`]), parses
//! and validates them and gives them back in input order, and the reader fills batches from
//! them; a store thread owns the [`DurableStore`] and applies each batch with
//! [`DurableStore::apply_batch_drain`]. The store thread is the serial stage, so nothing else
//! runs on it. Reader and store are joined by a bounded channel holding one batch, so at most
//! three batches exist at once (one being filled, one waiting, one being applied), plus the
//! few chunks being parsed, and a slow disk slows reading down instead of filling memory.
//! Into the process's own store, with nothing to enrich, the parsing threads also merge each
//! run of consecutive lines of one address into the record the store keeps and encode it,
//! straight from each line's borrowed view, no observation of owned strings built
//! ([`periscope_index::durable::HostEncoder`]); the batch carries those bytes, the store merges
//! them with [`DurableStore::apply_encoded_drain`] (most are written as they came), and no
//! observation of owned strings travels to, or is freed on, the store thread. A batch takes
//! such a group whole (it closes early rather than split one).
//! Emptied batches go back to the reader to be refilled. Scanner output (the importers) is
//! read and converted on the reader thread.
//!
//! A batch is acknowledged once it is on disk, and a process killed afterwards keeps it: the
//! store acknowledges one behind ([`DurableStore::acknowledge_one_behind`]), its commit (the
//! syncs) going on while the next batch is applied, so a batch is acknowledged when the next
//! one's apply returns, or the store settled at the end. A killed run is completed by running
//! the same command again, since re-applying an observation changes nothing (the
//! current-observation rule of `docs/search-semantics.md`). Rejected lines do not stop the
//! run; they are counted and the first [`SHOWN_REJECTIONS`] are printed in the summary.
//! Progress goes to standard error: a progress bar on a terminal, a plain line every
//! [`PLAIN_INTERVAL`] otherwise.
//!
//! **Beside a running server:** the store is locked by the process that has it open. When a
//! `periscope serve` holds it, the batches go to that server over its ingest socket
//! ([`crate::ingest_socket`]) instead: the reader sends the lines it read as valid, the
//! server applies them in one durable transaction each and acknowledges, and its next index
//! refresh makes them searchable. The summary is the same, counted by the server.
//!
//! **Into ClickHouse:** with `--index clickhouse://…` (or `[index] url`), the store thread
//! writes each batch with [`ClickHouseIndex::insert`] instead, after [`crate::clickhouse::connect`]
//! checked that the database holds this build's schema version. The reader, its validation
//! and the rejection report are the same. A batch is acknowledged (counted in the summary)
//! when ClickHouse acknowledged the insert, synchronously on every shard; on an error the run
//! stops, naming the server, and says how many observations were acknowledged before it.
//! Running the same command again completes the ingest: a row written twice changes no
//! answer, since the current observation of a service or name is chosen by the
//! current-observation rule when reading, and an identical row is never counted twice.
//!
//! The pipeline is [`ingest_paths`], which returns the summary ([`IngestReport`]); the
//! subcommand prints it, and `bench index` ingests its dataset through it too.

use std::fs;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use periscope_clickhouse::{ClickHouseIndex, InsertSummary, Location};
use periscope_index::durable::{BatchSummary, DurableStore, EncodedHosts, StoreError, StoreStats};
use periscope_model::observation::{Observation, ScanStatus};
use periscope_synth::{SynthConfig, SynthStats, write_dataset};

use periscope_enrich::EnrichStats;
use periscope_import::{Format, Item, Tally};

use crate::config::{ConfigArgs, IngestFlags};
use crate::convert::{ImportArgs, Prepare, nothing_read, resolve_format, write_not_mapped};
use crate::ingest_socket::{FRAME_TARGET, ServerConnection};
use crate::lines::{Parsed, Rejection, open_input};
use crate::synth::{group, now};

mod parallel;

use parallel::{Chunks, Line, ParsedChunk, Parsers};

/// The store file inside the data directory.
pub(crate) const STORE_FILE: &str = "scan.store";
/// Observations per batch unless `--batch` says otherwise.
pub(crate) const DEFAULT_BATCH: usize = 20_000;
/// The largest `--batch`.
const MAX_BATCH: usize = 1_000_000;
/// Rejected lines printed in the summary; the rest are counted.
const SHOWN_REJECTIONS: usize = 20;
/// How often a plain progress line is printed when standard error is not a terminal.
const PLAIN_INTERVAL: Duration = Duration::from_secs(2);
/// How often the progress bar is updated on a terminal.
const BAR_INTERVAL: Duration = Duration::from_millis(200);

/// Arguments of `periscope ingest`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Each batch is one durable transaction: once acknowledged it survives a \
    crash, and running the same command again completes an interrupted ingest (re-applying \
    an observation changes nothing). Rejected lines are reported in the summary and skipped; \
    they do not fail the run. Scanner output (Nmap XML, Masscan, ZGrab2, Shodan, Censys) is \
    read through its importer, the format told from the content unless --format names it; \
    see docs/importers.md. Exit status: 0 when every input was read to its end, 2 when the \
    command could not run (an input or the store could not be read or written, an input of \
    which nothing could be read, a format that cannot be told). See docs/ingest.md."
)]
pub(crate) struct Args {
    /// Observation files (JSON Lines) or scanner output (Nmap XML, Masscan, ZGrab2, Shodan,
    /// Censys), optionally gzip-compressed; '-' reads standard input.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Observations per batch (one durable run of the store each), 1 to 1,000,000.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BATCH, value_parser = parse_batch)]
    batch: usize,
    /// Print a line on standard error as each batch is acknowledged (for diagnostics and
    /// tests).
    #[arg(long, hide = true)]
    log_batches: bool,
    #[command(flatten)]
    import: ImportArgs,
    #[command(flatten)]
    config: ConfigArgs<IngestFlags>,
}

/// Parses `--batch`: digits (`_` allowed), 1 to [`MAX_BATCH`].
fn parse_batch(s: &str) -> Result<usize, String> {
    let digits: String = s.chars().filter(|c| *c != '_').collect();
    let n: usize = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if !(1..=MAX_BATCH).contains(&n) {
        return Err(format!(
            "a batch holds 1 to {} observations",
            group(MAX_BATCH as u64)
        ));
    }
    Ok(n)
}

/// Counters shared by the reader, the store thread and the progress reporter.
#[derive(Debug, Default)]
struct Progress {
    /// Raw bytes read from the inputs (compressed bytes for gzip).
    bytes: Arc<AtomicU64>,
    /// Lines read.
    lines: AtomicU64,
    /// Observations in acknowledged batches.
    acknowledged: AtomicU64,
    /// Acknowledged batches.
    batches: AtomicU64,
    /// Set by the store thread when it stops on an error, so the reader stops too.
    failed: AtomicBool,
}

/// What the reader saw.
#[derive(Debug, Default)]
struct ReadTally {
    lines: u64,
    blank: u64,
    service: u64,
    failed_service: u64,
    domain: u64,
    rejected: u64,
    gzip_files: u64,
    /// The first [`SHOWN_REJECTIONS`], as `FILE:line N: field: reason`.
    shown: Vec<String>,
    /// Time spent waiting for the store thread to take a batch.
    waiting: Duration,
    /// Inputs read through an importer (scanner output).
    imported_files: u64,
    /// What the importers did not map.
    import: Tally,
    /// The first rejection of the input being read.
    first_of_input: Option<String>,
}

impl ReadTally {
    fn observations(&self) -> u64 {
        self.service + self.domain
    }

    fn count(&mut self, obs: &Observation) {
        match obs {
            Observation::Service(s) => {
                self.service += 1;
                self.failed_service += u64::from(s.status == ScanStatus::Failed);
            }
            Observation::Domain(_) => self.domain += 1,
        }
    }

    /// Adds an importer's tally once its input is done; its records count as lines.
    fn add_import(&mut self, import: &Tally) {
        self.lines += import.records;
        self.import.add(import);
    }

    /// Counts a rejected line or record, shown as `text`.
    fn reject(&mut self, text: String) {
        self.rejected += 1;
        if self.shown.len() < SHOWN_REJECTIONS {
            self.shown.push(text.clone());
        }
        self.first_of_input.get_or_insert(text);
    }
}

/// What the store thread did.
#[derive(Debug, Default)]
struct StoreTally {
    summary: BatchSummary,
    /// What ClickHouse was given (a ClickHouse target).
    written: InsertSummary,
    batches: u64,
    /// Time spent in `apply_batch` (or waiting for the server's acknowledgement).
    busy: Duration,
    /// The part of `busy` spent waiting for the store's merges of runs (the store in this
    /// process only).
    merge_waits: Option<Duration>,
    /// Lines the running server rejected (it checks again what the reader accepted).
    rejected: u64,
    /// The first of them, as `FILE:line N: field: reason`.
    shown: Vec<String>,
}

/// Where batches are applied.
#[derive(Debug)]
enum Target {
    /// The store, opened by this process.
    Store(DurableStore),
    /// A running server holding the store, through its ingest socket.
    Server(ServerConnection),
    /// A ClickHouse index.
    ClickHouse(Location, ClickHouseIndex),
}

impl Target {
    /// The store's figures (none for ClickHouse, where counting would scan the tables).
    fn stats(&mut self) -> Result<Option<StoreStats>> {
        match self {
            Self::Store(store) => store.stats().map(Some).map_err(store_error),
            Self::Server(server) => server.stats().map(Some),
            Self::ClickHouse(..) => Ok(None),
        }
    }
}

/// Where the batches went, for the summary.
#[derive(Debug)]
enum Where {
    /// The store file, and the running server's ingest socket when they went through it.
    Store(PathBuf, Option<PathBuf>),
    /// A ClickHouse index.
    ClickHouse(Location),
}

/// A batch on its way from the reader to the store thread.
#[derive(Debug, Default)]
struct Batch {
    /// The observations, parsed (for a store of this process).
    observations: Vec<Observation>,
    /// Service observations merged and encoded by the parsing threads (for a store of this
    /// process, when nothing enriches them).
    hosts: EncodedHosts,
    /// Their lines, each ending in `\n` (for a running server).
    lines: Vec<u8>,
    /// Where each line of `lines` came from: the input's index and its line number.
    origins: Vec<(usize, u64)>,
    /// Observations in the batch.
    len: usize,
}

impl Batch {
    fn with_capacity(observations: usize) -> Self {
        Self {
            observations: Vec::with_capacity(observations),
            ..Self::default()
        }
    }

    fn clear(&mut self) {
        self.observations.clear();
        self.hosts.clear();
        self.lines.clear();
        self.origins.clear();
        self.len = 0;
    }
}

/// The store thread's result: the target back (for its statistics) and what it did.
type StoreResult = Result<(Target, StoreTally)>;

/// Runs `periscope ingest`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let config = args.config.load()?;
    if config.index.url.is_some() && args.config.given("data") {
        return Err(anyhow!(
            "--data names the embedded store, but the index is ClickHouse (--index, [index] \
             url or PERISCOPE_INDEX_URL): give one of them"
        ));
    }
    // The enrichment files are opened and checked before any input is read.
    let prepare = Prepare::open(&config)?;
    let destination = match &config.index.url {
        Some(_) => {
            let (location, index) = crate::clickhouse::connect(&config)?;
            Destination::ClickHouse(location, Box::new(index))
        }
        None => Destination::Store(&config.data),
    };
    let report = ingest_to(
        destination,
        &args.files,
        args.batch,
        args.log_batches,
        &args.import,
        prepare,
    )?;
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    report.write(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The ingest pipeline: applies `files` (`-` is standard input) to the store in `data`
/// (created when missing) in batches of `batch` observations, with progress on standard
/// error, and returns the summary once every input has been read to its end. `log_batches`
/// prints a line as each batch is acknowledged.
pub(crate) fn ingest_paths(
    data: &Path,
    files: &[PathBuf],
    batch: usize,
    log_batches: bool,
) -> Result<IngestReport> {
    ingest_with(
        data,
        files,
        batch,
        log_batches,
        &ImportArgs::jsonl(),
        Prepare::default(),
    )
}

/// [`ingest_paths`] over inputs in the formats `import` names (or detects): scanner output
/// goes through the importers of `periscope-import`, observation lines through
/// [`crate::lines`]; every observation passes `prepare` (enrichment) on the reader thread.
pub(crate) fn ingest_with(
    data: &Path,
    files: &[PathBuf],
    batch: usize,
    log_batches: bool,
    import: &ImportArgs,
    prepare: Prepare,
) -> Result<IngestReport> {
    ingest_to(
        Destination::Store(data),
        files,
        batch,
        log_batches,
        import,
        prepare,
    )
}

/// Where `ingest` writes.
pub(crate) enum Destination<'a> {
    /// The embedded store in this data directory.
    Store(&'a Path),
    /// A ClickHouse index (its schema checked by [`crate::clickhouse::connect`]), boxed: the
    /// engine is far larger than a path.
    ClickHouse(Location, Box<ClickHouseIndex>),
}

/// [`ingest_with`] into `destination`.
pub(crate) fn ingest_to(
    destination: Destination<'_>,
    files: &[PathBuf],
    batch: usize,
    log_batches: bool,
    import: &ImportArgs,
    prepare: Prepare,
) -> Result<IngestReport> {
    let started = Instant::now();
    // The importers' options are checked before anything is read.
    let options = import.options()?;
    // Every file must be readable before the store is touched.
    let mut total_bytes = Some(0u64);
    for path in files {
        if path.as_os_str() == "-" {
            total_bytes = None;
            continue;
        }
        let file =
            fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let len = file
            .metadata()
            .with_context(|| format!("cannot read the size of {}", path.display()))?
            .len();
        total_bytes = total_bytes.map(|t| t + len);
    }
    let names: Arc<[String]> = files
        .iter()
        .map(|path| {
            if path.as_os_str() == "-" {
                "<stdin>".to_owned()
            } else {
                path.display().to_string()
            }
        })
        .collect();
    let data = match destination {
        Destination::Store(data) => data,
        Destination::ClickHouse(location, index) => {
            let target = Target::ClickHouse(location.clone(), *index);
            return run_pipeline(
                target,
                Where::ClickHouse(location),
                files,
                &names,
                total_bytes,
                batch,
                log_batches,
                import,
                &options,
                prepare,
                started,
            );
        }
    };
    let store_path = data.join(STORE_FILE);
    let (target, socket) = match ServerConnection::connect(data)? {
        Some(server) => {
            eprintln!(
                "ingest: a server holds {}; sending the batches to it through {}",
                store_path.display(),
                server.path().display()
            );
            let socket = server.path().to_owned();
            (Target::Server(server), Some(socket))
        }
        None => {
            // The same private directory `serve` creates: it will hold `state.db`'s secrets.
            periscope_state::files::create_private_dir(data)
                .with_context(|| format!("cannot create the data directory {}", data.display()))?;
            let store = DurableStore::open(&store_path).map_err(store_error)?;
            (Target::Store(store), None)
        }
    };
    run_pipeline(
        target,
        Where::Store(store_path, socket),
        files,
        &names,
        total_bytes,
        batch,
        log_batches,
        import,
        &options,
        prepare,
        started,
    )
}

/// Runs the reader and the store thread from opened `target` to the summary.
#[allow(clippy::too_many_arguments)]
fn run_pipeline(
    target: Target,
    destination: Where,
    files: &[PathBuf],
    names: &Arc<[String]>,
    total_bytes: Option<u64>,
    batch: usize,
    log_batches: bool,
    import: &ImportArgs,
    options: &periscope_import::Options,
    mut prepare: Prepare,
    started: Instant,
) -> Result<IngestReport> {
    let remote = matches!(target, Target::Server(_));
    // The parsing threads encode service observations into the store's records when the
    // store is this process's and nothing is added to them on the reader thread: groups of
    // at most one batch.
    let encode = (matches!(target, Target::Store(_)) && prepare.stats().is_none()).then_some(batch);
    let kept_in = match &destination {
        Where::ClickHouse(..) => "ClickHouse",
        Where::Store(..) => "the store",
    };
    let progress = Arc::new(Progress::default());
    let (batch_tx, batch_rx) = mpsc::sync_channel::<Batch>(1);
    let (spare_tx, spare_rx) = mpsc::sync_channel::<Batch>(2);
    let store_thread = {
        let progress = Arc::clone(&progress);
        let names = Arc::clone(names);
        let log = log_batches;
        thread::Builder::new()
            .name("ingest-store".into())
            .spawn(move || apply_batches(target, &batch_rx, &spare_tx, &progress, &names, log))
            .context("cannot start the store thread")?
    };
    let reporter = Reporter::start(Arc::clone(&progress), total_bytes, started)?;

    let read = read_inputs(
        files,
        names,
        batch,
        remote,
        encode,
        import,
        options,
        &mut prepare,
        &progress,
        &batch_tx,
        &spare_rx,
    );
    drop(batch_tx);
    let stored = store_thread
        .join()
        .map_err(|_| anyhow!("the store thread panicked"))?;
    reporter.stop();
    let stopped = || {
        format!(
            "ingest stopped after {} observations in {} acknowledged batches (they stay in \
             {kept_in}; running the same command again completes the ingest)",
            group(progress.acknowledged.load(Ordering::Relaxed)),
            group(progress.batches.load(Ordering::Relaxed)),
        )
    };
    // A store error comes first: the reader only stopped because of it.
    let (mut target, stored) = stored.with_context(stopped)?;
    let tally = read.with_context(stopped)?;
    let stats = target.stats()?;
    drop(target);
    Ok(IngestReport {
        files: files.len(),
        batch,
        read: tally,
        stored,
        stats,
        destination,
        enrich: prepare.stats().cloned(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Reads every input in order, sending full batches to the store thread and the last partial
/// one at the end: parsed observations, or with `remote` their lines (a batch is then also
/// sent once its lines reach [`FRAME_TARGET`] bytes). Stops early, without error, when the
/// store thread has failed (its error is the one reported). An input of which every line or
/// record was rejected stops the run with one error ([`nothing_read`]).
#[allow(clippy::too_many_arguments)]
fn read_inputs(
    files: &[PathBuf],
    names: &[String],
    batch_size: usize,
    remote: bool,
    encode: Option<usize>,
    import: &ImportArgs,
    options: &periscope_import::Options,
    prepare: &mut Prepare,
    progress: &Progress,
    batches: &SyncSender<Batch>,
    spares: &Receiver<Batch>,
) -> Result<ReadTally> {
    let now = now();
    thread::scope(|scope| {
        let mut parsers =
            Parsers::start(scope, now, encode).context("cannot start the parsing threads")?;
        read_all(
            &mut parsers,
            files,
            names,
            batch_size,
            remote,
            import,
            options,
            prepare,
            progress,
            batches,
            spares,
        )
    })
}

/// [`read_inputs`] with its parsing threads started.
#[allow(clippy::too_many_arguments)]
fn read_all(
    parsers: &mut Parsers<'_>,
    files: &[PathBuf],
    names: &[String],
    batch_size: usize,
    remote: bool,
    import: &ImportArgs,
    options: &periscope_import::Options,
    prepare: &mut Prepare,
    progress: &Progress,
    batches: &SyncSender<Batch>,
    spares: &Receiver<Batch>,
) -> Result<ReadTally> {
    let mut tally = ReadTally::default();
    let mut sink = Sink {
        batch: Batch::with_capacity(if remote { 0 } else { batch_size }),
        batch_size,
        remote,
        prepare,
        batches,
        spares,
    };
    for (index, (path, name)) in files.iter().zip(names).enumerate() {
        let mut input = open_input(path, Arc::clone(&progress.bytes))?;
        tally.gzip_files += u64::from(input.gzip);
        let format = resolve_format(import.format, &mut input.reader, name)?;
        let before = (tally.observations(), tally.rejected);
        if format == Format::Jsonl {
            let mut chunks = Chunks::new(input.reader);
            let mut eof = false;
            parsers.next_input();
            loop {
                // Keep every parsing thread busy; the chunks come back in input order.
                while !eof && parsers.in_flight() < parsers.capacity() {
                    let empty = parsers.empty_chunk();
                    match chunks.next_chunk(empty) {
                        Ok(Some(chunk)) => parsers.submit(chunk),
                        Ok(None) => eof = true,
                        Err(e) => {
                            let what = if input.gzip {
                                "reading (gzip)"
                            } else {
                                "reading"
                            };
                            return Err(e).with_context(|| format!("{what} {name}"));
                        }
                    }
                }
                let Some(parsed) = parsers.next() else { break };
                let ParsedChunk {
                    chunk,
                    mut lines,
                    hosts,
                } = parsed;
                // The group last added to the batch: a group goes in whole at its first line.
                let mut added = None;
                for (i, line) in lines.drain(..).enumerate() {
                    tally.lines += 1;
                    match line {
                        Line::Encoded { group, failed } => {
                            tally.service += 1;
                            tally.failed_service += u64::from(failed);
                            if added != Some(group) {
                                added = Some(group);
                                if !sink.push_group(&hosts, group, &mut tally.waiting) {
                                    return Ok(tally);
                                }
                            }
                        }
                        Line::Parsed(parsed) => match *parsed {
                            Parsed::Blank => tally.blank += 1,
                            Parsed::Rejected(r) => tally.reject(format!(
                                "{name}:line {}: {}: {}",
                                r.line, r.field, r.reason
                            )),
                            Parsed::Observation(obs) => {
                                tally.count(&obs);
                                let origin = (index, chunk.number(i));
                                if !sink.push(obs, chunk.content(i), origin, &mut tally.waiting) {
                                    return Ok(tally);
                                }
                            }
                        },
                    }
                }
                progress.lines.store(tally.lines, Ordering::Relaxed);
                parsers.recycle(chunk, lines, hosts);
                if progress.failed.load(Ordering::Relaxed) {
                    return Ok(tally);
                }
            }
        } else {
            tally.imported_files += 1;
            let mut importer = periscope_import::importer(format, input.reader, options)
                .with_context(|| format!("cannot read {name} as {format}"))?;
            loop {
                let item = importer.next_item().with_context(|| {
                    let gzip = if input.gzip { " (gzip)" } else { "" };
                    format!("reading {name}{gzip} as {format}")
                })?;
                let Some(item) = item else { break };
                // A scanner record counts as a line.
                progress
                    .lines
                    .store(tally.lines + importer.tally().records, Ordering::Relaxed);
                match item {
                    Item::Rejected(r) => tally.reject(format!("{name}:{r}")),
                    Item::Record(record) => {
                        for imported in record.observations {
                            tally.count(&imported.observation);
                            let origin = (index, record.line);
                            let line = imported.line.as_bytes();
                            if !sink.push(imported.observation, line, origin, &mut tally.waiting) {
                                tally.add_import(importer.tally());
                                return Ok(tally);
                            }
                        }
                    }
                }
                if progress.failed.load(Ordering::Relaxed) {
                    tally.add_import(importer.tally());
                    return Ok(tally);
                }
            }
            tally.add_import(importer.tally());
        }
        let read = tally.observations() - before.0;
        let rejected = tally.rejected - before.1;
        if read == 0 && rejected > 0 {
            let first = tally.first_of_input.take();
            return Err(nothing_read(
                name,
                format,
                import.format,
                rejected,
                first.as_deref(),
            ));
        }
        tally.first_of_input = None;
    }
    if sink.batch.len > 0 {
        send(batches, sink.batch, &mut tally.waiting);
    }
    Ok(tally)
}

/// Where the reader puts observations: the batch being filled, sent when full.
struct Sink<'a> {
    batch: Batch,
    batch_size: usize,
    remote: bool,
    prepare: &'a mut Prepare,
    batches: &'a SyncSender<Batch>,
    spares: &'a Receiver<Batch>,
}

impl Sink<'_> {
    /// Adds one observation (with its line, for a running server) read at `origin`; false when
    /// the store thread is gone.
    fn push(
        &mut self,
        mut obs: Observation,
        line: &[u8],
        origin: (usize, u64),
        waiting: &mut Duration,
    ) -> bool {
        let changed = self.prepare.apply(&mut obs);
        let batch = &mut self.batch;
        if self.remote {
            if changed {
                batch
                    .lines
                    .extend_from_slice(periscope_import::write_observation(&obs).as_bytes());
            } else {
                batch.lines.extend_from_slice(line);
            }
            batch.lines.push(b'\n');
            batch.origins.push(origin);
        } else {
            batch.observations.push(obs);
        }
        batch.len += 1;
        if batch.len >= self.batch_size || batch.lines.len() >= FRAME_TARGET {
            return self.send(waiting);
        }
        true
    }

    /// Adds group `group` of `hosts` (encoded service observations); false when the store
    /// thread is gone. A group is never split: a batch it would not fit in is sent first, so
    /// batches still hold at most `batch_size` observations (groups hold at most that many).
    fn push_group(&mut self, hosts: &EncodedHosts, group: usize, waiting: &mut Duration) -> bool {
        let size = hosts.group_observations(group) as usize;
        if self.batch.len > 0 && self.batch.len + size > self.batch_size && !self.send(waiting) {
            return false;
        }
        self.batch.hosts.push_group(hosts, group);
        self.batch.len += size;
        if self.batch.len >= self.batch_size {
            return self.send(waiting);
        }
        true
    }

    /// Sends the batch being filled and starts the next (an emptied one when there is one).
    fn send(&mut self, waiting: &mut Duration) -> bool {
        let (remote, size) = (self.remote, self.batch_size);
        let next = self
            .spares
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(if remote { 0 } else { size }));
        let full = std::mem::replace(&mut self.batch, next);
        send(self.batches, full, waiting)
    }
}

/// Hands a batch to the store thread, timing the wait; false when the store thread is gone.
fn send(batches: &SyncSender<Batch>, batch: Batch, waiting: &mut Duration) -> bool {
    let batch = match batches.try_send(batch) {
        Ok(()) => return true,
        Err(TrySendError::Disconnected(_)) => return false,
        Err(TrySendError::Full(batch)) => batch,
    };
    let since = Instant::now();
    let sent = batches.send(batch).is_ok();
    *waiting += since.elapsed();
    sent
}

/// The store thread: applies batches in order until the reader hangs up or a batch fails.
///
/// The process's own store acknowledges one behind
/// ([`DurableStore::acknowledge_one_behind`]): a batch's commit (its syncs) goes on while the
/// next batch is applied, so a batch is counted and logged as acknowledged once the next
/// one's apply returned, or the store settled at the end. A server or ClickHouse acknowledges
/// each batch as it is applied.
fn apply_batches(
    mut target: Target,
    batches: &Receiver<Batch>,
    spares: &SyncSender<Batch>,
    progress: &Progress,
    names: &[String],
    log: bool,
) -> StoreResult {
    let mut tally = StoreTally::default();
    let behind = match &mut target {
        Target::Store(store) => {
            store.acknowledge_one_behind();
            true
        }
        Target::Server(_) | Target::ClickHouse(..) => false,
    };
    // The batch applied whose commit is in flight: its size and what it did.
    let mut committing: Option<(usize, BatchSummary)> = None;
    while let Ok(mut batch) = batches.recv() {
        let since = Instant::now();
        let size = batch.len;
        let number = tally.batches + 1 + u64::from(committing.is_some());
        let done = match apply_one(&mut target, &mut batch, names, &mut tally) {
            Ok(done) => done,
            Err(e) => {
                progress.failed.store(true, Ordering::Relaxed);
                // The batch before it is acknowledged if its commit went through: not when
                // the error is that commit's failure, else once the commit settles.
                let previous_failed = e
                    .downcast_ref::<StoreError>()
                    .is_some_and(|e| matches!(e, StoreError::PreviousCommit { .. }));
                if let (Target::Store(store), Some((size, done))) = (&mut target, committing)
                    && !previous_failed
                    && store.settle().is_ok()
                {
                    acknowledge(&mut tally, progress, size, &done, log);
                }
                return Err(e.context(format!(
                    "applying batch {} ({} observations)",
                    group(number),
                    group(size as u64)
                )));
            }
        };
        tally.busy += since.elapsed();
        if let Some((size, done)) = committing.take() {
            acknowledge(&mut tally, progress, size, &done, log);
        }
        if behind {
            committing = Some((size, done));
        } else {
            acknowledge(&mut tally, progress, size, &done, log);
        }
        // The vector goes back to the reader, empty.
        batch.clear();
        let _ = spares.try_send(batch);
    }
    if let Target::Store(store) = &mut target {
        if let Some((size, done)) = committing {
            let since = Instant::now();
            if let Err(e) = store.settle() {
                progress.failed.store(true, Ordering::Relaxed);
                return Err(store_error(e))
                    .with_context(|| format!("committing batch {}", group(tally.batches + 1)));
            }
            tally.busy += since.elapsed();
            acknowledge(&mut tally, progress, size, &done, log);
        }
        tally.merge_waits = Some(store.merge_waits());
    }
    Ok((target, tally))
}

/// Counts a batch of `size` observations, which did `done`, as acknowledged.
fn acknowledge(
    tally: &mut StoreTally,
    progress: &Progress,
    size: usize,
    done: &BatchSummary,
    log: bool,
) {
    tally.batches += 1;
    add(&mut tally.summary, done);
    let acknowledged = progress
        .acknowledged
        .fetch_add(size as u64, Ordering::Relaxed)
        + size as u64;
    progress.batches.store(tally.batches, Ordering::Relaxed);
    if log {
        eprintln!(
            "ingest: batch {} acknowledged: {} observations, {} in all",
            tally.batches, size, acknowledged
        );
    }
}

/// Applies one batch to the target; the server's rejections go into the tally.
fn apply_one(
    target: &mut Target,
    batch: &mut Batch,
    names: &[String],
    tally: &mut StoreTally,
) -> Result<BatchSummary> {
    match target {
        // Encoded by the parsing threads: merged as records, most written as they came.
        Target::Store(store) if batch.hosts.groups() > 0 => store
            .apply_encoded_drain(&mut batch.hosts, &mut batch.observations)
            .map_err(store_error),
        // Drained: the observations are moved into the records and freed on this thread.
        Target::Store(store) => store
            .apply_batch_drain(&mut batch.observations)
            .map_err(store_error),
        Target::ClickHouse(location, index) => {
            let written = index.insert(&batch.observations).with_context(|| {
                format!(
                    "writing to ClickHouse at {} (database {})",
                    location.endpoint, location.database
                )
            })?;
            let w = &mut tally.written;
            w.services += written.services;
            w.domain_scans += written.domain_scans;
            w.ignored += written.ignored;
            Ok(BatchSummary {
                ignored: written.ignored,
                ..BatchSummary::default()
            })
        }
        Target::Server(server) => {
            let applied = server.apply(&batch.lines)?;
            for Rejection {
                line,
                field,
                reason,
            } in applied.rejected
            {
                tally.rejected += 1;
                let origin = usize::try_from(line)
                    .ok()
                    .and_then(|n| batch.origins.get(n.wrapping_sub(1)));
                let Some(&(input, number)) = origin else {
                    return Err(anyhow!(
                        "the server rejected line {line} of a batch of {} lines",
                        batch.origins.len()
                    ));
                };
                if tally.shown.len() < SHOWN_REJECTIONS {
                    tally.shown.push(format!(
                        "{}:line {number}: {field}: {reason} (rejected by the server)",
                        names[input]
                    ));
                }
            }
            Ok(applied.summary)
        }
    }
}

/// A store error as one message: its text already ends with the database's own error, so
/// the source chain is not kept (main prints the chain, which would say it twice).
/// Store errors keep their cause as `source()`, so `{:#}` in main prints each part once.
fn store_error(e: StoreError) -> anyhow::Error {
    anyhow::Error::new(e)
}

fn add(total: &mut BatchSummary, b: &BatchSummary) {
    total.applied += b.applied;
    total.superseded += b.superseded;
    total.ignored += b.ignored;
    total.hosts_written += b.hosts_written;
    total.domain_scans_written += b.domain_scans_written;
}

/// Reports progress on standard error from its own thread until stopped.
struct Reporter {
    stop: SyncSender<()>,
    thread: thread::JoinHandle<()>,
}

impl Reporter {
    fn start(progress: Arc<Progress>, total_bytes: Option<u64>, started: Instant) -> Result<Self> {
        let (stop, stopped) = mpsc::sync_channel::<()>(1);
        let bar = io::stderr()
            .is_terminal()
            .then(|| progress_bar(total_bytes));
        let thread = thread::Builder::new()
            .name("ingest-progress".into())
            .spawn(move || {
                let interval = if bar.is_some() {
                    BAR_INTERVAL
                } else {
                    PLAIN_INTERVAL
                };
                // Wakes every interval until stopped (or the handle is dropped).
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                    let seconds = started.elapsed().as_secs_f64();
                    match &bar {
                        Some(bar) => {
                            bar.set_position(progress.bytes.load(Ordering::Relaxed));
                            bar.set_message(bar_message(&progress, seconds));
                        }
                        None => eprintln!("{}", plain_line(&progress, total_bytes, seconds)),
                    }
                }
                if let Some(bar) = bar {
                    bar.finish_and_clear();
                }
            })
            .context("cannot start the progress thread")?;
        Ok(Self { stop, thread })
    }

    fn stop(self) {
        let _ = self.stop.try_send(());
        // A panic in the reporter only loses progress output.
        let _ = self.thread.join();
    }
}

fn progress_bar(total_bytes: Option<u64>) -> ProgressBar {
    let (bar, template) = match total_bytes {
        Some(total) => (
            ProgressBar::new(total),
            "{spinner} {elapsed_precise} [{wide_bar}] {percent:>3}% {bytes_per_sec} eta {eta}\n  \
             {bytes} of {total_bytes} read: {msg}",
        ),
        None => (
            ProgressBar::no_length(),
            "{spinner} {elapsed_precise} {bytes} read ({bytes_per_sec})\n  {msg}",
        ),
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar
}

fn rate(n: u64, seconds: f64) -> u64 {
    (n as f64 / seconds.max(1e-9)) as u64
}

fn bar_message(p: &Progress, seconds: f64) -> String {
    let acknowledged = p.acknowledged.load(Ordering::Relaxed);
    format!(
        "{} lines, {} observations stored, {} obs/s",
        group(p.lines.load(Ordering::Relaxed)),
        group(acknowledged),
        group(rate(acknowledged, seconds)),
    )
}

/// `ingest: 1,200,000 lines, 1,180,000 observations acknowledged in 59 batches, 180,000
/// obs/s, 512.0 of 4,096.0 MB read (12%), 6.6 s`.
fn plain_line(p: &Progress, total_bytes: Option<u64>, seconds: f64) -> String {
    let acknowledged = p.acknowledged.load(Ordering::Relaxed);
    let bytes = p.bytes.load(Ordering::Relaxed);
    let read = match total_bytes {
        Some(total) if total > 0 => format!(
            "{} of {} MB read ({}%)",
            megabytes(bytes),
            megabytes(total),
            bytes * 100 / total
        ),
        _ => format!("{} MB read", megabytes(bytes)),
    };
    format!(
        "ingest: {} lines, {} observations acknowledged in {} batches, {} obs/s, {read}, {seconds:.1} s",
        group(p.lines.load(Ordering::Relaxed)),
        group(acknowledged),
        group(p.batches.load(Ordering::Relaxed)),
        group(rate(acknowledged, seconds)),
    )
}

fn megabytes(bytes: u64) -> String {
    let tenths = bytes / 100_000;
    format!("{}.{}", group(tenths / 10), tenths % 10)
}

/// The summary of a completed run.
pub(crate) struct IngestReport {
    files: usize,
    batch: usize,
    read: ReadTally,
    stored: StoreTally,
    /// The store's figures (not for ClickHouse).
    stats: Option<StoreStats>,
    /// Where the batches went.
    destination: Where,
    /// What enrichment did, when a file was configured.
    enrich: Option<EnrichStats>,
    seconds: f64,
}

impl IngestReport {
    /// Observations read (service observations and domain records), rejected lines not
    /// counted.
    pub(crate) fn observations(&self) -> u64 {
        self.read.observations()
    }

    /// Rejected lines (by the reader, or by the running server that applied the batches).
    pub(crate) fn rejected(&self) -> u64 {
        self.read.rejected + self.stored.rejected
    }

    /// Wall time of the run in seconds, from the first check of the inputs to the last
    /// acknowledged batch.
    pub(crate) fn seconds(&self) -> f64 {
        self.seconds
    }

    /// The printed summary, as `periscope ingest` writes it.
    pub(crate) fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let (r, s) = (&self.read, &self.stored.summary);
        let gzip = match r.gzip_files {
            0 => String::new(),
            n => format!(", {n} gzip"),
        };
        writeln!(
            out,
            "ingested {} file{}{gzip} in {:.1} s",
            self.files,
            if self.files == 1 { "" } else { "s" },
            self.seconds
        )?;
        writeln!(
            out,
            "lines read:        {} ({} rejected, {} blank)",
            group(r.lines),
            group(self.rejected()),
            group(r.blank)
        )?;
        if r.imported_files > 0 {
            writeln!(
                out,
                "scanner records:   {} in {} file{} of scanner output (counted as lines above)",
                group(r.import.records),
                r.imported_files,
                if r.imported_files == 1 { "" } else { "s" },
            )?;
            write_not_mapped(out, &r.import)?;
        }
        if let Some(stats) = &self.enrich {
            writeln!(out, "enrichment:        {stats}")?;
        }
        writeln!(
            out,
            "observations:      {} ({} service, {} domain records), {} obs/s",
            group(r.observations()),
            group(r.service),
            group(r.domain),
            group(rate(r.observations(), self.seconds))
        )?;
        match &self.destination {
            Where::Store(store_path, socket) => {
                writeln!(out, "applied:           {}", group(s.applied))?;
                writeln!(out, "superseded:        {}", group(s.superseded))?;
                writeln!(out, "ignored (failed):  {}", group(s.ignored))?;
                writeln!(
                    out,
                    "records written:   {} hosts, {} domain scans",
                    group(s.hosts_written),
                    group(s.domain_scans_written)
                )?;
                if let Some(stats) = &self.stats {
                    writeln!(
                        out,
                        "store:             {}: {} hosts, {} domain names, {} MB",
                        store_path.display(),
                        group(stats.hosts),
                        group(stats.domain_scans),
                        megabytes(stats.file_bytes)
                    )?;
                }
                if let Some(socket) = socket {
                    writeln!(
                        out,
                        "through:           the running server's ingest socket {} (searchable \
                         after its next index refresh)",
                        socket.display()
                    )?;
                }
            }
            Where::ClickHouse(location) => {
                let w = &self.stored.written;
                writeln!(
                    out,
                    "written:           {} service observations, {} domain scans (the current \
                     one of each is chosen when reading)",
                    group(w.services),
                    group(w.domain_scans)
                )?;
                writeln!(out, "ignored (failed):  {}", group(w.ignored))?;
                writeln!(
                    out,
                    "index:             ClickHouse at {}, database {} (cluster {})",
                    location.endpoint, location.database, location.cluster
                )?;
            }
        }
        let merges = match self.stored.merge_waits {
            Some(waits) => format!(" (waiting for merges {:.1} s)", waits.as_secs_f64()),
            None => String::new(),
        };
        writeln!(
            out,
            "batches:           {} of up to {}; store busy {:.1} s{merges}, reader waited {:.1} s",
            group(self.stored.batches),
            group(self.batch as u64),
            self.stored.busy.as_secs_f64(),
            r.waiting.as_secs_f64()
        )?;
        if self.rejected() > 0 {
            writeln!(
                out,
                "rejected lines (skipped; nothing of them was applied):"
            )?;
            let shown: Vec<&String> = r
                .shown
                .iter()
                .chain(&self.stored.shown)
                .take(SHOWN_REJECTIONS)
                .collect();
            for line in &shown {
                writeln!(out, "{line}")?;
            }
            let rest = self.rejected() - shown.len() as u64;
            if rest > 0 {
                writeln!(out, "{} more rejected lines not shown", group(rest))?;
            }
        }
        Ok(())
    }
}

/// Generates a synthetic dataset on a thread into a pipe and ingests it from the pipe's other
/// end (`/dev/fd/N`, Linux), so no file of the dataset is written (`bench index --stream`,
/// `serve --demo`). Returns the generator's figures, its own time, and the ingest's.
pub(crate) fn ingest_synthetic(
    cfg: &SynthConfig,
    data: &Path,
    batch: usize,
) -> Result<(SynthStats, f64, IngestReport)> {
    use std::os::fd::AsRawFd;
    let (reader, writer) = io::pipe().context("cannot create a pipe")?;
    let path = PathBuf::from(format!("/dev/fd/{}", reader.as_raw_fd()));
    let cfg = *cfg;
    let generator = std::thread::Builder::new()
        .name("bench-synth".into())
        .spawn(move || -> Result<(SynthStats, f64)> {
            let started = Instant::now();
            let mut out = BufWriter::with_capacity(1 << 20, writer);
            let stats = write_dataset(&cfg, &mut out).context("generating into the pipe")?;
            out.flush().context("generating into the pipe")?;
            Ok((stats, started.elapsed().as_secs_f64()))
        })
        .context("cannot start the generator thread")?;
    let report = ingest_paths(data, std::slice::from_ref(&path), batch, false);
    // Closing our end makes a generator still writing fail instead of blocking.
    drop(reader);
    let generated = generator
        .join()
        .map_err(|_| anyhow::anyhow!("the generator thread panicked"))?;
    let report = report?;
    let (stats, seconds) = generated?;
    Ok((stats, seconds, report))
}
