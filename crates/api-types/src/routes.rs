//! The routes of `/v1` as data: method, path, request body, response schema, and which error
//! codes and violation codes each can answer. The OpenAPI document is generated from
//! [`ROUTES`], and the request members come from the same [`Member`] tables [`crate::decode`]
//! checks, so the document cannot drift from the decoder.
//!
//! **Keep true:** when a handler can answer a code, it belongs in its route's `errors` here
//! (the OpenAPI document lists the statuses and codes per route, and schemathesis fails on a
//! status the document does not list).

use periscope_query::ViolationCode;

use crate::error::ErrorCode;
use crate::error::ErrorCode as E;
use crate::request::{ExposureBody, HostDetailBody, Member, QueryBody, RequestBody, SearchBody};

/// An HTTP method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`, no body.
    Get,
    /// `POST` with a JSON body.
    Post,
}

impl Method {
    /// Upper case, as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
        }
    }
}

/// A request body of a route: its schema name and members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    /// Name under `components.schemas`.
    pub schema: &'static str,
    /// The members [`crate::decode`] accepts.
    pub members: &'static [Member],
}

impl Body {
    /// The body of request type `T`.
    pub const fn of<T: RequestBody>() -> Self {
        Self {
            schema: T::SCHEMA,
            members: T::MEMBERS,
        }
    }
}

/// One route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Method.
    pub method: Method,
    /// Full path, e.g. `/v1/search`.
    pub path: &'static str,
    /// OpenAPI `operationId`.
    pub operation_id: &'static str,
    /// One line.
    pub summary: &'static str,
    /// A paragraph.
    pub description: &'static str,
    /// Needs `Authorization: Bearer <API key>`.
    pub authenticated: bool,
    /// A 200 answer spends one search of the daily allowance.
    pub metered: bool,
    /// The JSON body, for `POST` routes.
    pub body: Option<Body>,
    /// Name of the 200 body's schema under `components.schemas`.
    pub response: &'static str,
    /// Every error code the route can answer.
    pub errors: &'static [ErrorCode],
    /// Violation codes of `validation_failed` beyond the member checks of the body (which
    /// the document derives from the members): `(field, code)`.
    pub violations: &'static [(&'static str, &'static str)],
}

impl Route {
    /// The error codes of this route answering with `status`, in [`ErrorCode::ALL`] order.
    pub fn errors_with_status(&self, status: u16) -> Vec<ErrorCode> {
        ErrorCode::ALL
            .iter()
            .copied()
            .filter(|c| c.status() == status && self.errors.contains(c))
            .collect()
    }

    /// The distinct statuses of [`Self::errors`], ascending.
    pub fn error_statuses(&self) -> Vec<u16> {
        let mut statuses: Vec<u16> = self.errors.iter().map(|c| c.status()).collect();
        statuses.sort_unstable();
        statuses.dedup();
        statuses
    }
}

/// Errors of every search-capability `POST` route (search, count, facets, exposure, host
/// detail): body decoding, the account checks, the audit record, concurrency and capacity,
/// and the scan index.
macro_rules! search_capability_errors {
    ($($extra:expr),* $(,)?) => {
        &[
            E::InvalidJson,
            E::OrganizationRequired,
            E::Unauthorized,
            E::PlanExpired,
            E::AccountInactive,
            E::BodyTooLarge,
            E::ValidationFailed,
            E::UserConcurrencyReached,
            E::SearchCapacityExhausted,
            E::CommercialAccessUnavailable,
            E::SearchSourceBusy,
            E::ServiceUnavailable,
            E::AuditUnavailable,
            E::SearchTimeout,
            $($extra,)*
        ]
    };
}

/// Query-language violations on `query` that every search route can answer: the codes of
/// `periscope_query` whose field is `query`, except the endpoint-specific ones.
pub fn query_language_violations() -> Vec<&'static str> {
    ViolationCode::ALL
        .iter()
        .filter(|c| c.field() == "query")
        .filter(|c| {
            !matches!(
                c,
                ViolationCode::QueryTooBroad
                    | ViolationCode::CountNotSupported
                    | ViolationCode::ExposureNotSupported
                    | ViolationCode::FacetsNotSupported
            )
        })
        .map(|c| c.as_str())
        .collect()
}

