//! Races: the allowance is exact under concurrency, a cursor is used once however many
//! requests race for it, and the concurrency limits hold under parallel load.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use periscope_service::Limits;
use periscope_state::{Charge, DailyLimit, UtcDay};
use serde_json::json;

use crate::harness::{Options, TestApp};

/// Limits high enough that only the allowance decides.
fn roomy() -> Options {
    Options {
        limits: Limits {
            searches_per_account: 1_000,
            searches_total: 1_000,
            ..Limits::default()
        },
        ..Options::default()
    }
}

async fn concurrent_searches(app: &TestApp, key: &str, n: usize) -> Vec<u16> {
    let mut tasks = Vec::new();
    for _ in 0..n {
        let client = app.client.clone();
        let url = format!("{}/v1/search", app.base);
        let key = key.to_owned();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"query": "port:22", "limit": 1}))
                .send()
                .await
                .unwrap();
            let reply = crate::harness::reply(r).await;
            if reply.status != 200 {
                reply.assert_error(429, "search_limit_reached");
            }
            reply.status
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses
}

api_test!(
    hundred_concurrent_searches_with_twenty_remaining,
    roomy(),
    |app| {
        let statuses = concurrent_searches(&app, &app.key, 100).await;
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 20);
        assert_eq!(app.used().await, 20);
    }
);

api_test!(ten_concurrent_searches_with_one_remaining, roomy(), |app| {
    let day = UtcDay::of(app.clock_now());
    for _ in 0..19 {
        assert!(matches!(
            app.state.charge(app.account.id, day, 20).await.unwrap(),
            Charge::Charged(_)
        ));
    }
    let statuses = concurrent_searches(&app, &app.key, 10).await;
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1);
    assert_eq!(app.used().await, 20);
});

api_test!(a_cursor_raced_twice_answers_once, roomy(), |app| {
    let first = app
        .post("/v1/search", json!({"query": "port:22", "limit": 2}))
        .await;
    let cursor = first.ok()["next_cursor"].as_str().unwrap().to_owned();
    let body = json!({"query": "port:22", "limit": 2, "cursor": cursor});
    let (a, b) = tokio::join!(
        app.post("/v1/search", body.clone()),
        app.post("/v1/search", body.clone())
    );
    let mut got = [
        (a.status, a.body["code"].clone()),
        (b.status, b.body["code"].clone()),
    ];
    got.sort_by_key(|g| g.0);
    assert_eq!(got[0].0, 200);
    assert_eq!(got[1], (410, json!("cursor_gone")));
    assert_eq!(app.used().await, 2);
});

/// The dataset's engine, counting how many calls run at once.
struct Gauge {
    now: AtomicU32,
    max: AtomicU32,
}

struct Measured(Arc<Gauge>);

impl Measured {
    fn enter(&self) -> impl Drop + '_ {
        let n = self.0.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.0.max.fetch_max(n, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        struct Leave<'a>(&'a Gauge);
        impl Drop for Leave<'_> {
            fn drop(&mut self) {
                self.0.now.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Leave(&self.0)
    }
}

