//! `periscope clickhouse`: the operator's commands for a ClickHouse scan index — `init`
//! creates the versioned schema on every node of the cluster (idempotent), `status` prints
//! the schema version, the cluster's shards and row counts — and [`connect`], the one place
//! a ClickHouse index is opened for writing (`ingest --index`; `serve` opens it through
//! `periscope-server`, with the same schema check).
//!
//! The index is named by `--index URL` or `[index] url` / `PERISCOPE_INDEX_URL`
//! (`clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]`, see
//! `periscope_clickhouse::location`). A database is read and written only at this build's
//! [`SCHEMA_VERSION`]: one at another version, or holding tables Periscope did not make, is
//! refused by every command, never read as if it were this version.

use std::collections::BTreeSet;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use periscope_clickhouse::{ClickHouseIndex, Client, Location, SCHEMA_VERSION, schema};
use periscope_server::clickhouse::{
    NodeSchema, check_schema, cluster_servers, expected_tables, node_schema,
};

use crate::config::{Config, ConfigArgs, IndexFlags, IndexSettings};
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
    /// Another server of the cluster, as clickhouse://HOST:PORT (the database and cluster
    /// are the index URL's); once per server.
    #[arg(long = "node", value_name = "URL")]
    nodes: Vec<String>,
    #[command(flatten)]
    config: ConfigArgs<IndexFlags>,
}

/// Runs `periscope clickhouse …`.
pub(crate) fn run(command: &Command) -> Result<ExitCode> {
    match command {
        Command::Init(args) => init(args),
        Command::Status(args) => status(args),
    }
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
/// this build's schema version on every server of the cluster
/// (`periscope_server::clickhouse::check_schema`). `ingest` uses it.
pub(crate) fn connect(config: &Config) -> Result<(Location, ClickHouseIndex)> {
    let location = location_of(config)?;
    let client = client(&config.index, &location)?;
    check_schema(&client, &location, &config.index)?;
    let index = ClickHouseIndex::with_client(client, &location.database, config.index_config())
        .with_context(|| format!("ClickHouse at {}", location.endpoint))?;
    Ok((location, index))
}

/// The index location, the location of each node (the index's first), and a client of each.
fn nodes(args: &Args) -> Result<(Location, Vec<(Location, Client)>)> {
    let config = args.config.load()?;
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
