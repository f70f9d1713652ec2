//! The only ways a value enters a statement: string literals escaped byte by byte
//! ([`string`]), addresses as 16-byte host-order keys written in hex ([`key`]), integers
//! formatted by Rust, and identifiers checked against `[a-z_][a-z0-9_]*` ([`identifier`]).
//! TabSeparated fields for inserts are escaped the same strict way ([`tsv_field`]), and
//! TabSeparated answers are unescaped by [`tsv_unescape`].
//!
//! No statement is ever built by pasting user text: every value has passed a model type's
//! constructor (port, protocol token, CVE, CPE, country, domain name…) before it reaches
//! here, and is escaped anyway.

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
            _ => push_escaped(&mut out, b),
        }
    }
    out.push('\'');
    out
}

/// The 16-byte big-endian host-order key of an address, as a plain string literal of its
/// 16 bytes (compared with a `FixedString(16)` column, or listed in an `IN` set, it is
/// converted to the column's type). A constant, not an expression: ClickHouse 18.16 was
/// slow to analyse an `IN` list of 100 `toFixedString(unhex(…), 16)` expressions.
pub fn key(k: u128) -> String {
    bytes_literal(&k.to_be_bytes())
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
            _ => push_escaped(out, b),
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

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    hex_into(&mut out, bytes);
    out
}

/// Appends the lowercase hex of `bytes` to `out` (a table lookup per nibble: `write!` per
/// byte was most of the time of building an insert's rows).
pub fn hex_into(out: &mut String, bytes: &[u8]) {
    out.reserve(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
}

/// Appends `\xNN` (the escape of one byte in a literal or a TabSeparated field) to `out`.
fn push_escaped(out: &mut String, b: u8) {
    out.push_str("\\x");
    out.push(char::from(DIGITS[usize::from(b >> 4)]));
    out.push(char::from(DIGITS[usize::from(b & 0xf)]));
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
            key(0xf0000001),
            r"'\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0\x00\x00\x01'"
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
