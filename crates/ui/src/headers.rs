//! The headers of every answer of both services — no caching (pages carry tokens), no
//! referrer (a confirmation link must not leak through one), no framing, no sniffing — and the
//! content security policies of their pages. Neither allows inline style or script: the one
//! stylesheet comes from `/assets/` ([`crate::assets`]).

use axum::http::{HeaderMap, HeaderValue, header};

/// The policy of the sign-in service's pages: nothing but this origin's stylesheet.
pub const SIGNIN_CSP: &str =
    "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The policy of the application's pages: scripts, fetches, images and stylesheets from this
/// origin only, no framing, forms posted here only.
pub const APPLICATION_CSP: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; \
     img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// Sets the headers of every answer, with the sign-in service's policy ([`SIGNIN_CSP`]);
/// pages of the application replace the policy with theirs.
pub fn secure_headers(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(SIGNIN_CSP),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_policy_allows_inline_code_or_style() {
        for csp in [SIGNIN_CSP, APPLICATION_CSP] {
            assert!(!csp.contains("unsafe-inline"), "{csp}");
            assert!(csp.contains("style-src 'self'"), "{csp}");
            assert!(csp.starts_with("default-src 'none'"), "{csp}");
        }
        let mut headers = HeaderMap::new();
        secure_headers(&mut headers);
        assert_eq!(headers[header::CACHE_CONTROL], "no-store");
        assert_eq!(headers[header::CONTENT_SECURITY_POLICY], SIGNIN_CSP);
    }
}
