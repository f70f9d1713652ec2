//! Line bookkeeping shared by the importers: [`Counted`] counts the line ends an XML parser
//! has consumed (so a record's position is a line number), and [`JsonLines`] reads one JSON
//! object per line with the observation format's bound on line length.

use std::io::{self, BufRead, Read};

use periscope_model::observation::MAX_LINE_BYTES;

/// A [`BufRead`] that counts the `\n` bytes consumed through it.
#[derive(Debug)]
pub struct Counted<R> {
    inner: R,
    newlines: u64,
}

impl<R: BufRead> Counted<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self { inner, newlines: 0 }
    }

    /// The 1-based line of the next byte to be consumed.
    pub fn line(&self) -> u64 {
        self.newlines + 1
    }
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = {
            let available = self.inner.fill_buf()?;
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        if let Ok(buf) = self.inner.fill_buf() {
            let amt = amt.min(buf.len());
            self.newlines += buf[..amt].iter().filter(|&&b| b == b'\n').count() as u64;
        }
        self.inner.consume(amt);
    }
}

/// One line of a JSON Lines input.
#[derive(Debug)]
pub enum JsonLine {
    /// Only whitespace (or, in `masscan -oJ`, only the array's punctuation).
    Blank,
    /// The line's text, without its line end.
    Text(String),
    /// A line that cannot be read as text: too long, or not UTF-8.
    Bad(String),
}

/// Reads an input line by line with bounded memory, counting lines.
#[derive(Debug)]
pub struct JsonLines<R> {
    input: R,
    buf: Vec<u8>,
    line: u64,
}

impl<R: BufRead> JsonLines<R> {
    /// Reads `input`.
    pub fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::with_capacity(64 * 1024),
            line: 0,
        }
    }

    /// The 1-based number of the line read last.
    pub fn number(&self) -> u64 {
        self.line
    }

    /// The next line, or `None` at the end of the input.
    pub fn next_line(&mut self) -> io::Result<Option<JsonLine>> {
        self.buf.clear();
        let read = self
            .input
            .by_ref()
            .take(MAX_LINE_BYTES as u64 + 3)
            .read_until(b'\n', &mut self.buf)?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buf.last() != Some(&b'\n') && self.buf.len() > MAX_LINE_BYTES + 2 {
            self.input.skip_until(b'\n')?;
            return Ok(Some(JsonLine::Bad("longer than 1 MiB".to_owned())));
        }
        let mut content = self.buf.as_slice();
        content = content.strip_suffix(b"\n").unwrap_or(content);
        content = content.strip_suffix(b"\r").unwrap_or(content);
        match std::str::from_utf8(content) {
            Ok(text) if text.trim().is_empty() => Ok(Some(JsonLine::Blank)),
            Ok(text) => Ok(Some(JsonLine::Text(text.to_owned()))),
            Err(e) => Ok(Some(JsonLine::Bad(format!(
                "not UTF-8 (invalid byte at column {})",
                e.valid_up_to() + 1
            )))),
        }
    }
}

/// Parses one JSON object as a value, naming the position of a syntax error.
pub(crate) fn value(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(e) if e.is_eof() => Err(format!("the record is cut short (truncated?): {e}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// Parses one JSON object, naming the position of a syntax error.
pub(crate) fn object(text: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(map)) => Ok(map),
        Ok(_) => Err("not a JSON object".to_owned()),
        Err(e) if e.is_eof() => Err(format!("the record is cut short (truncated?): {e}")),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}
