//! The HTTP surface, laid out like the URLs (relative to the issuer's path): OpenID Connect
//! (`discovery`, `authorize`, `token`, `userinfo`, `logout`) and the pages (`register`,
//! `confirm`, `signin`, `terms`, `account`). This module holds what they share: cookies, the
//! session, CSRF pairing, the client address, parameters (and their extractors, [`QueryParams`]
//! and [`FormParams`]), and the failure answer.

mod account;
mod authorize;
mod confirm;
mod discovery;
mod logout;
mod register;
mod signin;
mod terms;
mod token;
mod userinfo;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::Inner;
use crate::error::StoreError;
use crate::html;
use crate::store::SessionUser;

/// The shared state of every handler.
pub(crate) type App = Arc<Inner>;

/// The cookie holding the sign-in session.
pub(crate) const SESSION_COOKIE: &str = "periscope_signin";

/// The cookie holding the browser's CSRF value (the forms carry its signed token:
/// `periscope_ui::csrf::CsrfKey`).
pub(crate) const CSRF_COOKIE: &str = "periscope_signin_csrf";

pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(discovery::configuration),
        )
        .route("/jwks", get(discovery::jwks))
        .route("/authorize", get(authorize::get).post(authorize::post))
        .route("/token", post(token::post))
        .route("/userinfo", get(userinfo::handle).post(userinfo::handle))
        .route("/logout", get(logout::get).post(logout::post))
        .route("/register", get(register::get).post(register::post))
        .route("/confirm", get(confirm::get).post(confirm::post))
        .route("/signin", get(signin::get).post(signin::post))
        .route("/terms", get(terms::get))
        .route("/account", get(account::get))
        .route("/", get(account::get))
        .route(
            "/assets/periscope.css",
            get(periscope_ui::assets::stylesheet),
        )
        .fallback(not_found)
        .layer(axum::middleware::map_response_with_state(
            app.clone(),
            html::frame_messages,
        ))
        .with_state(app)
}

async fn not_found() -> Response {
    html::message_page(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no page at this address.",
        None,
    )
}

/// A failure on the service's side, answered as a page and logged once here.
pub(crate) struct Unavailable(pub(crate) String);

impl From<StoreError> for Unavailable {
    fn from(e: StoreError) -> Self {
        Self(e.to_string())
    }
}

impl From<periscope_model::random::RandomError> for Unavailable {
    fn from(e: periscope_model::random::RandomError) -> Self {
        Self(e.to_string())
    }
}

impl IntoResponse for Unavailable {
    fn into_response(self) -> Response {
        tracing::error!(error = %self.0, "sign-in service failure");
        html::message_page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Sign-in is unavailable just now",
            "The sign-in service could not complete this request. This is a fault on our side; please try again in a few minutes.",
            None,
        )
    }
}

impl Inner {
    /// `{issuer}{path}`: the absolute URL of one of our endpoints.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.settings.issuer)
    }

    /// `{mount}{path}`: the absolute path of one of our endpoints, for links and redirects.
    pub(crate) fn path(&self, path: &str) -> String {
        format!("{}{path}", self.settings.mount)
    }

    /// A `Set-Cookie` value for one of our cookies; `None` as the value deletes it.
    pub(crate) fn cookie(&self, name: &str, value: Option<&str>) -> HeaderValue {
        set_cookie(name, value, &self.settings.mount, self.settings.secure)
    }

    /// The live session of this browser, if any: (digest of the cookie, its user).
    pub(crate) async fn session(
        &self,
        headers: &HeaderMap,
    ) -> Result<Option<(String, SessionUser)>, StoreError> {
        let Some(value) = cookie(headers, SESSION_COOKIE) else {
            return Ok(None);
        };
        if !crate::random::is_secret_shaped(value) {
            return Ok(None);
        }
        let digest = crate::random::digest(value);
        let now = self.clock.now().unix();
        let s = &self.settings;
        Ok(self
            .store
            .session(&digest, now, s.session_idle, s.session_max)
            .await?
            .map(|user| (digest, user)))
    }

    /// The CSRF token for this browser's forms, and the cookie to set when it has none yet.
    pub(crate) fn csrf_token(
        &self,
        headers: &HeaderMap,
    ) -> Result<(String, Option<HeaderValue>), StoreError> {
        if let Some(value) = cookie(headers, CSRF_COOKIE)
            && crate::random::is_secret_shaped(value)
        {
            return Ok((self.csrf.token(value), None));
        }
        let value = crate::random::secret()?;
        Ok((
            self.csrf.token(&value),
            Some(self.cookie(CSRF_COOKIE, Some(&value))),
        ))
    }

    /// Whether a submitted form's token matches this browser's CSRF cookie.
    pub(crate) fn csrf_ok(&self, headers: &HeaderMap, token: Option<&str>) -> bool {
        match (cookie(headers, CSRF_COOKIE), token) {
            (Some(value), Some(token)) => self.csrf.verify(value, token),
            _ => false,
        }
    }

    /// The client's address: the configured proxy header's last entry, else the peer address.
    pub(crate) fn client_ip(&self, parts: &Parts) -> Result<IpAddr, Unavailable> {
        if let Some(name) = &self.settings.client_ip_header {
            let value = parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.rsplit(',').next())
                .and_then(|v| v.trim().parse().ok());
            return value.ok_or_else(|| {
                Unavailable(format!(
                    "the request has no usable `{name}` header (signin.client_ip_header)"
                ))
            });
        }
        parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| peer.ip())
            .ok_or_else(|| {
                Unavailable(
                    "the sign-in router needs the peer address: serve it with \
                     into_make_service_with_connect_info::<SocketAddr>()"
                        .to_owned(),
                )
            })
    }
}

