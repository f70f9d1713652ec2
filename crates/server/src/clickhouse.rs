//! The ClickHouse scan index of a server whose `[index] url` names one: the one place the
//! ClickHouse client is built ([`connect`]), the check that the database holds this build's
//! schema on every server of the cluster ([`check_schema`], which `serve` runs at start and
//! `ingest` before writing), and the probe `/readyz` and `/metrics` read ([`ClickHouseProbe`]).
//!
//! A database at another schema version, or holding tables Periscope did not make, is never
//! read as if it were this version: `serve` refuses to start on it, and the probe reports the
//! index unavailable if such a database appears while it runs. A schema not created yet, or
//! ClickHouse not answering, is not a reason to refuse to start: `/readyz` answers 503 until
//! `periscope clickhouse init` has run and the cluster answers.
//!
//! Nothing a second instance needs lives here: every search goes to ClickHouse, so a server
//! holds no scan data, no index snapshot and no refresher. Readiness is measured off the
//! request path: a task asks ClickHouse every [`PROBE_EVERY`] for the row count of the
//! Distributed `services` table, which reaches every shard, so `/readyz` answers 503
//! `index_unavailable` while any shard (or the node the server talks to) is down or the
//! schema is missing or not this build's, and 200 again as soon as the cluster answers — no restart. The same
//! answer gives `/metrics` its `periscope_index_services` gauge (stored service rows, every
//! observation of a service counting, since ClickHouse keeps each); hosts and generation are
//! reported as 0, as a ClickHouse index has no snapshot generation and counting distinct
//! hosts would scan the whole table every few seconds.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use periscope_api::{IndexGauge, IndexProbe};
use periscope_clickhouse::client::ClientOptions;
use periscope_clickhouse::{ClickHouseIndex, Client, Location, SCHEMA_VERSION, schema, sql};
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
/// with the password from `PERISCOPE_INDEX_PASSWORD` or `password_file`, each statement's
/// memory bounded by `memory_limit_mb`. The one place a ClickHouse client is built from the
/// configuration (`serve`, `ingest`, `clickhouse init`).
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
        memory_limit: settings.memory_limit,
    };
    Client::with_options(&location.endpoint, &options)
        .map_err(|e| anyhow!("[index] url {location}: {e}"))
}

/// [`client_with_timeout`] with `[index] timeout_ms`.
pub fn client(location: &Location, settings: &IndexSettings) -> Result<Client> {
    client_with_timeout(location, settings, settings.timeout)
}

/// Why the index's database cannot be used (yet).
#[derive(Debug, thiserror::Error)]
pub enum SchemaCheckError {
    /// ClickHouse (the node, or another server of the cluster) could not be asked.
    #[error("{0:#}")]
    Unreachable(anyhow::Error),
    /// The schema is not (completely) created yet: `periscope clickhouse init` makes it.
    #[error("{0:#}")]
    Missing(anyhow::Error),
    /// The database holds another schema version or tables Periscope did not make, or the
    /// configuration names no usable cluster: it must not be read.
    #[error("{0:#}")]
    Refused(anyhow::Error),
}

/// Checks through `node` (the index URL's node) that the index's database holds this build's
/// schema version, every table of it and nothing else, and that every server of the cluster
/// records the same version.
pub fn check_schema(
    node: &Client,
    location: &Location,
    settings: &IndexSettings,
) -> Result<(), SchemaCheckError> {
    check_node(node, location)?;
    check_servers(node, location, settings)
}

/// [`check_schema`] on `node` alone: what the readiness probe asks every time.
fn check_node(node: &Client, location: &Location) -> Result<(), SchemaCheckError> {
    let expected = expected_tables(&location.database, &location.cluster);
    let found =
        node_schema(node, &location.database, &expected).map_err(SchemaCheckError::Unreachable)?;
    let refusal = || anyhow!("{}", found.refusal(&location.endpoint, &location.database));
    match &found {
        NodeSchema::Current { missing } if missing.is_empty() => Ok(()),
        NodeSchema::Absent | NodeSchema::Current { .. } => {
            Err(SchemaCheckError::Missing(refusal()))
        }
        NodeSchema::Other(_) | NodeSchema::Unknown(_) => Err(SchemaCheckError::Refused(refusal())),
    }
}

