//! The posting lists of the embedded engine: per value, a roaring bitmap of the ordinals
//! holding it. Service postings answer the service-level clauses (so an intersection of them
//! is a set of services each satisfying every clause); host postings answer the host-level
//! clauses and the ASN and stored-name parts of ASN and domain searches.
//!
//! Every posting is exact: a clause's bitmap holds the ordinals the reference's rule for that
//! clause accepts, no more. Phrases are exact too: a product phrase is the intersection of
//! its words' postings (the rule is "every word, any order"); an organization phrase is
//! answered over the *distinct* organization values (few, compared with hosts) — their words
//! give candidate values, the contiguous-run rule is checked on each candidate value once,
//! and the hosts of the values that pass are united. No host is re-checked.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Write as _;

use periscope_model::{Asn, CountryCode, CveId, Port};
use periscope_query::{Clause, Phrase};
use roaring::RoaringBitmap;

use super::ids::Ids;
use super::persist::{LoadError, Reader, Writer};
use super::strings::{LabelsReversed, StrPostings};
use crate::reference::matching::{comparable_name, contains_run, enrichment, words};
use crate::store::{HostRecord, StoredService};

/// No value in a `u8` column.
pub(super) const NONE_U8: u8 = u8::MAX;
/// No value in a `u32` column.
pub(super) const NONE_U32: u32 = u32::MAX;
/// Whole CVSS units with a "from" posting: 0.0 to 10.0.
const CVSS_FROM: usize = 11;

/// Service-level postings over service ordinals, and the per-service columns facets read.
#[derive(Debug, Default)]
pub(super) struct ServicePostings {
    port: HashMap<Port, RoaringBitmap>,
    /// By protocol-registry index.
    protocol: Vec<RoaringBitmap>,
    /// Lowercased words of product titles.
    product_words: StrPostings,
    /// Lowercased product CPEs.
    cpe: StrPostings,
    cve: HashMap<CveId, RoaringBitmap>,
    /// By maximum CVSS in tenths, 0..=100.
    cvss: Vec<RoaringBitmap>,
    /// Index `d` (0..=10): the services whose maximum CVSS is at least `d`.0 — a CVSS range
    /// is one or two of these plus at most nine tenths at either end, rather than a union of
    /// up to 101 tenths.
    cvss_from: Vec<RoaringBitmap>,
    /// Index 0: exploit flag false; 1: true (services with a vulnerability summary only).
    exploit: [RoaringBitmap; 2],
    /// Comparable certificate names of services eligible for `certificate.name:`.
    certificate_names: StrPostings<LabelsReversed>,
    /// Per port: its services preceded, in their host, by another service on that port.
    port_repeats: HashMap<Port, RoaringBitmap>,
    /// Per protocol-registry index: its services preceded, in their host, by another service
    /// of that protocol.
    protocol_repeats: Vec<RoaringBitmap>,
    /// Columns, by service ordinal: what facets group services by.
    pub columns: ServiceColumns,
}

/// Per-service values for facet candidates, by service ordinal.
#[derive(Debug, Default)]
pub(super) struct ServiceColumns {
    /// Port.
    pub port: Vec<Port>,
    /// Protocol token.
    pub protocol: Vec<periscope_model::ProtocolToken>,
    /// Product title, as an index into `titles`, or [`NONE_U32`].
    pub title: Ids,
    /// While building: the `title` column (empty once finished or loaded).
    building_title: Vec<u32>,
    /// The distinct product titles.
    pub titles: Vec<Box<str>>,
    /// While building: the id of each title seen (empty once finished or loaded).
    title_ids: HashMap<Box<str>, u32>,
    /// Per lowercased word: the titles (ids) holding it (derived from `titles`).
    pub title_words: HashMap<Box<str>, RoaringBitmap>,
    /// The vulnerability summary in one byte ([`vulnerability_byte`]): the CVSS band of the
    /// maximum score (facets' band index, 0–3) and the exploit flag (0 or 1), each possibly
    /// absent. Read through [`Self::band`] and [`Self::exploit`].
    vulnerability: Vec<u8>,
}

/// A band (below 8) and an exploit flag (0 or 1), each [`NONE_U8`] when absent, in one byte:
/// the band in the low four bits, the flag in the high four, 0xF for an absent one; `None`
/// for a value out of range.
fn vulnerability_byte(band: u8, exploit: u8) -> Option<u8> {
    let nibble = |v: u8, limit: u8| match v {
        NONE_U8 => Some(0xF),
        v if v < limit => Some(v),
        _ => None,
    };
    Some(nibble(exploit, 2)? << 4 | nibble(band, 8)?)
}

impl ServiceColumns {
    /// The CVSS band of service `s`, if it has one.
    #[inline]
    pub fn band(&self, s: usize) -> Option<u32> {
        let band = self.vulnerability.get(s)? & 0xF;
        (band != 0xF).then_some(u32::from(band))
    }

    /// The exploit flag (0 or 1) of service `s`, if it has a vulnerability summary.
    #[inline]
    pub fn exploit(&self, s: usize) -> Option<u32> {
        let exploit = self.vulnerability.get(s)? >> 4;
        (exploit != 0xF).then_some(u32::from(exploit))
    }