/// A `Set-Cookie` value scoped to the mount path (`/` at the root): `periscope_ui::cookie`.
fn set_cookie(name: &str, value: Option<&str>, mount: &str, secure: bool) -> HeaderValue {
    let path = if mount.is_empty() { "/" } else { mount };
    match value {
        Some(value) => periscope_ui::cookie::set_cookie(name, value, path, None, secure),
        None => periscope_ui::cookie::set_cookie(name, "", path, Some(0), secure),
    }
}

pub(crate) use periscope_ui::cookie::cookie;

/// `response` with `cookies` added.
pub(crate) fn with_cookies(
    mut response: Response,
    cookies: impl IntoIterator<Item = HeaderValue>,
) -> Response {
    for c in cookies {
        response.headers_mut().append(header::SET_COOKIE, c);
    }
    response
}

/// A 303 redirect to `location` (absolute URL or path).
pub(crate) fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    match HeaderValue::from_str(location) {
        Ok(value) => {
            response.headers_mut().insert(header::LOCATION, value);
        }
        Err(_) => {
            return Unavailable(format!("cannot redirect to {location:?}")).into_response();
        }
    }
    periscope_ui::headers::secure_headers(response.headers_mut());
    response
}

/// Request parameters (query or form) as received, so repeated names can be refused (RFC 6749
/// §3.1: a parameter must not appear more than once).
#[derive(Debug, Default)]
pub(crate) struct Params(pub(crate) Vec<(String, String)>);

impl Params {
    pub(crate) fn from_query(query: Option<&str>) -> Self {
        Self(
            url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect(),
        )
    }

    pub(crate) fn from_body(body: &[u8]) -> Self {
        Self(url::form_urlencoded::parse(body).into_owned().collect())
    }

    /// The value of `name`; `Err(name)` when it appears more than once. An empty value counts
    /// as absent.
    pub(crate) fn one<'a>(&'a self, name: &'static str) -> Result<Option<&'a str>, &'static str> {
        let mut found = self
            .0
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str());
        match (found.next(), found.next()) {
            (Some(_), Some(_)) => Err(name),
            (Some(""), None) | (None, _) => Ok(None),
            (Some(v), None) => Ok(Some(v)),
        }
    }

    /// The value of `name` for a page form (the last one wins; empty counts as absent).
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .filter(|v| !v.is_empty())
    }

    /// Whether the form field `name` was sent at all (a ticked checkbox).
    pub(crate) fn ticked(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// The parameters as a query string.
    pub(crate) fn to_query(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.0.iter())
            .finish()
    }
}

/// The parameters of a request's query string, as received ([`Params`]); never refused.
pub(crate) struct QueryParams(pub(crate) Params);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for QueryParams {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(QueryParams(Params::from_query(parts.uri.query())))
    }
}

/// The parameters of a form's (or a back channel's) `application/x-www-form-urlencoded` body,
/// as received ([`Params`]); refused only as axum refuses a body it cannot read.
pub(crate) struct FormParams(pub(crate) Params);

impl<S: Send + Sync> axum::extract::FromRequest<S> for FormParams {
    type Rejection = axum::extract::rejection::BytesRejection;

    async fn from_request(
        request: axum::extract::Request,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let body = axum::body::Bytes::from_request(request, state).await?;
        Ok(FormParams(Params::from_body(&body)))
    }
}

/// The page shown when a form's CSRF token does not match.
pub(crate) fn csrf_refused(retry: &str) -> Response {
    html::message_page(
        StatusCode::FORBIDDEN,
        "This form has expired",
        "The form could not be accepted because it did not come from this page in this browser (or it was open too long). Open the page again and resubmit.",
        Some((retry, "Open the page again")),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn cookies_are_http_only_lax_scoped_and_secure_over_https() {
        let c = set_cookie(SESSION_COOKIE, Some("v"), "/auth", false);
        assert_eq!(c, "periscope_signin=v; Path=/auth; HttpOnly; SameSite=Lax");
        let c = set_cookie(SESSION_COOKIE, Some("v"), "", true);
        assert_eq!(
            c,
            "periscope_signin=v; Path=/; HttpOnly; SameSite=Lax; Secure"
        );
        let c = set_cookie(SESSION_COOKIE, None, "/auth", true);
        assert_eq!(
            c,
            "periscope_signin=; Path=/auth; HttpOnly; SameSite=Lax; Max-Age=0; Secure"
        );
    }

    #[test]
    fn cookie_lookup_and_parameters() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; periscope_signin=xyz; b=2"),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("xyz"));
        assert_eq!(cookie(&headers, "missing"), None);
        let p = Params::from_query(Some("state=a%26b&nonce=&x=1&x=2"));
        assert_eq!(p.one("state"), Ok(Some("a&b")));
        assert_eq!(p.one("nonce"), Ok(None));
        assert_eq!(p.one("x"), Err("x"));
        assert_eq!(p.field("x"), Some("2"));
    }
}
