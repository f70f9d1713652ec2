//! The wire contract of Periscope's JSON API under `/v1`: the only place that knows what a
//! request body may hold and what a response body looks like.
//!
//! It owns
//! - [`request`]: the member tables of every `POST` route and [`decode`], which checks a raw
//!   body (size, `Content-Type`, JSON, every member) and returns a typed [`SearchBody`],
//!   [`QueryBody`], [`ExposureBody`] or [`HostDetailBody`], or a [`RequestError`] with every
//!   violation at once;
//! - [`error`]: the error table, [`ErrorCode`] (every top-level code with its status, its
//!   message and the browser's [`WebWording`]), which the service, the API, the web pages and
//!   the OpenAPI document read; [`Violation`] and [`ErrorBody`], the shape of every non-200
//!   answer;
//! - [`host`] and [`response`]: the 200 bodies, built from the index's results
//!   (`periscope_index::api`) and the protocol registry;
//! - [`routes`]: the routes as data ([`ROUTES`]) — method, path, body, response and possible
//!   errors — from which [`openapi`] generates the OpenAPI 3.1 document
//!   ([`openapi_document`]), its response schemas derived from the response types
//!   ([`schema`], `schemars`).
//!
//! The user-facing description is `docs/api.md`.
//!
//! What this crate does not do: parse the query language, check `ip`, `resolution` or the
//! cursors (the service layer does, with `periscope_query`, and turns its violations into
//! [`Violation`]s with `From`), authenticate, count the allowance, or speak HTTP (the `api`
//! crate maps [`ErrorCode::status`] and bodies to responses).
//!
//! Names: the wire types are named after the specification's resources (`HostResult`,
//! `Location`, `Service`, …) and so share names with `periscope_index::api::HostResult` and
//! `periscope_model::record::{Host, Location, Service}`; import them qualified
//! (`api_types::HostResult`) where both are in scope. [`Violation`] carries a `message`
//! besides the specification's `{field, code}`, an added member clients may ignore.
//!
//! **Invariant:** no response member is ever JSON `null`; an absent optional member is
//! omitted. Timestamps are RFC 3339 UTC with a trailing `Z`.
//! **Invariant:** the OpenAPI document's request schemas are generated from the same member
//! tables [`decode`] checks, and its response schemas are derived from the response types
//! (`JsonSchema`, [`schema`]); tests validate serialized responses against those schemas
//! and the API's suite compares the document as served with its snapshot
//! (`crates/api/tests/api/snapshots`, `docs/testing.md`).
//! **Boundary:** depends on `periscope-model` (records, registry), `periscope-query`
//! (violations, canonical clauses, resolutions), `periscope-index` (result types) and
//! `schemars` (the schema derive); only this crate derives `Serialize` for the API's wire.

pub mod error;
pub mod host;
pub mod openapi;
pub mod request;
pub mod response;
pub mod routes;
pub mod schema;

pub use error::{ErrorBody, ErrorCode, Violation, WebWording};
pub use host::{
    AsnMatch, DomainItem, DomainMatch, Domains, Evidence, HostResult, Location, Network,
    OrganizationMatch, Service, Services, SummaryFields, Tls, Vulnerabilities, Whois,
};
pub use openapi::openapi_document;
pub use request::{
    ExposureBody, HostDetailBody, MAX_BODY_BYTES, Member, MemberKind, Members, QueryBody,
    RequestBody, RequestError, SearchBody, decode, is_json_content_type,
};
pub use response::{
    Allowance, AllowanceResponse, CapabilitiesResponse, CountEstimate, CountResponse,
    DomainResolution, DomainResolutionStatus, ExposureLocation, ExposureResponse, FacetGroup,
    FacetItem, FacetsResponse, HostDetailResponse, ProtocolInfo, SearchResponse,
};
pub use routes::{Method, ROUTES, Route};
