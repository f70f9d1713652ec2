//! Parsing observation lines on every core for `ingest`.
//!
//! The reader thread only cuts its input into [`Chunk`]s of whole lines (about
//! [`CHUNK_BYTES`] each, numbered in order) and hands them to [`Parsers`], a pool of one
//! parsing thread per core; each chunk comes back as a [`ParsedChunk`] holding, line by line,
//! what [`crate::lines::ObservationLines`] would have returned for it, and the pool returns
//! the chunks in the order they were read. So the reader sees exactly the lines, line numbers,
//! blank lines and rejections of the sequential reader, in the same order: only the parsing and
//! validation (most of ingest's time) moved to other threads.
//!
//! Lines are bounded as the sequential reader bounds them: a line longer than the format's
//! 1 MiB (plus its line end) is skipped without being buffered and comes back rejected as
//! "longer than 1 MiB", a line that is not UTF-8 is rejected naming the column of its first
//! invalid byte. Memory is bounded by the chunks in flight ([`Parsers::capacity`]).
//!
//! **Boundary:** this module parses; batching, enrichment and the store stay with the reader.

use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{self, Scope, ScopedJoinHandle};
use std::time::Duration;

use periscope_index::durable::{EncodedHosts, HostEncoder};
use periscope_model::Timestamp;
use periscope_model::observation::{
    LineView, MAX_LINE_BYTES, Observation, ObservationReader, ScanStatus,
};

use crate::lines::{Parsed, Rejection, parse_content, too_long_line};

/// A chunk is closed once its lines hold this many bytes: large enough that handing it to a
/// thread costs little next to parsing it, small enough that a few in flight stay a few MiB.
const CHUNK_BYTES: usize = 1 << 20;

/// Whole lines of one input, as read, numbered.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    /// Position of the chunk in its input (0, 1, …).
    seq: u64,
    /// Number of the chunk's first line (1-based, counting every line of the input).
    first: u64,
    /// The lines, each with its line end (the input's last line may have none). A line too
    /// long to keep is not here: its entry in `ends` repeats the previous end.
    text: Vec<u8>,
    /// Where each line ends in `text`.
    ends: Vec<usize>,
    /// Indices (in `ends`) of the lines that were longer than the bound and skipped.
    too_long: Vec<usize>,
    /// An empty vector for the parsed lines, kept with the chunk so its memory is reused
    /// rather than allocated and freed per chunk.
    spare_lines: Vec<Line>,
    /// Empty encoded records, kept with the chunk for the same reason.
    spare_hosts: EncodedHosts,
}

impl Chunk {
    /// Lines in the chunk.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    /// The line number of line `i` of the chunk.
    pub(super) fn number(&self, i: usize) -> u64 {
        self.first + i as u64
    }

    /// The text of line `i` without its line end (as `ObservationLines::content`).
    pub(super) fn content(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        let line = &self.text[start..self.ends[i]];
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.strip_suffix(b"\r").unwrap_or(line)
    }
}

/// What the parsing threads made of one line. Small, so that a line costs no copy of an
/// observation as it is returned, stored and drained: an encoded line (nearly every line of
/// the encoding path) allocates nothing, and on the plain path one allocation is cheaper
/// than the three copies of an unboxed observation (about a kilobyte each).
#[derive(Debug)]
pub(super) enum Line {
    /// What the sequential reader returns for it.
    Parsed(Box<Parsed>),
    /// A service observation, merged into group `group` of the chunk's encoded records
    /// (only when the parsers encode); `failed` when its status is `failed`.
    Encoded {
        /// Its group in [`ParsedChunk::hosts`].
        group: usize,
        /// A failed observation.
        failed: bool,
    },
}

/// A chunk and what each of its lines held, in order.
#[derive(Debug)]
pub(super) struct ParsedChunk {
    /// The chunk, for the lines' text and numbers.
    pub(super) chunk: Chunk,
    /// One entry per line of the chunk.
    pub(super) lines: Vec<Line>,
    /// The chunk's service observations as encoded host records (when the parsers encode):
    /// the groups of consecutive lines of one address, in the order of their lines.
    pub(super) hosts: EncodedHosts,
}

/// Cuts an input into chunks of whole lines.
pub(super) struct Chunks<R> {
    input: R,
    /// Lines read so far.
    number: u64,
    /// Chunks cut so far.
    seq: u64,
}

impl<R: BufRead> Chunks<R> {
    /// Reads `input` from its start.
    pub(super) fn new(input: R) -> Self {
        Self {
            input,
            number: 0,
            seq: 0,
        }
    }

