//! The JSON HTTP API of Periscope: the seven routes under `/v1`, the OpenAPI document, and the
//! operational endpoints `/healthz`, `/readyz` and `/metrics`, as one axum [`Router`].
//!
//! What holds for every route is done once, here and in [`edge`]: a request id in every body
//! and in the `X-Request-ID` header; JSON bodies only, at most 512 KiB, unknown members
//! refused (through `periscope-api-types`); the one error shape, with every failure mapped to
//! its code in [`error::ApiError`]; the identical 401 for any credential that does not
//! authenticate; a per-key request rate on the free routes ([`rate`]); request metrics
//! ([`metrics`]). The routes themselves ([`routes`]) are thin: decode, call the search
//! service, encode.
//!
//! A request is checked in this order: route and method (404, 405), credential (401), the
//! per-key rate (429 `rate_limited`, free routes), the body's shape (413, 400, 422 on members),
//! then the search service's own steps (account, query, audit, admission, allowance, run).
//! Reference: `docs/api.md`.

pub mod edge;
pub mod error;
pub mod forwarded;
pub mod metrics;
pub mod rate;
pub mod routes;
pub mod server;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use periscope_service::SearchService;

pub use error::ApiError;
pub use metrics::Metrics;
pub use rate::RateLimit;

/// The largest request body, in bytes (512 KiB).
pub const MAX_BODY_BYTES: usize = 512 * 1024;

/// What the operational endpoints report about the scan index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexGauge {
    /// Hosts in the snapshot answering now.
    pub hosts: u64,
    /// Current services in it.
    pub services: u64,
    /// The store generation it was built from.
    pub generation: u64,
}

/// Reads the index gauge and readiness from whatever holds the index (the server's
/// `LiveIndex`).
pub trait IndexProbe: Send + Sync {
    /// The index as it answers now.
    fn gauge(&self) -> IndexGauge;
    /// Whether searches can be answered (the index is open).
    fn ready(&self) -> bool;
}

/// Everything the handlers share.
#[derive(Clone)]
pub struct App {
    /// The search service.
    pub service: SearchService,
    /// Request metrics.
    pub metrics: Arc<Metrics>,
    /// The per-key rate of the free routes.
    pub rate: Arc<RateLimit>,
    /// The index, for `/readyz` and `/metrics`.
    pub probe: Arc<dyn IndexProbe>,
}

impl App {
    /// An app over `service` with the given rate limit and index probe.
    pub fn new(service: SearchService, rate: RateLimit, probe: Arc<dyn IndexProbe>) -> Self {
        Self {
            service,
            metrics: Arc::new(Metrics::default()),
            rate: Arc::new(rate),
            probe,
        }
    }
}

/// The whole HTTP surface.
pub fn router(app: App) -> Router {
    let v1 = Router::new()
        .route("/v1/search/capabilities", get(routes::capabilities::get))
        .route("/v1/allowance", get(routes::allowance::get))
        .route("/v1/search", post(routes::search::post))
        .route("/v1/search/count", post(routes::count::post))
        .route("/v1/search/facets", post(routes::facets::post))
        .route("/v1/search/exposure", post(routes::exposure::post))
        .route("/v1/hosts/detail", post(routes::detail::post))
        .route("/v1/openapi.json", get(routes::openapi::get))
        .route("/healthz", get(routes::ops::healthz))
        .route("/readyz", get(routes::ops::readyz))
        .route("/metrics", get(routes::ops::metrics));
    v1.method_not_allowed_fallback(edge::method_not_allowed)
        .fallback(edge::not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            edge::request_envelope,
        ))
        .with_state(app)
}
