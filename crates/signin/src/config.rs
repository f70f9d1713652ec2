//! The sign-in service's configuration: [`Config`] as the embedding program fills it (from its
//! file, environment and flags), and its validation into the settings the routes use. Every
//! refusal names the key as the configuration file spells it (`signin.…`).

use std::collections::HashMap;
use std::path::PathBuf;

use url::Url;

use crate::error::SetupError;

/// The terms version recorded when no other is configured (a dated string, DECISIONS.md).
pub const DEFAULT_TERMS_VERSION: &str = "2026-11-01";

/// The default of [`Config::database_acquire_timeout_ms`].
pub const DEFAULT_ACQUIRE_TIMEOUT_MS: u64 = 2_000;

/// Most milliseconds [`Config::database_acquire_timeout_ms`] may be (a minute: longer would
/// hide an outage again).
const MAX_ACQUIRE_TIMEOUT_MS: u64 = 60_000;

/// Everything the sign-in service needs to start. [`Config::new`] fills the defaults.
#[derive(Clone)]
pub struct Config {
    /// `signin.issuer`: the provider's issuer URL, which is also its base URL — every endpoint
    /// lives under it and the router is mounted at its path (e.g. `http://127.0.0.1:8080/auth`
    /// → mounted at `/auth`). `http` or `https`, no query, fragment or trailing slash. With
    /// `https` the cookies are `Secure`.
    pub issuer: String,
    /// `signin.database`: a `postgres://` URL (the state database's may be shared: every table
    /// is prefixed `signin_`), a `sqlite:` URL, or a SQLite file path (created if missing).
    pub database: String,
    /// `signin.database_acquire_timeout_ms`: how long a request waits for a database
    /// connection before it answers 503 (default 2000 ms). Bounded so that an outage (the
    /// PostgreSQL server down) is reported at once; recovery is automatic.
    pub database_acquire_timeout_ms: u64,
    /// `signin.clients`: the relying parties allowed to sign users in.
    pub clients: Vec<ClientConfig>,
    /// `signin.smtp_host` / `signin.outbox`: where registration e-mail goes.
    pub mail: MailConfig,
    /// `signin.mail_from`: the sender of registration e-mail (`Name <address>` or an address).
    pub mail_from: String,
    /// `signin.terms_version`: the terms version recorded at registration and shown on the terms
    /// page.
    pub terms_version: String,
    /// `signin.link_lifetime_secs`: how long a registration link works (default 24 hours).
    pub link_lifetime_secs: i64,
    /// `signin.session_idle_secs`: the provider session ends after this much inactivity
    /// (default 30 minutes).
    pub session_idle_secs: i64,
    /// `signin.session_max_secs`: the provider session ends this long after sign-in at the
    /// latest (default 12 hours).
    pub session_max_secs: i64,
    /// `signin.code_lifetime_secs`: how long an authorization code can be redeemed (default 60 s).
    pub code_lifetime_secs: i64,
    /// `signin.token_lifetime_secs`: lifetime of ID tokens and access tokens (default 10 min).
    pub token_lifetime_secs: i64,
    /// `signin.attempts_per_address`: failed sign-ins allowed per account (e-mail address) per
    /// window (default 5).
    pub attempts_per_address: u32,
    /// `signin.attempts_per_client`: failed sign-ins allowed per client address per window
    /// (default 20). Successful sign-ins are never counted.
    pub attempts_per_client: u32,
    /// `signin.attempt_window_secs`: the rate-limit window (default 15 minutes).
    pub attempt_window_secs: i64,
    /// `signin.client_ip_header`: a header set by a trusted reverse proxy whose last
    /// comma-separated entry is the client address (e.g. `x-forwarded-for`). Unset: the peer
    /// address of the connection — behind a proxy that is the proxy's, so every user shares
    /// one client address's failure limit.
    pub client_ip_header: Option<String>,
    /// `signin.application_url`: where "Continue" points after sign-in or confirmation when no
    /// relying party asked (e.g. the Periscope application).
    pub application_url: Option<String>,
    /// `signin.signing_key_pem`: an RSA private key (PKCS#8 PEM, ≥ 2048 bits) to sign ID tokens
    /// with. Unset: one is generated on first start and kept in the database.
    pub signing_key_pem: Option<String>,
    /// Whether this is the demo (`periscope serve --demo`): every page carries the notice that
    /// the data is synthetic (`periscope_ui::DEMO_NOTICE`).
    pub demo: bool,
}

