//! Domain searches through a fixed-table resolver behind the service's `Resolver` seam: every
//! resolution outcome, only public routable answers used as targets, and stored matches
//! answered whatever DNS said. (The resolver crate's own suite runs the real DNS resolver
//! against a DNS server on loopback.)

use std::net::IpAddr;
use std::sync::Arc;

use periscope_index::{EmbeddedIndex, IndexConfig, ReferenceIndex, ScanIndex};
use periscope_model::DomainName;
use periscope_model::observation::ObservationReader;
use periscope_resolve::{FixedAnswer, FixedResolver};
use serde_json::{Value, json};

use crate::harness::{AS_OF, Options, data, noon};

/// A public address that the dataset does not hold, given one service for this test.
const PUBLIC: &str = "100.128.0.1";

/// A stored domain of the dataset, and a host that stores it.
fn stored_domain() -> (DomainName, IpAddr) {
    data()
        .reference
        .records()
        .find_map(|r| {
            let domain = r.enrichment.as_ref()?.0.domain.clone()?;
            Some((domain, r.ip))
        })
        .expect("the dataset stores domains")
}

/// The dataset plus one public host.
fn engine() -> Arc<dyn ScanIndex> {
    let mut extra = ReferenceIndex::new(IndexConfig::default());
    let line = format!(
        r#"{{"kind":"service","ip":"{PUBLIC}","port":443,"transport":"tcp","protocol":"https","observed_at":"{AS_OF}","status":"completed"}}"#
    );
    let obs = ObservationReader::new(noon())
        .read_line(&line)
        .unwrap()
        .unwrap();
    extra.apply(&obs);
    let records = extra
        .records()
        .cloned()
        .chain(data().reference.records().cloned());
    Arc::new(
        EmbeddedIndex::build(
            IndexConfig::default(),
            noon(),
            records,
            data().reference.domain_scans().clone(),
        )
        .unwrap(),
    )
}

fn resolver() -> Arc<dyn periscope_resolve::Resolver> {
    let (domain, _) = stored_domain();
    let public: IpAddr = PUBLIC.parse().unwrap();
    let private: IpAddr = "10.1.2.3".parse().unwrap();
    let sub = |label: &str| DomainName::parse(&format!("{label}.{domain}")).unwrap();
    Arc::new(
        FixedResolver::new()
            .with_addresses(domain.clone(), [public, private])
            .with_answer(sub("slow"), FixedAnswer::TimedOut)
            .with_answer(sub("broken"), FixedAnswer::Failed)
            .with_addresses(sub("private"), [private, "127.0.0.1".parse().unwrap()]),
    )
}

fn sources_of(result: &Value) -> Vec<String> {
    result["domain_matches"]
        .as_array()
        .unwrap_or_else(|| panic!("no domain_matches: {result}"))
        .iter()
        .map(|m| m["source"].as_str().unwrap().to_owned())
        .collect()
}

api_test!(
    domain_searches_merge_dns_answers_with_stored_names,
    Options {
        index: Some(engine()),
        resolver: Some(resolver()),
        ..Options::default()
    },
    |app| {
        let (domain, stored_host) = stored_domain();
        let r = app
            .post(
                "/v1/search",
                json!({"query": format!("domain:{domain}"), "limit": 100}),
            )
            .await;
        let body = r.ok();
        assert_eq!(
            body["domain_resolution"],
            json!({"status": "resolved", "address_count": 1})
        );
        let results = body["results"].as_array().unwrap();
        let public = results
            .iter()
            .find(|h| h["ip"] == PUBLIC)
            .expect("the DNS answer is a result");
        assert_eq!(sources_of(public), ["dns_resolution"]);
        assert_eq!(
            public["domain_matches"][0]["value"],
            json!(domain.to_string())
        );
        assert!(
            results.iter().all(|h| h["ip"] != "10.1.2.3"),
            "private answers are never targets"
        );
        let stored = results
            .iter()
            .find(|h| h["ip"] == stored_host.to_string())
            .expect("the stored host is a result");
        assert!(
            sources_of(stored).iter().any(|s| s.starts_with("stored_")),
            "{stored}"
        );
        for h in results {
            assert!(h.get("organization_matches").is_none());
        }
        assert_eq!(app.used().await, 1);

        // Every other outcome still answers the stored matches of the name and its subdomains.
        for (label, status) in [
            ("slow", "timed_out"),
            ("broken", "failed"),
            ("private", "no_public_address"),
            ("absent", "not_found"),
        ] {
            let name = format!("{label}.{domain}");
            let r = app
                .post("/v1/search", json!({"query": format!("domain:{name}")}))
                .await;
            let body = r.ok();
            assert_eq!(
                body["domain_resolution"],
                json!({"status": status, "address_count": 0}),
                "{name}"
            );
            for h in body["results"].as_array().unwrap() {
                assert!(!sources_of(h).contains(&"dns_resolution".to_owned()), "{h}");
            }
        }
    }
);
