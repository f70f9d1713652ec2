//! `GET|POST /confirm`: the e-mailed link. Opening it (GET) changes nothing — mail scanners
//! may prefetch links — and shows the choose-password form; submitting the form with a password
//! the policy accepts uses the link once, confirms the address and stores the Argon2id hash.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{App, FormParams, QueryParams, Unavailable, csrf_refused, see_other, with_cookies};
use crate::email::EmailAddress;
use crate::html;
use crate::password;
use crate::store::{Confirmed, LinkStatus};
use maud::{Markup, html};

/// The page for a link that cannot be used.
fn unusable(app: &App, status: &LinkStatus) -> Response {
    let register = app.path("/register");
    let signin = app.path("/signin");
    match status {
        LinkStatus::Expired => html::message_page(
            StatusCode::GONE,
            "This link has expired",
            "Registration links work for a limited time. Register again to receive a new link.",
            Some((&register, "Register again")),
        ),
        LinkStatus::Used => html::message_page(
            StatusCode::GONE,
            "This link was already used",
            "Each registration link works once, and this one has been used. If you chose your password, sign in.",
            Some((&signin, "Sign in")),
        ),
        LinkStatus::Unknown | LinkStatus::Usable { .. } => html::message_page(
            StatusCode::NOT_FOUND,
            "This link is not valid",
            "The link is incomplete, or a newer registration replaced it. Use the newest link we sent, or register again.",
            Some((&register, "Register again")),
        ),
    }
}

/// What the link with `token` can do now.
async fn status(app: &App, token: Option<&str>) -> Result<LinkStatus, Unavailable> {
    match token.filter(|t| crate::random::is_secret_shaped(t)) {
        None => Ok(LinkStatus::Unknown),
        Some(token) => Ok(app
            .store
            .link_status(&crate::random::digest(token), app.clock.now().unix())
            .await?),
    }
}

/// The choose-password form of the link with `token`, for the address `email`.
fn view(app: &App, csrf: &str, token: &str, email: &str, problem: Option<&str>) -> Markup {
    html! {
        h1 { "Choose your password" }
        p {
            "Confirming " strong { (email) } ". Choose a password of at least "
            (password::MIN_CHARS) " characters; a passphrase of several words is welcome. \
             Common passwords are refused."
        }
        @if let Some(problem) = problem {
            p.error role="alert" { (problem) }
        }
        form method="post" action=(app.path("/confirm")) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="token" value=(token);
            input type="email" name="username" value=(email) autocomplete="username" hidden readonly;
            label for="password" { "Password" }
            input type="password" id="password" name="password" required
                minlength=(password::MIN_CHARS) autocomplete="new-password";
            label for="password2" { "Password again" }
            input type="password" id="password2" name="password2" required
                minlength=(password::MIN_CHARS) autocomplete="new-password";
            button.button type="submit" { "Confirm and set password" }
        }
    }
}

fn render(
    app: &App,
    headers: &HeaderMap,
    status: StatusCode,
    token: &str,
    email: &str,
    problem: Option<&str>,
) -> Response {
    let (csrf, set_cookie) = match app.csrf_token(headers) {
        Ok(pair) => pair,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let content = view(app, &csrf, token, email, problem);
    with_cookies(
        html::page(app, status, "Choose your password", content),
        set_cookie,
    )
}

pub(crate) async fn get(
    State(app): State<App>,
    headers: HeaderMap,
    QueryParams(params): QueryParams,
) -> Response {
    let token = params.field("token");
    match status(&app, token).await {
        Err(e) => e.into_response(),
        Ok(LinkStatus::Usable { email }) => render(
            &app,
            &headers,
            StatusCode::OK,
            token.unwrap_or(""),
            &email,
            None,
        ),
        Ok(other) => unusable(&app, &other),
    }
}

pub(crate) async fn post(
    State(app): State<App>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Response {
    let token = params.field("token");
    if !app.csrf_ok(&headers, params.field("csrf")) {
        let retry = match token {
            Some(t) => format!(
                "{}?{}",
                app.path("/confirm"),
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("token", t)
                    .finish()
            ),
            None => app.path("/register"),
        };
        return csrf_refused(&retry);
    }
    let email = match status(&app, token).await {
        Err(e) => return e.into_response(),
        Ok(LinkStatus::Usable { email }) => email,
        Ok(other) => return unusable(&app, &other),
    };
    let token = token.unwrap_or("");
    let Ok(address) = EmailAddress::parse(&email) else {
        return Unavailable(format!("stored address {email:?} does not parse")).into_response();
    };
    let chosen = params.field("password").unwrap_or("");
    let repeated = params.field("password2").unwrap_or("");
    if let Err(problem) = password::check(chosen, repeated, &address) {
        return render(
            &app,
            &headers,
            StatusCode::UNPROCESSABLE_ENTITY,
            token,
            &email,
            Some(problem.message()),
        );
    }
    let chosen = chosen.to_owned();
    let hash = match tokio::task::spawn_blocking(move || password::hash(&chosen)).await {
        Ok(Ok(hash)) => hash,
        Ok(Err(e)) => return Unavailable(e).into_response(),
        Err(e) => return Unavailable(format!("password hashing task: {e}")).into_response(),
    };
    match app
        .store
        .confirm(&crate::random::digest(token), &hash, app.clock.now().unix())
        .await
    {
        Err(e) => Unavailable::from(e).into_response(),
        Ok(Confirmed::Refused(status)) => unusable(&app, &status),
        Ok(Confirmed::Done { email }) => {
            tracing::info!(mail.to = %email, "address confirmed and password set");
            see_other(&format!("{}?confirmed=1", app.path("/signin")))
        }
    }
}
