//! The central sign-in service of Periscope: a standard OpenID Connect provider with
//! registration by e-mailed link.
//!
//! [`SignIn::open`] takes a [`Config`], opens (and migrates) its own tables — prefixed
//! `signin_`, on SQLite or PostgreSQL, possibly in the state database — loads or creates the
//! signing and CSRF keys, and builds the mailer (SMTP or outbox). [`SignIn::router`] is an axum
//! [`Router`] to mount at the issuer's path ([`SignIn::mount_path`], e.g. `/auth`) inside
//! `periscope serve`; [`SignIn::standalone_router`] is the same already mounted, to run alone.
//! Serve either with `into_make_service_with_connect_info::<SocketAddr>()`: sign-in attempts
//! are limited per client address.
//!
//! What it offers (reference: `docs/signin.md`):
//! - discovery, JWKS, the authorization endpoint (code flow, PKCE S256 only, exact redirect
//!   URIs), the token endpoint (`client_secret_basic`/`client_secret_post`), RS256 ID tokens
//!   with `email`, `org_name` and `nonce`, userinfo, and RP-initiated logout;
//! - registration as spec §6 asks (e-mail and organisation, terms and marketing consent,
//!   disposable domains refused, single-use 24-hour link, Argon2id password chosen through the
//!   link), sign-in with per-address and per-client limits, its own session cookie;
//! - server-rendered pages (maud views beside their handlers) on the shared layout of
//!   `periscope-ui` — preview banner, Periscope top bar, one stylesheet — and CSRF protection
//!   on every form.
//!
//! Applications reach it only through OpenID Connect, so any provider can replace it.

mod config;
mod email;
mod error;
mod html;
mod jwt;
mod mail;
mod password;
mod ratelimit;
mod routes;
mod store;

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::Router;

pub use config::{
    ClientConfig, Config, DEFAULT_TERMS_VERSION, MailConfig, SmtpCredentials, SmtpTls,
};
pub use email::{EmailAddress, EmailProblem, is_disposable};
pub use error::{SetupError, StoreError};
pub use password::{MAX_CHARS as PASSWORD_MAX_CHARS, MIN_CHARS as PASSWORD_MIN_CHARS};

use config::Settings;
use jwt::Keys;
use mail::Mailer;
use periscope_model::clock::{Clock, SystemClock};
/// The workspace's one random-token module.
pub(crate) use periscope_model::random;
use periscope_ui::csrf::CsrfKey;
use ratelimit::Limiter;
use store::Store;

/// The running sign-in service: cheap to clone (clones share everything).
#[derive(Clone)]
pub struct SignIn {
    inner: Arc<Inner>,
}

/// Everything a request may need.
pub(crate) struct Inner {
    pub(crate) settings: Settings,
    pub(crate) store: Store,
    pub(crate) keys: Keys,
    pub(crate) csrf: CsrfKey,
    pub(crate) mailer: Box<dyn Mailer>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) limiter: Limiter,
    /// A hash verified when an address is unknown, so that answer takes as long as a wrong
    /// password.
    pub(crate) decoy_hash: String,
}

/// What the sign-in service recorded about an address (for administration and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountRecord {
    /// The address as stored (local part as typed, ASCII lower-case domain).
    pub email: String,
    /// The organisation name as typed at registration.
    pub org_name: String,
    /// The terms version accepted.
    pub terms_version: String,
    /// When the terms were accepted (seconds since the Unix epoch).
    pub terms_accepted_at: i64,
    /// Whether marketing e-mail was consented to (the terms tick covers it).
    pub marketing_consent: bool,
    /// When the registration was first made.
    pub created_at: i64,
    /// When the address was confirmed through its link; `None` while pending.
    pub confirmed_at: Option<i64>,
    /// The `sub` claim of the account.
    pub subject: String,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("issuer", &self.inner.settings.issuer)
            .finish_non_exhaustive()
    }
}

impl SignIn {
    /// Starts the service on the system clock: see [`SignIn::open_with_clock`].
    pub async fn open(config: Config) -> Result<Self, SetupError> {
        Self::open_with_clock(config, Arc::new(SystemClock)).await
    }

