//! `periscope clickhouse init/status` and `periscope ingest --index clickhouse://…`, run as
//! the real binary against ClickHouse servers the tests start (two shards of one cluster, see
//! `periscope_clickhouse::testing`): the schema is created on every node, a second init
//! changes nothing, a database at another schema version is refused; ingest of a synthetic
//! dataset and of the importers' scanner fixtures gives the same answers through
//! `ClickHouseIndex` as the embedded store the same ingest makes (searches page by page,
//! counts, facets, host details, domain scans), with the same rejection report; ClickHouse
//! stopping mid-ingest stops the run with an error naming the server, and running the same
//! command again after the restart completes it with the same answers.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, SystemTime};

use common::{command, failed, ok, periscope, scratch, text, without_index_env};
use periscope_clickhouse::testing::Cluster;
use periscope_clickhouse::{ClickHouseIndex, SCHEMA_VERSION};
use periscope_index::api::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_index::durable::DurableStore;
use periscope_index::{EmbeddedIndex, IndexConfig};
use periscope_model::Timestamp;
use periscope_query::{Query, Resolution};

/// The ports of the ZGrab2 fixture's scans (ZGrab2 does not record them).
const ZGRAB2_PORTS: [&str; 4] = ["--port", "http=443", "--port", "22"];

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../import/tests/fixtures");

fn start(test: &str) -> Option<(Cluster, PathBuf)> {
    let dir = scratch(test);
    let cluster = Cluster::start(2, &dir)?;
    Some((cluster, dir))
}

/// `clickhouse://127.0.0.1:PORT` of node `i`.
fn node(cluster: &Cluster, i: usize) -> String {
    cluster.urls()[i].replace("http://", "clickhouse://")
}

fn index_url(cluster: &Cluster, db: &str) -> String {
    format!("{}/{db}", node(cluster, 0))
}

fn init(cluster: &Cluster, db: &str) -> Output {
    let url = index_url(cluster, db);
    let other = node(cluster, 1);
    without_index_env(&["clickhouse", "init", "--index", &url, "--node", &other])
}

fn query_one(cluster: &Cluster, i: usize, sql: &str) -> String {
    cluster.clients()[i].execute(sql).unwrap().trim().to_owned()
}

