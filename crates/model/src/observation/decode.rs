//! From the text of a line to its raw serde shape, and from a serde failure to an [`Invalid`]
//! an operator can act on.
//!
//! The kind of a line is read first: from its opening bytes when it starts with `{"kind":…`
//! (as every writer we know does), otherwise by a skimming parse of the whole line. A line that
//! the one-pass reader (`one_pass`) gives up on is then parsed here into the raw struct of its
//! kind without tracking paths; only when that fails is it parsed a second time through
//! `serde_path_to_error`, so the path of the failure costs nothing on the lines that are
//! accepted.

use serde::Deserialize;
use serde_json::error::Category;

use super::check::{At, Invalid, quoted, required};
use super::raw::{KindProbe, Line};

/// The two kinds of line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Service,
    Domain,
}

/// The kind of the line `text` (not blank).
pub(super) fn kind(text: &str) -> Result<Kind, Invalid> {
    if let Some(kind) = leading_kind(text) {
        return Ok(kind);
    }
    let probe: KindProbe<'_> = decode(text)?;
    let kind = required(probe.kind).at("kind")?;
    match &*kind.0 {
        "service" => Ok(Kind::Service),
        "domain" => Ok(Kind::Domain),
        other => Err(Invalid::member(
            "kind",
            format!(
                "{} is not a kind of line; expected \"service\" or \"domain\"",
                quoted(other)
            ),
        )),
    }
}

/// The kind when the line opens with a `kind` member, without parsing the rest.
fn leading_kind(text: &str) -> Option<Kind> {
    let rest = skip_ws(text).strip_prefix('{')?;
    let rest = skip_ws(rest).strip_prefix("\"kind\"")?;
    let rest = skip_ws(skip_ws(rest).strip_prefix(':')?);
    if rest.starts_with("\"service\"") {
        Some(Kind::Service)
    } else if rest.starts_with("\"domain\"") {
        Some(Kind::Domain)
    } else {
        None
    }
}

fn skip_ws(s: &str) -> &str {
    s.trim_start_matches([' ', '\t', '\n', '\r'])
}

/// Parses `text` as one JSON object of shape `T`.
pub(super) fn decode<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, Invalid> {
    match serde_json::from_str::<Line<T>>(text) {
        Ok(Line(t)) => Ok(t),
        Err(first) => Err(explain::<T>(text, &first)),
    }
}

/// Parses again, tracking the path, to say where `first` happened.
#[cold]
fn explain<'a, T: Deserialize<'a>>(text: &'a str, first: &serde_json::Error) -> Invalid {
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, Line<T>>(&mut de) {
        Err(e) => describe(&e.path().to_string(), e.inner()),
        Ok(_) => match de.end() {
            Err(e) => describe("", &e),
            Ok(()) => describe("", first),
        },
    }
}

/// `path` as `serde_path_to_error` writes it (`.` for the whole line).
fn describe(path: &str, err: &serde_json::Error) -> Invalid {
    let path = if path == "." { "" } else { path };
    let message = message(err);
    match err.classify() {
        Category::Syntax | Category::Eof | Category::Io => {
            Invalid::here(format!("not JSON: {message} at column {}", err.column()))
        }
        Category::Data => data_error(path, &message),
    }
}

/// The message of `err` without serde_json's "at line L column C".
fn message(err: &serde_json::Error) -> String {
    let full = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    match full.strip_suffix(&position) {
        Some(m) => m.to_owned(),
        None => full,
    }
}

fn data_error(path: &str, message: &str) -> Invalid {
    if message.starts_with("unknown field ") {
        // The list comes after the user's name, which may itself contain anything.
        let expected = match message.rsplit_once(", expected ") {
            Some((_, list)) => backticked(list).join(", "),
            None => String::new(),
        };
        let reason = if expected.is_empty() {
            "unknown member; this object has no members".to_owned()
        } else {
            format!("unknown member; the members here are: {expected}")
        };
        return Invalid::member(path, reason);
    }
    if let Some(rest) = message.strip_prefix("duplicate field ") {
        let name = backticked(rest).first().copied().unwrap_or_default();
        return Invalid::member(path, "duplicate member").within_child(name);
    }
    let reason = if let Some(rest) = message.strip_prefix("invalid type: ") {
        found_expected(rest)
    } else if let Some(rest) = message.strip_prefix("invalid value: ") {
        found_expected(rest)
    } else {
        message.to_owned()
    };
    Invalid::member(path, reason)
}

/// `"X, expected Y"` (serde's wording) as `"expected Y', found X'"` in JSON's words.
fn found_expected(rest: &str) -> String {
    let Some((found, expected)) = rest.rsplit_once(", expected ") else {
        return rest.to_owned();
    };
    format!(
        "expected {}, found {}",
        json_words(expected),
        json_words(found)
    )
}

fn json_words(serde_words: &str) -> String {
    const WORDS: [(&str, &str); 8] = [
        ("unit value", "null"),
        ("map", "an object"),
        ("sequence", "an array"),
        ("a sequence", "an array"),
        ("f64", "a number"),
        ("a JSON number", "a number"),
        ("boolean `true`", "true"),
        ("boolean `false`", "false"),
    ];
    if let Some((_, json)) = WORDS.iter().find(|(s, _)| *s == serde_words) {
        return (*json).to_owned();
    }
    for prefix in ["integer ", "floating point "] {
        if let Some(n) = serde_words.strip_prefix(prefix) {
            return format!("the number {}", n.trim_matches('`'));
        }
    }
    match serde_words.strip_prefix("string ") {
        // serde quotes the string Rust-style; re-quote it, cut short.
        Some(s) => format!("the string {}", quoted(&unquote(s))),
        None => serde_words.to_owned(),
    }
}

/// Undoes `{:?}` well enough for an error message.
fn unquote(s: &str) -> String {
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
        .replace("\\\"", "\"")
}

/// The `` `names` `` quoted in backticks, in order.
fn backticked(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}
