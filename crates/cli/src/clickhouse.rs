//! `periscope clickhouse`: the operator's commands for a ClickHouse scan index — `init`
//! creates the versioned schema on every node of the cluster (idempotent), `status` prints
//! the schema version, the cluster's shards and row counts — and [`connect`], the one place
//! a ClickHouse client is built from the configuration (`ingest --index` and, later, `serve`
//! use it).
//!
//! The index is named by `--index URL` or `[index] url` / `PERISCOPE_INDEX_URL`
//! (`clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]`, see
//! `periscope_clickhouse::location`). A database is read and written only at this build's
//! [`SCHEMA_VERSION`]: one at another version, or holding tables Periscope did not make, is
//! refused by every command, never read as if it were this version.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use periscope_clickhouse::{ClickHouseIndex, Client, Location, SCHEMA_VERSION, schema, sql};

use crate::config::{CONFIG_FILE_ENV, Config, IndexSettings, process_env};
use crate::synth::group;

/// `periscope clickhouse …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Create the scan index's tables (this build's schema version) on every node of the cluster: local
    /// tables on each node, Distributed tables over the cluster. Idempotent: a second run
    /// changes nothing and says so. A database at another schema version is refused.
    Init(Args),
    /// Print the schema version of every node given, the cluster's shards and the row
    /// counts. Exit status 1 when a node's schema is missing or not this build's version.
    Status(Args),
}

/// Where the index is: `--index` (or the configuration) and the other nodes.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The index URL is clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME] \
    (HTTP, port 8123 by default) or clickhouse+https://… (port 8443); cluster defaults to \
    periscope, the remote_servers cluster the Distributed tables span. Every server of that \
    cluster must be given: the URL's node and --node for each other one. See \
    docs/configuration.md ([index]) and docs/ingest.md."
)]
pub(crate) struct Args {
    /// The ClickHouse index (overrides index.url of --config and PERISCOPE_INDEX_URL).
    #[arg(long, value_name = "URL")]
    index: Option<String>,
    /// Another server of the cluster, as clickhouse://HOST:PORT (the database and cluster
    /// are the index URL's); once per server.
    #[arg(long = "node", value_name = "URL")]
    nodes: Vec<String>,
    /// Configuration file (TOML) whose index.url names the index; see
    /// docs/configuration.md.
    #[arg(long, value_name = "FILE", env = CONFIG_FILE_ENV)]
    config: Option<PathBuf>,
}

/// Runs `periscope clickhouse …`.
pub(crate) fn run(command: &Command) -> Result<ExitCode> {
    match command {
        Command::Init(args) => init(args),
        Command::Status(args) => status(args),
    }
}

/// The configuration with `--index` applied, and the index location it names.
pub(crate) fn configured(
    config_file: Option<&std::path::Path>,
    index: Option<&str>,
) -> Result<Config> {
    let mut config = Config::load(config_file, process_env)?;
    if let Some(url) = index {
        config.apply_flag("index.url", "--index", url)?;
    }
    Ok(config)
}

fn location_of(config: &Config) -> Result<Location> {
    config.index.url.clone().ok_or_else(|| {
        anyhow!(
            "no ClickHouse index is named: give --index clickhouse://HOST[:PORT]/DATABASE, or \
             set url in the [index] section of the configuration or PERISCOPE_INDEX_URL"
        )
    })
}

/// A client of the node at `location`, as the configuration says (built by
/// `periscope_server::clickhouse::client`, the one place that reads `[index]`'s TLS and
/// credentials).
pub(crate) fn client(settings: &IndexSettings, location: &Location) -> Result<Client> {
    periscope_server::clickhouse::client(location, settings)
}

