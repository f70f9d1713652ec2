//! `GET /report-a-problem` and `POST /report-a-problem` (spec §9, signed in only): a
//! description of at most 4,000 characters, no attachment, stored with
//! [`periscope_state::State::submit_report`] for the administrator; the confirmation says
//! reports receive no individual reply. A description holding a control character other than
//! a line break or a tab (ESC, BEL, a bare CR...) or a bidirectional override is refused, so no
//! stored report can drive the terminal of the administrator who lists it. A refused
//! description is shown again as typed (escaped for HTML).

use axum::extract::State as AxumState;
use axum::http::StatusCode;
use axum::response::Response;
use periscope_state::REPORT_MAX_CHARS;

use maud::{Markup, html};

use crate::Web;
use crate::extract::{CsrfField, SignedForm, SignedPage};
use crate::html::page_with;
use crate::session::*;

#[derive(serde::Deserialize)]
pub(crate) struct ReportForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    description: String,
}

impl CsrfField for ReportForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `4000` as `4,000` ([`crate::words::grouped`]).
pub(crate) fn thousands(n: usize) -> String {
    crate::words::grouped(n as u64)
}

/// The description as the server counts it: line breaks as one character (browsers send
/// `\r\n`), so the count matches the counter the user saw.
fn normalise(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Why a description is refused, in words for the user; `None` when it is accepted.
fn refusal(description: &str) -> Option<String> {
    let count = description.trim().chars().count();
    if let Some((at, c)) = periscope_model::text::hidden_control(description, true) {
        Some(format!(
            "The description contains an invisible control character (U+{:04X}, character {}), \
             which reports cannot hold. Remove it (retype the text around it) and send it again.",
            u32::from(c),
            thousands(at)
        ))
    } else if count == 0 {
        Some("The description is empty. Describe the problem before sending the report.".into())
    } else if count > REPORT_MAX_CHARS {
        Some(format!(
            "The description is {} characters long; a report takes at most {}. Shorten it and \
             send it again.",
            thousands(count),
            thousands(REPORT_MAX_CHARS)
        ))
    } else {
        None
    }
}

fn form_page(signed: &Signed, status: StatusCode, text: &str, error: Option<&str>) -> Response {
    let body = form_view(&signed.session.csrf, text, error);
    page_with(status, "Report a problem", Some(&signed.top()), body, &[])
}

/// The report form: `text` as typed so far, the counter, and why it was refused.
fn form_view(csrf: &str, text: &str, error: Option<&str>) -> Markup {
    let count = text.chars().count();
    let described = if error.is_some() {
        "report-count report-error"
    } else {
        "report-count"
    };
    let max = thousands(REPORT_MAX_CHARS);
    html! {
        main {
            h1 { "Report a problem" }
            p {
                "Tell us what went wrong or what is missing: what you did, what you expected and \
                 what happened. Reports receive no individual reply, and attachments are not \
                 accepted."
            }
            @if let Some(e) = error {
                div.error role="alert" id="report-error" { p { (e) } }
            }
            form method="post" action="/report-a-problem" class="report" data-busy="Sending…" {
                input type="hidden" name="csrf" value=(csrf);
                label.field for="description" { "Description (at most " (max) " characters)" }
                textarea id="description" name="description" maxlength=(REPORT_MAX_CHARS) required
                    aria-describedby=(described) data-counter="report-count"
                    data-max=(REPORT_MAX_CHARS) { (text) }
                p.counter.over[count > REPORT_MAX_CHARS] id="report-count" aria-live="polite" {
                    (thousands(count)) " of " (max) " characters"
                }
                button.button type="submit" { "Send report" }
            }
        }
    }
}

/// The confirmation of a stored report.
fn received_view() -> Markup {
    html! {
        main {
            h1 { "Report received" }
            div.notice role="status" {
                p { "Thank you: your report is stored for Periscope's administrators." }
            }
            p { "Reports receive no individual reply." }
            p.actions {
                a.button href="/" { "Back to search" }
                a href="/report-a-problem" { "Report another problem" }
            }
        }
    }
}

/// `GET /report-a-problem`.
pub(crate) async fn form(SignedPage(signed): SignedPage) -> Response {
    form_page(&signed, StatusCode::OK, "", None)
}

/// `POST /report-a-problem`.
pub(crate) async fn submit(
    AxumState(web): AxumState<Web>,
    SignedForm { signed, form }: SignedForm<ReportForm>,
) -> Response {
    let description = normalise(&form.description);
    if let Some(why) = refusal(&description) {
        return form_page(
            &signed,
            StatusCode::UNPROCESSABLE_ENTITY,
            &description,
            Some(&why),
        );
    }
    let stored = web
        .inner
        .state
        .submit_report(signed.account.id, &description, web.inner.now())
        .await;
    match stored {
        Ok(id) => {
            tracing::info!(account.id = %signed.account.id, report.id = id.as_i64(), "problem report stored");
            page_with(
                StatusCode::OK,
                "Report received",
                Some(&signed.top()),
                received_view(),
                &[],
            )
        }
        Err(periscope_state::StateError::Invalid { .. }) => {
            // The checks above are the state's own; this answers the same if they ever differ.
            let why = "The description was refused: it must be 1 to 4,000 characters.";
            form_page(
                &signed,
                StatusCode::UNPROCESSABLE_ENTITY,
                &description,
                Some(why),
            )
        }
        Err(e) => internal("cannot store a problem report", &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_characters_not_bytes() {
        assert_eq!(refusal(&"é".repeat(4_000)), None);
        let too_long = refusal(&"é".repeat(4_001)).unwrap();
        assert!(too_long.contains("4,001 characters"), "{too_long}");
        assert!(refusal(" \n ").unwrap().contains("empty"));
        assert_eq!(normalise("a\r\nb").chars().count(), 3);
        assert_eq!(thousands(4000), "4,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234567), "1,234,567");
    }

    #[test]
    fn control_characters_are_refused_line_breaks_kept() {
        assert_eq!(refusal("line one\nline two\twith a tab"), None);
        for (text, code, at) in [
            ("\u{1b}[2J wiped", "U+001B", "character 1"),
            ("ring\u{7}", "U+0007", "character 5"),
            ("a\rforged line", "U+000D", "character 2"),
            ("csi \u{9b}31m", "U+009B", "character 5"),
            ("abc\u{202e}def", "U+202E", "character 4"),
        ] {
            let why = refusal(&normalise(text)).unwrap_or_else(|| panic!("{text:?} accepted"));
            assert!(why.contains(code) && why.contains(at), "{text:?}: {why}");
        }
        // A browser's CRLF is a line break, not a bare CR.
        assert_eq!(refusal(&normalise("one\r\ntwo")), None);
    }
}
