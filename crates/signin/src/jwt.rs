//! ID tokens: the RS256 signing key (generated once, kept as PKCS#8 PEM in `signin_keys`), its
//! JSON Web Key Set, signing compact JWTs, and verifying our own tokens when they come back as
//! `id_token_hint`.
//!
//! RS256 is what every relying party verifies by default. Key generation, signing and
//! verification go through `aws-lc-rs` (AWS-LC, whose RSA private-key operations are
//! constant-time), not the `rsa` crate, whose are not (RUSTSEC-2023-0071, the Marvin attack, on
//! a path an attacker can time). Keys stored by earlier versions load unchanged (the same
//! PKCS#8 PEM), publish the same JWKS (`kid` is the RFC 7638 thumbprint), and, PKCS#1 v1.5
//! being deterministic, sign every token with the very same bytes as before.

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeySize, PublicKeyComponents};
use aws_lc_rs::signature::{
    KeyPair as _, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256, RsaKeyPair, UnparsedPublicKey,
};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Bits of a generated key.
const KEY_BITS: usize = 2048;

/// The ID token signing key and what is published about it.
pub(crate) struct Keys {
    pair: RsaKeyPair,
    rng: SystemRandom,
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

/// A new 2048-bit RSA key as PKCS#8 PEM.
pub(crate) fn generate_pem() -> Result<String, String> {
    let key = RsaKeyPair::generate(KeySize::Rsa2048)
        .map_err(|e| format!("cannot generate an RSA key: {e}"))?;
    let der = key
        .as_der()
        .map_err(|e| format!("cannot encode the RSA key: {e}"))?;
    let base64 = STANDARD.encode(der.as_ref());
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in base64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    Ok(pem)
}

/// The DER inside a `-----BEGIN PRIVATE KEY-----` PEM block (PKCS#8).
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, String> {
    let text = pem.trim();
    if text.starts_with("-----BEGIN RSA PRIVATE KEY-----") {
        return Err(
            "this is a PKCS#1 PEM (BEGIN RSA PRIVATE KEY); convert it to PKCS#8 with \
                    `openssl pkcs8 -topk8 -nocrypt -in key.pem`"
                .to_owned(),
        );
    }
    let body = text
        .strip_prefix("-----BEGIN PRIVATE KEY-----")
        .and_then(|rest| rest.strip_suffix("-----END PRIVATE KEY-----"))
        .ok_or("not a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----)")?;
    let base64: String = body.split_whitespace().collect();
    STANDARD
        .decode(base64)
        .map_err(|e| format!("the PEM body is not base64: {e}"))
}

impl Keys {
    /// Loads a PKCS#8 PEM RSA private key of at least 2048 bits (and at most 8192).
    pub(crate) fn from_pem(pem: &str) -> Result<Self, String> {
        let der = pkcs8_der(pem)?;
        let pair = RsaKeyPair::from_pkcs8(&der)
            .map_err(|e| format!("not a usable PKCS#8 RSA private key: {e}"))?;
        let bits = pair.public_modulus_len() * 8;
        if bits < KEY_BITS {
            return Err(format!(
                "the RSA key has {bits} bits; at least {KEY_BITS} are required"
            ));
        }
        let public = PublicKeyComponents::<Vec<u8>>::from(pair.public_key());
        let n = URL_SAFE_NO_PAD.encode(unpadded(&public.n));
        let e = URL_SAFE_NO_PAD.encode(unpadded(&public.e));
        // The key id is derived from the public key (RFC 7638 thumbprint), so every instance
        // and restart publishes the same one.
        let thumbprint = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
        let kid = URL_SAFE_NO_PAD.encode(Sha256::digest(thumbprint.as_bytes()));
        let jwk = json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": n, "e": e});
        Ok(Self {
            pair,
            rng: SystemRandom::new(),
            kid,
            jwk,
        })
    }

    /// The JSON Web Key Set document.
    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": [self.jwk] })
    }

    /// `claims` as a signed compact JWT (RS256), or why it could not be signed (AWS-LC reports
    /// an internal failure only).
    pub(crate) fn sign(&self, claims: &Value) -> Result<String, String> {
        let header = json!({"alg": "RS256", "typ": "JWT", "kid": self.kid});
        let mut token = URL_SAFE_NO_PAD.encode(header.to_string());
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
        let mut signature = vec![0u8; self.pair.public_modulus_len()];
        self.pair
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                token.as_bytes(),
                &mut signature,
            )
            .map_err(|e| format!("cannot sign the ID token: {e}"))?;
        token.push('.');
        token.push_str(&URL_SAFE_NO_PAD.encode(signature));
        Ok(token)
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
            .map_err(|_| "unreadable signature")?;
        let signed = &token[..header_len(token)];
        UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, self.pair.public_key().as_ref())
            .verify(signed.as_bytes(), &signature)
            .map_err(|_| "bad signature")?;
        URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("unreadable claims")
    }
}

