//! `POST /signout`: ends the session here and at the provider (RP-initiated logout).

use axum::extract::{Form, State as AxumState};
use axum::http::{StatusCode, header};
use axum::response::Response;

use crate::extract::MaybeSigned;
use crate::html::message;
use crate::session::*;
use crate::{SESSION_COOKIE, SIGNED_OUT_PATH, UNAVAILABLE, Web};

pub(crate) async fn sign_out(
    AxumState(web): AxumState<Web>,
    MaybeSigned(signed): MaybeSigned,
    Form(form): Form<CsrfForm>,
) -> Response {
    let inner = &web.inner;
    // Without an active session there is nothing to end: back to the home page.
    let Some(signed) = signed else {
        return redirect("/");
    };
    if !same(&form.csrf, &signed.session.csrf) {
        return csrf_refused(Some(&signed.top()));
    }
    let ended = match inner.state.end_web_session(&signed.session_id).await {
        Ok(ended) => ended,
        Err(e) => return internal("cannot end the session", &e),
    };
    tracing::info!(account.id = %signed.account.id, "signed out of the web application");
    let clear = inner.cookie(SESSION_COOKIE, "", "/", Some(0));
    let id_token = ended.map_or(signed.session.id_token, |s| s.id_token);
    let mut response = match inner.rp.discover().await {
        Ok(provider) => match provider.end_session() {
            Some(endpoint) => {
                let mut url = endpoint.clone();
                url.query_pairs_mut()
                    .append_pair("id_token_hint", &id_token)
                    .append_pair("client_id", &inner.rp.client_id)
                    .append_pair(
                        "post_logout_redirect_uri",
                        &format!("{}{SIGNED_OUT_PATH}", inner.public_url),
                    );
                redirect(url.as_str())
            }
            None => message(
                StatusCode::OK,
                "Signed out of Periscope",
                &[
                    "The sign-in service offers no sign-out, so your session there may still be open: close the browser to end it.",
                ],
                Some(("/", "Back to Periscope")),
                None,
            ),
        },
        Err(e) => {
            tracing::warn!(reason = %e, "signed out here; the sign-in service cannot be reached for its sign-out");
            message(
                StatusCode::SERVICE_UNAVAILABLE,
                UNAVAILABLE,
                &[
                    "You are signed out of Periscope, but its sign-in service cannot be reached just now, so your session there may still be open. Close the browser to end it.",
                ],
                Some(("/", "Back to Periscope")),
                None,
            )
        }
    };
    response.headers_mut().append(header::SET_COOKIE, clear);
    response
}
