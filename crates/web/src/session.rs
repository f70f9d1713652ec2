//! What every handler shares: the session check (idle timeout, "Sign in to search", "Your
//! session expired") behind the extractors of [`crate::extract`], cookies, `return_to`
//! validation, the CSRF check, redirects and the error pages.

use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use periscope_state::{Account, WebSession, WebSessionLookup};

use crate::html::{self, Ring, TopBar, message};
use crate::{CALLBACK_PATH, SESSION_COOKIE, SIGN_IN_TO_SEARCH, UNAVAILABLE, Web};

/// 32 random bytes, base64url (`periscope_model::random`, the workspace's one random-token module).
pub(crate) use periscope_model::random::secret as random_token;

/// The value of cookie `name` in the request.
pub(crate) fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    periscope_ui::cookie::cookie(headers, name).map(str::to_owned)
}

/// `return_to` when it is a same-origin relative path (with its query), else `/`.
pub(crate) fn safe_return_to(candidate: Option<&str>) -> String {
    match candidate {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.starts_with("/\\")
                && p.len() <= 2048
                && !p.chars().any(|c| c.is_control() || c == '\\')
                && !p.starts_with("/signin")
                && !p.starts_with(CALLBACK_PATH) =>
        {
            p.to_owned()
        }
        _ => "/".to_owned(),
    }
}

pub(crate) fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    html::secure_headers(response.headers_mut());
    response
}

pub(crate) fn sign_in_href(return_to: &str) -> String {
    url::form_urlencoded::Serializer::new("/signin?".to_owned())
        .append_pair("return_to", return_to)
        .finish()
        .replacen("/signin?&", "/signin?", 1)
}

pub(crate) fn unavailable(why: &str) -> Response {
    tracing::warn!(reason = %why, "the sign-in service cannot be reached");
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        UNAVAILABLE,
        &[
            "Periscope cannot reach its sign-in service just now, so nobody can sign in or out. Try again in a few minutes.",
        ],
        Some(("/", "Try again")),
        None,
    )
}

pub(crate) fn internal(what: &str, e: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what}");
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        &["The request could not be completed. Try again; if it keeps failing, report a problem."],
        Some(("/", "Back to Periscope")),
        None,
    )
}

pub(crate) fn sign_in_failed(why: &str) -> Response {
    tracing::warn!(reason = %why, "a sign-in was refused");
    message(
        StatusCode::BAD_REQUEST,
        "The sign-in could not be completed",
        &[
            why,
            "Nothing was signed in. Start again from the sign-in button.",
        ],
        Some(("/signin", "Sign in")),
        None,
    )
}

/// A signed-in request: the session, its account and the account's allowance today (for the
/// ring of the account menu).
pub(crate) struct Signed {
    pub(crate) session_id: String,
    pub(crate) session: WebSession,
    pub(crate) account: Account,
    pub(crate) ring: Ring,
}

impl Signed {
    pub(crate) fn top(&self) -> TopBar<'_> {
        TopBar {
            email: self.account.email.as_str(),
            csrf: &self.session.csrf,
            ring: self.ring,
        }
    }

    /// Reads the allowance again (after a search on this request charged one).
    pub(crate) async fn refresh_ring(&mut self, web: &Web) {
        self.ring = read_ring(web, &self.account).await;
    }
}

/// The account's searches today, free of charge: through the search service
/// ([`periscope_service::SearchService::allowance`], the API's `GET /v1/allowance`) when the
/// application has one, else from the state database by the same rule (the account's daily
/// limit, today's UTC counter). A failed read is [`Ring::Unreadable`], logged once here.
pub(crate) async fn read_ring(web: &Web, account: &Account) -> Ring {
    use periscope_state::{DailyLimit, UtcDay};
    let inner = &web.inner;
    let usage = match &inner.search {
        Some(service) => {
            let caller = crate::extract::caller(account, None);
            service.allowance(&caller).await.map_err(|e| e.to_string())
        }
        None => match account.daily_limit {
            DailyLimit::Unlimited => Ok(None),
            DailyLimit::Limited(limit) => inner
                .state
                .usage(account.id, UtcDay::of(inner.now()), limit)
                .await
                .map(Some)
                .map_err(|e| e.to_string()),
        },
    };
    match usage {
        Ok(Some(usage)) => Ring::Limited(usage),
        Ok(None) => Ring::Unlimited,
        Err(e) => {
            tracing::warn!(account.id = %account.id, error = %e, "cannot read the allowance");
            Ring::Unreadable
        }
    }
}

