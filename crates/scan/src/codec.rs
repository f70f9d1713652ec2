//! The binary encoding of the records the durable store keeps: a [`HostRecord`] per address
//! and a [`DomainScan`] per name.
//!
//! The format is hand-written and versioned: a leading format-version byte
//! ([`FORMAT_VERSION`]), a kind byte (`H` for a host record, `D` for a domain scan), then the
//! fields in a fixed order. Integers are LEB128 varints; strings are a varint byte length and
//! UTF-8; a vector is a varint count and its items; the optional members of a block share one
//! presence byte (bit 0 for the first member), and only the present ones follow. Every value
//! of a validated type is written in a form its constructor takes back (a protocol by its
//! token text, not its registry index, so a registry that grows does not change what a stored
//! record means).
//!
//! Decoding trusts nothing: every newtype is rebuilt through its constructor (`Port::new`,
//! `Asn::new`, `ProtocolToken::parse`, `DomainName::parse`, `CveId::from_parts`,
//! `Cvss::from_tenths`, `Cpe23::parse`, `CountryCode::parse`, `Timestamp::from_unix`, …), the
//! invariants the observation reader guarantees are checked again (a failed status, a latitude
//! outside ±90°, duplicate services or CVEs, reverse DNS on IPv6, trailing bytes …), and any
//! violation is a [`CodecError`] saying where, never a panic or an invalid value. Lengths are
//! bounded by the bytes that remain, so a corrupt length cannot make the decoder allocate much.
//!
//! # Host record, version 1
//! ```text
//! 0x01 'H' ip
//! presence(location, position, reverse_dns, enrichment)
//!   [location timestamp] [position timestamp] [vec<domain> timestamp]
//!   [enrichment timestamp]
//! vec<service>                          in (port, protocol) order
//!
//! ip          = 0x04 4 bytes | 0x06 16 bytes
//! timestamp   = varint seconds since the epoch
//! enrichment  = location-ref reverse-dns-ref
//!               presence(research, bgp, network, provider, whois, dns_name, domain) …
//!   location-ref    = 0 none | 1 the record's location | 2 location
//!   reverse-dns-ref = 0 none | 1 the record's reverse DNS | 2 vec<domain>
//! service     = varint port, str protocol, bits(transport udp, status partial), timestamp,
//!               presence(error, product, vulnerabilities, tls, http, ssh, summary) …
//! ```
//! # Domain scan, version 1
//! ```text
//! 0x01 'D' str name, timestamp, vec<ip>
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use periscope_model::observation::{
    AsnsView, DomainScan, HostView, LocationView, ScanStatus, ServiceView, Transport, WhoisView,
};
use periscope_model::record::{
    AsnAttribution, AsnAttributions, Certificate, HostEnrichment, Http, Location, NetworkProvider,
    Position, Product, Ssh, Summary, Tls, VulnerabilitySummary, Whois,
};
use periscope_model::{
    Asn, CountryCode, Cpe23, CveId, Cvss, DomainName, InvalidValue, IpCidr, Ipv4Cidr, Port,
    ProtocolToken, Timestamp,
};

use crate::store::{HostRecord, StoredService};

/// The version this build writes and the only one it reads.
pub const FORMAT_VERSION: u8 = 1;

/// The kind byte of a host record.
const HOST_KIND: u8 = b'H';
/// The kind byte of a domain scan.
const DOMAIN_KIND: u8 = b'D';

/// At most this many addresses per domain scan (the observation reader's bound).
const MAX_SCAN_ADDRESSES: usize = 256;

/// Why bytes are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// No bytes at all.
    #[error("empty record")]
    Empty,
    /// The leading version byte names a format this build does not read.
    #[error("format version {found} is not supported (this build reads version {FORMAT_VERSION})")]
    UnknownVersion {
        /// The version byte found.
        found: u8,
    },
    /// The kind byte is not that of the record asked for.
    #[error("not a {expected} record (kind byte {found:#04x})")]
    WrongKind {
        /// The kind of record expected.
        expected: &'static str,
        /// The kind byte found.
        found: u8,
    },
    /// The bytes end inside a value.
    #[error("truncated at byte {at}: {what} runs past the end")]
    Truncated {
        /// Offset of the value that is cut short.
        at: usize,
        /// The field being read.
        what: &'static str,
    },
    /// A value that is not what its field allows.
    #[error("bad {what} at byte {at}: {reason}")]
    Malformed {
        /// Offset of the value.
        at: usize,
        /// The field being read.
        what: &'static str,
        /// What is wrong with it.
        reason: Cow<'static, str>,
    },
    /// Bytes follow a complete record.
    #[error("{count} bytes follow the end of the record")]
    TrailingBytes {
        /// How many.
        count: usize,
    },
}

/// Result of a decoding step.
type Result<T, E = CodecError> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------------
// Public entry points.

/// Encodes a host record.
pub fn encode_host(record: &HostRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    encode_host_into(record, &mut out);
    out
}

/// Encodes a host record, appending to `out` (so a caller can reuse one buffer).
pub fn encode_host_into(record: &HostRecord, out: &mut Vec<u8>) {
    let mut w = Writer { buf: out };
    w.u8(FORMAT_VERSION);
    w.u8(HOST_KIND);
    w.ip(record.ip);
    w.presence(&[
        record.location.is_some(),
        record.position.is_some(),
        record.reverse_dns.is_some(),
        record.enrichment.is_some(),
    ]);
    if let Some((location, at)) = &record.location {
        w.location(location);
        w.timestamp(*at);
    }
    if let Some((position, at)) = &record.position {
        w.position(position);
        w.timestamp(*at);
    }
    if let Some((names, at)) = &record.reverse_dns {
        w.domains(names);
        w.timestamp(*at);
    }
    if let Some((enrichment, at)) = &record.enrichment {
        w.enrichment(enrichment, record);
        w.timestamp(*at);
    }
    w.len(record.services.len());
    for service in record.services.values() {
        w.service(service);
    }
}

/// Decodes a host record, validating every value.
pub fn decode_host(bytes: &[u8]) -> Result<HostRecord> {
    let mut r = Reader::new(bytes, HOST_KIND, "host")?;
    let ip = r.ip("ip")?;
    let mut present = r.presence(4, "host presence")?;
    let location = present
        .take()
        .then(|| Ok((r.location()?, r.timestamp("location time")?)))
        .transpose()?;
    let position = present
        .take()
        .then(|| Ok((r.position()?, r.timestamp("position time")?)))
        .transpose()?;
    let at = r.pos;
    let reverse_dns = present
        .take()
        .then(|| Ok((r.domains("reverse_dns")?, r.timestamp("reverse_dns time")?)))
        .transpose()?;
    if ip.is_ipv6() && reverse_dns.is_some() {
        return Err(malformed(
            at,
            "reverse_dns",
            "an IPv6 host has no reverse DNS",
        ));
    }
    let enrichment = present
        .take()
        .then(|| {
            Ok((
                r.enrichment(ip, location.as_ref(), reverse_dns.as_ref())?,
                r.timestamp("enrichment time")?,
            ))
        })
        .transpose()?;
    let count = r.count(1, "services")?;
    let mut services = BTreeMap::new();
    for _ in 0..count {
        let at = r.pos;
        let service = r.service()?;
        if ip.is_ipv6() && !service.protocol.entry().ipv6 {
            return Err(malformed(
                at,
                "service.protocol",
                format!("{} is not registered for IPv6", service.protocol),
            ));
        }
        let key = (service.port, service.protocol);
        if services.insert(key, service).is_some() {
            return Err(malformed(
                at,
                "service",
                format!("the service {}/{} appears twice", key.0, key.1),
            ));
        }
    }
    r.finish()?;
    Ok(HostRecord {
        ip,
        enrichment,
        location,
        position,
        reverse_dns,
        services,
    })
}

/// Decodes services encoded back to back as a host record holds them (the earlier services
/// [`RecordBuilder::finish_into`] writes), validating every value.
pub fn decode_services(bytes: &[u8]) -> Result<Vec<StoredService>> {
    let mut r = Reader { buf: bytes, pos: 0 };
    let mut services = Vec::new();
    while r.remaining() > 0 {
        services.push(r.service()?);
    }
    Ok(services)
}

/// The bytes that break a tie between two candidates for one fact observed in the same second
/// (see [`crate::store`]): the greater encoding wins. Encodings are canonical (one value, one
/// encoding), so this is a fixed total order on values, the same whatever the arrival order.
pub mod tie {
    use periscope_model::DomainName;
    use periscope_model::record::{HostEnrichment, Location, Position};

    use super::Writer;
    use crate::store::{HostRecord, StoredService};

    fn bytes(write: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut out = Vec::with_capacity(128);
        write(&mut Writer { buf: &mut out });
        out
    }

    /// A service's tie bytes.
    pub fn service(s: &StoredService) -> Vec<u8> {
        bytes(|w| w.service(s))
    }

    /// A location's tie bytes.
    pub fn location(l: &Location) -> Vec<u8> {
        bytes(|w| w.location(l))
    }

    /// A position's tie bytes.
    pub fn position(p: &Position) -> Vec<u8> {
        bytes(|w| w.position(p))
    }

    /// A reverse-DNS list's tie bytes.
    pub fn names(names: &[DomainName]) -> Vec<u8> {
        bytes(|w| w.domains(names))
    }

    /// An enrichment block's tie bytes, written in full (against a record holding nothing, so
    /// no part is encoded as a reference to the record's own).
    pub fn enrichment(e: &HostEnrichment, empty: &HostRecord) -> Vec<u8> {
        bytes(|w| w.enrichment(e, empty))
    }
}

