//! `GET /terms`: the terms of service and their version. A page to read only: nothing here
//! touches the registration form, so opening it never ticks the acceptance box.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::App;
use crate::html;
use maud::{Markup, html};

pub(crate) async fn get(State(app): State<App>) -> Response {
    let content = view(&app.settings.terms_version, &app.path("/register"));
    html::page(&app, StatusCode::OK, "Terms of service", content)
}

/// The terms of `version`, and the way back to registration.
fn view(version: &str, register: &str) -> Markup {
    html! {
        h1 { "Terms of service" }
        p { small { "Version " (version) } }
        p {
            "Periscope is a preview. It is free of charge and offered to businesses only. Its \
             functions and limits may change at any time. These terms apply to every account."
        }
        p {
            "Periscope shows what scanners observed of addresses, networks and domains on the \
             public internet. Results describe exposure only; they do not state threat level or \
             ownership."
        }
        p {
            "You register with your business e-mail address and your organisation's name. \
             Accepting these terms also gives consent to receive marketing e-mail from \
             Periscope; you can withdraw that consent at any time without affecting your access."
        }
        p { "Keep API keys out of source control and revoke any you suspect were exposed." }
        p { a href=(register) { "Back to registration" } }
    }
}
