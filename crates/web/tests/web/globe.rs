//! The Globe view (spec §12) over the synthetic index. Over HTTP: `GET /app/exposure` answers,
//! at each resolution, what the API's `SearchService::exposure` answers for the same query,
//! free of charge; domain searches, a bad resolution and a missing session are refused in the
//! spec's words; the Globe section and its assets are served, and a domain search in the Globe
//! returns to Results. In Chromium (`tests/browser/globe.mjs`): the levels requested as the
//! globe zooms, the cache, a failing or hanging finer level (its notice over the map, in view at
//! 1280x900), the labels (in the list, and over the map on hover and focus), a cluster leading
//! to its hosts, staying in the Globe; the searched hosts in view at every level for data far
//! from where the globe used to look (a host in Sydney, `country:AU`), the wheel zooming toward
//! the pointer and the buttons toward the largest cluster.

use periscope_api_types::ExposureResponse;
use periscope_model::Timestamp;
use periscope_service::{Caller, ExposureRequest};
use periscope_state::testing::on_each_backend;
use periscope_state::{Channel, UtcDay};
use serde_json::Value;

use crate::browser::{artifacts, converse, node_suite, ready};
use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::search::{data, service};
use crate::support::*;

fn exposure_url(app: &App, q: &str, resolution: &str) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("q", q);
    s.append_pair("resolution", resolution);
    app.url(&format!("/app/exposure?{}", s.finish()))
}

fn without_request_id(mut v: Value) -> Value {
    let id = v
        .as_object_mut()
        .and_then(|o| o.remove("request_id"))
        .expect("a request_id");
    assert!(id.as_str().is_some_and(|s| !s.is_empty()), "{id}");
    v
}

