//! The handlers, laid out like the URLs: `search` is `POST /v1/search`, `count` is
//! `POST /v1/search/count`, `detail` is `POST /v1/hosts/detail`, `ops` holds `/healthz`,
//! `/readyz` and `/metrics`. Each is thin: credential, rate, body, one call of the search
//! service, one response type of `periscope-api-types`.

pub mod allowance;
pub mod capabilities;
pub mod count;
pub mod detail;
pub mod exposure;
pub mod facets;
pub mod openapi;
pub mod ops;
pub mod search;

use std::time::Instant;

use axum::body::Body;
use axum::http::HeaderMap;
use periscope_api_types::{ErrorCode, RequestBody};
use periscope_service::Caller;

use crate::App;
use crate::edge::{ClientAddr, bearer, content_type, read_body};
use crate::error::ApiError;

/// The caller of `Authorization: Bearer <key>`, from `client` (kept in the audit record); the
/// same 401 for every failure.
pub(crate) async fn caller(
    app: &App,
    headers: &HeaderMap,
    client: ClientAddr,
) -> Result<Caller, ApiError> {
    let mut caller = app.service.caller_for_key(bearer(headers)).await?;
    caller.client = client.0;
    Ok(caller)
}

/// The caller of a free route: authenticated, then within its key's request rate.
pub(crate) async fn free_caller(
    app: &App,
    headers: &HeaderMap,
    client: ClientAddr,
) -> Result<Caller, ApiError> {
    let caller = caller(app, headers, client).await?;
    if let Some(key) = caller.key
        && let Err(wait) = app.rate.take(key, Instant::now())
    {
        return Err(ApiError::new(ErrorCode::RateLimited).with_retry_after(wait));
    }
    Ok(caller)
}

/// The JSON body of a `POST` route, decoded and checked member by member.
pub(crate) async fn body<T: RequestBody>(headers: &HeaderMap, body: Body) -> Result<T, ApiError> {
    let bytes = read_body(headers, body).await?;
    Ok(periscope_api_types::decode::<T>(
        content_type(headers),
        &bytes,
    )?)
}