    /// The next chunk (reusing `chunk`'s buffers), or `None` at the end of the input. Errors
    /// are the input's.
    pub(super) fn next_chunk(&mut self, mut chunk: Chunk) -> io::Result<Option<Chunk>> {
        chunk.text.clear();
        chunk.ends.clear();
        chunk.too_long.clear();
        chunk.seq = self.seq;
        chunk.first = self.number + 1;
        while chunk.text.len() < CHUNK_BYTES {
            let start = chunk.text.len();
            // At most one byte more than a line may hold (with `\r\n`), so memory stays
            // bounded whatever the input.
            let read = read_line(&mut self.input, MAX_LINE_BYTES + 3, &mut chunk.text)?;
            if read == 0 {
                break;
            }
            self.number += 1;
            if chunk.text.last() != Some(&b'\n') && chunk.text.len() - start > MAX_LINE_BYTES + 2 {
                self.input.skip_until(b'\n')?;
                chunk.text.truncate(start);
                chunk.too_long.push(chunk.ends.len());
            }
            chunk.ends.push(chunk.text.len());
        }
        if chunk.ends.is_empty() {
            return Ok(None);
        }
        self.seq += 1;
        Ok(Some(chunk))
    }
}

/// Appends the next line of `input` to `out`, through its `\n` but at most `limit` bytes;
/// how many bytes were appended (0 at the end). `input.take(limit).read_until(b'\n', out)`,
/// with a vectorised search for the line end: the reader is the one thread of ingest that
/// sees every byte, so its search is worth making fast.
fn read_line(input: &mut impl BufRead, limit: usize, out: &mut Vec<u8>) -> io::Result<usize> {
    let mut read = 0;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let available = &available[..available.len().min(limit - read)];
        let (ended, used) = match memchr::memchr(b'\n', available) {
            Some(end) => (true, end + 1),
            None => (available.is_empty(), available.len()),
        };
        out.extend_from_slice(&available[..used]);
        input.consume(used);
        read += used;
        if ended || read == limit {
            return Ok(read);
        }
    }
}

/// Parses the lines of `chunk` as the sequential reader would, checking timestamps against
/// `reader`'s clock; with `encoder`, service observations are merged and encoded into
/// `hosts` (a group never spans chunks) straight from their views, never built as owned
/// observations.
fn parse(
    chunk: &Chunk,
    reader: &mut ObservationReader,
    encoder: Option<&mut HostEncoder>,
    lines: &mut Vec<Line>,
    hosts: &mut EncodedHosts,
) {
    let mut too_long = chunk.too_long.iter().copied().peekable();
    let mut encoder = encoder;
    for i in 0..chunk.len() {
        let n = chunk.number(i);
        lines.push(if too_long.next_if_eq(&i).is_some() {
            Line::Parsed(Box::new(too_long_line(reader, n)))
        } else {
            match encoder.as_deref_mut() {
                Some(encoder) => encode_content(reader, n, chunk.content(i), encoder, hosts),
                None => Line::Parsed(Box::new(parse_content(reader, n, chunk.content(i)))),
            }
        });
    }
    if let Some(encoder) = encoder {
        encoder.finish(hosts);
    }
}

/// What [`parse_content`] makes of line `n`, except that a service observation is merged
/// into `hosts` by `encoder` from its view.
fn encode_content(
    reader: &mut ObservationReader,
    n: u64,
    content: &[u8],
    encoder: &mut HostEncoder,
    hosts: &mut EncodedHosts,
) -> Line {
    // A line too long or not UTF-8 is rejected as the shared reader rejects it (which says
    // where). The check here only says whether: vectorised, a third of the cost of the
    // standard library's on these mostly ASCII lines.
    let text = match simdutf8::basic::from_utf8(content) {
        Ok(text) if content.len() <= MAX_LINE_BYTES => text,
        _ => return Line::Parsed(Box::new(parse_content(reader, n, content))),
    };
    let read = reader.read_line_with(text, |line| match line {
        LineView::Service {
            view,
            host_repeated,
        } => Line::Encoded {
            group: encoder.push(&view, host_repeated, hosts),
            failed: view.status == ScanStatus::Failed,
        },
        LineView::Domain(d) => Line::Parsed(Box::new(Parsed::Observation(Observation::Domain(d)))),
    });
    match read {
        Ok(Some(line)) => line,
        Ok(None) => Line::Parsed(Box::new(Parsed::Blank)),
        Err(e) => Line::Parsed(Box::new(Parsed::Rejected(Rejection {
            line: n,
            field: e.field,
            reason: e.reason,
        }))),
    }
}

