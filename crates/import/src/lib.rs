//! Scanner output into Periscope observations: one streaming importer per format.
//!
//! It owns
//! - [`Format`] and [`detect`]: the formats `periscope ingest` and `periscope convert` read,
//!   and recognising them from the first bytes of an input;
//! - one module per format, each a streaming reader that holds one scanner record at a time
//!   (an Nmap `<host>`, a Masscan port record, a ZGrab2 or Shodan line, a Censys host) and says
//!   in its `//!` doc what it maps and what it drops: [`jsonl`], [`nmap`], [`masscan`],
//!   [`zgrab2`], [`shodan`], [`censys`];
//! - [`services`]: the tables from each scanner's service names to registry tokens;
//! - the shared pieces: CPE 2.2 to 2.3 ([`cpe`]), certificate and key fingerprints
//!   ([`fingerprint`]), the fields of a DER certificate ([`x509`]), an XML record reader over quick-xml ([`xml`]), line counting
//!   ([`lines`]) and the observation lines importers write (`draft`).
//!
//! An importer yields [`Item`]s: a [`Record`] (the validated observations of one scanner
//! record, each with its JSON line) or a [`Rejected`] record (where, which field, why —
//! nothing of it is kept). What a format cannot map (a service name without a registry token,
//! a closed port, a host that was down) is counted in its [`Tally`], never silently dropped.
//!
//! **Boundary:** no file handling (callers hand a [`BufRead`], already decompressed), no
//! store, no enrichment: callers apply those around the importer.

pub mod censys;
pub mod cpe;
mod draft;
pub mod fingerprint;
pub mod jsonl;
pub mod lines;
pub mod masscan;
pub mod nmap;
pub mod services;
pub mod shodan;
pub mod x509;
pub mod xml;
pub mod zgrab2;

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead};
use std::str::FromStr;

use periscope_model::observation::Observation;
use periscope_model::{Port, Timestamp};

pub use draft::write_observation;

/// The formats an input may be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// Periscope's own observation JSON Lines.
    Jsonl,
    /// `nmap -oX`.
    NmapXml,
    /// `masscan -oJ` (and `-oD`, one object per line).
    MasscanJson,
    /// `masscan -oX`.
    MasscanXml,
    /// ZGrab2's JSON lines.
    Zgrab2,
    /// Shodan's `download` banners (JSON lines).
    Shodan,
    /// Censys host JSON (one host per line).
    Censys,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 7] = [
        Format::Jsonl,
        Format::NmapXml,
        Format::MasscanJson,
        Format::MasscanXml,
        Format::Zgrab2,
        Format::Shodan,
        Format::Censys,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::NmapXml => "nmap-xml",
            Self::MasscanJson => "masscan-json",
            Self::MasscanXml => "masscan-xml",
            Self::Zgrab2 => "zgrab2",
            Self::Shodan => "shodan",
            Self::Censys => "censys",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|f| f.name()).collect();
                format!("{s:?} is not a format; one of auto, {}", names.join(", "))
            })
    }
}

/// Recognises the format of an input from its first bytes (as many as are at hand, ideally a
/// few KB; decompressed). `None` when nothing fits.
pub fn detect(head: &[u8]) -> Option<Format> {
    let text = String::from_utf8_lossy(&head[..head.len().min(64 * 1024)]);
    let text = text.trim_start_matches('\u{feff}').trim_start();
    if text.starts_with('<') {
        if !text.contains("<nmaprun") {
            return None;
        }
        return Some(if text.contains("scanner=\"masscan\"") {
            Format::MasscanXml
        } else {
            Format::NmapXml
        });
    }
    if text.starts_with('[') {
        // `masscan -oJ` writes one array of port records.
        return Some(Format::MasscanJson);
    }
    if !text.starts_with('{') {
        return None;
    }
    // The first line is one JSON object in every JSON Lines format; it may be longer than
    // the head, so look at its members as text too.
    let first = text.lines().next().unwrap_or_default();
    let value: Option<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(first.trim().trim_end_matches(',')).ok();
    let has = |member: &str| match &value {
        Some(map) => map.contains_key(member),
        None => first.contains(&format!("\"{member}\"")),
    };
    if has("kind") {
        Some(Format::Jsonl)
    } else if has("ip_str") || has("_shodan") {
        Some(Format::Shodan)
    } else if has("services") || has("autonomous_system") {
        Some(Format::Censys)
    } else if has("ports") || has("rec_type") {
        Some(Format::MasscanJson)
    } else if has("data") && has("ip") {
        Some(Format::Zgrab2)
    } else {
        None
    }
}

/// What an importer needs besides its input.
#[derive(Debug, Clone)]
pub struct Options {
    /// The reader's clock: observation times more than an hour after it are refused.
    pub now: Timestamp,
    /// The ports ZGrab2 scanned (it does not record them).
    pub zgrab2_ports: Zgrab2Ports,
}

