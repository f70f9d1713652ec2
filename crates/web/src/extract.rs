//! The extractors every handler opens with, so that none repeats the same `match`:
//!
//! - [`SignedPage`]: the signed-in session of a page; without one the rejection is the page to
//!   show instead ("Sign in to search", "Your session expired": [`crate::session`]).
//! - [`SignedFragment`]: the same for the routes the pages' scripts fetch; the rejection is a
//!   bare 401 with `X-Periscope-Session: ended`.
//! - [`MaybeSigned`]: a public page's session, if there is an active one.
//! - [`SignedForm`]: a form's POST: the form, the session, and the form's CSRF token checked
//!   against the session's ("This form has expired" otherwise).
//! - [`Search`]: what a handler needs to call the search service: the service (or the refusal
//!   saying search is unavailable), the client's address for the audit record, and a request id.
//! - [`Params`]: a query string as a serde struct through [`axum::extract::Query`], never
//!   refused: a name given twice reads as its last value, as the pages always read it.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Form, FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use periscope_service::{Caller, SearchService, ServiceError};
use periscope_state::Channel;
use serde::de::DeserializeOwned;

use crate::Web;
use crate::session::{
    Signed, csrf_refused, optional_session, random_token, require_session,
    require_session_fragment, same,
};

/// The signed-in session of a page; rejected with the page to show instead.
pub(crate) struct SignedPage(pub(crate) Signed);

impl FromRequestParts<Web> for SignedPage {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Web) -> Result<Self, Response> {
        require_session(web, &parts.headers, &parts.uri)
            .await
            .map(SignedPage)
    }
}

/// The signed-in session of a fragment or JSON route; rejected with the bare 401 the scripts
/// read as "reload the page".
pub(crate) struct SignedFragment(pub(crate) Signed);

impl FromRequestParts<Web> for SignedFragment {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Web) -> Result<Self, Response> {
        require_session_fragment(web, &parts.headers)
            .await
            .map(SignedFragment)
    }
}

/// The session of a public page's request, if there is an active one; never rejected.
pub(crate) struct MaybeSigned(pub(crate) Option<Signed>);

impl FromRequestParts<Web> for MaybeSigned {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        web: &Web,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(MaybeSigned(optional_session(web, &parts.headers).await))
    }
}

/// A form that carries the session's CSRF token in its `csrf` field.
pub(crate) trait CsrfField {
    /// The token the form sent.
    fn csrf(&self) -> &str;
}

/// A form's POST from a signed-in page: the form (axum's [`Form`], whose rejection comes first,
/// as before any session is read), then the session ([`SignedPage`]'s rejection), then the
/// form's token checked against the session's ("This form has expired", 403).
pub(crate) struct SignedForm<T> {
    pub(crate) signed: Signed,
    pub(crate) form: T,
}

impl<T> FromRequest<Web> for SignedForm<T>
where
    T: DeserializeOwned + CsrfField + Send,
{
    type Rejection = Response;

    async fn from_request(request: Request, web: &Web) -> Result<Self, Response> {
        let headers = request.headers().clone();
        let uri = request.uri().clone();
        let Form(form) = Form::<T>::from_request(request, web)
            .await
            .map_err(IntoResponse::into_response)?;
        let signed = require_session(web, &headers, &uri).await?;
        if !same(form.csrf(), &signed.session.csrf) {
            return Err(csrf_refused(Some(&signed.top())));
        }
        Ok(SignedForm { signed, form })
    }
}

/// What a handler calls the search service with: the application's service (or the refusal
/// that says search is temporarily unavailable), the client's address as the server determined
/// it (the `ConnectInfo` peer address: the client's behind a trusted proxy; `None` when the
/// router was called without one), kept in the audit record, and this request's id.
pub(crate) struct Search {
    service: Option<SearchService>,
    client: Option<IpAddr>,
    /// A request id for the search service (random; `web` if the system has no randomness).
    pub(crate) request_id: String,
}

impl Search {
    /// The search service, or the refusal that says search is temporarily unavailable.
    pub(crate) fn service(&self) -> Result<&SearchService, ServiceError> {
        self.service
            .as_ref()
            .ok_or_else(|| ServiceError::Unavailable("no search service".into()))
    }

    /// The signed-in account as the service's caller (the browser channel).
    pub(crate) fn caller(&self, signed: &Signed) -> Caller {
        caller(&signed.account, self.client)
    }
}

/// `account` as the search service's caller on the browser channel, from `client`.
pub(crate) fn caller(account: &periscope_state::Account, client: Option<IpAddr>) -> Caller {
    Caller {
        account: account.clone(),
        key: None,
        channel: Channel::Web,
        client,
    }
}

impl FromRequestParts<Web> for Search {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        web: &Web,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(Search {
            service: web.inner.search.clone(),
            client: parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|info| info.0.ip()),
            request_id: random_token().unwrap_or_else(|_| "web".into()),
        })
    }
}

/// A query string as `T` ([`Query`]), never refused: the pages read every parameter leniently
/// (a missing or malformed value takes its default in `T`), and a name given more than once
/// reads as its last value — which `Query` alone refuses as a duplicate field.
pub(crate) struct Params<T>(pub(crate) T);

impl<T, S> FromRequestParts<S> for Params<T>
where
    T: DeserializeOwned + Default,
    S: Send + Sync,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &S,
    ) -> Result<Self, std::convert::Infallible> {
        Ok(Params(parse_query(parts.uri.query())))
    }
}

/// [`Params`]' reading of `query`.
pub(crate) fn parse_query<T: DeserializeOwned + Default>(query: Option<&str>) -> T {
    let query = query.unwrap_or("");
    if let Ok(Query(value)) = Query::<T>::try_from_uri(&uri_with(query)) {
        return value;
    }
    // A name given more than once: keep its last value, in the place of its first.
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match pairs.iter_mut().find(|(name, _)| *name == *k) {
            Some(pair) => pair.1 = v.into_owned(),
            None => pairs.push((k.into_owned(), v.into_owned())),
        }
    }
    let once = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    Query::<T>::try_from_uri(&uri_with(&once))
        .map(|Query(value)| value)
        .unwrap_or_default()
}

fn uri_with(query: &str) -> axum::http::Uri {
    format!("/?{query}").parse().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    struct Two {
        q: Option<String>,
        page: Option<String>,
    }

    #[test]
    fn query_strings_are_read_leniently() {
        let read = |q: Option<&str>| parse_query::<Two>(q);
        assert_eq!(read(None), Two::default());
        assert_eq!(
            read(Some("q=a+b&page=x&other=1")),
            Two {
                q: Some("a b".into()),
                page: Some("x".into())
            }
        );
        assert_eq!(
            read(Some("q=first&page=2&q=last%26")),
            Two {
                q: Some("last&".into()),
                page: Some("2".into())
            }
        );
    }
}
