//! The OpenAPI document: its structure (every route, every `$ref` resolves, every schema used),
//! every error code documented, and the request schemas agreeing with what `decode` accepts —
//! member names, and acceptance of a grid of member values — and the response schemas,
//! derived from the response types, keeping the wire's rules. The whole document as served is
//! compared with its snapshot in `periscope-api`'s suite (`tests/api/openapi.rs`).

#![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use periscope_api_types::request::{MemberKind, check_members};
use periscope_api_types::routes::ROUTING_ERRORS;
use periscope_api_types::{ErrorCode, Method, ROUTES, RequestError, openapi_document};
use serde_json::{Value, json};

use common::Validator;

/// The crate directory of the running test (a shared build directory may have compiled this
/// binary in another checkout).
fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from)
}

#[test]
fn every_route_is_documented_once() {
    let doc = openapi_document();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), ROUTES.len());
    for route in ROUTES {
        let method = route.method.as_str().to_lowercase();
        let op = &paths[route.path][&method];
        assert_eq!(op["operationId"], route.operation_id, "{}", route.path);
        assert!(route.path.starts_with("/v1/"));
        // Every POST has a body, every GET has none.
        assert_eq!(
            op.get("requestBody").is_some(),
            route.method == Method::Post,
            "{}",
            route.path
        );
        // Only the document itself is public.
        assert_eq!(
            op.get("security") == Some(&json!([])),
            !route.authenticated,
            "{}",
            route.path
        );
        let responses = op["responses"].as_object().unwrap();
        assert!(responses.contains_key("200"));
        for status in route.error_statuses() {
            let r = &responses[&status.to_string()];
            assert_eq!(
                r["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody"
            );
            assert!(r["headers"].get("X-Request-ID").is_some());
        }
        if route.authenticated {
            assert!(responses["200"]["headers"].get("X-Request-ID").is_some());
            assert!(responses.contains_key("401"), "{}", route.path);
        }
    }
    let capabilities = &paths["/v1/search/capabilities"]["get"]["responses"]["200"];
    assert!(capabilities["headers"].get("Cache-Control").is_some());
    assert!(doc["paths"]["/v1/openapi.json"]["get"].is_object());
}

#[test]
fn every_error_code_is_documented() {
    let doc = openapi_document();
    let enumerated: Vec<&str> =
        doc["components"]["schemas"]["ErrorBody"]["properties"]["code"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
    let all: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(enumerated, all);
    for code in ErrorCode::ALL {
        let in_routes: Vec<&str> = ROUTES
            .iter()
            .filter(|r| r.errors.contains(code))
            .map(|r| r.path)
            .collect();
        if ROUTING_ERRORS.contains(code) {
            assert!(in_routes.is_empty());
            let info = doc["info"]["description"].as_str().unwrap();
            assert!(info.contains(&format!("`{code}`")), "{code} in info");
            continue;
        }
        assert!(!in_routes.is_empty(), "no route answers {code}");
        for route in ROUTES.iter().filter(|r| r.errors.contains(code)) {
            let method = route.method.as_str().to_lowercase();
            let description = doc["paths"][route.path][&method]["responses"]
                [code.status().to_string()]["description"]
                .as_str()
                .unwrap();
            assert!(
                description.contains(&format!("`{code}`")),
                "{code} not listed under {} {}",
                route.path,
                code.status()
            );
        }
    }
    // 429 rate_limited documents Retry-After.
    for route in ROUTES
        .iter()
        .filter(|r| r.errors.contains(&ErrorCode::RateLimited))
    {
        let method = route.method.as_str().to_lowercase();
        assert!(
            doc["paths"][route.path][&method]["responses"]["429"]["headers"]
                .get("Retry-After")
                .is_some()
        );
    }
}

#[test]
fn every_ref_resolves_and_every_schema_is_used() {
    let doc = openapi_document();
    let mut refs = BTreeSet::new();
    collect_refs(&doc, &mut refs);
    for r in &refs {
        let pointer = r.strip_prefix('#').unwrap();
        assert!(doc.pointer(pointer).is_some(), "dangling {r}");
    }
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        let r = format!("#/components/schemas/{name}");
        assert!(refs.contains(&r), "schema {name} is never used");
    }
}

fn collect_refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        out.insert(r.clone());
                    }
                    // Discriminator mappings name schemas too.
                    ("mapping", Value::Object(m)) => {
                        for target in m.values() {
                            out.insert(target.as_str().unwrap().to_owned());
                        }
                    }
                    _ => collect_refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

