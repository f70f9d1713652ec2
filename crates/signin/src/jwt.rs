//! ID tokens: the RS256 signing key (generated once, kept as PKCS#8 PEM in `signin_keys`), its
//! JSON Web Key Set, signing compact JWTs, and verifying our own tokens when they come back as
//! `id_token_hint`.
//!
//! RS256 is what every relying party verifies by default. Signatures use the `rsa` crate with
//! blinding (a fresh random factor per signature), which is its mitigation for timing side
//! channels (RUSTSEC-2023-0071).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
use rsa::rand_core::OsRng;
use rsa::signature::{RandomizedSigner, SignatureEncoding, Verifier};
use rsa::traits::PublicKeyParts;
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Bits of a generated key.
const KEY_BITS: usize = 2048;

/// The ID token signing key and what is published about it.
pub(crate) struct Keys {
    signing: SigningKey<Sha256>,
    verifying: VerifyingKey<Sha256>,
    kid: String,
    jwk: Value,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// A new RSA key as PKCS#8 PEM.
pub(crate) fn generate_pem() -> Result<String, String> {
    let key = RsaPrivateKey::new(&mut OsRng, KEY_BITS)
        .map_err(|e| format!("cannot generate an RSA key: {e}"))?;
    key.to_pkcs8_pem(LineEnding::LF)
        .map(|pem| pem.to_string())
        .map_err(|e| format!("cannot encode the RSA key: {e}"))
}

impl Keys {
    /// Loads a PKCS#8 PEM RSA private key of at least 2048 bits.
    pub(crate) fn from_pem(pem: &str) -> Result<Self, String> {
        let private = RsaPrivateKey::from_pkcs8_pem(pem)
            .map_err(|e| format!("not a PKCS#8 PEM RSA private key: {e}"))?;
        if private.size() * 8 < KEY_BITS {
            return Err(format!(
                "the RSA key has {} bits; at least {KEY_BITS} are required",
                private.size() * 8
            ));
        }
        let public = RsaPublicKey::from(&private);
        let n = URL_SAFE_NO_PAD.encode(public.n().to_bytes_be());
        let e = URL_SAFE_NO_PAD.encode(public.e().to_bytes_be());
        // The key id is derived from the public key (RFC 7638 thumbprint), so every instance
        // and restart publishes the same one.
        let thumbprint = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
        let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(thumbprint.as_bytes()));
        let jwk = json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": n, "e": e});
        Ok(Self {
            signing: SigningKey::<Sha256>::new(private),
            verifying: VerifyingKey::<Sha256>::new(public),
            kid,
            jwk,
        })
    }

    /// The JSON Web Key Set document.
    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }

    /// `claims` as a signed compact JWT (RS256).
    pub(crate) fn sign(&self, claims: &Value) -> String {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": self.kid});
        let mut token = URL_SAFE_NO_PAD.encode(header.to_string());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = self.signing.sign_with_rng(&mut OsRng, token.as_bytes());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature.to_bytes()));
        token
    }

    /// The claims of a compact JWT this key signed (RS256, our `kid`), or why not. Expiry is
    /// not checked: an expired ID token is still a valid logout hint.
    pub(crate) fn verify(&self, token: &str) -> Result<Value, &'static str> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a compact JWT");
        };
        let header: Value = URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("unreadable header")?;
        if header["alg"] != "RS256" || header["kid"] != self.kid.as_str() {
            return Err("not signed with this provider's key");
        }
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .ok()
            .and_then(|b| Signature::try_from(b.as_slice()).ok())
            .ok_or("unreadable signature")?;
        let signed = &token[..header_len(token)];
        self.verifying
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| "bad signature")?;
        URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("unreadable claims")
    }
}

/// The length of `header.payload` in a compact JWT.
fn header_len(token: &str) -> usize {
    token.rfind('.').unwrap_or(token.len())
}

/// The `at_hash` claim for an access token: the left half of its SHA-256, base64url.
pub(crate) fn at_hash(access_token: &str) -> String {
    let digest = Sha256::digest(access_token.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..16])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn sign_then_verify_and_refuse_tampering() {
        let keys = Keys::from_pem(&generate_pem().unwrap()).unwrap();
        let token = keys.sign(&json!({"sub": "abc", "n": 1}));
        assert_eq!(keys.verify(&token).unwrap()["sub"], "abc");
        // Another payload under the same signature.
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(json!({"sub": "mallory", "n": 1}).to_string());
        parts[1] = &forged;
        assert_eq!(keys.verify(&parts.join(".")), Err("bad signature"));
        // Another key.
        let other = Keys::from_pem(&generate_pem().unwrap()).unwrap();
        assert!(other.verify(&token).is_err());
        assert_eq!(keys.verify("a.b"), Err("not a compact JWT"));
        let jwks = keys.jwks();
        assert_eq!(jwks["keys"][0]["kid"], keys.kid.as_str());
        assert_eq!(jwks["keys"][0]["e"], "AQAB");
    }
}