#[test]
fn init_creates_the_schema_on_every_node_once_and_refuses_other_versions() {
    let Some((cluster, dir)) = start("ch_init") else {
        return;
    };
    let url = index_url(&cluster, "scans");

    // One node of a two-shard cluster is not enough: what is missing is said.
    let err = failed(&without_index_env(&["clickhouse", "init", "--index", &url]));
    assert!(
        err.contains("cluster periscope has 2 shards") && err.contains("but 1 node was given"),
        "{err}"
    );
    assert_eq!(
        query_one(
            &cluster,
            0,
            "SELECT count() FROM system.databases WHERE name = 'scans'"
        ),
        "0",
        "nothing is created when nodes are missing"
    );

    let first = ok(&init(&cluster, "scans"));
    assert!(
        first.contains(&format!("schema version {SCHEMA_VERSION} on all 2 nodes")),
        "{first}"
    );
    assert_eq!(first.matches(": created").count(), 2, "{first}");
    let tables = "SELECT name FROM system.tables WHERE database = 'scans' ORDER BY name";
    let created: Vec<String> = (0..2).map(|i| query_one(&cluster, i, tables)).collect();
    for (i, names) in created.iter().enumerate() {
        for table in [
            "schema_version",
            "services",
            "services_local",
            "facts_local",
            "domain_scans",
        ] {
            assert!(
                names.lines().any(|n| n == table),
                "node {i} lacks {table}: {names}"
            );
        }
    }
    let modified = "SELECT name, metadata_modification_time FROM system.tables \
                    WHERE database = 'scans' ORDER BY name";
    let before: Vec<String> = (0..2).map(|i| query_one(&cluster, i, modified)).collect();

    // A second run finds everything and changes nothing.
    let second = ok(&init(&cluster, "scans"));
    assert!(second.contains("nothing changed"), "{second}");
    let after: Vec<String> = (0..2).map(|i| query_one(&cluster, i, modified)).collect();
    assert_eq!(before, after);
    for i in 0..2 {
        assert_eq!(
            query_one(
                &cluster,
                i,
                "SELECT toString(version) FROM scans.schema_version"
            ),
            SCHEMA_VERSION.to_string()
        );
    }
    let other = node(&cluster, 1);
    let status = ok(&without_index_env(&[
        "clickhouse",
        "status",
        "--index",
        &url,
        "--node",
        &other,
    ]));
    assert!(status.contains("2 shards on 2 servers"), "{status}");
    assert_eq!(
        status
            .matches(&format!("schema version {SCHEMA_VERSION}; rows: 0"))
            .count(),
        2,
        "{status}"
    );

    // A database a newer Periscope made (version recorded on the second node) is refused by
    // init, status and ingest, and left as it is.
    ok(&init(&cluster, "newer"));
    let newer = SCHEMA_VERSION + 1;
    let node2 = &cluster.clients()[1];
    node2.execute("DROP TABLE newer.schema_version").unwrap();
    node2
        .execute("CREATE TABLE newer.schema_version (version UInt32) ENGINE = TinyLog")
        .unwrap();
    node2
        .execute(&format!(
            "INSERT INTO newer.schema_version VALUES ({newer})"
        ))
        .unwrap();
    let err = failed(&init(&cluster, "newer"));
    assert!(
        err.contains(&format!("database newer holds schema version {newer}"))
            && err.contains("a newer Periscope made it")
            && err.contains(&cluster.urls()[1]),
        "{err}"
    );
    let url_newer = format!("{}/newer", node(&cluster, 1));
    let out = without_index_env(&["clickhouse", "status", "--index", &url_newer]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains(&format!("schema version {newer}")));
    let synth = dir.join("synth.jsonl");
    ok(&periscope(&[
        "synth",
        "--hosts",
        "20",
        "--out",
        synth.to_str().unwrap(),
    ]));
    // Through either node: the first node's version is checked, and every server's.
    for url in [url_newer.clone(), index_url(&cluster, "newer")] {
        let err = failed(&without_index_env(&[
            "ingest",
            "--index",
            &url,
            synth.to_str().unwrap(),
        ]));
        assert!(
            err.contains(&format!("holds schema version {newer}")),
            "{err}"
        );
    }
    assert_eq!(
        query_one(&cluster, 0, "SELECT count() FROM newer.services_local"),
        "0"
    );
    assert_eq!(
        query_one(&cluster, 1, "SELECT count() FROM newer.services_local"),
        "0"
    );

    // Tables Periscope did not make are not taken for a schema.
    node2.execute("CREATE DATABASE foreign").unwrap();
    node2
        .execute("CREATE TABLE foreign.t (x UInt8) ENGINE = TinyLog")
        .unwrap();
    let err = failed(&init(&cluster, "foreign"));
    assert!(
        err.contains("not a schema version this build knows"),
        "{err}"
    );

    // Ingest into a database without the schema says what to run.
    let err = failed(&without_index_env(&[
        "ingest",
        "--index",
        &index_url(&cluster, "empty"),
        synth.to_str().unwrap(),
    ]));
    assert!(err.contains("run periscope clickhouse init"), "{err}");
}

/// The inputs: a synthetic dataset, every scanner fixture, and a file with bad lines.
fn inputs(dir: &Path, hosts: u64) -> Vec<String> {
    let synth = dir.join("synth.jsonl");
    ok(&periscope(&[
        "synth",
        "--hosts",
        &hosts.to_string(),
        "--seed",
        "5",
        "--out",
        synth.to_str().unwrap(),
    ]));
    let text = std::fs::read_to_string(&synth).unwrap();
    let good: Vec<&str> = text.lines().take(3).collect();
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        format!(
            "{}\nnot json\n{{\"kind\":\"service\"}}\n\n{}\n{}\n",
            good[0],
            good[1].replace("\"port\":", "\"port\":700000,\"x\":"),
            good[2]
        ),
    )
    .unwrap();
    let mut files = vec![synth.display().to_string(), bad.display().to_string()];
    for fixture in [
        "nmap.xml",
        "masscan.json",
        "masscan.xml",
        "zgrab2.jsonl",
        "shodan.jsonl",
        "censys.jsonl",
    ] {
        files.push(format!("{FIXTURES}/{fixture}"));
    }
    files
}

/// The summary lines that must be the same whichever index the batches went to.
fn comparable(summary: &str) -> Vec<String> {
    let mut kept = Vec::new();
    let mut rejections = false;
    for line in summary.lines() {
        rejections |= line.starts_with("rejected lines");
        if rejections
            || line.starts_with("lines read:")
            || line.starts_with("scanner records:")
            || line.starts_with("not mapped")
        {
            kept.push(line.to_owned());
        } else if let Some(observations) = line.strip_prefix("observations:") {
            // Without the rate.
            kept.push(observations.split("),").next().unwrap().to_owned());
        }
    }
    kept
}

