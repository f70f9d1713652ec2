//! The demo's notice (DECISIONS.md "Demo data": every page of the demo says the data is
//! synthetic): [`mark_demo`] writes it under the preview banner of every HTML page a router
//! answers — the application's and the sign-in service's alike — when `periscope serve --demo`
//! layers it over the whole router.

use axum::body::{Body, to_bytes};
use axum::http::header;
use axum::response::Response;

/// The notice, under the banner.
pub const DEMO_NOTICE: &str = "Demo data: every host, network and name shown here is synthetic \
     (addresses in 240.0.0.0/4 and 3fff::/20, names under .example). No real organisation's \
     exposure is shown.";

/// Where the banner ends in every page (`periscope_signin::document`).
const BANNER_START: &str = "<div class=\"banner\" role=\"note\">";

/// The largest page body rewritten (larger bodies pass unchanged: no page is this large).
const MAX_PAGE: usize = 8 << 20;

/// Adds [`DEMO_NOTICE`] under the preview banner of an HTML page; any other response passes
/// unchanged. For `axum::middleware::map_response`.
pub async fn mark_demo(response: Response) -> Response {
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if !html {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match to_bytes(body, MAX_PAGE).await {
        Ok(bytes) => bytes,
        Err(e) => {
            tracing::error!(error = %e, "cannot read a page to mark it as demo data");
            return Response::from_parts(parts, Body::from("page too large"));
        }
    };
    let page = String::from_utf8_lossy(&bytes);
    let marked = match page
        .find(BANNER_START)
        .and_then(|start| page[start..].find("</div>").map(|end| start + end + 6))
    {
        Some(at) => format!(
            "{}<div class=\"banner demo\" role=\"note\">{}</div>{}",
            &page[..at],
            crate::html::escape(DEMO_NOTICE),
            &page[at..]
        ),
        None => page.into_owned(),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(marked))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    async fn text(response: Response) -> String {
        let bytes = to_bytes(response.into_body(), MAX_PAGE).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn pages_get_the_notice_under_the_banner_and_nothing_else_changes() {
        let page = periscope_signin::document(StatusCode::OK, "T", "", "<main>x</main>");
        let marked = text(mark_demo(page).await).await;
        let banner = marked.find("class=\"banner\"").unwrap();
        let notice = marked.find("class=\"banner demo\"").unwrap();
        let main = marked.find("<main>x</main>").unwrap();
        assert!(banner < notice && notice < main, "{marked}");
        assert!(marked.contains("every host, network and name shown here is synthetic"));

        let json = (
            [(header::CONTENT_TYPE, "application/json")],
            "{\"a\":\"<div class=\\\"banner\\\" role=\\\"note\\\"></div>\"}",
        )
            .into_response();
        let same = text(mark_demo(json).await).await;
        assert!(!same.contains("synthetic"), "{same}");
    }
}
