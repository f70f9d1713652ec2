//! The frame of the sign-in service's pages, on the shared layout of `periscope-ui` (preview
//! banner, Periscope top bar, the one stylesheet under the mount path's `/assets/`, headers):
//! [`page`] for a page whose handler has the service at hand, [`message_page`] for a heading,
//! a sentence and a link (error pages, rendered by [`frame_messages`] on the way out, so that
//! answers made without the service — `Unavailable`, the fallback — get the same frame).
//! Each page's own view is a function beside its handler (`routes/*.rs`).

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use periscope_ui::headers::SIGNIN_CSP;
use periscope_ui::{Layout, top_bar};

use crate::Inner;

/// A complete page of the service: `title` (plain text) and `content`, in the narrow column.
pub(crate) fn page(app: &Inner, status: StatusCode, title: &str, content: Markup) -> Response {
    let home = app
        .settings
        .application_url
        .clone()
        .unwrap_or_else(|| app.path("/account"));
    Layout {
        title,
        prefix: &app.settings.mount,
        csp: SIGNIN_CSP,
        top: top_bar(&home, html! {}),
        demo: app.settings.demo,
    }
    .render(status, html! { main.narrow { (content) } })
}

/// A page with a heading, a sentence and an optional link, waiting for its frame: see
/// [`message_page`].
#[derive(Clone, Debug)]
struct Message {
    title: String,
    message: String,
    link: Option<(String, String)>,
}

/// A page with a heading, a message and an optional link (href, text). The answer carries the
/// message; [`frame_messages`] renders it in the layout.
pub(crate) fn message_page(
    status: StatusCode,
    title: &str,
    message: &str,
    link: Option<(&str, &str)>,
) -> Response {
    let mut response = status.into_response();
    periscope_ui::headers::secure_headers(response.headers_mut());
    response.extensions_mut().insert(Message {
        title: title.to_owned(),
        message: message.to_owned(),
        link: link.map(|(h, t)| (h.to_owned(), t.to_owned())),
    });
    response
}

/// The view of a [`message_page`].
fn message_view(m: &Message) -> Markup {
    html! {
        h1 { (m.title) }
        p { (m.message) }
        @if let Some((href, text)) = &m.link {
            p { a href=(href) { (text) } }
        }
    }
}

/// Renders the answers of [`message_page`] in the layout (a response mapping over the router).
pub(crate) async fn frame_messages(State(app): State<Arc<Inner>>, response: Response) -> Response {
    let Some(message) = response.extensions().get::<Message>().cloned() else {
        return response;
    };
    let (parts, _) = response.into_parts();
    let mut page = page(&app, parts.status, &message.title, message_view(&message));
    // Headers the handler added (cookies) are kept; the frame's own are the page's.
    for (name, value) in &parts.headers {
        if !page.headers().contains_key(name) || name == axum::http::header::SET_COOKIE {
            page.headers_mut().append(name, value.clone());
        }
    }
    page
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

    #[test]
    fn messages_are_escaped() {
        let view = message_view(&Message {
            title: "<b>t</b>".into(),
            message: "a \"quoted\" <script>".into(),
            link: Some(("/x?a=1&b=\"2\"".into(), "<i>go</i>".into())),
        })
        .into_string();
        assert!(
            !view.contains("<script>") && !view.contains("<b>"),
            "{view}"
        );
        assert!(view.contains("&lt;script&gt;"), "{view}");
        assert!(
            view.contains("href=\"/x?a=1&amp;b=&quot;2&quot;\""),
            "{view}"
        );
    }
}
