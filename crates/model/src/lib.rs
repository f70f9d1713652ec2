//! The Periscope domain model: the vocabulary every other crate speaks.
//!
//! It owns
//! - validated newtypes ([`Port`], [`Asn`], [`Ipv4Cidr`], [`IpCidr`], [`DomainName`], [`CveId`],
//!   [`Cvss`], [`CvssRange`], [`Cpe23`], [`CountryCode`], [`ProtocolToken`], [`Timestamp`]) that
//!   are constructed once by parsing and trusted afterwards;
//! - the protocol registry ([`protocol`]): the 87 registered tokens with their ports, address
//!   families and evidence kind, its `query_registry_version` and content-derived
//!   `catalog_version`;
//! - the records of the specification ([`record`]): host enrichment, location, network, WHOIS,
//!   services and their typed evidence;
//! - the observation format ([`observation`]): the one-JSON-object-per-line contract with
//!   scanner operators, and the reader that turns a line into a validated record or a precise
//!   error;
//! - the workspace's one time seam ([`clock`]: [`Clock`], [`SystemClock`], [`ManualClock`]),
//!   its one random-token module ([`random`]: row ids, secrets, key and cursor tokens and the
//!   digests secrets are stored as) and the one rule for hidden control characters in stored
//!   free text ([`text`]).
//!
//! **Invariant:** nothing in this crate does I/O except reading lines that a caller hands it
//! (and the system's time, in [`SystemClock`], and the operating system's random generator,
//! in [`random`]).
//! **Boundary:** wire types of the HTTP API live elsewhere; the only serde derives here are for
//! the observation format, which is a contract in its own right.

pub mod clock;
pub mod country;
pub mod cpe;
pub mod domain;
pub mod error;
pub mod net;
pub mod observation;
pub mod protocol;
pub mod random;
pub mod record;
pub mod text;
pub mod time;
pub mod vuln;

pub use clock::{Clock, ManualClock, SystemClock};
pub use country::CountryCode;
pub use cpe::Cpe23;
pub use domain::DomainName;
pub use error::InvalidValue;
pub use net::{Asn, IpCidr, Ipv4Cidr, Port, ip_order_key};
pub use protocol::{EvidenceKind, ProtocolEntry, ProtocolToken};
pub use time::Timestamp;
pub use vuln::{CveId, Cvss, CvssRange};