fn now() -> Timestamp {
    let secs = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Timestamp::from_unix(i64::try_from(secs).unwrap()).unwrap()
}

fn embedded(data: &Path, at: Timestamp) -> EmbeddedIndex {
    let store = DurableStore::open(&data.join("scan.store")).unwrap();
    EmbeddedIndex::from_store(&store, IndexConfig::default(), at).unwrap()
}

fn clickhouse(cluster: &Cluster, db: &str) -> ClickHouseIndex {
    ClickHouseIndex::new(
        &cluster.urls()[0],
        db,
        IndexConfig::default(),
        Duration::from_secs(60),
    )
    .unwrap()
}

/// Every page of `query`'s search from both; the hosts seen.
fn same_search(
    at: Timestamp,
    reference: &EmbeddedIndex,
    engine: &ClickHouseIndex,
    query: &Query,
) -> Vec<IpAddr> {
    let mut after = None;
    let mut seen = Vec::new();
    loop {
        let req = SearchRequest {
            query,
            after,
            limit: 7,
            resolved: &[],
            now: at,
        };
        let expected = reference.search(&req).unwrap();
        assert_eq!(
            engine.search(&req).unwrap(),
            expected,
            "search {query} after {after:?}"
        );
        let SearchOutcome::Page(page) = expected else {
            return seen;
        };
        seen.extend(page.hosts.iter().map(|h| h.host.ip));
        if !page.has_more {
            return seen;
        }
        after = seen.last().copied();
    }
}

