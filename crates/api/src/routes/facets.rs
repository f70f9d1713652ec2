//! `POST /v1/search/facets`: the six Suggested Filters groups of a filter query. Free.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{FacetsResponse, QueryBody};

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
    let answer = app.service.facets(&caller, &id.0, &req.query).await?;
    Ok(json(&FacetsResponse::new(
        id.0,
        &answer.query,
        &answer.facets,
    )))
}