    /// The column as the index file holds it: one byte per service, [`NONE_U8`] for none.
    fn unpacked(&self, value: impl Fn(&Self, usize) -> Option<u32>) -> Vec<u8> {
        (0..self.vulnerability.len())
            // Both values are below 16.
            .map(|s| value(self, s).map_or(NONE_U8, |v| v as u8))
            .collect()
    }
}

impl ServicePostings {
    /// Records service `ordinal`.
    pub fn add(&mut self, ordinal: u32, s: &StoredService) {
        insert(&mut self.port, s.port, ordinal);
        let protocol = s.protocol.index();
        if self.protocol.len() <= protocol {
            self.protocol.resize_with(protocol + 1, RoaringBitmap::new);
        }
        push(&mut self.protocol[protocol], ordinal);
        let columns = &mut self.columns;
        columns.port.push(s.port);
        columns.protocol.push(s.protocol);
        let mut title = NONE_U32;
        if let Some(product) = &s.product {
            for word in words(&product.title) {
                self.product_words.insert(&word, ordinal);
            }
            if let Some(cpe) = &product.cpe {
                self.cpe.insert(&cpe.as_str().to_lowercase(), ordinal);
            }
            title = columns.title_id(&product.title);
        }
        columns.building_title.push(title);
        let mut band = NONE_U8;
        let mut exploit = NONE_U8;
        if let Some(v) = &s.vulnerabilities {
            for id in &v.cves {
                insert(&mut self.cve, *id, ordinal);
            }
            if let Some(score) = v.max_cvss {
                let tenths = usize::from(score.tenths());
                if self.cvss.len() <= tenths {
                    self.cvss.resize_with(tenths + 1, RoaringBitmap::new);
                }
                push(&mut self.cvss[tenths], ordinal);
                if self.cvss_from.len() < CVSS_FROM {
                    self.cvss_from.resize_with(CVSS_FROM, RoaringBitmap::new);
                }
                for from in self.cvss_from.iter_mut().take(tenths / 10 + 1) {
                    push(from, ordinal);
                }
                band = crate::reference::facets::band_of(score.tenths())
                    .and_then(|b| u8::try_from(b).ok())
                    .unwrap_or(NONE_U8);
            }
            push(&mut self.exploit[usize::from(v.has_exploits)], ordinal);
            exploit = u8::from(v.has_exploits);
        }
        // `band_of` gives 0–3 and the flag is 0 or 1.
        columns
            .vulnerability
            .push(vulnerability_byte(band, exploit).unwrap_or(u8::MAX));
        if certificate_name_eligible(s)
            && let Some(c) = s.tls.as_ref().and_then(|t| t.certificate.as_ref())
        {
            let names = c
                .subject_alt_names
                .iter()
                .map(String::as_str)
                .chain(c.common_name.as_deref());
            for name in names {
                let name = comparable_name(name);
                // A query name cannot hold a wildcard, so wildcard names never match.
                if !name.starts_with("*.") {
                    self.certificate_names.insert(&name, ordinal);
                }
            }
        }
    }

    /// Ends the build: the text postings frozen, build-only lookups dropped, spare capacity
    /// returned.
    pub fn finish(&mut self) -> Result<(), super::strings::TooLong> {
        self.product_words.freeze()?;
        self.cpe.freeze()?;
        self.certificate_names.freeze()?;
        let c = &mut self.columns;
        c.title_ids = HashMap::new();
        c.port.shrink_to_fit();
        c.protocol.shrink_to_fit();
        c.title = Ids::new(std::mem::take(&mut c.building_title));
        c.titles.shrink_to_fit();
        c.vulnerability.shrink_to_fit();
        Ok(())
    }

    /// Records the services of one host, ordinals `services` (already [added](Self::add)):
    /// which of them repeat the port or the protocol of an earlier one.
    pub fn add_host(&mut self, services: std::ops::Range<u32>) {
        let columns = &self.columns;
        let at = |s: u32| s as usize;
        for s in services.clone() {
            let earlier = services.start..s;
            if let Some(port) = columns.port.get(at(s))
                && earlier
                    .clone()
                    .any(|t| columns.port.get(at(t)) == Some(port))
            {
                push(self.port_repeats.entry(*port).or_default(), s);
            }
            if let Some(protocol) = columns.protocol.get(at(s))
                && earlier
                    .clone()
                    .any(|t| columns.protocol.get(at(t)) == Some(protocol))
            {
                let i = protocol.index();
                if self.protocol_repeats.len() <= i {
                    self.protocol_repeats.resize_with(i + 1, RoaringBitmap::new);
                }
                push(&mut self.protocol_repeats[i], s);
            }
        }
    }

