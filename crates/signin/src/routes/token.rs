//! `POST /token`: the token endpoint. Authenticates the client (`client_secret_basic` or
//! `client_secret_post`), redeems the authorization code once — a replay revokes what the
//! first redemption issued — checks the redirect URI and the PKCE verifier, and answers an
//! access token and an RS256 ID token.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{App, FormParams, Params};
use crate::config::ClientConfig;
use crate::store::Redeemed;

/// An OAuth error answer (RFC 6749 §5.2).
struct OAuthError {
    status: StatusCode,
    error: &'static str,
    description: String,
    basic_challenge: bool,
}

fn oauth(error: &'static str, description: impl Into<String>) -> OAuthError {
    OAuthError {
        status: StatusCode::BAD_REQUEST,
        error,
        description: description.into(),
        basic_challenge: false,
    }
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            Json(json!({"error": self.error, "error_description": self.description})),
        )
            .into_response();
        no_store(response.headers_mut());
        if self.basic_challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"periscope-signin\""),
            );
        }
        response
    }
}

fn no_store(headers: &mut HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
}

pub(crate) async fn post(
    State(app): State<App>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Response {
    match exchange(&app, &headers, &params).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

/// The `id:secret` of an `Authorization: Basic` header, each form-decoded (RFC 6749 §2.3.1).
fn basic_credentials(headers: &HeaderMap) -> Option<Result<(String, String), OAuthError>> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let invalid = || OAuthError {
        status: StatusCode::UNAUTHORIZED,
        error: "invalid_client",
        description: "unreadable Basic credentials".into(),
        basic_challenge: true,
    };
    let decoded = STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok());
    let Some((id, secret)) = decoded.as_deref().and_then(|d| d.split_once(':')) else {
        return Some(Err(invalid()));
    };
    let form = |s: &str| -> String {
        url::form_urlencoded::parse(format!("x={s}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Some(Ok((form(id), form(secret))))
}

/// The authenticated client.
fn authenticate<'a>(
    app: &'a App,
    headers: &HeaderMap,
    params: &Params,
) -> Result<&'a ClientConfig, OAuthError> {
    let post_id = params
        .one("client_id")
        .map_err(|n| oauth("invalid_request", format!("{n} appears more than once")))?;
    let post_secret = params
        .one("client_secret")
        .map_err(|n| oauth("invalid_request", format!("{n} appears more than once")))?;
    let (id, secret, basic) = match basic_credentials(headers) {
        Some(Err(e)) => return Err(e),
        Some(Ok(_)) if post_secret.is_some() => {
            return Err(oauth(
                "invalid_request",
                "use one client authentication method, not two",
            ));
        }
        Some(Ok((id, secret))) => {
            if post_id.is_some_and(|p| p != id) {
                return Err(oauth(
                    "invalid_request",
                    "client_id differs from the authenticated client",
                ));
            }
            (id, secret, true)
        }
        None => match (post_id, post_secret) {
            (Some(id), Some(secret)) => (id.to_owned(), secret.to_owned(), false),
            _ => {
                return Err(OAuthError {
                    status: StatusCode::UNAUTHORIZED,
                    error: "invalid_client",
                    description: "client authentication is required (client_secret_basic or client_secret_post)".into(),
                    basic_challenge: true,
                });
            }
        },
    };
    let client = app.settings.clients.get(&id);
    // Digests are compared, so the time taken says nothing about the secret.
    let matches = client.is_some_and(|c| {
        Sha256::digest(c.client_secret.as_bytes()) == Sha256::digest(secret.as_bytes())
    });
    match client {
        Some(client) if matches => Ok(client),
        _ => Err(OAuthError {
            status: StatusCode::UNAUTHORIZED,
            error: "invalid_client",
            description: "unknown client or wrong secret".into(),
            basic_challenge: basic,
        }),
    }
}

/// Whether `verifier` is a PKCE code verifier (RFC 7636 §4.1) whose S256 is `challenge`.
fn pkce_matches(verifier: &str, challenge: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        && URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) == challenge
}

