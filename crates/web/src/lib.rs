//! The server side of Periscope's browser application: sign-in through an OpenID Connect
//! provider (Periscope's own sign-in service or any other), browser sessions, the account
//! page, and the server-rendered pages around them.
//!
//! [`Web::new`] takes a [`WebConfig`] (the application's public URL, the provider's issuer, the
//! client id and secret), the [`State`] database and a clock; [`Web::router`] is an axum
//! [`Router`] for the application's root. What it does (reference: `docs/web.md`):
//!
//! - `/signin` discovers the provider and redirects to it with a state, a nonce and a PKCE
//!   S256 challenge, remembered in the state database (`web_sign_ins`) and bound to the
//!   browser by a cookie; `/oidc/callback` checks the state, redeems the code and verifies the
//!   ID token and its nonce. A tampered state or nonce gets an error page and no session.
//! - The first sign-in prepares the account: the organisation as typed (unverified, without
//!   effect on access), the terms version and time and the marketing consent the ID token
//!   carries.
//! - The session cookie `periscope_session` (HttpOnly, SameSite=Lax, `Secure` behind HTTPS) gets
//!   a new random id at every sign-in; only its SHA-256 is stored. After 30 idle minutes a page
//!   says the session expired, and signing in again returns to the page the user was on.
//! - Sign-out ends the session here and at the provider (RP-initiated logout with
//!   `id_token_hint`), so the next sign-in asks for the password.
//! - Every state-changing form carries the session's CSRF token; every page carries the
//!   preview banner of spec §5 and loads nothing from anywhere.

mod html;
mod oidc;

use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, Query, State as AxumState};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use periscope_model::Timestamp;
use periscope_signin::Clock;
use periscope_state::{
    Account, Email, NewAccount, PendingSignIn, State, StateError, TermsAcceptance, WebSession,
    WebSessionLookup,
};

use html::{TopBar, escape, message, page};
use oidc::{Identity, OidcError, RelyingParty};

/// The session cookie.
pub const SESSION_COOKIE: &str = "periscope_session";
/// The cookie binding a sign-in in flight to the browser that started it.
pub const LOGIN_COOKIE: &str = "periscope_login";
/// The idle timeout of DECISIONS.md: 30 minutes.
pub const DEFAULT_IDLE_SECS: i64 = 1800;
/// How long a sign-in in flight may take (redirect to callback).
pub const SIGN_IN_LIFETIME_SECS: i64 = 600;
/// The callback path, relative to the public URL.
pub const CALLBACK_PATH: &str = "/oidc/callback";
/// The page the provider returns to after logout, relative to the public URL.
pub const SIGNED_OUT_PATH: &str = "/signed-out";
/// The wording of spec "Authentication" when the provider cannot be reached.
pub const UNAVAILABLE: &str = "Session service unavailable";
/// The heading of the page shown without a session.
pub const SIGN_IN_TO_SEARCH: &str = "Sign in to search";

/// The application's settings.
#[derive(Clone, Debug)]
pub struct WebConfig {
    /// Where browsers reach the application: `http(s)://host[:port]`, no path, no trailing
    /// slash. The callback is `{public_url}/oidc/callback`, the signed-out page
    /// `{public_url}/signed-out`; `https` makes the cookies `Secure`.
    pub public_url: String,
    /// The OpenID Connect provider's issuer (discovery at
    /// `{issuer}/.well-known/openid-configuration`).
    pub issuer: String,
    /// The application's client id at the provider.
    pub client_id: String,
    /// The application's client secret at the provider.
    pub client_secret: String,
    /// Idle time after which a session ends (default 30 minutes).
    pub session_idle_secs: i64,
}

impl WebConfig {
    /// Settings with the default idle timeout.
    pub fn new(
        public_url: impl Into<String>,
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            public_url: public_url.into(),
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            session_idle_secs: DEFAULT_IDLE_SECS,
        }
    }

    /// The redirect URI to register at the provider.
    pub fn callback_url(&self) -> String {
        format!("{}{CALLBACK_PATH}", self.public_url)
    }

    /// The post-logout redirect URI to register at the provider.
    pub fn signed_out_url(&self) -> String {
        format!("{}{SIGNED_OUT_PATH}", self.public_url)
    }
}