    /// Validates `config`, opens and migrates the database, loads (or creates, once, in the
    /// database) the signing and CSRF keys, and builds the mailer. Every expiry reads `clock`.
    /// Also starts a task that deletes dead codes, tokens, links and sessions hourly; it stops
    /// when the last clone of the service is dropped.
    pub async fn open_with_clock(
        config: Config,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, SetupError> {
        let settings = config.validate()?;
        let store = Store::open(&config.database, settings.acquire_timeout).await?;
        let now = clock.now().unix();
        let pem = match &config.signing_key_pem {
            Some(pem) => pem.clone(),
            None => match store.read_key("id_token_rsa").await? {
                Some(stored) => stored,
                None => {
                    // First start on this database: generating takes a moment, off the
                    // async threads; if another instance stored one meanwhile, theirs wins.
                    let fresh = tokio::task::spawn_blocking(jwt::generate_pem)
                        .await
                        .map_err(|e| SetupError::Key(e.to_string()))?;
                    store
                        .key_material("id_token_rsa", now, || fresh)
                        .await?
                        .map_err(SetupError::Key)?
                }
            },
        };
        let keys = Keys::from_pem(&pem).map_err(SetupError::Key)?;
        let csrf_hex = store
            .key_material("csrf", now, || {
                let mut key = [0u8; 32];
                random::fill(&mut key).map_err(|e| e.to_string())?;
                Ok(random::hex(&key))
            })
            .await?
            .map_err(SetupError::Key)?;
        let csrf = random::unhex(&csrf_hex)
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(CsrfKey::new)
            .ok_or_else(|| SetupError::Key("the stored CSRF key is not 32 bytes of hex".into()))?;
        let mailer = mail::from_config(&config.mail, settings.mail_from.clone())?;
        let decoy_hash = tokio::task::spawn_blocking(|| {
            let mut decoy = [0u8; 16];
            random::fill(&mut decoy).map_err(|e| e.to_string())?;
            password::hash(&random::hex(&decoy))
        })
        .await
        .map_err(|e| SetupError::Key(e.to_string()))?
        .map_err(SetupError::Key)?;
        let limiter = Limiter::new(
            config.attempt_window_secs,
            config.attempts_per_address,
            config.attempts_per_client,
        );
        let inner = Arc::new(Inner {
            settings,
            store,
            keys,
            csrf,
            mailer,
            clock,
            limiter,
            decoy_hash,
        });
        spawn_purger(Arc::downgrade(&inner));
        tracing::info!(
            signin.issuer = %inner.settings.issuer,
            signin.clients = inner.settings.clients.len(),
            "sign-in service ready"
        );
        Ok(Self { inner })
    }

    /// The routes, relative to the issuer's path: mount them with
    /// `Router::nest(signin.mount_path(), signin.router())` (or `merge` when the path is empty).
    pub fn router(&self) -> Router {
        routes::router(self.inner.clone())
    }

    /// The routes mounted at the issuer's path, for running the service alone.
    pub fn standalone_router(&self) -> Router {
        let mount = self.mount_path();
        if mount.is_empty() {
            self.router()
        } else {
            Router::new().nest(mount, self.router())
        }
    }

    /// The path the router belongs at: the issuer's path (`/auth`), or `""` for the root.
    pub fn mount_path(&self) -> &str {
        &self.inner.settings.mount
    }

    /// The issuer URL (also the discovery base: `{issuer}/.well-known/openid-configuration`).
    pub fn issuer(&self) -> &str {
        &self.inner.settings.issuer
    }

    /// What was recorded for the address `email` (any letter case), pending or confirmed.
    pub async fn account(&self, email: &str) -> Result<Option<AccountRecord>, StoreError> {
        let Ok(address) = EmailAddress::parse(email) else {
            return Ok(None);
        };
        let user = self.inner.store.user_by_email_key(address.key()).await?;
        Ok(user.map(|u| AccountRecord {
            email: u.email,
            org_name: u.org_name,
            terms_version: u.terms_version,
            terms_accepted_at: u.terms_accepted_at,
            marketing_consent: u.marketing_consent,
            created_at: u.created_at,
            confirmed_at: u.confirmed_at,
            subject: u.subject,
        }))
    }

    /// Deletes dead codes, tokens, links and sessions now (also done hourly); returns how many
    /// rows went.
    pub async fn purge(&self) -> Result<u64, StoreError> {
        let inner = &self.inner;
        inner
            .store
            .purge(inner.clock.now().unix(), inner.settings.session_idle)
            .await
    }

    /// Closes the database pool.
    pub async fn close(&self) {
        self.inner.store.close().await;
    }
}

/// Purges hourly while the service lives.
fn spawn_purger(inner: Weak<Inner>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(3600));
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(inner) = inner.upgrade() else { return };
            let now = inner.clock.now().unix();
            if let Err(e) = inner.store.purge(now, inner.settings.session_idle).await {
                tracing::warn!(error = %e, "sign-in purge failed; retrying in an hour");
            }
        }
    });
}