/// Builds the encoded record of a few service observations of one address straight from
/// their views ([`ServiceView`]), without a [`HostRecord`] of owned values: the bytes are
/// those [`encode_host`] writes for the record that applying the same observations to
/// [`HostRecord::new`] gives.
///
/// When a service is observed again, the newer observation (by [`HostRecord::apply`]'s rule,
/// compared on the service's bytes) takes its place, and the one it replaced is kept aside
/// among the *earlier* services ([`Self::finish_into`] writes them after the record), so that
/// a store merging the record into one it holds can count each observation as applying it
/// would have ([`HostRecord::merge_after`]); an observation that does not replace its
/// service's is counted as superseded ([`Self::superseded`]).
///
/// Each host fact keeps its best candidate as the bytes that break ties ([`tie`]), so
/// choosing it is a comparison of timestamps, then bytes, exactly as [`HostRecord::apply`]
/// chooses; nothing is cloned or allocated per observation once the buffers have grown.
#[derive(Debug, Default)]
pub struct RecordBuilder {
    ip: Option<IpAddr>,
    /// The services' bytes back to back, and per service its key, range and rank.
    service_bytes: Vec<u8>,
    services: Vec<Entry>,
    /// Services replaced by a newer observation of theirs, in the order they were replaced.
    earlier: Vec<u8>,
    /// Counting observations that did not replace their service's.
    superseded: u32,
    /// Counting observations that did.
    applied: u32,
    location: Fact,
    position: Fact,
    reverse_dns: Fact,
    /// The enrichment's tie bytes: location part, reverse-DNS part, the rest.
    enrichment: Fact,
    /// Where the enrichment's location part and reverse-DNS part end in its bytes.
    enrichment_parts: (usize, usize),
    /// The location bytes with every negative zero written as zero, when they differ (the
    /// record's location and the enrichment's are compared as values).
    location_key: Option<Vec<u8>>,
    enrichment_location_key: Option<Vec<u8>>,
    candidate: Vec<u8>,
}

/// One service of a [`RecordBuilder`]: its key, where its bytes are, and what ranks it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: (Port, ProtocolToken),
    start: usize,
    end: usize,
    at: Timestamp,
    completed: bool,
}

/// A host fact's best candidate so far: when, and its tie bytes.
#[derive(Debug, Default)]
struct Fact {
    at: Option<Timestamp>,
    bytes: Vec<u8>,
    /// Whether the last candidate offered won: `bytes` are its bytes.
    holds_last: bool,
}

impl Fact {
    /// Takes `candidate` (swapping buffers) when it replaces the current one: there is none,
    /// it is newer, or as new with greater bytes. True when it did.
    fn offer(&mut self, at: Timestamp, candidate: &mut Vec<u8>) -> bool {
        let wins = match self.at {
            None => true,
            Some(stored) => match at.cmp(&stored) {
                std::cmp::Ordering::Greater => true,
                std::cmp::Ordering::Less => false,
                std::cmp::Ordering::Equal => candidate.as_slice() > self.bytes.as_slice(),
            },
        };
        if wins {
            self.at = Some(at);
            std::mem::swap(&mut self.bytes, candidate);
        }
        self.holds_last = wins;
        wins
    }

    /// [`Self::offer`] of the bytes it holds, as of `at`: a newer time is taken, the bytes
    /// stay (as new with equal bytes does not replace).
    fn offer_again(&mut self, at: Timestamp) {
        if self.at.is_none_or(|stored| at > stored) {
            self.at = Some(at);
        }
    }
}

impl RecordBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts the record of `ip`, forgetting the last one (keeping the memory).
    pub fn start(&mut self, ip: IpAddr) {
        self.ip = Some(ip);
        self.service_bytes.clear();
        self.services.clear();
        self.earlier.clear();
        self.superseded = 0;
        self.applied = 0;
        for fact in [
            &mut self.location,
            &mut self.position,
            &mut self.reverse_dns,
            &mut self.enrichment,
        ] {
            fact.at = None;
            fact.holds_last = false;
        }
        self.location_key = None;
        self.enrichment_location_key = None;
    }

    /// The address of the record being built, if one was started.
    pub fn ip(&self) -> Option<IpAddr> {
        self.ip
    }

    /// Adds a counting observation (not `failed`) of the record's address; true when it
    /// became its service's current observation (as [`HostRecord::apply`] says `Applied` on a
    /// record of only the observations added so far).
    pub fn add(&mut self, s: &ServiceView<'_>) -> bool {
        self.add_host(s, false)
    }

    /// [`Self::add`] of an observation whose `host` is equal to that of the observation added
    /// last since [`Self::start`] (a reader that saw the line repeat the last block knows it
    /// for free). Its host facts are then offered again without being written: where each
    /// holds the bytes it was last offered, only its time can change.
    pub fn add_after_same_host(&mut self, s: &ServiceView<'_>) -> bool {
        self.add_host(s, true)
    }

    fn add_host(&mut self, s: &ServiceView<'_>, same_host: bool) -> bool {
        debug_assert_eq!(self.ip, Some(s.ip), "observation of another address");
        debug_assert!(
            s.status != ScanStatus::Failed,
            "a failed observation counts"
        );
        let at = s.observed_at;
        let start = self.service_bytes.len();
        Writer {
            buf: &mut self.service_bytes,
        }
        .service_view(s);
        let entry = Entry {
            key: (s.port, s.protocol),
            start,
            end: self.service_bytes.len(),
            at,
            completed: s.status == ScanStatus::Completed,
        };
        let applied = match self.services.iter_mut().find(|e| e.key == entry.key) {
            None => {
                self.services.push(entry);
                true
            }
            Some(current) => {
                let bytes = &self.service_bytes;
                // `HostRecord::merge_service`'s rule: newer, or as new and greater by
                // (completed, tie bytes).
                let wins = match at.cmp(&current.at) {
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Equal => {
                        (entry.completed, &bytes[entry.start..entry.end])
                            > (current.completed, &bytes[current.start..current.end])
                    }
                };
                if wins {
                    self.earlier
                        .extend_from_slice(&bytes[current.start..current.end]);
                    *current = entry;
                } else {
                    self.service_bytes.truncate(start);
                }
                wins
            }
        };
        if applied {
            self.applied += 1;
        } else {
            self.superseded += 1;
        }
        let host = &s.host;
        if same_host && self.offer_host_again(host, at) {
            return applied;
        }
        if let Some(location) = &host.location {
            self.candidate.clear();
            Writer {
                buf: &mut self.candidate,
            }
            .location_view(location);
            let key = location_key(location);
            if self.location.offer(at, &mut self.candidate) {
                self.location_key = key;
            }
            if let Some(position) = &location.position {
                self.candidate.clear();
                Writer {
                    buf: &mut self.candidate,
                }
                .position(position);
                self.position.offer(at, &mut self.candidate);
            }
        }
        if !host.reverse_dns.is_empty() {
            self.candidate.clear();
            Writer {
                buf: &mut self.candidate,
            }
            .domains(&host.reverse_dns);
            self.reverse_dns.offer(at, &mut self.candidate);
        }
        // The enrichment written in full, as `tie::enrichment` writes it.
        self.candidate.clear();
        let mut w = Writer {
            buf: &mut self.candidate,
        };
        match &host.location {
            None => w.u8(0),
            Some(l) => {
                w.u8(2);
                w.location_view(l);
            }
        }
        let location_end = w.buf.len();
        if host.reverse_dns.is_empty() {
            w.u8(0);
        } else {
            w.u8(2);
            w.domains(&host.reverse_dns);
        }
        let reverse_dns_end = w.buf.len();
        w.enrichment_rest(host);
        if self.enrichment.offer(at, &mut self.candidate) {
            self.enrichment_parts = (location_end, reverse_dns_end);
            self.enrichment_location_key = host.location.as_ref().and_then(location_key);
        }
        applied
    }

    /// Offers again, as of `at`, the host facts of `host` (equal to the host last added) when
    /// each holds the bytes last offered to it; false, changing nothing, when one does not.
    fn offer_host_again(&mut self, host: &HostView<'_>, at: Timestamp) -> bool {
        let location = host.location.as_ref();
        let facts = [
            (location.is_some(), &self.location),
            (
                location.is_some_and(|l| l.position.is_some()),
                &self.position,
            ),
            (!host.reverse_dns.is_empty(), &self.reverse_dns),
            (true, &self.enrichment),
        ];
        if facts
            .iter()
            .any(|(offered, fact)| *offered && !fact.holds_last)
        {
            return false;
        }
        let offered = facts.map(|(offered, _)| offered);
        for (offered, fact) in offered.into_iter().zip([
            &mut self.location,
            &mut self.position,
            &mut self.reverse_dns,
            &mut self.enrichment,
        ]) {
            if offered {
                fact.offer_again(at);
            }
        }
        true
    }

    /// Counting observations added that became their service's current one.
    pub fn applied(&self) -> u32 {
        self.applied
    }

    /// Counting observations added that did not.
    pub fn superseded(&self) -> u32 {
        self.superseded
    }

    /// Appends the record to `out` (nothing when no counting observation was added), then
    /// the earlier services (each as a service of a record is encoded, read back by
    /// [`decode_services`]), and forgets it. Returns the length of the record.
    pub fn finish_into(&mut self, out: &mut Vec<u8>) -> usize {
        let Some(ip) = self.ip.take() else { return 0 };
        let Some(enriched_at) = self.enrichment.at else {
            return 0;
        };
        let start = out.len();
        let mut w = Writer { buf: out };
        w.u8(FORMAT_VERSION);
        w.u8(HOST_KIND);
        w.ip(ip);
        w.presence(&[
            self.location.at.is_some(),
            self.position.at.is_some(),
            self.reverse_dns.at.is_some(),
            true,
        ]);
        for fact in [&self.location, &self.position, &self.reverse_dns] {
            if let Some(at) = fact.at {
                w.buf.extend_from_slice(&fact.bytes);
                w.timestamp(at);
            }
        }
        let (location_end, reverse_dns_end) = self.enrichment_parts;
        let e = &self.enrichment.bytes;
        // A part equal to the record's own is written as a reference to it (1), as
        // `encode_host` writes it: the location compared as a value, so a negative zero
        // equals zero.
        let location = &e[1..location_end];
        let same_location = e[0] == 2
            && self.location.at.is_some()
            && self.enrichment_location_key.as_deref().unwrap_or(location)
                == self.location_key.as_deref().unwrap_or(&self.location.bytes);
        if same_location {
            w.u8(1);
        } else {
            w.buf.extend_from_slice(&e[..location_end]);
        }
        let names = &e[location_end + 1..reverse_dns_end];
        if e[location_end] == 2 && self.reverse_dns.at.is_some() && names == self.reverse_dns.bytes
        {
            w.u8(1);
        } else {
            w.buf.extend_from_slice(&e[location_end..reverse_dns_end]);
        }
        w.buf.extend_from_slice(&e[reverse_dns_end..]);
        w.timestamp(enriched_at);
        self.services.sort_unstable_by_key(|e| e.key);
        w.len(self.services.len());
        for e in &self.services {
            w.buf.extend_from_slice(&self.service_bytes[e.start..e.end]);
        }
        let record = w.buf.len() - start;
        w.buf.extend_from_slice(&self.earlier);
        record
    }
}