fn body(page: &Page) -> Value {
    assert_eq!(
        page.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/json"),
        "{}",
        page.body
    );
    serde_json::from_str(&page.body).unwrap_or_else(|e| panic!("{e}: {}", page.body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exposure_route_answers_the_api_exposure_free_of_charge() {
    on_each_backend("web_globe", |fixture| async move {
        let app = App::embedded_searching(&fixture, service(&fixture)).await;
        let browser = Browser::new();
        let (email, password) = ("gil@example.com", "a long enough password 3");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
        let account = account_of(&fixture.state, email).await;
        let today = UtcDay::of(Timestamp::from_unix(real_now()).unwrap());
        let used_before = fixture.state.used(account.id, today).await.unwrap();

        // The same answer as the API's service, level by level.
        let direct = service(&fixture);
        let caller = Caller {
            account: account.clone(),
            key: None,
            channel: Channel::Web,
            client: None,
        };
        // A filter query, and the /24 of a stored host (a CIDR search).
        let ip = data()
            .reference
            .records()
            .find_map(|r| match r.ip {
                std::net::IpAddr::V4(v4) => Some(v4.octets()),
                std::net::IpAddr::V6(_) => None,
            })
            .expect("an IPv4 host");
        let cidr = format!("{}.{}.{}.0/24", ip[0], ip[1], ip[2]);
        for q in ["port:443", cidr.as_str()] {
            let mut hosts = None;
            for resolution in ["global", "regional", "local"] {
                let page = browser.get(&exposure_url(&app, q, resolution)).await;
                assert_eq!(page.status, 200, "{q} {resolution}: {}", page.body);
                assert_eq!(
                    page.headers.get("cache-control").unwrap(),
                    "no-store",
                    "{q}"
                );
                let got = without_request_id(body(&page));
                let answer = direct
                    .exposure(
                        &caller,
                        "test",
                        ExposureRequest {
                            query: q,
                            resolution,
                        },
                    )
                    .await
                    .unwrap();
                // Both through the same text parser (serde_json's float parsing may not
                // round-trip the last bit, so a parsed text is compared with a parsed text).
                let want: Value = serde_json::from_str(
                    &serde_json::to_string(&ExposureResponse::new("test", &answer)).unwrap(),
                )
                .unwrap();
                assert_eq!(got, without_request_id(want), "{q} at {resolution}");
                assert_eq!(got["resolution"], resolution);
                let locations = got["locations"].as_array().unwrap();
                assert!(!locations.is_empty(), "{q} at {resolution}: {got}");
                // Totals describe the whole matching set, whatever the level.
                let total = got["unique_hosts"]["value"].as_u64().unwrap();
                assert!(total > 0);
                assert_eq!(*hosts.get_or_insert(total), total, "{q} at {resolution}");
            }
        }
        // Finer levels have more, smaller clusters.
        let global = body(&browser.get(&exposure_url(&app, "port:443", "global")).await);
        let local = body(&browser.get(&exposure_url(&app, "port:443", "local")).await);
        assert!(
            local["locations"].as_array().unwrap().len()
                > global["locations"].as_array().unwrap().len()
        );

        // Refusals: {title, message} in the spec's words, with the API's status.
        let domain = browser
            .get(&exposure_url(&app, "domain:northwind.example", "global"))
            .await;
        assert_eq!(domain.status, 422, "{}", domain.body);
        let v = body(&domain);
        assert_eq!(v["title"], "Globe view not available", "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        let bad = browser
            .get(&exposure_url(&app, "port:443", "continental"))
            .await;
        assert_eq!(bad.status, 422, "{}", bad.body);
        let v = body(&bad);
        assert_eq!(v["title"], "Unsupported resolution", "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        let broad = browser
            .get(&exposure_url(&app, "10.0.0.0/8", "global"))
            .await;
        assert_eq!(broad.status, 422, "{}", broad.body);
        assert_eq!(body(&broad)["title"], "CIDR too broad");

        // Without a session: the script's signal to reload.
        let stranger = Browser::new();
        let ended = stranger
            .get(&exposure_url(&app, "port:443", "global"))
            .await;
        assert_eq!(ended.status, 401, "{}", ended.body);
        assert_eq!(ended.headers.get("x-periscope-session").unwrap(), "ended");

        // The Globe page: the section, its assets, and nothing charged.
        let page = browser.get(&app.url("/?q=port%3A443&view=globe")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            page.body.contains("data-query=\"port:443\""),
            "{}",
            page.body
        );
        assert!(page.body.contains("<canvas"), "{}", page.body);
        assert_eq!(page.body.matches("class=\"host-row\"").count(), 0);
        for asset in [
            "globe.css",
            "d3-array.min.js",
            "d3-geo.min.js",
            "topojson-client.min.js",
            "globe.js",
        ] {
            assert!(
                page.body.contains(&format!("/assets/{asset}?v=")),
                "{asset}"
            );
        }
        for (asset, media) in [
            ("d3-geo.min.js", "text/javascript; charset=utf-8"),
            ("topojson-client.min.js", "text/javascript; charset=utf-8"),
            ("land-110m.json", "application/json"),
            ("globe.css", "text/css; charset=utf-8"),
        ] {
            let a = browser.get(&app.url(&format!("/assets/{asset}"))).await;
            assert_eq!(a.status, 200, "{asset}");
            assert_eq!(a.headers.get("content-type").unwrap(), media, "{asset}");
        }
        let land = body(&browser.get(&app.url("/assets/land-50m.json")).await);
        assert_eq!(land["type"], "Topology");
        assert!(land["objects"]["land"].is_object());
        assert_eq!(
            fixture.state.used(account.id, today).await.unwrap(),
            used_before,
            "the Globe and its exposures are free"
        );

        // A domain search in the Globe returns to Results (a charged search).
        let domain = browser
            .get(&app.url("/?q=domain%3Anorthwind.example&view=globe"))
            .await;
        assert_eq!(domain.status, 200, "{}", domain.body);
        assert!(!domain.body.contains("class=\"globe\""), "{}", domain.body);
        assert!(!domain.body.contains("name=\"view\""), "{}", domain.body);
        assert!(!domain.body.contains("aria-label=\"Views\""));
    })
    .await;
}

/// Where the browser suites save screenshots: `$CARGO_TARGET_DIR/browser-artifacts` (the
/// workspace's `target/` by default), never the repository's sources.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_globe_in_chromium() {
    if !ready() {
        return;
    }
    on_each_backend("web_globe_browser", |fixture| async move {
        let app = App::embedded_searching(&fixture, service(&fixture)).await;
        let browser = Browser::new();
        let (email, password) = ("gia@example.com", "a long enough password 4");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        let (_, session, _, _) =
            sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
        let dir = artifacts("globe", &fixture);
        let mut command = node_suite("globe.mjs", &app.origin, &session, &dir);
        // A host in Sydney, far from where the globe used to look (10° E, 30° N).
        let sydney = data()
            .reference
            .records()
            .find(|r| {
                r.ip.is_ipv4()
                    && r.position.is_some()
                    && r.location
                        .as_ref()
                        .is_some_and(|(l, _)| l.city.as_deref() == Some("Sydney"))
            })
            .expect("a stored host in Sydney")
            .ip
            .to_string();
        command.env("PERISCOPE_SYDNEY_IP", &sydney);
        converse(&mut command, "the Globe suite", |_| async { None }).await;
        for shot in [
            "globe-global.png",
            "globe-regional.png",
            "globe-error.png",
            "globe-sydney.png",
            "globe-australia-local.png",
        ] {
            assert!(dir.join(shot).is_file(), "{shot} in {}", dir.display());
        }
    })
    .await;
}
