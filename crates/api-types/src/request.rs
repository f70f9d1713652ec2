//! Request bodies: the members each `POST` route accepts ([`Member`] tables, the one source
//! both [`decode`] and the OpenAPI document read), and [`decode`], which turns the raw body
//! into a typed request or a [`RequestError`] carrying every violation at once.
//!
//! The rules (`docs/api.md`, "Request bodies"):
//! 1. A body over [`MAX_BODY_BYTES`] is `body_too_large` (413).
//! 2. The `Content-Type` must be `application/json`, compared case-insensitively and ignoring
//!    parameters such as `; charset=utf-8`; otherwise, or when the body is not JSON (empty,
//!    malformed, trailing text, not UTF-8) or repeats a member name, `invalid_json` (400).
//! 3. A JSON value that is not an object is `validation_failed` (422) with one violation
//!    `{field: "body", code: "wrong_type"}`.
//! 4. Otherwise every member is checked and all violations are reported together (422): per
//!    documented member, in table order, `required`, `wrong_type`, `out_of_range` or
//!    `too_long`; then `unknown_field` for each undocumented member, in body order, named by
//!    the member (a name over [`MAX_NAME_SHOWN`] characters is cut). At most
//!    [`MAX_VIOLATIONS`] are listed; further unknown members are counted in one last
//!    `unknown_field` violation on `body`.
//! 5. `null` is the same as an absent member: a required member is then `required`, an
//!    optional one takes its default.
//! 6. Strings are measured in characters (Unicode scalar values), not bytes, as JSON Schema's
//!    `minLength`/`maxLength` do. An empty `query` is `required` (its minimum is one
//!    character); an empty `ip` is left to the service (`invalid_ip`).
//! 7. Integers follow JSON Schema: a number is an integer when its value is whole, so `25.0`
//!    is 25; `2.5` and `"25"` are `wrong_type`; a whole number outside the range (including
//!    negatives and numbers too large for 64 bits) is `out_of_range`.
//!
//! What the values mean (the query language, `ip`, `resolution`, the cursor formats) is
//! checked by the service layer with `periscope_query`, not here.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::error::{ErrorBody, ErrorCode, Violation};

/// The largest accepted body, 512 KiB (DECISIONS.md).
pub const MAX_BODY_BYTES: usize = 524_288;

/// The most characters a `query` may have.
pub const MAX_QUERY_CHARS: usize = periscope_query::MAX_QUERY_CHARS;

/// The most characters a host-detail `cursor` may have.
pub const MAX_DETAIL_CURSOR_CHARS: usize = 512;

/// The type and bounds of a request member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    /// A JSON string of `min_chars..=max_chars` characters.
    Text {
        /// Fewest characters (0 = the empty string is accepted).
        min_chars: usize,
        /// Most characters, when bounded.
        max_chars: Option<usize>,
        /// The value when the member is absent or `null`.
        default: Option<&'static str>,
    },
    /// A JSON integer in `min..=max`.
    Integer {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
        /// The value when the member is absent or `null`.
        default: Option<u64>,
    },
}

/// One documented member of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// The JSON name.
    pub name: &'static str,
    /// Whether it must be present (and not `null`).
    pub required: bool,
    /// Its type and bounds.
    pub kind: MemberKind,
    /// What it is, for the OpenAPI document.
    pub description: &'static str,
}

/// `query`, shared by every search route.
pub const QUERY: Member = Member {
    name: "query",
    required: true,
    kind: MemberKind::Text {
        min_chars: 1,
        max_chars: Some(MAX_QUERY_CHARS),
        default: None,
    },
    description: "The search, in the query language: an IPv4 or IPv6 address, `domain:<name>`, \
                  `asn:<number>`, an IPv4 CIDR, or one to three `field:value` filter clauses \
                  joined by a space or `AND`.",
};

/// `limit` of `POST /v1/search`.
pub const SEARCH_LIMIT: Member = Member {
    name: "limit",
    required: false,
    kind: MemberKind::Integer {
        min: 1,
        max: 100,
        default: Some(25),
    },
    description: "Hosts per page.",
};

/// `cursor` of `POST /v1/search`.
pub const SEARCH_CURSOR: Member = Member {
    name: "cursor",
    required: false,
    kind: MemberKind::Text {
        min_chars: 0,
        max_chars: None,
        default: None,
    },
    description: "The `next_cursor` of the previous page, sent with the same query and limit. \
                  One use only; a malformed cursor is violation `invalid`, an unknown, expired \
                  or used one answers 410 `cursor_gone`.",
};

/// `resolution` of `POST /v1/search/exposure`.
pub const RESOLUTION: Member = Member {
    name: "resolution",
    required: false,
    kind: MemberKind::Text {
        min_chars: 0,
        max_chars: None,
        default: Some("global"),
    },
    description: "Detail level, coarsest to finest: `global` (geotile precision 4), `regional` \
                  (6) or `local` (8). Another value is violation `unsupported_resolution`.",
};