/// `db` as a ClickHouse identifier, or why it is not one.
fn database_identifier(db: &str) -> Result<&str> {
    sql::identifier(db).ok_or_else(|| {
        anyhow!("{db:?} is not a valid ClickHouse database name (lowercase letters, digits, _)")
    })
}

/// Checks, through `node`, that every server of the cluster records this build's schema
/// version (so a database another release made on one shard is refused, not misread).
/// With a user in the URL, `remote()` is given the same credentials (a server checks them as
/// it checks the HTTP interface's).
fn check_servers(
    node: &Client,
    location: &Location,
    settings: &IndexSettings,
) -> Result<(), SchemaCheckError> {
    let credentials = match &location.user {
        Some(user) => format!(
            ", {}, {}",
            sql::string(user),
            sql::string(
                &settings
                    .password()
                    .map_err(|e| SchemaCheckError::Refused(e.into()))?
                    .unwrap_or_default()
            )
        ),
        None => String::new(),
    };
    let db = database_identifier(&location.database).map_err(SchemaCheckError::Refused)?;
    let servers =
        cluster_servers(node, &location.cluster).map_err(SchemaCheckError::Unreachable)?;
    if servers.is_empty() {
        return Err(SchemaCheckError::Refused(anyhow!(
            "ClickHouse at {} has no cluster named {} in its remote_servers: the index's \
             Distributed tables span it",
            location.endpoint,
            location.cluster
        )));
    }
    for (_, server) in servers {
        let answer = node
            .execute(&format!(
                "SELECT toString(version) FROM remote({}, {db}, schema_version{credentials}) \
                 FORMAT TabSeparated",
                sql::string(&server)
            ))
            .with_context(|| {
                format!(
                    "checking the schema version on {server}, server of cluster {} (through \
                     ClickHouse at {}); is it up, and was periscope clickhouse init run with \
                     every node?",
                    location.cluster, location.endpoint
                )
            })
            .map_err(SchemaCheckError::Unreachable)?;
        let versions: Vec<&str> = answer.lines().collect();
        if versions != [SCHEMA_VERSION.to_string().as_str()] {
            let found = NodeSchema::Other(versions.join(","));
            return Err(SchemaCheckError::Refused(anyhow!(
                "{}",
                found.refusal(&server, &location.database)
            )));
        }
    }
    Ok(())
}

/// What a node's database holds.
#[derive(Debug)]
pub enum NodeSchema {
    /// No Periscope table (maybe no database).
    Absent,
    /// This build's version; `missing` are the tables of the schema not (yet) there.
    Current {
        /// The tables of the schema the database lacks.
        missing: Vec<String>,
    },
    /// Another version (recorded in `schema_version`).
    Other(String),
    /// Tables without a version this build can read.
    Unknown(String),
}

impl NodeSchema {
    /// Why a command refuses the database.
    pub fn refusal(&self, url: &str, db: &str) -> String {
        match self {
            Self::Absent => format!(
                "ClickHouse at {url}: database {db} holds no Periscope tables: run periscope \
                 clickhouse init (with every node of the cluster)"
            ),
            Self::Current { missing } => format!(
                "ClickHouse at {url}: database {db} lacks {} of schema version \
                 {SCHEMA_VERSION}: run periscope clickhouse init (with every node of the \
                 cluster)",
                missing.join(", ")
            ),
            Self::Other(found) => {
                let newer = found.parse::<u32>().is_ok_and(|v| v > SCHEMA_VERSION);
                format!(
                    "ClickHouse at {url}: database {db} holds schema version {found}, this build \
                     reads and writes version {SCHEMA_VERSION}{}; it is not read as another \
                     version: use the Periscope release that made it, or another database \
                     (init a new one and ingest again)",
                    if newer {
                        " (a newer Periscope made it)"
                    } else {
                        ""
                    }
                )
            }
            Self::Unknown(what) => format!(
                "ClickHouse at {url}: database {db} holds {what}, not a schema version this \
                 build knows; choose another database"
            ),
        }
    }
}

/// The tables [`schema::statements`] creates, by name.
pub fn expected_tables(db: &str, cluster: &str) -> Vec<String> {
    let prefix = format!("CREATE TABLE IF NOT EXISTS {db}.");
    schema::statements(db, cluster)
        .iter()
        .filter_map(|s| s.strip_prefix(&prefix))
        .filter_map(|rest| rest.split([' ', '(']).next())
        .map(str::to_owned)
        .collect()
}

