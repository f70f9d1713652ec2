//! `GET|POST /register`: registration as spec §6 says — a business e-mail address and an
//! organisation name, no password; the terms checkbox starts unticked (its tick also records
//! marketing consent); disposable domains refused; an address already registered is pointed to
//! sign-in and nothing is created; otherwise a single-use link is e-mailed.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::{App, FormParams, Unavailable, csrf_refused, with_cookies};
use crate::email::EmailAddress;
use crate::html;
use crate::mail::RegistrationMail;
use crate::store::{NewRegistration, Registered};
use maud::{Markup, html};

/// Most characters of an organisation name.
const ORG_MAX_CHARS: usize = 200;

/// What appears above the registration form.
#[derive(Clone, Copy, Default)]
enum Banner {
    #[default]
    None,
    /// Some fields have problems (each is named under its field).
    Problems,
    /// The address is registered already: sign in instead.
    AddressTaken,
}

/// What the form shows: the values typed so far and the problems found.
#[derive(Default)]
struct Form<'a> {
    email: &'a str,
    organisation: &'a str,
    terms: bool,
    banner: Banner,
    email_error: Option<&'static str>,
    organisation_error: Option<&'static str>,
    terms_error: Option<&'static str>,
}

/// A problem under a field.
fn field_error(message: Option<&str>) -> Markup {
    html! {
        @if let Some(m) = message {
            p.field-error { (m) }
        }
    }
}

/// The registration form.
fn view(app: &App, csrf: &str, form: &Form<'_>) -> Markup {
    html! {
        h1 { "Create your Periscope account" }
        p {
            "Periscope is offered to businesses. Enter your business e-mail address: we send you a \
             link to confirm it and choose your password."
        }
        @match form.banner {
            Banner::None => {}
            Banner::Problems => p.error role="alert" { "Please correct the problems below." },
            Banner::AddressTaken => p.error role="alert" {
                "This e-mail address is already registered. "
                a href=(app.path("/signin")) { "Sign in" }
                " instead."
            },
        }
        form method="post" action=(app.path("/register")) novalidate {
            input type="hidden" name="csrf" value=(csrf);
            label for="email" { "Business e-mail address" }
            input type="email" id="email" name="email" required autocomplete="email" value=(form.email);
            (field_error(form.email_error))
            label for="organisation" { "Organisation name" }
            input type="text" id="organisation" name="organisation" required maxlength=(ORG_MAX_CHARS)
                autocomplete="organization" value=(form.organisation);
            (field_error(form.organisation_error))
            div.check {
                input type="checkbox" id="terms" name="terms" value="accepted" checked[form.terms];
                label for="terms" {
                    "I accept the "
                    a href=(app.path("/terms")) target="_blank" rel="noopener" { "terms of service" }
                    " (version " (app.settings.terms_version) "), including consent to receive \
                     marketing e-mail from Periscope. That consent can be withdrawn at any time \
                     without affecting access."
                }
            }
            (field_error(form.terms_error))
            button.button type="submit" { "Register" }
        }
        p { "Already registered? " a href=(app.path("/signin")) { "Sign in" } }
    }
}

/// The page after a registration: the link is on its way to `email`.
fn sent_view(email: &str, valid_for: &str) -> Markup {
    html! {
        h1 { "Check your e-mail" }
        p.notice { "We sent a link to " strong { (email) } "." }
        p {
            "Open it within " (valid_for) " to confirm your address and choose your password. \
             The link works once. Registration is complete only through that link."
        }
    }
}

