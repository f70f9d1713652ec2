//! Parsing one line of the observation format into a validated [`Observation`].
//!
//! [`ObservationReader`] counts lines, skips blank ones, enforces the line-size bound, and hands
//! the rest to the decoder (JSON to raw structs: in one pass where `one_pass` can, else through
//! serde_json) and to the validation pass of the line's kind. Whatever fails becomes a
//! [`ReadError`] naming the line, the member and the reason.

use super::check::Invalid;
use super::decode::{Kind, decode, kind};
use super::one_pass::HostBlock;
use super::view::ServiceView;
use super::{DomainScan, MAX_LINE_BYTES, Observation, domain_scan, one_pass, service};
use crate::Timestamp;
use crate::record::HostEnrichment;

/// A rejected line: where, which field, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {field}: {reason}")]
pub struct ReadError {
    /// 1-based line number.
    pub line: u64,
    /// Dotted path of the offending member, or `(line)` for the line as a whole.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

/// One accepted line, a service line as a view borrowing from it
/// ([`ObservationReader::read_line_with`]).
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "a line's view is handed to a closure and dropped, never stored; boxing it \
              would add an allocation per line"
)]
pub enum LineView<'a> {
    /// `"kind": "service"`.
    Service {
        /// The observation.
        view: ServiceView<'a>,
        /// Whether `view.host` is that of the service line this reader gave before, known
        /// because the line's `host` block repeats that line's byte for byte: an encoder need
        /// not write it again.
        host_repeated: bool,
    },
    /// `"kind": "domain"`.
    Domain(DomainScan),
}

/// Reads observation lines one at a time, counting lines.
///
/// The service lines of one address usually carry the same `host` block, byte for byte (it is
/// the address's enrichment, and a scanner writes it on each of its services). The reader keeps
/// the last block it accepted, as bytes and as the enrichment they gave, and a line whose
/// `host` value repeats those bytes takes that enrichment without reading the block again
/// (where the block is most of a line, that is most of the work). Keeping the enrichment
/// costs a copy, which only repeats repay: it is kept while the input repeats its blocks (the
/// last block read repeated the one before, or a line just repeated one), else only the
/// bytes are, until a block read turns out to repeat them. A block gives the same
/// enrichment whatever line carries it, except for one rule of the line's address, which is
/// checked again (`host::repeated`): so every line reads exactly as it would
/// alone, which a property test holds it to.
#[derive(Debug)]
pub struct ObservationReader {
    line: u64,
    now: Timestamp,
    last_host: Option<LastHost>,
    /// Whether the last block read or taken repeated the one before it.
    repeating: bool,
    /// Whether the host of the last service line given is the block `last_host` holds (it
    /// read that block, or repeated it); not so after a line without a block, or one read
    /// through serde.
    given_last_host: bool,
}

/// The last `host` block the reader accepted.
#[derive(Debug, Default)]
struct LastHost {
    /// The block's value as it stood in its line.
    bytes: Vec<u8>,
    /// What it gave, kept while blocks repeat.
    enrichment: Option<HostEnrichment>,
}

impl ObservationReader {
    /// A reader whose clock reads `now` (timestamps more than an hour after it are refused).
    pub fn new(now: Timestamp) -> Self {
        Self {
            line: 0,
            now,
            last_host: None,
            repeating: false,
            given_last_host: false,
        }
    }

    /// Parses the next line. `Ok(None)` for a blank line.
    ///
    /// `text` is one line, with or without its `\n` or `\r\n` ending. Every call counts as a
    /// line, blank or not, so error line numbers match the file's.
    pub fn read_line(&mut self, text: &str) -> Result<Option<Observation>, ReadError> {
        self.read_line_with(text, |line| match line {
            LineView::Service { view, .. } => Observation::Service(view.into_owned()),
            LineView::Domain(d) => Observation::Domain(d),
        })
    }

    /// [`Self::read_line`], handing the line to `f` with a service line as a view that
    /// borrows from the line (so nothing is allocated for its text); returns what `f` does.
    pub fn read_line_with<T>(
        &mut self,
        text: &str,
        f: impl FnOnce(LineView<'_>) -> T,
    ) -> Result<Option<T>, ReadError> {
        self.line += 1;
        let text = without_line_end(text);
        if text.len() > MAX_LINE_BYTES {
            return Err(self.reject(Invalid::here(format!(
                "the line is {} bytes long; the limit is 1 MiB ({MAX_LINE_BYTES} bytes)",
                text.len()
            ))));
        }
        if is_blank(text) {
            return Ok(None);
        }
        let parsed = match kind(text) {
            Ok(Kind::Service) => self.service_line(text, f),
            Ok(Kind::Domain) => one_pass::domain(text)
                .map_or_else(|| decode(text), Ok)
                .and_then(|raw| domain_scan::domain_scan(raw, self.now))
                .map(|d| f(LineView::Domain(d))),
            Err(e) => Err(e),
        };
        parsed.map(Some).map_err(|e| self.reject(e))
    }

    /// A service line, its `host` block taken from the last one when it repeats it.
    fn service_line<T>(
        &mut self,
        text: &str,
        f: impl FnOnce(LineView<'_>) -> T,
    ) -> Result<T, Invalid> {
        let last = self.last_host.as_ref();
        let previous = last
            .filter(|h| h.enrichment.is_some())
            .map(|h| h.bytes.as_slice());
        let (raw, block) = match one_pass::service_after(text, previous) {
            Some(read) => read,
            None => (decode(text)?, HostBlock::Absent),
        };
        let repeated_block = block == HostBlock::Repeated;
        let has_block = block != HostBlock::Absent;
        let repeated = repeated_block.then(|| {
            last.and_then(|h| h.enrichment.as_ref())
                .expect("only a block given with its enrichment can repeat")
        });
        let view = service::service(&raw, self.now, repeated)?;
        let (read, repeating) = match block {
            HostBlock::Read(range) => {
                let repeats = last.is_some_and(|h| h.bytes == text.as_bytes()[range.clone()]);
                let keep = repeats || self.repeating;
                let enrichment = keep.then(|| view.host.clone().into_owned());
                (Some((range, enrichment)), repeats)
            }
            HostBlock::Repeated => (None, true),
            HostBlock::Absent => (None, self.repeating),
        };
        let out = f(LineView::Service {
            view,
            host_repeated: repeated_block && self.given_last_host,
        });
        self.given_last_host = has_block;
        self.repeating = repeating;
        if let Some((range, enrichment)) = read {
            let last = self.last_host.get_or_insert_with(LastHost::default);
            last.bytes.clear();
            last.bytes.extend_from_slice(&text.as_bytes()[range]);
            last.enrichment = enrichment;
        }
        Ok(out)
    }

    fn reject(&self, e: Invalid) -> ReadError {
        ReadError {
            line: self.line,
            field: if e.field.is_empty() {
                "(line)".to_owned()
            } else {
                printable(e.field)
            },
            reason: e.reason,
        }
    }
}

/// A path as it may be printed: an unknown member's name comes from the line, so control
/// characters are escaped (a newline must not start a fake log line) and length is bounded.
fn printable(field: String) -> String {
    const MAX_BYTES: usize = 256;
    if field.len() <= MAX_BYTES && !field.chars().any(char::is_control) {
        return field;
    }
    let mut out = String::with_capacity(MAX_BYTES + 4);
    for c in field.chars() {
        if out.len() >= MAX_BYTES {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

fn without_line_end(text: &str) -> &str {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.strip_suffix('\r').unwrap_or(text)
}

/// Only JSON whitespace (space, tab, CR, LF), or nothing.
fn is_blank(text: &str) -> bool {
    text.bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}
