//! The server side of Periscope's browser application: sign-in through an OpenID Connect
//! provider (Periscope's own sign-in service or any other), browser sessions, the account
//! page, and the server-rendered pages around them.
//!
//! [`Web::new`] takes a [`WebConfig`] (the application's public URL, the provider's issuer, the
//! client id and secret, whether this is the demo), the [`State`] database, a clock and the
//! search service, and builds the application whole; [`Web::router`] is an axum [`Router`] for
//! the application's root. Handlers open with the extractors of `extract` (the session of a
//! page or of a fragment, the CSRF-checked form, the search caller, typed query parameters). What it does (reference: `docs/web.md`):
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
//! - `GET /?q=…` is the search bar (spec §10): the entry is recognised, run through the same
//!   [`SearchService`] as the API with the signed-in account as caller (one shared allowance,
//!   one charged search per new results page of 25 hosts), and answered with the prefixed form that
//!   ran and the results: the host view for an exact IP, a host list of 25 otherwise with the
//!   Selected host panel (`/app/host`, free), pages already shown kept in the state database
//!   (`web_pages`) so that going back costs nothing on any instance, the total (`/app/count`), Add filter (`/filter`) and Suggested Filters
//!   (`/app/facets`); `/host?ip=…` is the free host view as a page.
//!   [`Web::new`] gives the application its service; without one the page says the search is
//!   temporarily unavailable.
//! - `/?q=…&view=globe` is the Globe view of a search (spec §12, not for domain searches): a
//!   canvas globe drawn by `assets/globe.js` with the npm packages `build.rs` builds in, fed
//!   by `GET /app/exposure` (the API's exposure answer, free of charge) level by level as the
//!   user zooms in; it turns to where the hosts are, and a cluster leads to its hosts.
//! - Counts read the same on every page and in every script: grouped ("19,349"), the noun
//!   agreeing ("1 host"), a country named beside its code (`words`).
//! - The top bar's account menu (spec §8) shows a ring of the searches left today out of the
//!   daily total (read free of charge, after the page's own search) and the reset time, which
//!   `assets/account.js` shows in the viewer's time zone; its links lead to the public pages
//!   `/terms` (the sign-in service's), `/quickstart` (a `curl` command per API route on the
//!   public URL) and `/release-notes` (`docs/release-notes.md`), shown with or without a
//!   session, and to `/report-a-problem` (stored for the administrator, no reply) and
//!   `/api-access` (create a key shown once, list, revoke after a confirmation step).
//! - Nothing a second instance behind a load balancer needs is kept in this process: sessions,
//!   sign-ins in flight, pages already shown and the create-key form's one-time tokens are all
//!   in the state database (`docs/state.md`, "Several servers").
//! - Every state-changing form carries the session's CSRF token; every page carries the
//!   preview banner of spec §5 and loads nothing from anywhere. With [`WebConfig::demo`]
//!   (`periscope serve --demo`) the layout adds the demo's "the data is synthetic" notice
//!   ([`DEMO_NOTICE`]) under it.

mod assets;
mod extract;
mod html;
mod oidc;
mod routes;
mod session;
mod tls;
mod words;

use std::sync::Arc;

use axum::Router;
use axum::http::HeaderValue;
use axum::routing::{get, post};
use periscope_model::Timestamp;
use periscope_model::clock::Clock;
use periscope_service::SearchService;
use periscope_state::{State, StateError};

