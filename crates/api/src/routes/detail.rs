//! `POST /v1/hosts/detail`: one address with a page of all its current services. Free.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{HostDetailBody, HostDetailResponse};
use periscope_service::DetailRequest;

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
    let req: HostDetailBody = super::body(&headers, body).await?;
    let detail = app
        .service
        .host_detail(
            &caller,
            &id.0,
            DetailRequest {
                ip: &req.ip,
                limit: req.limit,
                cursor: req.cursor.as_deref(),
            },
        )
        .await?;
    Ok(json(&HostDetailResponse::new(id.0, &detail)))
}
