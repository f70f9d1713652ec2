//! The configuration shared by `serve`, `ingest` and `admin`: built-in defaults, overridden by
//! an optional TOML file, overridden by `PERISCOPE_*` environment variables, overridden by
//! command-line flags — and checked into the typed [`Config`] before any command runs, so a bad
//! setting stops start-up with a message naming the key, where the value came from and what
//! was expected.
//!
//! Every setting is declared once, below, with the `settings!` macro (`declare`): its doc, its
//! field and type, its default, its expectation and its parser. The declaration generates the
//! struct, its `Default` and the key table the file, the environment variables (`PERISCOPE_` +
//! section + name in upper case joined with `_`) and the flags are applied through; the docs
//! test checks `docs/configuration.md` against that table. The file is read with `toml`'s
//! spanned document parser (`source`), so an unknown key or a bad value is reported with its
//! line. [`Config::load`] takes the environment as a lookup function so tests pass a map
//! instead of changing the process environment. User reference: `docs/configuration.md`.

#[macro_use]
mod declare;
mod source;
#[cfg(test)]
mod tests;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use periscope_enrich::EnrichConfig;
use periscope_index::IndexConfig;
use periscope_state::{DEFAULT_CURSOR_LIFETIME_SECS, DailyLimit};

use declare::{
    COUNT, EnvSecret, Key, MILLIS, SECS, Section, dns_server, keys, list, millis, path, secs,
    some_path, some_string, string, text, whole,
};
use source::Raw;
pub use source::{ConfigError, Origin};

/// The prefix of every environment variable that sets a key.
pub const ENV_PREFIX: &str = "PERISCOPE_";
/// The environment variable naming the configuration file, when `--config` is not given.
pub const CONFIG_FILE_ENV: &str = "PERISCOPE_CONFIG";
/// The variable holding the SMTP relay's password (no key of the file holds it).
pub const SMTP_PASSWORD_ENV: &str = "PERISCOPE_SIGNIN_SMTP_PASSWORD";
/// The ClickHouse index password's environment variable (never a key of the file).
pub const INDEX_PASSWORD_ENV: &str = "PERISCOPE_INDEX_PASSWORD";

/// `[index] memory_limit_mb` when unset: what one ClickHouse statement may use on a server.
pub const DEFAULT_INDEX_MEMORY_LIMIT_MB: u64 = 4096;
/// The port a DNS server listens on when `dns.servers` names only an address.
const DNS_PORT: u16 = 53;
/// What a CA file key expects.
const CA_FILE: &str = "the path of a PEM file of CA certificates";

