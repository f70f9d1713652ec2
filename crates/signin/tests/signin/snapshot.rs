//! The text a snapshot test stores for one HTTP answer, shared by the sign-in suite and the web
//! suite (which includes this file with `#[path]`): [`render`] writes the status, the headers
//! and the body, with the volatile parts replaced by [`Redactions`] and the body laid out one
//! node a line ([`layout_html`]), so that two runs give the same text and a change of markup
//! shows as a readable diff. How to review and accept a changed snapshot: `docs/testing.md`.
//!
//! What is volatile and how it is replaced (one place, so a new random value is added here):
//! - the values of the hidden inputs `csrf`, `form`, `token` and `id_token_hint` (CSRF tokens,
//!   the create-key form's one-time token, the e-mailed link's token, an ID token);
//! - the values of the URL parameters `cursor`, `state`, `nonce`, `code`, `code_challenge`,
//!   `id_token_hint` and `token`, plain (`?state=…&`, `&amp;state=…`) or percent-encoded inside
//!   another parameter (`%26state%3D…%26`);
//! - cookie values in `Set-Cookie` (an empty value, which deletes a cookie, is kept);
//! - the headers `date`, `content-length` and `transfer-encoding` (left out);
//! - JSON members named in [`Redactions::json_member`] (`request_id` always);
//! - values the test knows ([`Redactions::value`]): the origin with its random port, the API
//!   key shown once, the instant the test's manual clock stands at ([`Redactions::time`]).
//!
//! Nothing else is changed: the snapshot is the page as served, laid out.

#![allow(dead_code)] // Each suite uses the parts it needs.

use std::fmt::Write as _;

/// The hidden inputs whose values are random, and what replaces them.
const HIDDEN: [(&str, &str); 4] = [
    ("csrf", "[csrf]"),
    ("form", "[form-token]"),
    ("token", "[link-token]"),
    ("id_token_hint", "[id-token]"),
];

/// The URL parameters whose values are random.
const PARAMETERS: [&str; 7] = [
    "cursor",
    "state",
    "nonce",
    "code",
    "code_challenge",
    "id_token_hint",
    "token",
];

/// Headers that differ between two runs of the same request, left out.
const VOLATILE_HEADERS: [&str; 3] = ["date", "content-length", "transfer-encoding"];

/// Elements without content (no end tag).
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "!doctype",
];

/// Elements whose text is kept exactly as served (whitespace matters there).
const VERBATIM: [&str; 2] = ["pre", "textarea"];

/// Elements whose content is not markup.
const RAW: [&str; 2] = ["style", "script"];

/// What a snapshot replaces besides the fixed rules of this module.
#[derive(Clone, Debug)]
pub struct Redactions {
    /// Known values and their placeholders, longest first when applied.
    values: Vec<(String, String)>,
    /// JSON members (at any depth) whose values are replaced.
    json_members: Vec<(String, String)>,
}

impl Default for Redactions {
    fn default() -> Self {
        Self::new()
    }
}

impl Redactions {
    /// The fixed rules only (and the JSON member `request_id`).
    pub fn new() -> Self {
        Self {
            values: Vec::new(),
            json_members: vec![("request_id".into(), "[request-id]".into())],
        }
    }

    /// Replaces `value` wherever it appears (also percent-encoded, as in a `return_to`).
    pub fn value(mut self, value: &str, placeholder: &str) -> Self {
        assert!(!value.is_empty(), "an empty value cannot be redacted");
        let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
        if encoded != value {
            let placeholder_encoded: String =
                url::form_urlencoded::byte_serialize(placeholder.as_bytes()).collect();
            self.values.push((encoded, placeholder_encoded));
        }
        self.values.push((value.to_owned(), placeholder.to_owned()));
        self
    }

    /// Replaces the origin `http://host:port` by `http://[origin]`.
    pub fn origin(self, origin: &str) -> Self {
        let host = origin
            .strip_prefix("http://")
            .expect("an http:// origin")
            .to_owned();
        self.value(origin, "http://[origin]")
            .value(&host, "[origin]")
    }

    /// Replaces the instant `unix` (a manual clock's) in the forms pages write it:
    /// `2026-11-22T14:05:09Z` and `2026-11-22 14:05 UTC`, and the next midnight (UTC), when an
    /// allowance read on that clock resets.
    pub fn time(self, unix: i64) -> Self {
        let text = rfc3339(unix);
        let minute = format!("{} {} UTC", &text[..10], &text[11..16]);
        let midnight = rfc3339(unix - unix.rem_euclid(86_400) + 86_400);
        self.value(&text, "[now]")
            .value(&minute, "[now]")
            .value(&midnight, "[next-midnight]")
    }

