//! Response bodies built from real answers of the reference index over a synthetic internet:
//! structural properties (no `null`, absent members omitted, timestamps with `Z`, order,
//! evidence shape, matches only on their query kinds) and conformance with the response
//! schemas of the OpenAPI document.

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::collections::BTreeSet;
use std::net::IpAddr;

use periscope_api_types::{
    Allowance, AllowanceResponse, CapabilitiesResponse, CountResponse, DomainResolution,
    DomainResolutionStatus, ErrorBody, ErrorCode, ExposureResponse, FacetsResponse,
    HostDetailResponse, HostResult, SearchResponse, openapi_document,
};
use periscope_index::api::{ScanIndex, SearchOutcome, SearchPage, SearchRequest};
use periscope_model::record;
use periscope_model::{ProtocolToken, Timestamp, ip_order_key};
use periscope_query::{Query, QueryKind, Resolution};
use serde_json::Value;

use common::{Validator, index, now, nulls};

fn search(text: &str, limit: usize) -> (Query, SearchPage) {
    let query = periscope_query::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let outcome = index()
        .search(&SearchRequest {
            query: &query,
            after: None,
            limit,
            resolved: &[],
            now: now(),
        })
        .unwrap();
    match outcome {
        SearchOutcome::Page(page) => (query, page),
        SearchOutcome::TooBroad { matching } => panic!("{text}: too broad ({matching})"),
    }
}

/// Serializes and checks what holds of every body: no `null` anywhere, a `request_id`, and
/// the named schema.
fn body(schema: &str, value: &impl serde::Serialize) -> Value {
    let json = serde_json::to_value(value).unwrap();
    let mut found = Vec::new();
    nulls(&json, "$", &mut found);
    assert!(found.is_empty(), "{schema}: null at {found:?}");
    assert!(json["request_id"].is_string(), "{schema}: request_id");
    let doc = openapi_document();
    Validator::new(&doc).assert_valid(schema, &json);
    json
}

fn timestamp_ok(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.ends_with('Z') && Timestamp::parse(s).is_ok())
}

/// What holds of every serialized host result, given the kind of query that found it
/// (`None` for host detail).
fn check_host(h: &Value, kind: Option<QueryKind>) {
    let o = h.as_object().unwrap();
    let ip: IpAddr = h["ip"].as_str().unwrap().parse().unwrap();
    for (member, only) in [
        ("organization_matches", "organization"),
        ("domain_matches", "domain"),
        ("asn_matches", "asn"),
    ] {
        if let Some(m) = o.get(member) {
            assert!(
                !m.as_array().unwrap().is_empty(),
                "{member} present but empty"
            );
            let kind = kind.unwrap_or_else(|| panic!("{member} on a host detail"));
            let matches_kind = match only {
                "organization" => kind == QueryKind::Filter,
                "domain" => kind == QueryKind::Domain,
                _ => kind == QueryKind::Asn,
            };
            assert!(matches_kind, "{member} on a {kind:?} result");
        }
    }
    if ip.is_ipv6() {
        assert!(!o.contains_key("reverse_dns"), "reverse_dns on IPv6 {ip}");
    }
    for member in ["location", "whois", "network"] {
        if let Some(m) = o.get(member) {
            assert!(
                !m.as_object().unwrap().is_empty(),
                "{member} is an empty object"
            );
        }
    }
    if let Some(loc) = o.get("location") {
        // A name appears once: no level equals the nearest coarser level shown.
        let levels: Vec<&str> = [
            "continent",
            "country_name",
            "subdivision_1",
            "subdivision_2",
            "city",
        ]
        .iter()
        .filter_map(|l| loc[*l].as_str())
        .collect();
        for pair in levels.windows(2) {
            assert_ne!(pair[0].to_lowercase(), pair[1].to_lowercase(), "{loc}");
        }
        assert_eq!(loc["latitude"].is_number(), loc["longitude"].is_number());
    }
    if let Some(domains) = o.get("domains") {
        let names: Vec<&str> = domains["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap())
            .collect();
        let unique: BTreeSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "a name listed twice: {names:?}");
        assert!(!names.is_empty() || domains["has_more"] == true);
    }
    match (kind, o.get("services")) {
        (Some(QueryKind::Domain | QueryKind::Asn), Some(_)) => {
            panic!("services on a {kind:?} result")
        }
        (Some(QueryKind::Domain | QueryKind::Asn), None) => {}
        (_, None) => panic!("no services on a host that has one: {h}"),
        (_, Some(services)) => check_services(services, kind.is_none()),
    }
}