settings! {
    /// Every setting of Periscope, validated.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Config {
        /// `listen`: the address `serve` listens on (default `127.0.0.1:8080`).
        listen: SocketAddr {
            flags: ["--listen"],
            default: SocketAddr::from(([127, 0, 0, 1], 8080)),
            expect: "an IP address and port such as 127.0.0.1:8080 or [::1]:8080",
            parse: text,
        },
        /// `data`: the data directory — scan store, index file and, without `database_url`,
        /// the SQLite state database `state.db` (default `./data`, as `ingest` has always used).
        data: PathBuf {
            flags: ["--data"],
            default: PathBuf::from("./data"),
            expect: "a directory path (not empty)",
            parse: path,
        },
        /// `database_url`: a PostgreSQL state database (`postgres://…`); `None` (the default)
        /// means the SQLite file `DATA/state.db`.
        database_url: Option<String> {
            flags: ["--database-url"],
            default: None,
            expect: "a PostgreSQL URL such as postgres://periscope@db.internal/periscope",
            parse: some_string,
        },
        /// `database_acquire_timeout_ms`: how long a request waits for a connection to a
        /// PostgreSQL state database before it answers 503 (default 2 s).
        database_acquire_timeout: Duration {
            key: "database_acquire_timeout_ms",
            default: periscope_state::DEFAULT_ACQUIRE_TIMEOUT,
            expect: MILLIS,
            parse: millis,
        },
        /// `log_format`: how log lines are written (default [`LogFormat::Text`]).
        log_format: LogFormat {
            default: LogFormat::Text,
            expect: "\"text\" or \"json\"",
            parse: |raw| match raw.string()?.trim() {
                "text" => Some(LogFormat::Text),
                "json" => Some(LogFormat::Json),
                _ => None,
            },
        },
        /// `public_url`: where browsers reach the server, `http(s)://host[:port]`; `None` (the
        /// default) means `http://` + the actual listening address. The embedded sign-in
        /// service's issuer is this + `/auth`.
        public_url: Option<String> {
            default: None,
            expect: "an http(s) URL without path or trailing slash, such as \
                     https://periscope.example.com",
            parse: |raw| {
                let url = string(raw)?;
                let rest = url
                    .strip_prefix("http://")
                    .or_else(|| url.strip_prefix("https://"))?;
                let bad = rest.is_empty() || rest.contains(['/', '?', '#', ' ']);
                (!bad).then_some(Some(url))
            },
        },
    }
    sections {
        /// `[limits]`: searches, rates, cursors and retention.
        limits: Limits,
        /// `[dns]`: how domain queries are resolved.
        dns: Dns,
        /// `[http]`: connection limits and timeouts of the HTTP server.
        http: Http,
        /// `[signin]`: the embedded sign-in service.
        signin: SignInSettings,
        /// `[web]`: the browser application's OpenID Connect provider.
        web: WebSettings,
        /// `[enrich]`: the GeoIP and ASN files `ingest` and `convert` enrich scanner output
        /// from (`docs/enrichment.md`); all unset by default, and then nothing is enriched.
        enrich: EnrichConfig,
        /// `[index]`: where the scan index lives; unset (the default), the embedded index in
        /// the data directory.
        index: IndexSettings,
    }
}

settings! {
    /// The `[limits]` section.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Limits in [limits] {
        /// `daily_searches`: the daily search limit given to new accounts (default 20, or
        /// `"unlimited"`).
        daily_searches: DailyLimit {
            default: DailyLimit::DEFAULT,
            expect: "a whole number from 0 to 4294967295, or \"unlimited\"",
            parse: |raw| match raw.string().map(str::trim) {
                Some("unlimited") => Some(DailyLimit::Unlimited),
                _ => whole(raw, 0).map(DailyLimit::Limited),
            },
        },
        /// `searches_per_account`: searches one account may run at once (default 2).
        searches_per_account: u32 { default: 2, expect: COUNT, parse: |raw| whole(raw, 1) },
        /// `searches_total`: searches the whole service runs at once (default 32).
        searches_total: u32 { default: 32, expect: COUNT, parse: |raw| whole(raw, 1) },
        /// `search_timeout_ms`: the time budget of one search (default 10 s).
        search_timeout: Duration {
            key: "search_timeout_ms",
            default: Duration::from_secs(10),
            expect: MILLIS,
            parse: millis,
        },
        /// `cursor_lifetime_secs`: how long a search cursor stays usable (default 10 minutes).
        cursor_lifetime: Duration {
            key: "cursor_lifetime_secs",
            default: Duration::from_secs(DEFAULT_CURSOR_LIFETIME_SECS.unsigned_abs()),
            expect: SECS,
            parse: secs,
        },
        /// `rate_per_sec`: requests per second one key may make to the free endpoints
        /// (default 10).
        rate_per_sec: u32 { default: 10, expect: COUNT, parse: |raw| whole(raw, 1) },
        /// `rate_burst`: the burst allowed above that rate (default 20).
        rate_burst: u32 { default: 20, expect: COUNT, parse: |raw| whole(raw, 1) },
        /// `max_search_hosts`: organization alone or country alone is declined by search
        /// (`query_too_broad`) above this many hosts (default 10,000).
        max_search_hosts: u64 {
            default: IndexConfig::default().max_host_only_results,
            expect: "a whole number from 1 to 18446744073709551615",
            parse: |raw| whole(raw, 1),
        },
        /// `retention_days`: observations older than this stop being current (default 30
        /// days).
        retention_days: u32 {
            default: u32::try_from(IndexConfig::default().retention_secs / 86_400).unwrap_or(30),
            expect: "a whole number of days from 1 to 36500",
            parse: |raw| whole::<u32>(raw, 1).filter(|days| *days <= 36_500),
        },
    }
}

