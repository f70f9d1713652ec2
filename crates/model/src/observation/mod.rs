//! The observation format: one JSON object per line, the contract with scanner operators.
//!
//! `docs/observation-format.md` is the normative description and
//! `docs/observation.schema.json` its JSON Schema. This module holds the validated records a
//! line becomes ([`Observation`]) and the [`ObservationReader`] that parses lines into them.
//! A bad line becomes a [`ReadError`] naming the line, the field and the reason; nothing of it
//! is kept.

mod captured;
mod check;
mod decode;
mod domain_scan;
mod host;
mod one_pass;
mod raw;
mod reader;
mod service;
mod view;

use std::net::IpAddr;

pub use reader::{LineView, ObservationReader, ReadError};
pub use view::{
    AsnView, AsnsView, CertificateView, HostView, HttpView, LocationView, ProductView,
    ProviderView, ServiceView, SshView, SummaryView, TlsView, VulnerabilitiesView, WhoisView,
};

use crate::record::{HostEnrichment, Http, Product, Ssh, Summary, Tls, VulnerabilitySummary};
use crate::{DomainName, Port, ProtocolToken, Timestamp};

/// The longest line the reader accepts, in bytes, without its line end: 1 MiB.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// One line of an observation file.
// Lines are read and consumed one at a time, so the size of the service variant costs a copy
// per line, not memory; boxing it would change a type other crates build against.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// `"kind": "service"`.
    Service(ServiceObservation),
    /// `"kind": "domain"`.
    Domain(DomainScan),
}

/// The transport a service was reached over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// How far a scan of a service got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScanStatus {
    /// The scan completed.
    Completed,
    /// Application data was captured before a later step failed.
    Partial,
    /// The service was reached but nothing was captured. Never a current observation.
    Failed,
}

/// What one scan of one service (address, port, protocol) found.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceObservation {
    /// The host address (an IPv4-mapped IPv6 address is stored as IPv4).
    pub ip: IpAddr,
    /// The port.
    pub port: Port,
    /// TCP or UDP.
    pub transport: Transport,
    /// The registered protocol token.
    pub protocol: ProtocolToken,
    /// When the scan ran.
    pub observed_at: Timestamp,
    /// How far it got.
    pub status: ScanStatus,
    /// The scanner's error text: stored, never shown.
    pub error: Option<String>,
    /// Product identity.
    pub product: Option<Product>,
    /// Vulnerability summary; `None` means enrichment unavailable.
    pub vulnerabilities: Option<VulnerabilitySummary>,
    /// TLS session and leaf certificate.
    pub tls: Option<Tls>,
    /// HTTP evidence (`http`, `https` only).
    pub http: Option<Http>,
    /// SSH evidence (`ssh` only).
    pub ssh: Option<Ssh>,
    /// Summary evidence (every other protocol).
    pub summary: Option<Summary>,
    /// Host enrichment recorded at scan time.
    pub host: HostEnrichment,
}

/// A stored domain-scan record: a DNS name and the addresses it resolved to.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainScan {
    /// The name that was resolved.
    pub name: DomainName,
    /// The addresses it resolved to, unique, at least one.
    pub addresses: Vec<IpAddr>,
    /// When it was resolved.
    pub observed_at: Timestamp,
}
