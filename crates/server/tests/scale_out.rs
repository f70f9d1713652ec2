//! Stateless serving over ClickHouse and PostgreSQL: servers started in process with
//! [`Server::start`], on one PostgreSQL database (a fresh one per test, at
//! `PERISCOPE_TEST_POSTGRES_URL`, default `postgres://postgres@127.0.0.1:5432/postgres`) and
//! one two-shard ClickHouse cluster the test starts (`periscope_clickhouse::testing`), holding
//! a synthetic dataset written with `ClickHouseIndex::insert`.
//!
//! - Two servers: a cursor issued by one is honoured once by the other and then refused by
//!   both (410 `cursor_gone`); a daily allowance of 10 under 40 concurrent searches spread
//!   over both is spent exactly: 10 answers, 30 × 429 `search_limit_reached`.
//! - The browser's result pages across two servers: page 1 on A, Next on B (one charge),
//!   Previous on B and on A show page 1 again, free (the pages shown are in the state
//!   database). The session is made in the state database, as a sign-in would make it: the
//!   sign-in itself is tested in `crates/signin` and `crates/web`.
//! - A ClickHouse shard stopped mid-run: `/readyz` says 503 `index_unavailable`, a search is
//!   503 `service_unavailable` with nothing charged and its cursor kept; once the shard is
//!   back the server answers again (no restart) and the kept cursor is honoured.
//!
//! - The schema: a server started before `periscope clickhouse init` has run answers
//!   `/readyz` 503 until it has, then 200 (no restart); a database recording another schema
//!   version is refused at start, and one that comes to record another version while a
//!   server runs makes `/readyz` 503 (it is never read as this version).
//!
//! Without clickhouse-server or PostgreSQL the tests say SKIPPED (and fail under `CI=true`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use periscope_clickhouse::testing::{CLUSTER, Cluster};
use periscope_clickhouse::{ClickHouseIndex, Location, schema};
use periscope_index::IndexConfig;
use periscope_server::lines::{ObservationLines, Parsed};
use periscope_server::{Config, Options, RunningServer, Server};
use periscope_service::{Clock as _, SystemClock};
use periscope_state::{DailyLimit, Email, NewAccount, State};
use periscope_synth::SynthConfig;
use serde_json::Value;
use sqlx::{ConnectOptions, Connection, Executor, postgres::PgConnectOptions};

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const DATABASE: &str = "scale";
const QUERY: &str = "port:22";

fn unique(test: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{test}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(unique(test));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `url` with its database replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority = base.find("://").unwrap() + 3;
    let base = match base[authority..].find('/') {
        Some(slash) => &base[..authority + slash],
        None => base,
    };
    format!("{base}/{database}{query}")
}

/// A fresh PostgreSQL database's URL, or `None` (outside CI only) when none can be made.
async fn postgres(test: &str) -> Option<String> {
    let admin = std::env::var("PERISCOPE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into());
    let name = format!("periscope_scale_{}", unique(test).to_lowercase());
    let created = async {
        let mut conn = PgConnectOptions::from_str(&admin)?.connect().await?;
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await?;
        conn.close().await
    }
    .await;
    match created {
        Ok(()) => Some(with_database(&admin, &name)),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("[{test}] PostgreSQL at {admin} is unusable, and CI requires it: {e}")
        }
        Err(e) => {
            eprintln!("\n*** [{test}] SKIPPED: PostgreSQL at {admin} is unusable ({e}) ***\n");
            None
        }
    }
}

/// A two-shard cluster holding the schema and a synthetic dataset of 600 hosts.
fn cluster(root: &std::path::Path) -> Option<Cluster> {
    let cluster = Cluster::start(2, root)?;
    schema::init(&cluster.clients(), DATABASE, CLUSTER).unwrap();
    let now = SystemClock.now();
    let mut lines = Vec::new();
    periscope_synth::write_dataset(
        &SynthConfig {
            hosts: 600,
            seed: 7,
            as_of: now.start_of_day(),
        },
        &mut lines,
    )
    .unwrap();
    let mut reader = ObservationLines::new(&lines[..], now);
    let mut observations = Vec::new();
    while let Some(parsed) = reader.next_line().unwrap() {
        if let Parsed::Observation(obs) = parsed {
            observations.push(obs);
        }
    }
    let index = ClickHouseIndex::new(
        &cluster.urls()[0],
        DATABASE,
        IndexConfig::default(),
        Duration::from_secs(30),
    )
    .unwrap();
    index.insert(&observations).unwrap();
    Some(cluster)
}

