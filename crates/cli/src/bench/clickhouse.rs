//! `periscope bench index --index clickhouse://…`: the same dataset in ClickHouse, and every
//! operation of the embedded index asked of the ClickHouse engine and, on the same server, as
//! SQL written by hand (`periscope_clickhouse::by_hand`).
//!
//! - **Loading.** [`open`] connects as `ingest --index` does ([`crate::clickhouse::connect`]),
//!   creating the schema first when the database holds no table (a one-server cluster; a
//!   larger one needs `periscope clickhouse init` with every node). [`check_holds`] refuses a
//!   database holding rows unless `--reuse` and `DIR/clickhouse.txt` ([`Loaded`]) records
//!   that this very dataset was loaded into it, with the same row counts. [`load`] ingests the
//!   dataset through the `ingest` pipeline (from `DIR/observations.jsonl`, or generated again
//!   into a pipe), timed as the ClickHouse ingest rate; [`disk_bytes`] sums the active parts
//!   of every node of the cluster.
//! - **Operations.** [`measure`] makes each call the timed runs will make (the first
//!   `--clickhouse-runs` values of an operation) once on the engine and by hand, comparing
//!   their check values ([`agree`]: a disagreement stops the run), then times them
//!   alternately, call by call (who goes first alternating too), so the server's noise falls
//!   on both alike.

use std::fs;
use std::hint::black_box;
use std::io::{self, BufWriter, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use periscope_clickhouse::by_hand::{self, ByHand};
use periscope_clickhouse::{ClickHouseIndex, Client, Location, schema, sql};
use periscope_index::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_model::Timestamp;
use periscope_synth::{SynthConfig, write_dataset};
use serde_json::{Value, json};

use super::index::{Call, DETAIL_LIMIT, Dataset, Op, PAGE_LIMIT, Times, ms};
use crate::convert::{ImportArgs, Prepare};
use crate::ingest::{DEFAULT_BATCH, Destination, ingest_to};
use crate::synth::group;

/// What `DIR/clickhouse.txt` records: the dataset loaded into which database, and the rows
/// it held once loaded.
const LOADED_FILE: &str = "clickhouse.txt";
/// The ratio of engine to hand-written SQL p50 the engine should stay under.
pub(super) const RATIO_TARGET: f64 = 1.5;
/// Statements of a bench may take this long (a facet call at 10M hosts takes seconds).
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(900);

/// The server, the engine over it and the hand-written questions.
pub(super) struct Server {
    location: Location,
    client: Client,
    engine: ClickHouseIndex,
    hand: ByHand,
}

/// Connects to the index `url` names; creates the schema when the database holds no table
/// and the cluster is one server.
pub(super) fn open(url: &str) -> Result<Server> {
    let mut config = crate::config::Config::load(None, crate::config::process_env)?;
    config.index.timeout = STATEMENT_TIMEOUT;
    let location: Location = url
        .parse()
        .map_err(|e| anyhow!("{url} is not a ClickHouse index URL: {e}"))?;
    // `connect` below opens the engine over the index the configuration names.
    config.index.url = Some(location.clone());
    let client = crate::clickhouse::client(&config.index, &location)?;
    let db = sql::identifier(&location.database)
        .ok_or_else(|| anyhow!("{:?} is not a valid database name", location.database))?;
    let tables = first_number(
        &client,
        &format!(
            "SELECT count() FROM system.tables WHERE database = {}",
            sql::string(db)
        ),
    )?;
    if tables == 0 {
        let servers = first_number(
            &client,
            &format!(
                "SELECT count() FROM system.clusters WHERE cluster = {}",
                sql::string(&location.cluster)
            ),
        )?;
        if servers != 1 {
            bail!(
                "ClickHouse at {}: database {db} holds no tables and cluster {} has {servers} \
                 servers: create the schema on every one with periscope clickhouse init \
                 --index {url} --node … first",
                location.endpoint,
                location.cluster
            );
        }
        eprintln!(
            "bench index: creating the schema of database {db} at {}…",
            location.endpoint
        );
        schema::init(std::slice::from_ref(&client), db, &location.cluster)
            .with_context(|| format!("creating the schema of database {db}"))?;
    }
    let (location, engine) = crate::clickhouse::connect(&config)?;
    let hand = ByHand::new(client.clone(), &location.database, config.index_config())
        .with_context(|| format!("ClickHouse at {}", location.endpoint))?;
    Ok(Server {
        location,
        client,
        engine,
        hand,
    })
}

impl Server {
    /// Where the index is.
    pub(super) fn location(&self) -> &Location {
        &self.location
    }
}

fn first_number(client: &Client, statement: &str) -> Result<u64> {
    let answer = client
        .execute(&format!("{statement} FORMAT TabSeparated"))
        .with_context(|| format!("ClickHouse at {}", client.url()))?;
    answer
        .trim()
        .parse()
        .map_err(|_| anyhow!("ClickHouse at {} answered {answer:?}", client.url()))
}

/// Rows of the three tables, over the whole cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rows {
    services: u64,
    facts: u64,
    domain_scans: u64,
}

