//! The 200 bodies of every route (SPEC "Endpoints"), each with the `request_id` the caller
//! passes in, and their constructors from the index's answers
//! (`periscope_index::api::{SearchPage, Count, Facets, Exposure, HostDetail}`) and the
//! protocol registry. The host result itself is in [`crate::host`].
//!
//! Optional members are omitted when absent, never `null`. Each type derives its schema in the
//! OpenAPI document (`crate::schema`): the doc comments of the members are their
//! descriptions there.

use periscope_index::api::{
    Count, Exposure, ExposureBucket, FacetGroup as IndexFacetGroup, FacetStatus,
    FacetValue as IndexFacetValue, Facets, HostDetail, HostResult as IndexHostResult, Relation,
};
use periscope_model::Timestamp;
use periscope_model::protocol::{self, ProtocolEntry};
use periscope_query::FilterQuery;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use crate::host::HostResult;
use crate::schema::string_enum;

/// `GET /v1/search/capabilities`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CapabilitiesResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// Currently `service-v5`.
    pub query_registry_version: &'static str,
    /// Opaque; changes whenever the protocol set changes.
    pub catalog_version: &'static str,
    /// Sorted by `value`.
    pub protocols: Vec<ProtocolInfo>,
}

impl CapabilitiesResponse {
    /// The capabilities of this build: the whole protocol registry.
    pub fn new(request_id: impl Into<String>) -> Self {
        Self {
            request_id: request_id.into(),
            query_registry_version: protocol::QUERY_REGISTRY_VERSION,
            catalog_version: protocol::catalog_version(),
            protocols: protocol::REGISTRY.iter().map(ProtocolInfo::from).collect(),
        }
    }
}

/// One protocol registry entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(rename = "ProtocolEntry")]
pub struct ProtocolInfo {
    /// The exact lowercase protocol token.
    pub value: &'static str,
    /// Registered ports, sorted.
    #[schemars(extend(
        "items" = { "type": "integer", "minimum": 1, "maximum": 65535 },
        "uniqueItems" = true
    ))]
    pub ports: &'static [u16],
    /// Scanned over IPv4.
    pub ipv4: bool,
    /// Scanned over IPv6.
    pub ipv6: bool,
    /// The kind of typed evidence its services carry.
    #[schemars(extend("enum" = ["http", "ssh", "summary"]))]
    pub evidence_kind: &'static str,
}

impl From<&ProtocolEntry> for ProtocolInfo {
    fn from(e: &ProtocolEntry) -> Self {
        Self {
            value: e.value,
            ports: e.ports,
            ipv4: e.ipv4,
            ipv6: e.ipv6,
            evidence_kind: e.evidence_kind.as_str(),
        }
    }
}

/// The daily search allowance (in the specification, "Allowance").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Allowance {
    /// Searches per UTC day.
    pub limit: u32,
    /// Searches spent today.
    // May exceed `limit` after the limit was lowered.
    pub used: u32,
    /// `limit - used`, never below zero.
    pub remaining: u32,
    /// The next midnight UTC. RFC 3339, UTC, with a trailing `Z`.
    #[schemars(schema_with = "crate::schema::timestamp")]
    pub resets_at: String,
}

impl Allowance {
    /// An allowance of `limit` with `used` spent, resetting at `resets_at`.
    pub fn new(limit: u32, used: u32, resets_at: Timestamp) -> Self {
        Self {
            limit,
            used,
            remaining: limit.saturating_sub(used),
            resets_at: resets_at.to_string(),
        }
    }
}

/// `GET /v1/allowance`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct AllowanceResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// Absent when no daily limit applies (not the same as none remaining).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowance: Option<Allowance>,
}

/// The outcome of resolving a domain query's name (DECISIONS.md wire strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DomainResolutionStatus {
    /// Public addresses were returned.
    Resolved,
    /// The name does not exist or has no A/AAAA records.
    NotFound,
    /// DNS did not answer in time.
    TimedOut,
    /// DNS failed.
    Failed,
    /// DNS answered only with addresses that are not public and routable.
    NoPublicAddress,
}

