//! The error body of every non-200 answer: [`ErrorCode`] (the specification's top-level codes
//! and the ones DECISIONS.md adds, each with its HTTP status and a sentence for people),
//! [`Violation`] (one `{field, code, message}` entry of a `validation_failed` answer) and
//! [`ErrorBody`] (`{request_id, code, message, violations}`).
//!
//! The codes are defined once, by the `error_codes!` table below, which also builds
//! [`ErrorCode::ALL`]; a code cannot be added without appearing there, in the OpenAPI document
//! and in the tests that walk `ALL`.

use std::fmt;

use serde::{Serialize, Serializer};

macro_rules! error_codes {
    ($( $(#[$doc:meta])* $variant:ident => $wire:literal, $status:literal, $message:literal; )*) => {
        /// A top-level error code: the `code` member of an [`ErrorBody`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// Every code, ordered by HTTP status as in the specification's table.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The snake_case wire code, for example `cursor_gone`.
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$variant => $wire,)* }
            }

            /// The HTTP status the code answers with.
            pub fn status(self) -> u16 {
                match self { $(ErrorCode::$variant => $status,)* }
            }

            /// What happened and what to do, in one or two sentences for people. It is the
            /// default `message` of an [`ErrorBody`] with this code.
            pub fn message(self) -> &'static str {
                match self { $(ErrorCode::$variant => $message,)* }
            }
        }
    };
}

error_codes! {
    /// The body is not JSON, or was not sent as `application/json`.
    InvalidJson => "invalid_json", 400,
        "The request body is not valid JSON sent with Content-Type: application/json.";
    /// The account does not resolve to exactly one organization.
    OrganizationRequired => "organization_required", 400,
        "The account does not belong to exactly one organization. An administrator must fix this.";
    /// Key missing, malformed, unknown or revoked.
    Unauthorized => "unauthorized", 401,
        "A valid API key is required: send the header Authorization: Bearer <API key>.";
    /// The plan does not currently include search access.
    PlanExpired => "plan_expired", 402,
        "The plan does not currently include search access.";
    /// The account's access is set to inactive (DECISIONS.md).
    AccountInactive => "account_inactive", 403,
        "This account cannot search right now.";
    /// No current host for the exact IP (`/v1/hosts/detail`).
    HostNotFound => "host_not_found", 404,
        "No current observation exists for this exact IP address.";
    /// No such route (DECISIONS.md).
    NotFound => "not_found", 404,
        "There is no such route. The API's routes are listed in GET /v1/openapi.json.";
    /// The route exists but not with this method (DECISIONS.md).
    MethodNotAllowed => "method_not_allowed", 405,
        "This route does not accept this HTTP method.";
    /// The request's body did not arrive within the server's body time (`http.body_timeout_ms`).
    RequestTimeout => "request_timeout", 408,
        "The request body did not arrive in time. Send the whole request promptly.";
    /// Search cursor missing, expired, already used, or unknown.
    CursorGone => "cursor_gone", 410,
        "This result page has expired: the cursor is unknown, expired or already used. Start again without a cursor.";
    /// The body is larger than 512 KiB (DECISIONS.md).
    BodyTooLarge => "body_too_large", 413,
        "The request body is larger than 512 KiB (524,288 bytes).";
    /// Invalid members; see the violations.
    ValidationFailed => "validation_failed", 422,
        "The request is invalid; each entry of violations names a member and what is wrong with it.";
    /// The request line and headers are larger than the server accepts (16 KiB, 100 lines).
    HeadersTooLarge => "headers_too_large", 431,
        "The request headers are too large: at most 16 KiB and 100 header lines are accepted.";
    /// The daily allowance is used up.
    SearchLimitReached => "search_limit_reached", 429,
        "The daily search allowance is used up. It resets at midnight UTC (allowance.resets_at).";
    /// Too many searches of the account are running.
    UserConcurrencyReached => "user_concurrency_reached", 429,
        "Too many searches are running for this account at once. Retry when an earlier one ends.";
    /// Too many requests to the free endpoints (DECISIONS.md).
    RateLimited => "rate_limited", 429,
        "Too many requests. Retry after the number of seconds in the Retry-After header.";
    /// The service is at capacity and declined before starting.
    SearchCapacityExhausted => "search_capacity_exhausted", 503,
        "Search capacity is full, so the search was not started. Retry in a few seconds.";
    /// The plan could not be confirmed (service side).
    CommercialAccessUnavailable => "commercial_access_unavailable", 503,
        "The plan could not be confirmed just now (a fault on the service's side). Retry shortly.";
    /// The stored scan data was temporarily busy.
    SearchSourceBusy => "search_source_busy", 503,
        "The stored scan data is busy. Retry after a few seconds.";
    /// A needed dependency is unavailable.
    ServiceUnavailable => "service_unavailable", 503,
        "A service this request needs is unavailable. Retry shortly.";
    /// The mandatory audit record could not be written.
    AuditUnavailable => "audit_unavailable", 503,
        "The mandatory audit record could not be written, so the request was not run. Retry shortly.";
    /// The search did not finish within its time budget.
    SearchTimeout => "search_timeout", 504,
        "The search did not finish within its time budget. Retry, or narrow the query.";
    /// Facet groups timed out (`/v1/search/facets`).
    FacetTimeout => "facet_timeout", 504,
        "The suggested filters did not finish within their time budget. Retry shortly.";
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One entry of `violations`: the request member at fault, the violation code, and a
/// sentence for people. The specification's shape is `{field, code}`; `message` is an added
/// member (clients tolerate added members, SPEC "Versioning" 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The member: `query`, `limit`, `cursor`, `resolution`, `ip`, the name of an unknown
    /// member, or `body` when the body is not a JSON object.
    pub field: String,
    /// The violation code, for example `too_long` or `invalid_port`.
    pub code: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Violation {
    /// Builds a violation.
    pub fn new(
        field: impl Into<String>,
        code: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            field: field.into(),
            code: code.into(),
            message: message.into(),
        }
    }
}

/// A query-language or endpoint violation (`periscope_query`): the member its code names
/// (`query`, `resolution`, `ip` or `cursor`), its code and its detail.
impl From<&periscope_query::Violation> for Violation {
    fn from(v: &periscope_query::Violation) -> Self {
        Self::new(v.field(), v.code.as_str(), v.detail.clone())
    }
}

impl From<periscope_query::Violation> for Violation {
    fn from(v: periscope_query::Violation) -> Self {
        Self::new(v.field(), v.code.as_str(), v.detail)
    }
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorBody {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// The code.
    pub code: ErrorCode,
    /// A sentence for people (by default [`ErrorCode::message`]).
    pub message: String,
    /// Always present; non-empty only for `validation_failed`.
    pub violations: Vec<Violation>,
}

impl ErrorBody {
    /// An error with the code's default message and no violations.
    pub fn new(request_id: impl Into<String>, code: ErrorCode) -> Self {
        Self {
            request_id: request_id.into(),
            code,
            message: code.message().to_owned(),
            violations: Vec::new(),
        }
    }

    /// A `validation_failed` error with these violations.
    pub fn validation_failed(
        request_id: impl Into<String>,
        violations: impl IntoIterator<Item = Violation>,
    ) -> Self {
        Self {
            violations: violations.into_iter().collect(),
            ..Self::new(request_id, ErrorCode::ValidationFailed)
        }
    }

    /// Replaces the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The HTTP status of the code.
    pub fn status(&self) -> u16 {
        self.code.status()
    }
}
