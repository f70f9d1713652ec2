//! `periscope convert`: reads scanner output (Nmap XML, Masscan, ZGrab2, Shodan, Censys, or
//! observation JSON Lines) through the importers of `periscope-import` and writes the
//! observation JSON Lines `periscope ingest` would apply, so users can inspect or pipe them.
//!
//! It also holds what `ingest` and `convert` share about scanner formats: the `--format` and
//! `--port` arguments ([`ImportArgs`]), telling an input's format ([`resolve_format`]), the
//! one step every observation passes before it is stored or written ([`Prepare`]:
//! enrichment, with the files of `[enrich]` or `--geoip-city`, `--geoip-asn`, `--asn-table`),
//! the error for an input of which nothing could be read ([`nothing_read`]), and the lines
//! that report what was not mapped ([`write_not_mapped`]).

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use anyhow::{Context, Result, anyhow};
use periscope_enrich::{EnrichStats, Enricher, Fill};
use periscope_import::{Format, Importer, Item, Options, Tally, Zgrab2Ports};
use periscope_model::observation::Observation;

use crate::config::{Config, ConfigArgs, EnrichFlags};
use crate::lines::open_input;
use crate::synth::{group, now};

/// Rejected records printed before only counting them.
const SHOWN_REJECTIONS: usize = 20;

/// `--format`: detected from the content, or named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FormatChoice {
    /// Told from the first bytes of each input.
    Auto,
    /// Every input is in this format.
    Named(Format),
}

fn parse_format(s: &str) -> Result<FormatChoice, String> {
    if s == "auto" {
        return Ok(FormatChoice::Auto);
    }
    s.parse().map(FormatChoice::Named)
}

/// The arguments about scanner formats that `ingest` and `convert` share.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ImportArgs {
    /// Input format: auto (told from the content of each input), jsonl, nmap-xml,
    /// masscan-json, masscan-xml, zgrab2, shodan or censys.
    #[arg(long, value_name = "FORMAT", default_value = "auto", value_parser = parse_format)]
    pub format: FormatChoice,
    /// The port ZGrab2 scanned (ZGrab2 does not record it): PORT for every module, or
    /// MODULE=PORT (repeat the option for several modules). Required for ZGrab2 input.
    #[arg(long = "port", value_name = "[MODULE=]PORT")]
    pub ports: Vec<String>,
}

impl ImportArgs {
    /// The observation format only, as the internal callers of ingest read.
    pub(crate) fn jsonl() -> Self {
        Self {
            format: FormatChoice::Named(Format::Jsonl),
            ports: Vec::new(),
        }
    }

    /// The importers' options, with the reader's clock.
    pub(crate) fn options(&self) -> Result<Options> {
        let mut zgrab2_ports = Zgrab2Ports::default();
        for value in &self.ports {
            zgrab2_ports.add(value).map_err(|e| anyhow!(e))?;
        }
        Ok(Options {
            now: now(),
            zgrab2_ports,
        })
    }
}

/// The format of an input: named, or told from its first bytes (an empty input is read as
/// observation lines: there is nothing in it either way).
pub(crate) fn resolve_format(
    choice: FormatChoice,
    reader: &mut dyn BufRead,
    name: &str,
) -> Result<Format> {
    if let FormatChoice::Named(format) = choice {
        return Ok(format);
    }
    let head = reader
        .fill_buf()
        .with_context(|| format!("cannot read {name}"))?;
    if head.iter().all(u8::is_ascii_whitespace) {
        return Ok(Format::Jsonl);
    }
    periscope_import::detect(head).ok_or_else(|| {
        anyhow!(
            "cannot tell the format of {name}: it is neither observation JSON Lines nor the \
             output of Nmap (-oX), Masscan (-oJ, -oX), ZGrab2, Shodan or Censys as far as its \
             first bytes show; name it with --format"
        )
    })
}

/// The step every observation passes between reading and storing (or writing): enrichment
/// (`crates/enrich`) of service observations that carry no location or ASN, with the files
/// of `[enrich]` or the flags. An observation it changed is written again with
/// [`periscope_import::write_observation`], so `convert` and a running server's socket see
/// what the store gets; an unchanged one keeps its line, never serialised twice.
#[derive(Debug, Default)]
pub(crate) struct Prepare {
    enricher: Option<Enricher>,
    stats: EnrichStats,
}

impl Prepare {
    /// Opens and checks every enrichment file `config` names, before anything is read: a
    /// missing or unreadable file, or one of the wrong kind, is an error naming the setting
    /// and the file. No file named: nothing is enriched.
    pub(crate) fn open(config: &Config) -> Result<Self> {
        let files = config.enrich.files();
        if files.is_empty() {
            return Ok(Self::default());
        }
        // The error's text already ends with the system's reason: its source chain is not
        // kept (main prints the chain, which would say it twice).
        let enricher = Enricher::open(&files)
            .map_err(|e| anyhow!("{e}; nothing was read (set in [enrich], PERISCOPE_ENRICH_* or --geoip-city, --geoip-asn, --asn-table)"))?;
        Ok(Self {
            enricher: Some(enricher),
            stats: EnrichStats::default(),
        })
    }

