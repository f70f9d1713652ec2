//! `GET /account` (and the mount point itself): the sign-in service's own landing page — who is signed in, a way on to the
//! application, and "Sign out" (a CSRF-protected form posting to `/logout`). Without a session
//! it sends the browser to the sign-in page.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{App, Unavailable, see_other, with_cookies};
use crate::html::{self, escape};

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
    let next = app
        .settings
        .application_url
        .as_ref()
        .map_or(String::new(), |url| {
            format!(
                "<p><a href=\"{}\">Continue to Periscope</a></p>",
                escape(url)
            )
        });
    let body = format!(
        "<h1>You are signed in</h1><p>Signed in as <strong>{email}</strong>.</p>{next}\
         <form method=\"post\" action=\"{logout}\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button type=\"submit\">Sign out</button></form>",
        email = escape(&user.email),
        logout = escape(&app.path("/logout")),
    );
    with_cookies(html::page(StatusCode::OK, "Signed in", &body), set_cookie)
}
