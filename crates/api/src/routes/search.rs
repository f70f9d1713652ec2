//! `POST /v1/search`: one page of hosts. The only metered route: charged on a 200 only.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::response::Response;
use periscope_api_types::{
    Allowance, DomainResolution, DomainResolutionStatus, SearchBody, SearchResponse,
};
use periscope_service::SearchRequest;
use periscope_state::Usage;

use crate::App;
use crate::edge::{ClientAddr, RequestId, json};
use crate::error::ApiError;

/// The wire form of an allowance.
pub(crate) fn allowance(usage: Usage) -> Allowance {
    Allowance::new(usage.limit, usage.used, usage.resets_at())
}

/// The handler.
pub async fn post(
    State(app): State<App>,
    Extension(id): Extension<RequestId>,
    Extension(client): Extension<ClientAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = super::caller(&app, &headers, client).await?;
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
    let mut response = SearchResponse::new(id.0, &answer.hosts);
    response.next_cursor = answer.next_cursor.map(|c| c.to_string());
    response.allowance = answer.allowance.map(allowance);
    response.domain_resolution = answer.domain_resolution.map(|r| DomainResolution {
        status: DomainResolutionStatus::ALL
            .into_iter()
            .find(|s| s.as_str() == r.status())
            .unwrap_or(DomainResolutionStatus::Failed),
        address_count: u32::try_from(r.address_count()).unwrap_or(u32::MAX),
    });
    Ok(json(&response))
}
