//! Randomness from the operating system: row ids, API key secrets and search cursor tokens.
//!
//! Ids are generated here rather than by the database (no `SERIAL`, no `AUTOINCREMENT`), so one
//! migration set runs unchanged on SQLite and PostgreSQL. A 63-bit random id collides with
//! negligible probability; a collision would surface as a unique-constraint error, never as a
//! silent overwrite.

use crate::error::{Result, StateError};

/// Fills `buf` from the operating system's generator.
pub(crate) fn fill(buf: &mut [u8]) -> Result<()> {
    getrandom::getrandom(buf).map_err(|e| StateError::Random(e.to_string()))
}

/// A positive random 63-bit id.
pub(crate) fn id() -> Result<i64> {
    let mut b = [0u8; 8];
    fill(&mut b)?;
    // Dropping the top bit keeps the value positive; 0 is as good an id as any other.
    Ok((u64::from_le_bytes(b) >> 1) as i64)
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BASE64URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `n` uniformly random base62 characters (rejection sampling, so no character is favoured).
pub(crate) fn base62(n: usize) -> Result<String> {
    let mut out = String::with_capacity(n);
    let mut buf = [0u8; 64];
    while out.len() < n {
        fill(&mut buf)?;
        for &b in &buf {
            // 248 = 4 × 62: bytes at or above it would favour the first characters.
            if b < 248 && out.len() < n {
                out.push(char::from(BASE62[usize::from(b % 62)]));
            }
        }
    }
    Ok(out)
}

/// Whether `c` is a base62 character.
pub(crate) fn is_base62(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `value` as exactly `width` base62 digits, most significant first.
pub(crate) fn base62_fixed(mut value: u64, width: usize) -> String {
    let mut digits = vec![b'0'; width];
    for d in digits.iter_mut().rev() {
        *d = BASE62[(value % 62) as usize];
        value /= 62;
    }
    digits.into_iter().map(char::from).collect()
}

/// Base64url without padding of `bytes` (whose length is a multiple of 3).
pub(crate) fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() / 3 * 4);
    for chunk in bytes.chunks(3) {
        let mut n = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            n |= u32::from(b) << (16 - 8 * i);
        }
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(char::from(BASE64URL[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

/// Whether `c` is a base64url character.
pub(crate) fn is_base64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// CRC-32 (IEEE 802.3, the zlib one) of `data`; bitwise, since it only checks short keys.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn base64url_matches_rfc4648() {
        assert_eq!(base64url(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64url(&[0xfb, 0xff, 0xbf]), "-_-_");
        assert_eq!(base64url(&[0u8; 24]).len(), 32);
    }

    #[test]
    fn base62_has_the_asked_length_and_alphabet() {
        let s = base62(100).unwrap();
        assert_eq!(s.len(), 100);
        assert!(s.bytes().all(is_base62));
        assert_ne!(base62(32).unwrap(), base62(32).unwrap());
        assert_eq!(base62_fixed(0, 6), "000000");
        assert_eq!(base62_fixed(61, 2), "0z");
        assert_eq!(base62_fixed(u64::from(u32::MAX), 6), "4gfFC3");
    }

    #[test]
    fn ids_are_positive_and_vary() {
        let a = id().unwrap();
        assert!(a >= 0);
        assert_ne!(a, id().unwrap());
    }
}
