//! `GET /account` and `POST /account/marketing`: the account as recorded, and giving or
//! withdrawing marketing consent.

use axum::extract::State as AxumState;
use axum::http::StatusCode;
use axum::response::Response;

use maud::{Markup, html};
use periscope_state::{Account, Organisation};

use crate::Web;
use crate::extract::{SignedForm, SignedPage};
use crate::html::{message, page};
use crate::session::*;

pub(crate) async fn account(
    AxumState(web): AxumState<Web>,
    SignedPage(signed): SignedPage,
) -> Response {
    account_page(&web, &signed, None).await
}

pub(crate) async fn account_page(web: &Web, signed: &Signed, notice: Option<&str>) -> Response {
    let orgs = match web.inner.state.organisations_of(signed.account.id).await {
        Ok(orgs) => orgs,
        Err(e) => return internal("cannot read the organisations", &e),
    };
    let body = view(&signed.account, &orgs, &signed.session.csrf, notice);
    page(StatusCode::OK, "Account", Some(&signed.top()), body)
}

/// The account as recorded: the address, the organisations, the accepted terms, and the
/// marketing consent with the form that changes it.
fn view(account: &Account, orgs: &[Organisation], csrf: &str, notice: Option<&str>) -> Markup {
    let (state_text, button, value) = if account.marketing_consent {
        (
            "You have consented to marketing e-mail.",
            "Withdraw consent to marketing e-mail",
            "withdraw",
        )
    } else {
        (
            "You receive no marketing e-mail.",
            "Consent to marketing e-mail",
            "give",
        )
    };
    html! {
        main {
            h1 { "Account" }
            @if let Some(notice) = notice {
                p role="status" { strong { (notice) } }
            }
            p { "E-mail: " (account.email.as_str()) }
            @for org in orgs {
                p {
                    "Organisation: " (org.name) " "
                    span.note {
                        "(" (if org.verified { "verified" } else { "as typed at registration, not verified" }) ")"
                    }
                }
            }
            @if let Some(terms) = &account.terms {
                p { "Terms accepted: version " (terms.version) " on " (terms.accepted_at) }
            }
            h2 { "Marketing e-mail" }
            p { (state_text) " Changing this never affects your access." }
            form method="post" action="/account/marketing" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="consent" value=(value);
                button.button type="submit" { (button) }
            }
        }
    }
}

pub(crate) async fn marketing(
    AxumState(web): AxumState<Web>,
    SignedForm { mut signed, form }: SignedForm<CsrfForm>,
) -> Response {
    let consent = match form.consent.as_str() {
        "withdraw" => false,
        "give" => true,
        _ => {
            return message(
                StatusCode::BAD_REQUEST,
                "Nothing was changed",
                &["The form asked for neither giving nor withdrawing consent."],
                Some(("/account", "Back to the account")),
                Some(&signed.top()),
            );
        }
    };
    if let Err(e) = web
        .inner
        .state
        .set_marketing_consent(signed.account.id, consent)
        .await
    {
        return internal("cannot record the marketing consent", &e);
    }
    tracing::info!(account.id = %signed.account.id, consent, "marketing consent changed");
    signed.account.marketing_consent = consent;
    let notice = if consent {
        "Consent to marketing e-mail recorded."
    } else {
        "Consent to marketing e-mail withdrawn. Your access is unchanged."
    };
    account_page(&web, &signed, Some(notice)).await
}
