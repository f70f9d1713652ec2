//! The errors of the sign-in service's setup and storage. Request-level refusals (a wrong
//! password, an unknown client) are not errors here: each route answers them itself.

use std::path::PathBuf;

/// Why the sign-in service could not start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A configuration value is wrong; `key` names it as the configuration file does.
    #[error("sign-in configuration: `{key}` {reason}")]
    Config {
        /// The key, e.g. `signin.issuer` or `signin.clients[0].redirect_uris[1]`.
        key: String,
        /// What is wrong and what was expected.
        reason: String,
    },
    /// The database could not be opened or migrated.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The signing key (configured or stored) cannot be used.
    #[error("sign-in signing key: {0}")]
    Key(String),
    /// The outbox directory cannot be created.
    #[error("cannot create the mail outbox directory {path}: {source}")]
    Outbox {
        /// The directory.
        path: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
    /// The SMTP transport cannot be built from its settings.
    #[error("sign-in SMTP settings: {0}")]
    Smtp(String),
}

/// A failure of the sign-in database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be reached or opened (the target never shows a password).
    #[error("cannot open the sign-in database {target}: {source}")]
    Unreachable {
        /// Where: a file path or `postgres://user@host:port/db`.
        target: String,
        /// The driver's reason.
        source: sqlx::Error,
    },
    /// A migration failed.
    #[error("cannot migrate the sign-in tables in {target}: {reason}")]
    Migrate {
        /// Where.
        target: String,
        /// What failed.
        reason: String,
    },
    /// The database holds sign-in tables of a newer build.
    #[error(
        "the sign-in tables in {target} have schema version {applied}, newer than this build knows ({known}); they were left untouched"
    )]
    SchemaTooNew {
        /// Where.
        target: String,
        /// The newest version recorded in the database.
        applied: i64,
        /// The newest version this build knows.
        known: i64,
    },
    /// A statement failed.
    #[error("sign-in database: {0}")]
    Database(#[from] sqlx::Error),
    /// The operating system's random generator failed.
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

impl From<periscope_model::random::RandomError> for StoreError {
    fn from(e: periscope_model::random::RandomError) -> Self {
        Self::Random(e.to_string())
    }
}