fn check_services(services: &Value, detail: bool) {
    let items = services["items"].as_array().unwrap();
    assert!(!items.is_empty());
    if !detail {
        assert!(items.len() <= 5, "a preview holds at most 5 services");
    }
    // Sorted by port then protocol; in a preview the marked services come first, each part
    // sorted.
    let key = |s: &Value| {
        (
            s["port"].as_u64().unwrap(),
            s["protocol"].as_str().unwrap().to_owned(),
        )
    };
    let marked = items
        .iter()
        .take_while(|s| s.get("match_reasons").is_some())
        .count();
    assert!(
        items[marked..]
            .iter()
            .all(|s| s.get("match_reasons").is_none()),
        "marked services come first"
    );
    for part in [&items[..marked], &items[marked..]] {
        for pair in part.windows(2) {
            assert!(
                key(&pair[0]) < key(&pair[1]),
                "{} then {}",
                pair[0],
                pair[1]
            );
        }
    }
    if detail {
        assert_eq!(marked, 0, "host detail marks nothing");
    }
    for s in items {
        assert!(timestamp_ok(&s["observed_at"]), "{s}");
        let protocol = ProtocolToken::parse(s["protocol"].as_str().unwrap()).unwrap();
        for member in ["certificate_names", "evidence", "match_reasons"] {
            if let Some(list) = s.get(member) {
                assert!(!list.as_array().unwrap().is_empty(), "empty {member}");
            }
        }
        for e in s["evidence"].as_array().into_iter().flatten() {
            let kind = e["kind"].as_str().unwrap();
            assert!(["http", "ssh", "summary"].contains(&kind), "{e}");
            if kind == "http" {
                assert_eq!(protocol.entry().evidence_kind.as_str(), "http", "{s}");
                if let Some(tls) = e.get("tls") {
                    assert_eq!(protocol.as_str(), "https", "tls on {protocol}");
                    for t in ["valid_from", "valid_until"] {
                        if let Some(v) = tls.get(t) {
                            assert!(timestamp_ok(v), "{tls}");
                        }
                    }
                }
            }
            if kind == "summary" {
                let fields = e["fields"].as_object().unwrap();
                assert!(fields.values().all(Value::is_string));
            }
        }
        if let Some(v) = s.get("vulnerabilities") {
            let max = v.get("max_cvss").and_then(Value::as_f64);
            assert!(max.is_none_or(|m| (0.0..=10.0).contains(&m)), "{v}");
        }
    }
}

fn ips(results: &Value) -> Vec<IpAddr> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["ip"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// A search, serialized and checked; returns the body and the query.
fn searched(text: &str, limit: usize) -> (Value, SearchPage) {
    let (query, page) = search(text, limit);
    let mut response = SearchResponse::new("req-search", &page.hosts);
    if page.has_more {
        response.next_cursor = Some(format!("sc1_{}", "A".repeat(32)));
    }
    response.allowance = Some(Allowance::new(20, 3, now()));
    if query.kind() == QueryKind::Domain {
        response.domain_resolution = Some(DomainResolution {
            status: DomainResolutionStatus::NotFound,
            address_count: 0,
        });
    }
    let json = body("SearchResponse", &response);
    let results = &json["results"];
    assert_eq!(results.as_array().unwrap().len(), page.hosts.len());
    let order: Vec<u128> = ips(results).into_iter().map(ip_order_key).collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "{text}: not ascending"
    );
    for h in results.as_array().unwrap() {
        check_host(h, Some(query.kind()));
    }
    (json, page)
}

/// The first host result of a broad search, to take values for other queries from.
fn sample_hosts() -> Vec<record::Host> {
    let (_, page) = search("port:443", 100);
    let (_, page6) = search("protocol:ssh", 100);
    page.hosts
        .into_iter()
        .chain(page6.hosts)
        .map(|r| r.host)
        .collect()
}