/// The location's bytes with negative zeros written as zeros, when it has one (`None`
/// otherwise: its bytes are their own key). Two locations are equal exactly when their keys
/// are.
fn location_key(l: &LocationView<'_>) -> Option<Vec<u8>> {
    let negative_zero = |x: f64| x == 0.0 && x.is_sign_negative();
    let p = l.position?;
    if !negative_zero(p.latitude) && !negative_zero(p.longitude) {
        return None;
    }
    let mut normal = l.clone();
    normal.position = Some(Position {
        latitude: p.latitude + 0.0,
        longitude: p.longitude + 0.0,
        ..p
    });
    let mut key = Vec::new();
    Writer { buf: &mut key }.location_view(&normal);
    Some(key)
}

/// Encodes a domain scan.
pub fn encode_domain_scan(scan: &DomainScan) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + scan.name.as_str().len() + 17 * scan.addresses.len());
    let mut w = Writer { buf: &mut out };
    w.u8(FORMAT_VERSION);
    w.u8(DOMAIN_KIND);
    w.str(scan.name.as_str());
    w.timestamp(scan.observed_at);
    w.len(scan.addresses.len());
    for ip in &scan.addresses {
        w.ip(*ip);
    }
    out
}

/// Decodes a domain scan, validating every value.
pub fn decode_domain_scan(bytes: &[u8]) -> Result<DomainScan> {
    let mut r = Reader::new(bytes, DOMAIN_KIND, "domain scan")?;
    let name = r.domain("name")?;
    let observed_at = r.timestamp("observed_at")?;
    let at = r.pos;
    let count = r.count(5, "addresses")?;
    if !(1..=MAX_SCAN_ADDRESSES).contains(&count) {
        return Err(malformed(
            at,
            "addresses",
            format!("{count} addresses; a scan lists 1 to {MAX_SCAN_ADDRESSES}"),
        ));
    }
    let mut addresses = Vec::with_capacity(count);
    for _ in 0..count {
        addresses.push(r.ip("address")?);
    }
    if !all_unique(&addresses) {
        return Err(malformed(at, "addresses", "an address appears twice"));
    }
    r.finish()?;
    Ok(DomainScan {
        name,
        addresses,
        observed_at,
    })
}

// ---------------------------------------------------------------------------------------------
// Writing.

/// Appends values to a buffer.
struct Writer<'a> {
    buf: &'a mut Vec<u8>,
}