    /// The services satisfying one service-level clause; empty for a host-level clause (no
    /// service satisfies one, as in the reference's rule).
    pub fn posting(&self, clause: &Clause) -> Cow<'_, RoaringBitmap> {
        let found = match clause {
            Clause::Port(p) => self.port.get(p),
            Clause::Protocol(t) => self.protocol.get(t.index()),
            Clause::Product(phrase) => return self.product(phrase),
            Clause::CertificateName(name) => {
                return self
                    .certificate_names
                    .get(name.as_str())
                    .unwrap_or_default();
            }
            Clause::Cpe(cpe) => {
                return self
                    .cpe
                    .get(cpe.as_str().to_lowercase().as_str())
                    .unwrap_or_default();
            }
            Clause::Cve(id) => self.cve.get(id),
            Clause::Cvss(range) => {
                return self.cvss_range(range.min().tenths(), range.max().tenths());
            }
            Clause::Exploit(flag) => self.exploit.get(usize::from(*flag)),
            Clause::Organization(_) | Clause::Country(_) => None,
        };
        found.map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed)
    }

    /// The services whose maximum CVSS lies in `low..=high` tenths: the whole units inside
    /// the range from `cvss_from` (one bitmap, or one less another), the tenths at its ends
    /// from their own postings.
    fn cvss_range(&self, low: u8, high: u8) -> Cow<'_, RoaringBitmap> {
        let (low, high) = (usize::from(low), usize::from(high).min(100));
        let tenths = |range: std::ops::Range<usize>| {
            range
                .filter_map(|t| self.cvss.get(t))
                .fold(RoaringBitmap::new(), |acc, b| acc | b)
        };
        if low > high {
            return Cow::Owned(RoaringBitmap::new());
        }
        // Whole units `from..to` (tenths), `to` = 110 past the last one.
        let from = low.div_ceil(10) * 10;
        let to = if high == 100 {
            110
        } else {
            (high + 1) / 10 * 10
        };
        let first = self.cvss_from.get(from / 10);
        let (Some(first), true) = (first, from < to) else {
            return Cow::Owned(tenths(low..high + 1));
        };
        // `to` = 110 has no posting: nothing is above 10.0.
        let mut core = match self.cvss_from.get(to / 10) {
            Some(next) => Cow::Owned(first - next),
            None => Cow::Borrowed(first),
        };
        if low < from {
            *core.to_mut() |= tenths(low..from);
        }
        if to <= high {
            *core.to_mut() |= tenths(to..high + 1);
        }
        core
    }

    /// Among the services of `clause`'s posting, a superset of those preceded in their host
    /// by another service of that posting: exact for port and protocol; `None` (every
    /// service may be) for the other fields.
    pub fn repeats(&self, clause: &Clause) -> Option<Cow<'_, RoaringBitmap>> {
        let found = match clause {
            Clause::Port(p) => self.port_repeats.get(p),
            Clause::Protocol(t) => self.protocol_repeats.get(t.index()),
            _ => return None,
        };
        Some(found.map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed))
    }

    /// The ports with services, ascending.
    pub fn ports(&self) -> Vec<Port> {
        let mut ports: Vec<Port> = self.port.keys().copied().collect();
        ports.sort_unstable();
        ports
    }

    /// The protocols with services, by registry index.
    pub fn protocols(&self) -> impl Iterator<Item = periscope_model::ProtocolToken> + '_ {
        periscope_model::ProtocolToken::all()
            .zip(&self.protocol)
            .filter(|(_, b)| !b.is_empty())
            .map(|(t, _)| t)
    }

    /// Services whose product title holds every word of the phrase (none for a phrase
    /// without words).
    fn product(&self, phrase: &Phrase) -> Cow<'_, RoaringBitmap> {
        let wanted = words(phrase.as_str());
        let postings: Option<Vec<Cow<'_, RoaringBitmap>>> = wanted
            .iter()
            .map(|w| self.product_words.get(w.as_str()))
            .collect();
        match postings {
            Some(p) if !p.is_empty() => {
                Cow::Owned(intersect(p.iter().map(AsRef::as_ref).collect()))
            }
            _ => Cow::Owned(RoaringBitmap::new()),
        }
    }

    /// Approximate bytes held by the postings and columns.
    pub fn heap_bytes(&self) -> usize {
        let c = &self.columns;
        let columns = c.port.len() * (size_of::<Port>() + 1 + 1)
            + c.title.heap_bytes()
            + c.titles.iter().map(|t| 2 * t.len() + 40).sum::<usize>()
            + map_bytes(&c.title_words);
        columns
            + map_bytes(&self.port)
            + self.protocol.iter().map(bitmap_bytes).sum::<usize>()
            + self.product_words.heap_bytes()
            + self.cpe.heap_bytes()
            + map_bytes(&self.cve)
            + self.cvss.iter().map(bitmap_bytes).sum::<usize>()
            + self.cvss_from.iter().map(bitmap_bytes).sum::<usize>()
            + self.exploit.iter().map(bitmap_bytes).sum::<usize>()
            + self.certificate_names.heap_bytes()
            + map_bytes(&self.port_repeats)
            + self
                .protocol_repeats
                .iter()
                .map(bitmap_bytes)
                .sum::<usize>()
    }
}