settings! {
    /// The `[dns]` section.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Dns in [dns] {
        /// `servers`: the resolvers to ask; empty (the default) means the system's
        /// (`/etc/resolv.conf`).
        servers: Vec<SocketAddr> {
            default: Vec::new(),
            expect: "a list of IP addresses with optional ports, such as [\"192.0.2.53\", \
                     \"[2001:db8::53]:5353\"] (comma-separated in a variable or flag)",
            parse: |raw| list(raw, dns_server),
        },
        /// `timeout_ms`: how long one resolution may take (default 2 s).
        timeout: Duration {
            key: "timeout_ms",
            default: Duration::from_secs(2),
            expect: MILLIS,
            parse: millis,
        },
    }
}

settings! {
    /// The `[http]` section: what a connection may hold and for how long.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Http in [http] {
        /// `header_timeout_ms`: a request's headers must arrive within this (default 10 s).
        header_timeout: Duration {
            key: "header_timeout_ms",
            default: Duration::from_secs(10),
            expect: MILLIS,
            parse: millis,
        },
        /// `idle_timeout_secs`: a kept-alive connection with no request is closed after this
        /// (default 60 s).
        idle_timeout: Duration {
            key: "idle_timeout_secs",
            default: Duration::from_secs(60),
            expect: SECS,
            parse: secs,
        },
        /// `body_timeout_ms`: a request's body must arrive within this (default 30 s).
        body_timeout: Duration {
            key: "body_timeout_ms",
            default: Duration::from_secs(30),
            expect: MILLIS,
            parse: millis,
        },
        /// `max_connections`: connections open at once (default 10,000, and never more than
        /// the descriptor limit leaves room for).
        max_connections: u32 { default: 10_000, expect: COUNT, parse: |raw| whole(raw, 1) },
        /// `trusted_proxies`: reverse proxies whose `X-Forwarded-For` names the client
        /// (default none).
        trusted_proxies: Vec<periscope_api::forwarded::Cidr> {
            default: Vec::new(),
            expect: "a list of address blocks of reverse proxies, such as [\"127.0.0.1/32\", \
                     \"10.0.0.0/8\"] (comma-separated in a variable or flag)",
            parse: |raw| list(raw, |s| s.parse().ok()),
        },
    }
}

