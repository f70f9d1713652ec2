//! The error table and the error body of every non-200 answer: [`ErrorCode`] (the
//! specification's top-level codes and the ones DECISIONS.md adds, each with its HTTP status,
//! the API's sentence for people and the browser application's [`WebWording`]),
//! [`Violation`] (one `{field, code, message}` entry of a `validation_failed` answer) and
//! [`ErrorBody`] (`{request_id, code, message, violations}`).
//!
//! The codes are defined once, by the `error_codes!` table below, which also builds
//! [`ErrorCode::ALL`]. Everything that names a code reads it from there: the search service's
//! outcomes (`ServiceError::error_code` in `periscope-service`, also the audit record's
//! outcome), the API's error answers (`periscope-api`), the browser's refusal pages and the
//! Globe's notices (`periscope-web`), and the OpenAPI document's list of codes. A unit test
//! keeps the table equal to the table of `docs/api.md` (code and status, in order).

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

/// How the browser application words a code (the specification's "Web application
/// messages"): a title and one sentence saying what to do, which the pages and the Globe's
/// notices of `periscope-web` show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebWording {
    /// The condition's title, for example `Search timed out`.
    pub title: &'static str,
    /// What to do, in one sentence.
    pub sentence: &'static str,
}

impl WebWording {
    /// A fault on the service's side, whichever: `Search is temporarily unavailable`. The
    /// browser says it too for a code that has no wording of its own.
    pub const UNAVAILABLE: WebWording = WebWording::new(
        "Search is temporarily unavailable",
        "Try again shortly; nothing was charged.",
    );

    const fn new(title: &'static str, sentence: &'static str) -> Self {
        Self { title, sentence }
    }
}

macro_rules! error_codes {
    ($(
        $(#[$doc:meta])*
        $variant:ident => $wire:literal, $status:literal, $message:literal
        $(, web: $web:expr)?;
    )*) => {
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

            /// How the browser application words the code, when it has words of its own:
            /// not for the codes of the API's edge (routing, body, headers, request rate),
            /// which no page meets, nor for `unauthorized` (a signed-in person has no key;
            /// the browser says [`WebWording::UNAVAILABLE`]) or `validation_failed` (the
            /// browser titles each violation, `periscope_query::ViolationCode::title`).
            pub fn web(self) -> Option<WebWording> {
                match self { $(ErrorCode::$variant => error_codes!(@web $($web)?),)* }
            }
        }
    };
    (@web) => { None };
    (@web $web:expr) => { Some($web) };
}

