//! `GET /` (the signed-in page with the search bar, or "Sign in to search") and
//! `GET /signed-out`.

use axum::extract::State as AxumState;
use axum::http::StatusCode;
use axum::response::Response;

use maud::html;

use crate::Web;
use crate::extract::{Params, Search, SignedPage};
use crate::html::{message, page_with};
use crate::routes::{globe, search};

pub(crate) async fn home(
    AxumState(web): AxumState<Web>,
    SignedPage(mut signed): SignedPage,
    search: Search,
    Params(params): Params<search::Params>,
) -> Response {
    let (status, section) = search::search_section(&web, &signed, &search, &params).await;
    // The ring shows the allowance after the search this page ran.
    signed.refresh_ring(&web).await;
    let title = match params.q.as_deref().map(str::trim) {
        Some(q) if !q.is_empty() => "Search results",
        _ => "Search",
    };
    // The search page's assets, and in the Globe view the Globe's script and packages
    // (unused, and harmless, if a domain search returned to Results).
    let mut assets = vec!["search.css", "search.js"];
    if params.view == search::View::Globe {
        assets.extend_from_slice(globe::ASSETS);
    }
    page_with(
        status,
        title,
        Some(&signed.top()),
        html! { main.search aria-label="Search" { (section) } },
        &assets,
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
