//! `POST /v1/search` and `GET /v1/allowance`: pages equal to the reference engine's, cursors
//! (one use, bound to query and limit), charging only on 200, the daily limit and its reset.

use std::net::IpAddr;

use periscope_index::{ScanIndex, SearchOutcome, SearchRequest};
use periscope_model::Timestamp;
use periscope_state::DailyLimit;
use serde_json::{Value, json};

use crate::harness::{HOSTS, Options, data, noon};

/// The reference engine's page of `query` after `after`.
fn expected(query: &str, after: Option<IpAddr>, limit: usize) -> (Vec<String>, bool) {
    let q = periscope_query::parse(query).unwrap();
    let SearchOutcome::Page(page) = data()
        .reference
        .search(&SearchRequest {
            query: &q,
            after,
            limit,
            resolved: &[],
            now: noon(),
        })
        .unwrap()
    else {
        panic!("too broad")
    };
    (
        page.hosts.iter().map(|h| h.host.ip.to_string()).collect(),
        page.has_more,
    )
}

fn ips(body: &Value) -> Vec<String> {
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ip"].as_str().unwrap().to_owned())
        .collect()
}

api_test!(pages_follow_the_reference_and_each_page_is_charged, |app| {
    let query = "port:22";
    let mut after = None;
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut body = json!({"query": query, "limit": 100});
        if let Some(c) = &cursor {
            body["cursor"] = json!(c);
        }
        let r = app.post("/v1/search", body).await;
        let page = r.ok();
        pages += 1;
        let (want, more) = expected(query, after, 100);
        assert_eq!(ips(page), want, "page {pages}");
        assert_eq!(page["allowance"]["used"], json!(pages));
        assert_eq!(page["allowance"]["remaining"], json!(20 - pages));
        assert_eq!(page["allowance"]["limit"], json!(20));
        assert_eq!(
            page["allowance"]["resets_at"],
            json!("2026-11-21T00:00:00Z")
        );
        assert!(page.get("domain_resolution").is_none());
        match page.get("next_cursor") {
            Some(c) => {
                assert!(more);
                let c = c.as_str().unwrap();
                assert!(c.starts_with("sc1_") && c.len() == 36, "{c}");
                cursor = Some(c.to_owned());
                after = want.last().map(|ip| ip.parse().unwrap());
            }
            None => {
                assert!(!more);
                break;
            }
        }
        assert!(pages < 20, "more pages than the allowance");
    }
    assert!(
        pages >= 2,
        "the dataset should give port:22 more than one page"
    );
    assert_eq!(app.used().await, pages);
});

api_test!(results_carry_the_host_fields_and_match_reasons, |app| {
    let r = app
        .post("/v1/search", json!({"query": "protocol:ssh", "limit": 5}))
        .await;
    let results = r.ok()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 5);
    let mut last: Option<IpAddr> = None;
    for host in &results {
        let ip: IpAddr = host["ip"].as_str().unwrap().parse().unwrap();
        assert!(last.is_none_or(|l| l < ip), "ascending");
        last = Some(ip);
        let services = host["services"]["items"].as_array().unwrap();
        assert!(services.len() <= 5);
        assert!(
            services[0]["match_reasons"]
                .as_array()
                .unwrap()
                .contains(&json!("protocol:ssh"))
        );
        for s in services {
            assert!(s["observed_at"].as_str().unwrap().ends_with('Z'));
        }
    }
});

