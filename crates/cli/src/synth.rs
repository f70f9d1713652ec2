//! `periscope synth`: writes a synthetic dataset (see the `periscope-synth` crate) to a file or
//! standard output and reports what it wrote on standard error.
//!
//! The default `--as-of` is the start of the current UTC day, so a demo dataset is always
//! recent, yet two runs on the same day with the same arguments write identical bytes.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use periscope_model::Timestamp;
use periscope_synth::{MAX_HOSTS, SynthConfig, SynthStats, write_dataset};

/// Arguments of `periscope synth`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The output is deterministic: the same --hosts, --seed and --as-of \
    give a byte-identical file. Without --as-of, the dataset is dated at the start of the \
    current UTC day, so two runs on the same day are identical and a demo is always recent."
)]
pub(crate) struct Args {
    /// Number of hosts (unique addresses) to generate, 1 to 50,000,000.
    #[arg(long, value_name = "N", value_parser = parse_hosts)]
    hosts: u64,
    /// Seed of the generator.
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
    /// The instant the data describes; every observation is dated at or before it
    /// [default: the start of the current UTC day].
    #[arg(long, value_name = "RFC3339|YYYY-MM-DD", value_parser = parse_as_of)]
    as_of: Option<Timestamp>,
    /// Output file ('-' for standard output); an existing file is replaced.
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
}

/// Runs `periscope synth`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let cfg = SynthConfig {
        hosts: args.hosts,
        seed: args.seed,
        as_of: args.as_of.unwrap_or_else(|| now().start_of_day()),
    };
    let started = Instant::now();
    let to_stdout = args.out.as_os_str() == "-";
    let result = if to_stdout {
        write_dataset(&cfg, &mut io::stdout().lock())
    } else {
        let mut file = File::create(&args.out)
            .with_context(|| format!("cannot create {}", args.out.display()))?;
        write_dataset(&cfg, &mut file)
    };
    let stats = match result {
        Ok(stats) => stats,
        // A reader that stopped early (`| head`) is not an error of ours.
        Err(e) if to_stdout && e.kind() == io::ErrorKind::BrokenPipe => {
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            let target = if to_stdout {
                "standard output".to_string()
            } else {
                args.out.display().to_string()
            };
            return Err(e).with_context(|| format!("writing the dataset to {target}"));
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let mut err = io::stderr().lock();
    writeln!(err, "{}", summary(&cfg, &stats, seconds)).ok();
    Ok(ExitCode::SUCCESS)
}

/// The one-line report of a run.
fn summary(cfg: &SynthConfig, s: &SynthStats, seconds: f64) -> String {
    format!(
        "synth: {} records ({} service: {} completed, {} partial, {} failed; {} domain) for {} \
         hosts ({} IPv4, {} IPv6) as of {}, seed {}: {:.1} MB in {:.2} s, {} records/s",
        group(s.records),
        group(s.service_observations),
        group(s.by_status.completed),
        group(s.by_status.partial),
        group(s.by_status.failed),
        group(s.domain_records),
        group(cfg.hosts),
        group(s.hosts_v4),
        group(s.hosts_v6),
        cfg.as_of,
        cfg.seed,
        s.bytes as f64 / 1e6,
        seconds,
        group((s.records as f64 / seconds.max(1e-9)) as u64),
    )
}

/// The current time.
pub(crate) fn now() -> Timestamp {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Timestamp::from_unix(i64::try_from(secs).unwrap_or(i64::MAX))
        .or_else(|| Timestamp::from_unix(0))
        .unwrap_or_else(|| unreachable!("0 is a valid timestamp"))
}

/// Parses a host count: digits, `_` allowed as a separator, 1 to [`MAX_HOSTS`].
pub(crate) fn parse_hosts(s: &str) -> Result<u64, String> {
    let digits: String = s.chars().filter(|c| *c != '_').collect();
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number"))?;
    if n == 0 {
        return Err("there must be at least one host".into());
    }
    if n > MAX_HOSTS {
        return Err(format!("at most {} hosts are supported", group(MAX_HOSTS)));
    }
    Ok(n)
}

/// Parses an RFC 3339 timestamp or a `YYYY-MM-DD` date (its start, UTC).
pub(crate) fn parse_as_of(s: &str) -> Result<Timestamp, String> {
    let text = if s.len() == 10 {
        format!("{s}T00:00:00Z")
    } else {
        s.to_string()
    };
    Timestamp::parse(&text)
        .map_err(|e| format!("{e} (give e.g. 2026-11-20 or 2026-11-20T13:04:11Z)"))
}

/// `1234567` as `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arguments() {
        assert_eq!(parse_hosts("1_000"), Ok(1000));
        assert!(parse_hosts("0").is_err());
        assert!(parse_hosts("-1").is_err());
        assert!(parse_hosts("50000001").is_err());
        assert_eq!(
            parse_as_of("2026-11-20").map(|t| t.to_string()),
            Ok("2026-11-20T00:00:00Z".to_string())
        );
        assert_eq!(
            parse_as_of("2026-11-20T14:04:11+01:00").map(|t| t.to_string()),
            Ok("2026-11-20T13:04:11Z".to_string())
        );
        assert!(parse_as_of("yesterday").is_err());
        assert!(parse_as_of("2026-02-30").is_err());
    }

    #[test]
    fn groups_digits() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
    }
}