impl Writer<'_> {
    fn u8(&mut self, b: u8) {
        self.buf.push(b);
    }

    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            // Low seven bits with the continuation bit: the truncation is the point.
            self.buf.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn len(&mut self, n: usize) {
        self.varint(n as u64);
    }

    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn opt_str(&mut self, s: &Option<String>) {
        self.opt(s.as_deref());
    }

    fn opt(&mut self, s: Option<&str>) {
        if let Some(s) = s {
            self.str(s);
        }
    }

    /// One byte: bit `i` set when `bits[i]`. At most eight members.
    fn presence(&mut self, bits: &[bool]) {
        debug_assert!(bits.len() <= 8);
        let byte = bits
            .iter()
            .enumerate()
            .fold(0u8, |acc, (i, b)| acc | (u8::from(*b) << i));
        self.u8(byte);
    }

    fn timestamp(&mut self, t: Timestamp) {
        // A timestamp is never before the epoch.
        self.varint(t.unix().unsigned_abs());
    }

    fn f64(&mut self, x: f64) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }

    fn ip(&mut self, ip: IpAddr) {
        match ip {
            IpAddr::V4(a) => {
                self.u8(4);
                self.buf.extend_from_slice(&a.octets());
            }
            IpAddr::V6(a) => {
                self.u8(6);
                self.buf.extend_from_slice(&a.octets());
            }
        }
    }

    fn domains(&mut self, names: &[DomainName]) {
        self.len(names.len());
        for name in names {
            self.str(name.as_str());
        }
    }

    fn location(&mut self, l: &Location) {
        self.location_view(&LocationView::of(l));
    }

    fn location_view(&mut self, l: &LocationView<'_>) {
        self.presence(&[
            l.continent.is_some(),
            l.country_code.is_some(),
            l.country_name.is_some(),
            l.subdivision_1.is_some(),
            l.subdivision_2.is_some(),
            l.city.is_some(),
            l.position.is_some(),
        ]);
        self.opt(l.continent);
        if let Some(c) = l.country_code {
            self.str(c.as_str());
        }
        self.opt(l.country_name);
        self.opt(l.subdivision_1);
        self.opt(l.subdivision_2);
        self.opt(l.city);
        if let Some(p) = &l.position {
            self.position(p);
        }
    }

    fn position(&mut self, p: &Position) {
        self.f64(p.latitude);
        self.f64(p.longitude);
        self.presence(&[p.accuracy_radius_km.is_some()]);
        if let Some(r) = p.accuracy_radius_km {
            self.varint(u64::from(r));
        }
    }

    /// The enrichment block; its location and reverse DNS refer to the record's own when they
    /// are equal (they usually are: both come from the most recent observation).
    fn enrichment(&mut self, e: &HostEnrichment, record: &HostRecord) {
        match &e.location {
            None => self.u8(0),
            Some(l) if record.location.as_ref().is_some_and(|(own, _)| own == l) => self.u8(1),
            Some(l) => {
                self.u8(2);
                self.location(l);
            }
        }
        match &e.reverse_dns {
            names if names.is_empty() => self.u8(0),
            names
                if record
                    .reverse_dns
                    .as_ref()
                    .is_some_and(|(own, _)| own == names) =>
            {
                self.u8(1)
            }
            names => {
                self.u8(2);
                self.domains(names);
            }
        }
        self.enrichment_rest(&HostView::of(e));
    }

    /// The enrichment block after its location and reverse DNS.
    fn enrichment_rest(&mut self, e: &HostView<'_>) {
        let AsnsView {
            research,
            bgp,
            network,
        } = &e.asn;
        self.presence(&[
            research.is_some(),
            bgp.is_some(),
            network.is_some(),
            e.provider.is_some(),
            e.whois.is_some(),
            e.dns_name.is_some(),
            e.domain.is_some(),
        ]);
        for a in [research, bgp, network].into_iter().flatten() {
            self.varint(u64::from(a.asn.get()));
            self.presence(&[a.organization.is_some()]);
            self.opt(a.organization);
        }
        if let Some(p) = &e.provider {
            self.presence(&[
                p.organization.is_some(),
                p.as_organization.is_some(),
                p.isp.is_some(),
            ]);
            self.opt(p.organization);
            self.opt(p.as_organization);
            self.opt(p.isp);
        }
        if let Some(w) = &e.whois {
            self.whois(w);
        }
        if let Some(n) = &e.dns_name {
            self.str(n.as_str());
        }
        if let Some(n) = &e.domain {
            self.str(n.as_str());
        }
    }

    fn whois(&mut self, w: &WhoisView<'_>) {
        self.presence(&[
            w.description.is_some(),
            w.netname.is_some(),
            w.organization.is_some(),
            w.cidr.is_some(),
            w.registry.is_some(),
            w.country_code.is_some(),
        ]);
        self.opt(w.description);
        self.opt(w.netname);
        self.opt(w.organization);
        match w.cidr {
            None => {}
            Some(IpCidr::V4(c)) => {
                self.u8(4);
                self.buf.extend_from_slice(&c.network().octets());
                self.u8(c.prefix());
            }
            Some(IpCidr::V6(a, p)) => {
                self.u8(6);
                self.buf.extend_from_slice(&a.octets());
                self.u8(p);
            }
        }
        self.opt(w.registry);
        if let Some(c) = w.country_code {
            self.str(c.as_str());
        }
    }

    fn service(&mut self, s: &StoredService) {
        self.varint(u64::from(s.port.get()));
        self.str(s.protocol.as_str());
        let udp = s.transport == Transport::Udp;
        // A stored service is never failed; `decode` refuses one, so encode it as completed
        // would silently change it. Partial is the only other bit.
        let partial = s.status == ScanStatus::Partial;
        debug_assert!(
            s.status != ScanStatus::Failed,
            "a failed service was stored"
        );
        self.u8(u8::from(udp) | (u8::from(partial) << 1));
        self.timestamp(s.observed_at);
        self.presence(&[
            s.error.is_some(),
            s.product.is_some(),
            s.vulnerabilities.is_some(),
            s.tls.is_some(),
            s.http.is_some(),
            s.ssh.is_some(),
            s.summary.is_some(),
        ]);
        self.opt_str(&s.error);
        if let Some(p) = &s.product {
            self.str(&p.title);
            self.presence(&[p.version.is_some(), p.cpe.is_some()]);
            self.opt_str(&p.version);
            if let Some(c) = &p.cpe {
                self.str(c.as_str());
            }
        }
        if let Some(v) = &s.vulnerabilities {
            self.presence(&[v.max_cvss.is_some(), v.has_exploits]);
            if let Some(c) = v.max_cvss {
                self.u8(c.tenths());
            }
            self.len(v.cves.len());
            for cve in &v.cves {
                self.varint(u64::from(cve.year()));
                self.varint(u64::from(cve.number()));
            }
        }
        if let Some(t) = &s.tls {
            self.tls(t);
        }
        if let Some(h) = &s.http {
            self.presence(&[
                h.status_code.is_some(),
                h.title.is_some(),
                h.server.is_some(),
                h.complete,
            ]);
            if let Some(c) = h.status_code {
                self.varint(u64::from(c));
            }
            self.opt_str(&h.title);
            self.opt_str(&h.server);
        }
        if let Some(s) = &s.ssh {
            self.presence(&[
                s.protocol_version.is_some(),
                s.software_version.is_some(),
                s.host_key_algorithm.is_some(),
                s.host_key_fingerprint.is_some(),
                s.comments.is_some(),
                s.hassh.is_some(),
            ]);
            self.opt_str(&s.protocol_version);
            self.opt_str(&s.software_version);
            self.opt_str(&s.host_key_algorithm);
            self.opt_str(&s.host_key_fingerprint);
            self.opt_str(&s.comments);
            self.opt_str(&s.hassh);
        }
        if let Some(summary) = &s.summary {
            self.len(summary.fields.len());
            for (k, v) in &summary.fields {
                self.str(k);
                self.str(v);
            }
        }
    }

    /// [`Self::service`] of a service line's view (its host enrichment aside): the same bytes.
    fn service_view(&mut self, s: &ServiceView<'_>) {
        self.varint(u64::from(s.port.get()));
        self.str(s.protocol.as_str());
        let udp = s.transport == Transport::Udp;
        let partial = s.status == ScanStatus::Partial;
        debug_assert!(
            s.status != ScanStatus::Failed,
            "a failed service was stored"
        );
        self.u8(u8::from(udp) | (u8::from(partial) << 1));
        self.timestamp(s.observed_at);
        self.presence(&[
            s.error.is_some(),
            s.product.is_some(),
            s.vulnerabilities.is_some(),
            s.tls.is_some(),
            s.http.is_some(),
            s.ssh.is_some(),
            s.summary.is_some(),
        ]);
        self.opt(s.error);
        if let Some(p) = &s.product {
            self.str(p.title);
            self.presence(&[p.version.is_some(), p.cpe.is_some()]);
            self.opt(p.version);
            if let Some(c) = &p.cpe {
                self.str(c.as_str());
            }
        }
        if let Some(v) = &s.vulnerabilities {
            self.presence(&[v.max_cvss.is_some(), v.has_exploits]);
            if let Some(c) = v.max_cvss {
                self.u8(c.tenths());
            }
            self.len(v.cves.len());
            for cve in v.cves.iter() {
                self.varint(u64::from(cve.year()));
                self.varint(u64::from(cve.number()));
            }
        }
        if let Some(t) = &s.tls {
            self.presence(&[
                t.version.is_some(),
                t.cipher_suite.is_some(),
                t.browser_trusted.is_some(),
                t.browser_trusted == Some(true),
                t.certificate.is_some(),
            ]);
            self.opt(t.version);
            self.opt(t.cipher_suite);
            if let Some(c) = &t.certificate {
                self.len(c.subject_alt_names.len());
                for name in &c.subject_alt_names {
                    self.str(name);
                }
                self.presence(&[
                    c.common_name.is_some(),
                    c.subject_organization.is_some(),
                    c.issuer_common_name.is_some(),
                    c.issuer_organization.is_some(),
                    c.valid_from.is_some(),
                    c.valid_until.is_some(),
                    c.fingerprint_sha256.is_some(),
                ]);
                self.opt(c.common_name);
                self.opt(c.subject_organization);
                self.opt(c.issuer_common_name);
                self.opt(c.issuer_organization);
                if let Some(t) = c.valid_from {
                    self.timestamp(t);
                }
                if let Some(t) = c.valid_until {
                    self.timestamp(t);
                }
                self.opt(c.fingerprint_sha256.as_deref());
            }
        }
        if let Some(h) = &s.http {
            self.presence(&[
                h.status_code.is_some(),
                h.title.is_some(),
                h.server.is_some(),
                h.complete,
            ]);
            if let Some(c) = h.status_code {
                self.varint(u64::from(c));
            }
            self.opt(h.title);
            self.opt(h.server);
        }
        if let Some(s) = &s.ssh {
            self.presence(&[
                s.protocol_version.is_some(),
                s.software_version.is_some(),
                s.host_key_algorithm.is_some(),
                s.host_key_fingerprint.is_some(),
                s.comments.is_some(),
                s.hassh.is_some(),
            ]);
            self.opt(s.protocol_version);
            self.opt(s.software_version);
            self.opt(s.host_key_algorithm);
            self.opt(s.host_key_fingerprint);
            self.opt(s.comments);
            self.opt(s.hassh.as_deref());
        }
        if let Some(summary) = &s.summary {
            self.len(summary.fields.len());
            for (k, v) in &summary.fields {
                self.str(k);
                self.str(v);
            }
        }
    }

    fn tls(&mut self, t: &Tls) {
        self.presence(&[
            t.version.is_some(),
            t.cipher_suite.is_some(),
            t.browser_trusted.is_some(),
            t.browser_trusted == Some(true),
            t.certificate.is_some(),
        ]);
        self.opt_str(&t.version);
        self.opt_str(&t.cipher_suite);
        if let Some(c) = &t.certificate {
            self.len(c.subject_alt_names.len());
            for name in &c.subject_alt_names {
                self.str(name);
            }
            self.presence(&[
                c.common_name.is_some(),
                c.subject_organization.is_some(),
                c.issuer_common_name.is_some(),
                c.issuer_organization.is_some(),
                c.valid_from.is_some(),
                c.valid_until.is_some(),
                c.fingerprint_sha256.is_some(),
            ]);
            self.opt_str(&c.common_name);
            self.opt_str(&c.subject_organization);
            self.opt_str(&c.issuer_common_name);
            self.opt_str(&c.issuer_organization);
            if let Some(t) = c.valid_from {
                self.timestamp(t);
            }
            if let Some(t) = c.valid_until {
                self.timestamp(t);
            }
            self.opt_str(&c.fingerprint_sha256);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading.

/// The presence byte of a block, consumed one member at a time in field order.
struct Presence(u8);

impl Presence {
    /// Whether the next member is present.
    fn take(&mut self) -> bool {
        let present = self.0 & 1 == 1;
        self.0 >>= 1;
        present
    }
}

fn malformed(at: usize, what: &'static str, reason: impl Into<Cow<'static, str>>) -> CodecError {
    CodecError::Malformed {
        at,
        what,
        reason: reason.into(),
    }
}

/// Reads values from a record, checking each one.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Checks the version and kind bytes.
    fn new(buf: &'a [u8], kind: u8, expected: &'static str) -> Result<Self> {
        match buf {
            [] => Err(CodecError::Empty),
            [version, ..] if *version != FORMAT_VERSION => {
                Err(CodecError::UnknownVersion { found: *version })
            }
            [_] => Err(CodecError::Truncated {
                at: 1,
                what: "kind",
            }),
            [_, found, ..] if *found != kind => Err(CodecError::WrongKind {
                expected,
                found: *found,
            }),
            _ => Ok(Self { buf, pos: 2 }),
        }
    }

    fn finish(&self) -> Result<()> {
        match self.buf.len() - self.pos {
            0 => Ok(()),
            count => Err(CodecError::TrailingBytes { count }),
        }
    }

    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(CodecError::Truncated { at: self.pos, what });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, what)?);
        Ok(out)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn varint(&mut self, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8(what)?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(malformed(start, what, "the varint overflows 64 bits"));
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed(
            start,
            what,
            "the varint is longer than ten bytes",
        ))
    }

    /// A varint that must fit `T`.
    fn int<T: TryFrom<u64>>(&mut self, what: &'static str) -> Result<T> {
        let at = self.pos;
        let v = self.varint(what)?;
        T::try_from(v).map_err(|_| malformed(at, what, format!("{v} is out of range")))
    }

    /// A count of items that take at least `min_item_bytes` each, so it is bounded by the
    /// bytes left (a corrupt count cannot make a caller allocate much).
    fn count(&mut self, min_item_bytes: usize, what: &'static str) -> Result<usize> {
        let at = self.pos;
        let n: usize = self.int(what)?;
        if n.saturating_mul(min_item_bytes) > self.remaining() {
            return Err(CodecError::Truncated { at, what });
        }
        Ok(n)
    }

    fn str(&mut self, what: &'static str) -> Result<&'a str> {
        let n = self.count(1, what)?;
        let at = self.pos;
        let bytes = self.take(n, what)?;
        std::str::from_utf8(bytes).map_err(|e| malformed(at, what, e.to_string()))
    }

    fn string(&mut self, what: &'static str) -> Result<String> {
        self.str(what).map(str::to_owned)
    }

    /// A string that must parse as a validated type.
    fn parsed<T>(
        &mut self,
        what: &'static str,
        parse: impl FnOnce(&str) -> Result<T, InvalidValue>,
    ) -> Result<T> {
        let at = self.pos;
        let s = self.str(what)?;
        parse(s).map_err(|e| malformed(at, what, e.to_string()))
    }

    fn opt_string(&mut self, present: bool, what: &'static str) -> Result<Option<String>> {
        present.then(|| self.string(what)).transpose()
    }

    /// A presence byte for a block of `members` optional members; unused bits must be clear.
    fn presence(&mut self, members: u32, what: &'static str) -> Result<Presence> {
        let at = self.pos;
        let byte = self.u8(what)?;
        if members < 8 && byte >> members != 0 {
            return Err(malformed(
                at,
                what,
                format!("bits beyond the {members} members are set ({byte:#010b})"),
            ));
        }
        Ok(Presence(byte))
    }

    fn timestamp(&mut self, what: &'static str) -> Result<Timestamp> {
        let at = self.pos;
        let secs = self.varint(what)?;
        i64::try_from(secs)
            .ok()
            .and_then(Timestamp::from_unix)
            .ok_or_else(|| malformed(at, what, format!("{secs} is outside 1970..=9999")))
    }

    fn f64(&mut self, what: &'static str) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array::<8>(what)?))
    }

    fn ip(&mut self, what: &'static str) -> Result<IpAddr> {
        let at = self.pos;
        match self.u8(what)? {
            4 => Ok(IpAddr::V4(Ipv4Addr::from(self.array::<4>(what)?))),
            6 => {
                let a = Ipv6Addr::from(self.array::<16>(what)?);
                if a.to_ipv4_mapped().is_some() {
                    return Err(malformed(
                        at,
                        what,
                        "an IPv4-mapped IPv6 address is stored as IPv4",
                    ));
                }
                Ok(IpAddr::V6(a))
            }
            family => Err(malformed(
                at,
                what,
                format!("address family byte {family} is neither 4 nor 6"),
            )),
        }
    }

    /// A name in its canonical form (parsing it again must not change it).
    fn domain(&mut self, what: &'static str) -> Result<DomainName> {
        let at = self.pos;
        let text = self.str(what)?;
        let name = DomainName::parse(text).map_err(|e| malformed(at, what, e.to_string()))?;
        if name.as_str() != text {
            return Err(malformed(at, what, "the name is not in canonical form"));
        }
        Ok(name)
    }

    fn domains(&mut self, what: &'static str) -> Result<Vec<DomainName>> {
        let at = self.pos;
        let n = self.count(2, what)?;
        let names = (0..n)
            .map(|_| self.domain(what))
            .collect::<Result<Vec<_>>>()?;
        if names.is_empty() {
            return Err(malformed(at, what, "an empty list is stored as absent"));
        }
        if !all_unique(&names) {
            return Err(malformed(at, what, "a name appears twice"));
        }
        Ok(names)
    }

    fn country(&mut self, what: &'static str) -> Result<CountryCode> {
        self.parsed(what, CountryCode::parse)
    }

    fn location(&mut self) -> Result<Location> {
        let mut p = self.presence(7, "location presence")?;
        Ok(Location {
            continent: self.opt_string(p.take(), "location.continent")?,
            country_code: p
                .take()
                .then(|| self.country("location.country_code"))
                .transpose()?,
            country_name: self.opt_string(p.take(), "location.country_name")?,
            subdivision_1: self.opt_string(p.take(), "location.subdivision_1")?,
            subdivision_2: self.opt_string(p.take(), "location.subdivision_2")?,
            city: self.opt_string(p.take(), "location.city")?,
            position: p.take().then(|| self.position()).transpose()?,
        })
    }

    fn position(&mut self) -> Result<Position> {
        let at = self.pos;
        let latitude = self.f64("position.latitude")?;
        if !(-90.0..=90.0).contains(&latitude) {
            return Err(malformed(at, "position.latitude", "outside -90..=90"));
        }
        let at = self.pos;
        let longitude = self.f64("position.longitude")?;
        if !(-180.0..=180.0).contains(&longitude) {
            return Err(malformed(at, "position.longitude", "outside -180..=180"));
        }
        let mut p = self.presence(1, "position presence")?;
        Ok(Position {
            latitude,
            longitude,
            accuracy_radius_km: p
                .take()
                .then(|| self.int("position.accuracy_radius_km"))
                .transpose()?,
        })
    }

    fn enrichment(
        &mut self,
        ip: IpAddr,
        own_location: Option<&(Location, Timestamp)>,
        own_reverse_dns: Option<&(Vec<DomainName>, Timestamp)>,
    ) -> Result<HostEnrichment> {
        let at = self.pos;
        let location = match self.u8("enrichment.location")? {
            0 => None,
            1 => Some(
                own_location
                    .map(|(l, _)| l.clone())
                    .ok_or_else(|| malformed(at, "enrichment.location", "no location to share"))?,
            ),
            2 => Some(self.location()?),
            tag => {
                return Err(malformed(
                    at,
                    "enrichment.location",
                    format!("unknown tag {tag}"),
                ));
            }
        };
        let at = self.pos;
        let reverse_dns = match self.u8("enrichment.reverse_dns")? {
            0 => Vec::new(),
            1 => own_reverse_dns.map(|(n, _)| n.clone()).ok_or_else(|| {
                malformed(at, "enrichment.reverse_dns", "no reverse DNS to share")
            })?,
            2 => self.domains("enrichment.reverse_dns")?,
            tag => {
                return Err(malformed(
                    at,
                    "enrichment.reverse_dns",
                    format!("unknown tag {tag}"),
                ));
            }
        };
        if ip.is_ipv6() && !reverse_dns.is_empty() {
            return Err(malformed(
                at,
                "enrichment.reverse_dns",
                "an IPv6 host has no reverse DNS",
            ));
        }
        let mut p = self.presence(7, "enrichment presence")?;
        let asn = AsnAttributions {
            research: p.take().then(|| self.asn("asn.research")).transpose()?,
            bgp: p.take().then(|| self.asn("asn.bgp")).transpose()?,
            network: p.take().then(|| self.asn("asn.network")).transpose()?,
        };
        let provider = p
            .take()
            .then(|| {
                let mut q = self.presence(3, "provider presence")?;
                Ok(NetworkProvider {
                    organization: self.opt_string(q.take(), "provider.organization")?,
                    as_organization: self.opt_string(q.take(), "provider.as_organization")?,
                    isp: self.opt_string(q.take(), "provider.isp")?,
                })
            })
            .transpose()?;
        let whois = p.take().then(|| self.whois()).transpose()?;
        let dns_name = p.take().then(|| self.domain("dns_name")).transpose()?;
        let domain = p.take().then(|| self.domain("domain")).transpose()?;
        Ok(HostEnrichment {
            location,
            asn,
            provider,
            whois,
            reverse_dns,
            dns_name,
            domain,
        })
    }

    fn asn(&mut self, what: &'static str) -> Result<AsnAttribution> {
        let at = self.pos;
        let n: u32 = self.int(what)?;
        let asn = Asn::new(n).map_err(|e| malformed(at, what, e.to_string()))?;
        let mut p = self.presence(1, "asn presence")?;
        Ok(AsnAttribution {
            asn,
            organization: self.opt_string(p.take(), "asn.organization")?,
        })
    }

    fn whois(&mut self) -> Result<Whois> {
        let mut p = self.presence(6, "whois presence")?;
        Ok(Whois {
            description: self.opt_string(p.take(), "whois.description")?,
            netname: self.opt_string(p.take(), "whois.netname")?,
            organization: self.opt_string(p.take(), "whois.organization")?,
            cidr: p.take().then(|| self.cidr()).transpose()?,
            registry: self.opt_string(p.take(), "whois.registry")?,
            country_code: p
                .take()
                .then(|| self.country("whois.country_code"))
                .transpose()?,
        })
    }

    fn cidr(&mut self) -> Result<IpCidr> {
        const WHAT: &str = "whois.cidr";
        let at = self.pos;
        let cidr = match self.u8(WHAT)? {
            4 => {
                let addr = Ipv4Addr::from(self.array::<4>(WHAT)?);
                let prefix = self.u8(WHAT)?;
                let c =
                    Ipv4Cidr::new(addr, prefix).map_err(|e| malformed(at, WHAT, e.to_string()))?;
                (c.network() == addr).then_some(IpCidr::V4(c))
            }
            6 => {
                let addr = Ipv6Addr::from(self.array::<16>(WHAT)?);
                let prefix = self.u8(WHAT)?;
                if prefix > 128 {
                    return Err(malformed(at, WHAT, format!("prefix /{prefix} is too long")));
                }
                let host_bits = u128::MAX.checked_shr(u32::from(prefix)).unwrap_or(0);
                (u128::from(addr) & host_bits == 0).then_some(IpCidr::V6(addr, prefix))
            }
            family => {
                return Err(malformed(
                    at,
                    WHAT,
                    format!("address family byte {family} is neither 4 nor 6"),
                ));
            }
        };
        cidr.ok_or_else(|| malformed(at, WHAT, "host bits are set"))
    }

    fn service(&mut self) -> Result<StoredService> {
        let at = self.pos;
        let n: u16 = self.int("service.port")?;
        let port = Port::new(n).map_err(|e| malformed(at, "service.port", e.to_string()))?;
        let protocol = self.parsed("service.protocol", ProtocolToken::parse)?;
        let at = self.pos;
        let bits = self.u8("service.transport/status")?;
        if bits > 0b11 {
            return Err(malformed(
                at,
                "service.transport/status",
                format!("unknown bits {bits:#010b}"),
            ));
        }
        let transport = if bits & 1 == 1 {
            Transport::Udp
        } else {
            Transport::Tcp
        };
        let status = if bits & 2 == 2 {
            ScanStatus::Partial
        } else {
            ScanStatus::Completed
        };
        let observed_at = self.timestamp("service.observed_at")?;
        let mut p = self.presence(7, "service presence")?;
        Ok(StoredService {
            port,
            protocol,
            transport,
            observed_at,
            status,
            error: self.opt_string(p.take(), "service.error")?,
            product: p.take().then(|| self.product()).transpose()?,
            vulnerabilities: p.take().then(|| self.vulnerabilities()).transpose()?,
            tls: p.take().then(|| self.tls()).transpose()?,
            http: p.take().then(|| self.http()).transpose()?,
            ssh: p.take().then(|| self.ssh()).transpose()?,
            summary: p.take().then(|| self.summary()).transpose()?,
        })
    }

    fn product(&mut self) -> Result<Product> {
        let title = self.string("product.title")?;
        let mut p = self.presence(2, "product presence")?;
        Ok(Product {
            title,
            version: self.opt_string(p.take(), "product.version")?,
            cpe: p
                .take()
                .then(|| self.parsed("product.cpe", Cpe23::parse))
                .transpose()?,
        })
    }

    fn vulnerabilities(&mut self) -> Result<VulnerabilitySummary> {
        let mut p = self.presence(2, "vulnerabilities presence")?;
        let max_cvss = p
            .take()
            .then(|| {
                let at = self.pos;
                let tenths = self.u8("vulnerabilities.max_cvss")?;
                Cvss::from_tenths(tenths)
                    .map_err(|e| malformed(at, "vulnerabilities.max_cvss", e.to_string()))
            })
            .transpose()?;
        let has_exploits = p.take();
        let at = self.pos;
        let n = self.count(2, "vulnerabilities.cves")?;
        let cves = (0..n)
            .map(|_| {
                let at = self.pos;
                let year: u16 = self.int("cve year")?;
                let number: u32 = self.int("cve number")?;
                CveId::from_parts(year, number)
                    .ok_or_else(|| malformed(at, "cve", format!("{year}-{number} is not a CVE id")))
            })
            .collect::<Result<Vec<_>>>()?;
        if !all_unique(&cves) {
            return Err(malformed(at, "vulnerabilities.cves", "a CVE appears twice"));
        }
        Ok(VulnerabilitySummary {
            cves,
            max_cvss,
            has_exploits,
        })
    }

    fn tls(&mut self) -> Result<Tls> {
        let at = self.pos;
        let mut p = self.presence(5, "tls presence")?;
        let version = self.opt_string(p.take(), "tls.version")?;
        let cipher_suite = self.opt_string(p.take(), "tls.cipher_suite")?;
        let browser_trusted = match (p.take(), p.take()) {
            (true, value) => Some(value),
            (false, false) => None,
            (false, true) => {
                return Err(malformed(
                    at,
                    "tls.browser_trusted",
                    "a value without presence",
                ));
            }
        };
        let certificate = p.take().then(|| self.certificate()).transpose()?;
        Ok(Tls {
            version,
            cipher_suite,
            browser_trusted,
            certificate,
        })
    }

    fn certificate(&mut self) -> Result<Certificate> {
        let n = self.count(1, "certificate.subject_alt_names")?;
        let subject_alt_names = (0..n)
            .map(|_| self.string("certificate.subject_alt_names"))
            .collect::<Result<Vec<_>>>()?;
        let mut p = self.presence(7, "certificate presence")?;
        Ok(Certificate {
            subject_alt_names,
            common_name: self.opt_string(p.take(), "certificate.common_name")?,
            subject_organization: self.opt_string(p.take(), "certificate.subject_organization")?,
            issuer_common_name: self.opt_string(p.take(), "certificate.issuer_common_name")?,
            issuer_organization: self.opt_string(p.take(), "certificate.issuer_organization")?,
            valid_from: p
                .take()
                .then(|| self.timestamp("certificate.valid_from"))
                .transpose()?,
            valid_until: p
                .take()
                .then(|| self.timestamp("certificate.valid_until"))
                .transpose()?,
            fingerprint_sha256: self.opt_string(p.take(), "certificate.fingerprint_sha256")?,
        })
    }

    fn http(&mut self) -> Result<Http> {
        let mut p = self.presence(4, "http presence")?;
        let status_code = p
            .take()
            .then(|| {
                let at = self.pos;
                let code: u16 = self.int("http.status_code")?;
                if !(100..=599).contains(&code) {
                    return Err(malformed(at, "http.status_code", "outside 100..=599"));
                }
                Ok(code)
            })
            .transpose()?;
        let title = self.opt_string(p.take(), "http.title")?;
        let server = self.opt_string(p.take(), "http.server")?;
        Ok(Http {
            status_code,
            title,
            server,
            complete: p.take(),
        })
    }

    fn ssh(&mut self) -> Result<Ssh> {
        let mut p = self.presence(6, "ssh presence")?;
        Ok(Ssh {
            protocol_version: self.opt_string(p.take(), "ssh.protocol_version")?,
            software_version: self.opt_string(p.take(), "ssh.software_version")?,
            host_key_algorithm: self.opt_string(p.take(), "ssh.host_key_algorithm")?,
            host_key_fingerprint: self.opt_string(p.take(), "ssh.host_key_fingerprint")?,
            comments: self.opt_string(p.take(), "ssh.comments")?,
            hassh: self.opt_string(p.take(), "ssh.hassh")?,
        })
    }

    fn summary(&mut self) -> Result<Summary> {
        let at = self.pos;
        let n = self.count(2, "summary")?;
        if n > Summary::MAX_FIELDS {
            return Err(malformed(
                at,
                "summary",
                format!("{n} fields; at most {}", Summary::MAX_FIELDS),
            ));
        }
        let fields = (0..n)
            .map(|_| Ok((self.string("summary key")?, self.string("summary value")?)))
            .collect::<Result<Vec<_>>>()?;
        if !all_unique(fields.iter().map(|(k, _)| k).collect::<Vec<_>>().as_slice()) {
            return Err(malformed(at, "summary", "a key appears twice"));
        }
        Ok(Summary { fields })
    }
}

