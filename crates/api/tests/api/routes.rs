//! The free routes and the fixed ones: capabilities, count, facets, exposure, host detail, the
//! OpenAPI document, the operational endpoints, and unknown routes and methods.

use periscope_index::ScanIndex;
use periscope_model::protocol::{QUERY_REGISTRY_VERSION, REGISTRY, catalog_version};
use serde_json::json;

use crate::harness::{data, noon};

api_test!(capabilities_list_the_registry_and_are_never_cached, |app| {
    let r = app.get("/v1/search/capabilities", Some(&app.key)).await;
    let body = r.ok();
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        body["query_registry_version"],
        json!(QUERY_REGISTRY_VERSION)
    );
    assert_eq!(body["catalog_version"], json!(catalog_version()));
    let protocols = body["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), REGISTRY.len());
    assert_eq!(protocols.len(), 87);
    let values: Vec<&str> = protocols
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    let mut sorted = values.clone();
    sorted.sort_unstable();
    assert_eq!(values, sorted);
    for p in protocols {
        let ports: Vec<u64> = p["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert!(ports.windows(2).all(|w| w[0] < w[1]), "{p}");
        assert!(p["ipv4"].is_boolean() && p["ipv6"].is_boolean());
        assert!(["http", "ssh", "summary"].contains(&p["evidence_kind"].as_str().unwrap()));
    }
    assert_eq!(app.used().await, 0);
});

api_test!(
    count_facets_and_exposure_answer_and_refuse_other_search_types,
    |app| {
        let count = app
            .post("/v1/search/count", json!({"query": "port:443"}))
            .await;
        let want = data()
            .reference
            .count(&periscope_query::parse("port:443").unwrap(), noon())
            .unwrap();
        assert_eq!(count.ok()["unique_hosts"]["value"], json!(want.value));
        for q in ["240.0.0.1", "240.0.0.0/24", "domain:example.example"] {
            app.post("/v1/search/count", json!({"query": q}))
                .await
                .assert_violations(&[("query", "count_not_supported")]);
        }

        let facets = app
            .post("/v1/search/facets", json!({"query": "port:443"}))
            .await;
        let body = facets.ok();
        assert_eq!(body["partial"], json!(false));
        assert_eq!(body["can_add_filters"], json!(true));
        let fields: Vec<&str> = body["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            fields,
            ["port", "protocol", "product", "country", "cvss", "exploit"]
        );
        for g in body["groups"].as_array().unwrap() {
            assert_eq!(g["status"], json!("available"));
            assert!(g["items"].as_array().unwrap().len() <= 5);
        }
        let port = &body["groups"][0]["items"][0];
        assert_eq!(port["clause"], json!("port:443"));
        assert_eq!(port["selected"], json!(true));
        let full = app
            .post(
                "/v1/search/facets",
                json!({"query": "port:443 protocol:https exploit:no"}),
            )
            .await;
        assert_eq!(full.ok()["can_add_filters"], json!(false));
        app.post("/v1/search/facets", json!({"query": "asn:64512"}))
            .await
            .assert_violations(&[("query", "facets_not_supported")]);

        let exposure = app
            .post(
                "/v1/search/exposure",
                json!({"query": "port:443", "resolution": "regional"}),
            )
            .await;
        let body = exposure.ok();
        assert_eq!(body["resolution"], json!("regional"));
        assert_eq!(body["geotile_precision"], json!(6));
        assert_eq!(body["unique_hosts"]["value"], json!(want.value));
        assert!(["complete", "bounded"].contains(&body["locations_relation"].as_str().unwrap()));
        let locations = body["locations"].as_array().unwrap();
        assert!(!locations.is_empty() && locations.len() <= 500);
        for l in locations {
            let key = l["key"].as_str().unwrap();
            assert!(key.starts_with("6/"), "{key}");
            assert!(l["latitude"].is_number() && l["longitude"].is_number());
            assert_eq!(
                l.get("country_code").is_some(),
                l.get("country_count").is_some()
            );
        }
        let default = app
            .post("/v1/search/exposure", json!({"query": "port:443"}))
            .await;
        assert_eq!(default.ok()["resolution"], json!("global"));
        app.post(
            "/v1/search/exposure",
            json!({"query": "domain:example.example"}),
        )
        .await
        .assert_violations(&[("query", "exposure_not_supported")]);
        app.post(
            "/v1/search/exposure",
            json!({"query": "port:443", "resolution": "street"}),
        )
        .await
        .assert_violations(&[("resolution", "unsupported_resolution")]);
        // None of it was charged.
        assert_eq!(app.used().await, 0);
    }
);

api_test!(host_detail_pages_every_service_of_one_address, |app| {
    // A host of the dataset with more than two services.
    let host = data()
        .reference
        .records()
        .find(|r| r.services.len() > 2)
        .unwrap();
    let ip = host.ip.to_string();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut body = json!({"ip": ip, "limit": 1});
        if let Some(c) = &cursor {
            body["cursor"] = json!(c);
        }
        let r = app.post("/v1/hosts/detail", body).await;
        let page = r.ok();
        assert_eq!(page["host"]["ip"], json!(ip));
        let items = page["host"]["services"]["items"].as_array().unwrap();
        assert_eq!(items.len(), 1);
        seen.push((items[0]["port"].clone(), items[0]["protocol"].clone()));
        match page.get("next_cursor") {
            Some(c) => {
                assert!(c.as_str().unwrap().len() <= 512);
                cursor = Some(c.as_str().unwrap().to_owned());
            }
            None => break,
        }
    }
    let whole = app.post("/v1/hosts/detail", json!({"ip": ip})).await;
    let all: Vec<_> = whole.ok()["host"]["services"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["port"].clone(), s["protocol"].clone()))
        .collect();
    assert_eq!(seen, all);
    assert!(all.len() > 2);
    app.post("/v1/hosts/detail", json!({"ip": "240.255.255.254"}))
        .await
        .assert_error(404, "host_not_found");
    app.post("/v1/hosts/detail", json!({"ip": "240.0.0.0/24"}))
        .await
        .assert_violations(&[("ip", "invalid_ip")]);
    app.post("/v1/hosts/detail", json!({"ip": ip, "limit": 21}))
        .await
        .assert_violations(&[("limit", "out_of_range")]);
    app.post(
        "/v1/hosts/detail",
        json!({"ip": ip, "cursor": "not-a-continuation"}),
    )
    .await
    .assert_violations(&[("cursor", "invalid")]);
    assert_eq!(app.used().await, 0);
});

