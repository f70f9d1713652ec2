//! `POST /v1/search/count`: unique hosts of an ASN or filter query. Free.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{CountResponse, QueryBody};

use crate::App;
use crate::edge::{ClientAddr, RequestId, json};
use crate::error::ApiError;

/// The handler.
pub async fn post(
    State(app): State<App>,
    Extension(id): Extension<RequestId>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = super::free_caller(&app, &headers, client).await?;
    let req: QueryBody = super::body(&headers, body).await?;
    let count = app.service.count(&caller, &id.0, &req.query).await?;
    Ok(json(&CountResponse::new(id.0, count)))
}