/// A setting the application cannot work with.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// A setting is malformed; the message names it (`web.public_url`, `web.issuer`…).
    #[error("web application configuration: `{key}` {why}")]
    Config {
        /// The setting.
        key: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The HTTP client could not be built.
    #[error("web application: cannot build the HTTP client")]
    Http(#[source] reqwest::Error),
}

/// The browser application's server side; cheap to clone.
#[derive(Clone)]
pub struct Web {
    inner: Arc<Inner>,
}

struct Inner {
    state: State,
    clock: Arc<dyn Clock>,
    rp: RelyingParty,
    issuer: String,
    public_url: String,
    secure: bool,
    idle_secs: i64,
}

fn config_error(key: &'static str, why: impl Into<String>) -> WebError {
    WebError::Config {
        key,
        why: why.into(),
    }
}

fn check_url(key: &'static str, value: &str, path_allowed: bool) -> Result<url::Url, WebError> {
    let url =
        url::Url::parse(value).map_err(|e| config_error(key, format!("is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(config_error(key, "must be an absolute http(s) URL"));
    }
    if value.ends_with('/') || url.query().is_some() || url.fragment().is_some() {
        return Err(config_error(
            key,
            "must have no trailing slash, query or fragment",
        ));
    }
    if !path_allowed && url.path() != "/" {
        return Err(config_error(
            key,
            "must have no path (http(s)://host[:port])",
        ));
    }
    Ok(url)
}

impl Web {
    /// Checks the settings and builds the application. The provider is not contacted here:
    /// discovery runs at each sign-in, so the application starts while the provider is down
    /// (and says "Session service unavailable" until it is back).
    pub fn new(config: WebConfig, state: State, clock: Arc<dyn Clock>) -> Result<Self, WebError> {
        let public = check_url("web.public_url", &config.public_url, false)?;
        let issuer = check_url("web.issuer", &config.issuer, true)?;
        if issuer.scheme() == "https" {
            return Err(config_error(
                "web.issuer",
                "is https, and this build reaches the sign-in service over plain HTTP only \
                 (loopback or a trusted network); see docs/web.md",
            ));
        }
        if config.client_id.is_empty() {
            return Err(config_error("web.client_id", "is empty"));
        }
        if config.client_secret.is_empty() {
            return Err(config_error("web.client_secret", "is empty"));
        }
        if config.session_idle_secs <= 0 {
            return Err(config_error("web.session_idle_secs", "must be positive"));
        }
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(WebError::Http)?;
        let redirect_uri = openidconnect::RedirectUrl::new(config.callback_url())
            .map_err(|e| config_error("web.public_url", e.to_string()))?;
        let issuer_url = openidconnect::IssuerUrl::new(config.issuer.clone())
            .map_err(|e| config_error("web.issuer", e.to_string()))?;
        Ok(Self {
            inner: Arc::new(Inner {
                state,
                clock,
                rp: RelyingParty {
                    issuer: issuer_url,
                    client_id: config.client_id,
                    client_secret: config.client_secret,
                    redirect_uri,
                    http,
                },
                issuer: config.issuer,
                public_url: config.public_url,
                secure: public.scheme() == "https",
                idle_secs: config.session_idle_secs,
            }),
        })
    }

    /// The application's routes, for the root of its public URL.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(home))
            .route("/signin", get(sign_in))
            .route(CALLBACK_PATH, get(callback))
            .route("/signout", post(sign_out))
            .route(SIGNED_OUT_PATH, get(signed_out))
            .route("/account", get(account))
            .route("/account/marketing", post(marketing))
            .route("/quickstart", get(placeholder))
            .route("/release-notes", get(placeholder))
            .route("/report-a-problem", get(placeholder))
            .route("/api-access", get(placeholder))
            .with_state(self.clone())
    }

    /// Deletes idle sessions and expired sign-ins in flight; returns how many rows went.
    pub async fn purge(&self) -> Result<u64, StateError> {
        let inner = &self.inner;
        inner.state.purge_web(inner.now(), inner.idle_secs).await
    }
}

impl Inner {
    fn now(&self) -> Timestamp {
        let secs = self.clock.now();
        Timestamp::from_unix(secs)
            .unwrap_or_else(|| panic!("the clock gave {secs}, outside the range of a Timestamp"))
    }

    fn cookie(&self, name: &str, value: &str, path: &str, max_age: Option<i64>) -> HeaderValue {
        let mut c = format!("{name}={value}; Path={path}; HttpOnly; SameSite=Lax");
        if let Some(age) = max_age {
            c.push_str(&format!("; Max-Age={age}"));
        }
        if self.secure {
            c.push_str("; Secure");
        }
        HeaderValue::from_str(&c).unwrap_or_else(|_| HeaderValue::from_static(""))
    }
}

// ---------------------------------------------------------------- helpers

/// 32 random bytes, base64url.
fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes)?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// `return_to` when it is a same-origin relative path (with its query), else `/`.
fn safe_return_to(candidate: Option<&str>) -> String {
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

fn redirect(to: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    html::secure_headers(response.headers_mut());
    response
}

fn sign_in_href(return_to: &str) -> String {
    url::form_urlencoded::Serializer::new("/signin?".to_owned())
        .append_pair("return_to", return_to)
        .finish()
        .replacen("/signin?&", "/signin?", 1)
}

fn unavailable(why: &str) -> Response {
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

fn internal(what: &str, e: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %e, "{what}");
    message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        &["The request could not be completed. Try again; if it keeps failing, report a problem."],
        Some(("/", "Back to Periscope")),
        None,
    )
}

fn sign_in_failed(why: &str) -> Response {
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

/// A signed-in request: the session and its account.
struct Signed {
    session_id: String,
    session: WebSession,
    account: Account,
}

impl Signed {
    fn top(&self) -> TopBar<'_> {
        TopBar {
            email: self.account.email.as_str(),
            csrf: &self.session.csrf,
        }
    }
}

/// The session of this request, or the page to show instead: "Sign in to search" without a
/// session, "Your session expired" after the idle timeout (both offering to sign in and come
/// back to `uri`).
async fn require_session(web: &Web, headers: &HeaderMap, uri: &Uri) -> Result<Signed, Response> {
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
    Ok(Signed {
        session_id,
        session,
        account,
    })
}

fn sign_in_to_search(here: &str) -> Response {
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

// ---------------------------------------------------------------- handlers

async fn home(AxumState(web): AxumState<Web>, headers: HeaderMap, uri: Uri) -> Response {
    match require_session(&web, &headers, &uri).await {
        Ok(signed) => page(
            StatusCode::OK,
            "Search",
            Some(&signed.top()),
            "<main class=\"empty\" aria-label=\"Search\"></main>",
        ),
        Err(page) => page,
    }
}

async fn placeholder(AxumState(web): AxumState<Web>, headers: HeaderMap, uri: Uri) -> Response {
    let signed = match require_session(&web, &headers, &uri).await {
        Ok(signed) => signed,
        Err(page) => return page,
    };
    let title = match uri.path() {
        "/quickstart" => "Quickstart",
        "/release-notes" => "Release notes",
        "/report-a-problem" => "Report a problem",
        _ => "API access",
    };
    message(
        StatusCode::OK,
        title,
        &["Coming with the browser application."],
        Some(("/", "Back to Periscope")),
        Some(&signed.top()),
    )
}

async fn sign_in(
    AxumState(web): AxumState<Web>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let inner = &web.inner;
    let return_to = safe_return_to(query.get("return_to").map(String::as_str));
    let provider = match inner.rp.discover().await {
        Ok(p) => p,
        Err(e) => return unavailable(&e.to_string()),
    };
    let started = provider.start();
    let now = inner.now();
    let pending = PendingSignIn {
        nonce: started.nonce,
        pkce_verifier: started.pkce_verifier,
        return_to,
    };
    let expires = Timestamp::from_unix(now.unix() + SIGN_IN_LIFETIME_SECS).unwrap_or(now);
    if let Err(e) = inner
        .state
        .begin_web_sign_in(&started.state, &pending, now, expires)
        .await
    {
        return internal("cannot record the sign-in in flight", &e);
    }
    let mut response = redirect(&started.url);
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(
            LOGIN_COOKIE,
            &started.state,
            CALLBACK_PATH,
            Some(SIGN_IN_LIFETIME_SECS),
        ),
    );
    response
}

async fn callback(
    AxumState(web): AxumState<Web>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let inner = &web.inner;
    let mut response = finish_sign_in(&web, &headers, &query).await;
    // The binding cookie is spent either way.
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(LOGIN_COOKIE, "", CALLBACK_PATH, Some(0)),
    );
    response
}

