//! The edge of every request: its id, the error body, the log line and the metrics, plus the
//! helpers handlers share to read the credential and the body.
//!
//! [`request_envelope`] wraps the whole router. It gives each request a fresh id (never one
//! the client sent, so ids in logs are ours), lets the handler run, renders an [`ApiError`]
//! the handler returned into the error shape with that id, sets `X-Request-ID`, and records
//! the route, status and latency (and logs them with the client's address). Handlers put the same id into their success bodies by
//! taking the [`RequestId`] extension.

use std::fmt::Write as _;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use periscope_api_types::ErrorCode;

use crate::error::ApiError;
use crate::{App, MAX_BODY_BYTES};

/// The response header carrying the request id.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The client's address as the server determined it (the peer, or the client behind a trusted
/// proxy), for the audit record; `None` when the server was not given one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub Option<std::net::IpAddr>);

/// The id of the request being answered (`request_id` in every body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub String);

impl RequestId {
    /// A fresh id: `req_` and 24 hexadecimal digits of randomness.
    pub fn generate() -> Self {
        let mut bytes = [0u8; 12];
        if getrandom::getrandom(&mut bytes).is_err() {
            // Without randomness, a process-wide counter still keeps ids distinct.
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            bytes[..8].copy_from_slice(&n.to_be_bytes());
        }
        let mut id = String::with_capacity(28);
        id.push_str("req_");
        for b in bytes {
            let _ = write!(id, "{b:02x}");
        }
        Self(id)
    }
}

/// The routes metrics are labelled with; anything else is `unmatched`.
const ROUTES: [&str; 11] = [
    "/v1/search/capabilities",
    "/v1/allowance",
    "/v1/search",
    "/v1/search/count",
    "/v1/search/facets",
    "/v1/search/exposure",
    "/v1/hosts/detail",
    "/v1/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
];

fn route_label(path: &str) -> &'static str {
    ROUTES
        .iter()
        .find(|r| **r == path)
        .copied()
        .unwrap_or("unmatched")
}

/// The middleware around every request (see the module documentation).
pub async fn request_envelope(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = RequestId::generate();
    let route = route_label(req.uri().path());
    let method = req.method().clone();
    // The peer address, or the client's behind a trusted proxy (`server`, `forwarded`).
    let client = req
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    req.extensions_mut().insert(id.clone());
    req.extensions_mut().insert(ClientAddr(client));
    let mut response = next.run(req).await;
    if let Some(error) = response.extensions_mut().remove::<ApiError>() {
        response = error.render(&id.0);
    }
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response.headers_mut().insert(X_REQUEST_ID.clone(), value);
    }
    let status = response.status().as_u16();
    let elapsed = started.elapsed();
    app.metrics.observe(route, status, elapsed);
    tracing::info!(
        request.id = %id.0,
        http.method = %method,
        http.route = route,
        http.status = status,
        client.ip = client.map(tracing::field::display),
        duration_ms = elapsed.as_secs_f64() * 1e3,
        "request"
    );
    response
}

/// 404 `not_found` for a path that is no route.
pub async fn not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound)
}

/// 405 `method_not_allowed` for a route asked with another method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed)
}

/// The API key of `Authorization: Bearer <key>`; `None` when the header is missing or not of
/// that form (the caller answers the same 401 for every case).
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, key) = value.split_once(' ')?;
    let key = key.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !key.is_empty() && !key.contains(char::is_whitespace))
        .then_some(key)
}

/// Reads a request body of at most [`MAX_BODY_BYTES`] (413 `body_too_large` beyond; 408
/// `request_timeout` when it does not arrive within the server's body time).
pub async fn read_body(headers: &HeaderMap, body: Body) -> Result<Bytes, ApiError> {
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(ApiError::new(ErrorCode::BodyTooLarge));
    }
    axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|e| {
            if crate::server::is_body_timeout(&e) {
                ApiError::new(ErrorCode::RequestTimeout)
            } else {
                ApiError::new(ErrorCode::BodyTooLarge)
            }
        })
}

/// A `GET` route takes no body: a non-empty one is refused (400 `invalid_json`).
pub async fn no_body(method: &Method, headers: &HeaderMap, body: Body) -> Result<(), ApiError> {
    let bytes = read_body(headers, body).await?;
    if bytes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::InvalidJson)
            .with_message(format!("{method} requests take no body")))
    }
}

/// The `Content-Type` header, if readable.
pub fn content_type(headers: &HeaderMap) -> Option<&str> {
    headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok())
}

/// A 200 response with a JSON body.
pub fn json(body: &impl serde::Serialize) -> Response {
    json_with_status(StatusCode::OK, body)
}

/// A response with a JSON body and `status`.
pub fn json_with_status(status: StatusCode, body: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (
            status,
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            bytes,
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a response could not be encoded");
            ApiError::new(ErrorCode::ServiceUnavailable).into_response()
        }
    }
}

/// Sets `Retry-After` to `secs` (at least 1).
pub fn retry_after(response: &mut Response, secs: u64) {
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(secs.max(1)));
}
