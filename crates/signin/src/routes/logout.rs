//! `GET|POST /logout`: RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0). With a
//! valid `id_token_hint` for the signed-in user (or nobody signed in) the session ends at once;
//! otherwise the user confirms on a page (a CSRF-protected form). A `post_logout_redirect_uri`
//! must be registered exactly for the client the hint or `client_id` names; `state` is returned
//! with it. The account page's "Sign out" button posts here too.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use url::Url;

use super::{
    App, FormParams, Params, QueryParams, SESSION_COOKIE, Unavailable, csrf_refused, see_other,
    with_cookies,
};
use crate::html;
use maud::{Markup, html};

/// A checked logout request.
struct Request {
    /// Where to go afterwards (registered), with the state to hand back.
    redirect: Option<String>,
    state: Option<String>,
    /// The `sub` of a valid `id_token_hint`.
    hint_subject: Option<String>,
}

fn refuse(message: &str) -> Response {
    html::message_page(
        StatusCode::BAD_REQUEST,
        "This sign-out request is not valid",
        message,
        None,
    )
}

/// Checks the logout parameters; `Err` is the message of the refusal page.
fn check(app: &App, params: &Params) -> Result<Request, String> {
    let one = |name: &'static str| {
        params
            .one(name)
            .map_err(|n| format!("{n} appears more than once."))
    };
    let hint = one("id_token_hint")?;
    let client_id = one("client_id")?;
    let redirect = one("post_logout_redirect_uri")?;
    let state = one("state")?;
    let mut audience = None;
    let mut hint_subject = None;
    if let Some(hint) = hint {
        let claims = app.keys.verify(hint).map_err(|_| {
            String::from("The ID token given as a hint was not issued by this sign-in service.")
        })?;
        if claims["iss"] != app.settings.issuer.as_str() {
            return Err(String::from(
                "The ID token given as a hint was issued by another provider.",
            ));
        }
        let aud = match &claims["aud"] {
            serde_json::Value::String(a) => Some(a.clone()),
            serde_json::Value::Array(a) if a.len() == 1 => a[0].as_str().map(str::to_owned),
            _ => None,
        };
        let aud = aud
            .filter(|a| app.settings.clients.contains_key(a))
            .ok_or_else(|| {
                String::from("The ID token given as a hint is for an unknown application.")
            })?;
        if client_id.is_some_and(|c| c != aud) {
            return Err(String::from(
                "client_id and the ID token hint name different applications.",
            ));
        }
        audience = Some(aud);
        hint_subject = claims["sub"].as_str().map(str::to_owned);
    }
    let client = audience.as_deref().or(client_id);
    let redirect = match redirect {
        None => None,
        Some(uri) => {
            let registered = client
                .and_then(|c| app.settings.clients.get(c))
                .is_some_and(|c| c.post_logout_redirect_uris.iter().any(|r| r == uri));
            if !registered {
                return Err(String::from(
                    "The address to return to after sign-out is not registered for this application.",
                ));
            }
            Some(uri.to_owned())
        }
    };
    Ok(Request {
        redirect,
        state: state.map(str::to_owned),
        hint_subject,
    })
}

/// Ends this browser's session and answers: back to the client, or a page.
async fn end(app: &App, headers: &HeaderMap, request: &Request) -> Response {
    match app.session(headers).await {
        Ok(Some((digest, user))) => {
            if let Err(e) = app.store.end_session(&digest).await {
                return Unavailable::from(e).into_response();
            }
            tracing::info!(user.id = user.user_id, "signed out");
        }
        Ok(None) => {}
        Err(e) => return Unavailable::from(e).into_response(),
    }
    let response = match &request.redirect {
        Some(uri) => match Url::parse(uri) {
            Ok(mut url) => {
                if let Some(state) = &request.state {
                    url.query_pairs_mut().append_pair("state", state);
                }
                see_other(url.as_str())
            }
            Err(e) => {
                return Unavailable(format!("registered logout URI {uri:?}: {e}")).into_response();
            }
        },
        None => html::message_page(
            StatusCode::OK,
            "You are signed out",
            "You are signed out of Periscope. Signing in again asks for your password.",
            Some((&app.path("/signin"), "Sign in")),
        ),
    };
    with_cookies(response, [app.cookie(SESSION_COOKIE, None)])
}

pub(crate) async fn get(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(params): QueryParams,
) -> Response {
    let request = match check(&app, &params) {
        Ok(request) => request,
        Err(message) => return refuse(&message),
    };
    let session = match app.session(&headers).await {
        Ok(session) => session,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let session_subject = session.as_ref().map(|(_, user)| user.subject.clone());
    // A valid hint for the signed-in user (or nobody signed in): no question asked.
    if request.hint_subject.is_some()
        && (session.is_none() || session_subject == request.hint_subject)
    {
        return end(&app, &headers, &request).await;
    }
    confirm_page(&app, &headers, &params)
}

/// The "Sign out?" page, carrying the request's parameters.
fn confirm_page(app: &App, headers: &HeaderMap, params: &Params) -> Response {
    let (token, set_cookie) = match app.csrf_token(headers) {
        Ok(pair) => pair,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let carried: Vec<(&str, &str)> = HINTS
        .into_iter()
        .filter_map(|name| match params.one(name) {
            Ok(Some(value)) => Some((name, value)),
            _ => None,
        })
        .collect();
    let content = confirm_view(&app.path("/logout"), &token, &carried);
    with_cookies(
        html::page(app, StatusCode::OK, "Sign out", content),
        set_cookie,
    )
}

/// The parameters the "Sign out?" form carries on to its POST.
const HINTS: [&str; 4] = [
    "id_token_hint",
    "client_id",
    "post_logout_redirect_uri",
    "state",
];

/// The "Sign out?" question, with the request's parameters (`carried`) as hidden fields.
fn confirm_view(action: &str, csrf: &str, carried: &[(&str, &str)]) -> Markup {
    html! {
        h1 { "Sign out?" }
        p { "Do you want to sign out of Periscope?" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            @for (name, value) in carried {
                input type="hidden" name=(name) value=(value);
            }
            button.button type="submit" { "Sign out" }
        }
    }
}

pub(crate) async fn post(
    State(app): State<App>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Response {
    if !app.csrf_ok(&headers, params.field("csrf")) {
        return csrf_refused(&app.path("/account"));
    }
    let request = match check(&app, &params) {
        Ok(request) => request,
        Err(message) => return refuse(&message),
    };
    end(&app, &headers, &request).await
}