    /// Prepares one observation; true when it changed (its line must then be written again).
    pub(crate) fn apply(&mut self, observation: &mut Observation) -> bool {
        let Some(enricher) = &self.enricher else {
            return false;
        };
        match enricher.enrich_observation(observation) {
            Some(outcome) => {
                self.stats.record(&outcome);
                outcome.location == Fill::Added || outcome.asn == Fill::Added
            }
            None => false,
        }
    }

    /// What enrichment did, when a file was configured.
    pub(crate) fn stats(&self) -> Option<&EnrichStats> {
        self.enricher.as_ref().map(|_| &self.stats)
    }
}

/// The error for an input of which nothing could be read: every record rejected.
pub(crate) fn nothing_read(
    name: &str,
    format: Format,
    choice: FormatChoice,
    rejected: u64,
    first: Option<&str>,
) -> anyhow::Error {
    let unit = if matches!(format, Format::NmapXml | Format::MasscanXml) {
        "records"
    } else {
        "lines"
    };
    let how = match choice {
        FormatChoice::Auto => format!("read as {format} (detected)"),
        FormatChoice::Named(_) => format!(
            "read as {format} (--format); if it is another format, name that one or leave \
             --format out to detect it"
        ),
    };
    anyhow!(
        "nothing could be read from {name}: all {} {unit} were rejected, {how}; the first: {}",
        group(rejected),
        first.unwrap_or("(none)")
    )
}

/// `not mapped:` and `skipped:` lines of a summary, when there is anything to say.
pub(crate) fn write_not_mapped(out: &mut impl Write, tally: &Tally) -> io::Result<()> {
    if !tally.unmapped.is_empty() {
        let names: Vec<String> = tally
            .unmapped
            .iter()
            .map(|(name, n)| format!("{name} ×{}", group(*n)))
            .collect();
        writeln!(
            out,
            "not mapped:        {} services with no registry token: {}",
            group(tally.unmapped_total()),
            names.join(", ")
        )?;
    }
    if !tally.skipped.is_empty() {
        let what: Vec<String> = tally
            .skipped
            .iter()
            .map(|(what, n)| format!("{what} ×{}", group(*n)))
            .collect();
        writeln!(out, "not services:      {}", what.join(", "))?;
    }
    Ok(())
}

/// Arguments of `periscope convert`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Writes one observation per line (docs/observation-format.md); the summary \
    and rejected records go to standard error. Exit status: 0 when every input was read to its \
    end, 2 when an input could not be read or nothing of it could be. See docs/importers.md."
)]
pub(crate) struct Args {
    /// Scanner output files (gzip is detected); '-' reads standard input.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    import: ImportArgs,
    #[command(flatten)]
    config: ConfigArgs<EnrichFlags>,
    /// Write to this file instead of standard output.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
}

/// Runs `periscope convert`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let options = args.import.options()?;
    // The enrichment files are opened and checked before any input is read.
    let mut prepare = Prepare::open(&args.config.load()?)?;
    let out: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Box::new(io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut total = Tally::default();
    let (mut observations, mut rejected) = (0u64, 0u64);
    let mut shown = 0usize;
    let stderr = io::stderr();
    let mut err = stderr.lock();
    for path in &args.files {
        let name = if path.as_os_str() == "-" {
            "<stdin>".to_owned()
        } else {
            path.display().to_string()
        };
        let mut input = open_input(path, Arc::new(AtomicU64::new(0)))?;
        let format = resolve_format(args.import.format, &mut input.reader, &name)?;
        let mut importer: Box<dyn Importer> =
            periscope_import::importer(format, input.reader, &options)
                .with_context(|| format!("cannot read {name} as {format}"))?;
        let (mut read, mut bad, mut first) = (0u64, 0u64, None::<String>);
        loop {
            let item = importer
                .next_item()
                .with_context(|| format!("reading {name}"))?;
            match item {
                None => break,
                Some(Item::Rejected(r)) => {
                    bad += 1;
                    let text = format!("{name}:{r}");
                    if shown < SHOWN_REJECTIONS {
                        writeln!(err, "{text}")?;
                        shown += 1;
                    }
                    first.get_or_insert(text);
                }
                Some(Item::Record(record)) => {
                    for mut imported in record.observations {
                        read += 1;
                        if prepare.apply(&mut imported.observation) {
                            imported.line =
                                periscope_import::write_observation(&imported.observation);
                        }
                        out.write_all(imported.line.as_bytes())?;
                        out.write_all(b"\n")?;
                    }
                }
            }
        }
        if read == 0 && bad > 0 {
            out.flush()?;
            return Err(nothing_read(
                &name,
                format,
                args.import.format,
                bad,
                first.as_deref(),
            ));
        }
        observations += read;
        rejected += bad;
        total.add(importer.tally());
        eprintln!(
            "convert: {name} ({format}): {} records, {} observations, {} rejected",
            group(importer.tally().records),
            group(read),
            group(bad)
        );
    }
    out.flush().context("writing the observations")?;
    if args.files.len() > 1 {
        writeln!(
            err,
            "convert: {} files: {} observations, {} rejected",
            args.files.len(),
            group(observations),
            group(rejected)
        )?;
    }
    write_not_mapped(&mut err, &total)?;
    if let Some(stats) = prepare.stats() {
        writeln!(err, "convert: {stats}")?;
    }
    if rejected as usize > shown {
        writeln!(
            err,
            "{} more rejected records not shown",
            group(rejected - shown as u64)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