/// `ip` of `POST /v1/hosts/detail`.
pub const IP: Member = Member {
    name: "ip",
    required: true,
    kind: MemberKind::Text {
        min_chars: 0,
        max_chars: None,
        default: None,
    },
    description: "One exact IPv4 or IPv6 address. Anything else is violation `invalid_ip`.",
};

/// `limit` of `POST /v1/hosts/detail`.
pub const DETAIL_LIMIT: Member = Member {
    name: "limit",
    required: false,
    kind: MemberKind::Integer {
        min: 1,
        max: 20,
        default: Some(20),
    },
    description: "Services per page.",
};

/// `cursor` of `POST /v1/hosts/detail`.
pub const DETAIL_CURSOR: Member = Member {
    name: "cursor",
    required: false,
    kind: MemberKind::Text {
        min_chars: 0,
        max_chars: Some(MAX_DETAIL_CURSOR_CHARS),
        default: None,
    },
    description: "The `next_cursor` of the previous host-detail page of the same address. \
                  Unrelated to the search cursor.",
};

/// A typed request body: its member table and how to build it from checked members.
pub trait RequestBody: Sized {
    /// The name of its schema in the OpenAPI document (`components.schemas`).
    const SCHEMA: &'static str;
    /// Its documented members.
    const MEMBERS: &'static [Member];

    /// Builds the body from members that passed every check of [`Self::MEMBERS`] (so every
    /// required member is present and every default applied).
    fn from_members(members: &Members) -> Self;
}

/// A checked member value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scalar {
    Text(String),
    Integer(u64),
}

/// The members of a body that passed every check, with defaults applied; what
/// [`RequestBody::from_members`] reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    values: Vec<(&'static str, Scalar)>,
}

impl Members {
    /// The text member `name`, when present or defaulted.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.values.iter().find_map(|(n, v)| match v {
            Scalar::Text(s) if *n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// The integer member `name`, when present or defaulted.
    pub fn integer(&self, name: &str) -> Option<u64> {
        self.values.iter().find_map(|(n, v)| match v {
            Scalar::Integer(i) if *n == name => Some(*i),
            _ => None,
        })
    }

    fn required_text(&self, name: &str) -> String {
        self.text(name).unwrap_or_default().to_owned()
    }

    fn optional_text(&self, name: &str) -> Option<String> {
        self.text(name).map(str::to_owned)
    }

    fn small_integer(&self, name: &str) -> u32 {
        // Checked against a range within u32 before this is called.
        self.integer(name)
            .and_then(|i| u32::try_from(i).ok())
            .unwrap_or_default()
    }
}

/// `POST /v1/search`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchBody {
    /// The query text (1 to 512 characters; not yet parsed).
    pub query: String,
    /// Hosts per page, 1 to 100 (default 25).
    pub limit: u32,
    /// The previous page's `next_cursor` (not yet checked).
    pub cursor: Option<String>,
}

impl RequestBody for SearchBody {
    const SCHEMA: &'static str = "SearchRequest";
    const MEMBERS: &'static [Member] = &[QUERY, SEARCH_LIMIT, SEARCH_CURSOR];

    fn from_members(m: &Members) -> Self {
        Self {
            query: m.required_text(QUERY.name),
            limit: m.small_integer(SEARCH_LIMIT.name),
            cursor: m.optional_text(SEARCH_CURSOR.name),
        }
    }
}

/// `POST /v1/search/count` and `POST /v1/search/facets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryBody {
    /// The query text (1 to 512 characters; not yet parsed).
    pub query: String,
}

impl RequestBody for QueryBody {
    const SCHEMA: &'static str = "QueryRequest";
    const MEMBERS: &'static [Member] = &[QUERY];

    fn from_members(m: &Members) -> Self {
        Self {
            query: m.required_text(QUERY.name),
        }
    }
}

/// `POST /v1/search/exposure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExposureBody {
    /// The query text (1 to 512 characters; not yet parsed).
    pub query: String,
    /// The resolution as sent (default `global`; checked by the service).
    pub resolution: String,
}

impl RequestBody for ExposureBody {
    const SCHEMA: &'static str = "ExposureRequest";
    const MEMBERS: &'static [Member] = &[QUERY, RESOLUTION];

    fn from_members(m: &Members) -> Self {
        Self {
            query: m.required_text(QUERY.name),
            resolution: m.required_text(RESOLUTION.name),
        }
    }
}

/// `POST /v1/hosts/detail`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDetailBody {
    /// The address as sent (checked by the service).
    pub ip: String,
    /// Services per page, 1 to 20 (default 20).
    pub limit: u32,
    /// The previous page's `next_cursor`, at most 512 characters.
    pub cursor: Option<String>,
}

