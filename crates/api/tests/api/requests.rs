//! Request bodies: JSON only, at most 512 KiB, documented members only, each member checked,
//! GET without a body.

use serde_json::json;

api_test!(bodies_that_are_not_json_answer_invalid_json, |app| {
    let key = Some(app.key.as_str());
    for (ct, body) in [
        (Some("application/json"), b"{\"query\":".to_vec()),
        (Some("application/json"), b"".to_vec()),
        (Some("text/plain"), b"{\"query\":\"port:22\"}".to_vec()),
        (None, b"{\"query\":\"port:22\"}".to_vec()),
    ] {
        app.post_raw("/v1/search/count", key, ct, body)
            .await
            .assert_error(400, "invalid_json");
    }
    // A charset parameter is fine.
    app.post_raw(
        "/v1/search/count",
        key,
        Some("application/json; charset=utf-8"),
        b"{\"query\":\"port:22\"}".to_vec(),
    )
    .await
    .ok();
    // GET takes no body.
    let r = app
        .client
        .get(format!("{}/v1/allowance", app.base))
        .bearer_auth(&app.key)
        .body("{}")
        .send()
        .await
        .unwrap();
    crate::harness::reply(r)
        .await
        .assert_error(400, "invalid_json");
    assert_eq!(app.used().await, 0);
});

api_test!(bodies_over_512_kib_answer_413, |app| {
    let filler = "a".repeat(512 * 1024);
    let body = serde_json::to_vec(&json!({"query": "port:22", "pad": filler})).unwrap();
    app.post_raw("/v1/search", Some(&app.key), Some("application/json"), body)
        .await
        .assert_error(413, "body_too_large");
});

api_test!(members_are_checked_one_by_one, |app| {
    app.post("/v1/search", json!({"query": "port:22", "foo": 1}))
        .await
        .assert_violations(&[("foo", "unknown_field")]);
    app.post("/v1/search", json!({"limit": 5}))
        .await
        .assert_violations(&[("query", "required")]);
    app.post("/v1/search", json!({"query": 22}))
        .await
        .assert_violations(&[("query", "wrong_type")]);
    app.post("/v1/search", json!({"query": "port:22", "limit": 101}))
        .await
        .assert_violations(&[("limit", "out_of_range")]);
    app.post("/v1/search", json!({"query": "port:22", "limit": "5"}))
        .await
        .assert_violations(&[("limit", "wrong_type")]);
    app.post("/v1/search", json!({"query": "x".repeat(513)}))
        .await
        .assert_violations(&[("query", "too_long")]);
    app.post(
        "/v1/search/exposure",
        json!({"query": "port:22", "resolution": 4}),
    )
    .await
    .assert_violations(&[("resolution", "wrong_type")]);
    app.post("/v1/hosts/detail", json!({"limit": 2}))
        .await
        .assert_violations(&[("ip", "required")]);
    // The query language's own violations.
    app.post("/v1/search", json!({"query": "port:22 OR port:23"}))
        .await
        .assert_violations(&[("query", "unsupported_operator")]);
    app.post("/v1/search", json!({"query": "240.0.0.0/16"}))
        .await
        .assert_violations(&[("query", "cidr_too_broad")]);
    assert_eq!(app.used().await, 0);
});