api_test!(audit_records_are_written_for_the_search_capability, |app| {
    let r = app
        .post("/v1/search/count", json!({"query": "port:22"}))
        .await;
    let id = r.body["request_id"].as_str().unwrap().to_owned();
    app.post("/v1/hosts/detail", json!({"ip": "240.255.255.254"}))
        .await;
    let search = app
        .post("/v1/search", json!({"query": "port:443", "limit": 1}))
        .await;
    let search_id = search.body["request_id"].as_str().unwrap().to_owned();
    let records = app
        .state
        .audit_records(Some(app.account.id), 10)
        .await
        .unwrap();
    let count = records.iter().find(|r| r.entry.request_id == id).unwrap();
    assert_eq!(count.entry.subject.as_deref(), Some("port:22"));
    assert_eq!(count.outcome.as_deref(), Some("ok"));
    // Each record holds the client's address: the test connects from loopback, no proxy.
    let search = records
        .iter()
        .find(|r| r.entry.request_id == search_id)
        .unwrap();
    assert_eq!(search.entry.subject.as_deref(), Some("port:443"));
    let loopback: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    assert!(
        records.iter().all(|r| r.entry.client == Some(loopback)),
        "{records:?}"
    );
    assert!(
        records
            .iter()
            .any(|r| r.outcome.as_deref() == Some("host_not_found"))
    );
});

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_operational_endpoints_and_unknown_routes() {
    crate::harness::on_each_backend("openapi_operational", |fixture| async move {
        let app = crate::harness::TestApp::start(&fixture, Default::default()).await;
        // The document needs no key.
        let doc = app
            .client
            .get(format!("{}/v1/openapi.json", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(doc.status(), 200);
        let doc: serde_json::Value = doc.json().await.unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        for path in [
            "/v1/search/capabilities",
            "/v1/allowance",
            "/v1/search",
            "/v1/search/count",
            "/v1/search/facets",
            "/v1/search/exposure",
            "/v1/hosts/detail",
        ] {
            assert!(doc["paths"].get(path).is_some(), "{path}");
        }
        app.get("/healthz", None).await.ok();
        let ready = app.get("/readyz", None).await;
        assert_eq!(ready.ok()["status"], json!("ready"));
        app.post("/v1/search", json!({"query": "port:22", "limit": 1}))
            .await
            .ok();
        let metrics = app
            .client
            .get(format!("{}/metrics", app.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics
                .contains("periscope_http_requests_total{route=\"/v1/search\",status=\"200\"} 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("periscope_searches_charged_total 1"),
            "{metrics}"
        );
        assert!(metrics.contains(&format!(
            "periscope_index_hosts {}",
            data().engine.stats().hosts
        )));
        app.get("/v1/nothing", Some(&app.key))
            .await
            .assert_error(404, "not_found");
        app.get("/v1/search", Some(&app.key))
            .await
            .assert_error(405, "method_not_allowed");
        app.post("/v1/allowance", json!({}))
            .await
            .assert_error(405, "method_not_allowed");
    })
    .await;
}
