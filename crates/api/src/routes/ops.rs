//! The operational endpoints outside `/v1`: `/healthz` (the process answers), `/readyz` (it
//! can answer searches: the index is open and the state database answers) and `/metrics`
//! (Prometheus text). None needs a key; bind the server to an address only operators reach
//! if they must stay private.

use axum::extract::{Extension, State};
use axum::http::StatusCode;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::App;
use crate::edge::{RequestId, json, json_with_status};
use crate::metrics::{Gauges, Pool, Process};

#[derive(Serialize)]
struct Status<'a> {
    request_id: String,
    status: &'a str,
}

/// `GET /healthz`: 200 while the process serves.
pub async fn healthz(Extension(id): Extension<RequestId>) -> Response {
    json(&Status {
        request_id: id.0,
        status: "ok",
    })
}

/// `GET /readyz`: 200 when the index is open and the state database answers, else 503.
pub async fn readyz(State(app): State<App>, Extension(id): Extension<RequestId>) -> Response {
    let index = app.probe.ready();
    let state = app.service.state().ping().await.is_ok();
    let (status, word) = match (index, state) {
        (true, true) => (StatusCode::OK, "ready"),
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "index_unavailable"),
        (true, false) => (StatusCode::SERVICE_UNAVAILABLE, "state_unavailable"),
    };
    json_with_status(
        status,
        &Status {
            request_id: id.0,
            status: word,
        },
    )
}

/// `GET /metrics`: the Prometheus exposition.
pub async fn metrics(State(app): State<App>) -> Response {
    let text = app.metrics.render(Gauges {
        searches_charged: app.service.searches_charged(),
        searches_running: app.service.running(),
        index: app.probe.gauge(),
        pool: {
            let (open, idle) = app.service.state().pool_status();
            Pool { open, idle }
        },
        process: Process::read(),
    });
    (
        [(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response()
}