/// The engine over the index the configuration names, after checking that its database holds
/// this build's schema version (on the node named). `serve` and `ingest` use it.
pub(crate) fn connect(config: &Config) -> Result<(Location, ClickHouseIndex)> {
    let location = location_of(config)?;
    let client = client(&config.index, &location)?;
    let expected = expected_tables(&location.database, &location.cluster);
    match node_schema(&client, &location.database, &expected)? {
        NodeSchema::Current { missing } if missing.is_empty() => {}
        NodeSchema::Current { missing } => bail!(
            "ClickHouse at {}: database {} lacks tables {} of schema version {SCHEMA_VERSION}: \
             run periscope clickhouse init",
            location.endpoint,
            location.database,
            missing.join(", ")
        ),
        other => bail!("{}", other.refusal(&location.endpoint, &location.database)),
    }
    check_servers(&client, &location, &config.index)?;
    let index = ClickHouseIndex::with_client(client, &location.database, config.index_config())
        .with_context(|| format!("ClickHouse at {}", location.endpoint))?;
    Ok((location, index))
}

/// Checks, through `node`, that every server of the cluster records this build's schema
/// version (so a database another release made on one shard is refused, not misread).
/// With a user in the URL, `remote()` is given the same credentials (a server checks them as
/// it checks the HTTP interface's).
fn check_servers(node: &Client, location: &Location, settings: &IndexSettings) -> Result<()> {
    let credentials = match &location.user {
        Some(user) => format!(
            ", {}, {}",
            sql::string(user),
            sql::string(&settings.password()?.unwrap_or_default())
        ),
        None => String::new(),
    };
    let db = sql::identifier(&location.database).ok_or_else(|| {
        anyhow!(
            "{:?} is not a valid ClickHouse database name",
            location.database
        )
    })?;
    let servers = cluster_servers(node, &location.cluster)?;
    if servers.is_empty() {
        bail!(
            "ClickHouse at {} has no cluster named {} in its remote_servers: the index's \
             Distributed tables span it",
            location.endpoint,
            location.cluster
        );
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
            })?;
        let versions: Vec<&str> = answer.lines().collect();
        if versions != [SCHEMA_VERSION.to_string().as_str()] {
            let found = NodeSchema::Other(versions.join(","));
            bail!("{}", found.refusal(&server, &location.database));
        }
    }
    Ok(())
}

/// What a node's database holds.
#[derive(Debug)]
enum NodeSchema {
    /// No Periscope table (maybe no database).
    Absent,
    /// This build's version; `missing` are the tables of the schema not (yet) there.
    Current { missing: Vec<String> },
    /// Another version (recorded in `schema_version`).
    Other(String),
    /// Tables without a version this build can read.
    Unknown(String),
}

