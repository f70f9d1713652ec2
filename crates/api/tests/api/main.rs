//! The JSON API, black-box over HTTP on loopback: every route and every error code of the
//! specification's table, each produced for real (failures are injected through the service's
//! seams, never by switching a code path off), and the races of the allowance, the cursors and
//! the concurrency limits; `openapi` snapshots the OpenAPI document as served. Every test runs
//! on a fresh SQLite database and on a fresh PostgreSQL database
//! (`periscope_state::testing::on_each_backend`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

/// Declares a test that starts a [`harness::TestApp`] (with `Options`, default if omitted) on
/// each backend and runs the body with it.
macro_rules! api_test {
    ($name:ident, |$app:ident| $body:block) => {
        api_test!($name, crate::harness::Options::default(), |$app| $body);
    };
    ($name:ident, $options:expr, |$app:ident| $body:block) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            crate::harness::on_each_backend(stringify!($name), |fixture| async move {
                #[allow(clippy::needless_update)]
                let $app = crate::harness::TestApp::start(&fixture, $options).await;
                $body
            })
            .await;
        }
    };
}

mod auth;
mod domain;
mod edge;
mod faults;
mod harness;
mod openapi;
mod races;
mod requests;
mod routes;
mod search;
