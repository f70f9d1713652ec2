//! `GET /.well-known/openid-configuration` (OpenID Connect Discovery 1.0, with the
//! RP-initiated logout metadata) and `GET /jwks`, the signing key set.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::App;

pub(crate) async fn configuration(State(app): State<App>) -> Response {
    Json(json!({
        "issuer": app.settings.issuer,
        "authorization_endpoint": app.url("/authorize"),
        "token_endpoint": app.url("/token"),
        "userinfo_endpoint": app.url("/userinfo"),
        "jwks_uri": app.url("/jwks"),
        "end_session_endpoint": app.url("/logout"),
        "registration_page": app.url("/register"),
        "scopes_supported": ["openid", "email"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "prompt_values_supported": ["none", "login"],
        "claims_supported": [
            "iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash",
            "email", "email_verified", "org_name",
            "terms_version", "terms_accepted_at", "marketing_consent"
        ],
        "claims_parameter_supported": false,
        "request_parameter_supported": false,
        "request_uri_parameter_supported": false,
    }))
    .into_response()
}

pub(crate) async fn jwks(State(app): State<App>) -> Response {
    Json(app.keys.jwks()).into_response()
}