settings! {
    /// The `[signin]` section: the sign-in service `serve` embeds under `/auth`.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct SignInSettings in [signin] {
        /// `smtp_host`: an SMTP relay for the registration e-mail; `None` (the default) writes
        /// messages into `DATA/outbox` and the link into the log.
        smtp_host: Option<String> {
            default: None,
            expect: "a host name or IP address of an SMTP relay",
            parse: some_string,
        },
        /// `smtp_port`: the relay's port (default 25).
        smtp_port: Option<u16> {
            default: None,
            expect: "a port number from 1 to 65535",
            parse: |raw| whole(raw, 1).map(Some),
        },
        /// `smtp_tls`: how the relay connection is protected (default opportunistic
        /// STARTTLS).
        smtp_tls: periscope_signin::SmtpTls {
            default: periscope_signin::SmtpTls::default(),
            expect: "one of none, opportunistic, starttls, tls",
            parse: text,
        },
        /// `smtp_username`: the login for SMTP AUTH; its password comes from
        /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` or `smtp_password_file`, never from the file.
        smtp_username: Option<String> {
            default: None,
            expect: "the relay's user name (the password comes from \
                     PERISCOPE_SIGNIN_SMTP_PASSWORD or smtp_password_file)",
            parse: some_string,
        },
        /// `smtp_password_file`: a file holding the SMTP password (one line).
        smtp_password_file: Option<PathBuf> {
            default: None,
            expect: "the path of a file holding the relay's password",
            parse: some_path,
        },
        /// `smtp_ca_file`: PEM certificates trusted for the relay besides the platform's
        /// roots.
        smtp_ca_file: Option<PathBuf> { default: None, expect: CA_FILE, parse: some_path },
        /// `mail_from`: the sender (default `Periscope <no-reply@localhost>`).
        mail_from: Option<String> {
            default: None,
            expect: "a sender such as Periscope <no-reply@example.com>",
            parse: some_string,
        },
        /// `terms_version`: the dated terms version recorded at registration (default the
        /// sign-in crate's).
        terms_version: Option<String> {
            default: None,
            expect: "a dated version such as 2026-11-01",
            parse: some_string,
        },
        /// `client_ip_header`: the header a trusted reverse proxy puts the client address in
        /// (`x-forwarded-for`); unset, the connection's peer address (the proxy's, behind one).
        client_ip_header: Option<String> {
            default: None,
            expect: "the name of the header a trusted reverse proxy sets, such as \
                     x-forwarded-for",
            parse: |raw| {
                let name = string(raw)?;
                axum::http::HeaderName::from_bytes(name.as_bytes()).ok()?;
                Some(Some(name))
            },
        },
        /// `database_acquire_timeout_ms`: how long a sign-in request waits for a database
        /// connection (default the sign-in crate's, 2000).
        database_acquire_timeout_ms: Option<u64> {
            default: None,
            expect: "a whole number of milliseconds from 1 to 60000",
            parse: |raw| whole::<u64>(raw, 1).filter(|ms| *ms <= 60_000).map(Some),
        },
    }
    secrets {
        /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` (environment only).
        smtp_password from SMTP_PASSWORD_ENV,
    }
}

settings! {
    /// The `[web]` section: which OpenID Connect provider the browser application signs in
    /// with. All unset (the default): the embedded sign-in service, with a client configured
    /// automatically.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct WebSettings in [web] {
        /// `issuer`: an external provider's issuer URL; the embedded service is then not
        /// mounted.
        issuer: Option<String> {
            default: None,
            expect: "an external OpenID Connect provider's issuer URL",
            parse: some_string,
        },
        /// `client_id`: the application's client id there.
        client_id: Option<String> {
            default: None,
            expect: "the application's client id at that provider",
            parse: some_string,
        },
        /// `client_secret`: the application's client secret there.
        client_secret: Option<String> {
            default: None,
            expect: "the application's client secret at that provider",
            parse: some_string,
        },
        /// `ca_file`: PEM certificates trusted for an `https` provider besides the platform's
        /// roots.
        ca_file: Option<PathBuf> { default: None, expect: CA_FILE, parse: some_path },
        /// `organization_claim`: the claim carrying the organisation (default `org_name`).
        organization_claim: Option<String> {
            default: None,
            expect: "the name of an ID token claim, such as org_name or organization",
            parse: some_string,
        },
        /// `default_organization`: the organisation when the provider sends none.
        default_organization: Option<String> {
            default: None,
            expect: "an organisation name",
            parse: some_string,
        },
        /// `allowed_email_domains`: the e-mail domains that may sign in; empty: any.
        allowed_email_domains: Vec<String> {
            default: Vec::new(),
            expect: "a list of e-mail domains such as [\"example.com\"] (comma-separated in \
                     the environment)",
            parse: |raw| list(raw, |s| Some(s.to_owned())),
        },
    }
}

