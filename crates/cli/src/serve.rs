//! `periscope serve`: glue from the command line to the server library
//! (`periscope_server`, which wires the API, the browser application, sign-in, the scan index
//! and the state database — see its documentation). This module reads the configuration and
//! the flags, sets up logging, loads the demo dataset into an empty embedded store with
//! `--demo`, starts the server on a multi-thread runtime, prints where it serves (and the demo
//! key, once), and stops it at SIGINT or SIGTERM: accepting stops, requests in flight finish,
//! the refresher stops, the ingest socket is removed and the databases closed.
//!
//! Logs go to standard error, as text or one JSON object per line (`log_format`), at the
//! levels `RUST_LOG` selects (default `info`). No log line carries a request header, body,
//! key, password or cookie.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use periscope_model::Timestamp;
use periscope_server::{DEMO_EMAIL, Options, Server};
use periscope_service::Clock as _;
use periscope_synth::SynthConfig;

use crate::config::{Config, ConfigArgs, LogFormat, ServeFlags};
use crate::ingest::{DEFAULT_BATCH, STORE_FILE, ingest_synthetic};
use crate::synth::group;

pub(crate) use periscope_server::{
    WEB_CLIENT_ID, apply_signin_settings, mail_config, shutdown_signal, web_client_secret,
};

/// Hosts in the demo dataset.
const DEMO_HOSTS: u64 = 200_000;

/// Arguments of `periscope serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "With --demo on a data directory without scan data, a synthetic demo \
    dataset is generated and ingested first, and a demo account with an API key is created; \
    the key is printed once. On a data directory with data, --demo just serves. See \
    docs/configuration.md for every setting and docs/api.md for the API."
)]
pub(crate) struct Args {
    #[command(flatten)]
    config: ConfigArgs<ServeFlags>,
    /// On an empty data directory, generate and ingest demo data and create a demo key.
    #[arg(long)]
    demo: bool,
    /// Hosts of the demo dataset.
    #[arg(long, value_name = "N", default_value_t = DEMO_HOSTS, requires = "demo",
          value_parser = crate::synth::parse_hosts)]
    demo_hosts: u64,
}

/// Runs `periscope serve`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let config = args.config.load()?;
    init_logging(config.log_format)?;
    let demo = args.demo.then_some(args.demo_hosts);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("periscope-serve")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(config, demo))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(config: Config, demo: Option<u64>) -> Result<()> {
    let options = Options {
        demo: demo.is_some(),
        demo_key: false,
    };
    let fresh = if config.index.url.is_some() {
        // With ClickHouse the library refuses --demo with its reason.
        false
    } else {
        periscope_server::private_data_dir(&config.data)?;
        let fresh = demo.is_some() && !has_scan_data(&config.data.join(STORE_FILE))?;
        if let Some(hosts) = demo.filter(|_| fresh) {
            ingest_demo(&config.data, hosts, periscope_service::SystemClock.now())?;
        }
        fresh
    };
    let server = Server::start(
        config,
        Options {
            demo_key: fresh,
            ..options
        },
    )
    .await?;
    let signal = shutdown_signal()?;
    announce(server.address(), server.public_url(), server.demo_key());
    server.run_until(signal).await
}

/// The environment variable holding the log filter.
pub(crate) const LOG_FILTER_ENV: &str = "RUST_LOG";

/// Logs to standard error in `format`, at the levels `RUST_LOG` asks for (default `info`):
/// `warn`, `debug`, or per target such as `info,periscope_api=warn,sqlx=debug`. A filter
/// that does not parse is an error naming the variable.
pub(crate) fn init_logging(format: LogFormat) -> Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = match std::env::var(LOG_FILTER_ENV) {
        Ok(value) if !value.trim().is_empty() => log_filter(&value)?,
        _ => log_filter("info")?,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false);
    // A subscriber set earlier (tests running twice in one process) stays.
    let _ = match format {
        LogFormat::Text => builder.finish().with(filter).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .finish()
            .with(filter)
            .try_init(),
    };
    Ok(())
}

/// Parses a `RUST_LOG`-style filter: comma-separated `level` or `target=level` directives
/// (levels `off`, `error`, `warn`, `info`, `debug`, `trace`).
pub(crate) fn log_filter(value: &str) -> Result<tracing_subscriber::filter::Targets> {
    value.trim().parse().map_err(|e| {
        anyhow!(
            "{LOG_FILTER_ENV}={value:?} is not a log filter ({e}); write a level (error, warn, \
             info, debug, trace, off) or comma-separated target=level directives, such as \
             info,periscope_api=warn"
        )
    })
}

/// Whether the store holds any host (a missing store holds none; a store of the old format is
/// an error, not a missing store).
fn has_scan_data(store_path: &Path) -> Result<bool> {
    periscope_index::durable::refuse_old_format(store_path)?;
    if !store_path.exists() {
        return Ok(false);
    }
    let store = periscope_index::durable::DurableStore::open(store_path)
        .with_context(|| format!("cannot open the scan store {}", store_path.display()))?;
    let stats = store
        .stats()
        .with_context(|| format!("cannot read the scan store {}", store_path.display()))?;
    Ok(stats.hosts > 0)
}

fn ingest_demo(data: &Path, hosts: u64, now: Timestamp) -> Result<()> {
    eprintln!(
        "periscope: no scan data in {}; generating a synthetic demo dataset of {} hosts…",
        data.display(),
        group(hosts)
    );
    let cfg = SynthConfig {
        hosts,
        seed: 1,
        as_of: now.start_of_day(),
    };
    let (_, _, report) = ingest_synthetic(&cfg, data, DEFAULT_BATCH)?;
    eprintln!(
        "periscope: demo data ingested: {} observations in {:.1} s",
        group(report.observations()),
        report.seconds()
    );
    Ok(())
}

fn announce(address: SocketAddr, public_url: &str, demo_key: Option<&str>) {
    let base = format!("http://{address}");
    eprintln!("periscope: serving {base} (Ctrl-C stops); the browser application at {public_url}/");
    if let Some(key) = demo_key {
        eprintln!(
            "periscope: demo account {DEMO_EMAIL}; its API key (shown once, keep it):\n\n    \
             {key}\n\nTry:\n\n    curl -s -H 'Authorization: Bearer {key}' \
             -H 'Content-Type: application/json' -d '{{\"query\":\"port:22\",\"limit\":3}}' \
             {base}/v1/search\n\nThe demo data is synthetic: addresses in 240.0.0.0/4 and \
             3fff::/20, names under .example.\n"
        );
    }
}
