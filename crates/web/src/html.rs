//! Server-rendered pages: one layout with the preview banner of spec §5
//! ([`periscope_signin::BANNER`]), the top bar — the account menu when signed in (spec §8: the
//! ring of searches left today with the reset time, the menu's links, sign out), a "Sign in"
//! link otherwise — on the
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

/// Who the top bar shows: the signed-in address, the session's CSRF token (for the
/// sign-out button in the account menu) and the allowance for the menu's ring.
pub(crate) struct TopBar<'a> {
    pub(crate) email: &'a str,
    pub(crate) csrf: &'a str,
    pub(crate) ring: Ring,
}

/// The account's searches today, as the ring of the account menu shows them.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ring {
    /// Not read on this request (fragments, which have no top bar).
    Unread,
    /// The read failed (logged where it happened).
    Unreadable,
    /// No daily limit applies to the account (not the same as zero left).
    Unlimited,
    /// The daily limit and what is used of it today.
    Limited(periscope_state::Usage),
}

/// The circumference of the ring's circle (radius 20).
const RING_LENGTH: f64 = 2.0 * std::f64::consts::PI * 20.0;

/// The ring of the account menu: an SVG circle filled in proportion to the searches left,
/// the sentence saying it ("17 of 20 searches left today") and the reset time, rendered in
/// UTC and rewritten in the viewer's time zone by `account.js`.
pub(crate) fn ring(ring: Ring) -> String {
    let (fraction, centre, text, reset) = match ring {
        Ring::Limited(usage) => {
            let left = usage.remaining();
            let fraction = if usage.limit == 0 {
                0.0
            } else {
                f64::from(left) / f64::from(usage.limit)
            };
            let resets = usage.resets_at().to_string();
            let clock = resets.get(11..16).unwrap_or("00:00");
            (
                fraction,
                left.to_string(),
                format!(
                    "{} of {} left today",
                    crate::words::grouped(u64::from(left)),
                    crate::words::count(u64::from(usage.limit), "search", "searches")
                ),
                format!(
                    "<span class=\"reset\">Resets at <time datetime=\"{resets}\" \
                     data-local-time>{clock} UTC</time></span>",
                    resets = escape(&resets),
                ),
            )
        }
        Ring::Unlimited => (
            1.0,
            "∞".to_owned(),
            "No daily limit".to_owned(),
            String::new(),
        ),
        Ring::Unread | Ring::Unreadable => (
            0.0,
            "?".to_owned(),
            "Searches left today cannot be read just now".to_owned(),
            String::new(),
        ),
    };
    let (remaining, limit) = match ring {
        Ring::Limited(u) => (u.remaining().to_string(), u.limit.to_string()),
        Ring::Unlimited => ("unlimited".to_owned(), "unlimited".to_owned()),
        _ => ("unknown".to_owned(), "unknown".to_owned()),
    };
    let filled = RING_LENGTH * fraction;
    let colour = if fraction > 0.0 { "#0b57d0" } else { "#c5221f" };
    format!(
        "<div class=\"ring\" data-remaining=\"{remaining}\" data-limit=\"{limit}\">\
         <svg width=\"48\" height=\"48\" viewBox=\"0 0 48 48\" aria-hidden=\"true\" focusable=\"false\">\
         <circle cx=\"24\" cy=\"24\" r=\"20\" fill=\"none\" stroke=\"#dde1e6\" stroke-width=\"6\"/>\
         <circle cx=\"24\" cy=\"24\" r=\"20\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"6\" \
         stroke-dasharray=\"{filled:.2} {RING_LENGTH:.2}\" transform=\"rotate(-90 24 24)\"/>\
         <text x=\"24\" y=\"29\" text-anchor=\"middle\" font-size=\"14\" fill=\"#1b1f24\">{centre}</text></svg>\
         <p><strong class=\"ring-text\">{text}</strong>{reset}</p></div>"
    )
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
             <details class=\"menu\"><summary aria-label=\"Account menu of {email}\">{email}</summary>\
             <nav aria-label=\"Account\">{ring}\
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
            ring = ring(top.ring),
        ),
        None => "<header class=\"top\"><a class=\"name\" href=\"/\">Periscope</a>\
                 <a class=\"signin\" href=\"/signin\">Sign in</a></header>"
            .to_owned(),
    };
    let mut names = vec!["app.js", "account.css", "account.js"];
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