/// One relying party.
#[derive(Clone)]
pub struct ClientConfig {
    /// `client_id`.
    pub client_id: String,
    /// `client_secret` (at least 16 characters), presented with `client_secret_basic` or
    /// `client_secret_post`.
    pub client_secret: String,
    /// The redirect URIs, matched exactly (absolute `http`/`https`, no fragment).
    pub redirect_uris: Vec<String>,
    /// The `post_logout_redirect_uri` values allowed, matched exactly.
    pub post_logout_redirect_uris: Vec<String>,
}

/// Where registration e-mail goes.
#[derive(Clone, Debug)]
pub enum MailConfig {
    /// Written as `.eml` files into this directory, and the link to the log: for demos and
    /// development without a mail server.
    Outbox {
        /// `signin.outbox`: the directory (created if missing).
        dir: PathBuf,
    },
    /// Sent over SMTP to a relay.
    Smtp {
        /// `signin.smtp_host`.
        host: String,
        /// `signin.smtp_port` (default 25).
        port: u16,
        /// `signin.smtp_timeout_secs` (default 10).
        timeout_secs: u64,
        /// `signin.smtp_tls`: how the connection is protected.
        tls: SmtpTls,
        /// `signin.smtp_username` with the password from the environment or a file: SMTP AUTH
        /// (PLAIN or LOGIN, whichever the relay offers first); `None` sends without logging in.
        credentials: Option<SmtpCredentials>,
        /// `signin.smtp_ca_file`: PEM certificates trusted besides the platform's roots (a
        /// private CA).
        ca_file: Option<PathBuf>,
    },
}

/// How the SMTP connection is protected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SmtpTls {
    /// Plain text throughout (`none`): a relay on loopback or a trusted network.
    None,
    /// STARTTLS when the relay offers it, plain text when it does not (`opportunistic`, the
    /// default). A certificate that does not verify is still an error.
    #[default]
    Opportunistic,
    /// STARTTLS, refusing a relay that does not offer it (`starttls`; port 587 usually).
    Starttls,
    /// TLS from the first byte (`tls`, "SMTPS"; port 465 usually).
    Implicit,
}

impl SmtpTls {
    /// The configuration word for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            SmtpTls::None => "none",
            SmtpTls::Opportunistic => "opportunistic",
            SmtpTls::Starttls => "starttls",
            SmtpTls::Implicit => "tls",
        }
    }
}

impl std::str::FromStr for SmtpTls {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "none" => SmtpTls::None,
            "opportunistic" => SmtpTls::Opportunistic,
            "starttls" => SmtpTls::Starttls,
            "tls" => SmtpTls::Implicit,
            other => {
                return Err(format!(
                    "{other:?} is not one of none, opportunistic, starttls, tls"
                ));
            }
        })
    }
}

/// The login for SMTP AUTH. The password never comes from the configuration file: the caller
/// reads it from the environment or a file.
#[derive(Clone)]
pub struct SmtpCredentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl std::fmt::Debug for SmtpCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpCredentials")
            .field("username", &self.username)
            .field("password", &"(hidden)")
            .finish()
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("issuer", &self.issuer)
            .field("database", &crate::store::printable_target(&self.database))
            .field("clients", &self.clients)
            .field("mail", &self.mail)
            .field("terms_version", &self.terms_version)
            .field(
                "signing_key_pem",
                &self.signing_key_pem.as_ref().map(|_| "(set)"),
            )
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &"(hidden)")
            .field("redirect_uris", &self.redirect_uris)
            .field("post_logout_redirect_uris", &self.post_logout_redirect_uris)
            .finish()
    }
}

