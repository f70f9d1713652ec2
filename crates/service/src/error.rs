//! Why the search service declined or failed a request: one variant per answer of the
//! specification's error table (plus the DECISIONS.md additions). Each variant's code — its
//! HTTP status, the API's sentence and the browser's wording — is an entry of the error table,
//! [`ErrorCode`] (`periscope-api-types`), given by [`ServiceError::error_code`]; the audit
//! record, the HTTP edge and the browser all read it from there.

use periscope_api_types::ErrorCode;
use periscope_index::IndexError;
use periscope_query::{QueryError, Violation};
use periscope_state::Usage;

/// A result whose error is a [`ServiceError`].
pub type Result<T, E = ServiceError> = std::result::Result<T, E>;

/// One violation of a request member (`validation_failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    /// The request member: `query`, `cursor`, `resolution`, `ip`, `limit`.
    pub field: &'static str,
    /// The violation code of the specification.
    pub code: &'static str,
    /// A sentence for people saying what was wrong.
    pub detail: String,
}

impl From<Violation> for FieldViolation {
    fn from(v: Violation) -> Self {
        Self {
            field: v.field(),
            code: v.code.as_str(),
            detail: v.detail,
        }
    }
}

/// Why a request was not answered with its resource.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The key is missing, malformed, unknown or revoked (401 `unauthorized`); which one is
    /// never said.
    #[error("the credential is missing, malformed, unknown or revoked")]
    Unauthorized,
    /// The account's access is inactive (403 `account_inactive`).
    #[error("the account cannot search right now")]
    AccountInactive,
    /// The plan does not include search access now (402 `plan_expired`).
    #[error("the plan does not currently include search access")]
    PlanExpired,
    /// The plan could not be read (503 `commercial_access_unavailable`).
    #[error("the plan could not be confirmed")]
    PlanUnavailable,
    /// The account does not belong to exactly one organisation (400 `organization_required`).
    #[error("the account does not resolve to exactly one organization")]
    OrganizationRequired,
    /// A request member is invalid (422 `validation_failed`).
    #[error("the request is invalid")]
    Invalid(Vec<FieldViolation>),
    /// The search cursor is unknown, expired, used or another account's (410 `cursor_gone`).
    #[error("the search cursor is gone")]
    CursorGone,
    /// No current host at the exact address (404 `host_not_found`).
    #[error("no current host at this address")]
    HostNotFound,
    /// The daily allowance is used up (429 `search_limit_reached`).
    #[error("the daily search allowance is used up")]
    LimitReached(Usage),
    /// The account already runs its maximum of searches (429 `user_concurrency_reached`).
    #[error("too many searches at once for this account")]
    UserConcurrency,
    /// The service runs its maximum of searches (503 `search_capacity_exhausted`).
    #[error("the service is at its search capacity")]
    Capacity,
    /// The audit record could not be written, so nothing ran (503 `audit_unavailable`).
    #[error("the audit record could not be written")]
    AuditUnavailable,
    /// The scan data was busy (503 `search_source_busy`).
    #[error("the scan data is busy")]
    SourceBusy,
    /// The search ran out of its time budget (504 `search_timeout`).
    #[error("the search did not finish within its time budget")]
    Timeout,
    /// Every facet group ran out of time (504 `facet_timeout`).
    #[error("the suggested filters did not finish within the time budget")]
    FacetTimeout,
    /// A dependency (the state database, the scan index) failed (503 `service_unavailable`).
    #[error("a needed dependency is unavailable: {0}")]
    Unavailable(String),
}

impl ServiceError {
    /// A `validation_failed` error with one violation.
    pub fn invalid(v: impl Into<FieldViolation>) -> Self {
        Self::Invalid(vec![v.into()])
    }

    /// The error table's entry of this outcome: its code (also what the audit record keeps),
    /// status and wording.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::Unauthorized => ErrorCode::Unauthorized,
            Self::AccountInactive => ErrorCode::AccountInactive,
            Self::PlanExpired => ErrorCode::PlanExpired,
            Self::PlanUnavailable => ErrorCode::CommercialAccessUnavailable,
            Self::OrganizationRequired => ErrorCode::OrganizationRequired,
            Self::Invalid(_) => ErrorCode::ValidationFailed,
            Self::CursorGone => ErrorCode::CursorGone,
            Self::HostNotFound => ErrorCode::HostNotFound,
            Self::LimitReached(_) => ErrorCode::SearchLimitReached,
            Self::UserConcurrency => ErrorCode::UserConcurrencyReached,
            Self::Capacity => ErrorCode::SearchCapacityExhausted,
            Self::AuditUnavailable => ErrorCode::AuditUnavailable,
            Self::SourceBusy => ErrorCode::SearchSourceBusy,
            Self::Timeout => ErrorCode::SearchTimeout,
            Self::FacetTimeout => ErrorCode::FacetTimeout,
            Self::Unavailable(_) => ErrorCode::ServiceUnavailable,
        }
    }

    /// The state database failed: 503 `service_unavailable`. The cause is logged here, once,
    /// because the answer does not carry it.
    pub(crate) fn state(what: &str, e: &periscope_state::StateError) -> Self {
        tracing::error!(error = %error_chain(e), "state database: {what}");
        Self::Unavailable(format!("the state database failed ({what})"))
    }
}

impl From<QueryError> for ServiceError {
    fn from(e: QueryError) -> Self {
        Self::Invalid(e.violations.into_iter().map(FieldViolation::from).collect())
    }
}

impl From<IndexError> for ServiceError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::Busy => Self::SourceBusy,
            IndexError::Timeout => Self::Timeout,
            IndexError::Unavailable(why) => {
                tracing::error!(error = %why, "scan index unavailable");
                Self::Unavailable("the scan index is unavailable".into())
            }
            IndexError::InvalidContinuation => Self::Invalid(vec![FieldViolation {
                field: "cursor",
                code: "invalid",
                detail: "the continuation was not issued for this address; send back \
                         next_cursor exactly as it was received"
                    .into(),
            }]),
        }
    }
}

/// An error and its sources on one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
