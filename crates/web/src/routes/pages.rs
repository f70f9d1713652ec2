//! `GET /` (the signed-in page with the search bar, or "Sign in to search"), the account menu's placeholder pages,
//! and `GET /signed-out`.

use axum::extract::State as AxumState;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;

use crate::Web;
use crate::html::{message, page_with};
use crate::routes::search;
use crate::session::*;

pub(crate) async fn home(AxumState(web): AxumState<Web>, headers: HeaderMap, uri: Uri) -> Response {
    match require_session(&web, &headers, &uri).await {
        Ok(signed) => {
            let params = search::Params::parse(uri.query());
            let (status, section) = search::search_section(&web, &signed, &params).await;
            let title = match params.q.as_deref().map(str::trim) {
                Some(q) if !q.is_empty() => "Search results",
                _ => "Search",
            };
            page_with(
                status,
                title,
                Some(&signed.top()),
                &format!("<main class=\"search\" aria-label=\"Search\">{section}</main>"),
                &["search.css", "search.js"],
            )
        }
        Err(page) => page,
    }
}

pub(crate) async fn placeholder(
    AxumState(web): AxumState<Web>,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let signed = match require_session(&web, &headers, &uri).await {
        Ok(signed) => signed,
        Err(page) => return page,
    };
    let title = match uri.path() {
        "/quickstart" => "Quickstart",
        "/release-notes" => "Release notes",
        "/report-a-problem" => "Report a problem",
        _ => "API access",
    };
    message(
        StatusCode::OK,
        title,
        &["Coming with the browser application."],
        Some(("/", "Back to Periscope")),
        Some(&signed.top()),
    )
}

pub(crate) async fn signed_out() -> Response {
    message(
        StatusCode::OK,
        "You are signed out",
        &["Your Periscope session and your sign-in session have ended."],
        Some(("/signin", "Sign in")),
        None,
    )
}
