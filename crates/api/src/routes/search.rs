//! `POST /v1/search`: one page of hosts. The only metered route: charged on a 200 only.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{Allowance, DomainResolutionBody, SearchBody, SearchResponse};
use periscope_service::SearchRequest;
use periscope_state::Usage;

use crate::App;
use crate::edge::{RequestId, json};
use crate::error::ApiError;

/// The wire form of an allowance.
pub(crate) fn allowance(usage: Usage) -> Allowance {
    Allowance {
        limit: usage.limit,
        used: usage.used,
        remaining: usage.remaining(),
        resets_at: usage.resets_at().to_string(),
    }
}

/// The handler.
pub async fn post(
    State(app): State<App>,
    Extension(id): Extension<RequestId>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = super::caller(&app, &headers).await?;
    let req: SearchBody = super::body(&headers, body).await?;
    let answer = app
        .service
        .search(
            &caller,
            &id.0,
            SearchRequest {
                query: &req.query,
                limit: req.limit,
                cursor: req.cursor.as_deref(),
            },
        )
        .await?;
    Ok(json(&SearchResponse::new(
        id.0,
        &answer.query,
        &answer.hosts,
        answer.next_cursor.map(|c| c.to_string()),
        answer.allowance.map(allowance),
        answer.domain_resolution.map(|r| DomainResolutionBody {
            status: r.status().to_owned(),
            address_count: r.address_count() as u64,
        }),
    )))
}