impl Options {
    /// Options with the clock `now` and no ZGrab2 ports.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now,
            zgrab2_ports: Zgrab2Ports::default(),
        }
    }
}

/// The ports a ZGrab2 run scanned: one for every module, and per module where they differ
/// (`--port 443`, `--port http=8080`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Zgrab2Ports {
    /// The port of every module not named in `per_module`.
    pub all: Option<Port>,
    /// Ports by module name (the name a ZGrab2 result is keyed by under `data`).
    pub per_module: Vec<(String, Port)>,
}

impl Zgrab2Ports {
    /// Adds one `--port` value: `PORT` or `MODULE=PORT`.
    pub fn add(&mut self, value: &str) -> Result<(), String> {
        let (module, port) = match value.split_once('=') {
            Some((module, port)) => (Some(module.trim()), port),
            None => (None, value),
        };
        let port = Port::parse(port.trim()).map_err(|e| format!("--port {value:?}: {e}"))?;
        match module {
            Some("") => return Err(format!("--port {value:?}: the module name is empty")),
            Some(m) => self.per_module.push((m.to_owned(), port)),
            None => self.all = Some(port),
        }
        Ok(())
    }

    /// The port of `module`'s results.
    pub fn of(&self, module: &str) -> Option<Port> {
        self.per_module
            .iter()
            .rev()
            .find(|(m, _)| m == module)
            .map(|(_, p)| *p)
            .or(self.all)
    }

    /// True when no port was given.
    pub fn is_empty(&self) -> bool {
        self.all.is_none() && self.per_module.is_empty()
    }
}

/// An observation an importer produced, with its line in the observation format.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The validated observation.
    pub observation: Observation,
    /// Its JSON line (no line end), as `periscope convert` writes it.
    pub line: String,
}

/// The observations of one scanner record.
#[derive(Debug, Clone)]
pub struct Record {
    /// The line of the input the record starts on (1-based).
    pub line: u64,
    /// Its observations (none when it held nothing mappable; the tally says why).
    pub observations: Vec<Imported>,
}

/// A scanner record that breaks a rule; nothing of it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// The line of the input the record starts on (1-based), or where reading stopped.
    pub line: u64,
    /// What is wrong where: the scanner's member, or the observation field and its service.
    pub field: String,
    /// Why.
    pub reason: String,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.field, self.reason)
    }
}

/// What an importer yields.
#[derive(Debug, Clone)]
pub enum Item {
    /// A record read.
    Record(Record),
    /// A record rejected.
    Rejected(Rejected),
}

/// What an importer saw besides observations: records, and what it did not map, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Scanner records read (hosts, port records, lines), rejected ones included.
    pub records: u64,
    /// Services whose name maps to no registry token, by the scanner's name.
    pub unmapped: BTreeMap<String, u64>,
    /// Things a format records that are not services, by what they are (`host down`,
    /// `port closed`, …).
    pub skipped: BTreeMap<String, u64>,
}

impl Tally {
    pub(crate) fn unmapped(&mut self, name: &str) {
        *self.unmapped.entry(name.to_owned()).or_default() += 1;
    }

    pub(crate) fn skipped(&mut self, what: &str) {
        *self.skipped.entry(what.to_owned()).or_default() += 1;
    }

    /// Adds another tally into this one.
    pub fn add(&mut self, other: &Tally) {
        self.records += other.records;
        for (k, v) in &other.unmapped {
            *self.unmapped.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
    }

    /// Services not mapped, in all.
    pub fn unmapped_total(&self) -> u64 {
        self.unmapped.values().sum()
    }
}

/// Why an input cannot be imported at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The format needs an option it was not given.
    #[error("{0}")]
    Options(String),
}

/// A streaming importer of one input.
pub trait Importer {
    /// The next record, or `None` at the end of the input. An error is the input's (it cannot
    /// be read further); a bad record is an [`Item::Rejected`].
    fn next_item(&mut self) -> Result<Option<Item>, Error>;

    /// What it has seen so far.
    fn tally(&self) -> &Tally;
}

/// The importer of `format` over `input`. `Error::Options` when the format needs an option
/// that is missing (ZGrab2's ports).
pub fn importer<'a>(
    format: Format,
    input: Box<dyn BufRead + 'a>,
    options: &Options,
) -> Result<Box<dyn Importer + 'a>, Error> {
    Ok(match format {
        Format::Jsonl => Box::new(jsonl::JsonlImporter::new(input, options)),
        Format::NmapXml => Box::new(nmap::NmapImporter::new(input, options)),
        Format::MasscanJson => Box::new(masscan::MasscanJsonImporter::new(input, options)),
        Format::MasscanXml => Box::new(masscan::MasscanXmlImporter::new(input, options)),
        Format::Zgrab2 => Box::new(zgrab2::Zgrab2Importer::new(input, options)?),
        Format::Shodan => Box::new(shodan::ShodanImporter::new(input, options)?),
        Format::Censys => Box::new(censys::CensysImporter::new(input, options)?),
    })
}