impl Rows {
    fn is_empty(self) -> bool {
        self.services + self.facts + self.domain_scans == 0
    }

    fn describe(self) -> String {
        format!(
            "{} services rows, {} facts rows, {} domain_scans rows",
            group(self.services),
            group(self.facts),
            group(self.domain_scans)
        )
    }
}

fn rows(server: &Server) -> Result<Rows> {
    let db = &server.location.database;
    let count =
        |table: &str| first_number(&server.client, &format!("SELECT count() FROM {db}.{table}"));
    Ok(Rows {
        services: count("services")?,
        facts: count("facts")?,
        domain_scans: count("domain_scans")?,
    })
}

/// `DIR/clickhouse.txt`: the dataset loaded into a database, and its rows once loaded.
#[derive(Debug, Clone, PartialEq)]
struct Loaded {
    dataset: Dataset,
    database: String,
    cluster: String,
    rows: Rows,
}

impl Loaded {
    fn to_text(&self) -> String {
        format!(
            "# written by periscope bench index once ClickHouse held the whole dataset\n{}\
             database={}\ncluster={}\nservices_rows={}\nfacts_rows={}\ndomain_scans_rows={}\n",
            self.dataset
                .to_text()
                .lines()
                .skip(1)
                .fold(String::new(), |t, l| t + l + "\n"),
            self.database,
            self.cluster,
            self.rows.services,
            self.rows.facts,
            self.rows.domain_scans
        )
    }

    fn from_text(text: &str) -> Option<Self> {
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::trim)
        };
        Some(Self {
            dataset: Dataset::from_text(text)?,
            database: value("database")?.to_owned(),
            cluster: value("cluster")?.to_owned(),
            rows: Rows {
                services: value("services_rows")?.parse().ok()?,
                facts: value("facts_rows")?.parse().ok()?,
                domain_scans: value("domain_scans_rows")?.parse().ok()?,
            },
        })
    }
}

/// Whether the database must be loaded: `true` when empty; `false` when it holds this
/// dataset as `DIR/clickhouse.txt` records (with `--reuse` only); an error otherwise.
pub(super) fn check_holds(
    server: &Server,
    dir: &Path,
    dataset: Dataset,
    reuse: bool,
) -> Result<bool> {
    let found = rows(server)?;
    if found.is_empty() {
        return Ok(true);
    }
    let l = &server.location;
    let what = format!(
        "ClickHouse database {} at {} is not empty ({})",
        l.database,
        l.endpoint,
        found.describe()
    );
    if !reuse {
        bail!(
            "{what}: bench index loads its dataset into an empty database. Name another \
             database in --index, or pass --reuse with the --dir of the bench run that loaded it"
        );
    }
    let path = dir.join(LOADED_FILE);
    let Some(loaded) = fs::read_to_string(&path)
        .ok()
        .as_deref()
        .and_then(Loaded::from_text)
    else {
        bail!(
            "{what}, and {} records no dataset loaded by a bench run, so what it holds is \
             unknown: name an empty database in --index",
            path.display()
        );
    };
    let expected = Loaded {
        dataset,
        database: l.database.clone(),
        cluster: l.cluster.clone(),
        rows: found,
    };
    if loaded != expected {
        bail!(
            "{what}, which is not what {} records (the dataset of {} hosts, seed {}, as of {} \
             in database {} of cluster {}: {}): name an empty database in --index",
            path.display(),
            group(loaded.dataset.hosts),
            loaded.dataset.seed,
            loaded.dataset.as_of,
            loaded.database,
            loaded.cluster,
            loaded.rows.describe()
        );
    }
    Ok(false)
}