api_test!(a_cursor_is_used_once_and_bound_to_query_and_limit, |app| {
    let first = app
        .post(
            "/v1/search",
            json!({"query": "protocol:ssh port:22", "limit": 2}),
        )
        .await;
    let cursor = first.ok()["next_cursor"].as_str().unwrap().to_owned();
    // Another limit, or another query: 422 on the cursor, and the cursor stays usable.
    app.post(
        "/v1/search",
        json!({"query": "protocol:ssh port:22", "limit": 3, "cursor": cursor}),
    )
    .await
    .assert_violations(&[("cursor", "query_mismatch")]);
    app.post(
        "/v1/search",
        json!({"query": "port:80", "limit": 2, "cursor": cursor}),
    )
    .await
    .assert_violations(&[("cursor", "query_mismatch")]);
    // The same query in another spelling continues it.
    let second = app
        .post(
            "/v1/search",
            json!({"query": "port:22 AND protocol:ssh", "limit": 2, "cursor": cursor}),
        )
        .await;
    let second_ips = ips(second.ok());
    assert_ne!(second_ips, ips(&first.body));
    // Used: 410, free.
    let used = app.used().await;
    app.post(
        "/v1/search",
        json!({"query": "protocol:ssh port:22", "limit": 2, "cursor": cursor}),
    )
    .await
    .assert_error(410, "cursor_gone");
    // Malformed: 422 invalid; unknown but well-formed: 410.
    app.post(
        "/v1/search",
        json!({"query": "port:22", "cursor": "sc1_short"}),
    )
    .await
    .assert_violations(&[("cursor", "invalid")]);
    let unknown = format!("sc1_{}", "A".repeat(32));
    app.post(
        "/v1/search",
        json!({"query": "port:22", "limit": 2, "cursor": unknown}),
    )
    .await
    .assert_error(410, "cursor_gone");
    // Another account cannot use it.
    let fresh = app
        .post("/v1/search", json!({"query": "port:22", "limit": 2}))
        .await;
    let cursor = fresh.ok()["next_cursor"].as_str().unwrap().to_owned();
    let (_, bob) = app
        .account("bob@example.com", DailyLimit::Limited(20))
        .await;
    app.post_as(
        "/v1/search",
        Some(&bob),
        json!({"query": "port:22", "limit": 2, "cursor": cursor}),
    )
    .await
    .assert_error(410, "cursor_gone");
    assert_eq!(app.used().await, used + 1);
});

api_test!(
    cursors_expire,
    Options {
        limits: periscope_service::Limits {
            cursor_lifetime: std::time::Duration::from_secs(60),
            ..Default::default()
        },
        ..Options::default()
    },
    |app| {
        let first = app
            .post("/v1/search", json!({"query": "port:22", "limit": 2}))
            .await;
        let cursor = first.ok()["next_cursor"].as_str().unwrap().to_owned();
        app.clock
            .set(Timestamp::from_unix(noon().unix() + 61).unwrap());
        app.post(
            "/v1/search",
            json!({"query": "port:22", "limit": 2, "cursor": cursor}),
        )
        .await
        .assert_error(410, "cursor_gone");
        assert_eq!(app.used().await, 1);
    }
);

api_test!(errors_are_free_and_empty_results_are_charged, |app| {
    // An invalid query and an invalid member are free (too-broad refusals: see
    // queries_naming_no_service_are_declined_when_too_broad).
    app.post("/v1/search", json!({"query": "port:"}))
        .await
        .assert_violations(&[("query", "invalid_port")]);
    app.post("/v1/search", json!({"query": "port:22", "limit": 0}))
        .await
        .assert_violations(&[("limit", "out_of_range")]);
    assert_eq!(app.used().await, 0);
    let empty = app
        .post("/v1/search", json!({"query": "240.255.255.254"}))
        .await;
    assert_eq!(empty.ok()["results"], json!([]));
    assert!(empty.body.get("next_cursor").is_none());
    assert_eq!(empty.body["allowance"]["used"], json!(1));
    assert_eq!(app.used().await, 1);
});

