//! The OpenAPI 3.1 document of `/v1`, served as-is at `GET /v1/openapi.json`.
//!
//! Paths, request schemas and error responses are generated from [`ROUTES`] and the request
//! [`Member`] tables, so they cannot drift from [`crate::decode`]; response schemas are
//! written here by hand next to nothing else, and the tests validate real serialized
//! responses against them. Response objects leave `additionalProperties` open (clients must
//! tolerate added members); request objects close it (unknown members are rejected). A member
//! that can be absent is never `required`.

use serde_json::{Map, Value, json};

use crate::error::ErrorCode;
use crate::request::{IP, MAX_BODY_BYTES, Member, MemberKind, QUERY, RESOLUTION, SEARCH_CURSOR};
use crate::response::DomainResolutionStatus;
use crate::routes::{
    Body, Method, ROUTES, ROUTING_ERRORS, Route, member_violations, query_language_violations,
};

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn header_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/headers/{name}") })
}

/// An IPv4 or IPv6 address.
fn ip_address() -> Value {
    json!({
        "type": "string",
        "anyOf": [
            { "type": "string", "format": "ipv4" },
            { "type": "string", "format": "ipv6" }
        ]
    })
}

fn timestamp(description: &str) -> Value {
    json!({
        "type": "string",
        "format": "date-time",
        "pattern": "Z$",
        "description": format!("{description} RFC 3339, UTC, with a trailing `Z`.")
    })
}

fn text(description: &str) -> Value {
    json!({ "type": "string", "description": description })
}

fn string_enum(values: &[&str], description: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": description })
}