/// True when no item appears twice.
fn all_unique<T: Ord>(items: &[T]) -> bool {
    match items.len() {
        0 | 1 => true,
        2 => items[0] != items[1],
        n => items.iter().collect::<BTreeSet<_>>().len() == n,
    }
}

#[cfg(test)]
mod tests {
    //! Round trips of records built by applying random observations, and decoding of
    //! arbitrary, truncated and bit-flipped bytes, which must fail cleanly.

    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use std::fmt::Debug;

    use periscope_model::observation::{Observation, ObservationReader, ServiceObservation};
    use proptest::collection::vec;
    use proptest::option::of as opt;
    use proptest::prelude::*;
    use proptest::sample::select;

    use super::*;
    use crate::store::ApplyOutcome;

    // -- Strategies for model values ------------------------------------------------------

    fn text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 .é中\\-]{0,12}"
    }

    fn ts() -> impl Strategy<Value = Timestamp> {
        // A narrow range, so services, facts and scans often compete.
        (0i64..24).prop_map(|h| Timestamp::from_unix(1_790_000_000 + h * 3600).unwrap())
    }

    fn any_ts() -> impl Strategy<Value = Timestamp> {
        (0i64..=253_402_300_799).prop_map(|s| Timestamp::from_unix(s).unwrap())
    }

    fn domain() -> impl Strategy<Value = DomainName> {
        "[a-z0-9_]{1,8}(\\.[a-z0-9]([a-z0-9\\-]{0,5}[a-z0-9])?)?\\.(example|de|xn--bcher-kva)"
            .prop_map(|s| DomainName::parse(&s).unwrap())
    }

    fn domains() -> impl Strategy<Value = Vec<DomainName>> {
        vec(domain(), 0..4).prop_map(|mut names| {
            names.sort();
            names.dedup();
            names
        })
    }

    fn country() -> impl Strategy<Value = CountryCode> {
        select(CountryCode::all().collect::<Vec<_>>())
    }

    fn cidr() -> impl Strategy<Value = IpCidr> {
        prop_oneof![
            (any::<u32>(), 0u8..=32)
                .prop_map(|(a, p)| IpCidr::V4(Ipv4Cidr::new(Ipv4Addr::from(a), p).unwrap())),
            (any::<u128>(), 0u8..=128).prop_map(|(a, p)| {
                IpCidr::parse(&format!("{}/{p}", Ipv6Addr::from(a))).unwrap()
            }),
        ]
    }

    fn position() -> impl Strategy<Value = Position> {
        (-90.0f64..=90.0, -180.0f64..=180.0, opt(0u32..=20_000)).prop_map(
            |(latitude, longitude, accuracy_radius_km)| Position {
                latitude,
                longitude,
                accuracy_radius_km,
            },
        )
    }

    fn location() -> impl Strategy<Value = Location> {
        (
            opt(text()),
            opt(country()),
            opt(text()),
            opt(text()),
            opt(text()),
            opt(text()),
            opt(position()),
        )
            .prop_map(
                |(continent, country_code, country_name, s1, s2, city, position)| Location {
                    continent,
                    country_code,
                    country_name,
                    subdivision_1: s1,
                    subdivision_2: s2,
                    city,
                    position,
                },
            )
    }

    fn asn() -> impl Strategy<Value = AsnAttribution> {
        (1u32..=u32::MAX, opt(text())).prop_map(|(n, organization)| AsnAttribution {
            asn: Asn::new(n).unwrap(),
            organization,
        })
    }

    fn whois() -> impl Strategy<Value = Whois> {
        (
            opt(text()),
            opt(text()),
            opt(text()),
            opt(cidr()),
            opt(text()),
            opt(country()),
        )
            .prop_map(
                |(description, netname, organization, cidr, registry, country_code)| Whois {
                    description,
                    netname,
                    organization,
                    cidr,
                    registry,
                    country_code,
                },
            )
    }

    fn enrichment(ip: IpAddr) -> impl Strategy<Value = HostEnrichment> {
        (
            opt(location()),
            (opt(asn()), opt(asn()), opt(asn())),
            opt((opt(text()), opt(text()), opt(text()))),
            opt(whois()),
            domains(),
            opt(domain()),
            opt(domain()),
        )
            .prop_map(
                move |(location, (research, bgp, network), provider, whois, rdns, dns, domain)| {
                    HostEnrichment {
                        location,
                        asn: AsnAttributions {
                            research,
                            bgp,
                            network,
                        },
                        provider: provider.map(|(organization, as_organization, isp)| {
                            NetworkProvider {
                                organization,
                                as_organization,
                                isp,
                            }
                        }),
                        whois,
                        reverse_dns: if ip.is_ipv6() { Vec::new() } else { rdns },
                        dns_name: dns,
                        domain,
                    }
                },
            )
    }

    fn product() -> impl Strategy<Value = Product> {
        let cpes = [
            "cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*",
            "cpe:2.3:a:openbsd:openssh:9.6:p1:*:*:*:*:*:*",
            "cpe:2.3:o:linux:linux_kernel:-:*:*:*:*:*:*:*",
        ];
        (text(), opt(text()), opt(select(cpes.to_vec()))).prop_map(|(title, version, cpe)| {
            Product {
                title,
                version,
                cpe: cpe.map(|c| Cpe23::parse(c).unwrap()),
            }
        })
    }

    fn vulnerabilities() -> impl Strategy<Value = VulnerabilitySummary> {
        (
            vec((1999u16..=9999, 0u32..=999_999_999), 0..5),
            opt(0u8..=100),
            any::<bool>(),
        )
            .prop_map(|(cves, max, has_exploits)| {
                let mut cves: Vec<CveId> = cves
                    .into_iter()
                    .map(|(y, n)| CveId::from_parts(y, n).unwrap())
                    .collect();
                cves.sort();
                cves.dedup();
                VulnerabilitySummary {
                    cves,
                    max_cvss: max.map(|t| Cvss::from_tenths(t).unwrap()),
                    has_exploits,
                }
            })
    }

    fn certificate() -> impl Strategy<Value = Certificate> {
        (
            vec(text(), 0..3),
            (opt(text()), opt(text()), opt(text()), opt(text())),
            (opt(any_ts()), opt(any_ts()), opt(text())),
        )
            .prop_map(|(sans, (cn, so, icn, io), (from, until, fp))| Certificate {
                subject_alt_names: sans,
                common_name: cn,
                subject_organization: so,
                issuer_common_name: icn,
                issuer_organization: io,
                valid_from: from,
                valid_until: until,
                fingerprint_sha256: fp,
            })
    }

    fn tls() -> impl Strategy<Value = Tls> {
        (
            opt(text()),
            opt(text()),
            opt(any::<bool>()),
            opt(certificate()),
        )
            .prop_map(
                |(version, cipher_suite, browser_trusted, certificate)| Tls {
                    version,
                    cipher_suite,
                    browser_trusted,
                    certificate,
                },
            )
    }

    fn http() -> impl Strategy<Value = Http> {
        (opt(100u16..=599), opt(text()), opt(text()), any::<bool>()).prop_map(
            |(status_code, title, server, complete)| Http {
                status_code,
                title,
                server,
                complete,
            },
        )
    }

    fn ssh() -> impl Strategy<Value = Ssh> {
        (
            opt(text()),
            opt(text()),
            opt(text()),
            opt(text()),
            opt(text()),
            opt(text()),
        )
            .prop_map(|(a, b, c, d, e, f)| Ssh {
                protocol_version: a,
                software_version: b,
                host_key_algorithm: c,
                host_key_fingerprint: d,
                comments: e,
                hassh: f,
            })
    }

    fn summary() -> impl Strategy<Value = Summary> {
        proptest::collection::btree_map("[a-z_]{1,8}", text(), 0..5).prop_map(|m| Summary {
            fields: m.into_iter().collect(),
        })
    }

    fn observation(ip: IpAddr) -> impl Strategy<Value = ServiceObservation> {
        let protocols: Vec<ProtocolToken> = ProtocolToken::all()
            .filter(|p| ip.is_ipv4() || p.entry().ipv6)
            .collect();
        (
            (
                prop_oneof![Just(22u16), Just(443), 1u16..=65535],
                select(protocols),
                any::<bool>(),
                ts(),
                select(vec![
                    ScanStatus::Completed,
                    ScanStatus::Partial,
                    ScanStatus::Failed,
                ]),
                opt(text()),
            ),
            (
                opt(product()),
                opt(vulnerabilities()),
                opt(tls()),
                opt(http()),
                opt(ssh()),
                opt(summary()),
            ),
            enrichment(ip),
        )
            .prop_map(
                move |(
                    (port, protocol, udp, observed_at, status, error),
                    (product, vulnerabilities, tls, http, ssh, summary),
                    host,
                )| ServiceObservation {
                    ip,
                    port: Port::new(port).unwrap(),
                    transport: if udp { Transport::Udp } else { Transport::Tcp },
                    protocol,
                    observed_at,
                    status,
                    error,
                    product,
                    vulnerabilities,
                    tls,
                    http,
                    ssh,
                    summary,
                    host,
                },
            )
    }

    fn ip() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
            (any::<u128>()).prop_map(|a| {
                let a = Ipv6Addr::from(a);
                // A mapped address is an IPv4 address in the model.
                a.to_ipv4_mapped().map_or(IpAddr::V6(a), IpAddr::V4)
            }),
        ]
    }

    /// A record built the way the store builds one: by applying observations of its address.
    fn host_record() -> impl Strategy<Value = HostRecord> {
        ip().prop_flat_map(|ip| {
            vec(observation(ip), 0..6).prop_map(move |observations| {
                let mut record = HostRecord::new(ip);
                for obs in &observations {
                    record.apply(obs);
                }
                record
            })
        })
    }

    fn domain_scan() -> impl Strategy<Value = DomainScan> {
        (domain(), vec(ip(), 1..5), any_ts()).prop_map(|(name, mut addresses, observed_at)| {
            addresses.sort();
            addresses.dedup();
            DomainScan {
                name,
                addresses,
                observed_at,
            }
        })
    }

    // -- Checks ---------------------------------------------------------------------------

    /// Decoding `bytes` must not panic; when it succeeds, the value must survive another
    /// round trip (it is a valid value, not just a lucky parse).
    fn check_decodes_cleanly<T: PartialEq + Debug>(
        bytes: &[u8],
        decode: fn(&[u8]) -> Result<T>,
        encode: fn(&T) -> Vec<u8>,
    ) {
        if let Ok(value) = decode(bytes) {
            assert_eq!(decode(&encode(&value)).unwrap(), value);
        }
    }

    fn host_bytes(bytes: &[u8]) {
        check_decodes_cleanly(bytes, decode_host, encode_host);
    }

    fn scan_bytes(bytes: &[u8]) {
        check_decodes_cleanly(bytes, decode_domain_scan, encode_domain_scan);
    }

    proptest! {
        /// The builder writes, from views, the bytes of the record that applying the same
        /// observations gives, says which observations applying says `Applied` of, and keeps
        /// the services they replaced, in order.
        #[test]
        fn built_records_are_the_records_applying_gives(
            (ip, observations) in ip().prop_flat_map(|ip| (Just(ip), vec(observation(ip), 0..8))),
        ) {
            let mut record = HostRecord::new(ip);
            let mut builder = RecordBuilder::new();
            builder.start(ip);
            let mut replaced = Vec::new();
            for obs in &observations {
                if obs.status == ScanStatus::Failed {
                    prop_assert_eq!(record.apply(obs), ApplyOutcome::Ignored);
                    continue;
                }
                let before = record.services.get(&(obs.port, obs.protocol)).cloned();
                let outcome = record.apply(obs);
                prop_assert_eq!(builder.add(&obs.view()), outcome == ApplyOutcome::Applied);
                if let (ApplyOutcome::Applied, Some(before)) = (outcome, before) {
                    replaced.push(before);
                }
            }
            let counting = observations
                .iter()
                .filter(|o| o.status != ScanStatus::Failed)
                .count();
            prop_assert_eq!(
                (builder.applied() + builder.superseded()) as usize,
                counting
            );
            let mut bytes = vec![7];
            let len = builder.finish_into(&mut bytes);
            let mut expected = vec![7];
            if record.enrichment.is_some() {
                encode_host_into(&record, &mut expected);
            }
            prop_assert_eq!(&bytes[..1 + len], &expected[..]);
            prop_assert_eq!(decode_services(&bytes[1 + len..]).unwrap(), replaced);
            prop_assert_eq!(builder.ip(), None);
        }

        /// Told that an observation's host is the last one's, the builder writes the record
        /// it writes when not told: observations of one address whose hosts are two, in runs
        /// and alternating, at random times (so a host's facts win, lose and tie).
        #[test]
        fn a_host_said_to_repeat_builds_the_same_record(
            (ip, observations, hosts) in ip().prop_flat_map(|ip| (
                Just(ip),
                vec(observation(ip), 1..12),
                vec(0..2usize, 12),
            )),
        ) {
            let pool = [observations[0].host.clone(), observations[observations.len() - 1].host.clone()];
            let observations: Vec<ServiceObservation> = observations
                .into_iter()
                .zip(hosts)
                .map(|(mut obs, h)| {
                    obs.host = pool[h].clone();
                    obs
                })
                .collect();
            let (mut told, mut untold) = (RecordBuilder::new(), RecordBuilder::new());
            told.start(ip);
            untold.start(ip);
            let mut last: Option<&HostEnrichment> = None;
            let mut repeats = 0;
            for obs in observations.iter().filter(|o| o.status != ScanStatus::Failed) {
                let same = last == Some(&obs.host);
                repeats += usize::from(same);
                let applied = if same {
                    told.add_after_same_host(&obs.view())
                } else {
                    told.add(&obs.view())
                };
                prop_assert_eq!(applied, untold.add(&obs.view()));
                last = Some(&obs.host);
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let len = told.finish_into(&mut a);
            prop_assert_eq!(len, untold.finish_into(&mut b));
            prop_assert_eq!(a, b, "{} of the hosts repeated", repeats);
        }

        /// A service's bytes from its view are those of the stored service.
        #[test]
        fn a_service_view_encodes_as_the_stored_service(
            obs in ip().prop_flat_map(observation),
        ) {
            prop_assume!(obs.status != ScanStatus::Failed);
            let mut from_view = Vec::new();
            Writer { buf: &mut from_view }.service_view(&obs.view());
            let mut record = HostRecord::new(obs.ip);
            record.apply(&obs);
            let stored = record.services.values().next().unwrap();
            prop_assert_eq!(from_view, tie::service(stored));
        }
    }

    proptest! {
        #[test]
        fn host_records_round_trip(record in host_record()) {
            let bytes = encode_host(&record);
            prop_assert_eq!(decode_host(&bytes).unwrap(), record);
        }

        #[test]
        fn domain_scans_round_trip(scan in domain_scan()) {
            let bytes = encode_domain_scan(&scan);
            prop_assert_eq!(decode_domain_scan(&bytes).unwrap(), scan);
        }

        #[test]
        fn arbitrary_bytes_never_panic(mut bytes in vec(any::<u8>(), 0..400)) {
            host_bytes(&bytes);
            scan_bytes(&bytes);
            // Past the header too, so the body decoders see the noise.
            bytes.splice(0..0, [FORMAT_VERSION, HOST_KIND]);
            host_bytes(&bytes);
            bytes[1] = DOMAIN_KIND;
            scan_bytes(&bytes);
        }

        #[test]
        fn every_truncation_of_a_host_record_fails(record in host_record()) {
            let bytes = encode_host(&record);
            for n in 0..bytes.len() {
                prop_assert!(decode_host(&bytes[..n]).is_err(), "prefix of {} bytes", n);
            }
        }

        #[test]
        fn every_truncation_of_a_domain_scan_fails(scan in domain_scan()) {
            let bytes = encode_domain_scan(&scan);
            for n in 0..bytes.len() {
                prop_assert!(decode_domain_scan(&bytes[..n]).is_err(), "prefix of {} bytes", n);
            }
        }

        #[test]
        fn bit_flips_never_panic(
            record in host_record(),
            flips in vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        ) {
            let mut bytes = encode_host(&record);
            for (at, bit) in flips {
                let i = at.index(bytes.len());
                bytes[i] ^= 1 << bit;
            }
            host_bytes(&bytes);
        }

        #[test]
        fn bit_flips_of_domain_scans_never_panic(
            scan in domain_scan(),
            at in any::<prop::sample::Index>(),
            bit in 0u8..8,
        ) {
            let mut bytes = encode_domain_scan(&scan);
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
            scan_bytes(&bytes);
        }
    }

    /// The full example line of docs/observation-format.md, through the real reader.
    const EXAMPLE: &str = r#"{"kind":"service","ip":"240.12.7.9","port":443,"transport":"tcp","protocol":"https","observed_at":"2026-11-20T13:04:11Z","status":"completed","product":{"title":"nginx","version":"1.24.0","cpe":"cpe:2.3:a:f5:nginx:1.24.0:*:*:*:*:*:*:*"},"vulnerabilities":{"cves":["CVE-2023-44487"],"max_cvss":7.5,"has_exploits":true},"tls":{"version":"TLSv1.3","cipher_suite":"TLS_AES_128_GCM_SHA256","browser_trusted":true,"certificate":{"subject_alt_names":["www.northwind.example","northwind.example"],"common_name":"www.northwind.example","subject_organization":"Northwind Traders Ltd","issuer_common_name":"Example Trust RSA CA","issuer_organization":"Example Trust Services","valid_from":"2026-09-01T00:00:00Z","valid_until":"2026-11-30T23:59:59Z","fingerprint_sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},"http":{"status_code":200,"title":"Northwind Traders","server":"nginx/1.24.0","complete":true},"host":{"location":{"continent":"Europe","country_code":"DE","country_name":"Germany","subdivision_1":"Bavaria","subdivision_2":"Upper Bavaria","city":"Munich","latitude":48.1374,"longitude":11.5755,"accuracy_radius_km":20},"asn":{"research":{"asn":64512,"organization":"Northwind Traders Ltd"},"bgp":{"asn":64512,"organization":"NORTHWIND-AS"},"network":{"asn":64512,"organization":"Northwind Traders Ltd"}},"provider":{"organization":"Northwind Traders Ltd","as_organization":"Northwind Traders Ltd","isp":"Northwind Traders"},"whois":{"description":"Northwind Traders web hosting","netname":"NORTHWIND-NET","organization":"Northwind Traders Ltd","cidr":"240.12.0.0/20","registry":"ripencc","country_code":"DE"},"reverse_dns":["www.northwind.example"],"dns_name":"www.northwind.example","domain":"northwind.example"}}"#;

    fn example_record() -> HostRecord {
        let now = Timestamp::parse("2026-12-01T00:00:00Z").unwrap();
        let Some(Observation::Service(obs)) =
            ObservationReader::new(now).read_line(EXAMPLE).unwrap()
        else {
            panic!("not a service line");
        };
        let mut record = HostRecord::new(obs.ip);
        record.apply(&obs);
        record
    }

    #[test]
    fn the_documented_example_round_trips_compactly() {
        let record = example_record();
        let bytes = encode_host(&record);
        assert_eq!(decode_host(&bytes).unwrap(), record);
        // The enrichment shares the record's location and reverse DNS instead of repeating
        // them: the JSON line is about 2 KB, the record well under half of that.
        assert!(bytes.len() < 800, "{} bytes", bytes.len());
    }

    #[test]
    fn an_unknown_version_is_refused() {
        let mut bytes = encode_host(&example_record());
        bytes[0] = FORMAT_VERSION + 1;
        assert_eq!(
            decode_host(&bytes),
            Err(CodecError::UnknownVersion {
                found: FORMAT_VERSION + 1
            })
        );
        assert_eq!(decode_host(&[]), Err(CodecError::Empty));
    }

    #[test]
    fn a_host_record_is_not_a_domain_scan() {
        let bytes = encode_host(&example_record());
        assert_eq!(
            decode_domain_scan(&bytes),
            Err(CodecError::WrongKind {
                expected: "domain scan",
                found: HOST_KIND
            })
        );
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = encode_host(&example_record());
        bytes.push(0);
        assert_eq!(
            decode_host(&bytes),
            Err(CodecError::TrailingBytes { count: 1 })
        );
    }

    #[test]
    fn varints_cover_u64_and_refuse_overflow() {
        for v in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut buf = Vec::new();
            Writer { buf: &mut buf }.varint(v);
            let mut r = Reader { buf: &buf, pos: 0 };
            assert_eq!(r.varint("v").unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
        let overflow = [0xff; 9].into_iter().chain([0x02]).collect::<Vec<_>>();
        let mut r = Reader {
            buf: &overflow,
            pos: 0,
        };
        assert!(matches!(r.varint("v"), Err(CodecError::Malformed { .. })));
        let endless = [0x80; 11];
        let mut r = Reader {
            buf: &endless,
            pos: 0,
        };
        assert!(r.varint("v").is_err());
    }

    #[test]
    fn invalid_values_are_errors_not_values() {
        // Port 0 in a service: rewrite the port varint of the only service.
        let record = example_record();
        let bytes = encode_host(&record);
        let mut header = HostRecord::new(record.ip);
        header.enrichment = record.enrichment.clone();
        header.location = record.location.clone();
        header.position = record.position;
        header.reverse_dns = record.reverse_dns.clone();
        // The same bytes up to the service count (0 there, 1 here), then the service.
        let service_at = encode_host(&header).len();
        let mut bad = bytes.clone();
        assert_eq!(bad[service_at - 1], 1);
        // Port 443 is the varint 0xbb 0x03; make it 0 (0x80 0x00).
        assert_eq!(&bad[service_at..service_at + 2], &[0xbb, 0x03]);
        bad[service_at] = 0x80;
        bad[service_at + 1] = 0x00;
        let err = decode_host(&bad).unwrap_err();
        assert!(
            matches!(
                err,
                CodecError::Malformed {
                    what: "service.port",
                    ..
                }
            ),
            "{err}"
        );
    }
}
