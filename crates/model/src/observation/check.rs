//! Field-level rules shared by every block of a line, and [`Invalid`], the error they return.
//!
//! A rule checks one value and reports a reason with an empty path; the caller names the
//! member with [`At::at`], and each enclosing block prefixes its own name, so a failure deep in
//! a certificate surfaces as `tls.certificate.valid_until`. Paths are built only when a value
//! is rejected: the accepted path allocates nothing for them.

use std::borrow::Cow;
use std::net::IpAddr;

use serde_json::Number;

use super::raw::{Checked, Text};
use crate::error::InvalidValue;
use crate::{DomainName, Timestamp};

/// The bound of a string whose member states no smaller one.
pub(super) const DEFAULT_MAX_CHARS: usize = 1024;

/// How far after the reader's clock a timestamp may lie, in seconds.
pub(super) const MAX_CLOCK_SKEW_SECS: i64 = 3600;

/// A rejected value: the dotted path of the member (empty for "this value") and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Invalid {
    pub field: String,
    pub reason: String,
}

impl Invalid {
    /// A reason about the value at hand; the caller adds the path.
    pub fn here(reason: impl Into<String>) -> Self {
        Self {
            field: String::new(),
            reason: reason.into(),
        }
    }

    /// A reason about the member at `field`, relative to the block at hand.
    pub fn member(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// Prefixes the path with `parent`: a member name or an `[index]`.
    pub fn within(mut self, parent: &str) -> Self {
        self.field = match (self.field.is_empty(), self.field.starts_with('[')) {
            (true, _) => parent.to_owned(),
            (false, true) => format!("{parent}{}", self.field),
            (false, false) => format!("{parent}.{}", self.field),
        };
        self
    }

    /// Appends `name` to the path (a member of the object the path names).
    pub fn within_child(mut self, name: &str) -> Self {
        if !self.field.is_empty() {
            self.field.push('.');
        }
        self.field.push_str(name);
        self
    }
}

impl From<InvalidValue> for Invalid {
    fn from(e: InvalidValue) -> Self {
        Self::here(e.to_string())
    }
}

/// Names the member a result is about.
pub(super) trait At<T> {
    /// Prefixes the error path, if any, with `name`.
    fn at(self, name: &str) -> Result<T, Invalid>;
    /// Prefixes the error path, if any, with `[index]`.
    fn at_index(self, index: usize) -> Result<T, Invalid>;
}

impl<T, E: Into<Invalid>> At<T> for Result<T, E> {
    fn at(self, name: &str) -> Result<T, Invalid> {
        self.map_err(|e| e.into().within(name))
    }

    fn at_index(self, index: usize) -> Result<T, Invalid> {
        self.map_err(|e| e.into().within(&format!("[{index}]")))
    }
}

/// A required member: absent and `null` are both missing.
pub(super) fn required<T>(value: Option<T>) -> Result<T, Invalid> {
    value.ok_or_else(|| Invalid::here("missing: this member is required"))
}

/// A string of at most `max` characters without control characters, borrowed.
pub(super) fn text<'r>(value: &'r Text<'_>, max: usize) -> Result<&'r str, Invalid> {
    check_len(&value.0, max)?;
    if value.1 == Checked::Unknown && has_control(value.0.as_bytes()) {
        // The control characters are ASCII, so a byte scan finds them (UTF-8 continuation
        // bytes are all >= 0x80).
        let b = value
            .0
            .bytes()
            .find(|b| is_control(char::from(*b)))
            .unwrap_or(0);
        return Err(Invalid::here(format!(
            "contains the control character U+{b:04X}; control characters are not allowed here"
        )));
    }
    Ok(&value.0)
}

/// An optional [`text`].
pub(super) fn opt_text<'r>(
    value: &'r Option<Text<'_>>,
    max: usize,
) -> Result<Option<&'r str>, Invalid> {
    value.as_ref().map(|v| text(v, max)).transpose()
}

/// A string of at most `max` characters in which control characters are allowed, borrowed.
pub(super) fn raw_text<'r>(value: &'r Text<'_>, max: usize) -> Result<&'r str, Invalid> {
    check_len(&value.0, max)?;
    Ok(&value.0)
}