/// Reads what `db` holds on `node`, without changing anything.
pub fn node_schema(node: &Client, db: &str, expected: &[String]) -> Result<NodeSchema> {
    let ident = database_identifier(db)?;
    let tables: BTreeSet<String> = node
        .execute(&format!(
            "SELECT name FROM system.tables WHERE database = {} FORMAT TabSeparated",
            sql::string(ident)
        ))
        .with_context(|| format!("reading the tables of {db} at {}", node.url()))?
        .lines()
        .map(str::to_owned)
        .collect();
    let missing: Vec<String> = expected
        .iter()
        .filter(|t| !tables.contains(*t))
        .cloned()
        .collect();
    let others: Vec<&String> = tables.iter().filter(|t| !expected.contains(t)).collect();
    if !tables.contains("schema_version") {
        return Ok(if tables.is_empty() {
            NodeSchema::Absent
        } else {
            NodeSchema::Unknown(format!(
                "tables without a schema_version table ({})",
                tables.iter().cloned().collect::<Vec<_>>().join(", ")
            ))
        });
    }
    let answer = node
        .execute(&format!(
            "SELECT toString(version) FROM {ident}.schema_version FORMAT TabSeparated"
        ))
        .with_context(|| format!("reading {db}.schema_version at {}", node.url()))?;
    let versions: Vec<&str> = answer.lines().collect();
    match versions.as_slice() {
        // `init` stopped between making the version table and recording the version.
        [] if tables.len() == 1 => Ok(NodeSchema::Absent),
        [] => Ok(NodeSchema::Unknown(
            "tables and an empty schema_version table".into(),
        )),
        [v] if *v == SCHEMA_VERSION.to_string() => {
            if others.is_empty() {
                Ok(NodeSchema::Current { missing })
            } else {
                Ok(NodeSchema::Unknown(format!(
                    "tables that schema version {SCHEMA_VERSION} does not have ({})",
                    others
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
        [v] => Ok(NodeSchema::Other((*v).to_owned())),
        many => Ok(NodeSchema::Unknown(format!(
            "several schema versions ({})",
            many.join(", ")
        ))),
    }
}

/// The servers of `cluster` as `node`'s `system.clusters` lists them: (shard, host:port).
pub fn cluster_servers(node: &Client, cluster: &str) -> Result<Vec<(u32, String)>> {
    let rows = node
        .rows(&format!(
            "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = {} \
             ORDER BY shard_num, replica_num FORMAT TabSeparated",
            sql::string(cluster)
        ))
        .with_context(|| format!("reading system.clusters at {}", node.url()))?;
    rows.iter()
        .map(|row| match row.as_slice() {
            [shard, host, port] => {
                let text = |f: &[u8]| String::from_utf8_lossy(f).into_owned();
                let shard = text(shard)
                    .parse()
                    .map_err(|_| anyhow!("system.clusters at {}: a shard number", node.url()))?;
                Ok((shard, format!("{}:{}", text(host), text(port))))
            }
            _ => Err(anyhow!(
                "system.clusters at {}: a row of {} fields",
                node.url(),
                row.len()
            )),
        })
        .collect()
}

/// `/readyz` and `/metrics` over a ClickHouse index: the last probe's answer.
#[derive(Debug, Default)]
pub struct ClickHouseProbe {
    ready: AtomicBool,
    services: AtomicU64,
}

impl ClickHouseProbe {
    /// Asks ClickHouse once (blocking) and records the answer: ready when the node holds
    /// this build's schema ([`check_schema`] on that node) and the Distributed `services`
    /// table answers from every shard; the error says why it is not ready.
    pub fn measure(&self, client: &Client, location: &Location) -> Result<()> {
        let answer = check_node(client, location)
            .map_err(anyhow::Error::new)
            .and_then(|()| {
                client
                    .execute(&format!(
                        "SELECT count() FROM {}.services FORMAT TabSeparated",
                        location.database
                    ))
                    .map_err(anyhow::Error::new)
            })
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
    pub async fn watch(self: Arc<Self>, client: Client, location: Location) {
        let mut every = tokio::time::interval(PROBE_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut was_ready = self.ready.load(Ordering::Relaxed);
        loop {
            every.tick().await;
            let (probe, client, location) = (Arc::clone(&self), client.clone(), location.clone());
            let outcome =
                tokio::task::spawn_blocking(move || probe.measure(&client, &location)).await;
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