impl Config {
    /// A configuration with every default: no clients yet, 24 h links, 30 min idle sessions.
    pub fn new(issuer: impl Into<String>, database: impl Into<String>, mail: MailConfig) -> Self {
        Self {
            issuer: issuer.into(),
            database: database.into(),
            database_acquire_timeout_ms: DEFAULT_ACQUIRE_TIMEOUT_MS,
            clients: Vec::new(),
            mail,
            mail_from: "Periscope <no-reply@localhost>".to_owned(),
            terms_version: DEFAULT_TERMS_VERSION.to_owned(),
            link_lifetime_secs: 24 * 3600,
            session_idle_secs: 30 * 60,
            session_max_secs: 12 * 3600,
            code_lifetime_secs: 60,
            token_lifetime_secs: 600,
            attempts_per_address: 5,
            attempts_per_client: 20,
            attempt_window_secs: 15 * 60,
            client_ip_header: None,
            application_url: None,
            signing_key_pem: None,
            demo: false,
        }
    }

    /// Adds a relying party.
    pub fn with_client(mut self, client: ClientConfig) -> Self {
        self.clients.push(client);
        self
    }
}

/// The validated configuration the routes read.
#[derive(Debug)]
pub(crate) struct Settings {
    /// The issuer exactly as configured (no trailing slash).
    pub issuer: String,
    /// The path the router is mounted at: the issuer's path, `""` at the root.
    pub mount: String,
    /// Whether cookies carry `Secure`.
    pub secure: bool,
    /// How long a request waits for a database connection.
    pub acquire_timeout: std::time::Duration,
    pub clients: HashMap<String, ClientConfig>,
    pub mail_from: lettre::message::Mailbox,
    pub terms_version: String,
    pub link_lifetime: i64,
    pub session_idle: i64,
    pub session_max: i64,
    pub code_lifetime: i64,
    pub token_lifetime: i64,
    pub client_ip_header: Option<axum::http::HeaderName>,
    pub application_url: Option<String>,
    /// The demo notice on every page.
    pub demo: bool,
}

fn bad(key: impl Into<String>, reason: impl Into<String>) -> SetupError {
    SetupError::Config {
        key: key.into(),
        reason: reason.into(),
    }
}

fn positive(key: &str, value: i64) -> Result<i64, SetupError> {
    if value > 0 {
        Ok(value)
    } else {
        Err(bad(
            key,
            format!("must be a positive number of seconds, not {value}"),
        ))
    }
}

/// An absolute `http`/`https` URL without fragment, or why not.
fn absolute_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("is not an absolute URL ({e}): {text:?}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("must be an http or https URL: {text:?}"));
    }
    if url.fragment().is_some() {
        return Err(format!("must not have a fragment: {text:?}"));
    }
    if url.host_str().is_none() {
        return Err(format!("must name a host: {text:?}"));
    }
    Ok(url)
}

/// Whether `version` starts with a `YYYY-MM-DD` date (DECISIONS.md: terms versions are dated).
fn is_dated(version: &str) -> bool {
    let b = version.as_bytes();
    b.len() >= 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && (*b"01"..=*b"12").contains(&[b[5], b[6]])
        && (*b"01"..=*b"31").contains(&[b[8], b[9]])
}

