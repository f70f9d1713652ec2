//! What can go wrong in the state database, as one error type with a `Result` alias.
//!
//! Messages never repeat their cause: the cause is the error's `source`, so a caller that
//! prints the chain (anyhow's `{:#}`) shows it once.

use std::path::PathBuf;

/// A result whose error is a [`StateError`].
pub type Result<T, E = StateError> = std::result::Result<T, E>;

/// What went wrong in the state database.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The database could not be reached or opened.
    #[error("cannot open the state database {target}")]
    Unreachable {
        /// Where the database was looked for (a file, or host, port and database name; never a
        /// password).
        target: String,
        /// What the driver said.
        #[source]
        source: sqlx::Error,
    },
    /// The data directory for the SQLite file could not be created.
    #[error("cannot create the data directory {}", path.display())]
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The SQLite file could not be created private (mode 0600) or narrowed to it.
    #[error("cannot make the state database file {} private (mode 0600)", path.display())]
    Private {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The database was migrated by a newer Periscope: this build does not know its schema.
    #[error(
        "the state database {target} has schema version {applied}, newer than this build \
         knows (up to {known}); run a newer periscope"
    )]
    SchemaTooNew {
        /// Where the database is.
        target: String,
        /// A schema version applied to the database that this build does not have.
        applied: i64,
        /// The newest schema version this build has.
        known: i64,
    },
    /// The schema migrations could not be applied or checked.
    #[error("cannot migrate the state database {target}")]
    Migrate {
        /// Where the database is.
        target: String,
        /// What the migrator said.
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    /// A statement failed (connection lost, constraint, timeout…).
    #[error("state database error")]
    Database(#[from] sqlx::Error),
    /// An account with this email address (compared case-insensitively) exists already.
    #[error("an account with the email address {0} exists already")]
    EmailTaken(String),
    /// No account has this id or email address.
    #[error("no such account")]
    UnknownAccount,
    /// No organisation has this id.
    #[error("no such organisation")]
    UnknownOrganisation,
    /// An input value was refused before it reached the database.
    #[error("invalid {what}: {why}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// Why it was refused.
        why: String,
    },
    /// The database holds a value this build cannot read (edited by hand, or a bug).
    #[error("the state database holds an unreadable value in {0}")]
    Corrupt(&'static str),
    /// The operating system's random generator failed.
    #[error("the operating system's random generator failed: {0}")]
    Random(String),
}

impl From<periscope_model::random::RandomError> for StateError {
    fn from(e: periscope_model::random::RandomError) -> Self {
        Self::Random(e.to_string())
    }
}

impl StateError {
    pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> Self {
        Self::Invalid {
            what,
            why: why.into(),
        }
    }
}
