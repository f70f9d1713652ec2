//! Reading observation files line by line with bounded memory, shared by `validate` and
//! `ingest` so both read exactly alike.
//!
//! [`ObservationLines`] reads one line at a time into a reused buffer holding at most the
//! format's 1 MiB plus a line end: a longer line is rejected and skipped without being
//! buffered whole, a line that is not UTF-8 is rejected, and every other line goes to the
//! model's [`ObservationReader`]. Line numbers are 1-based and count every line, blank or
//! rejected, so they match the file's. [`open_input`] opens a path (or `-` for standard
//! input) and decompresses it when its first bytes are the gzip magic number; a regular file
//! of at least [`DIRECT_MIN_BYTES`] is read past the page cache (`direct`).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use flate2::bufread::MultiGzDecoder;
use periscope_model::Timestamp;
use periscope_model::observation::{MAX_LINE_BYTES, Observation, ObservationReader};

use direct::DirectReader;

mod direct;

/// Size of the read buffers: large reads keep system calls rare on multi-gigabyte files.
const BUFFER: usize = 1 << 20;
/// A regular file at least this large is read past the page cache (`lines/direct.rs`): it is
/// read once, and caching it would cost more than it saves. A smaller one is read through
/// the cache, which may already hold it (a file written just before, or read by `validate`).
pub const DIRECT_MIN_BYTES: u64 = 256 << 20;

/// The first two bytes of every gzip member.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A rejected line: which one, which field, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// 1-based line number in its file.
    pub line: u64,
    /// Dotted path of the offending member, or `(line)` for the line as a whole.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl Rejection {
    fn whole_line(line: u64, reason: String) -> Self {
        Self {
            line,
            field: "(line)".to_owned(),
            reason,
        }
    }
}

/// What one line held.
// Moved straight into a batch: boxing the observation would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Parsed {
    /// Only whitespace.
    Blank,
    /// A valid observation.
    Observation(Observation),
    /// A line that breaks the format; nothing of it is kept.
    Rejected(Rejection),
}

/// The observation lines of one input.
#[derive(Debug)]
pub struct ObservationLines<R> {
    input: R,
    line: Vec<u8>,
    number: u64,
    reader: ObservationReader,
}

impl<R: BufRead> ObservationLines<R> {
    /// Reads `input`, checking timestamps against `now`.
    pub fn new(input: R, now: Timestamp) -> Self {
        Self {
            input,
            line: Vec::with_capacity(64 * 1024),
            number: 0,
            reader: ObservationReader::new(now),
        }
    }

    /// The next line, or `None` at the end of the input. Errors are the input's.
    pub fn next_line(&mut self) -> io::Result<Option<Parsed>> {
        self.line.clear();
        // Read at most one byte more than a line may hold (with `\r\n`), so memory stays
        // bounded whatever the input.
        let read = self
            .input
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 3)
            .read_until(b'\n', &mut self.line)?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        let n = self.number;
        if self.line.last() != Some(&b'\n') && self.line.len() > MAX_LINE_BYTES + 2 {
            self.input.skip_until(b'\n')?;
            return Ok(Some(self.reject_whole(n, too_long())));
        }
        let mut content = self.line.as_slice();
        content = content.strip_suffix(b"\n").unwrap_or(content);
        content = content.strip_suffix(b"\r").unwrap_or(content);
        Ok(Some(parse_content(&mut self.reader, n, content)))
    }

    /// The 1-based number of the line [`Self::next_line`] read last.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// The text of the line [`Self::next_line`] read last, without its line end (meaningful
    /// after it returned an observation: the line was then whole and UTF-8).
    pub fn content(&self) -> &[u8] {
        let mut content = self.line.as_slice();
        content = content.strip_suffix(b"\n").unwrap_or(content);
        content.strip_suffix(b"\r").unwrap_or(content)
    }

    /// Rejects line `n` before the observation reader saw it.
    fn reject_whole(&mut self, n: u64, reason: String) -> Parsed {
        reject_whole(&mut self.reader, n, reason)
    }
}

/// What line `n` of an input holds, given its `content` without the line end: rejected when
/// longer than the format's bound or not UTF-8, else what `reader` makes of it (a rejection
/// naming line `n`). The one rule of `ObservationLines` and of `ingest`'s parsing threads.
pub fn parse_content(reader: &mut ObservationReader, n: u64, content: &[u8]) -> Parsed {
    if content.len() > MAX_LINE_BYTES {
        return reject_whole(reader, n, too_long());
    }
    let text = match std::str::from_utf8(content) {
        Ok(text) => text,
        Err(e) => {
            let reason = format!("not UTF-8 (invalid byte at column {})", e.valid_up_to() + 1);
            return reject_whole(reader, n, reason);
        }
    };
    match reader.read_line(text) {
        Ok(None) => Parsed::Blank,
        Ok(Some(obs)) => Parsed::Observation(obs),
        Err(e) => Parsed::Rejected(Rejection {
            line: n,
            field: e.field,
            reason: e.reason,
        }),
    }
}

/// Line `n` rejected whole for being longer than the format's bound, though not buffered.
pub fn too_long_line(reader: &mut ObservationReader, n: u64) -> Parsed {
    reject_whole(reader, n, too_long())
}

/// Rejects line `n` before `reader` saw it, keeping the reader's line count in step.
fn reject_whole(reader: &mut ObservationReader, n: u64, reason: String) -> Parsed {
    let _ = reader.read_line("");
    Parsed::Rejected(Rejection::whole_line(n, reason))
}

fn too_long() -> String {
    "longer than 1 MiB".to_owned()
}