    /// Replaces the value of the JSON member `name` (a string or number) at any depth.
    pub fn json_member(mut self, name: &str, placeholder: &str) -> Self {
        self.json_members.push((name.into(), placeholder.into()));
        self
    }

    /// `text` with the known values and the fixed rules applied.
    pub fn apply(&self, text: &str) -> String {
        let mut values = self.values.clone();
        values.sort_by_key(|(value, _)| std::cmp::Reverse(value.len()));
        let mut out = text.to_owned();
        for (value, placeholder) in &values {
            out = out.replace(value.as_str(), placeholder);
        }
        for (name, placeholder) in HIDDEN {
            out = replace_after(
                &out,
                &format!("name=\"{name}\" value=\""),
                "\"",
                placeholder,
            );
        }
        for name in PARAMETERS {
            let placeholder = format!("[{name}]");
            for before in ["?", "&", "&amp;"] {
                out = replace_parameter(&out, &format!("{before}{name}="), &placeholder);
            }
            for before in ["%3F", "%26"] {
                out = replace_after(&out, &format!("{before}{name}%3D"), "%26", &placeholder);
            }
        }
        out
    }

    fn json(&self, value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, member) in map.iter_mut() {
                    match self.json_members.iter().find(|(name, _)| name == key) {
                        Some((_, placeholder)) if !member.is_object() && !member.is_array() => {
                            *member = serde_json::Value::String(placeholder.clone());
                        }
                        _ => self.json(member),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            _ => {}
        }
    }
}

/// `unix` as `2026-11-22T14:05:09Z` (UTC; the days-to-civil conversion of H. Hinnant's
/// `chrono`-compatible date algorithms), as `Timestamp` displays it.
fn rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Replaces, after each `marker`, the text up to the next `end` (or the end of `text`) by
/// `placeholder`; an empty value is left empty.
fn replace_after(text: &str, marker: &str, end: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let value_start = at + marker.len();
        out.push_str(&rest[..value_start]);
        let tail = &rest[value_start..];
        let len = tail.find(end).unwrap_or(tail.len());
        if len > 0 {
            out.push_str(placeholder);
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// Replaces the value of a URL parameter (`marker` is `?name=` or `&name=`): it ends at `&`,
/// `"`, `'`, `<`, `#`, whitespace or the end.
fn replace_parameter(text: &str, marker: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let value_start = at + marker.len();
        out.push_str(&rest[..value_start]);
        let tail = &rest[value_start..];
        let len = tail
            .find(|c: char| matches!(c, '&' | '"' | '\'' | '<' | '#') || c.is_whitespace())
            .unwrap_or(tail.len());
        if len > 0 {
            out.push_str(placeholder);
        }
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

/// The snapshot text of an answer: `HTTP <status>`, the headers (names lower case, sorted by
/// name, volatile ones left out, cookie values replaced), a blank line, and the body — HTML
/// laid out by [`layout_html`], JSON pretty-printed with sorted members (serde_json's map
/// keeps name order: `preserve_order` is off in this workspace), anything else as
/// served — all with `redactions` applied.
pub fn render(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &str,
    redactions: &Redactions,
) -> String {
    let mut out = format!("HTTP {status}\n");
    let mut lines: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| !VOLATILE_HEADERS.contains(&name.as_str()))
        .map(|(name, value)| {
            let value = value.to_str().expect("an ASCII header value");
            let value = if name == "set-cookie" {
                cookie_redacted(value)
            } else {
                value.to_owned()
            };
            (name.as_str().to_owned(), redactions.apply(&value))
        })
        .collect();
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, value) in lines {
        let _ = writeln!(out, "{name}: {value}");
    }
    out.push('\n');
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let body = if content_type.starts_with("text/html") {
        layout_html(&redactions.apply(body))
    } else if content_type.starts_with("application/json") {
        let mut value: serde_json::Value = serde_json::from_str(body)
            .unwrap_or_else(|e| panic!("a JSON answer that is not JSON ({e}): {body}"));
        redactions.json(&mut value);
        redactions.apply(&serde_json::to_string_pretty(&value).expect("JSON prints"))
    } else {
        redactions.apply(body)
    };
    out.push_str(&body);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `name=value; attributes` with a non-empty value replaced by `[value]`.
fn cookie_redacted(cookie: &str) -> String {
    match cookie.split_once('=') {
        Some((name, rest)) => {
            let (value, attributes) = rest.split_once(';').unwrap_or((rest, ""));
            let value = if value.is_empty() { "" } else { "[value]" };
            if attributes.is_empty() {
                format!("{name}={value}")
            } else {
                format!("{name}={value};{attributes}")
            }
        }
        None => cookie.to_owned(),
    }
}

/// HTML laid out one node a line, indented by depth: a tag as served (whitespace runs inside
/// it become one space), text with its whitespace runs made one space and trimmed (empty text
/// is left out), except inside `pre` and `textarea`, whose text is kept exactly. The content
/// of `style` and `script` is one text node. Nothing is reordered or dropped, so markup that
/// differs only in whitespace between tags (a template's indentation) gives the same layout.
pub fn layout_html(html: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut verbatim = 0usize;
    let mut rest = html;
    let line = |out: &mut String, depth: usize, text: &str| {
        for _ in 0..depth {
            out.push_str("  ");
        }
        out.push_str(text);
        out.push('\n');
    };
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |e| e + 1);
            let tag = collapse(&rest[..end]);
            rest = &rest[end..];
            let name = tag_name(&tag);
            if tag.starts_with("</") {
                depth = depth.saturating_sub(1);
                if VERBATIM.contains(&name.as_str()) {
                    verbatim = verbatim.saturating_sub(1);
                }
                line(&mut out, depth, &tag);
                continue;
            }
            line(&mut out, depth, &tag);
            let void =
                VOID.contains(&name.as_str()) || tag.ends_with("/>") || tag.starts_with("<!--");
            if void {
                continue;
            }
            depth += 1;
            if VERBATIM.contains(&name.as_str()) {
                verbatim += 1;
            }
            if RAW.contains(&name.as_str()) {
                let close = format!("</{name}");
                let end = rest.find(&close).unwrap_or(rest.len());
                let text = collapse(&rest[..end]);
                if !text.is_empty() {
                    line(&mut out, depth, &text);
                }
                rest = &rest[end..];
            }
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = &rest[..end];
            rest = &rest[end..];
            if verbatim > 0 {
                if !text.is_empty() {
                    line(&mut out, depth, text);
                }
            } else {
                let text = collapse(text);
                if !text.is_empty() {
                    line(&mut out, depth, &text);
                }
            }
        }
    }
    out
}