impl ServicePostings {
    /// Writes the postings and columns (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.map(&self.port, |w, p| w.u16(p.get()))?;
        w.bitmaps(self.protocol.iter())?;
        self.product_words.write(w)?;
        self.cpe.write(w)?;
        w.map(&self.cve, |w, id| {
            w.u16(id.year())?;
            w.u32(id.number())
        })?;
        w.bitmaps(self.cvss.iter())?;
        w.bitmaps(self.cvss_from.iter())?;
        w.bitmaps(self.exploit.iter())?;
        self.certificate_names.write(w)?;
        w.map(&self.port_repeats, |w, p| w.u16(p.get()))?;
        w.bitmaps(self.protocol_repeats.iter())?;
        let c = &self.columns;
        let ports: Vec<u16> = c.port.iter().map(|p| p.get()).collect();
        w.u16s(&ports)?;
        drop(ports);
        let protocols: Vec<u8> = c
            .protocol
            .iter()
            .map(|t| u8::try_from(t.index()).unwrap_or(u8::MAX))
            .collect();
        w.write_all(&protocols)?;
        drop(protocols);
        c.title.write(w)?;
        w.len(c.titles.len())?;
        for t in &c.titles {
            w.str(t)?;
        }
        w.write_all(&c.unpacked(ServiceColumns::band))?;
        w.write_all(&c.unpacked(ServiceColumns::exploit))
    }

    /// Reads what [`Self::write`] wrote, for `services` services.
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, services: usize) -> Result<Self, LoadError> {
        let bad = |what: &str| LoadError::Corrupt(what.to_owned());
        let port = r.map("port postings", |r| {
            Port::new(r.u16()?).map_err(|_| bad("a port key"))
        })?;
        let protocol = r.bitmaps("protocol postings")?;
        if protocol.len() > periscope_model::ProtocolToken::all().count() {
            return Err(bad("more protocol postings than protocols"));
        }
        let product_words = StrPostings::read(r, "product words", services)?;
        let cpe = StrPostings::read(r, "CPE postings", services)?;
        let cve = r.map("CVE postings", |r| {
            let (year, number) = (r.u16()?, r.u32()?);
            CveId::from_parts(year, number).ok_or_else(|| bad("a CVE key"))
        })?;
        let cvss = r.bitmaps("CVSS postings")?;
        if cvss.len() > 101 {
            return Err(bad("CVSS postings beyond 10.0"));
        }
        let cvss_from = r.bitmaps("CVSS-from postings")?;
        if !(cvss_from.is_empty() || cvss_from.len() == CVSS_FROM) {
            return Err(bad("CVSS-from postings"));
        }
        let mut exploit = r.bitmaps("exploit postings")?.into_iter();
        let (Some(no), Some(yes), None) = (exploit.next(), exploit.next(), exploit.next()) else {
            return Err(bad("exploit postings"));
        };
        let certificate_names = StrPostings::read(r, "certificate names", services)?;
        let port_repeats = r.map("port repeats", |r| {
            Port::new(r.u16()?).map_err(|_| bad("a port key"))
        })?;
        let protocol_repeats = r.bitmaps("protocol repeats")?;
        if protocol_repeats.len() > periscope_model::ProtocolToken::all().count() {
            return Err(bad("more protocol repeats than protocols"));
        }
        let beyond = |b: &RoaringBitmap| b.max().is_some_and(|m| m as usize >= services);
        if cvss_from
            .iter()
            .chain(port_repeats.values())
            .chain(&protocol_repeats)
            .any(beyond)
        {
            return Err(bad("a posting names a service the index does not have"));
        }
        let port_column = r
            .u16s(services)?
            .into_iter()
            .map(|p| Port::new(p).map_err(|_| bad("a port column value")))
            .collect::<Result<Vec<Port>, _>>()?;
        let tokens: Vec<periscope_model::ProtocolToken> =
            periscope_model::ProtocolToken::all().collect();
        let protocol_column = r
            .bytes(services)?
            .into_iter()
            .map(|i| {
                tokens
                    .get(usize::from(i))
                    .copied()
                    .ok_or_else(|| bad("a protocol column value"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let title = Ids::read(r, services)?;
        let count = r.len("titles")?;
        let titles: Vec<Box<str>> = r.vec(count, |r| r.str("a title"))?;
        if title
            .iter()
            .any(|t| t != NONE_U32 && t as usize >= titles.len())
        {
            return Err(bad("a title column value"));
        }
        let band = r.bytes(services)?;
        let exploit = r.bytes(services)?;
        let vulnerability = band
            .into_iter()
            .zip(exploit)
            .map(|(b, e)| vulnerability_byte(b, e))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| bad("a CVSS band or exploit column value"))?;
        let title_ids = HashMap::new();
        let mut title_words = HashMap::new();
        for (i, t) in titles.iter().enumerate() {
            for word in words(t) {
                insert(
                    &mut title_words,
                    word.into_boxed_str(),
                    u32::try_from(i).unwrap_or(NONE_U32),
                );
            }
        }
        Ok(Self {
            port,
            protocol,
            product_words,
            cpe,
            cve,
            cvss,
            cvss_from,
            exploit: [no, yes],
            certificate_names,
            port_repeats,
            protocol_repeats,
            columns: ServiceColumns {
                port: port_column,
                protocol: protocol_column,
                title,
                building_title: Vec::new(),
                titles,
                title_ids,
                title_words,
                vulnerability,
            },
        })
    }
}

impl ServiceColumns {
    fn title_id(&mut self, title: &str) -> u32 {
        if let Some(id) = self.title_ids.get(title) {
            return *id;
        }
        let id = u32::try_from(self.titles.len()).unwrap_or(NONE_U32);
        self.titles.push(title.into());
        self.title_ids.insert(title.into(), id);
        for word in words(title) {
            insert(&mut self.title_words, word.into_boxed_str(), id);
        }
        id
    }

    /// The titles (ids) holding every one of `wanted` (none when `wanted` is empty): the
    /// titles whose services a product phrase of these words matches.
    pub fn titles_with(&self, wanted: &[String]) -> RoaringBitmap {
        let postings: Option<Vec<&RoaringBitmap>> = wanted
            .iter()
            .map(|w| self.title_words.get(w.as_str()))
            .collect();
        match postings {
            Some(p) if !p.is_empty() => intersect(p),
            _ => RoaringBitmap::new(),
        }
    }
}

/// The `certificate.name:` precondition: a TLS-capable protocol, a completed scan, no error.
fn certificate_name_eligible(s: &StoredService) -> bool {
    s.protocol.entry().tls
        && s.status == periscope_model::observation::ScanStatus::Completed
        && s.error.is_none()
}

/// Host-level postings of the service-level values that have few distinct values (port,
/// protocol, CVSS tenths, exploit flag): per value, the hosts with at least one current
/// service holding it. A query with exactly one service-level clause on one of these fields
/// matches exactly these hosts (one service suffices), so its count is a cardinality; with
/// more service-level clauses they are only an upper bound and are not used as an answer.
#[derive(Debug, Default)]
pub(super) struct ValueHosts {
    port: HashMap<Port, RoaringBitmap>,
    /// By protocol-registry index.
    protocol: Vec<RoaringBitmap>,
    /// By maximum CVSS in tenths, 0..=100.
    cvss: Vec<RoaringBitmap>,
    /// By facets' CVSS band of the maximum score.
    band: [RoaringBitmap; 4],
    /// Index 0: exploit flag false; 1: true.
    exploit: [RoaringBitmap; 2],
}

impl ValueHosts {
    /// Records host `ordinal` with its current services (each value once per host is
    /// enough; repeats are harmless).
    pub fn add<'s>(&mut self, ordinal: u32, services: impl IntoIterator<Item = &'s StoredService>) {
        for s in services {
            push(self.port.entry(s.port).or_default(), ordinal);
            let protocol = s.protocol.index();
            if self.protocol.len() <= protocol {
                self.protocol.resize_with(protocol + 1, RoaringBitmap::new);
            }
            push(&mut self.protocol[protocol], ordinal);
            if let Some(v) = &s.vulnerabilities {
                if let Some(score) = v.max_cvss {
                    let tenths = usize::from(score.tenths());
                    if self.cvss.len() <= tenths {
                        self.cvss.resize_with(tenths + 1, RoaringBitmap::new);
                    }
                    push(&mut self.cvss[tenths], ordinal);
                    if let Some(band) = crate::reference::facets::band_of(score.tenths())
                        .and_then(|b| self.band.get_mut(b))
                    {
                        push(band, ordinal);
                    }
                }
                push(&mut self.exploit[usize::from(v.has_exploits)], ordinal);
            }
        }
    }

    /// The hosts with a service satisfying `clause`, when the clause is on one of the fields
    /// kept here; `None` otherwise.
    pub fn hosts(&self, clause: &Clause) -> Option<Cow<'_, RoaringBitmap>> {
        Some(match clause {
            Clause::Port(p) => borrowed_or_empty(self.port.get(p)),
            Clause::Protocol(t) => borrowed_or_empty(self.protocol.get(t.index())),
            Clause::Exploit(flag) => Cow::Borrowed(&self.exploit[usize::from(*flag)]),
            Clause::Cvss(range) => {
                let low = usize::from(range.min().tenths());
                let high = usize::from(range.max().tenths());
                let parts: Vec<&RoaringBitmap> = self
                    .cvss
                    .iter()
                    .enumerate()
                    .filter(|(tenths, b)| (low..=high).contains(tenths) && !b.is_empty())
                    .map(|(_, b)| b)
                    .collect();
                match parts.as_slice() {
                    [] => Cow::Owned(RoaringBitmap::new()),
                    [one] => Cow::Borrowed(*one),
                    many => Cow::Owned(many.iter().fold(RoaringBitmap::new(), |acc, b| acc | *b)),
                }
            }
            _ => return None,
        })
    }

    /// Per port, the hosts holding it.
    pub fn ports(&self) -> impl Iterator<Item = (Port, &RoaringBitmap)> {
        self.port.iter().map(|(p, b)| (*p, b))
    }

    /// Per protocol-registry index, the hosts holding it.
    pub fn protocols(&self) -> &[RoaringBitmap] {
        &self.protocol
    }

    /// Per CVSS band, the hosts holding it.
    pub fn bands(&self) -> &[RoaringBitmap; 4] {
        &self.band
    }

    /// Per exploit flag, the hosts holding it.
    pub fn exploit(&self) -> &[RoaringBitmap; 2] {
        &self.exploit
    }

    /// Writes the postings (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.map(&self.port, |w, p| w.u16(p.get()))?;
        w.bitmaps(self.protocol.iter())?;
        w.bitmaps(self.cvss.iter())?;
        w.bitmaps(self.band.iter())?;
        w.bitmaps(self.exploit.iter())
    }

    /// Reads what [`Self::write`] wrote, for `hosts` hosts.
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, hosts: usize) -> Result<Self, LoadError> {
        let bad = |what: &str| LoadError::Corrupt(what.to_owned());
        let port = r.map("port hosts", |r| {
            Port::new(r.u16()?).map_err(|_| bad("a port key"))
        })?;
        let protocol = r.bitmaps("protocol hosts")?;
        if protocol.len() > periscope_model::ProtocolToken::all().count() {
            return Err(bad("more protocol hosts than protocols"));
        }
        let cvss = r.bitmaps("CVSS hosts")?;
        if cvss.len() > 101 {
            return Err(bad("CVSS hosts beyond 10.0"));
        }
        let band: [RoaringBitmap; 4] = r
            .bitmaps("CVSS band hosts")?
            .try_into()
            .map_err(|_| bad("CVSS band hosts"))?;
        let mut exploit = r.bitmaps("exploit hosts")?.into_iter();
        let (Some(no), Some(yes), None) = (exploit.next(), exploit.next(), exploit.next()) else {
            return Err(bad("exploit hosts"));
        };
        let beyond = |b: &RoaringBitmap| b.max().is_some_and(|m| m as usize >= hosts);
        if port
            .values()
            .chain(&protocol)
            .chain(&cvss)
            .chain(&band)
            .chain([&no, &yes])
            .any(beyond)
        {
            return Err(bad("a value's hosts name a host the index does not have"));
        }
        Ok(Self {
            port,
            protocol,
            cvss,
            band,
            exploit: [no, yes],
        })
    }

    /// Approximate bytes held by the postings.
    pub fn heap_bytes(&self) -> usize {
        map_bytes(&self.port)
            + self.protocol.iter().map(bitmap_bytes).sum::<usize>()
            + self.cvss.iter().map(bitmap_bytes).sum::<usize>()
            + self.band.iter().map(bitmap_bytes).sum::<usize>()
            + self.exploit.iter().map(bitmap_bytes).sum::<usize>()
    }
}

