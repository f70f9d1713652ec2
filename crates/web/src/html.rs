//! Server-rendered pages on the shared layout of `periscope-ui` (the preview banner of spec §5,
//! the one stylesheet, the security headers): the top bar — the account menu when signed in
//! (spec §8: the ring of searches left today with the reset time, the menu's links, sign out),
//! a "Sign in" link otherwise — and the page frame: a handler's page leaves its handler as a
//! title, a top bar and content ([`page_with`]), and [`frame`], a response mapping over the
//! router, renders it in the layout with what the application knows (the demo notice of
//! [`crate::WebConfig::demo`]), so that no helper needs the application at hand. Nothing is
//! loaded from anywhere else:
//! stylesheets and scripts come from `/assets/` and the content security policy
//! ([`periscope_ui::headers::APPLICATION_CSP`]) allows only this origin, with no inline
//! style or script.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use periscope_ui::headers::APPLICATION_CSP;
pub(crate) use periscope_ui::headers::secure_headers;
use periscope_ui::{Layout, top_bar};

use crate::Web;

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

/// A table's `thead`: one column heading per name.
pub(crate) fn column_heads(names: &[&str]) -> Markup {
    html! {
        thead {
            tr {
                @for name in names { th scope="col" { (name) } }
            }
        }
    }
}

/// The circumference of the ring's circle (radius 20).
const RING_LENGTH: f64 = 2.0 * std::f64::consts::PI * 20.0;

/// The ring of the account menu: an SVG circle filled in proportion to the searches left,
/// the sentence saying it ("17 of 20 searches left today") and the reset time, rendered in
/// UTC and rewritten in the viewer's time zone by `account.js`.
pub(crate) fn ring(ring: Ring) -> Markup {
    let (fraction, centre, text, resets) = match ring {
        Ring::Limited(usage) => {
            let left = usage.remaining();
            let fraction = if usage.limit == 0 {
                0.0
            } else {
                f64::from(left) / f64::from(usage.limit)
            };
            (
                fraction,
                left.to_string(),
                format!(
                    "{} of {} left today",
                    crate::words::grouped(u64::from(left)),
                    crate::words::count(u64::from(usage.limit), "search", "searches")
                ),
                Some(usage.resets_at().to_string()),
            )
        }
        Ring::Unlimited => (1.0, "∞".to_owned(), "No daily limit".to_owned(), None),
        Ring::Unread | Ring::Unreadable => (
            0.0,
            "?".to_owned(),
            "Searches left today cannot be read just now".to_owned(),
            None,
        ),
    };
    let (remaining, limit) = match ring {
        Ring::Limited(u) => (u.remaining().to_string(), u.limit.to_string()),
        Ring::Unlimited => ("unlimited".to_owned(), "unlimited".to_owned()),
        _ => ("unknown".to_owned(), "unknown".to_owned()),
    };
    let filled = RING_LENGTH * fraction;
    let colour = if fraction > 0.0 { "#0b57d0" } else { "#c5221f" };
    html! {
        div.ring data-remaining=(remaining) data-limit=(limit) {
            svg width="48" height="48" viewBox="0 0 48 48" aria-hidden="true" focusable="false" {
                circle cx="24" cy="24" r="20" fill="none" stroke="#dde1e6" stroke-width="6" {}
                circle cx="24" cy="24" r="20" fill="none" stroke=(colour) stroke-width="6"
                    stroke-dasharray=(format!("{filled:.2} {RING_LENGTH:.2}"))
                    transform="rotate(-90 24 24)" {}
                text x="24" y="29" text-anchor="middle" font-size="14" fill="#1b1f24" { (centre) }
            }
            p {
                strong.ring-text { (text) }
                @if let Some(resets) = &resets {
                    span.reset {
                        "Resets at "
                        time datetime=(resets) data-local-time {
                            (resets.get(11..16).unwrap_or("00:00")) " UTC"
                        }
                    }
                }
            }
        }
    }
}

/// The top bar: the account menu (signed in) or a "Sign in" link.
fn bar(top: Option<&TopBar<'_>>) -> Markup {
    let end = match top {
        Some(top) => html! {
            details.menu {
                summary aria-label={ "Account menu of " (top.email) } { (top.email) }
                nav aria-label="Account" {
                    (ring(top.ring))
                    a href="/account" { "Account" }
                    a href="/quickstart" { "Quickstart" }
                    a href="/release-notes" { "Release notes" }
                    a href="/report-a-problem" { "Report a problem" }
                    a href="/api-access" { "API access" }
                    form method="post" action="/signout" {
                        input type="hidden" name="csrf" value=(top.csrf);
                        button type="submit" { "Sign out" }
                    }
                }
            }
        },
        None => html! { a.signin href="/signin" { "Sign in" } },
    };
    top_bar("/", end)
}

/// A page: the banner, the top bar (signed in) and `body` (already HTML), with the shared
/// script (`app.js`).
pub(crate) fn page(
    status: StatusCode,
    title: &str,
    top: Option<&TopBar<'_>>,
    body: Markup,
) -> Response {
    page_with(status, title, top, body, &[])
}

/// [`page`] with further assets after `app.js`: stylesheets (`*.css`) and scripts, by their
/// names under `/assets/`.
pub(crate) fn page_with(
    status: StatusCode,
    title: &str,
    top: Option<&TopBar<'_>>,
    body: Markup,
    scripts: &[&str],
) -> Response {
    let mut names = vec!["app.js", "account.css", "account.js"];
    names.extend_from_slice(scripts);
    let mut response = status.into_response();
    response.extensions_mut().insert(Unframed {
        title: title.to_owned(),
        top: bar(top),
        content: html! { (body) (crate::assets::tags(&names)) },
    });
    response
}

/// A page of [`page_with`] waiting for its frame.
#[derive(Clone)]
struct Unframed {
    title: String,
    top: Markup,
    content: Markup,
}

/// Renders the pages of [`page_with`] in the layout, with the demo notice when the application
/// is the demo (a response mapping over the whole router). Headers the handler added are kept
/// (cookies added, others in place of the frame's).
pub(crate) async fn frame(State(web): State<Web>, mut response: Response) -> Response {
    let Some(page) = response.extensions_mut().remove::<Unframed>() else {
        return response;
    };
    let (parts, _) = response.into_parts();
    let mut framed = Layout {
        title: &page.title,
        prefix: "",
        csp: APPLICATION_CSP,
        top: page.top,
        demo: web.inner.demo,
    }
    .render(parts.status, page.content);
    let headers = framed.headers_mut();
    for (name, value) in &parts.headers {
        if name == header::SET_COOKIE {
            headers.append(name, value.clone());
        } else {
            headers.insert(name, value.clone());
        }
    }
    framed
}

/// A page with a heading and paragraphs of text (escaped), inside `main`.
pub(crate) fn message(
    status: StatusCode,
    title: &str,
    paragraphs: &[&str],
    action: Option<(&str, &str)>,
    top: Option<&TopBar<'_>>,
) -> Response {
    let body = html! {
        main {
            h1 { (title) }
            @for paragraph in paragraphs {
                p { (paragraph) }
            }
            @if let Some((href, label)) = action {
                p { a.button href=(href) { (label) } }
            }
        }
    };
    page(status, title, top, body)
}