settings! {
    // `EnrichConfig` is the enrich crate's (it documents the fields); the keys are declared
    // here.
    impl EnrichConfig in [enrich] {
        geoip_city: Option<PathBuf> {
            flags: ["--geoip-city"],
            default: None,
            expect: "the path of a MaxMind DB file with locations (GeoLite2 City or Country…)",
            parse: some_path,
        },
        geoip_asn: Option<PathBuf> {
            flags: ["--geoip-asn"],
            default: None,
            expect: "the path of a MaxMind DB file with autonomous systems (GeoLite2 ASN…)",
            parse: some_path,
        },
        asn_table: Option<PathBuf> {
            flags: ["--asn-table"],
            default: None,
            expect: "the path of an iptoasn TSV table, plain or gzip",
            parse: some_path,
        },
    }
}

settings! {
    /// The `[index]` section: a ClickHouse scan index instead of the embedded one
    /// (`docs/scale-out.md`).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct IndexSettings in [index] {
        /// `url`: `clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]` or
        /// `clickhouse+https://…`; `None`: the embedded index.
        url: Option<periscope_clickhouse::Location> {
            flags: ["--index"],
            default: None,
            expect: "clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME] or \
                     clickhouse+https://…",
            parse: |raw| raw.string()?.parse().ok().map(Some),
        },
        /// `ca_file`: PEM certificates trusted for a `clickhouse+https` server besides the
        /// platform's roots.
        ca_file: Option<PathBuf> {
            default: None,
            expect: "the path of a PEM file of certificates trusted for the ClickHouse server",
            parse: some_path,
        },
        /// `password_file`: a file holding the ClickHouse user's password (its first line).
        password_file: Option<PathBuf> {
            default: None,
            expect: "the path of a file holding the ClickHouse user's password",
            parse: some_path,
        },
        /// `timeout_ms`: how long one statement may take before the request answers 503
        /// (default 10,000).
        timeout: Duration {
            key: "timeout_ms",
            default: Duration::from_secs(10),
            expect: MILLIS,
            parse: millis,
        },
        /// `memory_limit_mb`: the most memory one statement may use on each ClickHouse
        /// server, in bytes (default 4 GiB); `None` (`0` in the file): the server's settings
        /// profile decides.
        memory_limit: Option<u64> {
            key: "memory_limit_mb",
            default: Some(DEFAULT_INDEX_MEMORY_LIMIT_MB << 20),
            expect: "a whole number of MiB from 0 (the server's profile decides) to 1048576",
            parse: |raw| {
                let mb = whole::<u64>(raw, 0).filter(|mb| *mb <= 1 << 20)?;
                Some((mb > 0).then_some(mb << 20))
            },
        },
    }
    secrets {
        /// `PERISCOPE_INDEX_PASSWORD` (environment only).
        password from INDEX_PASSWORD_ENV,
    }
}

/// A value that `Debug` never shows (a password).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(hidden)")
    }
}

/// The format of log lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (`text`).
    Text,
    /// One JSON object per line (`json`).
    Json,
}

impl Default for Config {
    fn default() -> Self {
        <Self as Section>::defaults()
    }
}

impl Config {
    /// The defaults, overridden by `file` (when given), overridden by the environment:
    /// `env(name)` is the value of the variable `name`, if set (pass [`process_env`] for the
    /// real one). A variable set to the empty string counts as unset.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        if let Some(path) = file {
            source::apply_file(&mut config, path)?;
        }
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        for key in keys() {
            let name = key.env_name();
            if let Some(value) = env(&name) {
                key.apply(&mut config, Raw::Text(&value), Origin::Env(name))?;
            }
        }
        // Passwords are secrets: the environment only, never a key of the file.
        for secret in SECRET_TABLES.iter().flat_map(|table| table.iter()) {
            if let Some(value) = env(secret.env) {
                (secret.set)(&mut config, Secret(value));
            }
        }
        Ok(config)
    }

    /// Sets `key` (dotted, as in the file: `data`, `limits.daily_searches`) from the
    /// command-line flag `flag`, which overrides the file and the environment.
    pub fn apply_flag(&mut self, key: &str, flag: &str, value: &str) -> Result<(), ConfigError> {
        let origin = Origin::Flag(flag.to_owned());
        match keys().find(|k| k.dotted() == key) {
            Some(k) => k.apply(self, Raw::Text(value), origin),
            None => Err(ConfigError::UnknownKey {
                key: key.to_owned(),
                origin,
                known: declare::known_keys(None),
            }),
        }
    }

    /// The scan index settings these limits imply.
    pub fn index_config(&self) -> IndexConfig {
        IndexConfig {
            retention_secs: i64::from(self.limits.retention_days) * 86_400,
            max_host_only_results: self.limits.max_search_hosts,
        }
    }
}