#[test]
fn filter_searches() {
    for text in [
        "port:443",
        "protocol:https",
        "protocol:ssh",
        "port:22 protocol:ssh",
        "exploit:yes",
        "cvss:7.0-10.0",
        "country:DE",
        "country:US port:80",
    ] {
        let (json, page) = searched(text, 100);
        if text.contains("port") || text.contains("protocol") {
            assert!(!page.hosts.is_empty(), "{text} matched nothing");
            // A query with service clauses marks the services satisfying them.
            let reasons: Vec<&Value> = json["results"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|h| h["services"]["items"].as_array().unwrap())
                .filter_map(|s| s.get("match_reasons"))
                .collect();
            assert!(!reasons.is_empty(), "{text}: nothing marked");
            let query = periscope_query::parse(text).unwrap();
            for r in reasons {
                for clause in r.as_array().unwrap() {
                    assert!(
                        query.to_string().contains(clause.as_str().unwrap()),
                        "{clause} is not a clause of {query}"
                    );
                }
            }
        }
    }
}

#[test]
fn host_attributes_reach_the_wire() {
    let (json, _) = searched("port:443", 100);
    let results = json["results"].as_array().unwrap();
    let any = |member: &str| results.iter().any(|h| h.get(member).is_some());
    for member in ["location", "network", "whois", "domains", "services"] {
        assert!(any(member), "no result carries {member}");
    }
    // Evidence of HTTPS services carries TLS.
    assert!(
        results
            .iter()
            .flat_map(|h| h["services"]["items"].as_array().unwrap())
            .flat_map(|s| s["evidence"].as_array().into_iter().flatten())
            .any(|e| e["kind"] == "http" && e.get("tls").is_some()),
        "no https evidence with tls"
    );
    let (json, _) = searched("protocol:ssh", 100);
    assert!(
        json["results"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|h| h["services"]["items"].as_array().unwrap())
            .flat_map(|s| s["evidence"].as_array().into_iter().flatten())
            .any(|e| e["kind"] == "ssh"),
        "no ssh evidence"
    );
}

#[test]
fn organization_domain_asn_ip_and_cidr_searches() {
    let hosts = sample_hosts();
    let org = hosts
        .iter()
        .find_map(|h| h.network.as_ref().and_then(|n| n.organization.clone()))
        .unwrap();
    let (json, _) = searched(&format!("organization:\"{org}\""), 100);
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty(), "organization {org}");
    assert!(
        results
            .iter()
            .any(|h| h.get("organization_matches").is_some())
    );

    let asn = hosts.iter().find_map(|h| h.network.as_ref()).unwrap().asn;
    let (json, _) = searched(&format!("asn:{asn}"), 100);
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for h in results {
        for m in h["asn_matches"].as_array().unwrap() {
            assert_eq!(m["asn"], asn.get());
        }
    }

    let domain = hosts
        .iter()
        .flat_map(|h| &h.domains)
        .find_map(|d| {
            let q = format!("domain:{}", d.name);
            periscope_query::parse(&q).ok().map(|_| q)
        })
        .unwrap();
    let (json, _) = searched(&domain, 100);
    let results = json["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{domain}");
    assert!(results.iter().all(|h| h.get("domain_matches").is_some()));
    assert_eq!(json["domain_resolution"]["status"], "not_found");

    // Pages start with IPv4; take an IPv6 host from the records.
    let v6 = index()
        .records()
        .map(|r| r.ip)
        .filter(IpAddr::is_ipv6)
        .find(|ip| index().host_detail(*ip, None, 1, now()).unwrap().is_some())
        .unwrap();
    let v4 = hosts.iter().find(|h| h.ip.is_ipv4()).unwrap().ip;
    for ip in [v4, v6] {
        let (json, _) = searched(&ip.to_string(), 25);
        assert_eq!(ips(&json["results"]), [ip]);
    }
    let (json, _) = searched(&format!("{v4}/24"), 100);
    assert!(ips(&json["results"]).contains(&v4));
}