/// The wire strings of [`DomainResolutionStatus::ALL`], in place where a member has this type.
impl JsonSchema for DomainResolutionStatus {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "DomainResolutionStatus".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        string_enum(Self::ALL.iter().map(|s| s.as_str()))
    }
}

impl DomainResolutionStatus {
    /// Every status.
    pub const ALL: [DomainResolutionStatus; 5] = [
        Self::Resolved,
        Self::NotFound,
        Self::TimedOut,
        Self::Failed,
        Self::NoPublicAddress,
    ];

    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Resolved => "resolved",
            Self::NotFound => "not_found",
            Self::TimedOut => "timed_out",
            Self::Failed => "failed",
            Self::NoPublicAddress => "no_public_address",
        }
    }
}

/// Domain searches only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct DomainResolution {
    /// The outcome of resolving the name.
    pub status: DomainResolutionStatus,
    /// Public routable addresses used as targets.
    pub address_count: u32,
}

/// `POST /v1/search`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SearchResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// One page, ascending by address (IPv4 first), at most `limit`.
    pub results: Vec<HostResult>,
    /// Present only when more results exist. One use, with the same query and limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^sc1_[A-Za-z0-9_-]{32}$"))]
    pub next_cursor: Option<String>,
    /// Already includes this search; absent when no daily limit applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowance: Option<Allowance>,
    /// The outcome of resolving a domain query's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_resolution: Option<DomainResolution>,
}

impl SearchResponse {
    /// A page of results with no cursor, allowance or domain resolution; set those fields
    /// as they apply.
    pub fn new(request_id: impl Into<String>, hosts: &[IndexHostResult]) -> Self {
        Self {
            request_id: request_id.into(),
            results: hosts.iter().map(HostResult::from).collect(),
            next_cursor: None,
            allowance: None,
            domain_resolution: None,
        }
    }
}

/// A count of unique hosts (in the specification, "Count estimate").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CountEstimate {
    /// The number.
    pub value: u64,
    /// Whether `value` is exact.
    #[schemars(extend("enum" = ["exact", "approximate"]))]
    pub relation: &'static str,
}

impl From<Count> for CountEstimate {
    fn from(c: Count) -> Self {
        Self {
            value: c.value,
            relation: match c.relation {
                Relation::Exact => "exact",
                Relation::Approximate => "approximate",
            },
        }
    }
}

/// `POST /v1/search/count`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct CountResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// Unique hosts matching the query.
    pub unique_hosts: CountEstimate,
}

impl CountResponse {
    /// The answer for a count.
    pub fn new(request_id: impl Into<String>, count: Count) -> Self {
        Self {
            request_id: request_id.into(),
            unique_hosts: count.into(),
        }
    }
}

/// `POST /v1/search/facets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FacetsResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// Some group did not come back.
    pub partial: bool,
    /// False once the query has three clauses.
    pub can_add_filters: bool,
    /// port, protocol, product, country, cvss, exploit.
    pub groups: Vec<FacetGroup>,
}

impl FacetsResponse {
    /// The answer for the facets of `query`.
    pub fn new(request_id: impl Into<String>, query: &FilterQuery, facets: &Facets) -> Self {
        Self {
            request_id: request_id.into(),
            partial: facets
                .groups
                .iter()
                .any(|g| g.status != FacetStatus::Available),
            can_add_filters: !query.is_full(),
            groups: facets.groups.iter().map(FacetGroup::from).collect(),
        }
    }
}

/// One facet group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FacetGroup {
    /// The group.
    #[schemars(extend("enum" = ["port", "protocol", "product", "country", "cvss", "exploit"]))]
    pub field: &'static str,
    /// Whether it came back.
    #[schemars(extend("enum" = ["available", "unavailable", "timed_out"]))]
    pub status: &'static str,
    /// At most five values (none when the group did not come back).
    #[schemars(length(max = 5))]
    pub items: Vec<FacetItem>,
    /// Present when the group did not come back.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["facet_unavailable", "facet_timeout"]))]
    pub error_code: Option<&'static str>,
}

