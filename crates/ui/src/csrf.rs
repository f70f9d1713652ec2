//! CSRF protection for state-changing forms. Two flavours, one module:
//! - the sign-in service's signed double-submit token ([`CsrfKey`]): the browser holds a random
//!   value in a cookie; each form carries HMAC-SHA256(key, value), which only the service can
//!   compute, and a POST is accepted only when the two agree;
//! - the application's per-session token, compared with [`same`] in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key the tokens are signed with (32 bytes, shared by every instance).
#[derive(Clone)]
pub struct CsrfKey([u8; 32]);

impl std::fmt::Debug for CsrfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfKey(..)")
    }
}

impl CsrfKey {
    /// The key of these 32 bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    fn mac(&self, cookie_value: &str) -> Hmac<Sha256> {
        #[allow(clippy::expect_used)] // HMAC takes keys of any length.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC accepts any key");
        mac.update(b"periscope-signin csrf\0");
        mac.update(cookie_value.as_bytes());
        mac
    }

    /// The form token for the browser holding `cookie_value`.
    pub fn token(&self, cookie_value: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(cookie_value).finalize().into_bytes())
    }

    /// Whether `token` is the form token for `cookie_value` (compared in constant time).
    pub fn verify(&self, cookie_value: &str, token: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(token) {
            Ok(bytes) => self.mac(cookie_value).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }
}

/// Whether two tokens are equal, in time independent of where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_bind_to_the_cookie_and_the_key() {
        let key = CsrfKey::new([7; 32]);
        let token = key.token("browser-a");
        assert!(key.verify("browser-a", &token));
        assert!(!key.verify("browser-b", &token));
        assert!(!CsrfKey::new([8; 32]).verify("browser-a", &token));
        assert!(!key.verify("browser-a", ""));
        assert!(!key.verify("browser-a", "not base64!"));
    }

    #[test]
    fn same_compares_whole_tokens() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        assert!(same("", ""));
    }
}
