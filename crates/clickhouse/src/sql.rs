//! The only ways a value enters a statement: string literals escaped byte by byte
//! ([`string`]), addresses as 16-byte host-order keys written in hex ([`key`]), integers
//! formatted by Rust, and identifiers checked against `[a-z_][a-z0-9_]*` ([`identifier`]).
//! TabSeparated fields for inserts are escaped the same strict way ([`tsv_field`]), and
//! TabSeparated answers are unescaped by [`tsv_unescape`].
//!
//! No statement is ever built by pasting user text: every value has passed a model type's
//! constructor (port, protocol token, CVE, CPE, country, domain name…) before it reaches
//! here, and is escaped anyway.

use std::fmt::Write as _;

/// A ClickHouse string literal holding `s` exactly: quotes and backslashes escaped, every
/// byte outside printable ASCII written as `\xNN`.
pub fn string(s: &str) -> String {
    bytes_literal(s.as_bytes())
}

/// A ClickHouse string literal holding `bytes` exactly.
pub fn bytes_literal(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('\'');
    for &b in bytes {
        match b {
            b'\'' => out.push_str("\\'"),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('\'');
    out
}

/// The 16-byte big-endian host-order key of an address, as a `FixedString(16)` expression.
pub fn key(k: u128) -> String {
    format!("toFixedString(unhex('{k:032x}'), 16)")
}

/// An identifier (database, cluster) when it is `[a-z_][a-z0-9_]*`, at most 64 bytes.
pub fn identifier(name: &str) -> Option<&str> {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b == b'_');
    let rest_ok = bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    (first_ok && rest_ok && name.len() <= 64).then_some(name)
}

/// One TabSeparated input field holding `bytes` exactly: tab, newline and backslash escaped,
/// every other byte outside printable ASCII as `\xNN`.
pub fn tsv_field(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
}

/// A TabSeparated array of strings (`['a','b']`), each element a quoted literal.
pub fn tsv_array<'a>(out: &mut String, items: impl IntoIterator<Item = &'a [u8]>) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // An array field is read in its quoted form; the literal holds no tab, newline or
        // raw backslash, so it needs no TabSeparated escaping on top.
        out.push_str(&bytes_literal(item));
    }
    out.push(']');
}

/// The bytes of one TabSeparated output field (ClickHouse escapes `\b \f \r \n \t \0 \' \\`).
pub fn tsv_unescape(field: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(field.len());
    let mut bytes = field.bytes();
    while let Some(b) = bytes.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let escaped = match bytes.next() {
            Some(b'b') => 0x08,
            Some(b'f') => 0x0c,
            Some(b'r') => b'\r',
            Some(b'n') => b'\n',
            Some(b't') => b'\t',
            Some(b'0') => 0,
            Some(b'\'') => b'\'',
            Some(b'\\') => b'\\',
            other => {
                return Err(format!(
                    "unknown TabSeparated escape {other:?} in {field:?}"
                ));
            }
        };
        out.push(escaped);
    }
    Ok(out)
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// The bytes of a hex string (either case).
pub fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd-length hex {text:?}"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("invalid hex {text:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_escape_everything_that_could_end_them() {
        assert_eq!(string("a'b"), r"'a\'b'");
        assert_eq!(string(r"a\'; DROP"), r"'a\\\'; DROP'");
        assert_eq!(string("x\ny\u{e9}"), r"'x\x0ay\xc3\xa9'");
        assert_eq!(
            key(1),
            "toFixedString(unhex('00000000000000000000000000000001'), 16)"
        );
    }

    #[test]
    fn identifiers_are_checked() {
        assert_eq!(identifier("periscope_1"), Some("periscope_1"));
        for bad in ["", "1a", "a-b", "A", "a b", "a;b", "a`b"] {
            assert_eq!(identifier(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 0x7f, 0x80, 0xff];
        assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes);
        assert!(unhex("abc").is_err());
        assert!(unhex("zz").is_err());
    }

    #[test]
    fn tsv_unescapes_what_clickhouse_writes() {
        assert_eq!(tsv_unescape(r"a\tb\\c\'\n").unwrap(), b"a\tb\\c'\n");
        assert!(tsv_unescape(r"\q").is_err());
    }
}