/// The two indexes answer alike; returns how many hosts the searches found.
fn same_answers(reference: &EmbeddedIndex, engine: &ClickHouseIndex, at: Timestamp) -> usize {
    let mut queries: Vec<String> = [
        "port:22",
        "port:443",
        "port:80",
        "protocol:ssh",
        "exploit:yes",
        "cvss:7.0-10.0",
        "country:US port:443",
        "product:\"nginx\"",
        "certificate.name:www.northwind.example",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    // Queries from the data: a few hosts' addresses, networks and ASNs.
    let sample = same_search(
        at,
        reference,
        engine,
        &periscope_query::parse("port:443").unwrap(),
    );
    for ip in sample.iter().step_by(5).take(4) {
        queries.push(ip.to_string());
        if let IpAddr::V4(v4) = ip {
            let [a, b, c, _] = v4.octets();
            queries.push(format!("cidr:{a}.{b}.{c}.0/24"));
        }
        let detail = reference.host_detail(*ip, None, 100, at).unwrap().unwrap();
        if let Some(network) = &detail.host.network {
            queries.push(format!("asn:{}", network.asn.get()));
        }
    }
    let mut found = 0;
    let mut hosts = Vec::new();
    for q in &queries {
        let query = periscope_query::parse(q).unwrap();
        let seen = same_search(at, reference, engine, &query);
        found += seen.len();
        hosts.extend(seen.into_iter().take(3));
        if matches!(query, Query::Filter(_) | Query::Asn(_)) {
            assert_eq!(
                engine.count(&query, at).unwrap(),
                reference.count(&query, at).unwrap(),
                "count {q}"
            );
            assert_eq!(
                engine.exposure(&query, Resolution::Regional, at).unwrap(),
                reference
                    .exposure(&query, Resolution::Regional, at)
                    .unwrap(),
                "exposure {q}"
            );
        }
        if let Some(filter) = query.as_filter() {
            assert_eq!(
                engine.facets(filter, at).unwrap(),
                reference.facets(filter, at).unwrap(),
                "facets {q}"
            );
        }
    }
    for ip in hosts {
        assert_eq!(
            engine.host_detail(ip, None, 3, at).unwrap(),
            reference.host_detail(ip, None, 3, at).unwrap(),
            "host detail {ip}"
        );
        assert_eq!(
            engine.domain_scans_of_address(ip).unwrap(),
            reference.domain_scans_of_address(ip).unwrap(),
            "domain scans listing {ip}"
        );
    }
    found
}

#[test]
fn ingest_into_clickhouse_answers_as_the_embedded_store_with_the_same_report() {
    let Some((cluster, dir)) = start("ch_ingest") else {
        return;
    };
    ok(&init(&cluster, "scans"));
    let files = inputs(&dir, 400);
    let data = dir.join("data");
    let url = index_url(&cluster, "scans");
    let mut args: Vec<&str> = vec!["ingest", "--batch", "300", "--data", data.to_str().unwrap()];
    args.extend(ZGRAB2_PORTS);
    args.extend(files.iter().map(String::as_str));
    let local = ok(&without_index_env(&args));
    let mut args: Vec<&str> = vec!["ingest", "--batch", "300", "--index", &url];
    args.extend(ZGRAB2_PORTS);
    args.extend(files.iter().map(String::as_str));
    let remote = ok(&without_index_env(&args));
    assert!(
        remote.contains("index:             ClickHouse at"),
        "{remote}"
    );
    assert!(
        local.contains("rejected lines (skipped"),
        "the bad lines are reported: {local}"
    );
    assert_eq!(comparable(&remote), comparable(&local));

    let at = now();
    let reference = embedded(&data, at);
    let engine = clickhouse(&cluster, "scans");
    let found = same_answers(&reference, &engine, at);
    assert!(found > 100, "the queries found {found} hosts");

    // Ingesting the same files again writes every row twice and changes no answer.
    ok(&without_index_env(&args));
    assert_eq!(same_answers(&reference, &engine, at), found);

    // The configuration's [index] url is used when --index is not given.
    ok(&init(&cluster, "configured"));
    let config = dir.join("periscope.toml");
    std::fs::write(
        &config,
        format!("[index]\nurl = \"{}\"\n", index_url(&cluster, "configured")),
    )
    .unwrap();
    let mut args: Vec<&str> = vec!["ingest", "--config", config.to_str().unwrap()];
    args.extend(ZGRAB2_PORTS);
    args.extend(files.iter().map(String::as_str));
    let configured = ok(&without_index_env(&args));
    assert_eq!(comparable(&configured), comparable(&local));
    assert_eq!(
        same_answers(&reference, &clickhouse(&cluster, "configured"), at),
        found
    );
}

#[test]
fn ingest_stopped_by_a_clickhouse_outage_fails_clearly_and_a_rerun_completes_it() {
    let Some((mut cluster, dir)) = start("ch_outage") else {
        return;
    };
    ok(&init(&cluster, "scans"));
    let files = inputs(&dir, 3000);
    let synth = &files[0];
    let data = dir.join("data");
    ok(&without_index_env(&[
        "ingest",
        "--data",
        data.to_str().unwrap(),
        synth,
    ]));
    let url = index_url(&cluster, "scans");
    let args = ["ingest", "--batch", "100", "--index", &url, synth];

    // The second shard stops once the first batch is acknowledged.
    let mut cmd = command(&[&args[..], &["--log-batches"]].concat());
    let mut child = cmd
        .env_remove("PERISCOPE_INDEX_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no batch acknowledged: {log}"
        );
        log.push_str(&line);
        if line.starts_with("ingest: batch 1 acknowledged") {
            break;
        }
    }
    cluster.stop(1);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{log}{rest}");
    let error = rest
        .lines()
        .find(|l| l.starts_with("periscope: error:"))
        .unwrap_or_else(|| panic!("{rest}"));
    assert!(
        error.contains("ingest stopped after")
            && error.contains(
                "they stay in ClickHouse; running the same command again completes the ingest"
            )
            && error.contains(&format!(
                "writing to ClickHouse at {} (database scans)",
                cluster.urls()[0]
            )),
        "{error}"
    );
    let acknowledged: u64 = error
        .split("ingest stopped after ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    let lines = std::fs::read_to_string(synth).unwrap().lines().count() as u64;
    assert!(
        (100..lines).contains(&acknowledged),
        "{acknowledged} of {lines}: {error}"
    );

    // The node the URL names stopped: it is named as unreachable.
    cluster.restart(1);
    cluster.stop(0);
    let err = failed(&without_index_env(&args));
    assert!(
        err.contains(&format!(
            "ClickHouse at {} cannot be reached",
            cluster.urls()[0]
        )),
        "{err}"
    );

    // Back up: the same command completes the ingest, with the embedded answers.
    cluster.restart(0);
    ok(&without_index_env(&args));
    let at = now();
    let found = same_answers(&embedded(&data, at), &clickhouse(&cluster, "scans"), at);
    assert!(found > 100, "the queries found {found} hosts");
}