/// Host-level postings over host ordinals.
#[derive(Debug, Default)]
pub(super) struct HostPostings {
    country: HashMap<CountryCode, RoaringBitmap>,
    /// Any of the three attributions.
    asn: HashMap<Asn, RoaringBitmap>,
    /// Stored domain, DNS name and (IPv4) reverse-DNS names, under the name and under each
    /// of its parent domains.
    names: StrPostings<LabelsReversed>,
    /// The distinct organization values of the six evidence sources.
    organizations: Vec<Box<str>>,
    /// While building: the id of each organization value seen (empty once finished or
    /// loaded).
    organization_ids: HashMap<Box<str>, u32>,
    /// Per organization value: the hosts holding it in any source.
    organization_hosts: Vec<RoaringBitmap>,
    /// Per word: the organization values (not hosts) holding it.
    organization_words: StrPostings,
}

impl HostPostings {
    /// Records host `ordinal`; `rec` holds only its current services.
    pub fn add(&mut self, ordinal: u32, rec: &HostRecord) {
        if let Some(cc) = rec.location.as_ref().and_then(|(l, _)| l.country_code) {
            insert(&mut self.country, cc, ordinal);
        }
        let e = enrichment(rec);
        for a in [&e.asn.research, &e.asn.bgp, &e.asn.network]
            .into_iter()
            .flatten()
        {
            insert(&mut self.asn, a.asn, ordinal);
        }
        let reverse = rec.reverse_dns.as_ref().filter(|_| rec.ip.is_ipv4());
        let stored = e
            .domain
            .iter()
            .chain(&e.dns_name)
            .chain(reverse.into_iter().flat_map(|(names, _)| names));
        for name in stored {
            let mut suffix = name.as_str();
            loop {
                self.names.insert(suffix, ordinal);
                match suffix.split_once('.') {
                    Some((_, parent)) => suffix = parent,
                    None => break,
                }
            }
        }
        for value in organization_values(rec) {
            let id = self.organization_id(value);
            if let Some(hosts) = self.organization_hosts.get_mut(id as usize) {
                push(hosts, ordinal);
            }
        }
    }