async fn exchange(app: &App, headers: &HeaderMap, params: &Params) -> Result<Response, OAuthError> {
    let client = authenticate(app, headers, params)?;
    let one = |name: &'static str| {
        params
            .one(name)
            .map_err(|n| oauth("invalid_request", format!("{n} appears more than once")))
    };
    if one("grant_type")? != Some("authorization_code") {
        return Err(oauth(
            "unsupported_grant_type",
            "only grant_type=authorization_code is supported",
        ));
    }
    let code = one("code")?.ok_or_else(|| oauth("invalid_request", "code is required"))?;
    let redirect_uri = one("redirect_uri")?;
    let verifier = one("code_verifier")?;
    let server_error = |e: crate::error::StoreError| {
        tracing::error!(error = %e, "token endpoint: sign-in database failure");
        OAuthError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: "server_error",
            description: "the sign-in service failed; try again".into(),
            basic_challenge: false,
        }
    };
    let now = app.clock.now().unix();
    let code_digest = crate::random::digest(code);
    let grant = match app
        .store
        .redeem_code(&code_digest, now)
        .await
        .map_err(server_error)?
    {
        Redeemed::Granted(grant) => grant,
        Redeemed::Replayed => {
            tracing::warn!(client.id = %client.client_id, "authorization code replayed; the tokens issued for it were revoked");
            return Err(oauth(
                "invalid_grant",
                "the authorization code was already used",
            ));
        }
        Redeemed::Expired => return Err(oauth("invalid_grant", "the authorization code expired")),
        Redeemed::Unknown => return Err(oauth("invalid_grant", "unknown authorization code")),
    };
    if grant.client_id != client.client_id {
        return Err(oauth(
            "invalid_grant",
            "the authorization code was issued to another client",
        ));
    }
    if redirect_uri != Some(grant.redirect_uri.as_str()) {
        return Err(oauth(
            "invalid_grant",
            "redirect_uri differs from the authorization request",
        ));
    }
    match verifier {
        None => return Err(oauth("invalid_request", "code_verifier is required (PKCE)")),
        Some(v) if !pkce_matches(v, &grant.code_challenge) => {
            return Err(oauth(
                "invalid_grant",
                "code_verifier does not match the code_challenge",
            ));
        }
        Some(_) => {}
    }
    let user = app
        .store
        .user_by_id(grant.user_id)
        .await
        .map_err(server_error)?
        .ok_or_else(|| oauth("invalid_grant", "the account no longer exists"))?;

    let access_token = crate::random::secret()
        .map_err(crate::error::StoreError::from)
        .map_err(server_error)?;
    let lifetime = app.settings.token_lifetime;
    app.store
        .insert_access_token(
            &crate::random::digest(&access_token),
            &code_digest,
            &client.client_id,
            user.id,
            &grant.scope,
            now,
            now + lifetime,
        )
        .await
        .map_err(server_error)?;
    let mut claims = json!({
        "iss": app.settings.issuer,
        "sub": user.subject,
        "aud": client.client_id,
        "iat": now,
        "exp": now + lifetime,
        "auth_time": grant.auth_time,
        "at_hash": crate::jwt::at_hash(&access_token),
        "email": user.email,
        "email_verified": true,
        "org_name": user.org_name,
        "terms_version": user.terms_version,
        "terms_accepted_at": user.terms_accepted_at,
        "marketing_consent": user.marketing_consent,
    });
    if let Some(nonce) = &grant.nonce {
        claims["nonce"] = json!(nonce);
    }
    let id_token = app.keys.sign(&claims).map_err(|e| {
        tracing::error!(error = %e, "token endpoint: cannot sign the ID token");
        OAuthError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: "server_error",
            description: "the sign-in service failed; try again".into(),
            basic_challenge: false,
        }
    })?;
    tracing::info!(client.id = %client.client_id, user.id = user.id, "tokens issued");
    let mut response = Json(json!({
        "access_token": access_token,
        "token_type": "Bearer",
        "expires_in": lifetime,
        "id_token": id_token,
        "scope": grant.scope,
    }))
    .into_response();
    no_store(response.headers_mut());
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_s256_from_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_matches(verifier, challenge));
        assert!(!pkce_matches(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXK",
            challenge
        ));
        assert!(!pkce_matches("short", challenge));
    }
}
