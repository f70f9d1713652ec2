//! `POST /v1/search/exposure`: geotile buckets of a non-domain query. Free.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{ExposureBody, ExposureResponse};
use periscope_service::ExposureRequest;

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
    let req: ExposureBody = super::body(&headers, body).await?;
    let exposure = app
        .service
        .exposure(
            &caller,
            &id.0,
            ExposureRequest {
                query: &req.query,
                resolution: &req.resolution,
            },
        )
        .await?;
    Ok(json(&ExposureResponse::new(id.0, &exposure)))
}
