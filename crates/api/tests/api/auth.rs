//! Authentication: one identical 401 for a missing, malformed, unknown or revoked key; the
//! account checks in the specification's order; the per-key rate of the free routes.

use periscope_state::{Access, DailyLimit, Plan};
use serde_json::json;

use crate::harness::{Options, noon};

/// The key with its last character changed (so its checksum no longer matches).
fn tampered(key: &str) -> String {
    let (head, last) = key.split_at(key.len() - 1);
    format!("{head}{}", if last == "A" { "B" } else { "A" })
}

api_test!(every_bad_credential_answers_the_same_401, |app| {
    // A well-formed key that was issued and then revoked.
    let (other, revoked) = app
        .account("other@example.com", DailyLimit::Unlimited)
        .await;
    let key_id = app.state.keys_of(other.id).await.unwrap()[0].id;
    assert!(
        app.state
            .revoke_key(other.id, key_id, noon())
            .await
            .unwrap()
    );
    let mut bodies = Vec::new();
    for path in ["/v1/search/capabilities", "/v1/allowance"] {
        let r = app.get(path, None).await;
        r.assert_error(401, "unauthorized");
        bodies.push(r.body.clone());
    }
    let cases: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("not bearer", Some(format!("Basic {}", app.key))),
        ("no key", Some("Bearer".to_owned())),
        ("malformed", Some("Bearer psk_nope".to_owned())),
        ("revoked", Some(format!("Bearer {revoked}"))),
        ("tampered", Some(format!("Bearer {}", tampered(&app.key)))),
    ];
    for (what, header) in cases {
        let mut req = app
            .client
            .post(format!("{}/v1/search/count", app.base))
            .header("content-type", "application/json")
            .body(r#"{"query":"port:22"}"#);
        if let Some(h) = header {
            req = req.header("authorization", h);
        }
        let r = crate::harness::reply(req.send().await.unwrap()).await;
        assert_eq!(
            (r.status, r.code()),
            (401, "unauthorized"),
            "{what}: {}",
            r.body
        );
        bodies.push(r.body.clone());
    }
    for b in &mut bodies {
        b.as_object_mut().unwrap().remove("request_id");
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
});

api_test!(revocation_takes_effect_on_the_next_request, |app| {
    app.post("/v1/search/count", json!({"query": "port:22"}))
        .await
        .ok();
    let key = app.state.keys_of(app.account.id).await.unwrap()[0].id;
    assert!(
        app.state
            .revoke_key(app.account.id, key, noon())
            .await
            .unwrap()
    );
    app.post("/v1/search/count", json!({"query": "port:22"}))
        .await
        .assert_error(401, "unauthorized");
});

api_test!(account_checks_come_in_the_specified_order, |app| {
    let q = json!({"query": "port:22"});
    // Expired plan: 402.
    let past = periscope_model::Timestamp::from_unix(noon().unix() - 1).unwrap();
    app.state
        .set_plan(app.account.id, Plan::ExpiresAt(past))
        .await
        .unwrap();
    app.post("/v1/search", q.clone())
        .await
        .assert_error(402, "plan_expired");
    // Inactive comes first: 403 even with the plan expired.
    app.state
        .set_access(app.account.id, Access::Inactive)
        .await
        .unwrap();
    app.post("/v1/search", q.clone())
        .await
        .assert_error(403, "account_inactive");
    app.post("/v1/search/count", q.clone())
        .await
        .assert_error(403, "account_inactive");
    app.state
        .set_access(app.account.id, Access::Active)
        .await
        .unwrap();
    // A plan that expires later is current.
    let later = periscope_model::Timestamp::from_unix(noon().unix() + 60).unwrap();
    app.state
        .set_plan(app.account.id, Plan::ExpiresAt(later))
        .await
        .unwrap();
    app.post("/v1/search/count", q.clone()).await.ok();
    // Two organisations: 400 organization_required; none: the same.
    app.state
        .join_organisation(app.account.id, "Second Org", noon())
        .await
        .unwrap();
    app.post("/v1/search", q.clone())
        .await
        .assert_error(400, "organization_required");
    for org in app.state.organisations_of(app.account.id).await.unwrap() {
        app.state
            .leave_organisation(app.account.id, org.id)
            .await
            .unwrap();
    }
    app.post("/v1/hosts/detail", json!({"ip": "240.0.0.1"}))
        .await
        .assert_error(400, "organization_required");
    // None of these were charged.
    assert_eq!(app.used().await, 0);
});

api_test!(
    an_unreadable_plan_is_a_service_side_503,
    Options {
        plans: Some(std::sync::Arc::new(crate::harness::UnreadablePlans)),
        ..Options::default()
    },
    |app| {
        app.post("/v1/search", json!({"query": "port:22"}))
            .await
            .assert_error(503, "commercial_access_unavailable");
        assert_eq!(app.used().await, 0);
    }
);

api_test!(
    free_routes_are_rate_limited_per_key,
    Options {
        rate: (1, 3),
        ..Options::default()
    },
    |app| {
        for _ in 0..3 {
            app.get("/v1/allowance", Some(&app.key)).await.ok();
        }
        let r = app
            .post("/v1/search/count", json!({"query": "port:22"}))
            .await;
        r.assert_error(429, "rate_limited");
        let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=2).contains(&wait), "{wait}");
        // Another key has its own bucket; the metered route is bounded by the allowance.
        let (_, other) = app
            .account("bob@example.com", DailyLimit::Limited(20))
            .await;
        app.get("/v1/allowance", Some(&other)).await.ok();
        app.post("/v1/search", json!({"query": "port:22", "limit": 1}))
            .await
            .ok();
    }
);
