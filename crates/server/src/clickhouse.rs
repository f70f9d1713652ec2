//! The ClickHouse scan index of a server whose `[index] url` names one: the one place the
//! ClickHouse client is built ([`connect`]), and the probe `/readyz` and `/metrics` read
//! ([`ClickHouseProbe`]).
//!
//! Nothing a second instance needs lives here: every search goes to ClickHouse, so a server
//! holds no scan data, no index snapshot and no refresher. Readiness is measured off the
//! request path: a task asks ClickHouse every [`PROBE_EVERY`] for the row count of the
//! Distributed `services` table, which reaches every shard, so `/readyz` answers 503
//! `index_unavailable` while any shard (or the node the server talks to) is down or the
//! schema is missing, and 200 again as soon as the cluster answers — no restart. The same
//! answer gives `/metrics` its `periscope_index_services` gauge (stored service rows, every
//! observation of a service counting, since ClickHouse keeps each); hosts and generation are
//! reported as 0, as a ClickHouse index has no snapshot generation and counting distinct
//! hosts would scan the whole table every few seconds.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Result, anyhow};
use periscope_api::{IndexGauge, IndexProbe};
use periscope_clickhouse::client::ClientOptions;
use periscope_clickhouse::{ClickHouseIndex, Client, Location};
use periscope_index::IndexConfig;

use crate::config::IndexSettings;

/// How often readiness is measured.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// The longest a readiness probe waits for ClickHouse.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Builds the scan index over the ClickHouse cluster at `location`, and a client of the same
/// node for the readiness probe.
pub fn connect(
    location: &Location,
    settings: &IndexSettings,
    config: IndexConfig,
) -> Result<(ClickHouseIndex, Client)> {
    let client = client(location, settings)?;
    let probe = client_with_timeout(location, settings, settings.timeout.min(PROBE_TIMEOUT))?;
    let index = ClickHouseIndex::with_client(client, &location.database, config)?;
    Ok((index, probe))
}

/// A client of the node `location` names, as `[index]` says: each statement bounded by
/// `timeout`, an `https` endpoint trusting the platform's roots plus `ca_file`, the URL's user
/// with the password from `PERISCOPE_INDEX_PASSWORD` or `password_file`. The one place a
/// ClickHouse client is built from the configuration (`serve`, `ingest`, `clickhouse init`).
pub fn client_with_timeout(
    location: &Location,
    settings: &IndexSettings,
    timeout: Duration,
) -> Result<Client> {
    let options = ClientOptions {
        timeout,
        ca_file: settings.ca_file.clone(),
        user: location.user.clone(),
        password: settings.password()?,
    };
    Client::with_options(&location.endpoint, &options)
        .map_err(|e| anyhow!("[index] url {location}: {e}"))
}

/// [`client_with_timeout`] with `[index] timeout_ms`.
pub fn client(location: &Location, settings: &IndexSettings) -> Result<Client> {
    client_with_timeout(location, settings, settings.timeout)
}

/// `/readyz` and `/metrics` over a ClickHouse index: the last probe's answer.
#[derive(Debug, Default)]
pub struct ClickHouseProbe {
    ready: AtomicBool,
    services: AtomicU64,
}

impl ClickHouseProbe {
    /// Asks ClickHouse once (blocking) and records the answer; the error says why it is not
    /// ready.
    pub fn measure(&self, client: &Client, database: &str) -> Result<()> {
        let answer = client
            .execute(&format!(
                "SELECT count() FROM {database}.services FORMAT TabSeparated"
            ))
            .map_err(anyhow::Error::new)
            .and_then(|text| {
                text.trim()
                    .parse::<u64>()
                    .map_err(|_| anyhow!("ClickHouse answered {text:?} to a row count"))
            });
        match answer {
            Ok(services) => {
                self.services.store(services, Ordering::Relaxed);
                self.ready.store(true, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                self.ready.store(false, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    /// Measures every [`PROBE_EVERY`] until the task is aborted, logging each change between
    /// ready and not ready once.
    pub async fn watch(self: Arc<Self>, client: Client, database: String) {
        let mut every = tokio::time::interval(PROBE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut was_ready = self.ready.load(Ordering::Relaxed);
        loop {
            every.tick().await;
            let (probe, client, database) = (Arc::clone(&self), client.clone(), database.clone());
            let outcome =
                tokio::task::spawn_blocking(move || probe.measure(&client, &database)).await;
            let now_ready = matches!(outcome, Ok(Ok(())));
            if now_ready != was_ready {
                match outcome {
                    Ok(Ok(())) => tracing::info!("the ClickHouse index answers again"),
                    Ok(Err(e)) => {
                        tracing::error!(error = %format!("{e:#}"), "the ClickHouse index is unavailable");
                    }
                    Err(e) => tracing::error!(error = %e, "the readiness probe failed"),
                }
                was_ready = now_ready;
            }
        }
    }
}

impl IndexProbe for ClickHouseProbe {
    fn gauge(&self) -> IndexGauge {
        IndexGauge {
            hosts: 0,
            services: self.services.load(Ordering::Relaxed),
            generation: 0,
        }
    }

    fn ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}