impl IndexSettings {
    /// The ClickHouse password: from `PERISCOPE_INDEX_PASSWORD` or `password_file` (one of
    /// them), `None` when neither is set.
    pub fn password(&self) -> Result<Option<String>, ConfigError> {
        let refuse = ConfigError::Invalid;
        match (&self.password, &self.password_file) {
            (Some(password), None) => Ok(Some(password.0.clone())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    refuse(format!(
                        "cannot read index.password_file {}: {e}",
                        path.display()
                    ))
                })?;
                let password = text.lines().next().unwrap_or("").to_owned();
                if password.is_empty() {
                    return Err(refuse(format!(
                        "index.password_file {} is empty: its first line is the ClickHouse password",
                        path.display()
                    )));
                }
                Ok(Some(password))
            }
            (Some(_), Some(_)) => Err(refuse(format!(
                "the ClickHouse password is given twice ({INDEX_PASSWORD_ENV} and index.password_file): set one"
            ))),
            (None, None) => Ok(None),
        }
    }
}

/// The process environment, for [`Config::load`]. A variable whose value is not Unicode counts
/// as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The flags every command that reads the configuration accepts. `global`, so they may stand
/// before or after a subcommand.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConfigArgs {
    /// Configuration file (TOML); see docs/configuration.md.
    #[arg(long, value_name = "FILE", env = CONFIG_FILE_ENV, global = true, help_heading = "Configuration")]
    pub config: Option<PathBuf>,
    /// Data directory (overrides `data` and PERISCOPE_DATA) [default: ./data].
    #[arg(
        long,
        value_name = "DIR",
        global = true,
        help_heading = "Configuration"
    )]
    pub data: Option<String>,
    /// PostgreSQL state database, postgres://user@host/db (overrides `database_url` and
    /// PERISCOPE_DATABASE_URL) [default: SQLite DIR/state.db].
    #[arg(
        long,
        value_name = "URL",
        global = true,
        help_heading = "Configuration"
    )]
    pub database_url: Option<String>,
}

impl ConfigArgs {
    /// The configuration: defaults, file, process environment, then these flags.
    pub fn load(&self) -> Result<Config, ConfigError> {
        self.load_with(process_env)
    }

    /// As [`ConfigArgs::load`], with the environment given by `env`.
    pub fn load_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::load(self.config.as_deref(), env)?;
        if let Some(data) = &self.data {
            config.apply_flag("data", "--data", data)?;
        }
        if let Some(url) = &self.database_url {
            config.apply_flag("database_url", "--database-url", url)?;
        }
        Ok(config)
    }
}

/// One key as the reference and the command line name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReference {
    /// Its dotted name (`limits.daily_searches`).
    pub key: String,
    /// Its environment variable (`PERISCOPE_LIMITS_DAILY_SEARCHES`).
    pub env: String,
    /// The command-line flags that set it (`--data`), in whichever commands take them.
    pub flags: &'static [&'static str],
}

/// Every key, in the order of `docs/configuration.md`: what the commands' help and the
/// reference are checked against.
pub fn reference() -> Vec<KeyReference> {
    keys()
        .map(|key| KeyReference {
            key: key.dotted(),
            env: key.env_name(),
            flags: key.flags,
        })
        .collect()
}