impl NodeSchema {
    /// Why a command refuses the database.
    fn refusal(&self, url: &str, db: &str) -> String {
        match self {
            Self::Absent => format!(
                "ClickHouse at {url}: database {db} holds no Periscope tables: run periscope \
                 clickhouse init (with every node of the cluster)"
            ),
            Self::Current { missing } => format!(
                "ClickHouse at {url}: database {db} lacks {} of schema version {SCHEMA_VERSION}",
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
fn expected_tables(db: &str, cluster: &str) -> Vec<String> {
    let prefix = format!("CREATE TABLE IF NOT EXISTS {db}.");
    schema::statements(db, cluster)
        .iter()
        .filter_map(|s| s.strip_prefix(&prefix))
        .filter_map(|rest| rest.split([' ', '(']).next())
        .map(str::to_owned)
        .collect()
}

/// Reads what `db` holds on `node`, without changing anything.
fn node_schema(node: &Client, db: &str, expected: &[String]) -> Result<NodeSchema> {
    let ident = sql::identifier(db).ok_or_else(|| {
        anyhow!("{db:?} is not a valid ClickHouse database name (lowercase letters, digits, _)")
    })?;
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

/// The index location, the location of each node (the index's first), and a client of each.
fn nodes(args: &Args) -> Result<(Location, Vec<(Location, Client)>)> {
    let config = configured(args.config.as_deref(), args.index.as_deref())?;
    let location = location_of(&config)?;
    let mut nodes = vec![location.clone()];
    for node in &args.nodes {
        nodes.push(node_location(node, &location)?);
    }
    let mut seen = BTreeSet::new();
    let mut located = Vec::new();
    for node in nodes {
        if !seen.insert(node.endpoint.clone()) {
            bail!("the node {} is given twice", node.endpoint);
        }
        let client = client(&config.index, &node)?;
        located.push((node, client));
    }
    Ok((location, located))
}

/// A `--node` value as a location: `clickhouse://HOST[:PORT]` takes the index's database and
/// cluster; a full URL must name the same ones.
fn node_location(node: &str, index: &Location) -> Result<Location> {
    let scheme_end = node.find("://").map_or(0, |i| i + 3);
    let has_path = node[scheme_end..].trim_end_matches('/').contains('/');
    let full = if has_path {
        node.to_owned()
    } else {
        format!(
            "{}/{}?cluster={}",
            node.trim_end_matches('/'),
            index.database,
            index.cluster
        )
    };
    let parsed: Location = full.parse().map_err(|e| anyhow!("--node {node}: {e}"))?;
    if parsed.database != index.database || parsed.cluster != index.cluster {
        bail!(
            "--node {node} names database {} of cluster {}, the index is database {} of \
             cluster {}: give the node as clickhouse://HOST[:PORT]",
            parsed.database,
            parsed.cluster,
            index.database,
            index.cluster
        );
    }
    Ok(parsed)
}

/// The servers of `cluster` as `node`'s `system.clusters` lists them: (shard, host:port).
fn cluster_servers(node: &Client, cluster: &str) -> Result<Vec<(u32, String)>> {
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

/// Checks that `cluster` is defined on every node given and has as many servers as were
/// given.
fn check_cluster(location: &Location, nodes: &[(Location, Client)]) -> Result<Vec<(u32, String)>> {
    let cluster = &location.cluster;
    let first = &nodes[0].1;
    let servers = cluster_servers(first, cluster)?;
    if servers.is_empty() {
        bail!(
            "ClickHouse at {} has no cluster named {cluster} in its remote_servers (see \
             system.clusters): the Distributed tables span that cluster; define it on every \
             server, or name the right one with ?cluster=NAME in the index URL",
            first.url()
        );
    }
    let shards: BTreeSet<u32> = servers.iter().map(|s| s.0).collect();
    let listed: Vec<&str> = servers.iter().map(|s| s.1.as_str()).collect();
    if servers.len() != nodes.len() {
        let given: Vec<&str> = nodes.iter().map(|n| n.0.endpoint.as_str()).collect();
        bail!(
            "cluster {cluster} has {} shard{} on {} server{} ({}, native ports as \
             system.clusters at {} lists them) but {} node{} given ({}): every server needs \
             the local tables, so give the index URL's node and --node clickhouse://HOST:PORT \
             (its HTTP port) for each other one",
            shards.len(),
            if shards.len() == 1 { "" } else { "s" },
            servers.len(),
            if servers.len() == 1 { "" } else { "s" },
            listed.join(", "),
            first.url(),
            nodes.len(),
            if nodes.len() == 1 { " was" } else { "s were" },
            given.join(", ")
        );
    }
    for (node, client) in &nodes[1..] {
        let theirs = cluster_servers(client, cluster)?;
        if theirs != servers {
            bail!(
                "ClickHouse at {} lists cluster {cluster} as [{}], {} as [{}]: every server \
                 must define the cluster alike",
                node.endpoint,
                theirs
                    .iter()
                    .map(|s| s.1.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                first.url(),
                listed.join(", ")
            );
        }
    }
    Ok(servers)
}

/// `periscope clickhouse init`.
fn init(args: &Args) -> Result<ExitCode> {
    let (location, nodes) = nodes(args)?;
    let db = &location.database;
    let servers = check_cluster(&location, &nodes)?;
    let expected = expected_tables(db, &location.cluster);
    let mut to_do = Vec::new();
    for (node, client) in &nodes {
        match node_schema(client, db, &expected)? {
            NodeSchema::Current { missing } if missing.is_empty() => {}
            NodeSchema::Absent => to_do.push(format!("{}: created", node.endpoint)),
            NodeSchema::Current { missing } => to_do.push(format!(
                "{}: completed ({} were missing)",
                node.endpoint,
                missing.join(", ")
            )),
            other => bail!("{}", other.refusal(&node.endpoint, db)),
        }
    }
    let shards = servers.iter().map(|s| s.0).collect::<BTreeSet<_>>().len();
    if to_do.is_empty() {
        println!(
            "database {db}: schema version {SCHEMA_VERSION} already on all {} nodes of cluster \
             {} ({shards} shards); nothing changed",
            nodes.len(),
            location.cluster
        );
        return Ok(ExitCode::SUCCESS);
    }
    let clients: Vec<Client> = nodes.iter().map(|n| n.1.clone()).collect();
    schema::init(&clients, db, &location.cluster)
        .with_context(|| format!("creating the schema of database {db}"))?;
    for (node, client) in &nodes {
        match node_schema(client, db, &expected)? {
            NodeSchema::Current { missing } if missing.is_empty() => {}
            other => bail!("after init, {}", other.refusal(&node.endpoint, db)),
        }
    }
    println!(
        "database {db}: schema version {SCHEMA_VERSION} on all {} nodes of cluster {} \
         ({shards} shards)",
        nodes.len(),
        location.cluster
    );
    for line in to_do {
        println!("  {line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `periscope clickhouse status`.
fn status(args: &Args) -> Result<ExitCode> {
    let (location, nodes) = nodes(args)?;
    let db = &location.database;
    let expected = expected_tables(db, &location.cluster);
    let servers = cluster_servers(&nodes[0].1, &location.cluster)?;
    let shards = servers.iter().map(|s| s.0).collect::<BTreeSet<_>>();
    println!(
        "index:    database {db} through {}, cluster {}: {} shards on {} servers ({})",
        location.endpoint,
        location.cluster,
        shards.len(),
        servers.len(),
        servers
            .iter()
            .map(|s| s.1.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut usable = true;
    let tables: Vec<&String> = expected.iter().filter(|t| t.ends_with("_local")).collect();
    for (node, client) in &nodes {
        let state = node_schema(client, db, &expected)?;
        match &state {
            NodeSchema::Current { missing } if missing.is_empty() => {
                let mut counts = Vec::new();
                for table in &tables {
                    counts.push(format!("{} {}", group(count(client, db, table)?), table));
                }
                println!(
                    "node:     {}: schema version {SCHEMA_VERSION}; rows: {}",
                    node.endpoint,
                    counts.join(", ")
                );
            }
            other => {
                usable = false;
                println!("node:     {}", other.refusal(&node.endpoint, db));
            }
        }
    }
    if nodes.len() != servers.len() {
        println!(
            "note:     {} of the cluster's {} servers were given (--node for the others)",
            nodes.len(),
            servers.len()
        );
    }
    if usable {
        let client = &nodes[0].1;
        let mut counts = Vec::new();
        for table in tables {
            let table = table.trim_end_matches("_local");
            counts.push(format!("{} {table}", group(count(client, db, table)?)));
        }
        let hosts = client
            .execute(&format!(
                "SELECT uniqExact(addr) FROM {db}.services FORMAT TabSeparated"
            ))
            .with_context(|| format!("counting hosts at {}", client.url()))?;
        let hosts: u64 = hosts.trim().parse().map_err(|_| {
            anyhow!(
                "ClickHouse at {} answered {hosts:?} to a count",
                client.url()
            )
        })?;
        println!(
            "cluster:  rows: {}; {} addresses with service rows",
            counts.join(", "),
            group(hosts)
        );
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::from(1))
    }
}

fn count(client: &Client, db: &str, table: &str) -> Result<u64> {
    let answer = client
        .execute(&format!(
            "SELECT count() FROM {db}.{table} FORMAT TabSeparated"
        ))
        .with_context(|| format!("counting {db}.{table} at {}", client.url()))?;
    answer.trim().parse().map_err(|_| {
        anyhow!(
            "ClickHouse at {} answered {answer:?} to a count",
            client.url()
        )
    })
}