/// The parsing threads, fed chunks in order and giving them back parsed, in order.
pub(super) struct Parsers<'scope> {
    jobs: Option<SyncSender<Chunk>>,
    results: Receiver<ParsedChunk>,
    /// Parsed chunks that came back before the ones read earlier.
    early: BTreeMap<u64, ParsedChunk>,
    /// The sequence number of the next chunk to give back.
    next: u64,
    /// Chunks handed out and not yet given back.
    in_flight: usize,
    /// Emptied chunks, to be read into again.
    spare: Vec<Chunk>,
    threads: Vec<ScopedJoinHandle<'scope, ()>>,
}

impl<'scope> Parsers<'scope> {
    /// Starts one parsing thread per core in `scope`, checking timestamps against `now`.
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        now: Timestamp,
        encode: Option<usize>,
    ) -> io::Result<Self> {
        let workers = thread::available_parallelism().map_or(2, |n| n.get());
        let (jobs, queue) = mpsc::sync_channel::<Chunk>(workers);
        let queue = Arc::new(Mutex::new(queue));
        let (done, results) = mpsc::channel::<ParsedChunk>();
        let mut threads = Vec::with_capacity(workers);
        for i in 0..workers {
            let queue = Arc::clone(&queue);
            let done: Sender<ParsedChunk> = done.clone();
            threads.push(
                thread::Builder::new()
                    .name(format!("ingest-parse-{i}"))
                    .spawn_scoped(scope, move || work(&queue, &done, now, encode))?,
            );
        }
        Ok(Self {
            jobs: Some(jobs),
            results,
            early: BTreeMap::new(),
            next: 0,
            in_flight: 0,
            spare: Vec::new(),
            threads,
        })
    }

    /// Chunks in flight before [`Self::submit`] should wait for results: two per thread, so
    /// every thread has the next chunk queued while the reader handles one.
    pub(super) fn capacity(&self) -> usize {
        2 * self.threads.len() + 1
    }

    /// Chunks handed out and not yet given back.
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// An empty chunk to read into (a returned one when there is one).
    pub(super) fn empty_chunk(&mut self) -> Chunk {
        self.spare.pop().unwrap_or_default()
    }

    /// Gives a chunk back to be read into again, with the emptied vector of its parsed
    /// lines and its encoded records (whose memory the next chunk parsed into it reuses).
    pub(super) fn recycle(&mut self, mut chunk: Chunk, mut lines: Vec<Line>, hosts: EncodedHosts) {
        lines.clear();
        chunk.spare_lines = lines;
        chunk.spare_hosts = hosts;
        self.spare.push(chunk);
    }

    /// Forgets the order of the input read so far: the next input's chunks start at 0.
    /// Only when nothing is in flight.
    pub(super) fn next_input(&mut self) {
        debug_assert_eq!(self.in_flight, 0, "chunks of the last input are in flight");
        self.next = 0;
    }

    /// Hands a chunk to the threads.
    pub(super) fn submit(&mut self, chunk: Chunk) {
        let jobs = self.jobs.as_ref().expect("submit before finish");
        // The threads only stop when `jobs` is dropped, or by panicking (then `next` says so).
        let _ = jobs.send(chunk);
        self.in_flight += 1;
    }

    /// The next chunk in input order, parsed (waiting for it); `None` when none is in flight.
    pub(super) fn next(&mut self) -> Option<ParsedChunk> {
        if self.in_flight == 0 {
            return None;
        }
        loop {
            if let Some(parsed) = self.early.remove(&self.next) {
                self.next += 1;
                self.in_flight -= 1;
                return Some(parsed);
            }
            // The threads only end once the queue is closed (in `drop`): one that ended before
            // panicked, and the chunk it held will never come back.
            match self.results.recv_timeout(Duration::from_millis(500)) {
                Ok(parsed) => {
                    self.early.insert(parsed.chunk.seq, parsed);
                }
                Err(RecvTimeoutError::Timeout) => {
                    if self.threads.iter().any(|t| t.is_finished()) {
                        panic!("a parsing thread stopped (it panicked)");
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the parsing threads stopped (they panicked)")
                }
            }
        }
    }
}

impl Drop for Parsers<'_> {
    fn drop(&mut self) {
        // Closing the queue ends the threads once they finish their chunk; the scope joins
        // them.
        self.jobs = None;
    }
}

