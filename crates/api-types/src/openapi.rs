//! The OpenAPI 3.1 document of `/v1`, served as-is at `GET /v1/openapi.json`.
//!
//! Paths, request schemas and error responses are generated from [`ROUTES`] and the request
//! [`Member`] tables, so they cannot drift from [`crate::decode`]; response schemas are
//! derived from the response types themselves ([`crate::schema`]), and the tests validate
//! real serialized responses against them. Response objects leave `additionalProperties`
//! open (clients must tolerate added members); request objects close it (unknown members are
//! rejected). A member that can be absent is never `required`.

use serde_json::{Map, Value, json};

use crate::error::ErrorCode;
use crate::request::{IP, MAX_BODY_BYTES, Member, MemberKind, QUERY, RESOLUTION, SEARCH_CURSOR};
use crate::routes::{
    Body, Method, ROUTES, ROUTING_ERRORS, Route, member_violations, query_language_violations,
};

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn header_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/headers/{name}") })
}

/// The OpenAPI 3.1 document.
pub fn openapi_document() -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let method = match route.method {
            Method::Get => "get",
            Method::Post => "post",
        };
        paths.insert(route.path.to_owned(), json!({ method: operation(route) }));
    }
    let mut schemas = crate::schema::response_schemas();
    // The document itself, which no Rust type describes.
    schemas.insert(
        "OpenApiDocument".into(),
        json!({ "type": "object", "description": "This document." }),
    );
    for route in ROUTES {
        if let Some(body) = route.body {
            schemas.insert(body.schema.to_owned(), request_schema(&body));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Periscope API",
            "version": "v1",
            "summary": "Search the current public exposure of IP addresses, networks, domains, \
                        ASNs and organizations.",
            "description": info_description(),
            "license": { "name": "Apache-2.0", "identifier": "Apache-2.0" }
        },
        "servers": [{ "url": "/" }],
        "security": [{ "apiKey": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "psk_<32 base62 characters><6-character checksum>",
                    "description": "A personal API key, created under API access in the \
                                    application and shown once: \
                                    `Authorization: Bearer psk_…` on every request."
                }
            },
            "headers": {
                "X-Request-ID": {
                    "description": "The request's id; the same value as `request_id` in the \
                                    body.",
                    "required": true,
                    "schema": { "type": "string", "minLength": 1 }
                },
                "Cache-Control": {
                    "description": "`no-store`: clients use `catalog_version` to detect a \
                                    change.",
                    "required": true,
                    "schema": { "type": "string", "pattern": "no-store" }
                },
                "Retry-After": {
                    "description": "Seconds to wait before retrying; sent with \
                                    `rate_limited`.",
                    "schema": { "type": "string", "pattern": "^[0-9]+$" }
                }
            },
            "schemas": schemas
        }
    })
}

fn info_description() -> String {
    let [
        not_found,
        method_not_allowed,
        request_timeout,
        headers_too_large,
    ] = ROUTING_ERRORS
    else {
        return String::new();
    };
    format!(
        "Every route needs `Authorization: Bearer <API key>` except this document. Request \
         bodies are JSON sent with `Content-Type: application/json`, at most {MAX_BODY_BYTES} \
         bytes, carrying only the documented members. Every response carries `X-Request-ID`, \
         and every body its value as `request_id`. Errors share one shape (`ErrorBody`); only \
         `plan_expired`, `organization_required` and `unauthorized` need a person, every other \
         error can be retried (back off on 503 and 504). An unknown path answers {} `{}`, a \
         documented path with another method {} `{}`, a body that does not arrive in time {} \
         `{}`, request headers over 16 KiB or 100 lines {} `{}`. Within v1, response members \
         may be added: clients ignore members they do not know.",
        not_found.status(),
        not_found.as_str(),
        method_not_allowed.status(),
        method_not_allowed.as_str(),
        request_timeout.status(),
        request_timeout.as_str(),
        headers_too_large.status(),
        headers_too_large.as_str(),
    )
}