/// How loading ClickHouse went.
#[derive(Debug)]
pub(super) struct Load {
    observations: u64,
    rejected: u64,
    seconds: f64,
    /// Generated again into a pipe (no input file was at hand).
    streamed: bool,
}

/// Ingests the dataset into ClickHouse through the `ingest` pipeline, from `input` when
/// given, else generated again into a pipe; records it in `DIR/clickhouse.txt`.
pub(super) fn load(
    server: &Server,
    dir: &Path,
    dataset: Dataset,
    input: Option<&Path>,
) -> Result<Load> {
    let ingest = |path: &Path| {
        ingest_to(
            Destination::ClickHouse(server.location.clone(), Box::new(server.engine.clone())),
            &[path.to_path_buf()],
            DEFAULT_BATCH,
            false,
            &ImportArgs::jsonl(),
            Prepare::default(),
        )
    };
    eprintln!(
        "bench index: ingesting {} hosts into ClickHouse database {} at {}…",
        group(dataset.hosts),
        server.location.database,
        server.location.endpoint
    );
    let report = match input {
        Some(path) => ingest(path)?,
        None => {
            use std::os::fd::AsRawFd;
            let (reader, writer) = io::pipe().context("cannot create a pipe")?;
            let path = PathBuf::from(format!("/dev/fd/{}", reader.as_raw_fd()));
            let cfg = SynthConfig {
                hosts: dataset.hosts,
                seed: dataset.seed,
                as_of: dataset.as_of,
            };
            let generator = std::thread::Builder::new()
                .name("bench-synth".into())
                .spawn(move || -> Result<()> {
                    let mut out = BufWriter::with_capacity(1 << 20, writer);
                    write_dataset(&cfg, &mut out).context("generating into the pipe")?;
                    out.flush().context("generating into the pipe")
                })
                .context("cannot start the generator thread")?;
            let report = ingest(&path);
            drop(reader);
            generator
                .join()
                .map_err(|_| anyhow!("the generator thread panicked"))??;
            report?
        }
    };
    let mut err = io::stderr().lock();
    report.write(&mut err).ok();
    drop(err);
    let loaded = Loaded {
        dataset,
        database: server.location.database.clone(),
        cluster: server.location.cluster.clone(),
        rows: rows(server)?,
    };
    let path = dir.join(LOADED_FILE);
    fs::write(&path, loaded.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Load {
        observations: report.observations(),
        rejected: report.rejected(),
        seconds: report.seconds(),
        streamed: input.is_none(),
    })
}

/// Bytes of the database's active parts on every node of the cluster.
pub(super) fn disk_bytes(server: &Server) -> Result<u64> {
    let l = &server.location;
    first_number(
        &server.client,
        &format!(
            "SELECT sum(bytes) FROM cluster({}, system, parts) WHERE database = {} AND active",
            sql::string(&l.cluster),
            sql::string(&l.database)
        ),
    )
    .with_context(|| format!("reading system.parts over cluster {}", l.cluster))
}

/// One operation on ClickHouse: the engine's times, the hand-written SQL's, and how many
/// calls each made; or why a call failed (say, over `[index] memory_limit_mb`), which ends
/// that operation's runs but not the benchmark.
#[derive(Debug)]
pub(super) struct ChResult {
    pub(super) engine: Times,
    pub(super) hand: Times,
    pub(super) failure: Option<String>,
}

