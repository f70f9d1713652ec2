//! Server-rendered pages: one layout with the preview banner of spec §5
//! ([`periscope_signin::BANNER`]), the top bar with the account menu when signed in, on the
//! sign-in service's document shell and headers ([`periscope_signin::document`]). Nothing is
//! loaded from anywhere else: the style is inline, scripts come from `/assets/` and the
//! `Content-Security-Policy` ([`CSP`]) allows only this origin.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use periscope_signin::document;
pub(crate) use periscope_signin::{escape, secure_headers};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:0;color:#1b1f24;background:#f6f7f9}\
.banner{background:#fff4ce;border-bottom:1px solid #e6d48a;padding:.6rem 1rem;font-size:.9rem}\
.top{display:flex;justify-content:space-between;align-items:center;background:#fff;border-bottom:1px solid #dde1e6;padding:.5rem 1rem}\
.top .name{font-weight:700;text-decoration:none;color:#1b1f24}\
details.menu{position:relative}details.menu summary{cursor:pointer;list-style:none;padding:.3rem .6rem;border:1px solid #c9ced6;border-radius:4px}\
details.menu nav{position:absolute;right:0;background:#fff;border:1px solid #c9ced6;border-radius:4px;padding:.4rem 0;min-width:12rem;z-index:1}\
details.menu nav a,details.menu nav button{display:block;width:100%;text-align:left;padding:.35rem .9rem;background:none;border:0;font:inherit;color:#0b57d0;text-decoration:none;cursor:pointer}\
main{max-width:40rem;margin:2rem auto;background:#fff;padding:1.5rem 2rem;border:1px solid #dde1e6;border-radius:6px}\
main.empty{min-height:12rem}h1{font-size:1.4rem;margin-top:0}\
.button{display:inline-block;background:#0b57d0;color:#fff;border:0;border-radius:4px;padding:.55rem 1.1rem;font-size:1rem;text-decoration:none;cursor:pointer}\
.note{color:#4a5260;font-size:.9rem}main.search{max-width:64rem}form.bar{display:flex;gap:.5rem}form.bar input{flex:1;font-size:1rem;padding:.5rem;border:1px solid #c9ced6;border-radius:4px}.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}.condition{margin-top:1rem;border-left:4px solid #c5221f;padding:.2rem 1rem}.condition h2{font-size:1.1rem}table{border-collapse:collapse;width:100%;margin-top:1rem;font-size:.9rem}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e3e6ea;vertical-align:top}.pages{margin-top:1rem;display:flex;gap:1rem}.host h2{font-family:monospace}";

/// Who the top bar shows: the signed-in address and the session's CSRF token (for the
/// sign-out button in the account menu).
pub(crate) struct TopBar<'a> {
    pub(crate) email: &'a str,
    pub(crate) csrf: &'a str,
}

/// The content security policy of the application's pages: scripts, fetches and images from
/// this origin only, the inline style, no framing, forms posted here only.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; \
     img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; \
     form-action 'self'";

/// A page: the banner, the top bar (signed in) and `body` (already HTML), with the shared
/// script (`app.js`).
pub(crate) fn page(
    status: StatusCode,
    title: &str,
    top: Option<&TopBar<'_>>,
    body: &str,
) -> Response {
    page_with(status, title, top, body, &[])
}

/// [`page`] with further assets after `app.js`: stylesheets (`*.css`) and scripts, by their
/// names under `/assets/`.
pub(crate) fn page_with(
    status: StatusCode,
    title: &str,
    top: Option<&TopBar<'_>>,
    body: &str,
    scripts: &[&str],
) -> Response {
    let bar = match top {
        Some(top) => format!(
            "<header class=\"top\"><a class=\"name\" href=\"/\">Periscope</a>\
             <details class=\"menu\"><summary aria-label=\"Account menu\">{email}</summary><nav>\
             <a href=\"/account\">Account</a>\
             <a href=\"/quickstart\">Quickstart</a>\
             <a href=\"/release-notes\">Release notes</a>\
             <a href=\"/report-a-problem\">Report a problem</a>\
             <a href=\"/api-access\">API access</a>\
             <form method=\"post\" action=\"/signout\">\
             <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
             <button type=\"submit\">Sign out</button></form></nav></details></header>",
            email = escape(top.email),
            csrf = escape(top.csrf),
        ),
        None => {
            "<header class=\"top\"><a class=\"name\" href=\"/\">Periscope</a></header>".to_owned()
        }
    };
    let mut names = vec!["app.js"];
    names.extend_from_slice(scripts);
    let mut response = document(
        status,
        title,
        STYLE,
        &format!("{bar}{body}{}", crate::assets::tags(&names)),
    );
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

/// A page with a heading and paragraphs of text (escaped), inside `main`.
pub(crate) fn message(
    status: StatusCode,
    title: &str,
    paragraphs: &[&str],
    action: Option<(&str, &str)>,
    top: Option<&TopBar<'_>>,
) -> Response {
    let mut body = format!("<main><h1>{}</h1>", escape(title));
    for p in paragraphs {
        body.push_str(&format!("<p>{}</p>", escape(p)));
    }
    if let Some((href, label)) = action {
        body.push_str(&format!(
            "<p><a class=\"button\" href=\"{}\">{}</a></p>",
            escape(href),
            escape(label)
        ));
    }
    body.push_str("</main>");
    page(status, title, top, &body)
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn escapes_text_and_attributes() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