/// A string that names a value of some type: bounded like any string, then parsed. The
/// string is borrowed, so nothing is allocated for a value that is parsed into a `Copy` type.
pub(super) fn parsed<T>(
    value: &Text<'_>,
    parse: impl FnOnce(&str) -> Result<T, InvalidValue>,
) -> Result<T, Invalid> {
    check_len(&value.0, DEFAULT_MAX_CHARS)?;
    parse(&value.0).map_err(Invalid::from)
}

fn check_len(s: &str, max: usize) -> Result<(), Invalid> {
    // Bytes bound characters from above, so the count is needed only for long strings.
    if s.len() <= max {
        return Ok(());
    }
    let chars = s.chars().count();
    if chars <= max {
        return Ok(());
    }
    Err(Invalid::here(format!(
        "{chars} characters long; the limit is {max}"
    )))
}

/// `s` quoted for an error message, cut short when long (a member may hold up to 1 MiB).
pub(super) fn quoted(s: &str) -> String {
    const SHOWN: usize = 64;
    match s.char_indices().nth(SHOWN) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
    }
}

/// True when `bytes` hold a control character ([`is_control`]). Blocks of 16 bytes are
/// tested without stopping early, so the loop is vectorised: most text is accepted, and
/// this test is much of what accepting it costs.
fn has_control(bytes: &[u8]) -> bool {
    let control = |b: u8| b < 0x20 || b == 0x7f;
    let mut blocks = bytes.chunks_exact(16);
    for block in &mut blocks {
        if block.iter().fold(false, |found, &b| found | control(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| control(b))
}

/// U+0000–U+001F and U+007F.
pub(super) fn is_control(c: char) -> bool {
    c <= '\u{1f}' || c == '\u{7f}'
}

/// A DNS name, normalised.
pub(super) fn domain_name(value: &Text<'_>) -> Result<DomainName, Invalid> {
    parsed(value, DomainName::parse)
}

/// An address: IPv4 or IPv6, IPv4-mapped IPv6 becoming IPv4.
pub(super) fn ip(value: &Text<'_>) -> Result<IpAddr, Invalid> {
    parsed(value, crate::net::parse_ip)
}

/// A timestamp in the years 1970–9999.
pub(super) fn timestamp(value: &Text<'_>) -> Result<Timestamp, Invalid> {
    parsed(value, Timestamp::parse)
}

/// A timestamp of an observation: not more than an hour after `now`.
pub(super) fn observed_at(value: &Text<'_>, now: Timestamp) -> Result<Timestamp, Invalid> {
    let t = timestamp(value)?;
    if t.unix() > now.unix().saturating_add(MAX_CLOCK_SKEW_SECS) {
        return Err(Invalid::here(format!(
            "{t} is more than one hour after the reader's clock ({now}); check the scanner's clock"
        )));
    }
    Ok(t)
}

/// An integer within `min..=max`. A JSON number with a fraction of zero (`443.0`) counts as
/// the integer it equals, as in JSON Schema.
pub(super) fn integer(n: &Number, min: i64, max: i64) -> Result<i64, Invalid> {
    let out_of_range = || Invalid::here(format!("{n} is out of range {min}..={max}"));
    if let Some(i) = n.as_i64() {
        return Some(i)
            .filter(|i| (min..=max).contains(i))
            .ok_or_else(out_of_range);
    }
    let Some(f) = n.as_f64().filter(|_| n.is_f64()) else {
        return Err(out_of_range()); // an integer above i64::MAX
    };
    if f.fract() != 0.0 {
        return Err(Invalid::here(format!("{n} is not an integer")));
    }
    if f < min as f64 || f > max as f64 {
        return Err(out_of_range());
    }
    Ok(f as i64)
}

/// A number within `min..=max`.
pub(super) fn number_in(x: f64, min: f64, max: f64) -> Result<f64, Invalid> {
    if (min..=max).contains(&x) {
        Ok(x)
    } else {
        Err(Invalid::here(format!("{x} is out of range {min}..={max}")))
    }
}

/// Exactly `digits` hexadecimal digits, returned lowercase (borrowed when they are).
pub(super) fn hex<'r>(value: &'r Text<'_>, digits: usize) -> Result<Cow<'r, str>, Invalid> {
    let s: &'r str = &value.0;
    // Nearly every digest is given as it is kept: one pass that the compiler vectorises.
    let lowercase_hex = s.bytes().fold(true, |all, b| {
        all & (b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
    });
    if lowercase_hex && s.len() == digits {
        return Ok(Cow::Borrowed(s));
    }
    if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(Invalid::here(format!(
            "{c:?} is not a hexadecimal digit; expected {digits} hex digits"
        )));
    }
    if s.len() != digits {
        return Err(Invalid::here(format!(
            "{} hex digits; expected exactly {digits}",
            s.len()
        )));
    }
    // Hex digits of the right length that are not all lowercase (those returned above).
    Ok(Cow::Owned(s.to_ascii_lowercase()))
}

/// An array of at most `max` items.
pub(super) fn at_most<T>(items: &[T], max: usize) -> Result<(), Invalid> {
    if items.len() > max {
        return Err(Invalid::here(format!(
            "{} entries; at most {max} are allowed",
            items.len()
        )));
    }
    Ok(())
}

/// Fails at the first item equal to an earlier one, naming both.
pub(super) fn unique<T: Ord + std::fmt::Display>(items: &[T]) -> Result<(), Invalid> {
    match first_duplicate(items) {
        None => Ok(()),
        Some((first, dup)) => Err(Invalid::here(format!(
            "{} is a duplicate of [{first}]; entries must be unique",
            items[dup]
        )))
        .at_index(dup),
    }
}

/// The lowest index `dup` whose item equals an earlier one, with the first index of that item.
fn first_duplicate<T: Ord>(items: &[T]) -> Option<(usize, usize)> {
    const QUADRATIC_UP_TO: usize = 32;
    if items.len() <= QUADRATIC_UP_TO {
        return (1..items.len()).find_map(|i| {
            let first = items[..i].iter().position(|x| *x == items[i])?;
            Some((first, i))
        });
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|a, b| items[*a].cmp(&items[*b]).then(a.cmp(b)));
    let mut best: Option<(usize, usize)> = None;
    let mut group_start = 0;
    for k in 1..order.len() {
        if items[order[k]] != items[order[group_start]] {
            group_start = k;
        } else if k == group_start + 1 && best.is_none_or(|(_, d)| order[k] < d) {
            best = Some((order[group_start], order[k]));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_found_anywhere() {
        for len in 0..40 {
            assert!(!has_control(&vec![b'a'; len]));
            for at in 0..len {
                for c in [0u8, b'\n', 0x1f, 0x7f] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = c;
                    assert!(has_control(&bytes), "{c:#x} at {at} of {len}");
                }
            }
        }
        assert!(!has_control("é中 ~ \u{80}\u{9f}".as_bytes()));
    }

    proptest::proptest! {
        /// `hex` answers as its definition does: the first character that is not a hex digit
        /// named, else a wrong length, else the digits lowercase, borrowed when they were.
        #[test]
        fn hex_is_its_definition(s in "[0-9a-fA-FgG é]{0,10}", digits in 0usize..10) {
            let want = if let Some(c) = s.chars().find(|c| !c.is_ascii_hexdigit()) {
                Err(format!("{c:?} is not a hexadecimal digit; expected {digits} hex digits"))
            } else if s.len() != digits {
                Err(format!("{} hex digits; expected exactly {digits}", s.len()))
            } else {
                Ok((s.to_ascii_lowercase(), !s.bytes().any(|b| b.is_ascii_uppercase())))
            };
            let text = Text(Cow::Borrowed(s.as_str()), Checked::Unknown);
            let got = hex(&text, digits)
                .map(|h| (h.to_string(), matches!(h, Cow::Borrowed(_))))
                .map_err(|e| e.reason);
            proptest::prop_assert_eq!(got, want);
        }
    }
}