impl RequestBody for HostDetailBody {
    const SCHEMA: &'static str = "HostDetailRequest";
    const MEMBERS: &'static [Member] = &[IP, DETAIL_LIMIT, DETAIL_CURSOR];

    fn from_members(m: &Members) -> Self {
        Self {
            ip: m.required_text(IP.name),
            limit: m.small_integer(DETAIL_LIMIT.name),
            cursor: m.optional_text(DETAIL_CURSOR.name),
        }
    }
}

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestError {
    /// Over [`MAX_BODY_BYTES`] (413 `body_too_large`).
    BodyTooLarge,
    /// Not JSON, not sent as `application/json`, or a member name repeated (400
    /// `invalid_json`); the detail says which, for the error message.
    InvalidJson(String),
    /// Member problems, all of them (422 `validation_failed`).
    Invalid(Vec<Violation>),
}

impl RequestError {
    /// The error code it answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::BodyTooLarge => ErrorCode::BodyTooLarge,
            Self::InvalidJson(_) => ErrorCode::InvalidJson,
            Self::Invalid(_) => ErrorCode::ValidationFailed,
        }
    }

    /// The error body of the answer.
    pub fn into_body(self, request_id: impl Into<String>) -> ErrorBody {
        match self {
            Self::BodyTooLarge => ErrorBody::new(request_id, ErrorCode::BodyTooLarge),
            Self::InvalidJson(detail) => {
                let body = ErrorBody::new(request_id, ErrorCode::InvalidJson);
                let message = format!("{} {detail}.", body.message);
                body.with_message(message)
            }
            Self::Invalid(violations) => ErrorBody::validation_failed(request_id, violations),
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BodyTooLarge => f.write_str(ErrorCode::BodyTooLarge.message()),
            Self::InvalidJson(detail) => write!(f, "invalid JSON: {detail}"),
            Self::Invalid(violations) => {
                f.write_str("invalid request:")?;
                for v in violations {
                    write!(f, " {}: {} ({});", v.field, v.code, v.message)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RequestError {}

/// Whether a `Content-Type` header value names JSON: `application/json`, any case, with any
/// parameters after a `;`.
pub fn is_json_content_type(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"))
}

/// Decodes a request body of type `T` from its `Content-Type` header value (if any) and its
/// bytes, applying the rules of the module documentation.
pub fn decode<T: RequestBody>(content_type: Option<&str>, body: &[u8]) -> Result<T, RequestError> {
    check_members(T::MEMBERS, content_type, body).map(|m| T::from_members(&m))
}

/// [`decode`] without the typed result: the checked members of a body against a member
/// table.
pub fn check_members(
    table: &[Member],
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Members, RequestError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(RequestError::BodyTooLarge);
    }
    match content_type {
        Some(ct) if is_json_content_type(ct) => {}
        Some(_) => {
            return Err(RequestError::InvalidJson(
                "The Content-Type must be application/json".to_owned(),
            ));
        }
        None => {
            return Err(RequestError::InvalidJson(
                "The Content-Type header is missing; send application/json".to_owned(),
            ));
        }
    }
    let object = match serde_json::from_slice::<TopLevel>(body) {
        Ok(TopLevel::Object(members)) => members,
        Ok(TopLevel::Other(kind)) => {
            return Err(RequestError::Invalid(vec![Violation::new(
                "body",
                "wrong_type",
                format!("the request body must be a JSON object, not {kind}"),
            )]));
        }
        Err(e) => return Err(RequestError::InvalidJson(capitalize(&e.to_string()))),
    };

    let mut violations = Vec::new();
    let mut members = Members::default();
    for member in table {
        let value = object
            .iter()
            .find(|(name, _)| name == member.name)
            .map(|(_, v)| v);
        match check_member(member, value) {
            Ok(Some(scalar)) => members.values.push((member.name, scalar)),
            Ok(None) => {}
            Err(v) => violations.push(v),
        }
    }
    let known: Vec<&str> = table.iter().map(|m| m.name).collect();
    let mut unlisted = 0usize;
    for (name, _) in &object {
        if !table.iter().any(|m| m.name == name) {
            if violations.len() >= MAX_VIOLATIONS {
                unlisted += 1;
                continue;
            }
            let shown = shortened(name);
            violations.push(Violation::new(
                shown.clone(),
                "unknown_field",
                format!(
                    "{} is not a member of this request; its members are {}",
                    quoted(&shown),
                    known.join(", ")
                ),
            ));
        }
    }
    if unlisted > 0 {
        violations.push(Violation::new(
            "body",
            "unknown_field",
            format!(
                "{unlisted} more members are not members of this request and are not listed;                  its members are {}",
                known.join(", ")
            ),
        ));
    }
    if violations.is_empty() {
        Ok(members)
    } else {
        Err(RequestError::Invalid(violations))
    }
}

/// The most `unknown_field` violations listed one by one (with the documented members' own,
/// at most this many); the rest are counted in one last violation on `body`, so a 512 KiB
/// body of unknown members answers a small 422.
pub const MAX_VIOLATIONS: usize = 20;

/// The longest member name repeated in a violation, in characters; a longer one is cut
/// with `…`.
pub const MAX_NAME_SHOWN: usize = 100;

/// `name`, cut to [`MAX_NAME_SHOWN`] characters.
fn shortened(name: &str) -> String {
    match name.char_indices().nth(MAX_NAME_SHOWN) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_owned(),
    }
}

/// Checks one member: its value (defaulted when absent), `None` when an optional member
/// without default is absent, or the violation.
fn check_member(member: &Member, value: Option<&Value>) -> Result<Option<Scalar>, Violation> {
    let name = member.name;
    let violation = |code: &str, message: String| Violation::new(name, code, message);
    let value = value.filter(|v| !v.is_null());
    match (member.kind, value) {
        (kind, None) => {
            if member.required {
                return Err(violation("required", format!("{name} is required")));
            }
            Ok(match kind {
                MemberKind::Text { default, .. } => default.map(|d| Scalar::Text(d.to_owned())),
                MemberKind::Integer { default, .. } => default.map(Scalar::Integer),
            })
        }
        (
            MemberKind::Text {
                min_chars,
                max_chars,
                ..
            },
            Some(value),
        ) => {
            let Value::String(text) = value else {
                return Err(violation(
                    "wrong_type",
                    format!("{name} must be a string, not {}", json_type(value)),
                ));
            };
            let chars = text.chars().count();
            if chars == 0 && min_chars > 0 {
                return Err(violation(
                    "required",
                    format!("{name} is required and must not be empty"),
                ));
            }
            if chars < min_chars {
                return Err(violation(
                    "out_of_range",
                    format!("{name} has {chars} characters; at least {min_chars} are required"),
                ));
            }
            if let Some(max) = max_chars
                && chars > max
            {
                return Err(violation(
                    "too_long",
                    format!("{name} has {chars} characters; at most {max} are allowed"),
                ));
            }
            Ok(Some(Scalar::Text(text.clone())))
        }
        (MemberKind::Integer { min, max, .. }, Some(value)) => {
            let range = || format!("{name} must be an integer from {min} to {max}");
            let Value::Number(n) = value else {
                return Err(violation(
                    "wrong_type",
                    format!("{}, not {}", range(), json_type(value)),
                ));
            };
            let whole = if let Some(u) = n.as_u64() {
                Some(Ok(u))
            } else if n.as_i64().is_some() {
                Some(Err(()))
            } else {
                n.as_f64()
                    .filter(|f| f.is_finite() && f.fract() == 0.0)
                    .map(|f| {
                        if f >= 0.0 && f <= u64::MAX as f64 {
                            Ok(f as u64)
                        } else {
                            Err(())
                        }
                    })
            };
            match whole {
                None => Err(violation(
                    "wrong_type",
                    format!("{}, not the fraction {n}", range()),
                )),
                Some(Ok(u)) if (min..=max).contains(&u) => Ok(Some(Scalar::Integer(u))),
                Some(_) => Err(violation("out_of_range", format!("{}, not {n}", range()))),
            }
        }
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A member name as shown in a message: JSON-quoted, and cut to 64 characters so a long
/// name cannot make a long message.
fn quoted(name: &str) -> String {
    let cut: String = name.chars().take(64).collect();
    let suffix = if cut.len() < name.len() { "…" } else { "" };
    format!("{}{suffix}", Value::String(cut))
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_uppercase().chain(chars).collect::<String>()
    })
}

/// The top level of a body: an object's members in body order (a repeated name is a parse
/// error), or the kind of the non-object value.
enum TopLevel {
    Object(Vec<(String, Value)>),
    Other(&'static str),
}

impl<'de> Deserialize<'de> for TopLevel {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TopLevelVisitor)
    }
}

struct TopLevelVisitor;

impl<'de> Visitor<'de> for TopLevelVisitor {
    type Value = TopLevel;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TopLevel, A::Error> {
        let mut seen = HashSet::new();
        let mut members = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            if !seen.insert(name.clone()) {
                return Err(de::Error::custom(format_args!(
                    "the member {} appears more than once",
                    quoted(&name)
                )));
            }
            let value: Value = map.next_value()?;
            members.push((name, value));
        }
        Ok(TopLevel::Object(members))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TopLevel, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(TopLevel::Other("an array"))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a boolean"))
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a number"))
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("a string"))
    }

    fn visit_unit<E: de::Error>(self) -> Result<TopLevel, E> {
        Ok(TopLevel::Other("null"))
    }
}
