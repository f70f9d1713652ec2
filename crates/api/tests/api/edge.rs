//! Refusals at the edge (issue 13 item 6), as rows of one table: every one carries the error
//! shape with the request id of its `X-Request-ID`, and the headers its status calls for
//! (`WWW-Authenticate: Bearer` on a 401; `Strict-Transport-Security` when the public URL is
//! https). Then: a revoked key and an unknown one cost the same.

use std::time::{Duration, Instant};

use periscope_state::DailyLimit;

use crate::harness::{Options, TestApp, noon};

/// One raw request: method, path, extra headers, body.
struct Row {
    what: &'static str,
    method: reqwest::Method,
    path: &'static str,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    status: u16,
    code: &'static str,
}

fn row(
    what: &'static str,
    method: &str,
    path: &'static str,
    status: u16,
    code: &'static str,
) -> Row {
    Row {
        what,
        method: method.parse().unwrap(),
        path,
        headers: Vec::new(),
        body: Vec::new(),
        status,
        code,
    }
}

impl Row {
    fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
}

async fn check(app: &TestApp, rows: Vec<Row>, hsts: bool) {
    // A connection per request: a refused body leaves its connection unusable.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for r in rows {
        let mut req = client
            .request(r.method.clone(), format!("{}{}", app.base, r.path))
            .body(r.body.clone());
        for (name, value) in &r.headers {
            req = req.header(name.as_str(), value.as_str());
        }
        let reply = crate::harness::reply(req.send().await.unwrap()).await;
        assert_eq!(
            (reply.status, reply.code()),
            (r.status, r.code),
            "{}: {}",
            r.what,
            reply.body
        );
        let auth = reply.header("www-authenticate");
        if r.status == 401 {
            assert_eq!(auth, Some("Bearer realm=\"periscope\""), "{}", r.what);
        } else {
            assert_eq!(auth, None, "{}", r.what);
        }
        assert_eq!(
            reply.header("strict-transport-security"),
            hsts.then_some("max-age=31536000"),
            "{}",
            r.what
        );
    }
}

fn rows(key: &str) -> Vec<Row> {
    let bearer = format!("Bearer {key}");
    let many: Vec<(String, String)> = (0..150)
        .map(|i| (format!("x-filler-{i}"), "1".to_owned()))
        .collect();
    let mut too_many = row(
        "150 header lines",
        "GET",
        "/healthz",
        431,
        "headers_too_large",
    );
    too_many.headers = many;
    vec![
        row("no key", "GET", "/v1/allowance", 401, "unauthorized"),
        row("unknown key", "GET", "/v1/allowance", 401, "unauthorized")
            .header("authorization", "Bearer psk_unknown"),
        row("no route", "GET", "/v2/nothing", 404, "not_found"),
        row(
            "wrong method",
            "DELETE",
            "/v1/search",
            405,
            "method_not_allowed",
        ),
        row(
            "declared body over 512 KiB",
            "POST",
            "/v1/search",
            413,
            "body_too_large",
        )
        .header("authorization", bearer.clone())
        .header("content-type", "application/json")
        .body(vec![b' '; 600 * 1024]),
        row(
            "a 20 KiB header",
            "GET",
            "/healthz",
            431,
            "headers_too_large",
        )
        .header("x-big", "a".repeat(20 * 1024)),
        too_many,
        row(
            "garbage punycode",
            "POST",
            "/v1/search",
            422,
            "validation_failed",
        )
        .header("authorization", bearer.clone())
        .header("content-type", "application/json")
        .body(r#"{"query":"domain:xn--a.example"}"#),
        row(
            "garbage punycode TLD",
            "POST",
            "/v1/search",
            422,
            "validation_failed",
        )
        .header("authorization", bearer)
        .header("content-type", "application/json")
        .body(r#"{"query":"domain:example.xn--zz"}"#),
    ]
}

api_test!(every_edge_refusal_has_the_error_shape, |app| {
    check(&app, rows(&app.key), false).await;
    // The refused punycode searches were not charged.
    assert_eq!(app.used().await, 0);
});

api_test!(
    hsts_when_the_public_url_is_https,
    Options {
        server: periscope_api::server::Settings {
            hsts: true,
            ..periscope_api::server::Settings::default()
        },
        ..Options::default()
    },
    |app| {
        check(&app, rows(&app.key), true).await;
        let ok = app.get("/healthz", None).await;
        assert_eq!(ok.status, 200);
        assert_eq!(
            ok.header("strict-transport-security"),
            Some("max-age=31536000")
        );
    }
);

// A revoked key and a well-formed key never issued do the same work (one indexed lookup that
// finds no usable row) and answer in the same time: medians of interleaved requests within
// a quarter of each other (or half a millisecond).
api_test!(revoked_and_unknown_keys_answer_in_the_same_time, |app| {
    let (other, revoked) = app
        .account("other@example.com", DailyLimit::Unlimited)
        .await;
    let id = app.state.keys_of(other.id).await.unwrap()[0].id;
    assert!(app.state.revoke_key(other.id, id, noon()).await.unwrap());
    // Well-formed (checksum included) but never issued here: a key of another database.
    let elsewhere = std::env::temp_dir().join(format!("periscope-edge-{}", std::process::id()));
    let unknown = {
        let other = periscope_state::State::open_sqlite(&elsewhere)
            .await
            .unwrap();
        let mut new = periscope_state::NewAccount::new(
            periscope_state::Email::parse("x@example.com").unwrap(),
            "X",
        );
        new.daily_limit = DailyLimit::Unlimited;
        let account = match other.create_account(&new, noon()).await {
            Ok(account) => account,
            Err(_) => other.account_by_email(&new.email).await.unwrap().unwrap(),
        };
        let (key, _) = other.create_key(account.id, None, noon()).await.unwrap();
        other.close().await;
        key.expose().to_owned()
    };
    let _ = std::fs::remove_dir_all(&elsewhere);
    let time = |key: String| {
        let app = &app;
        async move {
            let started = Instant::now();
            let r = app.get("/v1/allowance", Some(&key)).await;
            r.assert_error(401, "unauthorized");
            started.elapsed()
        }
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        time(revoked.clone()).await;
        time(unknown.clone()).await;
    }
    for _ in 0..150 {
        a.push(time(revoked.clone()).await);
        b.push(time(unknown.clone()).await);
    }
    a.sort();
    b.sort();
    let (ma, mb) = (a[a.len() / 2], b[b.len() / 2]);
    let gap = ma.abs_diff(mb);
    eprintln!("401 medians: revoked {ma:?}, unknown {mb:?}");
    assert!(
        gap <= Duration::from_micros(500).max(ma.max(mb) / 4),
        "revoked median {ma:?}, unknown median {mb:?}"
    );
});