    /// Ends the build: the text postings frozen, build-only lookups dropped.
    pub fn finish(&mut self) -> Result<(), super::strings::TooLong> {
        self.names.freeze()?;
        self.organization_words.freeze()?;
        self.organization_ids = HashMap::new();
        self.organizations.shrink_to_fit();
        self.organization_hosts.shrink_to_fit();
        Ok(())
    }

    fn organization_id(&mut self, value: &str) -> u32 {
        if let Some(id) = self.organization_ids.get(value) {
            return *id;
        }
        let id = u32::try_from(self.organizations.len()).unwrap_or(NONE_U32);
        self.organizations.push(value.into());
        self.organization_ids.insert(value.into(), id);
        self.organization_hosts.push(RoaringBitmap::new());
        for word in words(value) {
            self.organization_words.insert(&word, id);
        }
        id
    }

    /// Per GeoIP country, its hosts.
    pub fn countries(&self) -> impl Iterator<Item = (CountryCode, &RoaringBitmap)> {
        self.country.iter().map(|(cc, b)| (*cc, b))
    }

    /// Hosts whose GeoIP country is `cc`.
    pub fn country(&self, cc: CountryCode) -> Cow<'_, RoaringBitmap> {
        borrowed_or_empty(self.country.get(&cc))
    }

    /// Hosts with an attribution to `asn`.
    pub fn asn(&self, asn: Asn) -> Cow<'_, RoaringBitmap> {
        borrowed_or_empty(self.asn.get(&asn))
    }

    /// Hosts with a stored domain, DNS name or reverse-DNS name equal to `name` or under it.
    pub fn names_within(&self, name: &str) -> Cow<'_, RoaringBitmap> {
        self.names.get(name).unwrap_or_default()
    }

    /// Hosts where the phrase stands as a contiguous run in one of the organization values.
    pub fn organization(&self, phrase: &Phrase) -> RoaringBitmap {
        let wanted = words(phrase.as_str());
        let postings: Option<Vec<Cow<'_, RoaringBitmap>>> = wanted
            .iter()
            .map(|w| self.organization_words.get(w.as_str()))
            .collect();
        let candidates = match postings {
            Some(p) if !p.is_empty() => intersect(p.iter().map(AsRef::as_ref).collect()),
            _ => return RoaringBitmap::new(),
        };
        candidates
            .iter()
            .filter(|id| {
                self.organizations
                    .get(*id as usize)
                    .is_some_and(|v| contains_run(v, &wanted))
            })
            .filter_map(|id| self.organization_hosts.get(id as usize))
            .fold(RoaringBitmap::new(), |acc, hosts| acc | hosts)
    }

    /// Writes the postings (the index file; see `persist`).
    pub fn write<W: std::io::Write>(&self, w: &mut Writer<W>) -> std::io::Result<()> {
        w.map(&self.country, |w, cc| w.write_all(cc.as_str().as_bytes()))?;
        w.map(&self.asn, |w, a| w.u32(a.get()))?;
        self.names.write(w)?;
        w.len(self.organizations.len())?;
        for v in &self.organizations {
            w.str(v)?;
        }
        w.bitmaps(self.organization_hosts.iter())?;
        self.organization_words.write(w)
    }

    /// Reads what [`Self::write`] wrote, for `hosts` hosts.
    pub fn read<R: std::io::Read>(r: &mut Reader<R>, hosts: usize) -> Result<Self, LoadError> {
        let bad = |what: &str| LoadError::Corrupt(what.to_owned());
        let country = r.map("country postings", |r| {
            let b = [r.u8()?, r.u8()?];
            std::str::from_utf8(&b)
                .ok()
                .and_then(|t| CountryCode::parse(t).ok())
                .ok_or_else(|| bad("a country key"))
        })?;
        let asn = r.map("ASN postings", |r| {
            Asn::new(r.u32()?).map_err(|_| bad("an ASN key"))
        })?;
        let names = StrPostings::read(r, "name postings", hosts)?;
        let count = r.len("organizations")?;
        let organizations: Vec<Box<str>> = r.vec(count, |r| r.str("an organization"))?;
        let organization_hosts = r.bitmaps("organization hosts")?;
        if organization_hosts.len() != organizations.len() {
            return Err(bad("organization hosts do not match the organizations"));
        }
        let organization_words =
            StrPostings::read(r, "organization words", organization_hosts.len())?;
        let beyond = |b: &RoaringBitmap| b.max().is_some_and(|m| m as usize >= hosts);
        if country.values().chain(asn.values()).any(beyond) || organization_hosts.iter().any(beyond)
        {
            return Err(bad("a host posting names a host the index does not have"));
        }
        let organization_ids = HashMap::new();
        Ok(Self {
            country,
            asn,
            names,
            organizations,
            organization_ids,
            organization_hosts,
            organization_words,
        })
    }

    /// Approximate bytes held by the postings.
    pub fn heap_bytes(&self) -> usize {
        map_bytes(&self.country)
            + map_bytes(&self.asn)
            + self.names.heap_bytes()
            + self
                .organizations
                .iter()
                .map(|v| 2 * v.len() + 40)
                .sum::<usize>()
            + self
                .organization_hosts
                .iter()
                .map(bitmap_bytes)
                .sum::<usize>()
            + self.organization_words.heap_bytes()
    }
}

