//! CSRF protection for every state-changing form: a signed double-submit token. The browser
//! holds a random value in the `periscope_signin_csrf` cookie (HttpOnly, SameSite=Lax); each
//! form carries HMAC-SHA256(key, value), which only this service can compute. A POST is
//! accepted only when the two agree.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The cookie holding the browser's CSRF value.
pub(crate) const COOKIE: &str = "periscope_signin_csrf";

/// The key the tokens are signed with (32 bytes, shared by every instance).
#[derive(Clone)]
pub(crate) struct CsrfKey([u8; 32]);

impl std::fmt::Debug for CsrfKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsrfKey(..)")
    }
}

impl CsrfKey {
    pub(crate) fn new(bytes: [u8; 32]) -> Self {
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
    pub(crate) fn token(&self, cookie_value: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(cookie_value).finalize().into_bytes())
    }

    /// Whether `token` is the form token for `cookie_value` (compared in constant time).
    pub(crate) fn verify(&self, cookie_value: &str, token: &str) -> bool {
        match URL_SAFE_NO_PAD.decode(token) {
            Ok(bytes) => self.mac(cookie_value).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }
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
}