fn operation(route: &Route) -> Value {
    let mut op = Map::new();
    op.insert("operationId".into(), json!(route.operation_id));
    op.insert("summary".into(), json!(route.summary));
    op.insert("description".into(), json!(route.description));
    // Whether a 200 answer spends a search of the daily allowance.
    op.insert("x-metered".into(), json!(route.metered));
    if !route.authenticated {
        op.insert("security".into(), json!([]));
    }
    if let Some(body) = route.body {
        op.insert(
            "requestBody".into(),
            json!({
                "required": true,
                "content": { "application/json": { "schema": schema_ref(body.schema) } }
            }),
        );
    }
    let mut responses = Map::new();
    let mut ok_headers = Map::new();
    if route.authenticated {
        ok_headers.insert("X-Request-ID".into(), header_ref("X-Request-ID"));
    }
    if route.operation_id == "getCapabilities" {
        ok_headers.insert("Cache-Control".into(), header_ref("Cache-Control"));
    }
    let mut ok = json!({
        "description": "Success.",
        "content": { "application/json": { "schema": schema_ref(route.response) } }
    });
    if !ok_headers.is_empty() {
        ok["headers"] = Value::Object(ok_headers);
    }
    responses.insert("200".into(), ok);
    for status in route.error_statuses() {
        responses.insert(status.to_string(), error_response(route, status));
    }
    op.insert("responses".into(), Value::Object(responses));
    Value::Object(op)
}

fn error_response(route: &Route, status: u16) -> Value {
    let codes = route.errors_with_status(status);
    let mut description = String::from("`code` is one of:\n");
    for code in &codes {
        description.push_str(&format!("- `{}`: {}\n", code.as_str(), code.message()));
    }
    if codes.contains(&ErrorCode::ValidationFailed) {
        description.push_str("\nViolations (`field`: `code`):\n");
        let mut violations: Vec<(String, String)> = Vec::new();
        if let Some(body) = route.body {
            violations.push((
                "body".into(),
                "wrong_type (the body is not a JSON object)".into(),
            ));
            for (field, code) in member_violations(body.members) {
                violations.push((field.into(), code.into()));
            }
            violations.push((
                "<member name>".into(),
                "unknown_field (an undocumented member)".into(),
            ));
            if body.members.iter().any(|m| m.name == "query") {
                violations.push(("query".into(), query_language_violations().join(", ")));
            }
        }
        for (field, code) in route.violations {
            violations.push(((*field).into(), (*code).into()));
        }
        for (field, code) in violations {
            description.push_str(&format!("- `{field}`: {code}\n"));
        }
    }
    let mut headers = Map::new();
    headers.insert("X-Request-ID".into(), header_ref("X-Request-ID"));
    if codes.contains(&ErrorCode::RateLimited) {
        headers.insert("Retry-After".into(), header_ref("Retry-After"));
    }
    json!({
        "description": description.trim_end(),
        "headers": headers,
        "content": { "application/json": { "schema": schema_ref("ErrorBody") } }
    })
}

/// The schema of a request body, from its member table.
fn request_schema(body: &Body) -> Value {
    let mut properties = Map::new();
    for m in body.members {
        properties.insert(m.name.to_owned(), member_schema(m));
    }
    let required: Vec<&str> = body
        .members
        .iter()
        .filter(|m| m.required)
        .map(|m| m.name)
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// One member: its type (an optional member also accepts `null`, meaning absent), bounds and
/// default, and the value formats the service checks.
fn member_schema(m: &Member) -> Value {
    let mut s = Map::new();
    let base = match m.kind {
        MemberKind::Text {
            min_chars,
            max_chars,
            default,
        } => {
            if min_chars > 0 {
                s.insert("minLength".into(), json!(min_chars));
            }
            if let Some(max) = max_chars {
                s.insert("maxLength".into(), json!(max));
            }
            if let Some(d) = default {
                s.insert("default".into(), json!(d));
            }
            "string"
        }
        MemberKind::Integer { min, max, default } => {
            s.insert("minimum".into(), json!(min));
            s.insert("maximum".into(), json!(max));
            if let Some(d) = default {
                s.insert("default".into(), json!(d));
            }
            "integer"
        }
    };
    let ty = if m.required {
        json!(base)
    } else {
        json!([base, "null"])
    };
    s.insert("type".into(), ty);
    s.insert("description".into(), json!(m.description));
    if *m == QUERY {
        // Queries every search route accepts, so tools that send documented examples (the
        // schemathesis examples phase) exercise answered searches, not only refusals.
        s.insert(
            "examples".into(),
            json!(["port:22", "port:443 protocol:https", "exploit:yes"]),
        );
    } else if *m == SEARCH_CURSOR {
        s.insert("pattern".into(), json!("^sc1_[A-Za-z0-9_-]{32}$"));
    } else if *m == RESOLUTION {
        s.insert("enum".into(), json!(["global", "regional", "local", null]));
    } else if *m == IP {
        s.insert(
            "anyOf".into(),
            json!([{ "format": "ipv4" }, { "format": "ipv6" }]),
        );
    }
    Value::Object(s)
}