/// The values of the six organization sources of a host (with repeats), as the reference's
/// `organization_matches` reads them: AS organizations (research, BGP), WHOIS description
/// and netname, provider organization / AS organization / ISP, and the leaf-certificate
/// subject and issuer organizations of current services in the certificate-organization
/// families.
fn organization_values(rec: &HostRecord) -> Vec<&str> {
    let e = enrichment(rec);
    let mut out: Vec<&str> = Vec::new();
    for a in [&e.asn.research, &e.asn.bgp].into_iter().flatten() {
        out.extend(a.organization.as_deref());
    }
    if let Some(w) = &e.whois {
        out.extend(w.description.as_deref());
        out.extend(w.netname.as_deref());
    }
    if let Some(p) = &e.provider {
        out.extend(p.organization.as_deref());
        out.extend(p.as_organization.as_deref());
        out.extend(p.isp.as_deref());
    }
    for s in rec.services.values() {
        if !s.protocol.entry().certificate_organization {
            continue;
        }
        if let Some(c) = s.tls.as_ref().and_then(|t| t.certificate.as_ref()) {
            out.extend(c.subject_organization.as_deref());
            out.extend(c.issuer_organization.as_deref());
        }
    }
    out
}

fn insert<K: std::hash::Hash + Eq>(map: &mut HashMap<K, RoaringBitmap>, key: K, ordinal: u32) {
    push(map.entry(key).or_default(), ordinal);
}

