//! The sign-in service's storage: one pool over SQLite or PostgreSQL, its own migration set
//! (tables prefixed `signin_`, recorded in `signin_schema`, so it can share a database with
//! the state database and its `_sqlx_migrations`), and the operations on each table.
//!
//! Like the state crate, every statement is one SQL text that both databases accept, run
//! through [`on_db!`], and nothing here reads a clock: callers pass `now`.

mod codes;
mod failures;
mod keys;
mod sessions;
mod users;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection, Row};

use crate::error::StoreError;

pub(crate) use codes::{NewCode, Redeemed};
pub(crate) use sessions::SessionUser;
pub(crate) use users::{Confirmed, LinkStatus, NewRegistration, Registered};

/// Runs `$body` with `$pool` bound to the pool of whichever database `$db` is.
macro_rules! on_db {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::store::Db::Sqlite($pool) => $body,
            $crate::store::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_db;

/// The migrations, in order: (version, description, SQL). Released entries never change (their
/// SHA-256 is recorded and checked); a schema change is a new entry and a new file.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/0001_initial.sql"),
    ),
    (
        2,
        "failures",
        include_str!("../../migrations/0002_failures.sql"),
    ),
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i64 = 2;

/// How long a statement waits for the SQLite write lock (a pooled connection is waited for
/// `signin.database_acquire_timeout_ms`, given to [`Store::open`]).
const WAIT: Duration = Duration::from_secs(15);

/// A pool over one of the two supported databases.
#[derive(Clone, Debug)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// The sign-in tables of one database (a pool: clones share it).
#[derive(Clone, Debug)]
pub(crate) struct Store {
    db: Db,
}

impl Store {
    /// Opens the database named by `target` — a `postgres://`/`postgresql://` URL, a `sqlite:`
    /// URL or a SQLite file path (created if missing) — and applies the migrations. A request
    /// waits at most `acquire_timeout` for a connection, so an outage answers at once (and the
    /// pool reconnects by itself when the database is back).
    pub(crate) async fn open(target: &str, acquire_timeout: Duration) -> Result<Self, StoreError> {
        let db = if target.starts_with("postgres://") || target.starts_with("postgresql://") {
            connect_postgres(target, acquire_timeout).await?
        } else {
            let path = target
                .strip_prefix("sqlite://")
                .or_else(|| target.strip_prefix("sqlite:"))
                .unwrap_or(target);
            open_sqlite(Path::new(path), acquire_timeout).await?
        };
        let store = Self { db };
        let target = printable_target(target);
        store.migrate(&target).await?;
        Ok(store)
    }

    pub(crate) async fn close(&self) {
        on_db!(&self.db, |pool| pool.close().await)
    }

    /// Applies the migrations the database lacks, each in its own transaction together with
    /// its row in `signin_schema`. A database with a newer version is refused untouched; a
    /// recorded migration whose text changed is refused.
    async fn migrate(&self, target: &str) -> Result<(), StoreError> {
        let failed = |reason: String| StoreError::Migrate {
            target: target.to_owned(),
            reason,
        };
        let create = "CREATE TABLE IF NOT EXISTS signin_schema (version BIGINT PRIMARY KEY, \
                      description TEXT NOT NULL, checksum TEXT NOT NULL, applied_at BIGINT NOT NULL)";
        on_db!(&self.db, |pool| {
            sqlx::query(create)
                .execute(pool)
                .await
                .map_err(|e| failed(e.to_string()))?;
        });
        // A write first in each migration's transaction, so two instances starting together
        // serialise (SQLite takes its write lock; PostgreSQL waits on an advisory lock whose
        // number is an arbitrary constant naming "periscope-signin migrations").
        let lock = match self.db {
            Db::Sqlite(_) => "UPDATE signin_schema SET version = version WHERE version < 0",
            Db::Postgres(_) => "SELECT pg_advisory_xact_lock(7364917305)",
        };
        for &(version, description, sql) in MIGRATIONS {
            let checksum = crate::random::digest(sql);
            on_db!(&self.db, |pool| {
                let mut tx = pool.begin().await.map_err(|e| failed(e.to_string()))?;
                sqlx::query(lock)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                let rows = sqlx::query("SELECT version, checksum FROM signin_schema")
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| failed(e.to_string()))?;
                let mut applied = None;
                for row in &rows {
                    let v: i64 = row.get(0);
                    if v > SCHEMA_VERSION {
                        return Err(StoreError::SchemaTooNew {
                            target: target.to_owned(),
                            applied: v,
                            known: SCHEMA_VERSION,
                        });
                    }
                    if v == version {
                        applied = Some(row.get::<String, _>(1));
                    }
                }
                match applied {
                    Some(recorded) if recorded == checksum => {}
                    Some(_) => {
                        return Err(failed(format!(
                            "migration {version} ({description}) was applied with different SQL"
                        )));
                    }
                    None => {
                        // A text without arguments: both drivers run its several statements (the
                        // simple query protocol on PostgreSQL), as sqlx's own migrator does.
                        sqlx::Executor::execute(&mut *tx, sql)
                            .await
                            .map_err(|e| failed(format!("migration {version}: {e}")))?;
                        sqlx::query(
                            "INSERT INTO signin_schema (version, description, checksum, applied_at) \
                             VALUES ($1, $2, $3, $4)",
                        )
                        .bind(version)
                        .bind(description)
                        .bind(&checksum)
                        .bind(periscope_model::clock::Clock::now(&periscope_model::clock::SystemClock).unix())
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| failed(e.to_string()))?;
                    }
                }
                tx.commit().await.map_err(|e| failed(e.to_string()))?;
            });
        }
        Ok(())
    }
}