async fn finish_sign_in(
    web: &Web,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Response {
    let inner = &web.inner;
    let Some(state) = query.get("state") else {
        return sign_in_failed("The answer from the sign-in service carries no state.");
    };
    let bound = cookie_value(headers, LOGIN_COOKIE);
    if bound.as_deref() != Some(state.as_str()) {
        return sign_in_failed(
            "The answer from the sign-in service does not belong to a sign-in started in this browser (the state does not match).",
        );
    }
    let now = inner.now();
    let pending = match inner.state.take_web_sign_in(state, now).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return sign_in_failed(
                "This sign-in has expired or was completed already (the state is unknown).",
            );
        }
        Err(e) => return internal("cannot read the sign-in in flight", &e),
    };
    if let Some(error) = query.get("error") {
        return sign_in_failed(&format!(
            "The sign-in service answered with the error “{error}”."
        ));
    }
    let Some(code) = query.get("code") else {
        return sign_in_failed("The answer from the sign-in service carries no code.");
    };
    let provider = match inner.rp.discover().await {
        Ok(p) => p,
        Err(e) => return unavailable(&e.to_string()),
    };
    let identity = match provider
        .finish(&inner.rp.http, code, &pending.pkce_verifier, &pending.nonce)
        .await
    {
        Ok(identity) => identity,
        Err(OidcError::Unavailable(why)) => return unavailable(&why),
        Err(OidcError::Refused(why)) => return sign_in_failed(&why),
    };
    let account = match prepare_account(web, &identity, now).await {
        Ok(account) => account,
        Err(Prepare::Refused(why)) => return sign_in_failed(&why),
        Err(Prepare::State(e)) => return internal("cannot prepare the account", &e),
    };
    // A new session id at every sign-in; the one this browser had ends.
    if let Some(old) = cookie_value(headers, SESSION_COOKIE)
        && let Err(e) = inner.state.end_web_session(&old).await
    {
        return internal("cannot end the previous session", &e);
    }
    let (session_id, csrf) = match (random_token(), random_token()) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => return internal("no randomness for the session", &e),
    };
    if let Err(e) = inner
        .state
        .create_web_session(&session_id, account.id, &csrf, &identity.id_token, now)
        .await
    {
        return internal("cannot store the session", &e);
    }
    tracing::info!(account = %account.id, "signed in to the web application");
    let mut response = redirect(&pending.return_to);
    response.headers_mut().append(
        header::SET_COOKIE,
        inner.cookie(SESSION_COOKIE, &session_id, "/", None),
    );
    response
}

