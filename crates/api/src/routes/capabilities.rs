//! `GET /v1/search/capabilities`: the protocol registry and its versions. Free; never cached.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::header::{CACHE_CONTROL, HeaderValue};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use periscope_api_types::CapabilitiesResponse;

use crate::App;
use crate::edge::{ClientAddr, RequestId, json, no_body};
use crate::error::ApiError;

/// The handler.
pub async fn get(
    State(app): State<App>,
    Extension(id): Extension<RequestId>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    super::free_caller(&app, &headers, client).await?;
    no_body(&Method::GET, &headers, body).await?;
    let mut response = json(&CapabilitiesResponse::new(id.0));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
