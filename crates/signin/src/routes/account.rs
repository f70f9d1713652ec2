//! `GET /account` (and the mount point itself): the sign-in service's own landing page — who is signed in, a way on to the
//! application, and "Sign out" (a CSRF-protected form posting to `/logout`). Without a session
//! it sends the browser to the sign-in page.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{App, Unavailable, see_other, with_cookies};
use crate::html;
use maud::{Markup, html};

pub(crate) async fn get(State(app): State<App>, headers: HeaderMap) -> Response {
    let user = match app.session(&headers).await {
        Ok(Some((_, user))) => user,
        Ok(None) => return see_other(&app.path("/signin")),
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let (csrf, set_cookie) = match app.csrf_token(&headers) {
        Ok(pair) => pair,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let content = view(
        app.settings.application_url.as_deref(),
        &user.email,
        &app.path("/logout"),
        &csrf,
    );
    with_cookies(
        html::page(&app, StatusCode::OK, "Signed in", content),
        set_cookie,
    )
}

/// Who is signed in, the way on to the application (when configured) and "Sign out".
fn view(application_url: Option<&str>, email: &str, logout: &str, csrf: &str) -> Markup {
    html! {
        h1 { "You are signed in" }
        p { "Signed in as " strong { (email) } "." }
        @if let Some(url) = application_url {
            p { a href=(url) { "Continue to Periscope" } }
        }
        form method="post" action=(logout) {
            input type="hidden" name="csrf" value=(csrf);
            button.button type="submit" { "Sign out" }
        }
    }
}
