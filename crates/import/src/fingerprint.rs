//! Fingerprints computed from what scanners give: the SHA-256 of a certificate from its PEM
//! or base64 DER (Nmap's `ssl-cert` gives the PEM but only MD5 and SHA-1 digests; Masscan's
//! `X509` banner is the base64 DER), and OpenSSH's `SHA256:` host-key fingerprint from the
//! base64 key blob (`ssh-keygen -l` prints the same).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use sha2::{Digest, Sha256};

/// The SHA-256 of the first certificate of `pem`, as 64 lowercase hex digits.
pub fn certificate_sha256_from_pem(pem: &str) -> Option<String> {
    let body = pem
        .split("-----BEGIN CERTIFICATE-----")
        .nth(1)?
        .split("-----END CERTIFICATE-----")
        .next()?;
    certificate_sha256_from_base64(body)
}

/// The SHA-256 of a base64 DER certificate (whitespace ignored), as lowercase hex.
pub fn certificate_sha256_from_base64(der_base64: &str) -> Option<String> {
    let compact: String = der_base64.chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD.decode(compact).ok()?;
    if der.is_empty() {
        return None;
    }
    Some(hex(&Sha256::digest(&der)))
}

/// OpenSSH's fingerprint of a base64 public-key blob: `SHA256:` and the unpadded base64 of
/// its SHA-256.
pub fn ssh_key_sha256(key_base64: &str) -> Option<String> {
    let compact: String = key_base64.chars().filter(|c| !c.is_whitespace()).collect();
    let blob = STANDARD.decode(compact).ok()?;
    if blob.is_empty() {
        return None;
    }
    Some(format!(
        "SHA256:{}",
        STANDARD_NO_PAD.encode(Sha256::digest(&blob))
    ))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_fingerprint_of_a_known_key() {
        // The blob of "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
        // (RFC 8709's test key); ssh-keygen -l prints this fingerprint for it.
        let key = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
        assert_eq!(
            ssh_key_sha256(key).as_deref(),
            Some("SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU")
        );
        assert_eq!(ssh_key_sha256("***"), None);
    }

    #[test]
    fn certificate_digest_is_over_the_der() {
        // base64 of the bytes "abc": SHA-256("abc") is the FIPS 180-2 example.
        assert_eq!(
            certificate_sha256_from_pem(
                "-----BEGIN CERTIFICATE-----\nYWJj\n-----END CERTIFICATE-----\n"
            )
            .as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
    }
}