#[test]
fn paging_leaves_next_cursor_out_on_the_last_page() {
    let (json, page) = searched("port:443", 2);
    assert!(page.has_more);
    assert!(json["next_cursor"].is_string());
    let (json, page) = searched("port:443", 100);
    if !page.has_more {
        assert!(json.get("next_cursor").is_none());
    }
    let json = body("SearchResponse", &SearchResponse::new("r", &[]));
    assert_eq!(json, serde_json::json!({"request_id": "r", "results": []}));
}

#[test]
fn host_detail_pages() {
    for host in sample_hosts().iter().take(40) {
        let mut cursor: Option<String> = None;
        let mut seen = Vec::new();
        loop {
            let detail = index()
                .host_detail(host.ip, cursor.as_deref(), 3, now())
                .unwrap()
                .unwrap();
            let response = HostDetailResponse::new("req-detail", &detail);
            let json = body("HostDetailResponse", &response);
            assert_eq!(json["host"]["ip"], host.ip.to_string());
            check_host(&json["host"], None);
            for s in json["host"]["services"]["items"].as_array().unwrap() {
                seen.push((
                    s["port"].as_u64().unwrap(),
                    s["protocol"].as_str().unwrap().to_owned(),
                ));
            }
            assert_eq!(json.get("next_cursor").is_some(), detail.next.is_some());
            match detail.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert!(
            seen.windows(2).all(|w| w[0] < w[1]),
            "pages in order: {seen:?}"
        );
    }
}

#[test]
fn count_facets_and_exposure() {
    for text in ["port:443", "asn:64512", "protocol:ssh country:DE"] {
        let query = periscope_query::parse(text).unwrap();
        let count = index().count(&query, now()).unwrap();
        let json = body("CountResponse", &CountResponse::new("req-count", count));
        assert_eq!(json["unique_hosts"]["value"], count.value);
        assert_eq!(json["unique_hosts"]["relation"], "exact");
        for resolution in Resolution::ALL {
            let exposure = index().exposure(&query, resolution, now()).unwrap();
            let json = body(
                "ExposureResponse",
                &ExposureResponse::new("req-exp", &exposure),
            );
            assert_eq!(json["resolution"], resolution.as_str());
            assert_eq!(json["geotile_precision"], resolution.geotile_precision());
            assert_eq!(json["unique_hosts"]["value"], count.value);
            for l in json["locations"].as_array().unwrap() {
                assert_eq!(
                    l.get("country_code").is_some(),
                    l.get("country_count").is_some()
                );
                let zoom: u8 = l["key"]
                    .as_str()
                    .unwrap()
                    .split('/')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(zoom, resolution.geotile_precision());
            }
        }
    }
    for text in [
        "port:443",
        "protocol:ssh country:DE",
        "port:22 protocol:ssh exploit:no",
    ] {
        let Query::Filter(filter) = periscope_query::parse(text).unwrap() else {
            panic!("{text} is a filter");
        };
        let facets = index().facets(&filter, now()).unwrap();
        let json = body(
            "FacetsResponse",
            &FacetsResponse::new("req-facets", &filter, &facets),
        );
        assert_eq!(json["can_add_filters"], filter.clauses().len() < 3);
        assert_eq!(json["partial"], false);
        let fields: Vec<&str> = json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["field"].as_str().unwrap())
            .collect();
        assert_eq!(
            fields,
            ["port", "protocol", "product", "country", "cvss", "exploit"]
        );
        let mut any_selected = false;
        for g in json["groups"].as_array().unwrap() {
            assert_eq!(g["status"], "available");
            assert!(g.get("error_code").is_none());
            for item in g["items"].as_array().unwrap() {
                // The clause is canonical query text: it parses and adds to the query.
                let clause = item["clause"].as_str().unwrap();
                assert!(periscope_query::parse(clause).is_ok(), "{clause}");
                any_selected |= item["selected"] == true;
            }
        }
        assert!(any_selected, "{text}: its own clauses are selected");
    }
}

