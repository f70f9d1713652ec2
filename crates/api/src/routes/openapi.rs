//! `GET /v1/openapi.json`: the OpenAPI 3.1 document of the API. Free and without a key, so
//! tools can read it before anyone has one.

use std::sync::OnceLock;

use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::{IntoResponse, Response};

/// The handler. The document is rendered once per process.
pub async fn get() -> Response {
    static DOCUMENT: OnceLock<Vec<u8>> = OnceLock::new();
    let bytes = DOCUMENT.get_or_init(|| {
        serde_json::to_vec(&periscope_api_types::openapi_document()).unwrap_or_default()
    });
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        bytes.clone(),
    )
        .into_response()
}