/// The session of this request, or the page to show instead: "Sign in to search" without a
/// session, "Your session expired" after the idle timeout (both offering to sign in and come
/// back to `uri`).
pub(crate) async fn require_session(
    web: &Web,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<Signed, Response> {
    let inner = &web.inner;
    let here = safe_return_to(uri.path_and_query().map(|p| p.as_str()));
    let Some(session_id) = cookie_value(headers, SESSION_COOKIE) else {
        return Err(sign_in_to_search(&here));
    };
    let lookup = inner
        .state
        .web_session(&session_id, inner.now(), inner.idle_secs)
        .await
        .map_err(|e| internal("cannot read the session", &e))?;
    let session = match lookup {
        WebSessionLookup::Active(session) => session,
        WebSessionLookup::Expired | WebSessionLookup::Unknown => {
            let mut response = message(
                StatusCode::OK,
                "Your session expired",
                &[
                    "You were signed out after 30 minutes without activity. Sign in again to continue where you were.",
                ],
                Some((&sign_in_href(&here), "Sign in again")),
                None,
            );
            response.headers_mut().append(
                header::SET_COOKIE,
                inner.cookie(SESSION_COOKIE, "", "/", Some(0)),
            );
            return Err(response);
        }
    };
    let account = match inner.state.account(session.account).await {
        Ok(Some(account)) => account,
        Ok(None) => return Err(sign_in_to_search(&here)),
        Err(e) => return Err(internal("cannot read the account", &e)),
    };
    let ring = read_ring(web, &account).await;
    Ok(Signed {
        session_id,
        session,
        account,
        ring,
    })
}

/// The session of a public page's request, if there is an active one (the top bar then shows
/// the account menu); without one, or after the idle timeout, `None`: a public page is shown
/// to anyone and never says the session expired.
pub(crate) async fn optional_session(web: &Web, headers: &HeaderMap) -> Option<Signed> {
    let inner = &web.inner;
    let session_id = cookie_value(headers, SESSION_COOKIE)?;
    let lookup = inner
        .state
        .web_session(&session_id, inner.now(), inner.idle_secs)
        .await;
    let session = match lookup {
        Ok(WebSessionLookup::Active(session)) => session,
        Ok(_) => return None,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the session of a public page");
            return None;
        }
    };
    let account = match inner.state.account(session.account).await {
        Ok(account) => account?,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the account of a public page");
            return None;
        }
    };
    let ring = read_ring(web, &account).await;
    Some(Signed {
        session_id,
        session,
        account,
        ring,
    })
}

/// [`require_session`] for the routes the pages' scripts fetch (fragments and JSON): without
/// an active session the answer is a bare 401 with `X-Periscope-Session: ended`, and the
/// session cookie is left alone, so the script reloads the page and the server shows "Your
/// session expired" (or "Sign in to search") there, with a sign-in that returns to the page.
pub(crate) async fn require_session_fragment(
    web: &Web,
    headers: &HeaderMap,
) -> Result<Signed, Response> {
    let ended = || {
        let mut response = (StatusCode::UNAUTHORIZED, "session ended").into_response();
        response
            .headers_mut()
            .insert("x-periscope-session", HeaderValue::from_static("ended"));
        html::secure_headers(response.headers_mut());
        response
    };
    let inner = &web.inner;
    let Some(session_id) = cookie_value(headers, SESSION_COOKIE) else {
        return Err(ended());
    };
    let lookup = inner
        .state
        .web_session(&session_id, inner.now(), inner.idle_secs)
        .await
        .map_err(|e| internal("cannot read the session", &e))?;
    let WebSessionLookup::Active(session) = lookup else {
        return Err(ended());
    };
    match inner.state.account(session.account).await {
        Ok(Some(account)) => Ok(Signed {
            session_id,
            session,
            account,
            ring: Ring::Unread,
        }),
        Ok(None) => Err(ended()),
        Err(e) => Err(internal("cannot read the account", &e)),
    }
}

pub(crate) fn sign_in_to_search(here: &str) -> Response {
    message(
        StatusCode::OK,
        SIGN_IN_TO_SEARCH,
        &[
            "Periscope shows what hosts expose on the internet. Sign in with your business account to search; if you have none yet, the sign-in page lets you register.",
        ],
        Some((&sign_in_href(here), "Sign in")),
        None,
    )
}

/// A form that carries nothing but the CSRF token (and, for the account's marketing form,
/// `consent`).
#[derive(serde::Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    pub(crate) csrf: String,
    #[serde(default)]
    pub(crate) consent: String,
}

impl crate::extract::CsrfField for CsrfForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(crate) fn csrf_refused(top: Option<&TopBar<'_>>) -> Response {
    tracing::warn!("a form without a valid CSRF token was refused");
    message(
        StatusCode::FORBIDDEN,
        "This form has expired",
        &[
            "The form was not sent from this session's page, so nothing was changed. Open the page again and retry.",
        ],
        Some(("/", "Back to Periscope")),
        top,
    )
}

pub(crate) use periscope_ui::csrf::same;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_to_must_be_same_origin_relative() {
        assert_eq!(safe_return_to(Some("/?q=port%3A22")), "/?q=port%3A22");
        assert_eq!(safe_return_to(Some("/account")), "/account");
        for bad in [
            "//evil.example/",
            "/\\evil.example",
            "https://evil.example/",
            "evil",
            "/signin?return_to=/",
            "/a\nb",
            "",
        ] {
            assert_eq!(safe_return_to(Some(bad)), "/", "{bad:?}");
        }
        assert_eq!(safe_return_to(None), "/");
    }

    #[test]
    fn sign_in_link_encodes_the_return_path() {
        assert_eq!(
            sign_in_href("/?q=a b&x=1"),
            "/signin?return_to=%2F%3Fq%3Da+b%26x%3D1"
        );
    }

    #[test]
    fn cookies_are_read_by_name() {
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; periscope_session=xyz; b=2"),
        );
        assert_eq!(cookie_value(&h, SESSION_COOKIE).as_deref(), Some("xyz"));
        assert_eq!(cookie_value(&h, crate::LOGIN_COOKIE), None);
    }
}
