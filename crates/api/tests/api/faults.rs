//! Failures produced for real through the service's seams: an audit sink that fails, an engine
//! that is slow, busy or down, and the concurrency and capacity limits. Each is free.

use std::sync::Arc;
use std::time::Duration;

use periscope_service::Limits;
use periscope_state::DailyLimit;
use serde_json::json;

use crate::harness::{FailingAudit, Fault, Faulty, Options};

fn faulty(fault: Fault) -> Option<Arc<dyn periscope_index::ScanIndex>> {
    Some(Arc::new(Faulty(fault)))
}

api_test!(
    nothing_runs_without_its_audit_record,
    Options {
        audit: Some(Arc::new(FailingAudit)),
        ..Options::default()
    },
    |app| {
        app.post("/v1/search", json!({"query": "port:22"}))
            .await
            .assert_error(503, "audit_unavailable");
        app.post("/v1/search/count", json!({"query": "port:22"}))
            .await
            .assert_error(503, "audit_unavailable");
        app.post("/v1/hosts/detail", json!({"ip": "240.0.0.1"}))
            .await
            .assert_error(503, "audit_unavailable");
        assert_eq!(app.used().await, 0);
        // Routes outside the search capability do not audit.
        app.get("/v1/allowance", Some(&app.key)).await.ok();
    }
);

api_test!(
    a_slow_engine_times_out_free_of_charge,
    Options {
        index: faulty(Fault::Slow(Duration::from_millis(400))),
        // The timed-out work keeps its permit until it really ends, so allow a few at once.
        limits: Limits {
            time_budget: Duration::from_millis(100),
            searches_per_account: 10,
            ..Limits::default()
        },
        ..Options::default()
    },
    |app| {
        app.post("/v1/search", json!({"query": "port:22"}))
            .await
            .assert_error(504, "search_timeout");
        app.post("/v1/search/count", json!({"query": "port:22"}))
            .await
            .assert_error(504, "search_timeout");
        app.post("/v1/search/facets", json!({"query": "port:22"}))
            .await
            .assert_error(504, "facet_timeout");
        assert_eq!(app.used().await, 0);
    }
);

api_test!(
    a_busy_engine_answers_search_source_busy,
    Options {
        index: faulty(Fault::Busy),
        ..Options::default()
    },
    |app| {
        app.post("/v1/search", json!({"query": "port:22"}))
            .await
            .assert_error(503, "search_source_busy");
        app.post("/v1/search/exposure", json!({"query": "port:22"}))
            .await
            .assert_error(503, "search_source_busy");
        assert_eq!(app.used().await, 0);
    }
);

api_test!(
    a_failed_engine_answers_service_unavailable,
    Options {
        index: faulty(Fault::Down),
        ..Options::default()
    },
    |app| {
        app.post("/v1/search", json!({"query": "port:22"}))
            .await
            .assert_error(503, "service_unavailable");
        assert_eq!(app.used().await, 0);
    }
);

api_test!(
    an_account_runs_at_most_its_concurrent_searches,
    Options {
        index: faulty(Fault::Slow(Duration::from_millis(500))),
        limits: Limits {
            searches_per_account: 1,
            ..Limits::default()
        },
        ..Options::default()
    },
    |app| {
        let q = json!({"query": "port:22", "limit": 1});
        let (a, b) = tokio::join!(
            app.post("/v1/search", q.clone()),
            app.post("/v1/search", q.clone())
        );
        let mut got = [
            (a.status, a.body["code"].clone()),
            (b.status, b.body["code"].clone()),
        ];
        got.sort_by_key(|g| g.0);
        assert_eq!(got[0].0, 200);
        assert_eq!(got[1], (429, json!("user_concurrency_reached")));
        assert_eq!(app.used().await, 1);
        // Another account is not held back by it.
        let (_, other) = app
            .account("bob@example.com", DailyLimit::Limited(20))
            .await;
        let (a, b) = tokio::join!(
            app.post("/v1/search", q.clone()),
            app.post_as("/v1/search", Some(&other), q.clone())
        );
        assert_eq!((a.status, b.status), (200, 200));
    }
);

api_test!(
    the_service_declines_beyond_its_capacity,
    Options {
        index: faulty(Fault::Slow(Duration::from_millis(500))),
        limits: Limits {
            searches_total: 1,
            ..Limits::default()
        },
        ..Options::default()
    },
    |app| {
        let (_, other) = app
            .account("bob@example.com", DailyLimit::Limited(20))
            .await;
        let q = json!({"query": "port:22", "limit": 1});
        let (a, b) = tokio::join!(
            app.post("/v1/search", q.clone()),
            app.post_as("/v1/search", Some(&other), q.clone())
        );
        let mut got = [
            (a.status, a.body["code"].clone()),
            (b.status, b.body["code"].clone()),
        ];
        got.sort_by_key(|g| g.0);
        assert_eq!(got[0].0, 200);
        assert_eq!(got[1], (503, json!("search_capacity_exhausted")));
    }
);
