//! The schema, version [`SCHEMA_VERSION`]: three append-only tables on every shard and a
//! Distributed table over each, sharded by address so all of a host's rows live on one shard.
//!
//! - `services_local`: one row per counting observation of a service, keyed by
//!   `(addr, port, protocol)`. The current observation of a service is the row with the
//!   greatest `(observed_at, rank)` — `rank` is the hex of the completed flag and the
//!   service's canonical tie bytes, so the order is exactly `periscope-scan`'s
//!   current-observation rule — taken with `argMax` when reading. Nothing depends on merges:
//!   a plain MergeTree never collapses rows, so every answer is the same before and after
//!   background merges.
//! - `facts_local`: one row per host fact a counting observation carries (`fact` 1 enrichment,
//!   2 location, 3 position, 4 reverse DNS), each with its own `(observed_at, rank)`;
//!   `country` (location), `asns`, `orgs` (the organization sources' words) and `names`
//!   (stored domain and DNS name; reverse-DNS names of IPv4 hosts) are what queries test;
//!   a position row holds its latitude and longitude in whole micro-degrees (`Int32`, the
//!   shared `micro_degrees`, what centroids sum) and its web-mercator tile `x/y` at each
//!   resolution's precision, computed by the shared `tile_of`.
//! - `domain_scans_local`: one row per domain-scan observation; the current record of a name
//!   is the greatest `(observed_at, rank)`.
//!
//! Addresses are `FixedString(16)` holding the big-endian host-order key
//! ([`periscope_model::ip_order_key`]), so ordering by `addr` is the specification's host
//! order. Every row also holds `record`: the hex of the `periscope-scan` codec encoding of
//! what it contributes, from which the engine rebuilds a host's record and answers through
//! the shared per-host code. The other columns are what the matching SQL reads, all derived
//! from that same record when the row is written.
//!
//! [`init`] is idempotent: `IF NOT EXISTS` everywhere, and a `schema_version` table per node
//! that refuses a node holding another version (so a version-1 database is refused with
//! [`SchemaError::Version`], never misread: create the tables in a new database and ingest
//! again).
//!
//! **Why argMax over MergeTree** (not ReplacingMergeTree, not an AggregatingMergeTree of
//! `argMaxState`): ReplacingMergeTree drops older rows only when background merges run, so
//! an answer independent of merge timing needs `FINAL` or `argMax` at read time anyway; an
//! AggregatingMergeTree current-state table still finishes the aggregation over every part
//! at read time (the same rows read until merges collapse them) and doubles the writes. Both
//! only pay off when observations repeat the same services many times (merges then shrink
//! the table); with one row per observed service they read what argMax reads. Measured
//! (docs/benchmarks.md, "ClickHouse"): the time of a page went to reading whole 8,192-row
//! granules for a page's few hosts and to the domain-scan listing, not to argMax, which is
//! why version 2 changed the granularity ([`INDEX_GRANULARITY`]) rather than the engine.
//!
//! History: version 1, default granularity; version 2, [`INDEX_GRANULARITY`]; version 3,
//! positions in micro-degrees (`Int32`) instead of the bytes of an `f64`, so a tile's
//! centroid is a plain `sum` in any order.

use crate::client::{Client, ClientError};
use crate::sql;

/// The version of the tables this build reads and writes.
pub const SCHEMA_VERSION: u32 = 3;

/// Rows per granule (the unit ClickHouse reads) of every local table. Version 1 used the
/// default, 8,192: reading one host's rows (`addr IN (…)`: host detail, and the records of a
/// page's hosts) read a whole granule of every part, ~29k rows and 27 MB for one host at 50k
/// hosts. With 256 a host's rows cost a few hundred rows; full scans (facets, exposure) pay
/// a slightly larger mark file (one mark per 256 rows: 120k marks at 10M hosts).
pub const INDEX_GRANULARITY: u32 = 256;

/// Why the schema could not be created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A statement failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A node holds tables of another schema version.
    #[error("ClickHouse at {url} holds schema version {found}; this build uses {SCHEMA_VERSION}")]
    Version {
        /// The node.
        url: String,
        /// The version it holds.
        found: String,
    },
    /// A database or cluster name is not `[a-z_][a-z0-9_]*`.
    #[error("{0:?} is not a valid ClickHouse identifier (lowercase letters, digits, _)")]
    Identifier(String),
}

/// `database` as an identifier to write into statements, or [`SchemaError::Identifier`].
pub fn database(database: &str) -> Result<&str, SchemaError> {
    sql::identifier(database).ok_or_else(|| SchemaError::Identifier(database.to_owned()))
}

/// The statements creating the tables on one node, in order.
pub fn statements(database: &str, cluster: &str) -> Vec<String> {
    let db = database;
    let local = |name: &str, columns: &str, order: &str| {
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name}_local ({columns}) \
             ENGINE = MergeTree ORDER BY {order} \
             SETTINGS index_granularity = {INDEX_GRANULARITY}"
        )
    };
    let distributed = |name: &str, shard_key: &str| {
        format!(
            "CREATE TABLE IF NOT EXISTS {db}.{name} AS {db}.{name}_local \
             ENGINE = Distributed({cluster}, {db}, {name}_local, {shard_key})"
        )
    };
    vec![
        format!("CREATE DATABASE IF NOT EXISTS {db}"),
        format!("CREATE TABLE IF NOT EXISTS {db}.schema_version (version UInt32) ENGINE = TinyLog"),
        local(
            "services",
            "addr FixedString(16), port UInt16, protocol String, observed_at Int64, \
             rank String, product_words Array(String), product_title String, \
             has_product UInt8, cpe String, cves Array(String), \
             max_cvss Int16, exploit Int8, cert_names Array(String), \
             cert_orgs Array(String), record String",
            "(addr, port, protocol)",
        ),
        local(
            "facts",
            "addr FixedString(16), fact UInt8, observed_at Int64, rank String, \
             country String, asns Array(UInt32), orgs Array(String), names Array(String), \
             lat Int32, lon Int32, tiles Array(String), record String",
            "(addr, fact)",
        ),
        local(
            "domain_scans",
            "name String, observed_at Int64, rank String, addrs Array(FixedString(16)), \
             record String",
            "name",
        ),
        distributed("services", "cityHash64(addr)"),
        distributed("facts", "cityHash64(addr)"),
        distributed("domain_scans", "cityHash64(name)"),
    ]
}

/// Creates (or finds) the schema on every node of the cluster: `nodes` are the nodes'
/// clients, `cluster` the `remote_servers` name listing them.
pub fn init(nodes: &[Client], database: &str, cluster: &str) -> Result<(), SchemaError> {
    let db = self::database(database)?;
    let cluster =
        sql::identifier(cluster).ok_or_else(|| SchemaError::Identifier(cluster.to_owned()))?;
    for node in nodes {
        let all = statements(db, cluster);
        let (setup, tables) = all.split_at(2);
        for statement in setup {
            node.execute(statement)?;
        }
        let found = node.execute(&format!(
            "SELECT toString(version) FROM {db}.schema_version FORMAT TabSeparated"
        ))?;
        let versions: Vec<&str> = found.lines().collect();
        match versions.as_slice() {
            [] => node.execute(&format!(
                "INSERT INTO {db}.schema_version VALUES ({SCHEMA_VERSION})"
            ))?,
            [v] if *v == SCHEMA_VERSION.to_string() => String::new(),
            _ => {
                return Err(SchemaError::Version {
                    url: node.url().to_owned(),
                    found: versions.join(","),
                });
            }
        };
        for statement in tables {
            node.execute(statement)?;
        }
    }
    Ok(())
}