/// Adds `ordinal` to `b`: appended when it is above every ordinal there, as a build walking
/// ordinals in ascending order nearly always has it (an append costs a fraction of an
/// insert's searches), inserted otherwise (a repeat of one already there is a no-op).
pub(super) fn push(b: &mut RoaringBitmap, ordinal: u32) {
    if b.try_push(ordinal).is_err() {
        b.insert(ordinal);
    }
}

fn borrowed_or_empty(found: Option<&RoaringBitmap>) -> Cow<'_, RoaringBitmap> {
    found.map_or_else(|| Cow::Owned(RoaringBitmap::new()), Cow::Borrowed)
}

/// The intersection of non-empty `postings`, smallest first.
pub(super) fn intersect(mut postings: Vec<&RoaringBitmap>) -> RoaringBitmap {
    postings.sort_by_key(|p| p.len());
    let mut it = postings.into_iter();
    let Some(first) = it.next() else {
        return RoaringBitmap::new();
    };
    let mut acc = first.clone();
    for p in it {
        if acc.is_empty() {
            break;
        }
        acc &= p;
    }
    acc
}

fn bitmap_bytes(b: &RoaringBitmap) -> usize {
    b.serialized_size()
}

/// Bitmaps plus a rough 48 bytes per map entry for the key and the table.
fn map_bytes<K>(map: &HashMap<K, RoaringBitmap>) -> usize {
    map.values().map(|b| bitmap_bytes(b) + 48).sum()
}

#[cfg(test)]
mod tests {
    use roaring::RoaringBitmap;

    use super::{NONE_U8, ServiceColumns, push, vulnerability_byte};

    /// An ordinal below or equal to the last one pushed is inserted, not dropped: the build
    /// walks ordinals in ascending order, but a bitmap never depends on it.
    #[test]
    fn an_ordinal_out_of_order_is_kept() {
        let mut b = RoaringBitmap::new();
        for ordinal in [7, 3, 7, 70_000, 5, 3, 1 << 20, 65_536] {
            push(&mut b, ordinal);
        }
        let expected: RoaringBitmap = [3, 5, 7, 65_536, 70_000, 1 << 20].into_iter().collect();
        assert_eq!(b, expected);
    }

    /// Every band and exploit flag, each present or not, reads back from its byte, and a
    /// value out of range has no byte (a loaded column holding one is refused).
    #[test]
    fn a_vulnerability_byte_reads_back_as_its_band_and_flag() {
        let bands = (0..8).chain([NONE_U8]);
        let mut column = ServiceColumns::default();
        let mut expected = Vec::new();
        for band in bands {
            for exploit in [0, 1, NONE_U8] {
                let byte = vulnerability_byte(band, exploit).expect("in range");
                column.vulnerability.push(byte);
                let present = |v: u8| (v != NONE_U8).then_some(u32::from(v));
                expected.push((present(band), present(exploit)));
            }
        }
        for (s, (band, exploit)) in expected.iter().enumerate() {
            assert_eq!(
                (column.band(s), column.exploit(s)),
                (*band, *exploit),
                "{s}"
            );
        }
        let unpacked = column.unpacked(ServiceColumns::band);
        assert_eq!(unpacked.len(), expected.len());
        for (byte, (band, _)) in unpacked.iter().zip(&expected) {
            assert_eq!(*byte, band.map_or(NONE_U8, |b| b as u8));
        }
        assert_eq!(vulnerability_byte(8, 0), None);
        assert_eq!(vulnerability_byte(0, 2), None);
        assert_eq!(vulnerability_byte(NONE_U8 - 1, NONE_U8), None);
    }
}
