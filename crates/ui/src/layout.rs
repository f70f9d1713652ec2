//! The base layout of every page of both services: the document head (title, viewport, the one
//! stylesheet from `/assets/`), the preview banner of spec §5, the demo notice when the data is
//! synthetic ([`Layout::demo`]), the top bar slot, then the page's content — and the response
//! around it (status, media type, [`crate::headers::secure_headers`] and the page's content
//! security policy).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{Markup, PreEscaped, html};

use crate::assets;

/// The text of the preview banner every page carries (spec "What the service does" item 5: a
/// preview, free of charge, functions and limits may change, businesses only, the accepted
/// terms apply to every account).
pub const BANNER: &str = "Preview: Periscope is a preview service, free of charge and offered to businesses only. Its functions and limits may change at any time. The accepted terms apply to every account.";

/// The demo's notice, under the banner (DECISIONS.md "Demo data": every page of the demo says
/// the data is synthetic). The API's JSON has no layout and no notice.
pub const DEMO_NOTICE: &str = "Demo data: every host, network and name shown here is synthetic \
     (addresses in 240.0.0.0/4 and 3fff::/20, names under .example). No real organisation's \
     exposure is shown.";

/// One page's frame: everything but its content.
#[derive(Debug)]
pub struct Layout<'a> {
    /// The page's title (plain text; " · Periscope" follows it).
    pub title: &'a str,
    /// Where the service's `/assets/` are: `""` at the root, or a mount path (`/auth`).
    pub prefix: &'a str,
    /// The content security policy of the page ([`crate::headers`]).
    pub csp: &'static str,
    /// The top bar ([`top_bar`]).
    pub top: Markup,
    /// Whether the page belongs to the demo (`periscope serve --demo`): [`DEMO_NOTICE`] under
    /// the banner.
    pub demo: bool,
}

impl Layout<'_> {
    /// The whole document around `content`.
    pub fn document(&self, content: Markup) -> Markup {
        html! {
            (PreEscaped("<!doctype html>\n"))
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width,initial-scale=1";
                    title { (self.title) " · Periscope" }
                    link rel="stylesheet" href=(assets::href(self.prefix, assets::STYLESHEET));
                }
                body {
                    div.banner role="note" { (BANNER) }
                    @if self.demo {
                        div.banner.demo role="note" { (DEMO_NOTICE) }
                    }
                    (self.top)
                    (content)
                }
            }
        }
    }

    /// The page answered with `status`: HTML, the secure headers and the layout's policy.
    pub fn render(&self, status: StatusCode, content: Markup) -> Response {
        html_response(status, self.csp, self.document(content))
    }
}

/// The top bar: the name leading to `home`, and `end` (the account menu, links) at the other
/// side.
pub fn top_bar(home: &str, end: Markup) -> Markup {
    html! {
        header.top {
            a.name href=(home) { "Periscope" }
            (end)
        }
    }
}

/// `markup` as an HTML answer: UTF-8, [`crate::headers::secure_headers`] and `csp`.
pub fn html_response(status: StatusCode, csp: &'static str, markup: Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    crate::headers::secure_headers(headers);
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::SIGNIN_CSP;

    fn layout(demo: bool, title: &str) -> String {
        Layout {
            title,
            prefix: "/auth",
            csp: SIGNIN_CSP,
            top: top_bar("/", html! { a href="/x" { "X" } }),
            demo,
        }
        .document(html! { main { "content" } })
        .into_string()
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
        let shown = html! { (BANNER) }.into_string();
        assert_eq!(shown, BANNER, "the banner reads the same escaped");
    }

    #[test]
    fn the_layout_orders_banner_notice_top_bar_and_content() {
        let page = layout(true, "T");
        let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("no {s} in {page}"));
        assert!(
            page.starts_with("<!doctype html>\n<html lang=\"en\">"),
            "{page}"
        );
        assert!(at("<div class=\"banner\" role=\"note\">") < at("class=\"banner demo\""));
        assert!(at("class=\"banner demo\"") < at("<header class=\"top\">"));
        assert!(at("<header class=\"top\">") < at("<main>content</main>"));
        assert!(
            page.contains("href=\"/auth/assets/periscope.css?v="),
            "{page}"
        );
        assert!(page.contains("synthetic"));
        assert!(!layout(false, "T").contains("synthetic"));
    }

    #[test]
    fn the_title_is_escaped() {
        let page = layout(false, "<script>\"x\"</script>");
        assert!(
            page.contains("<title>&lt;script&gt;&quot;x&quot;&lt;/script&gt; · Periscope</title>"),
            "{page}"
        );
        assert!(!page.contains("<script>"), "{page}");
    }

    #[test]
    fn answers_carry_the_headers_and_the_policy() {
        let response = html_response(
            StatusCode::OK,
            crate::headers::APPLICATION_CSP,
            html! { p { "x" } },
        );
        let h = response.headers();
        assert_eq!(h[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert_eq!(
            h[header::CONTENT_SECURITY_POLICY],
            crate::headers::APPLICATION_CSP
        );
    }
}