/// A big-endian integer without leading zero bytes (JWK `n` and `e`, RFC 7518 §6.3.1).
fn unpadded(bytes: &[u8]) -> &[u8] {
    let zeros = bytes.iter().take_while(|&&b| b == 0).count();
    &bytes[zeros..]
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
    use std::sync::OnceLock;

    /// One generated key per test process (generation is slow in debug builds).
    fn pem() -> &'static str {
        static PEM: OnceLock<String> = OnceLock::new();
        PEM.get_or_init(|| generate_pem().unwrap())
    }

    /// A key as the earlier implementation generated and stored it (the rsa crate's PKCS#8
    /// PEM).
    fn stored_by_earlier_version() -> &'static str {
        static PEM: OnceLock<String> = OnceLock::new();
        PEM.get_or_init(|| {
            use rsa::pkcs8::{EncodePrivateKey, LineEnding};
            rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
                .unwrap()
                .to_pkcs8_pem(LineEnding::LF)
                .unwrap()
                .to_string()
        })
    }

    #[test]
    fn sign_then_verify_and_refuse_tampering() {
        let keys = Keys::from_pem(pem()).unwrap();
        let token = keys.sign(&json!({"sub": "abc", "n": 1})).unwrap();
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

    /// A key stored by the earlier `rsa`-crate implementation loads, publishes the JWKS that
    /// implementation published (same `n`, `e`, `kid`), and its tokens verify against that
    /// JWKS with the `rsa` crate's own verifier — the signature bytes are exactly those the
    /// earlier implementation made.
    #[test]
    fn stored_keys_jwks_and_tokens_stay_compatible() {
        use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
        use rsa::pkcs8::DecodePrivateKey;
        use rsa::signature::{SignatureEncoding, Signer, Verifier};
        use rsa::traits::PublicKeyParts;

        let stored = stored_by_earlier_version();
        let private = rsa::RsaPrivateKey::from_pkcs8_pem(stored).unwrap();
        let public = rsa::RsaPublicKey::from(&private);
        // The JWKS as the earlier implementation computed it.
        let old_n = URL_SAFE_NO_PAD.encode(public.n().to_bytes_be());
        let old_e = URL_SAFE_NO_PAD.encode(public.e().to_bytes_be());
        let thumbprint = format!(r#"{{"e":"{old_e}","kty":"RSA","n":"{old_n}"}}"#);
        let old_kid = URL_SAFE_NO_PAD.encode(Sha256::digest(thumbprint.as_bytes()));

        let keys = Keys::from_pem(stored).unwrap();
        let jwk = &keys.jwks()["keys"][0];
        assert_eq!(jwk["n"], old_n.as_str());
        assert_eq!(jwk["e"], old_e.as_str());
        assert_eq!(jwk["kid"], old_kid.as_str());

        let token = keys
            .sign(&json!({"sub": "abc", "aud": "periscope-web"}))
            .unwrap();
        let (signed, signature) = token.rsplit_once('.').unwrap();
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        // Verified with the rsa crate from the published n and e alone.
        let n = rsa::BigUint::from_bytes_be(&URL_SAFE_NO_PAD.decode(&old_n).unwrap());
        let e = rsa::BigUint::from_bytes_be(&URL_SAFE_NO_PAD.decode(&old_e).unwrap());
        let verifier = VerifyingKey::<Sha256>::new(rsa::RsaPublicKey::new(n, e).unwrap());
        verifier
            .verify(
                signed.as_bytes(),
                &Signature::try_from(signature.as_slice()).unwrap(),
            )
            .unwrap();
        // The same bytes the earlier implementation signed.
        let old = SigningKey::<Sha256>::new(private).sign(signed.as_bytes());
        assert_eq!(old.to_bytes().as_ref(), signature.as_slice());
        // And a token of the earlier implementation verifies here.
        let mut old_token = signed.to_owned();
        old_token.push('.');
        old_token.push_str(&URL_SAFE_NO_PAD.encode(old.to_bytes()));
        assert_eq!(keys.verify(&old_token).unwrap()["sub"], "abc");
    }

    /// A key generated now is a 2048-bit PKCS#8 PEM that the earlier implementation (the rsa
    /// crate) reads too, with the same public key: a rollback keeps working.
    #[test]
    fn generated_keys_are_standard_pkcs8() {
        use rsa::pkcs8::DecodePrivateKey;
        use rsa::traits::PublicKeyParts;
        let private = rsa::RsaPrivateKey::from_pkcs8_pem(pem()).unwrap();
        assert_eq!(private.size() * 8, 2048);
        let keys = Keys::from_pem(pem()).unwrap();
        assert_eq!(
            keys.jwks()["keys"][0]["n"],
            URL_SAFE_NO_PAD.encode(private.n().to_bytes_be()).as_str()
        );
    }

    #[test]
    fn pem_refusals_say_what_is_wrong() {
        assert!(
            Keys::from_pem("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----")
                .unwrap_err()
                .contains("PKCS#1")
        );
        assert!(Keys::from_pem("hello").unwrap_err().contains("PKCS#8"));
        assert!(
            Keys::from_pem("-----BEGIN PRIVATE KEY-----\n!!\n-----END PRIVATE KEY-----")
                .unwrap_err()
                .contains("base64")
        );
    }
}