impl ChResult {
    /// Engine p50 over hand-written p50; `None` without runs or after a failure.
    pub(super) fn ratio(&self) -> Option<f64> {
        (self.failure.is_none() && self.engine.runs > 0 && !self.hand.p50.is_zero())
            .then(|| self.engine.p50.as_secs_f64() / self.hand.p50.as_secs_f64())
    }

    fn failed(why: String) -> Self {
        Self {
            engine: Times::default(),
            hand: Times::default(),
            failure: Some(why),
        }
    }
}

/// What the ClickHouse part of a run measured.
#[derive(Debug)]
pub(super) struct ChRun {
    pub(super) location: Location,
    pub(super) load: Option<Load>,
    pub(super) disk_bytes: u64,
    pub(super) results: Vec<ChResult>,
}

/// The check value of an engine answer or a hand-written one.
#[derive(Debug, PartialEq)]
enum Check {
    Page { hosts: Vec<IpAddr>, has_more: bool },
    TooBroad(u64),
    Count(u64),
}

fn engine_call(server: &Server, call: &Call, now: Timestamp) -> Result<Answer> {
    let e = &server.engine;
    Ok(match call {
        Call::Search(query) => Answer::Search(e.search(&SearchRequest {
            query,
            after: None,
            limit: PAGE_LIMIT,
            resolved: &[],
            now,
        })?),
        Call::Count(query) => Answer::Count(e.count(query, now)?.value),
        Call::Facets(query) => Answer::Facets(e.facets(query, now)?),
        Call::Exposure(query, resolution) => {
            Answer::Exposure(e.exposure(query, *resolution, now)?)
        }
        Call::Detail(ip) => {
            Answer::Detail(Box::new(e.host_detail(*ip, None, DETAIL_LIMIT, now)?))
        }
    })
}

/// An engine answer.
enum Answer {
    Search(SearchOutcome),
    Count(u64),
    Facets(periscope_index::Facets),
    Exposure(periscope_index::Exposure),
    /// Boxed: a host is large beside the other answers.
    Detail(Box<Option<periscope_index::HostDetail>>),
}

/// A hand-written answer.
enum HandAnswer {
    Page(by_hand::Page),
    Count(u64),
    Facets(by_hand::FacetCounts),
    Exposure(by_hand::Exposure),
    Detail(Option<usize>),
}

fn hand_call(server: &Server, call: &Call, now: Timestamp) -> Result<HandAnswer> {
    let h = &server.hand;
    Ok(match call {
        Call::Search(query) => HandAnswer::Page(h.page(query, PAGE_LIMIT, now)?),
        Call::Count(query) => HandAnswer::Count(h.count(query, now)?),
        Call::Facets(query) => HandAnswer::Facets(h.facets(query, now)?),
        Call::Exposure(query, resolution) => {
            HandAnswer::Exposure(h.exposure(query, *resolution, now)?)
        }
        Call::Detail(ip) => HandAnswer::Detail(h.host_detail(*ip, now)?),
    })
}