/// A server on `node` of the cluster and the PostgreSQL state database `database_url`.
async fn start(dir: &std::path::Path, node: &str, database_url: &str) -> RunningServer {
    start_on(dir, node, DATABASE, database_url).await.unwrap()
}

/// A server on ClickHouse database `database` through `node`, or why it would not start.
async fn start_on(
    dir: &std::path::Path,
    node: &str,
    database: &str,
    database_url: &str,
) -> anyhow::Result<RunningServer> {
    let mut config = Config {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        data: dir.to_owned(),
        database_url: Some(database_url.to_owned()),
        ..Config::default()
    };
    let location = format!(
        "clickhouse://{}/{database}",
        node.trim_start_matches("http://")
    );
    config.index.url = Some(Location::from_str(&location).unwrap());
    config.limits.searches_per_account = 64;
    config.limits.searches_total = 128;
    Server::start(config, Options::default()).await
}

/// A new account with `limit` and its key.
async fn account(database_url: &str, email: &str, limit: DailyLimit) -> String {
    let state = State::open(database_url).await.unwrap();
    let mut new = NewAccount::new(Email::parse(email).unwrap(), "Scale test");
    new.daily_limit = limit;
    let now = SystemClock.now();
    let account = state.create_account(&new, now).await.unwrap();
    let (key, _) = state.create_key(account.id, None, now).await.unwrap();
    state.close().await;
    key.expose().to_owned()
}

/// One HTTP/1.1 exchange: (status, body as JSON).
fn http(
    address: SocketAddr,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").unwrap().1;
    let json = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"));
    (status, json)
}

