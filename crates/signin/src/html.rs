//! Server-rendered pages: the layout every page shares (the preview banner of spec §5, small
//! inline CSS, no third-party request), escaping, and the response headers pages carry. The
//! document shell, escaping and headers are public: the browser application (`periscope-web`)
//! builds its pages on them, so both services answer alike.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The text of the preview banner every page carries (spec "What the service does" item 5: a
/// preview, free of charge, functions and limits may change, businesses only, the accepted
/// terms apply to every account).
pub const BANNER: &str = "Preview: Periscope is a preview service, free of charge and offered to businesses only. Its functions and limits may change at any time. The accepted terms apply to every account.";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}\
.banner{background:#fff4ce;border-bottom:1px solid #e6d48a;padding:.6rem 1rem;font-size:.9rem}\
main{max-width:30rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border:1px solid #dde1e6;border-radius:6px}\
h1{font-size:1.4rem;margin-top:0}label{display:block;margin:.9rem 0 .3rem;font-weight:600}\
input[type=email],input[type=text],input[type=password]{width:100%;box-sizing:border-box;padding:.5rem;font-size:1rem}\
.check{display:flex;gap:.5rem;align-items:flex-start;margin-top:1rem}.check label{margin:0;font-weight:normal}\
button{margin-top:1.2rem;padding:.55rem 1.2rem;font-size:1rem;background:#1f5fbf;color:#fff;border:0;border-radius:4px;cursor:pointer}\
.error{background:#fdecec;border:1px solid #e3a0a0;padding:.6rem;border-radius:4px}\
.notice{background:#eaf4ea;border:1px solid #9cc89c;padding:.6rem;border-radius:4px}\
.field-error{color:#a11;font-size:.9rem;margin:.3rem 0 0}small{color:#555}";

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A complete page: `title` (plain text) and `body` (HTML, already escaped).
pub(crate) fn page(status: StatusCode, title: &str, body: &str) -> Response {
    document(status, title, STYLE, &format!("<main>{body}</main>"))
}

/// An HTML document: `title` (plain text), the inline `style`, the preview banner, then
/// `content` (HTML, already escaped), with [`secure_headers`].
pub fn document(status: StatusCode, title: &str, style: &str, content: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title} · Periscope</title><style>{style}</style></head><body>\
         <div class=\"banner\" role=\"note\">{BANNER}</div>{content}</body></html>\n",
        title = escape(title),
    );
    let mut response = (status, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure_headers(headers);
    response
}

/// Headers on every answer of the service: no caching (pages carry tokens), no referrer (a
/// confirmation link must not leak through one), no framing, no sniffing, and a content
/// security policy that allows nothing but the inline style.
pub fn secure_headers(headers: &mut axum::http::HeaderMap) {
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
}

/// An error page with a message and an optional link (href, text).
pub(crate) fn message_page(
    status: StatusCode,
    title: &str,
    message: &str,
    link: Option<(&str, &str)>,
) -> Response {
    let link = link.map_or(String::new(), |(href, text)| {
        format!("<p><a href=\"{}\">{}</a></p>", escape(href), escape(text))
    });
    page(
        status,
        title,
        &format!("<h1>{}</h1><p>{}</p>{link}", escape(title), escape(message)),
    )
}

/// A duration in words: "24 hours", "1 hour", "30 minutes".
pub(crate) fn duration(secs: i64) -> String {
    let (n, unit) = if secs >= 3600 && secs % 3600 == 0 {
        (secs / 3600, "hour")
    } else if secs >= 60 {
        (secs / 60, "minute")
    } else {
        (secs, "second")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration(86_400), "24 hours");
        assert_eq!(duration(3600), "1 hour");
        assert_eq!(duration(1800), "30 minutes");
        assert_eq!(duration(5400), "90 minutes");
    }

    /// Every statement of spec "What the service does" item 5, each checked on its own.
    #[test]
    fn banner_states_all_of_spec_item_5() {
        for statement in [
            "Preview:",
            "is a preview",
            "free of charge",
            "may change at any time",
            "businesses only",
            "accepted terms apply to every account",
        ] {
            assert!(BANNER.contains(statement), "the banner lacks {statement:?}");
        }
        assert_eq!(escape(BANNER), BANNER, "the banner is inserted unescaped");
    }

    #[test]
    fn escaping() {
        assert_eq!(
            escape(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