/// Every route of `/v1`, in the order of the specification's table, then the document.
pub const ROUTES: &[Route] = &[
    Route {
        method: Method::Get,
        path: "/v1/search/capabilities",
        operation_id: "getCapabilities",
        summary: "The query registry version and the protocol registry",
        description: "The protocol tokens the query language accepts, with their registered \
                      ports, address families and evidence kind, sorted by token. The answer \
                      carries `Cache-Control: no-store`; use `catalog_version` to detect a \
                      change. Free.",
        authenticated: true,
        metered: false,
        body: None,
        response: "CapabilitiesResponse",
        errors: &[E::Unauthorized, E::RateLimited, E::ServiceUnavailable],
        violations: &[],
    },
    Route {
        method: Method::Get,
        path: "/v1/allowance",
        operation_id: "getAllowance",
        summary: "The daily search allowance",
        description: "Searches used and remaining today, shared by the browser and every API \
                      key of the person. `allowance` is absent when no daily limit applies. \
                      Never spends a search.",
        authenticated: true,
        metered: false,
        body: None,
        response: "AllowanceResponse",
        errors: &[E::Unauthorized, E::RateLimited, E::ServiceUnavailable],
        violations: &[],
    },
    Route {
        method: Method::Post,
        path: "/v1/search",
        operation_id: "search",
        summary: "One page of hosts matching a query",
        description: "Host results ascending by address, at most `limit` per page. A 200 \
                      answer, even with no hosts, spends one search of the daily allowance; \
                      every other outcome is free. Send `next_cursor` back as `cursor` with \
                      the same query and limit for the next page (a new search).",
        authenticated: true,
        metered: true,
        body: Some(Body::of::<SearchBody>()),
        response: "SearchResponse",
        errors: search_capability_errors![E::CursorGone, E::SearchLimitReached],
        violations: &[
            ("query", "query_too_broad"),
            ("cursor", "invalid"),
            ("cursor", "query_mismatch"),
        ],
    },
    Route {
        method: Method::Post,
        path: "/v1/search/count",
        operation_id: "countSearch",
        summary: "Unique hosts matching an ASN or filter query",
        description: "A count of unique hosts (not services). Exact-IP, CIDR and domain \
                      queries answer violation `count_not_supported`. Free.",
        authenticated: true,
        metered: false,
        body: Some(Body::of::<QueryBody>()),
        response: "CountResponse",
        errors: search_capability_errors![E::RateLimited],
        violations: &[("query", "count_not_supported")],
    },
    Route {
        method: Method::Post,
        path: "/v1/search/facets",
        operation_id: "searchFacets",
        summary: "Suggested filters for a filter query",
        description: "Six groups (port, protocol, product, country, cvss, exploit) of at most \
                      five values, each with the clause to add and the unique hosts the \
                      query would then match. A group that failed or timed out does not fail \
                      the answer (`partial`). Filter queries only; others answer violation \
                      `facets_not_supported`. Free.",
        authenticated: true,
        metered: false,
        body: Some(Body::of::<QueryBody>()),
        response: "FacetsResponse",
        errors: search_capability_errors![E::RateLimited, E::FacetTimeout],
        violations: &[("query", "facets_not_supported")],
    },
    Route {
        method: Method::Post,
        path: "/v1/search/exposure",
        operation_id: "searchExposure",
        summary: "Where the hosts matching a query are, as geotile buckets",
        description: "Totals for the whole matching set and at most 500 geotile buckets at \
                      the requested resolution, most hosts first. Domain queries answer \
                      violation `exposure_not_supported`. Free.",
        authenticated: true,
        metered: false,
        body: Some(Body::of::<ExposureBody>()),
        response: "ExposureResponse",
        errors: search_capability_errors![E::RateLimited],
        violations: &[
            ("query", "exposure_not_supported"),
            ("resolution", "unsupported_resolution"),
        ],
    },
    Route {
        method: Method::Post,
        path: "/v1/hosts/detail",
        operation_id: "hostDetail",
        summary: "One address with a page of all its current services",
        description: "Every current service of the address, whatever query found it, a page \
                      at a time; `next_cursor` continues with the same address. No current \
                      observation answers 404 `host_not_found`. Free.",
        authenticated: true,
        metered: false,
        body: Some(Body::of::<HostDetailBody>()),
        response: "HostDetailResponse",
        errors: search_capability_errors![E::HostNotFound, E::RateLimited],
        violations: &[("ip", "invalid_ip"), ("cursor", "invalid")],
    },
    Route {
        method: Method::Get,
        path: "/v1/openapi.json",
        operation_id: "getOpenApi",
        summary: "This OpenAPI 3.1 document",
        description: "The description of the API. Needs no key.",
        authenticated: false,
        metered: false,
        body: None,
        response: "OpenApiDocument",
        errors: &[],
        violations: &[],
    },
];

/// The error codes no route lists because the server's edge answers them for any request:
/// an unknown path (`not_found`), a documented path with another method
/// (`method_not_allowed`), a body that does not arrive in time (`request_timeout`) and
/// request headers over the server's limit (`headers_too_large`).
pub const ROUTING_ERRORS: &[ErrorCode] = &[
    E::NotFound,
    E::MethodNotAllowed,
    E::RequestTimeout,
    E::HeadersTooLarge,
];

/// The member-check violation codes a body with these members can answer.
pub fn member_violations(members: &[Member]) -> Vec<(&'static str, &'static str)> {
    use crate::request::MemberKind;
    let mut out = Vec::new();
    for m in members {
        if m.required {
            out.push((m.name, "required"));
        }
        out.push((m.name, "wrong_type"));
        match m.kind {
            MemberKind::Integer { .. } => out.push((m.name, "out_of_range")),
            MemberKind::Text {
                min_chars,
                max_chars,
                ..
            } => {
                if min_chars > 1 {
                    out.push((m.name, "out_of_range"));
                }
                if max_chars.is_some() {
                    out.push((m.name, "too_long"));
                }
            }
        }
    }
    out
}