fn search(address: SocketAddr, key: &str, limit: u32, cursor: Option<&str>) -> (u16, Value) {
    let cursor = cursor.map_or(String::new(), |c| format!(r#","cursor":"{c}""#));
    let body = format!(r#"{{"query":"{QUERY}","limit":{limit}{cursor}}}"#);
    http(address, "POST", "/v1/search", Some(key), &body)
}

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("(none)")
}

fn addresses(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ip"].as_str().unwrap().to_owned())
        .collect()
}

fn used(address: SocketAddr, key: &str) -> u64 {
    let (status, body) = http(address, "GET", "/v1/allowance", Some(key), "");
    assert_eq!(status, 200, "{body}");
    body["allowance"]["used"].as_u64().unwrap()
}

/// Polls `/readyz` until it answers `status`, for at most 20 s.
fn ready_becomes(address: SocketAddr, status: u16, word: &str) {
    let started = Instant::now();
    loop {
        let (got, body) = http(address, "GET", "/readyz", None, "");
        if got == status && body["status"] == word {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "/readyz still answers {got} {body} rather than {status} {word}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

/// What every test here starts from: a runtime, its scratch directory, a fresh PostgreSQL
/// database and a two-shard cluster holding the synthetic hosts.
struct Setup {
    rt: tokio::runtime::Runtime,
    dir: PathBuf,
    database_url: String,
    cluster: Cluster,
}

/// [`Setup`] for `test`, or `None` (after saying so) when PostgreSQL or ClickHouse is missing
/// outside CI.
fn setup(test: &str) -> Option<Setup> {
    let rt = runtime();
    let dir = scratch(test);
    let database_url = rt.block_on(postgres(test))?;
    let cluster = cluster(&dir)?;
    Some(Setup {
        rt,
        dir,
        database_url,
        cluster,
    })
}

#[test]
fn two_servers_share_cursors_and_the_daily_allowance_exactly() {
    let Some(Setup {
        rt,
        dir,
        database_url,
        cluster,
    }) = setup("two_servers")
    else {
        return;
    };
    let urls = cluster.urls();
    let a = rt.block_on(start(&dir.join("a"), &urls[0], &database_url));
    // The second server talks to the other node: any node of the cluster serves.
    let b = rt.block_on(start(&dir.join("b"), &urls[1], &database_url));
    let (at_a, at_b) = (a.address(), b.address());
    ready_becomes(at_a, 200, "ready");
    ready_becomes(at_b, 200, "ready");

    // A cursor from A is honoured once by B, then refused by both.
    let key = rt.block_on(account(
        &database_url,
        "cursor@scale.example",
        DailyLimit::Unlimited,
    ));
    let (status, first) = search(at_a, &key, 5, None);
    assert_eq!(status, 200, "{first}");
    let page1 = addresses(&first);
    assert_eq!(page1.len(), 5, "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("more than 5 hosts match")
        .to_owned();
    let (status, second) = search(at_b, &key, 5, Some(&cursor));
    assert_eq!(status, 200, "{second}");
    let page2 = addresses(&second);
    assert!(!page2.is_empty(), "{second}");
    assert!(
        page2.iter().all(|ip| !page1.contains(ip)),
        "{page1:?} {page2:?}"
    );
    // The whole first ten hosts, in order, are what one server answers for limit 10.
    let (_, whole) = search(at_b, &key, 10, None);
    let expected: Vec<String> = page1.iter().chain(&page2).cloned().collect();
    assert_eq!(addresses(&whole)[..expected.len()], expected[..]);
    for address in [at_a, at_b] {
        let (status, replay) = search(address, &key, 5, Some(&cursor));
        assert_eq!((status, code(&replay)), (410, "cursor_gone"), "{replay}");
    }

    // A daily allowance of 10 under 40 concurrent searches alternating over A and B.
    let key = rt.block_on(account(
        &database_url,
        "allowance@scale.example",
        DailyLimit::Limited(10),
    ));
    let outcomes: Vec<(u16, String)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..40)
            .map(|i| {
                let (address, key) = (if i % 2 == 0 { at_a } else { at_b }, key.as_str());
                scope.spawn(move || {
                    let (status, body) = search(address, key, 1, None);
                    (status, code(&body).to_owned())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let answered = outcomes.iter().filter(|(s, _)| *s == 200).count();
    let refused = outcomes
        .iter()
        .filter(|(s, c)| *s == 429 && c == "search_limit_reached")
        .count();
    assert_eq!((answered, refused), (10, 30), "{outcomes:?}");
    assert_eq!(used(at_a, &key), 10);
    assert_eq!(used(at_b, &key), 10);

    rt.block_on(async {
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();
    });
}

#[test]
fn clickhouse_down_is_503_with_nothing_charged_and_serving_resumes() {
    let Some(Setup {
        rt,
        dir,
        database_url,
        mut cluster,
    }) = setup("outage")
    else {
        return;
    };
    let server = rt.block_on(start(&dir.join("a"), &cluster.urls()[0], &database_url));
    let at = server.address();
    ready_becomes(at, 200, "ready");
    let key = rt.block_on(account(
        &database_url,
        "outage@scale.example",
        DailyLimit::Limited(10),
    ));
    let (status, first) = search(at, &key, 2, None);
    assert_eq!(status, 200, "{first}");
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    assert_eq!(used(at, &key), 1);

    // The second shard goes away: every search needs it.
    cluster.stop(1);
    ready_becomes(at, 503, "index_unavailable");
    let (status, body) = search(at, &key, 2, Some(&cursor));
    assert_eq!(
        (status, code(&body)),
        (503, "service_unavailable"),
        "{body}"
    );
    let (status, body) = search(at, &key, 2, None);
    assert_eq!(
        (status, code(&body)),
        (503, "service_unavailable"),
        "{body}"
    );
    assert_eq!(used(at, &key), 1, "a search that failed is not charged");

    // Back without restarting the server: the kept cursor is honoured, once.
    cluster.restart(1);
    ready_becomes(at, 200, "ready");
    let (status, second) = search(at, &key, 2, Some(&cursor));
    assert_eq!(status, 200, "{second}");
    assert!(
        addresses(&second)
            .iter()
            .all(|ip| !addresses(&first).contains(ip))
    );
    assert_eq!(used(at, &key), 2);
    let (status, replay) = search(at, &key, 2, Some(&cursor));
    assert_eq!((status, code(&replay)), (410, "cursor_gone"), "{replay}");

    rt.block_on(server.shutdown()).unwrap();
}

/// A browser request with the session cookie: (status, body).
fn page(address: SocketAddr, path: &str, session: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nCookie: periscope_session={session}\r\n\
         Connection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    (
        status,
        response.split_once("\r\n\r\n").unwrap().1.to_owned(),
    )
}

fn href(body: &str, rel: &str) -> Option<String> {
    let marker = format!("rel=\"{rel}\" href=\"");
    let at = body.find(&marker)? + marker.len();
    let end = body[at..].find('"')?;
    Some(body[at..at + end].replace("&amp;", "&"))
}

fn row_ips(body: &str) -> Vec<String> {
    let marker = "class=\"host-row\" data-ip=\"";
    body.match_indices(marker)
        .map(|(at, _)| {
            let rest = &body[at + marker.len()..];
            rest[..rest.find('"').unwrap()].to_owned()
        })
        .collect()
}

#[test]
fn previous_in_the_browser_works_across_two_servers() {
    let Some(Setup {
        rt,
        dir,
        database_url,
        cluster,
    }) = setup("browser")
    else {
        return;
    };
    let urls = cluster.urls();
    let a = rt.block_on(start(&dir.join("a"), &urls[0], &database_url));
    let b = rt.block_on(start(&dir.join("b"), &urls[1], &database_url));
    let (at_a, at_b) = (a.address(), b.address());
    let key = rt.block_on(account(
        &database_url,
        "browser@scale.example",
        DailyLimit::Limited(20),
    ));
    let session = "scale-test-session-0123456789abcdef";
    rt.block_on(async {
        let state = State::open(&database_url).await.unwrap();
        let email = Email::parse("browser@scale.example").unwrap();
        let account = state.account_by_email(&email).await.unwrap().unwrap();
        state
            .create_web_session(
                session,
                account.id,
                "csrf-scale-test",
                "",
                SystemClock.now(),
            )
            .await
            .unwrap();
        state.close().await;
    });

    let (status, first) = page(at_a, "/?q=port%3A22", session);
    assert_eq!(status, 200, "{first}");
    let page1 = row_ips(&first);
    assert_eq!(page1.len(), 25, "{first}");
    assert_eq!(used(at_a, &key), 1);
    let next = href(&first, "next").expect("a next page");
    let (status, second) = page(at_b, &next, session);
    assert_eq!(status, 200, "{second}");
    let page2 = row_ips(&second);
    assert!(
        !page2.is_empty() && page2.iter().all(|ip| !page1.contains(ip)),
        "{second}"
    );
    assert_eq!(used(at_b, &key), 2, "the second page is one more search");
    let prev = href(&second, "prev").expect("a previous page");
    for address in [at_b, at_a] {
        let (status, again) = page(address, &prev, session);
        assert_eq!(status, 200, "{again}");
        assert_eq!(row_ips(&again), page1, "page 1 as shown");
    }
    assert_eq!(used(at_a, &key), 2, "Previous is free on either server");

    rt.block_on(async {
        a.shutdown().await.unwrap();
        b.shutdown().await.unwrap();
    });
}

/// Records `version` as the schema version of `database` on every node of the cluster.
fn record_version(cluster: &Cluster, database: &str, version: u32) {
    for node in cluster.clients() {
        node.execute(&format!("CREATE DATABASE IF NOT EXISTS {database}"))
            .unwrap();
        node.execute(&format!("DROP TABLE IF EXISTS {database}.schema_version"))
            .unwrap();
        node.execute(&format!(
            "CREATE TABLE {database}.schema_version (version UInt32) ENGINE = TinyLog"
        ))
        .unwrap();
        node.execute(&format!(
            "INSERT INTO {database}.schema_version VALUES ({version})"
        ))
        .unwrap();
    }
}

#[test]
fn serving_waits_for_the_schema_and_refuses_another_version() {
    let Some(Setup {
        rt,
        dir,
        database_url,
        cluster,
    }) = setup("schema")
    else {
        return;
    };
    let node = &cluster.urls()[0];

    // Started before init: not ready until the schema is there, then ready without a restart.
    let server = rt
        .block_on(start_on(&dir.join("a"), node, "later", &database_url))
        .unwrap();
    let at = server.address();
    ready_becomes(at, 503, "index_unavailable");
    schema::init(&cluster.clients(), "later", CLUSTER).unwrap();
    ready_becomes(at, 200, "ready");

    // The database comes to record another version while the server runs: never read as
    // this one.
    let other = schema::SCHEMA_VERSION + 1;
    record_version(&cluster, "later", other);
    ready_becomes(at, 503, "index_unavailable");
    rt.block_on(server.shutdown()).unwrap();

    // A database at another version is refused at start, naming both versions.
    let older = schema::SCHEMA_VERSION - 1;
    record_version(&cluster, "older", older);
    let Err(refused) = rt.block_on(start_on(&dir.join("b"), node, "older", &database_url)) else {
        panic!("a server on another schema version must not start");
    };
    let message = format!("{refused:#}");
    assert!(
        message.contains(&format!("schema version {older}"))
            && message.contains(&format!("version {}", schema::SCHEMA_VERSION)),
        "{message}"
    );
}
