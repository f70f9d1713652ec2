//! [`ApiError`]: every failure of the HTTP edge, mapped to the specification's error shape in
//! one place. Its code is an entry of the error table ([`ErrorCode`], `periscope-api-types`),
//! which gives the status and the default message; a service outcome names its own entry
//! ([`ServiceError::error_code`]).
//!
//! A handler returns an `ApiError`; its [`IntoResponse`] only parks it in the response's
//! extensions, and [`crate::edge::request_envelope`] renders it with the request's id — so
//! no handler builds an error body by hand and every error carries the same id as its header.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use periscope_api_types::{ErrorBody, ErrorCode, RequestError, Violation};
use periscope_service::ServiceError;

/// A failed request: its code, an optional more specific message, the violations of a
/// `validation_failed`, and a `Retry-After` in seconds when one applies.
#[derive(Debug, Clone)]
pub struct ApiError {
    code: ErrorCode,
    message: Option<String>,
    violations: Vec<Violation>,
    retry_after: Option<u64>,
}

impl ApiError {
    /// An error with the code's standard message.
    pub fn new(code: ErrorCode) -> Self {
        Self {
            code,
            message: None,
            violations: Vec::new(),
            retry_after: None,
        }
    }

    /// Replaces the standard message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Answers with `Retry-After: secs`.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs.max(1));
        self
    }

    /// The code.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The full response, with `request_id`.
    pub fn render(self, request_id: &str) -> Response {
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ErrorBody {
            request_id: request_id.to_owned(),
            code: self.code,
            message: self
                .message
                .unwrap_or_else(|| self.code.message().to_owned()),
            violations: self.violations,
        };
        let mut response = crate::edge::json_with_status(status, &body);
        if self.code == ErrorCode::Unauthorized {
            // RFC 6750: the scheme a client must use, the same for every 401 (no `error`
            // attribute, which would tell a missing key from a wrong one).
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"periscope\""),
            );
        }
        if let Some(secs) = self.retry_after {
            crate::edge::retry_after(&mut response, secs);
        }
        response
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = status.into_response();
        response.extensions_mut().insert(self);
        response
    }
}

impl From<RequestError> for ApiError {
    fn from(e: RequestError) -> Self {
        match e {
            RequestError::BodyTooLarge => Self::new(ErrorCode::BodyTooLarge),
            RequestError::InvalidJson(why) => Self::new(ErrorCode::InvalidJson).with_message(why),
            RequestError::Invalid(violations) => {
                let mut error = Self::new(ErrorCode::ValidationFailed);
                error.violations = violations;
                error
            }
        }
    }
}

/// The service's outcome under its entry of the error table
/// ([`ServiceError::error_code`]), with what only the answer carries: the violations of a
/// `validation_failed` and the allowance of a `search_limit_reached`.
impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        let error = Self::new(e.error_code());
        match e {
            ServiceError::Invalid(violations) => {
                let message = violations
                    .iter()
                    .map(|v| format!("{}: {}", v.field, v.detail))
                    .collect::<Vec<_>>()
                    .join("; ");
                let mut error = error.with_message(message);
                error.violations = violations
                    .into_iter()
                    .map(|v| Violation {
                        field: v.field.to_owned(),
                        code: v.code.to_owned(),
                        message: v.detail,
                    })
                    .collect();
                error
            }
            ServiceError::LimitReached(usage) => error.with_message(format!(
                "the daily allowance of {} searches is used up; it resets at {}",
                usage.limit,
                usage.resets_at()
            )),
            _ => error,
        }
    }
}