fn render(app: &App, headers: &HeaderMap, status: StatusCode, form: &Form<'_>) -> Response {
    let (token, set_cookie) = match app.csrf_token(headers) {
        Ok(pair) => pair,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let content = view(app, &token, form);
    with_cookies(html::page(app, status, "Register", content), set_cookie)
}

pub(crate) async fn get(State(app): State<App>, headers: HeaderMap) -> Response {
    render(&app, &headers, StatusCode::OK, &Form::default())
}

/// The organisation name as typed (surrounding spaces dropped), or the problem.
fn organisation(input: &str) -> Result<&str, &'static str> {
    let name = input.trim();
    if name.is_empty() {
        return Err("Enter the name of your organisation.");
    }
    if name.chars().count() > ORG_MAX_CHARS {
        return Err("Enter an organisation name of at most 200 characters.");
    }
    if periscope_model::text::hidden_control(name, false).is_some() {
        return Err(
            "Enter the organisation name on one line, without control characters (a tab, a line break or an invisible formatting character, for example).",
        );
    }
    Ok(name)
}

pub(crate) async fn post(
    State(app): State<App>,
    headers: HeaderMap,
    FormParams(params): FormParams,
) -> Response {
    if !app.csrf_ok(&headers, params.field("csrf")) {
        return csrf_refused(&app.path("/register"));
    }
    let typed_email = params.field("email").unwrap_or("");
    let typed_org = params.field("organisation").unwrap_or("");
    let terms = params.ticked("terms");
    let email = EmailAddress::parse_for_registration(typed_email)
        .map_err(|p| p.message())
        .and_then(|e| {
            if crate::mail::deliverable(e.as_str()) {
                Ok(e)
            } else {
                Err(crate::email::EmailProblem::Invalid.message())
            }
        });
    let org = organisation(typed_org);
    let mut form = Form {
        email: typed_email.trim(),
        organisation: typed_org,
        terms,
        email_error: email.as_ref().err().copied(),
        organisation_error: org.as_ref().err().copied(),
        terms_error: (!terms).then_some(
            "Tick the box to accept the terms; registration cannot go ahead without it.",
        ),
        ..Form::default()
    };
    let (Ok(email), Ok(org), true) = (email, org, terms) else {
        form.banner = Banner::Problems;
        return render(&app, &headers, StatusCode::UNPROCESSABLE_ENTITY, &form);
    };

    let now = app.clock.now().unix();
    let token = match crate::random::secret() {
        Ok(token) => token,
        Err(e) => return Unavailable::from(e).into_response(),
    };
    let outcome = app
        .store
        .register(&NewRegistration {
            email: email.as_str(),
            email_key: email.key(),
            org_name: org,
            terms_version: &app.settings.terms_version,
            marketing_consent: true,
            now,
            link_digest: &crate::random::digest(&token),
            link_expires_at: now + app.settings.link_lifetime,
        })
        .await;
    match outcome {
        Err(e) => return Unavailable::from(e).into_response(),
        Ok(Registered::AddressTaken) => {
            tracing::info!(mail.to = %email.as_str(), "registration refused: address already registered");
            form.banner = Banner::AddressTaken;
            form.terms = false;
            return render(&app, &headers, StatusCode::CONFLICT, &form);
        }
        Ok(outcome) => {
            tracing::info!(mail.to = %email.as_str(), renewed = (outcome == Registered::Renewed), "registration recorded");
        }
    }
    let link = format!(
        "{}?{}",
        app.url("/confirm"),
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("token", &token)
            .finish()
    );
    let mail = RegistrationMail {
        to: email.as_str().to_owned(),
        link,
        valid_for: html::duration(app.settings.link_lifetime),
    };
    if let Err(e) = app.mailer.send(&mail).await {
        tracing::error!(mail.to = %mail.to, error = %e, "registration e-mail not sent");
        return html::message_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "The e-mail could not be sent",
            "Your registration was recorded, but the e-mail with your link could not be sent just now. This is a fault on our side: register again in a few minutes to get a new link.",
            Some((&app.path("/register"), "Register again")),
        );
    }
    let content = sent_view(email.as_str(), &html::duration(app.settings.link_lifetime));
    html::page(&app, StatusCode::OK, "Check your e-mail", content)
}