/// Whether the hand-written answer answers the engine's question: the same page of hosts,
/// count, facet counts, tile counts, or number of a host's services. The reason when not.
fn agree(engine: &Answer, hand: &HandAnswer) -> std::result::Result<(), String> {
    let same = |a: Check, b: Check| {
        if a == b {
            Ok(())
        } else {
            Err(format!(
                "the engine answered {a:?}, the hand-written SQL {b:?}"
            ))
        }
    };
    match (engine, hand) {
        (Answer::Search(outcome), HandAnswer::Page(page)) => {
            let a = match outcome {
                SearchOutcome::Page(p) => Check::Page {
                    hosts: p.hosts.iter().map(|h| h.host.ip).collect(),
                    has_more: p.has_more,
                },
                SearchOutcome::TooBroad { matching } => Check::TooBroad(*matching),
            };
            let b = match page {
                by_hand::Page::Hosts {
                    hosts, has_more, ..
                } => Check::Page {
                    hosts: hosts.clone(),
                    has_more: *has_more,
                },
                by_hand::Page::TooBroad { matching } => Check::TooBroad(*matching),
            };
            same(a, b)
        }
        (Answer::Count(a), HandAnswer::Count(b)) => same(Check::Count(*a), Check::Count(*b)),
        (Answer::Detail(d), HandAnswer::Detail(n)) => {
            let d: &Option<periscope_index::HostDetail> = d;
            let shown = d.as_ref().map(|d| d.host.services.len());
            let expected = n.map(|n| n.min(DETAIL_LIMIT));
            let more = d.as_ref().is_some_and(|d| d.next.is_some());
            if shown != expected || more != n.is_some_and(|n| n > DETAIL_LIMIT) {
                return Err(format!(
                    "the engine showed {shown:?} services (more: {more}), the hand-written SQL \
                     found {n:?}"
                ));
            }
            Ok(())
        }
        (Answer::Facets(f), HandAnswer::Facets(groups)) => {
            for group in &f.groups {
                let Some((_, counts)) = groups.iter().find(|(field, _)| *field == group.field)
                else {
                    return Err(format!("no hand-written group {:?}", group.field));
                };
                for item in &group.items {
                    let hand = counts.get(&item.clause).copied();
                    if hand != Some(item.unique_hosts.value) {
                        return Err(format!(
                            "facet {:?} value {}: the engine counted {}, the hand-written SQL \
                             {hand:?}",
                            group.field, item.value, item.unique_hosts.value
                        ));
                    }
                }
                let expected = counts.values().filter(|n| **n > 0).count().min(5);
                if group.items.len() != expected {
                    return Err(format!(
                        "facet {:?}: the engine shows {} values, the hand-written SQL found {} \
                         with hosts",
                        group.field,
                        group.items.len(),
                        counts.len()
                    ));
                }
            }
            Ok(())
        }
        (Answer::Exposure(e), HandAnswer::Exposure(h)) => {
            if e.unique_hosts.value != h.hosts || e.service_count != h.services {
                return Err(format!(
                    "exposure totals: the engine {} hosts and {} services, the hand-written SQL \
                     {} and {}",
                    e.unique_hosts.value, e.service_count, h.hosts, h.services
                ));
            }
            if !e.bounded && e.buckets.len() != h.tiles.len() {
                return Err(format!(
                    "the engine answered {} tiles, the hand-written SQL {}",
                    e.buckets.len(),
                    h.tiles.len()
                ));
            }
            for b in &e.buckets {
                let tile = b
                    .key
                    .split('/')
                    .skip(1)
                    .map(str::parse::<u32>)
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .ok()
                    .and_then(|xy| h.tiles.get(&(*xy.first()?, *xy.get(1)?)));
                let Some(t) = tile else {
                    return Err(format!("tile {}: not in the hand-written answer", b.key));
                };
                let near = |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs().max(1.0);
                if t.hosts != b.unique_hosts
                    || t.services != b.service_count
                    || !near(t.latitude, b.latitude)
                    || !near(t.longitude, b.longitude)
                    || b.country.map(|c| c.1 as usize) != Some(t.countries.len()).filter(|n| *n > 0)
                {
                    return Err(format!(
                        "tile {}: the engine {b:?}, the hand-written SQL {t:?}",
                        b.key
                    ));
                }
            }
            Ok(())
        }
        _ => Err("answers of different kinds".into()),
    }
}

