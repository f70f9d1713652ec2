//! Why the enrichment files could not be opened. Each error names the file, and the line for
//! a table.

use std::path::PathBuf;

/// A file named in [`crate::EnrichConfig`] could not be used. Raised by
/// [`crate::Enricher::open`] before any observation is read.
#[derive(Debug, thiserror::Error)]
pub enum EnrichError {
    /// The file does not exist or cannot be read.
    #[error("cannot read the {role} file {}: {source}", path.display())]
    Unreadable {
        /// Which setting named it (`geoip_city`, `geoip_asn`, `asn_table`).
        role: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The file is not a MaxMind DB file (or it is damaged).
    #[error("the {role} file {} is not a readable MaxMind DB file: {reason}", path.display())]
    NotMaxMind {
        /// Which setting named it.
        role: &'static str,
        /// The file.
        path: PathBuf,
        /// What the reader found wrong.
        reason: String,
    },
    /// A MaxMind DB file whose database type does not give what the setting needs.
    #[error(
        "the {role} file {} is a {database_type:?} database, but {role} needs {expected}",
        path.display()
    )]
    WrongDatabaseType {
        /// Which setting named it.
        role: &'static str,
        /// The file.
        path: PathBuf,
        /// The `database_type` of its metadata.
        database_type: String,
        /// What the setting accepts.
        expected: &'static str,
    },
    /// A line of an ASN table that does not follow the layout.
    #[error("the asn_table file {} line {line}: {reason}", path.display())]
    Table {
        /// The file.
        path: PathBuf,
        /// The line number, from 1.
        line: u64,
        /// What is wrong with it.
        reason: String,
    },
}
