//! The connection to the state database: one pool over SQLite or PostgreSQL, opening it, and
//! the embedded migration set.
//!
//! Every statement of this crate is one SQL text that both databases accept (`$1`-style
//! placeholders, `ON CONFLICT`, `RETURNING`), run through [`on_db!`], which expands the same
//! code once per backend so each copy is type-checked against its driver.

use std::borrow::Cow;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, Connection};

use crate::error::{Result, StateError};

/// Runs `$body` with `$pool` bound to the pool of whichever database `$db` is.
macro_rules! on_db {
    ($db:expr, |$pool:ident| $body:expr) => {
        match $db {
            $crate::db::Db::Sqlite($pool) => $body,
            $crate::db::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_db;

/// The migrations, in order: (version, description, SQL). Released entries never change (the
/// migrator checks their checksums); a schema change is a new entry and a new file.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial", include_str!("../migrations/0001_initial.sql")),
    (2, "web", include_str!("../migrations/0002_web.sql")),
    (
        3,
        "key_prefix",
        include_str!("../migrations/0003_key_prefix.sql"),
    ),
    (
        4,
        "audit_client",
        include_str!("../migrations/0004_audit_client.sql"),
    ),
    (
        5,
        "shared_web",
        include_str!("../migrations/0005_shared_web.sql"),
    ),
];

/// The newest schema version this build knows.
pub(crate) const SCHEMA_VERSION: i64 = 5;

/// How long a statement waits for the SQLite write lock, or for a free pooled SQLite
/// connection (a local file has no outage to report; waiting is back-pressure).
const WAIT: Duration = Duration::from_secs(15);

/// How long a request waits for a PostgreSQL connection by default: an unreachable database
/// answers within this, so readiness probes and clients see the 503 at once
/// (`database_acquire_timeout_ms`).
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(2);

/// A pool over one of the two supported databases.
#[derive(Clone, Debug)]
pub(crate) enum Db {
    /// A SQLite file.
    Sqlite(SqlitePool),
    /// A PostgreSQL database.
    Postgres(PgPool),
}

/// Which database a [`crate::State`] runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file (the default: `DATA/state.db`).
    Sqlite,
    /// A PostgreSQL database.
    Postgres,
}

impl Db {
    pub(crate) fn backend(&self) -> Backend {
        match self {
            Db::Sqlite(_) => Backend::Sqlite,
            Db::Postgres(_) => Backend::Postgres,
        }
    }

    /// Opens (creating it if missing) the SQLite file at `path` and migrates it.
    pub(crate) async fn open_sqlite_file(path: &Path) -> Result<Self> {
        let target = path.display().to_string();
        // Private before SQLite touches it: SQLite gives `-wal` and `-shm` the file's mode.
        crate::files::private_sqlite_files(path).map_err(|source| StateError::Private {
            path: path.to_owned(),
            source,
        })?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            // WAL lets readers run beside the one writer; writers queue on the lock for up
            // to WAIT instead of failing with SQLITE_BUSY.
            .journal_mode(SqliteJournalMode::Wal)
            // In WAL mode NORMAL syncs at checkpoints, not at every commit: a process crash
            // loses nothing and the file never corrupts; a power cut may lose the last
            // commits. Every request of the search capability commits (its audit record), so
            // FULL would put an fsync on every request. Deployments that need more use
            // PostgreSQL.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(WAIT)
            .foreign_keys(true);
        // One direct connection first: an unreachable database fails at once with the
        // driver's reason (a pool would retry until its timeout and report only that).
        let probe = options.connect().await.map_err(unreachable(&target))?;
        let _ = probe.close().await;
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .acquire_timeout(WAIT)
            .connect_with(options)
            .await
            .map_err(unreachable(&target))?;
        let db = Db::Sqlite(pool);
        db.migrate(&target).await?;
        Ok(db)
    }

    /// Connects to the PostgreSQL database at `url` and migrates it. A request waits at most
    /// `acquire_timeout` for a connection (a new one is tried meanwhile when the database
    /// went away), then fails.
    pub(crate) async fn connect_postgres(url: &str, acquire_timeout: Duration) -> Result<Self> {
        let options =
            PgConnectOptions::from_str(url).map_err(|source| StateError::Unreachable {
                target: "(unparsable PostgreSQL URL)".to_owned(),
                source,
            })?;
        let target = postgres_target(&options);
        // One direct connection first: an unreachable database fails at once with the
        // driver's reason (a pool would retry until its timeout and report only that).
        let probe = options.connect().await.map_err(unreachable(&target))?;
        let _ = probe.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(acquire_timeout)
            .connect_with(options)
            .await
            .map_err(unreachable(&target))?;
        let db = Db::Postgres(pool);
        db.migrate(&target).await?;
        Ok(db)
    }

    /// Applies the migrations this build has and the database lacks. A database that has a
    /// migration this build lacks was written by a newer build: refused, never touched.
    async fn migrate(&self, target: &str) -> Result<()> {
        let migrator = Migrator::new(Embedded)
            .await
            .map_err(|source| StateError::Migrate {
                target: target.to_owned(),
                source,
            })?;
        let outcome = on_db!(self, |pool| migrator.run(pool).await);
        outcome.map_err(|source| match source {
            MigrateError::VersionMissing(applied) => StateError::SchemaTooNew {
                target: target.to_owned(),
                applied,
                known: SCHEMA_VERSION,
            },
            source => StateError::Migrate {
                target: target.to_owned(),
                source,
            },
        })
    }

    pub(crate) async fn close(&self) {
        on_db!(self, |pool| pool.close().await)
    }
}

/// The error for a database that cannot be reached at `target`.
fn unreachable(target: &str) -> impl FnOnce(sqlx::Error) -> StateError + '_ {
    move |source| StateError::Unreachable {
        target: target.to_owned(),
        source,
    }
}

/// `host:port/database` (or the socket path), never the password.
fn postgres_target(options: &PgConnectOptions) -> String {
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

/// The migration source compiled into the binary.
#[derive(Debug)]
struct Embedded;

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(
        self,
    ) -> Pin<
        Box<
            dyn Future<Output = std::result::Result<Vec<Migration>, sqlx::error::BoxDynError>>
                + Send
                + 's,
        >,
    > {
        Box::pin(async {
            Ok(MIGRATIONS
                .iter()
                .map(|&(version, description, sql)| {
                    Migration::new(
                        version,
                        Cow::Borrowed(description),
                        MigrationType::Simple,
                        Cow::Borrowed(sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// `DATA/state.db`: where the default SQLite database lives in a data directory.
pub(crate) fn sqlite_path(data_dir: &Path) -> PathBuf {
    data_dir.join("state.db")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file in `migrations/` is embedded, in order, and the newest is SCHEMA_VERSION.
    #[test]
    fn every_migration_file_is_embedded() {
        // The running test's crate directory (a shared build directory may have compiled this
        // binary in another checkout).
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        );
        let dir = crate_dir.join("migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
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
}