enum Prepare {
    Refused(String),
    State(StateError),
}

impl From<StateError> for Prepare {
    fn from(e: StateError) -> Self {
        Prepare::State(e)
    }
}

/// The account this identity signs in as; prepared at the first sign-in: created with the
/// organisation as typed (or an existing account with the verified address is linked), the
/// terms and marketing consent from the ID token recorded.
async fn prepare_account(
    web: &Web,
    identity: &Identity,
    now: Timestamp,
) -> Result<Account, Prepare> {
    let inner = &web.inner;
    let state = &inner.state;
    if let Some(id) = state
        .identity_account(&inner.issuer, &identity.subject)
        .await?
    {
        return state
            .account(id)
            .await?
            .ok_or_else(|| Prepare::Refused("The account of this identity was deleted.".into()));
    }
    let email = identity.email.as_deref().ok_or_else(|| {
        Prepare::Refused("The sign-in service sent no e-mail address (claim email).".into())
    })?;
    if identity.email_verified == Some(false) {
        return Err(Prepare::Refused(
            "The sign-in service says the e-mail address is not verified.".into(),
        ));
    }
    let email = Email::parse(email)
        .map_err(|e| Prepare::Refused(format!("The e-mail address is not usable: {e}")))?;
    let claims = &identity.claims;
    let account = match state.account_by_email(&email).await? {
        Some(account) => account,
        None => {
            let org = claims.org_name.as_deref().ok_or_else(|| {
                Prepare::Refused(
                    "The sign-in service sent no organisation name (claim org_name); Periscope needs it to prepare the account.".into(),
                )
            })?;
            let created = match state
                .create_account(&NewAccount::new(email.clone(), org), now)
                .await
            {
                Ok(account) => account,
                // Two first sign-ins at once: the other one created it.
                Err(StateError::EmailTaken(_)) => {
                    state.account_by_email(&email).await?.ok_or_else(|| {
                        Prepare::Refused("The account vanished while being prepared.".into())
                    })?
                }
                Err(e) => return Err(Prepare::State(e)),
            };
            if let (Some(version), Some(at)) = (&claims.terms_version, claims.terms_accepted_at) {
                let accepted_at = Timestamp::from_unix(at).ok_or_else(|| {
                    Prepare::Refused("The terms_accepted_at claim is not a valid time.".into())
                })?;
                let terms = TermsAcceptance {
                    version: version.clone(),
                    accepted_at,
                };
                state
                    .record_terms(
                        created.id,
                        &terms,
                        claims.marketing_consent.unwrap_or(false),
                    )
                    .await?;
            }
            tracing::info!(account = %created.id, "account prepared at first sign-in");
            state.account(created.id).await?.unwrap_or(created)
        }
    };
    state
        .link_identity(&inner.issuer, &identity.subject, account.id, now)
        .await?;
    Ok(account)
}

