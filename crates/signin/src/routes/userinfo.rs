//! `GET|POST /userinfo`: the claims of the account behind a live access token (sent as
//! `Authorization: Bearer`).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::App;

fn invalid_token() -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        Json(json!({"error": "invalid_token", "error_description": "missing, unknown or expired access token"})),
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer error=\"invalid_token\""),
    );
    response
}

pub(crate) async fn handle(State(app): State<App>, headers: HeaderMap) -> Response {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let Some(token) = token.filter(|t| crate::random::is_secret_shaped(t)) else {
        return invalid_token();
    };
    let user = match app
        .store
        .access_token_user(&crate::random::digest(token), app.clock.now().unix())
        .await
    {
        Ok(Some(user)) => user,
        Ok(None) => return invalid_token(),
        Err(e) => {
            tracing::error!(error = %e, "userinfo: sign-in database failure");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({"error": "server_error"})),
            )
                .into_response();
        }
    };
    let mut response = Json(json!({
        "sub": user.subject,
        "email": user.email,
        "email_verified": true,
        "org_name": user.org_name,
        "terms_version": user.terms_version,
        "terms_accepted_at": user.terms_accepted_at,
        "marketing_consent": user.marketing_consent,
    }))
    .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