/// One input opened for reading.
pub struct Input {
    /// Its bytes, decompressed when they were gzip.
    pub reader: Box<dyn BufRead>,
    /// Whether it was gzip-compressed.
    pub gzip: bool,
    /// Whether it is read past the page cache ([`DIRECT_MIN_BYTES`]).
    pub direct: bool,
}

/// Opens `path` (`-` is standard input), decompressing gzip (told by its magic bytes, not
/// its name; concatenated gzip members are read as one stream). `consumed` counts the raw
/// bytes read from the file, compressed or not, for progress reports.
pub fn open_input(path: &Path, consumed: Arc<AtomicU64>) -> Result<Input> {
    let (name, raw): (String, Box<dyn Read>) = if path.as_os_str() == "-" {
        ("<stdin>".to_owned(), Box::new(io::stdin().lock()))
    } else {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let metadata = file
            .metadata()
            .with_context(|| format!("cannot read the size of {}", path.display()))?;
        if metadata.is_file() && metadata.len() >= DIRECT_MIN_BYTES {
            let direct = DirectReader::open(path, Arc::clone(&consumed))
                .with_context(|| format!("cannot read {}", path.display()))?;
            if let Some(direct) = direct {
                return buffered_input(path.display().to_string(), Box::new(direct), true);
            }
        }
        (path.display().to_string(), Box::new(file))
    };
    let raw = BufReader::with_capacity(
        BUFFER,
        Counting {
            inner: raw,
            consumed,
        },
    );
    buffered_input(name, Box::new(raw), false)
}

/// The [`Input`] of the buffered bytes `raw` of `name`: gzip when they start so.
fn buffered_input(name: String, mut raw: Box<dyn BufRead>, direct: bool) -> Result<Input> {
    let gzip = raw
        .fill_buf()
        .with_context(|| format!("cannot read {name}"))?
        .starts_with(&GZIP_MAGIC);
    let reader: Box<dyn BufRead> = if gzip {
        Box::new(BufReader::with_capacity(BUFFER, MultiGzDecoder::new(raw)))
    } else {
        raw
    };
    Ok(Input {
        reader,
        gzip,
        direct,
    })
}

/// A reader that adds the bytes it reads to a shared counter.
struct Counting<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &[u8]) -> Vec<String> {
        let now = Timestamp::parse("2026-11-21T00:00:00Z").expect("timestamp");
        let mut lines = ObservationLines::new(input, now);
        let mut out = Vec::new();
        while let Some(parsed) = lines.next_line().expect("in-memory input") {
            out.push(match parsed {
                Parsed::Blank => "blank".to_owned(),
                Parsed::Observation(_) => "observation".to_owned(),
                Parsed::Rejected(r) => format!("{}: {}: {}", r.line, r.field, r.reason),
            });
        }
        out
    }

    /// A file of [`DIRECT_MIN_BYTES`] is read direct, a smaller one through the cache, and
    /// both give their bytes, gzip or not, and count them.
    #[test]
    fn a_large_file_is_read_direct_and_whole() {
        let line = b"{\"kind\":\"domain\"}\n";
        let mut large = Vec::with_capacity(usize::try_from(DIRECT_MIN_BYTES).unwrap() + 64);
        while (large.len() as u64) < DIRECT_MIN_BYTES {
            large.extend_from_slice(line);
        }
        // Stored, not compressed: as large as the text, and quick to write.
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
        io::Write::write_all(&mut gzip, &large).unwrap();
        let gzip = gzip.finish().unwrap();
        let dir = std::env::current_exe()
            .unwrap()
            .with_file_name(format!("lines-direct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes, direct, gz) in [
            ("large", &large, true, false),
            ("small", &large[..1 << 20].to_vec(), false, false),
            ("large.gz", &gzip, true, true),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            let consumed = Arc::new(AtomicU64::new(0));
            let mut input = open_input(&path, Arc::clone(&consumed)).unwrap();
            assert_eq!((input.direct, input.gzip), (direct, gz), "{name}");
            let mut read = Vec::new();
            input.reader.read_to_end(&mut read).unwrap();
            let want = if gz { &large } else { bytes };
            assert!(read == *want, "{name}: the bytes as written");
            assert_eq!(
                consumed.load(Ordering::Relaxed),
                bytes.len() as u64,
                "{name}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bounds_lines_and_keeps_counting() {
        let domain = r#"{"kind":"domain","name":"a.example","addresses":["240.0.0.1"],"observed_at":"2026-11-20T00:00:00Z"}"#;
        let mut input = Vec::new();
        input.extend_from_slice(domain.as_bytes());
        input.extend_from_slice(b"\r\n \t\n");
        // Exactly 1 MiB of content is allowed by the bound (and then fails as JSON) …
        input.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES - 1));
        input.extend_from_slice(b"x\r\n");
        // … one byte more is not, and is skipped without being buffered.
        input.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES + 1));
        input.extend_from_slice(b"\n");
        input.extend(std::iter::repeat_n(b'z', 3 * MAX_LINE_BYTES));
        input.extend_from_slice(b"\n\xff\n");
        input.extend_from_slice(domain.as_bytes());
        let got = read_all(&input);
        assert_eq!(got.len(), 7, "{got:?}");
        assert_eq!(got[0], "observation");
        assert_eq!(got[1], "blank");
        assert!(got[2].starts_with("3: (line): "), "{}", got[2]);
        assert!(!got[2].contains("1 MiB"), "{}", got[2]);
        assert_eq!(got[3], "4: (line): longer than 1 MiB");
        assert_eq!(got[4], "5: (line): longer than 1 MiB");
        assert_eq!(got[5], "6: (line): not UTF-8 (invalid byte at column 1)");
        assert_eq!(got[6], "observation");
    }
}