use oidc::RelyingParty;
/// The demo's notice, which every page of a demo server carries ([`WebConfig::demo`]).
pub use periscope_ui::DEMO_NOTICE;

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
    /// Where this application sends its requests to the provider when that differs from the
    /// issuer's origin: `http://host:port`, replacing the issuer's scheme, host and port (its
    /// path stays). `periscope serve` sets it to its own listening address for the embedded
    /// provider, so the issuer may be a public `https` URL behind a proxy. `None`: the issuer.
    pub provider_url: Option<String>,
    /// PEM certificates trusted for an `https` provider besides the platform's roots
    /// (`web.ca_file`: a private CA).
    pub ca_file: Option<std::path::PathBuf>,
    /// The claim that carries the organisation (`web.organization_claim`, default `org_name`):
    /// a string, or an array whose first string is taken.
    pub organization_claim: String,
    /// The organisation of accounts whose ID token has no such claim
    /// (`web.default_organization`); `None`: such a first sign-in is refused.
    pub default_organization: Option<String>,
    /// The e-mail domains that may sign in (`web.allowed_email_domains`, lower case, exact
    /// match); empty: any.
    pub allowed_email_domains: Vec<String>,
    /// Whether this is the demo (`periscope serve --demo`): every page carries the notice that
    /// the data is synthetic ([`DEMO_NOTICE`]).
    pub demo: bool,
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
            provider_url: None,
            ca_file: None,
            organization_claim: "org_name".to_owned(),
            default_organization: None,
            allowed_email_domains: Vec::new(),
            demo: false,
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
    organization_claim: String,
    default_organization: Option<String>,
    allowed_email_domains: Vec<String>,
    public_url: String,
    secure: bool,
    idle_secs: i64,
    search: Option<SearchService>,
    demo: bool,
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
    /// Checks the settings and builds the application, whole: `search` is the service its
    /// search bar runs (the one the API runs, so both share the allowance; `None`: the page
    /// says search is temporarily unavailable). The provider is not contacted here: discovery
    /// runs at each sign-in, so the application starts while the provider is down (and says
    /// "Session service unavailable" until it is back).
    pub fn new(
        config: WebConfig,
        state: State,
        clock: Arc<dyn Clock>,
        search: Option<SearchService>,
    ) -> Result<Self, WebError> {
        let public = check_url("web.public_url", &config.public_url, false)?;
        let issuer = check_url("web.issuer", &config.issuer, true)?;
        let rewrite = match &config.provider_url {
            Some(internal) => {
                let url = check_url("web.provider_url", internal, false)?;
                Some((
                    issuer.origin().ascii_serialization(),
                    url.origin().ascii_serialization(),
                ))
            }
            None => None,
        };
        if config.client_id.is_empty() {
            return Err(config_error("web.client_id", "is empty"));
        }
        if config.client_secret.is_empty() {
            return Err(config_error("web.client_secret", "is empty"));
        }
        if config.organization_claim.trim().is_empty() {
            return Err(config_error("web.organization_claim", "is empty"));
        }
        if config
            .default_organization
            .as_deref()
            .is_some_and(|o| o.trim().is_empty())
        {
            return Err(config_error("web.default_organization", "is empty"));
        }
        let allowed_email_domains: Vec<String> = config
            .allowed_email_domains
            .iter()
            .map(|d| d.trim().trim_start_matches('@').to_ascii_lowercase())
            .collect();
        if let Some(bad) = allowed_email_domains
            .iter()
            .find(|d| d.is_empty() || d.contains(['@', ' ', '/']) || !d.contains('.'))
        {
            return Err(config_error(
                "web.allowed_email_domains",
                format!("holds {bad:?}, not a domain such as example.com"),
            ));
        }
        if config.session_idle_secs <= 0 {
            return Err(config_error("web.session_idle_secs", "must be positive"));
        }
        let tls = tls::client_config(config.ca_file.as_deref())?;
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(tls)
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
                    rewrite,
                },
                issuer: config.issuer,
                organization_claim: config.organization_claim,
                default_organization: config.default_organization,
                allowed_email_domains,
                public_url: config.public_url,
                secure: public.scheme() == "https",
                idle_secs: config.session_idle_secs,
                search,
                demo: config.demo,
            }),
        })
    }

    /// The application's routes, for the root of its public URL.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(routes::pages::home))
            .route("/assets/{name}", get(assets::asset))
            .route("/app/exposure", get(routes::globe::exposure))
            .route("/app/host", get(routes::search::host::panel))
            .route("/host", get(routes::search::host::page))
            .route("/app/count", get(routes::search::facets::count))
            .route("/app/facets", get(routes::search::facets::facets))
            .route("/filter", get(routes::search::filters::apply))
            .route("/signin", get(routes::signin::sign_in))
            .route(CALLBACK_PATH, get(routes::signin::callback))
            .route("/signout", post(routes::signout::sign_out))
            .route(SIGNED_OUT_PATH, get(routes::pages::signed_out))
            .route("/account", get(routes::account::account))
            .route("/account/marketing", post(routes::account::marketing))
            .route("/terms", get(routes::public::terms))
            .route("/quickstart", get(routes::public::quickstart))
            .route("/release-notes", get(routes::public::release_notes))
            .route(
                "/report-a-problem",
                get(routes::report::form).post(routes::report::submit),
            )
            .route("/api-access", get(routes::keys::page))
            .route("/api-access/keys", post(routes::keys::create))
            .route(
                "/api-access/keys/{id}/revoke",
                get(routes::keys::confirm).post(routes::keys::revoke),
            )
            .layer(axum::middleware::map_response_with_state(
                self.clone(),
                html::frame,
            ))
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
        self.clock.now()
    }

    fn cookie(&self, name: &str, value: &str, path: &str, max_age: Option<i64>) -> HeaderValue {
        periscope_ui::cookie::set_cookie(name, value, path, max_age, self.secure)
    }
}
