//! The OpenAPI document as `GET /v1/openapi.json` serves it, pretty-printed with its members
//! sorted (serde_json's map keeps them in name order: its `preserve_order` feature is off in
//! this workspace), compared with the insta snapshot `snapshots/api__openapi__openapi.snap`: a change
//! of the document — intended (a new member, a generated document, issue 18) or not — fails
//! here until the new snapshot is reviewed and accepted (`docs/testing.md`, "Snapshots").
//! Under `CI=true` insta writes nothing and a missing or different snapshot fails the test.
//! The document's structure (routes, error codes, `$ref`s, request schemas against the
//! decoder) is checked in `periscope-api-types`' `tests/openapi.rs`.

use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_matches_its_snapshot() {
    crate::harness::on_each_backend("openapi_snapshot", |fixture| async move {
        let app = crate::harness::TestApp::start(&fixture, Default::default()).await;
        let response = app
            .client
            .get(format!("{}/v1/openapi.json", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "application/json");
        let document: Value = response.json().await.unwrap();
        let pretty = serde_json::to_string_pretty(&document).unwrap();
        insta::assert_snapshot!("openapi", pretty);
    })
    .await;
}