/// A warm-up pass over the values the runs use (engine and hand-written SQL must agree),
/// then each operation's timed runs, engine and hand alternating call by call.
pub(super) fn measure(
    server: &Server,
    ops: &[Op],
    now: Timestamp,
    runs: u32,
    heavy_runs: u32,
) -> Result<Vec<ChResult>> {
    let runs_of = |op: &Op| if op.heavy { heavy_runs } else { runs };
    let mut failures: Vec<Option<String>> = Vec::with_capacity(ops.len());
    for op in ops {
        failures.push(warm_up(server, op, now, runs_of(op))?);
    }
    let mut results = Vec::with_capacity(ops.len());
    for (op, failure) in ops.iter().zip(failures) {
        if let Some(why) = failure {
            eprintln!("bench index: {} on ClickHouse failed: {why}", op.name);
            results.push(ChResult::failed(why));
            continue;
        }
        let runs = if op.cases.is_empty() { 0 } else { runs_of(op) };
        eprintln!("bench index: {} on ClickHouse, {runs} runs…", op.name);
        results.push(timed(server, op, now, runs));
    }
    Ok(results)
}

/// One call of each value the timed runs use: the engine's answer and the hand-written SQL's
/// must agree (an error otherwise). A failed call is the operation's failure, reported.
fn warm_up(server: &Server, op: &Op, now: Timestamp, runs: u32) -> Result<Option<String>> {
    for case in op.cases.iter().take(runs as usize) {
        let engine = match engine_call(server, &case.call, now) {
            Ok(answer) => answer,
            Err(e) => return Ok(Some(format!("the engine, {}: {e:#}", case.text))),
        };
        let hand = match hand_call(server, &case.call, now) {
            Ok(answer) => answer,
            Err(e) => return Ok(Some(format!("by hand, {}: {e:#}", case.text))),
        };
        agree(&engine, &hand).map_err(|why| {
            anyhow!(
                "{} {}: the hand-written SQL does not answer the engine's question: {why}",
                op.name,
                case.text
            )
        })?;
    }
    Ok(None)
}

/// `runs` timed calls of `op`, engine and hand alternating call by call.
fn timed(server: &Server, op: &Op, now: Timestamp, runs: u32) -> ChResult {
    let mut engine = Vec::with_capacity(runs as usize);
    let mut hand = Vec::with_capacity(runs as usize);
    for (i, case) in (0..runs).zip(op.cases.iter().cycle()) {
        let time_engine = || -> Result<Duration> {
            let started = Instant::now();
            black_box(engine_call(server, &case.call, now)?);
            Ok(started.elapsed())
        };
        let time_hand = || -> Result<Duration> {
            let started = Instant::now();
            black_box(hand_call(server, &case.call, now)?);
            Ok(started.elapsed())
        };
        let pair = if i % 2 == 0 {
            time_engine().and_then(|e| Ok((e, time_hand()?)))
        } else {
            time_hand().and_then(|h| Ok((time_engine()?, h)))
        };
        match pair {
            Ok((e, h)) => {
                engine.push(e);
                hand.push(h);
            }
            Err(e) => return ChResult::failed(format!("{}: {e:#}", case.text)),
        }
    }
    ChResult {
        engine: Times::of(engine),
        hand: Times::of(hand),
        failure: None,
    }
}

/// The ClickHouse lines of the report.
pub(super) fn write_setup(out: &mut impl Write, run: &ChRun) -> io::Result<()> {
    let l = &run.location;
    match &run.load {
        Some(load) => writeln!(
            out,
            "clickhouse:       database {} at {} (cluster {}): {} observations ({} rejected \
             lines) in {:.1} s: {} obs/s ({})",
            l.database,
            l.endpoint,
            l.cluster,
            group(load.observations),
            group(load.rejected),
            load.seconds,
            group((load.observations as f64 / load.seconds.max(1e-9)) as u64),
            if load.streamed {
                "generated again into a pipe"
            } else {
                "from DIR/observations.jsonl"
            }
        )?,
        None => writeln!(
            out,
            "clickhouse:       database {} at {} (cluster {}): loaded by an earlier run (--reuse)",
            l.database, l.endpoint, l.cluster
        )?,
    }
    writeln!(
        out,
        "clickhouse disk:  {:.1} MB (active parts on every node)",
        run.disk_bytes as f64 / 1e6
    )
}

