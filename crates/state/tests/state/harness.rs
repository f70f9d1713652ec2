//! Runs one test body on a fresh SQLite file and on a fresh PostgreSQL database.
//!
//! PostgreSQL is reached at `PERISCOPE_TEST_POSTGRES_URL` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`); each test creates its own database there
//! and drops it afterwards, even when the body panics. When the server cannot be reached the
//! PostgreSQL half is skipped with a printed reason — except under `CI=true`, where it fails.
//!
//! Other crates' suites use it too, as `periscope_state::testing` (feature `testing`).

#![allow(clippy::unwrap_used, missing_docs)] // Test support: a panic is the failure report.

use std::any::Any;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use periscope_model::Timestamp;
use periscope_state::{Result, State};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor, PgPool};

const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// 2026-11-20T12:00:00Z, the "now" of most tests.
pub fn noon() -> Timestamp {
    Timestamp::parse("2026-11-20T12:00:00Z").unwrap()
}

/// `t` plus `secs` seconds.
pub fn later(t: Timestamp, secs: i64) -> Timestamp {
    Timestamp::from_unix(t.unix() + secs).unwrap()
}

fn unique(test: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{test}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory of its own under the system temporary directory, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("periscope-state-{}", unique(test)));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where a fixture's database lives.
#[derive(Clone, Debug)]
pub enum Target {
    /// The data directory holding `state.db`.
    Sqlite(PathBuf),
    /// The URL of the test's own PostgreSQL database.
    Postgres(String),
}

/// A test's database.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub state: State,
    pub target: Target,
}

impl Fixture {
    /// Opens the same database again (migrations run again).
    pub async fn reopen(&self) -> Result<State> {
        match &self.target {
            Target::Sqlite(dir) => State::open_sqlite(dir).await,
            Target::Postgres(url) => State::open(url).await,
        }
    }

    /// Records a migration this build does not have, as a newer build would.
    pub async fn pretend_newer_schema(&self, version: i64) {
        let sql = "INSERT INTO _sqlx_migrations \
                   (version, description, success, checksum, execution_time) \
                   VALUES ($1, 'from the future', TRUE, $2, 0)";
        match &self.target {
            Target::Sqlite(dir) => {
                let mut conn = SqliteConnectOptions::new()
                    .filename(dir.join("state.db"))
                    .connect()
                    .await
                    .unwrap();
                sqlx::query(sql)
                    .bind(version)
                    .bind(vec![0u8; 48])
                    .execute(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.unwrap();
            }
            Target::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query(sql)
                    .bind(version)
                    .bind(vec![0u8; 48])
                    .execute(&mut conn)
                    .await
                    .unwrap();
                conn.close().await.unwrap();
            }
        }
    }
}

/// Runs `body` on SQLite, then on PostgreSQL, each on a fresh database.
pub async fn on_each_backend<F, Fut>(test: &str, body: F)
where
    F: Fn(Fixture) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    {
        eprintln!("[{test}] on SQLite");
        let dir = TempDir::new(test);
        let state = State::open_sqlite(dir.path()).await.unwrap();
        let fixture = Fixture {
            state: state.clone(),
            target: Target::Sqlite(dir.path().to_owned()),
        };
        let outcome = tokio::spawn(body(fixture)).await;
        state.close().await;
        drop(dir);
        if let Err(e) = outcome {
            std::panic::resume_unwind(e.into_panic());
        }
    }
    let Some(admin) = postgres_admin(test).await else {
        return;
    };
    eprintln!("[{test}] on PostgreSQL");
    let name = format!("periscope_test_{}", unique(test).to_lowercase());
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let url = with_database(&postgres_url(), &name);
    let outcome = match State::open(&url).await {
        Ok(state) => {
            let fixture = Fixture {
                state: state.clone(),
                target: Target::Postgres(url),
            };
            let outcome = tokio::spawn(body(fixture)).await;
            state.close().await;
            outcome.map_err(|e| e.into_panic())
        }
        Err(e) => Err(Box::new(format!("cannot open {url}: {e:?}")) as Box<dyn Any + Send>),
    };
    admin
        .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
        .await
        .unwrap();
    admin.close().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn postgres_url() -> String {
    std::env::var("PERISCOPE_TEST_POSTGRES_URL").unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into())
}

/// A pool on the server's maintenance database, or `None` (outside CI only) when the server
/// cannot be reached.
async fn postgres_admin(test: &str) -> Option<PgPool> {
    let url = postgres_url();
    let options = PgConnectOptions::from_str(&url).unwrap();
    // One direct connection first: it fails at once with the driver's reason.
    let reachable = match options.connect().await {
        Ok(probe) => probe.close().await,
        Err(e) => Err(e),
    };
    let pool = match reachable {
        Ok(()) => {
            PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(Duration::from_secs(10))
                .connect_with(options)
                .await
        }
        Err(e) => Err(e),
    };
    match pool {
        Ok(pool) => Some(pool),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("[{test}] PostgreSQL at {url} is unreachable, and CI requires it: {e}")
        }
        Err(e) => {
            eprintln!("[{test}] SKIPPED on PostgreSQL: {url} is unreachable ({e})");
            None
        }
    }
}

/// `url` with its database replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
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
