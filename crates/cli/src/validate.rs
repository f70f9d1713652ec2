//! `periscope validate`: reads observation files with the model's `ObservationReader`, exactly
//! as ingest reads them, and reports every rejected line as `FILE:line N: field: reason`.
//!
//! For scanner operators writing their own exporters: run it on a sample of your output before
//! ingesting. It prints the first rejected lines (20 by default), a summary per file of lines
//! read, accepted (service observations by status, domain records) and rejected, and exits
//! with 1 when any line was rejected. Lines are read by the reader `ingest` uses
//! ([`crate::lines`]): lines longer than 1 MiB and lines that are not UTF-8 are rejected
//! before the observation reader sees them, and the rest of the file is still read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use periscope_model::Timestamp;
use periscope_model::observation::{Observation, ScanStatus};

use crate::lines::{ObservationLines, Parsed};
use crate::synth::{group, now};

/// Arguments of `periscope validate`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The reader's clock is the current time: observations dated more than an \
    hour in the future are rejected. Exit status: 0 when every line was accepted, 1 when any \
    line was rejected, 2 when a file could not be read."
)]
pub(crate) struct Args {
    /// Observation files (JSON Lines); '-' reads standard input.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// How many rejected lines to print before only counting them.
    #[arg(long, value_name = "N", default_value_t = 20)]
    max_errors: u64,
}

/// What one file (or all of them) contained.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    lines: u64,
    blank: u64,
    completed: u64,
    partial: u64,
    failed: u64,
    domain: u64,
    rejected: u64,
}

impl Tally {
    fn accepted(&self) -> u64 {
        self.completed + self.partial + self.failed + self.domain
    }

    fn add(&mut self, o: &Tally) {
        self.lines += o.lines;
        self.blank += o.blank;
        self.completed += o.completed;
        self.partial += o.partial;
        self.failed += o.failed;
        self.domain += o.domain;
        self.rejected += o.rejected;
    }

    fn describe(&self) -> String {
        format!(
            "{} lines read: {} accepted ({} service observations: {} completed, {} partial, \
             {} failed; {} domain records), {} rejected, {} blank",
            group(self.lines),
            group(self.accepted()),
            group(self.completed + self.partial + self.failed),
            group(self.completed),
            group(self.partial),
            group(self.failed),
            group(self.domain),
            group(self.rejected),
            group(self.blank),
        )
    }
}

/// Runs `periscope validate`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let now = now();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut total = Tally::default();
    let mut shown = 0u64;
    for path in &args.files {
        let (name, input): (String, Box<dyn Read>) = if path.as_os_str() == "-" {
            ("<stdin>".into(), Box::new(io::stdin().lock()))
        } else {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            (path.display().to_string(), Box::new(file))
        };
        let mut input = BufReader::with_capacity(1 << 20, input);
        let tally = check(
            &name,
            &mut input,
            now,
            &mut out,
            &mut shown,
            args.max_errors,
        )
        .with_context(|| format!("reading {name}"))?;
        writeln!(out, "{name}: {}", tally.describe())?;
        total.add(&tally);
    }
    if args.files.len() > 1 {
        writeln!(out, "total: {}", total.describe())?;
    }
    if total.rejected > shown {
        writeln!(
            out,
            "{} more rejected lines not shown (--max-errors {})",
            group(total.rejected - shown),
            args.max_errors
        )?;
    }
    out.flush()?;
    Ok(if total.rejected > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Reads one input, printing rejected lines while fewer than `max` have been shown.
fn check(
    name: &str,
    input: &mut impl BufRead,
    now: Timestamp,
    out: &mut impl Write,
    shown: &mut u64,
    max: u64,
) -> Result<Tally> {
    if input.fill_buf()?.starts_with(&[0x1f, 0x8b]) {
        bail!(
            "gzip-compressed input is not supported by validate; \
             use `gunzip -c {name} | periscope validate -`"
        );
    }
    let mut lines = ObservationLines::new(input, now);
    let mut tally = Tally::default();
    while let Some(parsed) = lines.next_line()? {
        tally.lines += 1;
        match parsed {
            Parsed::Blank => tally.blank += 1,
            Parsed::Observation(Observation::Service(s)) => match s.status {
                ScanStatus::Completed => tally.completed += 1,
                ScanStatus::Partial => tally.partial += 1,
                ScanStatus::Failed => tally.failed += 1,
            },
            Parsed::Observation(Observation::Domain(_)) => tally.domain += 1,
            Parsed::Rejected(r) => {
                tally.rejected += 1;
                if *shown < max {
                    *shown += 1;
                    writeln!(out, "{name}:line {}: {}: {}", r.line, r.field, r.reason)?;
                }
            }
        }
    }
    Ok(tally)
}