async fn open_sqlite(path: &Path, acquire_timeout: Duration) -> Result<Db, StoreError> {
    let target = path.display().to_string();
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(WAIT)
        .foreign_keys(true);
    let probe = options.connect().await.map_err(unreachable(&target))?;
    let _ = probe.close().await;
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .acquire_timeout(acquire_timeout)
        .connect_with(options)
        .await
        .map_err(unreachable(&target))?;
    Ok(Db::Sqlite(pool))
}

async fn connect_postgres(url: &str, acquire_timeout: Duration) -> Result<Db, StoreError> {
    let options = PgConnectOptions::from_str(url).map_err(|source| StoreError::Unreachable {
        target: "(unparsable PostgreSQL URL)".to_owned(),
        source,
    })?;
    let target = printable_target(url);
    let probe = options.connect().await.map_err(unreachable(&target))?;
    let _ = probe.close().await;
    let pool = PgPoolOptions::new()
        .max_connections(5)
        .acquire_timeout(acquire_timeout)
        .connect_with(options)
        .await
        .map_err(unreachable(&target))?;
    Ok(Db::Postgres(pool))
}

fn unreachable(target: &str) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |source| StoreError::Unreachable {
        target: target.to_owned(),
        source,
    }
}

/// `target` as it may be printed: a PostgreSQL URL as `postgres://user@host:port/db`, never with
/// its password; a file path as it is.
pub(crate) fn printable_target(target: &str) -> String {
    if !(target.starts_with("postgres://") || target.starts_with("postgresql://")) {
        return target.to_owned();
    }
    match PgConnectOptions::from_str(target) {
        Ok(options) => {
            let place = match options.get_socket() {
                Some(socket) => socket.display().to_string(),
                None => format!("{}:{}", options.get_host(), options.get_port()),
            };
            format!(
                "postgres://{}@{place}/{}",
                options.get_username(),
                options.get_database().unwrap_or(options.get_username())
            )
        }
        Err(_) => "(unparsable PostgreSQL URL)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Every file in `migrations/` is embedded, in order, and the newest is SCHEMA_VERSION.
    #[test]
    fn every_migration_file_is_embedded() {
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        );
        let mut files: Vec<String> = std::fs::read_dir(crate_dir.join("migrations"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(files.len(), MIGRATIONS.len());
        for (file, &(version, description, _)) in files.iter().zip(MIGRATIONS) {
            assert_eq!(file, &format!("{version:04}_{description}.sql"));
        }
        assert_eq!(MIGRATIONS.last().unwrap().0, SCHEMA_VERSION);
    }

    #[test]
    fn every_table_is_prefixed() {
        for &(_, _, sql) in MIGRATIONS {
            for line in sql.lines() {
                let line = line.trim_start();
                if let Some(rest) = line
                    .strip_prefix("CREATE TABLE ")
                    .or_else(|| line.strip_prefix("CREATE INDEX "))
                {
                    assert!(rest.starts_with("signin_"), "{line}");
                }
            }
        }
    }

    #[test]
    fn printable_target_hides_the_password() {
        assert_eq!(
            printable_target("postgres://bob:hunter2@db.example:5433/periscope"),
            "postgres://bob@db.example:5433/periscope"
        );
        assert_eq!(printable_target("/data/signin.db"), "/data/signin.db");
    }
}