impl From<&IndexFacetGroup> for FacetGroup {
    fn from(g: &IndexFacetGroup) -> Self {
        let (status, error_code) = match g.status {
            FacetStatus::Available => ("available", None),
            FacetStatus::Unavailable => ("unavailable", Some("facet_unavailable")),
            FacetStatus::TimedOut => ("timed_out", Some("facet_timeout")),
        };
        Self {
            field: g.field.as_str(),
            status,
            items: g.items.iter().map(FacetItem::from).collect(),
            error_code,
        }
    }
}

/// One suggested value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct FacetItem {
    /// Display value, e.g. `22`, `ssh`, `DE`, `9.0-10.0`, `yes`.
    pub value: String,
    /// The clause to add to the query, e.g. `port:22`.
    // In canonical form.
    pub clause: String,
    /// Already in the query.
    pub selected: bool,
    /// Hosts the query would match with the clause added.
    pub unique_hosts: CountEstimate,
}

impl From<&IndexFacetValue> for FacetItem {
    fn from(v: &IndexFacetValue) -> Self {
        Self {
            value: v.value.clone(),
            clause: v.clause.to_string(),
            selected: v.selected,
            unique_hosts: v.unique_hosts.into(),
        }
    }
}

/// `POST /v1/search/exposure`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExposureResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// Hosts matching the query, positioned or not.
    pub unique_hosts: CountEstimate,
    /// Services over the whole matching set.
    pub service_count: u64,
    /// As requested.
    #[schemars(extend("enum" = ["global", "regional", "local"]))]
    pub resolution: &'static str,
    /// The geotile zoom of the resolution.
    #[schemars(extend("enum" = [4, 6, 8]))]
    pub geotile_precision: u8,
    /// `bounded`: the 500-bucket cap was reached.
    #[schemars(extend("enum" = ["complete", "bounded"]))]
    pub locations_relation: &'static str,
    /// The buckets, most hosts first.
    #[schemars(length(max = 500))]
    pub locations: Vec<ExposureLocation>,
}

impl ExposureResponse {
    /// The answer for an exposure.
    pub fn new(request_id: impl Into<String>, exposure: &Exposure) -> Self {
        Self {
            request_id: request_id.into(),
            unique_hosts: exposure.unique_hosts.into(),
            service_count: exposure.service_count,
            resolution: exposure.resolution.as_str(),
            geotile_precision: exposure.resolution.geotile_precision(),
            locations_relation: if exposure.bounded {
                "bounded"
            } else {
                "complete"
            },
            locations: exposure
                .buckets
                .iter()
                .map(ExposureLocation::from)
                .collect(),
        }
    }
}

/// One geotile bucket.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ExposureLocation {
    /// Opaque geotile address `<zoom>/<x>/<y>`; never a label.
    #[schemars(regex(pattern = "^[0-9]+/[0-9]+/[0-9]+$"))]
    pub key: String,
    /// Centroid latitude of the bucket's hosts.
    #[schemars(range(min = -90, max = 90))]
    pub latitude: f64,
    /// Centroid longitude.
    #[schemars(range(min = -180, max = 180))]
    pub longitude: f64,
    /// Hosts in the bucket.
    #[schemars(range(min = 1))]
    pub unique_hosts: u64,
    /// Services of those hosts.
    pub service_count: u64,
    /// The country with most hosts; absent when no host has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[A-Z]{2}$"))]
    pub country_code: Option<String>,
    /// Distinct countries; absent with `country_code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub country_count: Option<u32>,
}

impl From<&ExposureBucket> for ExposureLocation {
    fn from(b: &ExposureBucket) -> Self {
        Self {
            key: b.key.clone(),
            latitude: b.latitude,
            longitude: b.longitude,
            unique_hosts: b.unique_hosts,
            service_count: b.service_count,
            country_code: b.country.map(|(c, _)| c.as_str().to_owned()),
            country_count: b.country.map(|(_, n)| n),
        }
    }
}

/// `POST /v1/hosts/detail`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HostDetailResponse {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// The host with one page of its services.
    pub host: HostResult,
    /// The next page of services of this address; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512))]
    pub next_cursor: Option<String>,
}

impl HostDetailResponse {
    /// The answer for a host detail.
    pub fn new(request_id: impl Into<String>, detail: &HostDetail) -> Self {
        Self {
            request_id: request_id.into(),
            host: HostResult::from(&detail.host),
            next_cursor: detail.next.clone(),
        }
    }
}