error_codes! {
    /// The body is not JSON, or was not sent as `application/json`.
    InvalidJson => "invalid_json", 400,
        "The request body is not valid JSON sent with Content-Type: application/json.";
    /// The account does not resolve to exactly one organization.
    OrganizationRequired => "organization_required", 400,
        "The account does not belong to exactly one organization. An administrator must fix this.",
        web: WebWording::new(
            "Organization required",
            "Your account does not belong to exactly one organization.",
        );
    /// Key missing, malformed, unknown or revoked.
    Unauthorized => "unauthorized", 401,
        "A valid API key is required: send the header Authorization: Bearer <API key>.";
    /// The plan does not currently include search access.
    PlanExpired => "plan_expired", 402,
        "The plan does not currently include search access.",
        web: WebWording::new(
            "Plan expired",
            "Your plan does not currently include search access.",
        );
    /// The account's access is set to inactive (DECISIONS.md).
    AccountInactive => "account_inactive", 403,
        "This account cannot search right now.",
        web: WebWording::new(
            "Your account cannot search right now",
            "Searching is switched off for this account. Contact your administrator.",
        );
    /// No current host for the exact IP (`/v1/hosts/detail`).
    HostNotFound => "host_not_found", 404,
        "No current observation exists for this exact IP address.",
        web: WebWording::new(
            "No stored hosts",
            "Periscope has no current host at this address.",
        );
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
        "This result page has expired: the cursor is unknown, expired or already used. Start again without a cursor.",
        web: WebWording::new(
            "This result page has expired",
            "Run the search again to start from the first page.",
        );
    /// The body is larger than 512 KiB (DECISIONS.md).
    BodyTooLarge => "body_too_large", 413,
        "The request body is larger than 512 KiB (524,288 bytes).";
    /// Invalid members; see the violations.
    ValidationFailed => "validation_failed", 422,
        "The request is invalid; each entry of violations names a member and what is wrong with it.";
    /// The request line and headers are larger than the server accepts (16 KiB, 100 lines).
    HeadersTooLarge => "headers_too_large", 431,
        "The request headers are too large: at most 16 KiB and 100 header lines are accepted.";
    /// The daily allowance is used up. (The browser puts the day's count before the
    /// sentence.)
    SearchLimitReached => "search_limit_reached", 429,
        "The daily search allowance is used up. It resets at midnight UTC (allowance.resets_at).",
        web: WebWording::new("Search limit reached", "Searching resumes at midnight UTC.");
    /// Too many searches of the account are running.
    UserConcurrencyReached => "user_concurrency_reached", 429,
        "Too many searches are running for this account at once. Retry when an earlier one ends.",
        web: WebWording::new(
            "Too many searches at once",
            "Wait for your other searches to finish, then try again.",
        );
    /// Too many requests to the free endpoints (DECISIONS.md).
    RateLimited => "rate_limited", 429,
        "Too many requests. Retry after the number of seconds in the Retry-After header.";
    /// The service is at capacity and declined before starting.
    SearchCapacityExhausted => "search_capacity_exhausted", 503,
        "Search capacity is full, so the search was not started. Retry in a few seconds.",
        web: WebWording::new(
            "Search capacity is full",
            "Periscope is running as many searches as it can. Try again shortly.",
        );
    /// The plan could not be confirmed (service side).
    CommercialAccessUnavailable => "commercial_access_unavailable", 503,
        "The plan could not be confirmed just now (a fault on the service's side). Retry shortly.",
        web: WebWording::new(
            "Entitlements temporarily unreadable",
            "Your plan could not be confirmed just now. Try again shortly.",
        );
    /// The stored scan data was temporarily busy.
    SearchSourceBusy => "search_source_busy", 503,
        "The stored scan data is busy. Retry after a few seconds.",
        web: WebWording::new(
            "Search could not be run just now",
            "The scan data is busy. Try again in a moment; nothing was charged.",
        );
    /// A needed dependency is unavailable.
    ServiceUnavailable => "service_unavailable", 503,
        "A service this request needs is unavailable. Retry shortly.",
        web: WebWording::UNAVAILABLE;
    /// The mandatory audit record could not be written.
    AuditUnavailable => "audit_unavailable", 503,
        "The mandatory audit record could not be written, so the request was not run. Retry shortly.",
        web: WebWording::UNAVAILABLE;
    /// The search did not finish within its time budget.
    SearchTimeout => "search_timeout", 504,
        "The search did not finish within its time budget. Retry, or narrow the query.",
        web: WebWording::new(
            "Search timed out",
            "Narrow the search (add a filter or a smaller range) and try again.",
        );
    /// Facet groups timed out (`/v1/search/facets`).
    FacetTimeout => "facet_timeout", 504,
        "The suggested filters did not finish within their time budget. Retry shortly.",
        web: WebWording::new("Suggested Filters timed out", "Try again shortly; nothing was charged.");
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

/// The wire codes of [`ErrorCode::ALL`], in place where a member has this type.
impl JsonSchema for ErrorCode {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "ErrorCode".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        crate::schema::string_enum(Self::ALL.iter().map(|c| c.as_str()))
    }
}