/// The table of each operation on the embedded index, the engine and by hand.
pub(super) fn write_table(
    out: &mut impl Write,
    names: &[&str],
    embedded: &[Times],
    run: &ChRun,
) -> io::Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "{:<20} {:>10} {:>6} {:>10} {:>10} {:>10} {:>10} {:>7} {:>4}",
        "operation",
        "embedded",
        "ch runs",
        "engine p50",
        "engine p99",
        "hand p50",
        "hand p99",
        "ratio",
        "ok"
    )?;
    for ((name, e), r) in names.iter().zip(embedded).zip(&run.results) {
        let (ratio, ok) = match r.ratio() {
            Some(x) => (
                format!("{x:.2}"),
                if x <= RATIO_TARGET { "ok" } else { "MISS" },
            ),
            None if r.failure.is_some() => ("-".into(), "FAIL"),
            None => ("-".into(), "-"),
        };
        writeln!(
            out,
            "{:<20} {:>10.3} {:>6} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>7} {:>4}",
            name,
            ms(e.p50),
            r.engine.runs,
            ms(r.engine.p50),
            ms(r.engine.p99),
            ms(r.hand.p50),
            ms(r.hand.p99),
            ratio,
            ok
        )?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "milliseconds; embedded: p50 of the embedded index; engine: the ClickHouse engine; hand: \
         the same question in hand-written SQL on the same server, alternating call by call; \
         ratio: engine p50 / hand p50, target ≤ {RATIO_TARGET}."
    )?;
    for (name, r) in names.iter().zip(&run.results) {
        if let Some(why) = &r.failure {
            writeln!(out, "{name} failed on ClickHouse: {why}")?;
        }
    }
    Ok(())
}

/// The top-level `clickhouse` object of the JSON report.
pub(super) fn to_json(run: &ChRun) -> Value {
    let l = &run.location;
    json!({
        "endpoint": l.endpoint,
        "database": l.database,
        "cluster": l.cluster,
        "ingest": run.load.as_ref().map(|load| json!({
            "observations": load.observations,
            "rejected_lines": load.rejected,
            "seconds": load.seconds,
            "observations_per_second": load.observations as f64 / load.seconds.max(1e-9),
            "streamed": load.streamed,
        })),
        "disk_bytes": run.disk_bytes,
        "ratio_target": RATIO_TARGET,
    })
}

