//! The one error every newtype parser returns: which kind of value was rejected and why.

use std::borrow::Cow;

/// A value that does not satisfy the rules of its type.
///
/// `what` names the type ("port", "CVE id", ...); `reason` says what is wrong, in words a
/// scanner operator or API user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}")]
pub struct InvalidValue {
    /// The kind of value, for example `"port"`.
    pub what: &'static str,
    /// Why it was rejected.
    pub reason: Cow<'static, str>,
}

impl InvalidValue {
    /// Builds an error for a value of kind `what`.
    pub fn new(what: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        Self {
            what,
            reason: reason.into(),
        }
    }
}

/// True when `s` is non-empty and consists only of ASCII digits (no sign, no spaces).
pub(crate) fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}
