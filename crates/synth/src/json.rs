//! Hand-written JSON output: strings, integers, fixed-point numbers and addresses appended to
//! a reused byte buffer.
//!
//! The generator writes hundreds of thousands of lines a second, so it does not build values
//! and serialise them; it appends bytes. Everything here appends to a `Vec<u8>` and never
//! allocates beyond the buffer's growth. Strings are escaped per RFC 8259 (quote, backslash and
//! control characters); the scan for bytes that need escaping is a plain loop the compiler
//! vectorises, and the common case is one `memcpy`.

use std::net::Ipv6Addr;

/// Appends `s` as a JSON string, quotes included.
pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    push_str_inner(out, s);
    out.push(b'"');
}

/// Appends the escaped content of `s` without quotes.
pub(crate) fn push_str_inner(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    // No short-circuit, so the compiler can check many bytes at once.
    if !b.iter().fold(false, |acc, &c| acc | needs_escape(c)) {
        out.extend_from_slice(b);
        return;
    }
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if !needs_escape(c) {
            continue;
        }
        out.extend_from_slice(&b[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 0xf)]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
}

#[inline]
fn needs_escape(c: u8) -> bool {
    c < 0x20 || c == b'"' || c == b'\\'
}

/// True when `s` can be written between quotes as it is.
#[cfg(test)]
pub(crate) fn is_plain(s: &str) -> bool {
    !s.bytes().any(needs_escape)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends the decimal digits of `n`.
pub(crate) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends a number given in ten-thousandths as a decimal with four places (`-33.8688`).
pub(crate) fn push_fixed4(out: &mut Vec<u8>, e4: i64) {
    if e4 < 0 {
        out.push(b'-');
    }
    let a = e4.unsigned_abs();
    push_u64(out, a / 10_000);
    out.push(b'.');
    let frac = a % 10_000;
    for d in [1000, 100, 10, 1] {
        out.push(b'0' + (frac / d % 10) as u8);
    }
}

/// Appends a number given in tenths with one decimal place (`7.5`, `10.0`).
pub(crate) fn push_tenths(out: &mut Vec<u8>, tenths: u64) {
    push_u64(out, tenths / 10);
    out.push(b'.');
    out.push(b'0' + (tenths % 10) as u8);
}

/// Appends an IPv4 address in dotted decimal.
pub(crate) fn push_ipv4(out: &mut Vec<u8>, a: u32) {
    for (i, shift) in [24u32, 16, 8, 0].into_iter().enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        push_u64(out, u64::from((a >> shift) & 0xff));
    }
}

/// Appends an IPv4 address with dashes (`240-12-7-9`), as reverse-DNS labels spell it.
pub(crate) fn push_ipv4_dashed(out: &mut Vec<u8>, a: u32) {
    for (i, shift) in [24u32, 16, 8, 0].into_iter().enumerate() {
        if i > 0 {
            out.push(b'-');
        }
        push_u64(out, u64::from((a >> shift) & 0xff));
    }
}

/// Appends an IPv6 address in its RFC 5952 canonical text.
pub(crate) fn push_ipv6(out: &mut Vec<u8>, a: u128) {
    use std::io::Write;
    // Once per IPv6 host; the standard library's formatting is canonical and fast enough.
    let _ = write!(out, "{}", Ipv6Addr::from(a));
}

/// Appends `n` lowercase hexadecimal digits of `v` (most significant first).
pub(crate) fn push_hex(out: &mut Vec<u8>, v: u64, digits: u32) {
    for k in (0..digits).rev() {
        out.push(HEX[((v >> (4 * k)) & 0xf) as usize]);
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends `bytes` in standard base64 without padding.
pub(crate) fn push_base64_unpadded(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for k in 0..chars {
            out.push(B64[((n >> (18 - 6 * k)) & 0x3f) as usize]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn strings_are_escaped() {
        assert_eq!(s(|o| push_str(o, "plain")), r#""plain""#);
        assert_eq!(
            s(|o| push_str(o, "a\"b\\c\nd\u{1}é")),
            r#""a\"b\\c\nd\u0001é""#
        );
        assert!(is_plain("Île-de-France") && !is_plain("x\"y"));
    }

    #[test]
    fn numbers_and_addresses() {
        assert_eq!(s(|o| push_u64(o, 0)), "0");
        assert_eq!(s(|o| push_u64(o, u64::MAX)), u64::MAX.to_string());
        assert_eq!(s(|o| push_fixed4(o, -338_688)), "-33.8688");
        assert_eq!(s(|o| push_fixed4(o, 5)), "0.0005");
        assert_eq!(s(|o| push_fixed4(o, -5)), "-0.0005");
        assert_eq!(s(|o| push_tenths(o, 75)), "7.5");
        assert_eq!(s(|o| push_tenths(o, 100)), "10.0");
        assert_eq!(s(|o| push_ipv4(o, 0xf00c_0709)), "240.12.7.9");
        assert_eq!(s(|o| push_ipv4_dashed(o, 0xf00c_0709)), "240-12-7-9");
        assert_eq!(
            s(|o| push_ipv6(o, 0x3fff_0120_0007_0000_0000_0000_0000_0009)),
            "3fff:120:7::9"
        );
        assert_eq!(s(|o| push_hex(o, 0xab, 4)), "00ab");
    }

    #[test]
    fn base64_matches_the_standard_alphabet() {
        assert_eq!(s(|o| push_base64_unpadded(o, b"")), "");
        assert_eq!(s(|o| push_base64_unpadded(o, b"f")), "Zg");
        assert_eq!(s(|o| push_base64_unpadded(o, b"fo")), "Zm8");
        assert_eq!(s(|o| push_base64_unpadded(o, b"foo")), "Zm9v");
        assert_eq!(s(|o| push_base64_unpadded(o, b"foobar")), "Zm9vYmFy");
        assert_eq!(s(|o| push_base64_unpadded(o, &[0u8; 32])).len(), 43);
    }
}