impl periscope_index::ScanIndex for Measured {
    fn search(
        &self,
        req: &periscope_index::SearchRequest<'_>,
    ) -> Result<periscope_index::SearchOutcome, periscope_index::IndexError> {
        let _in = self.enter();
        crate::harness::data().engine.search(req)
    }
    fn count(
        &self,
        query: &periscope_query::Query,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Count, periscope_index::IndexError> {
        let _in = self.enter();
        crate::harness::data().engine.count(query, now)
    }
    fn facets(
        &self,
        query: &periscope_query::FilterQuery,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Facets, periscope_index::IndexError> {
        crate::harness::data().engine.facets(query, now)
    }
    fn exposure(
        &self,
        query: &periscope_query::Query,
        resolution: periscope_query::Resolution,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Exposure, periscope_index::IndexError> {
        crate::harness::data()
            .engine
            .exposure(query, resolution, now)
    }
    fn domain_scans_of_name(
        &self,
        name: &periscope_model::DomainName,
    ) -> Result<Vec<periscope_model::observation::DomainScan>, periscope_index::IndexError> {
        crate::harness::data().engine.domain_scans_of_name(name)
    }
    fn domain_scans_of_address(
        &self,
        ip: std::net::IpAddr,
    ) -> Result<Vec<periscope_model::observation::DomainScan>, periscope_index::IndexError> {
        crate::harness::data().engine.domain_scans_of_address(ip)
    }
    fn host_detail(
        &self,
        ip: std::net::IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: periscope_model::Timestamp,
    ) -> Result<Option<periscope_index::HostDetail>, periscope_index::IndexError> {
        crate::harness::data()
            .engine
            .host_detail(ip, continuation, limit, now)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_hold_under_parallel_load() {
    crate::harness::on_each_backend("limits_hold_under_parallel_load", |fixture| async move {
        let gauge = Arc::new(Gauge {
            now: AtomicU32::new(0),
            max: AtomicU32::new(0),
        });
        let options = Options {
            index: Some(Arc::new(Measured(Arc::clone(&gauge)))),
            limits: Limits {
                searches_per_account: 2,
                searches_total: 3,
                ..Limits::default()
            },
            ..Options::default()
        };
        let app = TestApp::start(&fixture, options).await;
        let mut keys = vec![app.key.clone()];
        for i in 0..3 {
            keys.push(
                app.account(&format!("u{i}@example.com"), DailyLimit::Unlimited)
                    .await
                    .1,
            );
        }
        let mut tasks = Vec::new();
        for round in 0..6 {
            for key in &keys {
                let client = app.client.clone();
                let url = format!("{}/v1/search/count", app.base);
                let key = key.clone();
                tasks.push(tokio::spawn(async move {
                    let _ = round;
                    let r = client
                        .post(url)
                        .bearer_auth(key)
                        .json(&json!({"query": "port:22"}))
                        .send()
                        .await
                        .unwrap();
                    crate::harness::reply(r).await
                }));
            }
        }
        let mut answered = 0;
        for t in tasks {
            let reply = t.await.unwrap();
            match reply.status {
                200 => answered += 1,
                429 => reply.assert_error(429, "user_concurrency_reached"),
                503 => reply.assert_error(503, "search_capacity_exhausted"),
                other => panic!("unexpected {other}: {}", reply.body),
            }
        }
        assert!(answered >= 1);
        let max = gauge.max.load(Ordering::SeqCst);
        assert!((1..=3).contains(&max), "at most 3 ran at once, saw {max}");
    })
    .await;
}

/// The dataset's engine, slow on the searches of one query only.
struct SlowOn(&'static str, Duration);

impl periscope_index::ScanIndex for SlowOn {
    fn search(
        &self,
        req: &periscope_index::SearchRequest<'_>,
    ) -> Result<periscope_index::SearchOutcome, periscope_index::IndexError> {
        if req.query.to_string() == self.0 {
            std::thread::sleep(self.1);
        }
        crate::harness::data().engine.search(req)
    }
    fn count(
        &self,
        query: &periscope_query::Query,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Count, periscope_index::IndexError> {
        crate::harness::data().engine.count(query, now)
    }
    fn facets(
        &self,
        query: &periscope_query::FilterQuery,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Facets, periscope_index::IndexError> {
        crate::harness::data().engine.facets(query, now)
    }
    fn exposure(
        &self,
        query: &periscope_query::Query,
        resolution: periscope_query::Resolution,
        now: periscope_model::Timestamp,
    ) -> Result<periscope_index::Exposure, periscope_index::IndexError> {
        crate::harness::data()
            .engine
            .exposure(query, resolution, now)
    }
    fn domain_scans_of_name(
        &self,
        name: &periscope_model::DomainName,
    ) -> Result<Vec<periscope_model::observation::DomainScan>, periscope_index::IndexError> {
        crate::harness::data().engine.domain_scans_of_name(name)
    }
    fn domain_scans_of_address(
        &self,
        ip: std::net::IpAddr,
    ) -> Result<Vec<periscope_model::observation::DomainScan>, periscope_index::IndexError> {
        crate::harness::data().engine.domain_scans_of_address(ip)
    }
    fn host_detail(
        &self,
        ip: std::net::IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: periscope_model::Timestamp,
    ) -> Result<Option<periscope_index::HostDetail>, periscope_index::IndexError> {
        crate::harness::data()
            .engine
            .host_detail(ip, continuation, limit, now)
    }
}

/// Sets the default account's use today to `used` (of 20).
async fn use_up_to(app: &TestApp, used: u32) {
    let day = UtcDay::of(app.clock_now());
    while app.used().await > used {
        app.state.refund(app.account.id, day).await.unwrap();
    }
    while app.used().await < used {
        assert!(matches!(
            app.state.charge(app.account.id, day, 20).await.unwrap(),
            Charge::Charged(_)
        ));
    }
}

// A search that will end up free (here: one that overruns the time budget) is in flight while
// a valid search asks for the last unit: the valid one is answered, and the free one charged
// nothing. (Before the charge moved last, the free one reserved the last unit while it ran and
// the valid one was refused with `search_limit_reached` in every round.)
api_test!(
    a_free_search_in_flight_never_refuses_a_paying_one,
    Options {
        index: Some(Arc::new(SlowOn("port:23", Duration::from_millis(1_500)))),
        limits: Limits {
            searches_per_account: 1_000,
            searches_total: 1_000,
            time_budget: Duration::from_millis(600),
            ..Limits::default()
        },
        ..Options::default()
    },
    |app| {
        for round in 0..5 {
            use_up_to(&app, 19).await;
            let slow = {
                let (client, base, key) = (app.client.clone(), app.base.clone(), app.key.clone());
                tokio::spawn(async move {
                    let r = client
                        .post(format!("{base}/v1/search"))
                        .bearer_auth(key)
                        .json(&json!({"query": "port:23", "limit": 1}))
                        .send()
                        .await
                        .unwrap();
                    crate::harness::reply(r).await
                })
            };
            tokio::time::sleep(Duration::from_millis(200)).await;
            let paying = app
                .post("/v1/search", json!({"query": "port:22", "limit": 1}))
                .await;
            assert_eq!(paying.status, 200, "round {round}: {}", paying.body);
            assert_eq!(paying.body["allowance"]["used"], 20, "round {round}");
            slow.await.unwrap().assert_error(504, "search_timeout");
            assert_eq!(app.used().await, 20, "round {round}: the timeout is free");
        }
    }
);

// A replayed cursor (410, free) races a valid search for the last unit, 20 times: the valid
// search is always answered.
api_test!(
    a_replayed_cursor_never_takes_the_last_unit,
    roomy(),
    |app| {
        let first = app
            .post("/v1/search", json!({"query": "port:22", "limit": 1}))
            .await;
        let cursor = first.ok()["next_cursor"].as_str().unwrap().to_owned();
        let replay = json!({"query": "port:22", "limit": 1, "cursor": cursor});
        app.post("/v1/search", replay.clone()).await.ok();
        for round in 0..20 {
            use_up_to(&app, 19).await;
            let (stale, paying) = tokio::join!(
                app.post("/v1/search", replay.clone()),
                app.post("/v1/search", json!({"query": "port:443", "limit": 1}))
            );
            // Free either way: gone, or (when the paying search already took the last unit)
            // refused by the look at the allowance before the cursor.
            assert!(
                [(410, "cursor_gone"), (429, "search_limit_reached")]
                    .contains(&(stale.status, stale.code())),
                "round {round}: {}",
                stale.body
            );
            assert_eq!(paying.status, 200, "round {round}: {}", paying.body);
            assert_eq!(app.used().await, 20, "round {round}");
        }
    }
);

// An exhausted allowance refuses before the cursor is taken: the cursor still serves its page
// once a unit is free again.
api_test!(
    an_exhausted_allowance_leaves_the_cursor_usable,
    roomy(),
    |app| {
        let first = app
            .post("/v1/search", json!({"query": "port:22", "limit": 1}))
            .await;
        let cursor = first.ok()["next_cursor"].as_str().unwrap().to_owned();
        use_up_to(&app, 20).await;
        let next = json!({"query": "port:22", "limit": 1, "cursor": cursor});
        app.post("/v1/search", next.clone())
            .await
            .assert_error(429, "search_limit_reached");
        use_up_to(&app, 19).await;
        let second = app.post("/v1/search", next).await;
        assert!(second.ok()["next_cursor"].is_string());
        assert_eq!(app.used().await, 20);
    }
);
