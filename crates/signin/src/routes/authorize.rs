//! `GET|POST /authorize`: the authorization endpoint (authorization code flow). The client and
//! its redirect URI are checked first and, when wrong, answered with a page — never a redirect.
//! Every other problem goes back to the redirect URI as `error` (RFC 6749 §4.1.2.1). PKCE is
//! required with `S256`. Without a live session (or with `prompt=login`, or past `max_age`)
//! the browser goes to the sign-in page and comes back here.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use url::Url;

use super::{App, FormParams, Params, QueryParams, Unavailable, see_other};
use crate::html;
use crate::store::NewCode;

/// Longest `state` and `nonce` accepted.
const MAX_STATE: usize = 2048;

pub(crate) async fn get(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(params): QueryParams,
) -> Response {
    handle(&app, params, &headers).await
}

pub(crate) async fn post(
    State(app): State<App>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Response {
    handle(&app, params, &headers).await
}

/// A page for a request that cannot be sent back to any client.
fn refuse_page(message: &str) -> Response {
    html::message_page(
        StatusCode::BAD_REQUEST,
        "This sign-in request is not valid",
        message,
        None,
    )
}

/// The redirect that answers an error to the client.
fn error_redirect(
    redirect_uri: &str,
    state: Option<&str>,
    error: &str,
    description: &str,
) -> Response {
    let mut pairs = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    redirect_with(redirect_uri, &pairs)
}

/// A 303 to `redirect_uri` with `pairs` appended to its query.
fn redirect_with(redirect_uri: &str, pairs: &[(&str, &str)]) -> Response {
    match Url::parse(redirect_uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(pairs);
            see_other(url.as_str())
        }
        Err(e) => {
            Unavailable(format!("registered redirect URI {redirect_uri:?}: {e}")).into_response()
        }
    }
}

async fn handle(app: &App, params: Params, headers: &HeaderMap) -> Response {
    let client = match params.one("client_id") {
        Err(_) => return refuse_page("The request names its client more than once."),
        Ok(None) => return refuse_page("The request does not name its client (client_id)."),
        Ok(Some(id)) => match app.settings.clients.get(id) {
            Some(client) => client,
            None => {
                return refuse_page(
                    "The application that sent you here is not known to this sign-in service.",
                );
            }
        },
    };
    let redirect_uri = match params.one("redirect_uri") {
        Ok(Some(uri)) if client.redirect_uris.iter().any(|r| r == uri) => uri,
        Ok(Some(_)) => {
            return refuse_page(
                "The return address of this request is not registered for the application that sent you here.",
            );
        }
        Ok(None) | Err(_) => {
            return refuse_page("The request must name exactly one return address (redirect_uri).");
        }
    };
    let state = match params.one("state") {
        Ok(state) => state,
        Err(_) => {
            return error_redirect(
                redirect_uri,
                None,
                "invalid_request",
                "state appears more than once",
            );
        }
    };
    let fail =
        |error: &str, description: &str| error_redirect(redirect_uri, state, error, description);
    let mut values = std::collections::HashMap::new();
    for name in [
        "response_type",
        "response_mode",
        "scope",
        "nonce",
        "code_challenge",
        "code_challenge_method",
        "prompt",
        "max_age",
        "request",
        "request_uri",
    ] {
        match params.one(name) {
            Ok(v) => {
                values.insert(name, v);
            }
            Err(name) => return fail("invalid_request", &format!("{name} appears more than once")),
        }
    }
    let v = |name: &str| values.get(name).copied().flatten();
    if v("request").is_some() {
        return fail("request_not_supported", "request objects are not supported");
    }
    if v("request_uri").is_some() {
        return fail("request_uri_not_supported", "request_uri is not supported");
    }
    if v("response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    if !matches!(v("response_mode"), None | Some("query")) {
        return fail("invalid_request", "only response_mode=query is supported");
    }
    let scope = v("scope").unwrap_or("");
    if !scope.split(' ').any(|s| s == "openid") {
        return fail("invalid_scope", "the openid scope is required");
    }
    match v("code_challenge_method") {
        Some("S256") => {}
        None => {
            return fail(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method=S256",
            );
        }
        Some(_) => {
            return fail(
                "invalid_request",
                "only code_challenge_method=S256 is supported",
            );
        }
    }
    let Some(challenge) = v("code_challenge").filter(|c| is_s256_challenge(c)) else {
        return fail(
            "invalid_request",
            "code_challenge must be the 43-character base64url SHA-256 of the code verifier",
        );
    };
    let nonce = v("nonce");
    if nonce.is_some_and(|n| n.len() > MAX_STATE) || state.is_some_and(|s| s.len() > MAX_STATE) {
        return fail(
            "invalid_request",
            "state and nonce may have at most 2048 characters",
        );
    }
    // Both are stored with the code; neither may hold a control character (RFC 6749 allows
    // printable ASCII in state).
    if [nonce, state]
        .into_iter()
        .flatten()
        .any(|v| periscope_model::text::hidden_control(v, false).is_some())
    {
        return fail(
            "invalid_request",
            "state and nonce must not contain control characters",
        );
    }
    let prompts: Vec<&str> = v("prompt").map_or(Vec::new(), |p| p.split(' ').collect());
    if prompts.contains(&"none") && prompts.len() > 1 {
        return fail(
            "invalid_request",
            "prompt=none cannot be combined with other values",
        );
    }
    let max_age = match v("max_age").map(str::parse::<i64>) {
        None => None,
        Some(Ok(age)) if age >= 0 => Some(age),
        Some(_) => return fail("invalid_request", "max_age must be a number of seconds"),
    };

    let session = match app.session(headers).await {
        Ok(session) => session,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let now = app.clock.now().unix();
    let fresh_enough = |auth_time: i64| max_age.is_none_or(|age| now <= auth_time + age);
    let user = match session {
        Some((_, user)) if !prompts.contains(&"login") && fresh_enough(user.auth_time) => user,
        _ => {
            if prompts.contains(&"none") {
                return fail("login_required", "the user is not signed in");
            }
            // Back here after sign-in, without prompt=login (the sign-in just happened).
            let again = Params(
                params
                    .0
                    .iter()
                    .filter(|(n, _)| n != "prompt" || !prompts.contains(&"login"))
                    .cloned()
                    .collect(),
            );
            let return_to = format!("{}?{}", app.path("/authorize"), again.to_query());
            let query = url::form_urlencoded::Serializer::new(String::new())
                .append_pair("return_to", &return_to)
                .finish();
            return see_other(&format!("{}?{query}", app.path("/signin")));
        }
    };

    let code = match crate::random::secret() {
        Ok(code) => code,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let stored = app
        .store
        .insert_code(&NewCode {
            digest: &crate::random::digest(&code),
            client_id: &client.client_id,
            user_id: user.user_id,
            redirect_uri,
            code_challenge: challenge,
            nonce,
            scope,
            auth_time: user.auth_time,
            now,
            expires_at: now + app.settings.code_lifetime,
        })
        .await;
    if let Err(e) = stored {
        return Unavailable::from(e).into_response();
    }
    tracing::info!(client.id = %client.client_id, user.id = user.user_id, "authorization code issued");
    let mut pairs = vec![("code", code.as_str())];
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    redirect_with(redirect_uri, &pairs)
}

/// Whether `c` has the shape of an S256 challenge: 43 base64url characters.
fn is_s256_challenge(c: &str) -> bool {
    c.len() == 43
        && c.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
