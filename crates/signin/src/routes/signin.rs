//! `GET|POST /signin`: the sign-in form. Failed sign-ins are limited per client address and
//! per account (e-mail address), successes never count; every refusal — unknown or unconfirmed address, wrong password, too many
//! attempts — shows the same message and takes about as long. Success starts a fresh session
//! (a new cookie value) and returns to the authorization request that sent the user here.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{
    App, Params, QueryParams, SESSION_COOKIE, Unavailable, csrf_refused, see_other, with_cookies,
};
use crate::email::EmailAddress;
use crate::html;
use maud::{Markup, html};

/// The one message for every failed sign-in.
pub(crate) const GENERIC_FAILURE: &str = "Sign-in failed. Check your e-mail address and password; after several attempts, wait a few minutes before trying again.";

/// `return_to` if it is one of our authorization requests (so never an open redirect).
fn safe_return_to<'a>(app: &App, return_to: Option<&'a str>) -> Option<&'a str> {
    let prefix = format!("{}?", app.path("/authorize"));
    return_to.filter(|r| r.starts_with(&prefix) && !r.contains(['\r', '\n']))
}

/// What the sign-in form shows above its fields.
#[derive(Clone, Copy)]
enum Notice {
    None,
    /// The address was just confirmed through its link.
    Confirmed,
    /// The sign-in failed ([`GENERIC_FAILURE`]).
    Failed,
}

/// The sign-in form: `email` as typed so far, the authorization request to return to.
fn view(app: &App, csrf: &str, email: &str, return_to: Option<&str>, notice: Notice) -> Markup {
    html! {
        h1 { "Sign in to Periscope" }
        @match notice {
            Notice::None => {}
            Notice::Confirmed => p.notice role="status" {
                "Your address is confirmed and your password is set. Sign in to continue."
            },
            Notice::Failed => p.error role="alert" { (GENERIC_FAILURE) },
        }
        form method="post" action=(app.path("/signin")) {
            input type="hidden" name="csrf" value=(csrf);
            @if let Some(r) = return_to {
                input type="hidden" name="return_to" value=(r);
            }
            label for="email" { "E-mail address" }
            input type="email" id="email" name="email" required autocomplete="username" value=(email);
            label for="password" { "Password" }
            input type="password" id="password" name="password" required autocomplete="current-password";
            button.button type="submit" { "Sign in" }
        }
        p {
            "No account yet? " a href=(app.path("/register")) { "Register" }
            " · " a href=(app.path("/terms")) { "Terms" }
        }
    }
}

fn render(
    app: &App,
    headers: &HeaderMap,
    status: StatusCode,
    email: &str,
    return_to: Option<&str>,
    notice: Notice,
) -> Response {
    let (csrf, set_cookie) = match app.csrf_token(headers) {
        Ok(pair) => pair,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let content = view(app, &csrf, email, return_to, notice);
    with_cookies(html::page(app, status, "Sign in", content), set_cookie)
}

pub(crate) async fn get(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(params): QueryParams,
) -> Response {
    let notice = if params.field("confirmed").is_some() {
        Notice::Confirmed
    } else {
        Notice::None
    };
    let return_to = safe_return_to(&app, params.field("return_to"));
    render(&app, &headers, StatusCode::OK, "", return_to, notice)
}

pub(crate) async fn post(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    let body = match axum::body::to_bytes(body, 64 * 1024).await {
        Ok(body) => body,
        Err(_) => return StatusCode::PAYLOAD_TOO_LARGE.into_response(),
    };
    let params = Params::from_body(&body);
    if !app.csrf_ok(headers, params.field("csrf")) {
        return csrf_refused(&app.path("/signin"));
    }
    let client = match app.client_ip(&parts) {
        Ok(ip) => ip,
        Err(e) => return e.into_response(),
    };
    let typed = params.field("email").unwrap_or("").trim();
    let password = params.field("password").unwrap_or("").to_owned();
    let return_to = safe_return_to(&app, params.field("return_to"));
    let now = app.clock.now().unix();
    let refuse = |reason: &str| {
        tracing::info!(mail.to = %typed, client.ip = %client, reason, "sign-in refused");
        render(
            &app,
            headers,
            StatusCode::UNAUTHORIZED,
            typed,
            return_to,
            Notice::Failed,
        )
    };
    let key =
        EmailAddress::parse(typed).map_or_else(|_| typed.to_lowercase(), |a| a.key().to_owned());
    match app.limiter.admit(&app.store, client, &key, now).await {
        Ok(true) => {}
        Ok(false) => return refuse("rate_limited"),
        Err(e) => return Unavailable::from(e).into_response(),
    }
    let user = match app.store.user_by_email_key(&key).await {
        Ok(user) => user,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let stored = user
        .as_ref()
        .and_then(|u| u.password_hash.clone())
        .unwrap_or_else(|| app.decoy_hash.clone());
    let verified = match tokio::task::spawn_blocking(move || {
        crate::password::verify(&password, &stored)
    })
    .await
    {
        Ok(verified) => verified,
        Err(e) => return Unavailable(format!("password verification task: {e}")).into_response(),
    };
    let user = match user {
        Some(user) if verified && user.confirmed_at.is_some() => user,
        other => {
            if let Err(e) = app.limiter.failed(&app.store, client, &key, now).await {
                return Unavailable::from(e).into_response();
            }
            return refuse(match other {
                None => "unknown_address",
                Some(u) if u.confirmed_at.is_none() => "not_confirmed",
                Some(_) => "wrong_password",
            });
        }
    };
    // A fresh session id at every sign-in; any earlier session of this browser ends.
    match app.session(headers).await {
        Ok(Some((old, _))) => {
            if let Err(e) = app.store.end_session(&old).await {
                return Unavailable::from(e).into_response();
            }
        }
        Ok(None) => {}
        Err(e) => return Unavailable::from(e).into_response(),
    }
    let session = match crate::random::secret() {
        Ok(session) => session,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    if let Err(e) = app
        .store
        .create_session(&crate::random::digest(&session), user.id, now)
        .await
    {
        return Unavailable::from(e).into_response();
    }
    tracing::info!(user.id = user.id, client.ip = %client, "signed in");
    let next = return_to.map_or_else(|| app.path("/account"), str::to_owned);
    with_cookies(
        see_other(&next),
        [app.cookie(SESSION_COOKIE, Some(&session))],
    )
}