impl Config {
    pub(crate) fn validate(&self) -> Result<Settings, SetupError> {
        let issuer = absolute_url(&self.issuer).map_err(|r| bad("signin.issuer", r))?;
        if issuer.query().is_some() || self.issuer.ends_with('/') {
            return Err(bad(
                "signin.issuer",
                format!(
                    "must have no query and no trailing slash (e.g. http://127.0.0.1:8080/auth): {:?}",
                    self.issuer
                ),
            ));
        }
        let mount = issuer.path().trim_end_matches('/').to_owned();
        if self.database.trim().is_empty() {
            return Err(bad(
                "signin.database",
                "must name a database URL or a SQLite file",
            ));
        }
        if !(1..=MAX_ACQUIRE_TIMEOUT_MS).contains(&self.database_acquire_timeout_ms) {
            return Err(bad(
                "signin.database_acquire_timeout_ms",
                format!(
                    "must be from 1 to {MAX_ACQUIRE_TIMEOUT_MS} milliseconds, not {}",
                    self.database_acquire_timeout_ms
                ),
            ));
        }
        let mut clients = HashMap::new();
        for (i, client) in self.clients.iter().enumerate() {
            let key = |field: &str| format!("signin.clients[{i}].{field}");
            if client.client_id.is_empty()
                || !client
                    .client_id
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b':')
            {
                return Err(bad(
                    key("client_id"),
                    "must be printable ASCII without spaces or ':'",
                ));
            }
            if client.client_secret.chars().count() < 16 {
                return Err(bad(
                    key("client_secret"),
                    "must have at least 16 characters",
                ));
            }
            if client.redirect_uris.is_empty() {
                return Err(bad(key("redirect_uris"), "must list at least one URI"));
            }
            for (j, uri) in client.redirect_uris.iter().enumerate() {
                absolute_url(uri).map_err(|r| bad(format!("{}[{j}]", key("redirect_uris")), r))?;
            }
            for (j, uri) in client.post_logout_redirect_uris.iter().enumerate() {
                absolute_url(uri)
                    .map_err(|r| bad(format!("{}[{j}]", key("post_logout_redirect_uris")), r))?;
            }
            if clients
                .insert(client.client_id.clone(), client.clone())
                .is_some()
            {
                return Err(bad(
                    key("client_id"),
                    format!("{:?} is configured twice", client.client_id),
                ));
            }
        }
        let mail_from = self.mail_from.parse().map_err(|e| {
            bad(
                "signin.mail_from",
                format!("is not a mailbox like `Periscope <no-reply@example.com>` ({e})"),
            )
        })?;
        if let MailConfig::Smtp {
            host,
            port,
            tls,
            credentials,
            ..
        } = &self.mail
        {
            if host.is_empty() {
                return Err(bad("signin.smtp_host", "must name the SMTP relay"));
            }
            if *port == 0 {
                return Err(bad("signin.smtp_port", "must be a port from 1 to 65535"));
            }
            if let Some(credentials) = credentials {
                if credentials.username.is_empty() || credentials.password.is_empty() {
                    return Err(bad(
                        "signin.smtp_username",
                        "needs both a user name and a password",
                    ));
                }
                // A login over a connection that may be plain text gives the password away to
                // anyone who can strip the STARTTLS offer.
                if !matches!(tls, SmtpTls::Starttls | SmtpTls::Implicit) {
                    return Err(bad(
                        "signin.smtp_tls",
                        format!(
                            "is {:?}, but a login (signin.smtp_username) needs starttls or tls so the password is never sent in plain text",
                            tls.as_str()
                        ),
                    ));
                }
            }
        }
        let terms_version = self.terms_version.trim();
        if !is_dated(terms_version) {
            return Err(bad(
                "signin.terms_version",
                format!(
                    "must be a dated string starting YYYY-MM-DD (e.g. 2026-11-01), not {terms_version:?}"
                ),
            ));
        }
        if self.attempts_per_address == 0 {
            return Err(bad("signin.attempts_per_address", "must be at least 1"));
        }
        if self.attempts_per_client == 0 {
            return Err(bad("signin.attempts_per_client", "must be at least 1"));
        }
        positive("signin.attempt_window_secs", self.attempt_window_secs)?;
        let client_ip_header = match &self.client_ip_header {
            None => None,
            Some(name) => Some(name.parse().map_err(|_| {
                bad(
                    "signin.client_ip_header",
                    format!("is not a header name: {name:?}"),
                )
            })?),
        };
        if let Some(url) = &self.application_url {
            absolute_url(url).map_err(|r| bad("signin.application_url", r))?;
        }
        Ok(Settings {
            secure: issuer.scheme() == "https",
            issuer: self.issuer.clone(),
            mount,
            acquire_timeout: std::time::Duration::from_millis(self.database_acquire_timeout_ms),
            clients,
            mail_from,
            terms_version: terms_version.to_owned(),
            link_lifetime: positive("signin.link_lifetime_secs", self.link_lifetime_secs)?,
            session_idle: positive("signin.session_idle_secs", self.session_idle_secs)?,
            session_max: positive("signin.session_max_secs", self.session_max_secs)?,
            code_lifetime: positive("signin.code_lifetime_secs", self.code_lifetime_secs)?,
            token_lifetime: positive("signin.token_lifetime_secs", self.token_lifetime_secs)?,
            client_ip_header,
            application_url: self.application_url.clone(),
            demo: self.demo,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn base() -> Config {
        Config::new(
            "http://127.0.0.1:8080/auth",
            "/tmp/x.db",
            MailConfig::Outbox {
                dir: "/tmp/outbox".into(),
            },
        )
        .with_client(ClientConfig {
            client_id: "web".into(),
            client_secret: "0123456789abcdef".into(),
            redirect_uris: vec!["http://127.0.0.1:8080/callback".into()],
            post_logout_redirect_uris: vec![],
        })
    }

    fn refused(config: Config, key: &str) {
        match config.validate() {
            Err(SetupError::Config { key: got, .. }) => assert_eq!(got, key),
            other => panic!("expected a refusal of {key}, got {other:?}"),
        }
    }

    #[test]
    fn defaults_validate_and_the_mount_is_the_issuer_path() {
        let s = base().validate().unwrap();
        assert_eq!(s.mount, "/auth");
        assert!(!s.secure);
        let mut root = base();
        root.issuer = "https://id.example.com".into();
        let s = root.validate().unwrap();
        assert_eq!(s.mount, "");
        assert!(s.secure);
    }

    #[test]
    fn refusals_name_the_key() {
        let mut c = base();
        c.issuer = "http://127.0.0.1:8080/auth/".into();
        refused(c, "signin.issuer");
        let mut c = base();
        c.issuer = "ftp://x/auth".into();
        refused(c, "signin.issuer");
        let mut c = base();
        c.clients[0].client_secret = "short".into();
        refused(c, "signin.clients[0].client_secret");
        let mut c = base();
        c.clients[0].redirect_uris.push("http://x/cb#frag".into());
        refused(c, "signin.clients[0].redirect_uris[1]");
        let c = base().with_client(base().clients[0].clone());
        refused(c, "signin.clients[1].client_id");
        let mut c = base();
        c.link_lifetime_secs = 0;
        refused(c, "signin.link_lifetime_secs");
        for timeout in [0, 60_001] {
            let mut c = base();
            c.database_acquire_timeout_ms = timeout;
            refused(c, "signin.database_acquire_timeout_ms");
        }
        assert_eq!(
            base().validate().unwrap().acquire_timeout,
            std::time::Duration::from_secs(2)
        );
        let mut c = base();
        c.mail_from = "not a mailbox".into();
        refused(c, "signin.mail_from");
        for bad_version in ["", "v1", "2026-13-01", "26-11-01"] {
            let mut c = base();
            c.terms_version = bad_version.into();
            refused(c, "signin.terms_version");
        }
        let mut c = base();
        c.terms_version = "2027-01-15 (rev. 2)".into();
        c.validate().unwrap();
    }

    fn smtp(tls: SmtpTls, username: &str, password: &str) -> Config {
        let mut c = base();
        c.mail = MailConfig::Smtp {
            host: "relay.example".into(),
            port: 587,
            timeout_secs: 10,
            tls,
            credentials: Some(SmtpCredentials {
                username: username.into(),
                password: password.into(),
            }),
            ca_file: None,
        };
        c
    }

    #[test]
    fn a_relay_login_needs_tls_and_both_halves() {
        for tls in [SmtpTls::None, SmtpTls::Opportunistic] {
            refused(smtp(tls, "user", "secret-password"), "signin.smtp_tls");
        }
        refused(
            smtp(SmtpTls::Starttls, "", "secret-password"),
            "signin.smtp_username",
        );
        refused(smtp(SmtpTls::Implicit, "user", ""), "signin.smtp_username");
        for tls in [SmtpTls::Starttls, SmtpTls::Implicit] {
            smtp(tls, "user", "secret-password").validate().unwrap();
        }
        let shown = format!("{:?}", smtp(SmtpTls::Starttls, "user", "secret-password"));
        assert!(!shown.contains("secret-password"), "{shown}");
        for word in ["none", "opportunistic", "starttls", "tls"] {
            assert_eq!(word.parse::<SmtpTls>().unwrap().as_str(), word);
        }
        assert!("ssl".parse::<SmtpTls>().is_err());
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut c = base();
        c.signing_key_pem = Some("-----BEGIN PRIVATE KEY-----".into());
        let shown = format!("{c:?}");
        assert!(!shown.contains("0123456789abcdef"), "{shown}");
        assert!(!shown.contains("BEGIN"), "{shown}");
    }
}
