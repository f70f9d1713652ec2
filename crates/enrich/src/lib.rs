//! Enrichment of scanner observations: where is this address, and which network announces it?
//!
//! Scanners (Nmap, Masscan, ZGrab2) record no location and no ASN, so an importer hands each
//! [`ServiceObservation`] to an [`Enricher`] before it is written. The enricher reads
//! - a **location database** (`geoip_city`): a MaxMind DB file of GeoLite2/GeoIP2 City or
//!   Country, DB-IP City/Country (Lite), IPinfo Lite, or ip-location-db's City/Country builds;
//! - an **ASN database** (`geoip_asn`): a MaxMind DB file of GeoLite2 ASN, GeoIP2 ISP, DB-IP
//!   ASN (Lite), IPinfo Lite, or ip-location-db's ASN builds;
//! - an **ASN table** (`asn_table`): iptoasn's TSV (`range_start range_end asn country
//!   organisation`), loaded into a sorted range table ([`AsnTable`]).
//!
//! and fills `host.location` (continent, country, subdivisions, city, position and accuracy
//! radius), `host.asn.network` and `host.provider.as_organization` of every observation that
//! does not already carry them. User documentation: `docs/enrichment.md`.
//!
//! Layout: [`config`] (what the `[enrich]` section names), `mmdb` (MaxMind DB files: the
//! database-type check at open and the record layouts of each vendor), [`table`] (the
//! iptoasn range table), `internal` (addresses that are never looked up), [`enricher`] (the
//! precedence rules and the counts).
//!
//! **Invariant:** [`Enricher::open`] checks every file before an observation is read: a missing
//! or unreadable file, a file that is not a MaxMind DB, a database of the wrong type, or a
//! malformed table line is an [`EnrichError`] naming the path (and line). After that,
//! [`Enricher::enrich`] never fails: an address a database does not know, a private or
//! loopback address, or a value that would break the observation format is counted in the
//! [`EnrichOutcome`], never an error and never silently dropped.
//!
//! **Boundary:** reads only the files it is given (into memory, once); no network, no clock.
//! It writes only the enrichment blocks of a service observation and never replaces what a
//! scanner or an export already recorded.

pub mod config;
pub mod enricher;
mod error;
mod internal;
mod mmdb;
pub mod table;

pub use config::EnrichConfig;
pub use enricher::{EnrichOutcome, EnrichStats, Enricher, Fill};
pub use error::EnrichError;
pub use internal::is_internal;
pub use mmdb::DatabaseKind;
pub use periscope_model::observation::ServiceObservation;
pub use table::AsnTable;
