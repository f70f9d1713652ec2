//! The workspace's one random-token module: randomness from the operating system, the tokens
//! made of it and the digests secrets are stored as — session ids (both services), link
//! tokens, authorization codes, access tokens, form tokens, API key secrets, search cursor
//! tokens and row ids.
//!
//! Row ids are generated here rather than by a database (no `SERIAL`, no `AUTOINCREMENT`), so
//! one migration set runs unchanged on SQLite and PostgreSQL: a 63-bit random id collides with
//! negligible probability, and a collision surfaces as a unique-constraint error, never as a
//! silent overwrite.
//!
//! A secret handed to a browser or a client is 32 random bytes in base64url (43 characters);
//! the database keeps only its SHA-256 digest, so a copy of the tables grants nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

/// The operating system gave no randomness.
#[derive(Debug)]
pub struct RandomError(getrandom::Error);

impl std::fmt::Display for RandomError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the operating system's random generator failed: {}",
            self.0
        )
    }
}

impl std::error::Error for RandomError {}

/// Fills `buf` from the operating system's generator.
pub fn fill(buf: &mut [u8]) -> Result<(), RandomError> {
    getrandom::getrandom(buf).map_err(RandomError)
}

/// A positive random 63-bit id.
pub fn id() -> Result<i64, RandomError> {
    let mut b = [0u8; 8];
    fill(&mut b)?;
    Ok((u64::from_le_bytes(b) >> 1) as i64)
}

/// A fresh secret: 32 random bytes as 43 base64url characters.
pub fn secret() -> Result<String, RandomError> {
    let mut b = [0u8; 32];
    fill(&mut b)?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

/// A fresh `sub` claim: 16 random bytes as 22 base64url characters.
pub fn subject() -> Result<String, RandomError> {
    let mut b = [0u8; 16];
    fill(&mut b)?;
    Ok(URL_SAFE_NO_PAD.encode(b))
}

/// The SHA-256 digest of `secret` in lower-case hex: what the tables store.
pub fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// Bytes from lower-case or upper-case hex, or `None`.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// `n` uniformly random base62 characters (rejection sampling, so no character is favoured).
pub fn base62(n: usize) -> Result<String, RandomError> {
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
pub fn is_base62(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

/// `value` as exactly `width` base62 digits, most significant first.
pub fn base62_fixed(mut value: u64, width: usize) -> String {
    let mut digits = vec![b'0'; width];
    for d in digits.iter_mut().rev() {
        *d = BASE62[(value % 62) as usize];
        value /= 62;
    }
    digits.into_iter().map(char::from).collect()
}

/// Base64url without padding of `bytes`.
pub fn base64url(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether `c` is a base64url character.
pub fn is_base64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

/// Whether `text` could be a secret of [`secret`] (43 base64url characters), so malformed
/// input is refused before any lookup.
pub fn is_secret_shaped(text: &str) -> bool {
    text.len() == 43 && text.bytes().all(is_base64url)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secrets_are_43_base64url_characters_and_differ() {
        let a = secret().unwrap();
        let b = secret().unwrap();
        assert!(is_secret_shaped(&a), "{a}");
        assert_ne!(a, b);
        assert_eq!(digest(&a).len(), 64);
        assert_ne!(digest(&a), digest(&b));
        assert_eq!(subject().unwrap().len(), 22);
        assert!(id().unwrap() >= 0);
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

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_round_trips() {
        let bytes = [0u8, 1, 127, 128, 255];
        assert_eq!(unhex(&hex(&bytes)).unwrap(), bytes);
        assert!(unhex("abc").is_none());
        assert!(unhex("zz").is_none());
    }
}