#[derive(serde::Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    consent: String,
}

fn csrf_refused(top: Option<&TopBar<'_>>) -> Response {
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

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

async fn sign_out(
    AxumState(web): AxumState<Web>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<CsrfForm>,
) -> Response {
    let inner = &web.inner;
    let signed = match require_session(&web, &headers, &uri).await {
        Ok(signed) => signed,
        Err(_) => return redirect("/"),
    };
    if !same(&form.csrf, &signed.session.csrf) {
        return csrf_refused(Some(&signed.top()));
    }
    let ended = match inner.state.end_web_session(&signed.session_id).await {
        Ok(ended) => ended,
        Err(e) => return internal("cannot end the session", &e),
    };
    tracing::info!(account = %signed.account.id, "signed out of the web application");
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

async fn signed_out() -> Response {
    message(
        StatusCode::OK,
        "You are signed out",
        &["Your Periscope session and your sign-in session have ended."],
        Some(("/signin", "Sign in")),
        None,
    )
}

async fn account(AxumState(web): AxumState<Web>, headers: HeaderMap, uri: Uri) -> Response {
    let signed = match require_session(&web, &headers, &uri).await {
        Ok(signed) => signed,
        Err(page) => return page,
    };
    account_page(&web, &signed, None).await
}

async fn account_page(web: &Web, signed: &Signed, notice: Option<&str>) -> Response {
    let orgs = match web.inner.state.organisations_of(signed.account.id).await {
        Ok(orgs) => orgs,
        Err(e) => return internal("cannot read the organisations", &e),
    };
    let account = &signed.account;
    let mut body = String::from("<main><h1>Account</h1>");
    if let Some(notice) = notice {
        body.push_str(&format!(
            "<p role=\"status\"><strong>{}</strong></p>",
            escape(notice)
        ));
    }
    body.push_str(&format!(
        "<p>E-mail: {}</p>",
        escape(account.email.as_str())
    ));
    for org in &orgs {
        body.push_str(&format!(
            "<p>Organisation: {} <span class=\"note\">({})</span></p>",
            escape(&org.name),
            if org.verified {
                "verified"
            } else {
                "as typed at registration, not verified"
            }
        ));
    }
    if let Some(terms) = &account.terms {
        body.push_str(&format!(
            "<p>Terms accepted: version {} on {}</p>",
            escape(&terms.version),
            escape(&terms.accepted_at.to_string())
        ));
    }
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
    body.push_str(&format!(
        "<h2>Marketing e-mail</h2><p>{state_text} Changing this never affects your access.</p>\
         <form method=\"post\" action=\"/account/marketing\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"consent\" value=\"{value}\">\
         <button class=\"button\" type=\"submit\">{button}</button></form></main>",
        csrf = escape(&signed.session.csrf),
    ));
    page(StatusCode::OK, "Account", Some(&signed.top()), &body)
}

async fn marketing(
    AxumState(web): AxumState<Web>,
    headers: HeaderMap,
    uri: Uri,
    Form(form): Form<CsrfForm>,
) -> Response {
    let mut signed = match require_session(&web, &headers, &uri).await {
        Ok(signed) => signed,
        Err(page) => return page,
    };
    if !same(&form.csrf, &signed.session.csrf) {
        return csrf_refused(Some(&signed.top()));
    }
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
    tracing::info!(account = %signed.account.id, consent, "marketing consent changed");
    signed.account.marketing_consent = consent;
    let notice = if consent {
        "Consent to marketing e-mail recorded."
    } else {
        "Consent to marketing e-mail withdrawn. Your access is unchanged."
    };
    account_page(&web, &signed, Some(notice)).await
}

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
        assert_eq!(cookie_value(&h, LOGIN_COOKIE), None);
    }
}
