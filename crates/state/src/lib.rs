//! The state database of Periscope: everything the service remembers besides scan data.
//!
//! Accounts, organisations and membership, plans, access state and daily limits
//! ([`Account`], [`State::create_account`]); API keys ([`State::create_key`],
//! [`State::authenticate`]); the daily allowance counter ([`State::charge`]: how a search is
//! charged exactly is explained on [`Charge`]); search cursors
//! ([`State::take_cursor`]); audit records ([`AuditSink`]); and problem reports
//! ([`State::submit_report`]); the web application's identities, browser sessions and sign-ins
//! in flight ([`State::web_session`]), the result pages a session was shown
//! ([`State::shown_page`]) and the create-key form tokens already sent
//! ([`State::first_key_form_use`]) — so that several servers behind a load balancer answer a
//! browser alike. [`PlanSource`] and [`AuditSink`] are the seams where the search
//! service's tests put failing implementations.
//!
//! One [`State`] runs on SQLite (the default: `DATA/state.db`, created on first start) or on
//! PostgreSQL, through sqlx with one migration set whose SQL both accept. It holds a pool and
//! is cheap to clone. No method reads a clock: every call that needs the time takes `now`, so
//! day rollover and expiry are tested without waiting. Reference: `docs/state.md`.

mod accounts;
mod allowance;
mod audit;
mod cursors;
mod db;
mod error;
pub mod files;
mod key_forms;
mod keys;
mod pages;
mod reports;
mod seams;
#[cfg(feature = "testing")]
#[path = "../tests/state/harness.rs"]
pub mod testing;
mod web;

// The test harness is shared with this crate's own suite, which names the crate from outside.
#[cfg(feature = "testing")]
extern crate self as periscope_state;

use std::path::Path;

pub use accounts::{
    Access, Account, AccountId, DailyLimit, Email, NewAccount, Organisation, OrganisationId, Plan,
    TermsAcceptance,
};
pub use allowance::{Charge, Usage, UtcDay};
pub use audit::{AuditEntry, AuditId, AuditRecord, Channel, Operation};
pub use cursors::{CURSOR_LEN, CursorTake, CursorToken, DEFAULT_CURSOR_LIFETIME_SECS, NewCursor};
pub use db::{Backend, DEFAULT_ACQUIRE_TIMEOUT};
pub use error::{Result, StateError};
pub use key_forms::{KEY_FORM_MEMORY_SECS, KEY_FORMS_PER_ACCOUNT};
pub use keys::{
    API_KEY_LEN, ApiKey, KEY_NAME_MAX_CHARS, KEY_PREFIX_LEN, KeyId, KeyInfo, KeyOwner,
    is_well_formed_key,
};
pub use pages::{SHOWN_PAGE_LIFETIME_SECS, SHOWN_PAGES_PER_SESSION};
pub use reports::{ProblemReport, REPORT_MAX_CHARS, ReportId, check_description};
pub use seams::{AuditSink, BoxFuture, PlanSource};
pub use web::{PendingSignIn, WebSession, WebSessionLookup};

use db::Db;

/// The environment variable that names a PostgreSQL state database (the `database_url`
/// configuration key); read by the configuration layer, not here.
pub const DATABASE_URL_ENV: &str = "PERISCOPE_DATABASE_URL";

/// Whether `target` names a PostgreSQL database.
fn is_postgres(target: &str) -> bool {
    target.starts_with("postgres://") || target.starts_with("postgresql://")
}

/// A handle on the state database (a connection pool; clones share it).
#[derive(Clone, Debug)]
pub struct State {
    db: Db,
}

impl State {
    /// Opens the database named by `target`: a `postgres://` or `postgresql://` URL, a
    /// `sqlite:` URL, or the path of a SQLite file (created if missing). Runs the migrations.
    pub async fn open(target: &str) -> Result<Self> {
        if is_postgres(target) {
            return Self::connect_postgres(target).await;
        }
        let path = target
            .strip_prefix("sqlite://")
            .or_else(|| target.strip_prefix("sqlite:"))
            .unwrap_or(target);
        Self::open_sqlite_file(Path::new(path)).await
    }

    /// Opens the state database the configuration names: PostgreSQL at `database_url` when
    /// one is set, otherwise the SQLite file `state.db` in `data_dir`.
    pub async fn open_configured(database_url: Option<&str>, data_dir: &Path) -> Result<Self> {
        Self::open_configured_with(database_url, data_dir, DEFAULT_ACQUIRE_TIMEOUT).await
    }

    /// As [`State::open_configured`], with a PostgreSQL request waiting at most
    /// `acquire_timeout` for a connection (`database_acquire_timeout_ms`).
    pub async fn open_configured_with(
        database_url: Option<&str>,
        data_dir: &Path,
        acquire_timeout: std::time::Duration,
    ) -> Result<Self> {
        match database_url {
            Some(url) if is_postgres(url) => Ok(Self {
                db: Db::connect_postgres(url, acquire_timeout).await?,
            }),
            Some(url) => Self::open(url).await,
            None => Self::open_sqlite(data_dir).await,
        }
    }

    /// Opens `DATA/state.db` in the data directory, creating the directory (mode 0700) and
    /// the file (mode 0600) on first start. Runs the migrations.
    pub async fn open_sqlite(data_dir: &Path) -> Result<Self> {
        files::create_private_dir(data_dir).map_err(|source| StateError::DataDir {
            path: data_dir.to_owned(),
            source,
        })?;
        Self::open_sqlite_file(&db::sqlite_path(data_dir)).await
    }

    /// Opens the SQLite file at `path` (created if missing; its directory must exist). Runs
    /// the migrations.
    pub async fn open_sqlite_file(path: &Path) -> Result<Self> {
        Ok(Self {
            db: Db::open_sqlite_file(path).await?,
        })
    }

    /// Connects to the PostgreSQL database at `url` (which must exist). Runs the migrations.
    pub async fn connect_postgres(url: &str) -> Result<Self> {
        Ok(Self {
            db: Db::connect_postgres(url, DEFAULT_ACQUIRE_TIMEOUT).await?,
        })
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.db.backend()
    }

    /// The newest schema version this build knows (and has applied).
    pub fn schema_version() -> i64 {
        db::SCHEMA_VERSION
    }

    /// Runs a trivial statement: `Ok` when the database answers (for readiness checks).
    pub async fn ping(&self) -> Result<()> {
        db::on_db!(&self.db, |pool| {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// The connection pool now: `(open, idle)` connections (for the `/metrics` gauges).
    pub fn pool_status(&self) -> (u32, u32) {
        db::on_db!(&self.db, |pool| (
            pool.size(),
            u32::try_from(pool.num_idle()).unwrap_or(u32::MAX)
        ))
    }

    /// Closes the pool, waiting for connections in use to be returned.
    pub async fn close(&self) {
        self.db.close().await;
    }
}