#[test]
fn capabilities_allowance_and_errors() {
    let json = body(
        "CapabilitiesResponse",
        &CapabilitiesResponse::new("req-cap"),
    );
    assert_eq!(json["query_registry_version"], "service-v5");
    let protocols = json["protocols"].as_array().unwrap();
    assert_eq!(protocols.len(), periscope_model::protocol::REGISTRY_LEN);
    let values: Vec<&str> = protocols
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "sorted by value");
    for p in protocols {
        let ports: Vec<u64> = p["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert!(ports.windows(2).all(|w| w[0] < w[1]), "{p}");
        let token = ProtocolToken::parse(p["value"].as_str().unwrap()).unwrap();
        assert_eq!(p["evidence_kind"], token.entry().evidence_kind.as_str());
    }
    assert!(
        json["catalog_version"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );

    let resets = Timestamp::parse("2026-11-21T00:00:00Z").unwrap();
    let limited = AllowanceResponse {
        request_id: "req-allow".into(),
        allowance: Some(Allowance::new(20, 7, resets)),
    };
    let json = body("AllowanceResponse", &limited);
    assert_eq!(
        json["allowance"],
        serde_json::json!({"limit": 20, "used": 7, "remaining": 13, "resets_at": "2026-11-21T00:00:00Z"})
    );
    // Used beyond a lowered limit leaves none remaining, never a negative number.
    assert_eq!(Allowance::new(5, 9, resets).remaining, 0);
    let unlimited = AllowanceResponse {
        request_id: "req-allow".into(),
        allowance: None,
    };
    let json = body("AllowanceResponse", &unlimited);
    assert!(json.get("allowance").is_none(), "no limit: no member");

    for code in ErrorCode::ALL {
        body("ErrorBody", &ErrorBody::new("req-err", *code));
    }
    let v = periscope_query::parse("port:0").unwrap_err();
    let json = body(
        "ErrorBody",
        &ErrorBody::validation_failed("req-err", v.violations.iter().map(Into::into)),
    );
    assert_eq!(json["violations"][0]["code"], "invalid_port");
}

#[test]
fn location_levels_with_the_same_name_appear_once() {
    use periscope_api_types::Location;
    let s = |x: &str| Some(x.to_owned());
    let loc = |continent, country, sub1, sub2, city| record::Location {
        continent,
        country_code: None,
        country_name: country,
        subdivision_1: sub1,
        subdivision_2: sub2,
        city,
        position: None,
    };
    let levels = |l: record::Location| {
        let w = Location::from_record(&l).unwrap();
        [
            w.continent,
            w.country_name,
            w.subdivision_1,
            w.subdivision_2,
            w.city,
        ]
    };
    assert_eq!(
        levels(loc(
            s("Europe"),
            s("Germany"),
            s("Berlin"),
            None,
            s("Berlin")
        )),
        [s("Europe"), s("Germany"), s("Berlin"), None, None]
    );
    assert_eq!(
        levels(loc(s("Asia"), s("Singapore"), None, None, s("singapore"))),
        [s("Asia"), s("Singapore"), None, None, None]
    );
    assert_eq!(
        levels(loc(
            None,
            s("Austria"),
            s("Vienna"),
            s("Vienna"),
            s("Vienna")
        )),
        [None, s("Austria"), s("Vienna"), None, None]
    );
    // Only neighbours merge: a name may repeat further apart.
    assert_eq!(
        levels(loc(
            None,
            s("Luxembourg"),
            s("Canton"),
            None,
            s("Luxembourg")
        )),
        [None, s("Luxembourg"), s("Canton"), None, s("Luxembourg")]
    );
    assert!(Location::from_record(&record::Location::default()).is_none());
}

#[test]
fn wire_host_from_a_record_omits_what_is_absent() {
    let host = sample_hosts().remove(0);
    let mut bare = host.clone();
    bare.location = None;
    bare.network = None;
    bare.whois = Some(record::Whois::default());
    bare.reverse_dns = None;
    bare.domains.clear();
    bare.domains_has_more = false;
    bare.services.clear();
    bare.services_has_more = false;
    let json = serde_json::to_value(HostResult::from(&bare)).unwrap();
    assert_eq!(json, serde_json::json!({ "ip": host.ip.to_string() }));
    // `has_more` alone keeps the listing.
    bare.domains_has_more = true;
    let json = serde_json::to_value(HostResult::from(&bare)).unwrap();
    assert_eq!(
        json["domains"],
        serde_json::json!({"items": [], "has_more": true})
    );
}