/// The `clickhouse`, `by_hand` and `ratio` members of one operation.
pub(super) fn operation_json(r: &ChResult) -> (Value, Value, Value) {
    let ratio = r.ratio();
    (
        r.engine.to_json(),
        r.hand.to_json(),
        json!({
            "value": ratio,
            "ok": ratio.map(|x| x <= RATIO_TARGET),
            "failure": r.failure,
        }),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use periscope_index::{
        Count, Exposure, FacetField, FacetGroup, FacetStatus, FacetValue, Facets, SearchPage,
    };
    use periscope_model::Port;
    use periscope_query::{Clause, Resolution};

    use super::*;

    /// An operation whose call failed (over the memory bound, say) is reported as failed with
    /// the reason, in the table and the JSON, and has no ratio; the others keep theirs.
    #[test]
    fn a_failed_operation_is_reported_beside_the_measured_ones() {
        let why = "by hand, facets port:22: ClickHouse refused a statement (HTTP 500): \
                   Code: 241, Memory limit (for query) exceeded";
        let measured = ChResult {
            engine: Times::of(vec![Duration::from_millis(30)]),
            hand: Times::of(vec![Duration::from_millis(20)]),
            failure: None,
        };
        let run = ChRun {
            location: "clickhouse://127.0.0.1:8123/bench".parse().unwrap(),
            load: None,
            disk_bytes: 0,
            results: vec![measured, ChResult::failed(why.to_owned())],
        };
        assert_eq!(run.results[0].ratio(), Some(1.5));
        assert_eq!(run.results[1].ratio(), None);
        let mut table = Vec::new();
        write_table(
            &mut table,
            &["count", "facets"],
            &[Times::default(); 2],
            &run,
        )
        .unwrap();
        let table = String::from_utf8(table).unwrap();
        let row = |name: &str| {
            table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap()
                .to_owned()
        };
        assert!(row("count ").ends_with("1.50   ok"), "{table}");
        assert!(row("facets ").ends_with("- FAIL"), "{table}");
        assert!(
            table.contains(&format!("facets failed on ClickHouse: {why}")),
            "{table}"
        );
        let (_, _, ratio) = operation_json(&run.results[1]);
        assert_eq!(ratio["failure"], why);
        assert_eq!(ratio["value"], Value::Null);
    }

    #[test]
    fn agreement_is_checked_on_every_kind_of_answer() {
        assert!(agree(&Answer::Count(7), &HandAnswer::Count(7)).is_ok());
        assert!(agree(&Answer::Count(7), &HandAnswer::Count(6)).is_err());

        let empty = Answer::Search(SearchOutcome::Page(SearchPage {
            hosts: Vec::new(),
            has_more: false,
        }));
        let none = HandAnswer::Page(by_hand::Page::Hosts {
            hosts: Vec::new(),
            has_more: false,
            rows: 0,
        });
        let one = HandAnswer::Page(by_hand::Page::Hosts {
            hosts: vec![IpAddr::from([192, 0, 2, 1])],
            has_more: false,
            rows: 3,
        });
        assert!(agree(&empty, &none).is_ok());
        assert!(agree(&empty, &one).is_err());
        let broad = Answer::Search(SearchOutcome::TooBroad { matching: 20_000 });
        assert!(
            agree(
                &broad,
                &HandAnswer::Page(by_hand::Page::TooBroad { matching: 20_000 })
            )
            .is_ok()
        );
        assert!(agree(&broad, &none).is_err());

        let port = |n| Clause::Port(Port::new(n).expect("port"));
        let facets = Answer::Facets(Facets {
            groups: vec![FacetGroup {
                field: FacetField::Port,
                status: FacetStatus::Available,
                items: vec![FacetValue {
                    value: "22".into(),
                    clause: port(22),
                    selected: false,
                    unique_hosts: Count::exact(3),
                }],
            }],
        });
        let counts =
            |n| HandAnswer::Facets(vec![(FacetField::Port, HashMap::from([(port(22), n)]))]);
        assert!(agree(&facets, &counts(3)).is_ok());
        assert!(agree(&facets, &counts(2)).is_err());
        // A value the hand-written SQL found but the engine left out.
        let more = HandAnswer::Facets(vec![(
            FacetField::Port,
            HashMap::from([(port(22), 3), (port(80), 1)]),
        )]);
        assert!(agree(&facets, &more).is_err());

        let exposure = Answer::Exposure(Exposure {
            unique_hosts: Count::exact(5),
            service_count: 9,
            resolution: Resolution::Global,
            buckets: Vec::new(),
            bounded: false,
        });
        let hand = |hosts| {
            HandAnswer::Exposure(by_hand::Exposure {
                hosts,
                services: 9,
                tiles: BTreeMap::new(),
            })
        };
        assert!(agree(&exposure, &hand(5)).is_ok());
        assert!(agree(&exposure, &hand(4)).is_err());

        assert!(agree(&Answer::Detail(Box::new(None)), &HandAnswer::Detail(None)).is_ok());
        assert!(
            agree(
                &Answer::Detail(Box::new(None)),
                &HandAnswer::Detail(Some(2))
            )
            .is_err()
        );
        assert!(agree(&Answer::Count(1), &HandAnswer::Detail(None)).is_err());
    }

    #[test]
    fn the_load_record_round_trips() {
        let loaded = Loaded {
            dataset: Dataset {
                hosts: 2000,
                seed: 3,
                as_of: Timestamp::parse("2026-01-01T00:00:00Z").expect("timestamp"),
            },
            database: "bench".into(),
            cluster: "periscope".into(),
            rows: Rows {
                services: 10,
                facts: 20,
                domain_scans: 0,
            },
        };
        assert_eq!(Loaded::from_text(&loaded.to_text()), Some(loaded));
        assert_eq!(Loaded::from_text("hosts=1\n"), None);
    }
}