/// Whitespace runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The lower-case element name of a tag (`!doctype` for the doctype).
fn tag_name(tag: &str) -> String {
    tag.trim_start_matches('<')
        .trim_start_matches('/')
        .split(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Checks of the layout and the redactions themselves (run by the suites that include this).
pub fn self_check() {
    let html = "<!doctype html>\n<html><body><main class=\"x\">\n  <p>Hello\n   world</p>\
                <input name=\"csrf\" value=\"abc\"><pre><code>a\n  b</code></pre>\
                <a href=\"/?q=x&amp;cursor=sc1_Z&amp;page=2\">n</a></main></body></html>";
    let laid = layout_html(&Redactions::new().apply(html));
    assert_eq!(
        laid,
        "<!doctype html>\n<html>\n  <body>\n    <main class=\"x\">\n      <p>\n        Hello world\n      </p>\n      \
         <input name=\"csrf\" value=\"[csrf]\">\n      <pre>\n        <code>\n          a\n  b\n        </code>\n      </pre>\n      \
         <a href=\"/?q=x&amp;cursor=[cursor]&amp;page=2\">\n        n\n      </a>\n    </main>\n  </body>\n</html>\n"
    );
    let encoded = Redactions::new().apply("/signin?return_to=%2Fa%3Fstate%3Dxyz%26nonce%3Dq");
    assert_eq!(
        encoded,
        "/signin?return_to=%2Fa%3Fstate%3D[state]%26nonce%3D[nonce]"
    );
    assert_eq!(cookie_redacted("a=b; Path=/"), "a=[value]; Path=/");
    assert_eq!(cookie_redacted("a=; Max-Age=0"), "a=; Max-Age=0");
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(1_795_356_309), "2026-11-22T14:05:09Z");
    assert_eq!(rfc3339(951_825_600), "2000-02-29T12:00:00Z");
    let origin = Redactions::new().origin("http://127.0.0.1:4242");
    assert_eq!(
        origin.apply("http://127.0.0.1:4242/x http%3A%2F%2F127.0.0.1%3A4242%2Fcb"),
        "http://[origin]/x http%3A%2F%2F%5Borigin%5D%2Fcb"
    );
}
