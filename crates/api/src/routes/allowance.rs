//! `GET /v1/allowance`: the caller's daily allowance; absent for an unlimited account. Never
//! spends a search.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use periscope_api_types::AllowanceResponse;

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
    let caller = super::free_caller(&app, &headers, client).await?;
    no_body(&Method::GET, &headers, body).await?;
    let usage = app.service.allowance(&caller).await?;
    Ok(json(&AllowanceResponse {
        request_id: id.0,
        allowance: usage.map(super::search::allowance),
    }))
}