/// One parsing thread: parses chunks until the queue closes; with `encode`, service
/// observations are encoded in groups of at most that many.
fn work(
    queue: &Mutex<Receiver<Chunk>>,
    done: &Sender<ParsedChunk>,
    now: Timestamp,
    encode: Option<usize>,
) {
    let mut reader = ObservationReader::new(now);
    let mut encoder = encode.map(HostEncoder::new);
    loop {
        // The lock is held only while waiting for the next chunk, not while parsing.
        let next = queue.lock().map(|q| q.recv());
        let Ok(Ok(mut chunk)) = next else { return };
        let mut lines = std::mem::take(&mut chunk.spare_lines);
        let mut hosts = std::mem::take(&mut chunk.spare_hosts);
        lines.clear();
        hosts.clear();
        lines.reserve(chunk.len());
        parse(
            &chunk,
            &mut reader,
            encoder.as_mut(),
            &mut lines,
            &mut hosts,
        );
        if done
            .send(ParsedChunk {
                chunk,
                lines,
                hosts,
            })
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::{ObservationLines, Parsed};

    /// What the sequential reader says of each line of `input`.
    fn sequential(input: &[u8], now: Timestamp) -> Vec<String> {
        let mut lines = ObservationLines::new(input, now);
        let mut out = Vec::new();
        while let Some(parsed) = lines.next_line().expect("in-memory input") {
            let n = lines.number();
            out.push(match parsed {
                Parsed::Blank => format!("{n} blank"),
                Parsed::Observation(obs) => {
                    format!("{n} {obs:?} {}", String::from_utf8_lossy(lines.content()))
                }
                Parsed::Rejected(r) => format!("{} {}: {}", r.line, r.field, r.reason),
            });
        }
        out
    }

    /// The same through the parsing threads.
    fn parallel(input: &[u8], now: Timestamp) -> Vec<String> {
        let mut out = Vec::new();
        thread::scope(|scope| {
            let mut parsers = Parsers::start(scope, now, None).expect("threads");
            let mut chunks = Chunks::new(input);
            let mut eof = false;
            loop {
                while !eof && parsers.in_flight() < parsers.capacity() {
                    let empty = parsers.empty_chunk();
                    match chunks.next_chunk(empty).expect("in-memory input") {
                        Some(chunk) => parsers.submit(chunk),
                        None => eof = true,
                    }
                }
                let Some(ParsedChunk {
                    chunk,
                    mut lines,
                    hosts,
                }) = parsers.next()
                else {
                    break;
                };
                for (i, line) in lines.drain(..).enumerate() {
                    let n = chunk.number(i);
                    let Line::Parsed(parsed) = line else {
                        panic!("encoded without being asked to");
                    };
                    out.push(match *parsed {
                        Parsed::Blank => format!("{n} blank"),
                        Parsed::Observation(obs) => {
                            format!("{n} {obs:?} {}", String::from_utf8_lossy(chunk.content(i)))
                        }
                        Parsed::Rejected(r) => format!("{} {}: {}", r.line, r.field, r.reason),
                    });
                }
                parsers.recycle(chunk, lines, hosts);
            }
        });
        out
    }

    #[test]
    fn reads_exactly_as_the_sequential_reader() {
        let now = Timestamp::parse("2026-11-21T00:00:00Z").expect("timestamp");
        let domain = |i: usize| {
            format!(
                r#"{{"kind":"domain","name":"a{i}.example","addresses":["240.0.0.1"],"observed_at":"2026-11-20T00:00:00Z"}}"#
            )
        };
        let mut input = Vec::new();
        // Enough lines for several chunks, with every kind of line among them.
        for i in 0..30_000 {
            match i % 1000 {
                7 => input.extend_from_slice(b" \t\r\n"),
                11 => input.extend_from_slice(b"{\"kind\":\"domain\"}\n"),
                13 => input.extend_from_slice(b"\xff\xfe\n"),
                17 => {
                    input.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES + 1));
                    input.push(b'\n');
                }
                19 => {
                    input.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES - 1));
                    input.extend_from_slice(b"x\r\n");
                }
                _ => {
                    input.extend_from_slice(domain(i).as_bytes());
                    input.extend_from_slice(if i % 2 == 0 { b"\n" } else { b"\r\n" });
                }
            }
        }
        // A last line without its line end.
        input.extend_from_slice(domain(0).as_bytes());
        let expected = sequential(&input, now);
        assert_eq!(expected.len(), 30_001);
        assert!(expected.iter().any(|l| l.ends_with("longer than 1 MiB")));
        assert!(expected.iter().any(|l| l.contains("not UTF-8")));
        assert!(expected.iter().any(|l| l.ends_with(" blank")));
        assert_eq!(parallel(&input, now), expected);
        assert!(parallel(b"", now).is_empty());
    }
}