/// Candidate values for a member: of every JSON type, at and around its bounds.
fn candidates(kind: MemberKind) -> Vec<Value> {
    let mut out = vec![
        Value::Null,
        json!(true),
        json!([]),
        json!({}),
        json!(2.5),
        json!(-1),
        json!(0),
        json!(""),
        json!("x"),
        json!("sc1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        json!("240.0.0.1"),
        json!("global"),
    ];
    match kind {
        MemberKind::Integer { min, max, .. } => {
            for n in [min - 1, min, min + 1, max - 1, max, max + 1] {
                out.push(json!(n));
                out.push(json!(n as f64));
            }
            out.push(json!(u64::MAX));
            out.push(json!(1e300));
        }
        MemberKind::Text { max_chars, .. } => {
            if let Some(max) = max_chars {
                for n in [max - 1, max, max + 1] {
                    out.push(json!("ж".repeat(n)));
                }
            }
        }
    }
    out
}

/// For every POST route: the schema's members are the decoder's members, and for a grid of
/// bodies the schema (types, presence and bounds; the value checks are the service's) accepts
/// exactly what `decode` accepts.
#[test]
fn request_schemas_agree_with_decode() {
    let doc = openapi_document();
    let validator = Validator::structural(&doc);
    for route in ROUTES {
        let Some(body) = route.body else { continue };
        let schema = validator.schema(body.schema);
        assert_eq!(schema["additionalProperties"], false);
        let documented: BTreeSet<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let members: BTreeSet<&str> = body.members.iter().map(|m| m.name).collect();
        assert_eq!(documented, members, "{}", route.path);
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        let decoder_required: BTreeSet<&str> = body
            .members
            .iter()
            .filter(|m| m.required)
            .map(|m| m.name)
            .collect();
        assert_eq!(required, decoder_required, "{}", route.path);

        // A valid base body: each required member at a value the schema accepts.
        let mut base = serde_json::Map::new();
        for m in body.members.iter().filter(|m| m.required) {
            base.insert(m.name.into(), json!("x"));
        }
        let mut bodies: Vec<Value> = vec![Value::Object(base.clone()), json!({}), json!([])];
        for m in body.members {
            for value in candidates(m.kind) {
                let mut b = base.clone();
                b.insert(m.name.into(), value);
                bodies.push(Value::Object(b));
            }
            let mut without = base.clone();
            without.remove(m.name);
            bodies.push(Value::Object(without));
        }
        let mut extra = base.clone();
        extra.insert("unknown".into(), json!(1));
        bodies.push(Value::Object(extra));

        let mut accepted = 0;
        for b in &bodies {
            let text = b.to_string();
            let decoded = check_members(body.members, Some("application/json"), text.as_bytes());
            let schema_ok = validator.errors(schema, b).is_empty();
            assert_eq!(
                decoded.is_ok(),
                schema_ok,
                "{} body {text}: decode says {:?}",
                route.path,
                decoded.as_ref().map_err(RequestError::to_string)
            );
            accepted += usize::from(schema_ok);
        }
        assert!(
            accepted > 3 && accepted < bodies.len() - 3,
            "{}: the grid discriminates",
            route.path
        );
    }
}

/// `docs/api.md` names every error code with its status, every route and every request
/// member, so the user-facing page cannot silently fall behind the code.
#[test]
fn the_api_doc_names_every_code_route_and_member() {
    let doc = std::fs::read_to_string(crate_dir().join("../../docs/api.md")).unwrap();
    for code in ErrorCode::ALL {
        let row = format!("| `{code}` | {} |", code.status());
        assert!(doc.contains(&row), "docs/api.md lacks the row {row}");
    }
    for route in ROUTES {
        let row = format!("| {} | `{}` |", route.method.as_str(), route.path);
        assert!(doc.contains(&row), "docs/api.md lacks the route {row}");
        for m in route.body.iter().flat_map(|b| b.members) {
            let row = format!("| `{}` |", m.name);
            assert!(doc.contains(&row), "docs/api.md lacks the member {row}");
        }
    }
    for status in periscope_api_types::DomainResolutionStatus::ALL {
        assert!(doc.contains(&format!("`{}`", status.as_str())));
    }
}

/// Every keyword value under a schema, by path (properties, items, alternatives and all).
fn walk<'a>(v: &'a Value, path: &str, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.to_owned(), v));
    match v {
        Value::Object(o) => o
            .iter()
            .for_each(|(k, x)| walk(x, &format!("{path}/{k}"), out)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| walk(x, &format!("{path}[{i}]"), out)),
        _ => {}
    }
}

/// The schemas derived from the response types state the wire's rules: no member admits
/// `null` (an absent member is omitted), no object closes `additionalProperties` (clients
/// tolerate added members), every format is one the document means (`date-time`, `ipv4`,
/// `ipv6`; no `uint32` or `double` of the generator), and descriptions are one line.
#[test]
fn derived_response_schemas_state_the_wire_rules() {
    let doc = openapi_document();
    let requests: BTreeSet<&str> = ROUTES
        .iter()
        .filter_map(|r| r.body.map(|b| b.schema))
        .collect();
    let mut checked = 0;
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        if requests.contains(name.as_str()) {
            continue;
        }
        let mut all = Vec::new();
        walk(schema, name, &mut all);
        for (path, v) in all {
            let Value::Object(o) = v else { continue };
            assert_ne!(o.get("type"), Some(&json!("null")), "{path}");
            if let Some(Value::Array(types)) = o.get("type") {
                assert!(!types.contains(&json!("null")), "{path}: {types:?}");
            }
            assert_ne!(o.get("additionalProperties"), Some(&json!(false)), "{path}");
            if let Some(format) = o.get("format") {
                assert!(
                    ["date-time", "ipv4", "ipv6"].contains(&format.as_str().unwrap()),
                    "{path}: format {format}"
                );
            }
            if let Some(Value::String(d)) = o.get("description") {
                assert!(!d.contains('\n') && !d.contains("  "), "{path}: {d:?}");
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "the walk reached the schemas ({checked})");
}
