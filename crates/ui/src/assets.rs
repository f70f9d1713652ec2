//! The one stylesheet of every page (`assets/periscope.css`: layout, top bar, buttons, the
//! search page, the sign-in forms), compiled in and served from `/assets/periscope.css` by
//! both services — the application at its root, the sign-in service under its mount path.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

/// The stylesheet's name under `/assets/`.
pub const STYLESHEET: &str = "periscope.css";

/// The stylesheet's text.
pub const STYLESHEET_CSS: &str = include_str!("../assets/periscope.css");

/// The path of an asset under `{prefix}/assets/` with the build's version, so that a new binary
/// is never answered from a browser's cache of the old one. `prefix` is `""` at the root or a
/// mount path (`/auth`).
pub fn href(prefix: &str, name: &str) -> String {
    format!("{prefix}/assets/{name}?v={}", env!("CARGO_PKG_VERSION"))
}

/// `GET /assets/periscope.css`: the stylesheet, cacheable for an hour (its URL carries the
/// version).
pub async fn stylesheet() -> Response {
    asset_response(STYLESHEET_CSS, "text/css; charset=utf-8")
}

/// An asset's answer: `body` as `media_type`, never sniffed as another type, cacheable for an
/// hour (asset URLs carry the build's version, [`href`]).
pub fn asset_response(body: impl IntoResponse, media_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stylesheet_styles_the_layout_and_the_buttons() {
        for rule in [".banner{", ".top{", "main{", ".button{", "main.narrow{"] {
            assert!(STYLESHEET_CSS.contains(rule), "no {rule}");
        }
        assert_eq!(
            href("/auth", STYLESHEET),
            format!("/auth/assets/periscope.css?v={}", env!("CARGO_PKG_VERSION"))
        );
    }
}