/// One entry of `violations`: the request member at fault, the violation code, and a
/// sentence for people.
// The specification's shape is `{field, code}`; `message` is an added member (clients
// tolerate added members, SPEC "Versioning" 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Violation {
    /// The member at fault (`query`, `limit`, `cursor`, `resolution`, `ip`, an unknown
    /// member's name, or `body`).
    pub field: String,
    /// The violation code, e.g. `too_long` or `invalid_port`.
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// The request's id, also in the `X-Request-ID` header.
    pub request_id: String,
    /// The error code; the HTTP status follows from it.
    pub code: ErrorCode,
    /// What happened, for people.
    pub message: String,
    /// Non-empty only for `validation_failed`.
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A document of the repository, by its path from the workspace root. The crate
    /// directory is the running test's (a shared build directory may have compiled this
    /// binary in another checkout).
    fn doc(path: &str) -> String {
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        );
        let root = crate_dir.join("../..");
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The `(code, status)` rows of the table of `docs/api.md` headed `| `code` | HTTP |`.
    fn documented_codes(api_md: &str) -> Vec<(String, u16)> {
        let rows = api_md
            .lines()
            .skip_while(|l| !l.starts_with("| `code` | HTTP |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'));
        rows.map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let code = cells[1].trim_matches('`').to_owned();
            let status = cells[2]
                .parse()
                .unwrap_or_else(|_| panic!("status of {row}"));
            (code, status)
        })
        .collect()
    }

    #[test]
    fn the_table_is_the_one_docs_api_md_documents() {
        let documented = documented_codes(&doc("docs/api.md"));
        let table: Vec<(String, u16)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str().to_owned(), c.status()))
            .collect();
        assert_eq!(
            table, documented,
            "ErrorCode and docs/api.md's error table differ"
        );
    }

    #[test]
    fn the_documents_table_is_read_as_written() {
        let md = "text\n| `code` | HTTP | Meaning |\n|---|---|---|\n| `a_b` | 400 | A. |\n\
                  | `c` | 503 | C \\| d. |\n\nmore | text |\n";
        assert_eq!(
            documented_codes(md),
            [("a_b".to_owned(), 400), ("c".to_owned(), 503)]
        );
        assert!(documented_codes("no table").is_empty());
    }

    #[test]
    fn codes_and_messages_are_well_formed() {
        let wires: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        let messages: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.message()).collect();
        assert_eq!(wires.len(), ErrorCode::ALL.len(), "codes are distinct");
        assert_eq!(
            messages.len(),
            ErrorCode::ALL.len(),
            "messages are distinct"
        );
        for code in ErrorCode::ALL {
            let m = code.message();
            assert!(m.ends_with('.') && m.starts_with(char::is_uppercase), "{m}");
            assert_eq!(code.to_string(), code.as_str());
            assert_eq!(serde_json::to_value(code).ok(), Some(code.as_str().into()));
        }
    }

    #[test]
    fn the_browser_words_are_the_ones_docs_web_md_lists() {
        // docs/web.md quotes each title; lines are joined so a title may wrap.
        let web_md = doc("docs/web.md")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for code in ErrorCode::ALL {
            let Some(WebWording { title, sentence }) = code.web() else {
                continue;
            };
            assert!(
                web_md.contains(&format!("\"{title}\"")),
                "{code}: {title} not in docs/web.md"
            );
            assert!(
                !title.ends_with('.') && title.starts_with(char::is_uppercase),
                "{title}"
            );
            assert!(
                sentence.ends_with('.') && sentence.starts_with(char::is_uppercase),
                "{sentence}"
            );
        }
    }

    #[test]
    fn the_browser_has_words_for_every_refusal_of_the_search_capability() {
        let none: Vec<&str> = ErrorCode::ALL
            .iter()
            .filter(|c| c.web().is_none())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            none,
            [
                "invalid_json",
                "unauthorized",
                "not_found",
                "method_not_allowed",
                "request_timeout",
                "body_too_large",
                "validation_failed",
                "headers_too_large",
                "rate_limited",
            ]
        );
    }
}