api_test!(
    the_daily_limit_is_enforced_and_resets_at_midnight_utc,
    |app| {
        let (account, key) = app.account("lim@example.com", DailyLimit::Limited(2)).await;
        let q = json!({"query": "port:443", "limit": 1});
        for used in 1..=2 {
            let r = app.post_as("/v1/search", Some(&key), q.clone()).await;
            assert_eq!(r.ok()["allowance"]["remaining"], json!(2 - used));
        }
        let r = app.post_as("/v1/search", Some(&key), q.clone()).await;
        r.assert_error(429, "search_limit_reached");
        assert!(
            r.body["message"]
                .as_str()
                .unwrap()
                .contains("2026-11-21T00:00:00Z")
        );
        // Free routes still answer; the allowance says 0 remaining.
        let a = app.get("/v1/allowance", Some(&key)).await;
        assert_eq!(
            a.ok()["allowance"],
            json!({"limit": 2, "used": 2, "remaining": 0, "resets_at": "2026-11-21T00:00:00Z"})
        );
        app.post_as("/v1/search/count", Some(&key), json!({"query": "port:443"}))
            .await
            .ok();
        // One second before midnight: still exhausted; at midnight: all back in one step.
        app.clock
            .set(Timestamp::parse("2026-11-20T23:59:59Z").unwrap());
        app.post_as("/v1/search", Some(&key), q.clone())
            .await
            .assert_error(429, "search_limit_reached");
        app.clock
            .set(Timestamp::parse("2026-11-21T00:00:00Z").unwrap());
        let a = app.get("/v1/allowance", Some(&key)).await;
        assert_eq!(
            a.ok()["allowance"],
            json!({"limit": 2, "used": 0, "remaining": 2, "resets_at": "2026-11-22T00:00:00Z"})
        );
        app.post_as("/v1/search", Some(&key), q).await.ok();
        assert_eq!(app.used_by(account.id).await, 1);
    }
);

api_test!(unlimited_accounts_carry_no_allowance, |app| {
    let (account, key) = app.account("free@example.com", DailyLimit::Unlimited).await;
    let a = app.get("/v1/allowance", Some(&key)).await;
    assert!(a.ok().get("allowance").is_none(), "{}", a.body);
    for _ in 0..3 {
        let r = app
            .post_as(
                "/v1/search",
                Some(&key),
                json!({"query": "port:22", "limit": 1}),
            )
            .await;
        assert!(r.ok().get("allowance").is_none());
    }
    assert_eq!(app.used_by(account.id).await, 0);
    // The allowance route never spends a search.
    let before = app.get("/v1/allowance", Some(&app.key)).await;
    let after = app.get("/v1/allowance", Some(&app.key)).await;
    assert_eq!(before.body["allowance"], after.body["allowance"]);
    assert_eq!(after.body["allowance"]["used"], json!(0));
});

api_test!(the_dataset_is_what_the_tests_think, |app| {
    let r = app
        .post("/v1/search/count", json!({"query": "port:22"}))
        .await;
    let n = r.ok()["unique_hosts"]["value"].as_u64().unwrap();
    assert!(n > 100 && n < HOSTS, "{n}");
    assert_eq!(r.body["unique_hosts"]["relation"], json!("exact"));
});

/// The dataset's engine with a `query_too_broad` threshold of 100 hosts.
fn narrow_engine() -> std::sync::Arc<dyn ScanIndex> {
    let reference = &data().reference;
    std::sync::Arc::new(
        periscope_index::EmbeddedIndex::build(
            periscope_index::IndexConfig {
                max_host_only_results: 100,
                ..Default::default()
            },
            noon(),
            reference.records().cloned(),
            reference.domain_scans().clone(),
        )
        .unwrap(),
    )
}

api_test!(
    queries_naming_no_service_are_declined_when_too_broad,
    Options {
        index: Some(narrow_engine()),
        ..Options::default()
    },
    |app| {
        // The most common country, read from the facets of a broad query.
        let facets = app
            .post("/v1/search/facets", json!({"query": "port:22"}))
            .await;
        let country = facets.ok()["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["field"] == "country")
            .unwrap()["items"][0]["value"]
            .as_str()
            .unwrap()
            .to_owned();
        let query = format!("country:{country}");
        let n = app
            .post("/v1/search/count", json!({"query": query}))
            .await
            .ok()["unique_hosts"]["value"]
            .as_u64()
            .unwrap();
        assert!(n > 100, "{country}: {n}");
        app.post("/v1/search", json!({"query": query}))
            .await
            .assert_violations(&[("query", "query_too_broad")]);
        // Naming a service makes it runnable.
        app.post("/v1/search", json!({"query": format!("{query} port:22")}))
            .await
            .ok();
        assert_eq!(app.used().await, 1);
    }
);