fn array_of(items: Value, description: &str) -> Value {
    json!({ "type": "array", "items": items, "description": description })
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
    let mut schemas = response_schemas();
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

/// Every response schema, and the error body.
fn response_schemas() -> Map<String, Value> {
    let request_id = text("The request's id, also in the `X-Request-ID` header.");
    let count = schema_ref("CountEstimate");
    let schemas = json!({
        "ErrorBody": {
            "type": "object",
            "required": ["request_id", "code", "message", "violations"],
            "properties": {
                "request_id": request_id,
                "code": string_enum(
                    &ErrorCode::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                    "The error code; the HTTP status follows from it."
                ),
                "message": text("What happened, for people."),
                "violations": array_of(
                    schema_ref("Violation"),
                    "Non-empty only for `validation_failed`."
                )
            }
        },
        "Violation": {
            "type": "object",
            "required": ["field", "code", "message"],
            "properties": {
                "field": text("The member at fault (`query`, `limit`, `cursor`, `resolution`, \
                               `ip`, an unknown member's name, or `body`)."),
                "code": text("The violation code, e.g. `too_long` or `invalid_port`."),
                "message": text("What is wrong and how to fix it.")
            }
        },
        "CapabilitiesResponse": {
            "type": "object",
            "required": ["request_id", "query_registry_version", "catalog_version", "protocols"],
            "properties": {
                "request_id": request_id,
                "query_registry_version": text("Currently `service-v5`."),
                "catalog_version": text("Opaque; changes whenever the protocol set changes."),
                "protocols": array_of(schema_ref("ProtocolEntry"), "Sorted by `value`.")
            }
        },
        "ProtocolEntry": {
            "type": "object",
            "required": ["value", "ports", "ipv4", "ipv6", "evidence_kind"],
            "properties": {
                "value": text("The exact lowercase protocol token."),
                "ports": {
                    "type": "array",
                    "items": { "type": "integer", "minimum": 1, "maximum": 65535 },
                    "uniqueItems": true,
                    "description": "Registered ports, sorted."
                },
                "ipv4": { "type": "boolean" },
                "ipv6": { "type": "boolean" },
                "evidence_kind": string_enum(
                    &["http", "ssh", "summary"],
                    "The kind of typed evidence its services carry."
                )
            }
        },
        "Allowance": {
            "type": "object",
            "required": ["limit", "used", "remaining", "resets_at"],
            "properties": {
                "limit": { "type": "integer", "minimum": 0, "description": "Searches per UTC day." },
                "used": { "type": "integer", "minimum": 0, "description": "Searches spent today." },
                "remaining": { "type": "integer", "minimum": 0 },
                "resets_at": timestamp("The next midnight UTC.")
            }
        },
        "AllowanceResponse": {
            "type": "object",
            "required": ["request_id"],
            "properties": {
                "request_id": request_id,
                "allowance": {
                    "$ref": "#/components/schemas/Allowance",
                    "description": "Absent when no daily limit applies (not the same as none \
                                    remaining)."
                }
            }
        },
        "SearchResponse": {
            "type": "object",
            "required": ["request_id", "results"],
            "properties": {
                "request_id": request_id,
                "results": array_of(
                    schema_ref("HostResult"),
                    "One page, ascending by address (IPv4 first), at most `limit`."
                ),
                "next_cursor": {
                    "type": "string",
                    "pattern": "^sc1_[A-Za-z0-9_-]{32}$",
                    "description": "Present only when more results exist. One use, with the \
                                    same query and limit."
                },
                "allowance": {
                    "$ref": "#/components/schemas/Allowance",
                    "description": "Already includes this search; absent when no daily limit \
                                    applies."
                },
                "domain_resolution": schema_ref("DomainResolution")
            }
        },
        "DomainResolution": {
            "type": "object",
            "required": ["status", "address_count"],
            "description": "Domain searches only.",
            "properties": {
                "status": string_enum(
                    &DomainResolutionStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                    "The outcome of resolving the name."
                ),
                "address_count": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Public routable addresses used as targets."
                }
            }
        },
        "CountEstimate": {
            "type": "object",
            "required": ["value", "relation"],
            "properties": {
                "value": { "type": "integer", "minimum": 0 },
                "relation": string_enum(&["exact", "approximate"], "Whether `value` is exact.")
            }
        },
        "CountResponse": {
            "type": "object",
            "required": ["request_id", "unique_hosts"],
            "properties": {
                "request_id": request_id,
                "unique_hosts": count
            }
        },
        "FacetsResponse": {
            "type": "object",
            "required": ["request_id", "partial", "can_add_filters", "groups"],
            "properties": {
                "request_id": request_id,
                "partial": { "type": "boolean", "description": "Some group did not come back." },
                "can_add_filters": {
                    "type": "boolean",
                    "description": "False once the query has three clauses."
                },
                "groups": array_of(
                    schema_ref("FacetGroup"),
                    "port, protocol, product, country, cvss, exploit."
                )
            }
        },
        "FacetGroup": {
            "type": "object",
            "required": ["field", "status", "items"],
            "properties": {
                "field": string_enum(
                    &["port", "protocol", "product", "country", "cvss", "exploit"],
                    "The group."
                ),
                "status": string_enum(&["available", "unavailable", "timed_out"], "Whether it came back."),
                "items": {
                    "type": "array",
                    "items": schema_ref("FacetItem"),
                    "maxItems": 5
                },
                "error_code": string_enum(
                    &["facet_unavailable", "facet_timeout"],
                    "Present when the group did not come back."
                )
            }
        },
        "FacetItem": {
            "type": "object",
            "required": ["value", "clause", "selected", "unique_hosts"],
            "properties": {
                "value": text("Display value, e.g. `22`, `ssh`, `DE`, `9.0-10.0`, `yes`."),
                "clause": text("The clause to add to the query, e.g. `port:22`."),
                "selected": { "type": "boolean", "description": "Already in the query." },
                "unique_hosts": count
            }
        },
        "ExposureResponse": {
            "type": "object",
            "required": [
                "request_id", "unique_hosts", "service_count", "resolution",
                "geotile_precision", "locations_relation", "locations"
            ],
            "properties": {
                "request_id": request_id,
                "unique_hosts": count,
                "service_count": { "type": "integer", "minimum": 0 },
                "resolution": string_enum(&["global", "regional", "local"], "As requested."),
                "geotile_precision": { "type": "integer", "enum": [4, 6, 8] },
                "locations_relation": string_enum(
                    &["complete", "bounded"],
                    "`bounded`: the 500-bucket cap was reached."
                ),
                "locations": {
                    "type": "array",
                    "items": schema_ref("ExposureLocation"),
                    "maxItems": 500
                }
            }
        },
        "ExposureLocation": {
            "type": "object",
            "required": ["key", "latitude", "longitude", "unique_hosts", "service_count"],
            "properties": {
                "key": {
                    "type": "string",
                    "pattern": "^[0-9]+/[0-9]+/[0-9]+$",
                    "description": "Opaque geotile address `<zoom>/<x>/<y>`; never a label."
                },
                "latitude": { "type": "number", "minimum": -90, "maximum": 90 },
                "longitude": { "type": "number", "minimum": -180, "maximum": 180 },
                "unique_hosts": { "type": "integer", "minimum": 1 },
                "service_count": { "type": "integer", "minimum": 0 },
                "country_code": {
                    "type": "string",
                    "pattern": "^[A-Z]{2}$",
                    "description": "The country with most hosts; absent when no host has one."
                },
                "country_count": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Distinct countries; absent with `country_code`."
                }
            }
        },
        "HostDetailResponse": {
            "type": "object",
            "required": ["request_id", "host"],
            "properties": {
                "request_id": request_id,
                "host": schema_ref("HostResult"),
                "next_cursor": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 512,
                    "description": "The next page of services of this address; absent on the \
                                    last page."
                }
            }
        },
        "HostResult": host_result_schema(),
        "Location": {
            "type": "object",
            "description": "GeoIP, coarsest to finest. A level not recorded is absent; a level \
                            with the same name as the coarser one shown is left out.",
            "properties": {
                "continent": text("Continent name."),
                "country_code": { "type": "string", "pattern": "^[A-Z]{2}$" },
                "country_name": { "type": "string" },
                "subdivision_1": text("First-level subdivision."),
                "subdivision_2": text("Second-level subdivision."),
                "city": { "type": "string" },
                "latitude": { "type": "number", "minimum": -90, "maximum": 90 },
                "longitude": { "type": "number", "minimum": -180, "maximum": 180 },
                "accuracy_radius_km": {
                    "type": "number",
                    "minimum": 0,
                    "description": "The radius GeoIP claims for the position."
                }
            }
        },
        "Network": {
            "type": "object",
            "required": ["asn"],
            "properties": {
                "asn": { "type": "integer", "minimum": 1, "maximum": 4294967295_u64 },
                "organization": { "type": "string" }
            }
        },
        "Whois": {
            "type": "object",
            "properties": {
                "organization": { "type": "string" },
                "netname": { "type": "string" },
                "cidr": { "type": "string" },
                "registry": { "type": "string" },
                "country_code": { "type": "string", "pattern": "^[A-Z]{2}$" }
            }
        },
        "DomainItem": {
            "type": "object",
            "required": ["name", "source"],
            "properties": {
                "name": { "type": "string" },
                "source": string_enum(
                    &["reverse_dns", "dns_name", "domain", "certificate_subject", "domain_scan"],
                    "Where the name was recorded."
                )
            }
        },
        "Service": {
            "type": "object",
            "required": ["port", "protocol", "observed_at"],
            "properties": {
                "port": { "type": "integer", "minimum": 1, "maximum": 65535 },
                "protocol": text("A protocol token of the registry."),
                "observed_at": timestamp("When the current observation was made."),
                "product": text("Product title from CPE enrichment."),
                "version": { "type": "string" },
                "certificate_names": array_of(json!({ "type": "string" }), "Leaf-certificate names."),
                "vulnerabilities": schema_ref("Vulnerabilities"),
                "evidence": array_of(schema_ref("Evidence"), "Typed evidence."),
                "match_reasons": array_of(
                    json!({ "type": "string" }),
                    "The query's service-level clauses, when this service satisfies all of them."
                )
            }
        },
        "Vulnerabilities": {
            "type": "object",
            "required": ["cve_count", "has_exploits"],
            "description": "Absent from a service when enrichment was unavailable (not clean).",
            "properties": {
                "cve_count": { "type": "integer", "minimum": 0 },
                "has_exploits": { "type": "boolean" },
                "max_cvss": { "type": "number", "minimum": 0, "maximum": 10 }
            }
        },
        "Evidence": {
            "description": "Tagged by `kind`.",
            "oneOf": [
                schema_ref("HttpEvidence"),
                schema_ref("SshEvidence"),
                schema_ref("SummaryEvidence")
            ],
            "discriminator": {
                "propertyName": "kind",
                "mapping": {
                    "http": "#/components/schemas/HttpEvidence",
                    "ssh": "#/components/schemas/SshEvidence",
                    "summary": "#/components/schemas/SummaryEvidence"
                }
            }
        },
        "HttpEvidence": {
            "type": "object",
            "required": ["kind"],
            "description": "HTTP and HTTPS. Status, title and server only when the exchange \
                            completed cleanly.",
            "properties": {
                "kind": { "const": "http" },
                "status_code": { "type": "integer", "minimum": 100, "maximum": 599 },
                "title": { "type": "string" },
                "server": { "type": "string" },
                "tls": schema_ref("Tls")
            }
        },
        "Tls": {
            "type": "object",
            "description": "HTTPS only. Never chains, keys or full distinguished names.",
            "properties": {
                "version": { "type": "string" },
                "cipher_suite": { "type": "string" },
                "issuer_common_name": { "type": "string" },
                "valid_from": timestamp("Start of validity."),
                "valid_until": timestamp("End of validity."),
                "fingerprint_sha256": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
                "browser_trusted": { "type": "boolean" }
            }
        },
        "SshEvidence": {
            "type": "object",
            "required": ["kind"],
            "properties": {
                "kind": { "const": "ssh" },
                "protocol_version": { "type": "string" },
                "software_version": { "type": "string" },
                "host_key_algorithm": { "type": "string" },
                "host_key_fingerprint": { "type": "string" },
                "comments": { "type": "string" },
                "hassh": { "type": "string", "pattern": "^[0-9a-f]{32}$" }
            }
        },
        "SummaryEvidence": {
            "type": "object",
            "required": ["kind", "fields"],
            "properties": {
                "kind": { "const": "summary" },
                "fields": {
                    "type": "object",
                    "additionalProperties": { "type": "string" },
                    "maxProperties": 16,
                    "description": "A bounded summary of the service, key to value."
                }
            }
        },
        "OrganizationMatch": {
            "type": "object",
            "required": ["source", "value"],
            "properties": {
                "source": string_enum(
                    &[
                        "as_organization", "whois_description", "whois_netname",
                        "network_provider", "certificate_subject", "certificate_issuer"
                    ],
                    "The evidence source."
                ),
                "value": text("The stored value that matched."),
                "port": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 65535,
                    "description": "Certificate sources only."
                },
                "protocol": text("Certificate sources only.")
            }
        },
        "DomainMatch": {
            "type": "object",
            "required": ["source", "value"],
            "properties": {
                "source": string_enum(
                    &[
                        "dns_resolution", "stored_domain", "stored_dns_name",
                        "stored_reverse_dns", "domain_scan"
                    ],
                    "The evidence source."
                ),
                "value": text("The matched name.")
            }
        },
        "AsnMatch": {
            "type": "object",
            "required": ["source", "asn"],
            "properties": {
                "source": string_enum(
                    &["research_best_asn", "bgp_best_asn", "network_asn"],
                    "The attribution."
                ),
                "asn": { "type": "integer", "minimum": 1, "maximum": 4294967295_u64 }
            }
        },
        "OpenApiDocument": {
            "type": "object",
            "description": "This document."
        }
    });
    match schemas {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn host_result_schema() -> Value {
    let listing = |items: Value, description: &str| {
        json!({
            "type": "object",
            "required": ["items", "has_more"],
            "description": description,
            "properties": {
                "items": { "type": "array", "items": items },
                "has_more": { "type": "boolean" }
            }
        })
    };
    let matches = |name: &str, description: &str| {
        json!({
            "type": "array",
            "items": schema_ref(name),
            "minItems": 1,
            "description": description
        })
    };
    json!({
        "type": "object",
        "required": ["ip"],
        "description": "One unique address. Every member except `ip` may be absent.",
        "properties": {
            "ip": ip_address(),
            "location": schema_ref("Location"),
            "network": schema_ref("Network"),
            "whois": schema_ref("Whois"),
            "reverse_dns": text("The stored reverse-DNS name (IPv4 only)."),
            "domains": listing(
                schema_ref("DomainItem"),
                "Stored DNS names, each once; capped, not a full inventory."
            ),
            "services": listing(
                schema_ref("Service"),
                "Services by port, then protocol. Absent on domain and ASN results."
            ),
            "organization_matches": matches("OrganizationMatch", "Organization queries only."),
            "domain_matches": matches("DomainMatch", "Domain queries only."),
            "asn_matches": matches("AsnMatch", "ASN queries only.")
        }
    })
}
