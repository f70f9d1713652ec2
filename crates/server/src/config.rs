//! The configuration shared by `serve`, `ingest` and `admin`: built-in defaults, overridden by
//! an optional TOML file, overridden by `PERISCOPE_*` environment variables, overridden by
//! command-line flags — and checked into the typed [`Config`] before any command runs, so a bad
//! setting stops start-up with a message naming the key, where the value came from and what
//! was expected.
//!
//! Every key is one row of `KEYS`: its section and name (which give the environment variable,
//! `PERISCOPE_` + section + name in upper case joined with `_`), what it expects, and how it is
//! stored. The file is read with `toml`'s spanned document parser, so an unknown key or a bad
//! value is reported with its line. [`Config::load`] takes the environment as a lookup function
//! so tests pass a map instead of changing the process environment. User reference:
//! `docs/configuration.md`.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use periscope_enrich::EnrichConfig;
use periscope_index::IndexConfig;
use periscope_state::{DEFAULT_CURSOR_LIFETIME_SECS, DailyLimit};
use toml::Spanned;
use toml::de::{DeString, DeTable, DeValue};

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

/// Every setting of Periscope, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `listen`: the address `serve` listens on (default `127.0.0.1:8080`).
    pub listen: SocketAddr,
    /// `data`: the data directory — scan store, index file and, without `database_url`, the
    /// SQLite state database `state.db` (default `./data`, as `ingest` has always used).
    pub data: PathBuf,
    /// `database_url`: a PostgreSQL state database (`postgres://…`); `None` (the default) means
    /// the SQLite file `DATA/state.db`.
    pub database_url: Option<String>,
    /// `database_acquire_timeout_ms`: how long a request waits for a connection to a
    /// PostgreSQL state database before it answers 503 (default 2 s).
    pub database_acquire_timeout: Duration,
    /// `log_format`: how log lines are written (default [`LogFormat::Text`]).
    pub log_format: LogFormat,
    /// `[http]`: connection limits and timeouts of the HTTP server.
    pub http: Http,
    /// `[limits]`: searches, rates, cursors and retention.
    pub limits: Limits,
    /// `[dns]`: how domain queries are resolved.
    pub dns: Dns,
    /// `public_url`: where browsers reach the server, `http(s)://host[:port]`; `None` (the
    /// default) means `http://` + the actual listening address. The embedded sign-in service's
    /// issuer is this + `/auth`.
    pub public_url: Option<String>,
    /// `[signin]`: the embedded sign-in service.
    pub signin: SignInSettings,
    /// `[web]`: the browser application's OpenID Connect provider.
    pub web: WebSettings,
    /// `[enrich]`: the GeoIP and ASN files `ingest` and `convert` enrich scanner output from
    /// (`docs/enrichment.md`); all unset by default, and then nothing is enriched.
    pub enrich: EnrichConfig,
    /// `[index]`: where the scan index lives; unset (the default), the embedded index in the
    /// data directory.
    pub index: IndexSettings,
}

/// The `[index]` section: a ClickHouse scan index instead of the embedded one
/// (`docs/scale-out.md`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexSettings {
    /// `url`: `clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]` or
    /// `clickhouse+https://…`; `None`: the embedded index.
    pub url: Option<periscope_clickhouse::Location>,
    /// `ca_file`: PEM certificates trusted for a `clickhouse+https` server besides the
    /// platform's roots.
    pub ca_file: Option<PathBuf>,
    /// `PERISCOPE_INDEX_PASSWORD` (environment only).
    pub password: Option<Secret>,
    /// `password_file`: a file holding the ClickHouse user's password (its first line).
    pub password_file: Option<PathBuf>,
    /// `timeout_ms`: how long one statement may take before the request answers 503
    /// (default 10,000).
    pub timeout: Duration,
    /// `memory_limit_mb`: the most memory one statement may use on each ClickHouse server, in
    /// bytes (default 4 GiB); `None` (`0` in the file): the server's settings profile decides.
    pub memory_limit: Option<u64>,
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

/// The `[signin]` section: the sign-in service `serve` embeds under `/auth`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SignInSettings {
    /// `smtp_host`: an SMTP relay for the registration e-mail; `None` (the default) writes
    /// messages into `DATA/outbox` and the link into the log.
    pub smtp_host: Option<String>,
    /// `smtp_port`: the relay's port (default 25).
    pub smtp_port: Option<u16>,
    /// `smtp_tls`: how the relay connection is protected (default opportunistic STARTTLS).
    pub smtp_tls: periscope_signin::SmtpTls,
    /// `smtp_username`: the login for SMTP AUTH; its password comes from
    /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` or `smtp_password_file`, never from the file.
    pub smtp_username: Option<String>,
    /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` (environment only).
    pub smtp_password: Option<Secret>,
    /// `smtp_password_file`: a file holding the SMTP password (one line).
    pub smtp_password_file: Option<PathBuf>,
    /// `smtp_ca_file`: PEM certificates trusted for the relay besides the platform's roots.
    pub smtp_ca_file: Option<PathBuf>,
    /// `mail_from`: the sender (default `Periscope <no-reply@localhost>`).
    pub mail_from: Option<String>,
    /// `terms_version`: the dated terms version recorded at registration (default the sign-in
    /// crate's).
    pub terms_version: Option<String>,
    /// `client_ip_header`: the header a trusted reverse proxy puts the client address in
    /// (`x-forwarded-for`); unset, the connection's peer address (the proxy's, behind one).
    pub client_ip_header: Option<String>,
    /// `database_acquire_timeout_ms`: how long a sign-in request waits for a database
    /// connection (default the sign-in crate's, 2000).
    pub database_acquire_timeout_ms: Option<u64>,
}

/// A value that `Debug` never shows (a password).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("(hidden)")
    }
}

/// The `[web]` section: which OpenID Connect provider the browser application signs in with.
/// All unset (the default): the embedded sign-in service, with a client configured
/// automatically.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WebSettings {
    /// `issuer`: an external provider's issuer URL; the embedded service is then not mounted.
    pub issuer: Option<String>,
    /// `client_id`: the application's client id there.
    pub client_id: Option<String>,
    /// `client_secret`: the application's client secret there.
    pub client_secret: Option<String>,
    /// `ca_file`: PEM certificates trusted for an `https` provider besides the platform's roots.
    pub ca_file: Option<PathBuf>,
    /// `organization_claim`: the claim carrying the organisation (default `org_name`).
    pub organization_claim: Option<String>,
    /// `default_organization`: the organisation when the provider sends none.
    pub default_organization: Option<String>,
    /// `allowed_email_domains`: the e-mail domains that may sign in; empty: any.
    pub allowed_email_domains: Vec<String>,
}

/// The `[limits]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `daily_searches`: the daily search limit given to new accounts (default 20, or
    /// `"unlimited"`).
    pub daily_searches: DailyLimit,
    /// `searches_per_account`: searches one account may run at once (default 2).
    pub searches_per_account: u32,
    /// `searches_total`: searches the whole service runs at once (default 32).
    pub searches_total: u32,
    /// `search_timeout_ms`: the time budget of one search (default 10 s).
    pub search_timeout: Duration,
    /// `cursor_lifetime_secs`: how long a search cursor stays usable (default 10 minutes).
    pub cursor_lifetime: Duration,
    /// `rate_per_sec`: requests per second one key may make to the free endpoints (default 10).
    pub rate_per_sec: u32,
    /// `rate_burst`: the burst allowed above that rate (default 20).
    pub rate_burst: u32,
    /// `max_search_hosts`: organization alone or country alone is declined by search (`query_too_broad`)
    /// above this many hosts (default 10,000).
    pub max_search_hosts: u64,
    /// `retention_days`: observations older than this stop being current (default 30 days).
    pub retention_days: u32,
}

/// The `[http]` section: what a connection may hold and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Http {
    /// `header_timeout_ms`: a request's headers must arrive within this (default 10 s).
    pub header_timeout: Duration,
    /// `idle_timeout_secs`: a kept-alive connection with no request is closed after this
    /// (default 60 s).
    pub idle_timeout: Duration,
    /// `body_timeout_ms`: a request's body must arrive within this (default 30 s).
    pub body_timeout: Duration,
    /// `max_connections`: connections open at once (default 10,000, and never more than the
    /// descriptor limit leaves room for).
    pub max_connections: u32,
    /// `trusted_proxies`: reverse proxies whose `X-Forwarded-For` names the client (default
    /// none).
    pub trusted_proxies: Vec<periscope_api::forwarded::Cidr>,
}

/// The `[dns]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dns {
    /// `servers`: the resolvers to ask; empty (the default) means the system's
    /// (`/etc/resolv.conf`).
    pub servers: Vec<SocketAddr>,
    /// `timeout_ms`: how long one resolution may take (default 2 s).
    pub timeout: Duration,
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
        let index = IndexConfig::default();
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data: PathBuf::from("./data"),
            database_url: None,
            database_acquire_timeout: periscope_state::DEFAULT_ACQUIRE_TIMEOUT,
            log_format: LogFormat::Text,
            http: Http {
                header_timeout: Duration::from_secs(10),
                idle_timeout: Duration::from_secs(60),
                body_timeout: Duration::from_secs(30),
                max_connections: 10_000,
                trusted_proxies: Vec::new(),
            },
            limits: Limits {
                daily_searches: DailyLimit::DEFAULT,
                searches_per_account: 2,
                searches_total: 32,
                search_timeout: Duration::from_secs(10),
                cursor_lifetime: Duration::from_secs(DEFAULT_CURSOR_LIFETIME_SECS.unsigned_abs()),
                rate_per_sec: 10,
                rate_burst: 20,
                max_search_hosts: index.max_host_only_results,
                retention_days: u32::try_from(index.retention_secs / 86_400).unwrap_or(30),
            },
            dns: Dns {
                servers: Vec::new(),
                timeout: Duration::from_secs(2),
            },
            public_url: None,
            signin: SignInSettings::default(),
            web: WebSettings::default(),
            enrich: EnrichConfig::default(),
            index: IndexSettings {
                timeout: Duration::from_secs(10),
                memory_limit: Some(DEFAULT_INDEX_MEMORY_LIMIT_MB << 20),
                ..IndexSettings::default()
            },
        }
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
            config.apply_file(path)?;
        }
        for key in KEYS {
            let name = key.env_name();
            if let Some(value) = env(&name).filter(|v| !v.is_empty()) {
                key.apply(&mut config, Raw::Text(&value), Origin::Env(name))?;
            }
        }
        // The relay password is a secret: the environment only, never a key of the file.
        config.signin.smtp_password = env(SMTP_PASSWORD_ENV).filter(|v| !v.is_empty()).map(Secret);
        config.index.password = env(INDEX_PASSWORD_ENV)
            .filter(|v| !v.is_empty())
            .map(Secret);
        Ok(config)
    }

    /// Sets `key` (dotted, as in the file: `data`, `limits.daily_searches`) from the
    /// command-line flag `flag`, which overrides the file and the environment.
    pub fn apply_flag(&mut self, key: &str, flag: &str, value: &str) -> Result<(), ConfigError> {
        let origin = Origin::Flag(flag.to_owned());
        match KEYS.iter().find(|k| k.dotted() == key) {
            Some(k) => k.apply(self, Raw::Text(value), origin),
            None => Err(ConfigError::UnknownKey {
                key: key.to_owned(),
                origin,
                known: known_keys(None),
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

    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        let document = DeTable::parse(&text).map_err(|mut e| {
            e.set_input(Some(&text));
            ConfigError::Syntax {
                path: path.to_owned(),
                message: e.to_string().trim_end().to_owned(),
            }
        })?;
        let at = |span: std::ops::Range<usize>| Origin::File {
            path: path.to_owned(),
            line: line_of(&text, span.start),
        };
        for (top, value) in in_file_order(document.get_ref()) {
            let name = top.get_ref().as_ref();
            if let DeValue::Table(table) = value.get_ref()
                && SECTIONS.contains(&name)
            {
                for (key, value) in in_file_order(table) {
                    let key_name = key.get_ref().as_ref();
                    let Some(spec) = find(Some(name), key_name) else {
                        return Err(ConfigError::UnknownKey {
                            key: format!("{name}.{key_name}"),
                            origin: at(key.span()),
                            known: known_keys(Some(name)),
                        });
                    };
                    spec.apply(self, Raw::Toml(value.get_ref()), at(value.span()))?;
                }
            } else if SECTIONS.contains(&name) {
                return Err(ConfigError::BadValue {
                    key: name.to_owned(),
                    origin: at(value.span()),
                    expected: format!("a table ([{name}])"),
                    found: Raw::Toml(value.get_ref()).describe(),
                });
            } else {
                let Some(spec) = find(None, name) else {
                    return Err(ConfigError::UnknownKey {
                        key: name.to_owned(),
                        origin: at(top.span()),
                        known: known_keys(None),
                    });
                };
                spec.apply(self, Raw::Toml(value.get_ref()), at(value.span()))?;
            }
        }
        Ok(())
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

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A line of a configuration file.
    File {
        /// The file.
        path: PathBuf,
        /// The line (1-based).
        line: usize,
    },
    /// An environment variable, by name.
    Env(String),
    /// A command-line flag, such as `--data`.
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => {
                write!(f, "the configuration file {} (line {line})", path.display())
            }
            Origin::Env(name) => write!(f, "the environment variable {name}"),
            Origin::Flag(flag) => write!(f, "the command-line flag {flag}"),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read the configuration file {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not TOML.
    #[error("the configuration file {} is not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// What the parser said, with the line.
        message: String,
    },
    /// A key Periscope does not know (often a typo, so it is never ignored).
    #[error("unknown configuration key `{key}` in {origin}; known keys: {known}")]
    UnknownKey {
        /// The key, dotted (`limits.daily_search`).
        key: String,
        /// Where it was found.
        origin: Origin,
        /// The keys that would have been accepted there.
        known: String,
    },
    /// A known key with a value it cannot take.
    #[error("bad value for `{key}` in {origin}: expected {expected}, found {found}")]
    BadValue {
        /// The key, dotted.
        key: String,
        /// Where the value came from.
        origin: Origin,
        /// What the key accepts.
        expected: String,
        /// What was given.
        found: String,
    },
    /// Settings that cannot be used together, or a file they name that cannot be used.
    #[error("{0}")]
    Invalid(String),
}

/// A value to set a key from: a TOML value of the file, or the text of a variable or flag.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Toml(&'a DeValue<'a>),
    Text(&'a str),
}

impl<'a> Raw<'a> {
    /// The value for an error message.
    fn describe(self) -> String {
        match self {
            Raw::Text(s) => format!("{s:?}"),
            Raw::Toml(value) => match value {
                DeValue::String(s) => format!("the string {:?}", s.as_ref()),
                DeValue::Integer(i) => match i.radix() {
                    16 => format!("the integer 0x{}", i.as_str()),
                    8 => format!("the integer 0o{}", i.as_str()),
                    2 => format!("the integer 0b{}", i.as_str()),
                    _ => format!("the integer {}", i.as_str()),
                },
                DeValue::Float(x) => format!("the number {}", x.as_str()),
                DeValue::Boolean(b) => format!("the boolean {b}"),
                DeValue::Datetime(d) => format!("the date-time {d}"),
                DeValue::Array(_) => "an array".to_owned(),
                DeValue::Table(_) => "a table".to_owned(),
            },
        }
    }

    /// A string: a TOML string, or any text.
    fn string(self) -> Option<&'a str> {
        match self {
            Raw::Text(s) => Some(s),
            Raw::Toml(DeValue::String(s)) => Some(s.as_ref()),
            Raw::Toml(_) => None,
        }
    }

    /// An integer: a TOML integer, or text of decimal digits (`_` allowed between them).
    fn integer(self) -> Option<i128> {
        match self {
            Raw::Text(s) => {
                let s = s.trim();
                if s.starts_with('_') || s.ends_with('_') || s.contains("__") {
                    return None;
                }
                s.replace('_', "").parse().ok()
            }
            Raw::Toml(DeValue::Integer(i)) => i128::from_str_radix(i.as_str(), i.radix()).ok(),
            Raw::Toml(_) => None,
        }
    }

    /// A list of strings: a TOML array of strings, or comma-separated text.
    fn strings(self) -> Option<Vec<&'a str>> {
        match self {
            Raw::Text(s) => Some(
                s.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect(),
            ),
            Raw::Toml(DeValue::Array(items)) => items
                .iter()
                .map(|item| match item.get_ref() {
                    DeValue::String(s) => Some(s.as_ref()),
                    _ => None,
                })
                .collect(),
            Raw::Toml(_) => None,
        }
    }
}

/// One configuration key.
struct Key {
    /// Its section, `None` for the top level.
    section: Option<&'static str>,
    /// Its name in the section.
    name: &'static str,
    /// What it accepts, for error messages.
    expected: &'static str,
    /// Stores a value; `None` when the value is not acceptable.
    set: fn(&mut Config, Raw<'_>) -> Option<()>,
}

impl Key {
    /// `section.name`, or `name` at the top level.
    fn dotted(&self) -> String {
        match self.section {
            Some(section) => format!("{section}.{}", self.name),
            None => self.name.to_owned(),
        }
    }

    /// `PERISCOPE_SECTION_NAME`.
    fn env_name(&self) -> String {
        format!(
            "{ENV_PREFIX}{}",
            self.dotted().replace('.', "_").to_ascii_uppercase()
        )
    }

    fn apply(&self, config: &mut Config, raw: Raw<'_>, origin: Origin) -> Result<(), ConfigError> {
        (self.set)(config, raw).ok_or_else(|| ConfigError::BadValue {
            key: self.dotted(),
            origin,
            expected: self.expected.to_owned(),
            found: raw.describe(),
        })
    }
}

/// The sections of the file; every other top-level name is a key.
const SECTIONS: [&str; 7] = ["limits", "dns", "http", "signin", "web", "enrich", "index"];

/// Every key, in the order of `docs/configuration.md`.
const KEYS: &[Key] = &[
    Key {
        section: None,
        name: "listen",
        expected: "an IP address and port such as 127.0.0.1:8080 or [::1]:8080",
        set: |c, raw| {
            c.listen = raw.string()?.trim().parse().ok()?;
            Some(())
        },
    },
    Key {
        section: None,
        name: "data",
        expected: "a directory path (not empty)",
        set: |c, raw| {
            c.data = PathBuf::from(non_empty(raw.string()?)?);
            Some(())
        },
    },
    Key {
        section: None,
        name: "database_url",
        expected: "a PostgreSQL URL such as postgres://periscope@db.internal/periscope",
        set: |c, raw| {
            c.database_url = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: None,
        name: "database_acquire_timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.database_acquire_timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: None,
        name: "log_format",
        expected: "\"text\" or \"json\"",
        set: |c, raw| {
            c.log_format = match raw.string()?.trim() {
                "text" => LogFormat::Text,
                "json" => LogFormat::Json,
                _ => return None,
            };
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "daily_searches",
        expected: "a whole number from 0 to 4294967295, or \"unlimited\"",
        set: |c, raw| {
            c.limits.daily_searches = match raw {
                Raw::Text(s) if s.trim() == "unlimited" => DailyLimit::Unlimited,
                Raw::Toml(DeValue::String(s)) if s.as_ref() == "unlimited" => DailyLimit::Unlimited,
                _ => DailyLimit::Limited(ranged(raw, 0)?),
            };
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "searches_per_account",
        expected: "a whole number from 1 to 4294967295",
        set: |c, raw| {
            c.limits.searches_per_account = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "searches_total",
        expected: "a whole number from 1 to 4294967295",
        set: |c, raw| {
            c.limits.searches_total = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "search_timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.limits.search_timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "cursor_lifetime_secs",
        expected: "a whole number of seconds from 1 to 4294967295",
        set: |c, raw| {
            c.limits.cursor_lifetime = Duration::from_secs(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "rate_per_sec",
        expected: "a whole number from 1 to 4294967295",
        set: |c, raw| {
            c.limits.rate_per_sec = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "rate_burst",
        expected: "a whole number from 1 to 4294967295",
        set: |c, raw| {
            c.limits.rate_burst = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "max_search_hosts",
        expected: "a whole number from 1 to 18446744073709551615",
        set: |c, raw| {
            c.limits.max_search_hosts = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("limits"),
        name: "retention_days",
        expected: "a whole number of days from 1 to 36500",
        set: |c, raw| {
            c.limits.retention_days = ranged::<u32>(raw, 1).filter(|d| *d <= 36_500)?;
            Some(())
        },
    },
    Key {
        section: Some("dns"),
        name: "servers",
        expected: "a list of IP addresses with optional ports, such as [\"192.0.2.53\", \
                   \"[2001:db8::53]:5353\"] (comma-separated in a variable or flag)",
        set: |c, raw| {
            c.dns.servers = raw
                .strings()?
                .into_iter()
                .map(dns_server)
                .collect::<Option<_>>()?;
            Some(())
        },
    },
    Key {
        section: Some("dns"),
        name: "timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.dns.timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("http"),
        name: "header_timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.http.header_timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("http"),
        name: "idle_timeout_secs",
        expected: "a whole number of seconds from 1 to 4294967295",
        set: |c, raw| {
            c.http.idle_timeout = Duration::from_secs(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("http"),
        name: "body_timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.http.body_timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("http"),
        name: "max_connections",
        expected: "a whole number from 1 to 4294967295",
        set: |c, raw| {
            c.http.max_connections = ranged(raw, 1)?;
            Some(())
        },
    },
    Key {
        section: Some("http"),
        name: "trusted_proxies",
        expected: "a list of address blocks of reverse proxies, such as [\"127.0.0.1/32\", \
                   \"10.0.0.0/8\"] (comma-separated in a variable or flag)",
        set: |c, raw| {
            c.http.trusted_proxies = raw
                .strings()?
                .into_iter()
                .map(|s| s.parse().ok())
                .collect::<Option<_>>()?;
            Some(())
        },
    },
    Key {
        section: None,
        name: "public_url",
        expected: "an http(s) URL without path or trailing slash, such as https://periscope.example.com",
        set: |c, raw| {
            let url = non_empty(raw.string()?)?;
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"))?;
            if rest.is_empty() || rest.contains(['/', '?', '#', ' ']) {
                return None;
            }
            c.public_url = Some(url.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_host",
        expected: "a host name or IP address of an SMTP relay",
        set: |c, raw| {
            c.signin.smtp_host = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_port",
        expected: "a port number from 1 to 65535",
        set: |c, raw| {
            c.signin.smtp_port = Some(ranged(raw, 1)?);
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_tls",
        expected: "one of none, opportunistic, starttls, tls",
        set: |c, raw| {
            c.signin.smtp_tls = raw.string()?.trim().parse().ok()?;
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_username",
        expected: "the relay's user name (the password comes from PERISCOPE_SIGNIN_SMTP_PASSWORD or smtp_password_file)",
        set: |c, raw| {
            c.signin.smtp_username = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_password_file",
        expected: "the path of a file holding the relay's password",
        set: |c, raw| {
            c.signin.smtp_password_file = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "smtp_ca_file",
        expected: "the path of a PEM file of CA certificates",
        set: |c, raw| {
            c.signin.smtp_ca_file = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "mail_from",
        expected: "a sender such as Periscope <no-reply@example.com>",
        set: |c, raw| {
            c.signin.mail_from = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "terms_version",
        expected: "a dated version such as 2026-11-01",
        set: |c, raw| {
            c.signin.terms_version = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "client_ip_header",
        expected: "the name of the header a trusted reverse proxy sets, such as x-forwarded-for",
        set: |c, raw| {
            let name = non_empty(raw.string()?)?;
            axum::http::HeaderName::from_bytes(name.as_bytes()).ok()?;
            c.signin.client_ip_header = Some(name.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("signin"),
        name: "database_acquire_timeout_ms",
        expected: "a whole number of milliseconds from 1 to 60000",
        set: |c, raw| {
            let ms = ranged::<u64>(raw, 1).filter(|ms| *ms <= 60_000)?;
            c.signin.database_acquire_timeout_ms = Some(ms);
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "issuer",
        expected: "an external OpenID Connect provider's issuer URL",
        set: |c, raw| {
            c.web.issuer = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "client_id",
        expected: "the application's client id at that provider",
        set: |c, raw| {
            c.web.client_id = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "client_secret",
        expected: "the application's client secret at that provider",
        set: |c, raw| {
            c.web.client_secret = Some(non_empty(raw.string()?)?.to_owned());
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "ca_file",
        expected: "the path of a PEM file of CA certificates",
        set: |c, raw| {
            c.web.ca_file = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "organization_claim",
        expected: "the name of an ID token claim, such as org_name or organization",
        set: |c, raw| {
            c.web.organization_claim = Some(non_empty(raw.string()?)?.trim().to_owned());
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "default_organization",
        expected: "an organisation name",
        set: |c, raw| {
            c.web.default_organization = Some(non_empty(raw.string()?)?.trim().to_owned());
            Some(())
        },
    },
    Key {
        section: Some("web"),
        name: "allowed_email_domains",
        expected: "a list of e-mail domains such as [\"example.com\"] (comma-separated in the environment)",
        set: |c, raw| {
            c.web.allowed_email_domains = raw.strings()?.into_iter().map(str::to_owned).collect();
            Some(())
        },
    },
    Key {
        section: Some("enrich"),
        name: "geoip_city",
        expected: "the path of a MaxMind DB file with locations (GeoLite2 City or Country…)",
        set: |c, raw| {
            c.enrich.geoip_city = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("enrich"),
        name: "geoip_asn",
        expected: "the path of a MaxMind DB file with autonomous systems (GeoLite2 ASN…)",
        set: |c, raw| {
            c.enrich.geoip_asn = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("enrich"),
        name: "asn_table",
        expected: "the path of an iptoasn TSV table, plain or gzip",
        set: |c, raw| {
            c.enrich.asn_table = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("index"),
        name: "url",
        expected: "clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME] or clickhouse+https://…",
        set: |c, raw| {
            c.index.url = Some(raw.string()?.parse().ok()?);
            Some(())
        },
    },
    Key {
        section: Some("index"),
        name: "ca_file",
        expected: "the path of a PEM file of certificates trusted for the ClickHouse server",
        set: |c, raw| {
            c.index.ca_file = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("index"),
        name: "password_file",
        expected: "the path of a file holding the ClickHouse user's password",
        set: |c, raw| {
            c.index.password_file = Some(PathBuf::from(non_empty(raw.string()?)?));
            Some(())
        },
    },
    Key {
        section: Some("index"),
        name: "timeout_ms",
        expected: "a whole number of milliseconds from 1 to 4294967295",
        set: |c, raw| {
            c.index.timeout = Duration::from_millis(ranged::<u32>(raw, 1)?.into());
            Some(())
        },
    },
    Key {
        section: Some("index"),
        name: "memory_limit_mb",
        expected: "a whole number of MiB from 0 (the server's profile decides) to 1048576",
        set: |c, raw| {
            let mb = ranged::<u64>(raw, 0).filter(|mb| *mb <= 1 << 20)?;
            c.index.memory_limit = (mb > 0).then_some(mb << 20);
            Some(())
        },
    },
];

/// The key `name` of `section`.
fn find(section: Option<&str>, name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.section == section && k.name == name)
}

/// The keys accepted in `section` (at the top level: its keys and the sections), for an error
/// message.
fn known_keys(section: Option<&str>) -> String {
    let mut names: Vec<String> = KEYS
        .iter()
        .filter(|k| k.section == section)
        .map(Key::dotted)
        .collect();
    if section.is_none() {
        names.extend(SECTIONS.iter().map(|s| format!("[{s}]")));
    }
    names.join(", ")
}

/// A whole number of type `T` no smaller than `min`.
fn ranged<T: TryFrom<i128>>(raw: Raw<'_>, min: i128) -> Option<T> {
    let n = raw.integer().filter(|n| *n >= min)?;
    T::try_from(n).ok()
}

/// `s` trimmed, unless that leaves nothing.
fn non_empty(s: &str) -> Option<&str> {
    Some(s.trim()).filter(|s| !s.is_empty())
}

/// `ip:port`, `[ipv6]:port`, or an address alone (port 53).
fn dns_server(s: &str) -> Option<SocketAddr> {
    let s = s.trim();
    s.parse::<SocketAddr>().ok().or_else(|| {
        let bare = s.strip_prefix('[').and_then(|s| s.strip_suffix(']'));
        bare.unwrap_or(s)
            .parse::<IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, DNS_PORT))
    })
}

/// A table's entries in the order they stand in the file (the parser keeps them sorted by
/// name), so the first problem reported is the first one written.
fn in_file_order<'t, 'i>(
    table: &'t DeTable<'i>,
) -> Vec<(&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text
        .as_bytes()
        .iter()
        .take(offset)
        .filter(|b| **b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Test code: a panic is the failure report.

    use std::collections::HashMap;

    use super::*;

    /// A fake environment.
    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| vars.get(name).cloned()
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    /// A configuration file with `text`, in a directory of its own.
    fn file(test: &str, text: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("periscope-config-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("periscope.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    /// The message of a failing load.
    fn error(path: Option<&Path>, vars: &[(&str, &str)]) -> String {
        Config::load(path, env(vars)).unwrap_err().to_string()
    }

    #[test]
    fn defaults() {
        let c = Config::load(None, no_env).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.data, PathBuf::from("./data"));
        assert_eq!(c.database_url, None);
        assert_eq!(c.log_format, LogFormat::Text);
        let l = &c.limits;
        assert_eq!(l.daily_searches, DailyLimit::Limited(20));
        assert_eq!(
            (l.searches_per_account, l.searches_total),
            (2, 32),
            "concurrency"
        );
        assert_eq!(l.search_timeout, Duration::from_millis(10_000));
        assert_eq!(l.cursor_lifetime, Duration::from_secs(600));
        assert_eq!((l.rate_per_sec, l.rate_burst), (10, 20));
        assert_eq!(l.max_search_hosts, 10_000);
        assert_eq!(l.retention_days, 30);
        assert!(c.dns.servers.is_empty());
        assert_eq!(c.dns.timeout, Duration::from_millis(2_000));
        assert_eq!(c.index_config(), IndexConfig::default());
        assert_eq!(c.database_acquire_timeout, Duration::from_millis(2_000));
        assert_eq!(c.http.header_timeout, Duration::from_secs(10));
        assert_eq!(c.http.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.http.body_timeout, Duration::from_secs(30));
        assert_eq!(c.http.max_connections, 10_000);
    }

    #[test]
    fn file_values() {
        let path = file(
            "values",
            r#"
listen = "[::1]:9000"
data = "/var/lib/periscope"
database_url = "postgres://periscope@db/periscope"
log_format = "json"

[limits]
daily_searches = "unlimited"
searches_per_account = 4
searches_total = 64
search_timeout_ms = 5_000
cursor_lifetime_secs = 120
rate_per_sec = 5
rate_burst = 0x0a
max_search_hosts = 50000
retention_days = 7

[dns]
servers = ["192.0.2.53", "[2001:db8::53]:5353", "198.51.100.1:53"]
timeout_ms = 500
"#,
        );
        let c = Config::load(Some(&path), no_env).unwrap();
        assert_eq!(c.listen.to_string(), "[::1]:9000");
        assert_eq!(c.data, PathBuf::from("/var/lib/periscope"));
        assert_eq!(
            c.database_url.as_deref(),
            Some("postgres://periscope@db/periscope")
        );
        assert_eq!(c.log_format, LogFormat::Json);
        let l = &c.limits;
        assert_eq!(l.daily_searches, DailyLimit::Unlimited);
        assert_eq!((l.searches_per_account, l.searches_total), (4, 64));
        assert_eq!(l.search_timeout, Duration::from_secs(5));
        assert_eq!(l.cursor_lifetime, Duration::from_secs(120));
        assert_eq!((l.rate_per_sec, l.rate_burst), (5, 10));
        assert_eq!(l.max_search_hosts, 50_000);
        assert_eq!(l.retention_days, 7);
        let servers: Vec<String> = c.dns.servers.iter().map(ToString::to_string).collect();
        assert_eq!(
            servers,
            ["192.0.2.53:53", "[2001:db8::53]:5353", "198.51.100.1:53"]
        );
        assert_eq!(c.dns.timeout, Duration::from_millis(500));
        assert_eq!(c.index_config().retention_secs, 7 * 86_400);
    }

    #[test]
    fn dotted_keys_and_inline_tables_are_sections_too() {
        let path = file(
            "dotted",
            "limits.daily_searches = 3\ndns = { timeout_ms = 10 }\n",
        );
        let c = Config::load(Some(&path), no_env).unwrap();
        assert_eq!(c.limits.daily_searches, DailyLimit::Limited(3));
        assert_eq!(c.dns.timeout, Duration::from_millis(10));
    }

    #[test]
    fn http_and_database_timeouts() {
        let path = file(
            "http",
            "database_acquire_timeout_ms = 500\n[http]\nheader_timeout_ms = 1_500\n\
             idle_timeout_secs = 5\nbody_timeout_ms = 700\nmax_connections = 64\n",
        );
        let c = Config::load(
            Some(&path),
            env(&[("PERISCOPE_HTTP_MAX_CONNECTIONS", "32")]),
        )
        .unwrap();
        assert_eq!(c.database_acquire_timeout, Duration::from_millis(500));
        assert_eq!(c.http.header_timeout, Duration::from_millis(1_500));
        assert_eq!(c.http.idle_timeout, Duration::from_secs(5));
        assert_eq!(c.http.body_timeout, Duration::from_millis(700));
        assert_eq!(c.http.max_connections, 32);
        let e = error(None, &[("PERISCOPE_HTTP_HEADER_TIMEOUT_MS", "0")]);
        assert!(e.contains("`http.header_timeout_ms`"), "{e}");
        let e = error(None, &[("PERISCOPE_DATABASE_ACQUIRE_TIMEOUT_MS", "soon")]);
        assert!(e.contains("`database_acquire_timeout_ms`"), "{e}");
    }

    #[test]
    fn environment_overrides_the_file() {
        let path = file(
            "env",
            "data = \"/from/file\"\nlisten = \"0.0.0.0:80\"\n[limits]\ndaily_searches = 5\n",
        );
        let c = Config::load(
            Some(&path),
            env(&[
                ("PERISCOPE_DATA", "/from/env"),
                ("PERISCOPE_DATABASE_URL", "postgres://u@h/d"),
                ("PERISCOPE_LIMITS_DAILY_SEARCHES", "7"),
                ("PERISCOPE_LIMITS_MAX_SEARCH_HOSTS", "1_000"),
                ("PERISCOPE_DNS_SERVERS", "192.0.2.1, 192.0.2.2:5353"),
                ("PERISCOPE_LOG_FORMAT", "json"),
                // Empty counts as unset: the file's value stays.
                ("PERISCOPE_LISTEN", ""),
                // Not a key: ignored.
                ("PERISCOPE_TEST_POSTGRES_URL", "postgres://x"),
            ]),
        )
        .unwrap();
        assert_eq!(c.data, PathBuf::from("/from/env"));
        assert_eq!(c.listen.to_string(), "0.0.0.0:80");
        assert_eq!(c.database_url.as_deref(), Some("postgres://u@h/d"));
        assert_eq!(c.limits.daily_searches, DailyLimit::Limited(7));
        assert_eq!(c.limits.max_search_hosts, 1_000);
        assert_eq!(c.dns.servers.len(), 2);
        assert_eq!(c.log_format, LogFormat::Json);
    }

    #[test]
    fn every_key_has_its_environment_variable() {
        let names: Vec<String> = KEYS.iter().map(Key::env_name).collect();
        assert_eq!(
            names,
            [
                "PERISCOPE_LISTEN",
                "PERISCOPE_DATA",
                "PERISCOPE_DATABASE_URL",
                "PERISCOPE_DATABASE_ACQUIRE_TIMEOUT_MS",
                "PERISCOPE_LOG_FORMAT",
                "PERISCOPE_LIMITS_DAILY_SEARCHES",
                "PERISCOPE_LIMITS_SEARCHES_PER_ACCOUNT",
                "PERISCOPE_LIMITS_SEARCHES_TOTAL",
                "PERISCOPE_LIMITS_SEARCH_TIMEOUT_MS",
                "PERISCOPE_LIMITS_CURSOR_LIFETIME_SECS",
                "PERISCOPE_LIMITS_RATE_PER_SEC",
                "PERISCOPE_LIMITS_RATE_BURST",
                "PERISCOPE_LIMITS_MAX_SEARCH_HOSTS",
                "PERISCOPE_LIMITS_RETENTION_DAYS",
                "PERISCOPE_DNS_SERVERS",
                "PERISCOPE_DNS_TIMEOUT_MS",
                "PERISCOPE_HTTP_HEADER_TIMEOUT_MS",
                "PERISCOPE_HTTP_IDLE_TIMEOUT_SECS",
                "PERISCOPE_HTTP_BODY_TIMEOUT_MS",
                "PERISCOPE_HTTP_MAX_CONNECTIONS",
                "PERISCOPE_HTTP_TRUSTED_PROXIES",
                "PERISCOPE_PUBLIC_URL",
                "PERISCOPE_SIGNIN_SMTP_HOST",
                "PERISCOPE_SIGNIN_SMTP_PORT",
                "PERISCOPE_SIGNIN_SMTP_TLS",
                "PERISCOPE_SIGNIN_SMTP_USERNAME",
                "PERISCOPE_SIGNIN_SMTP_PASSWORD_FILE",
                "PERISCOPE_SIGNIN_SMTP_CA_FILE",
                "PERISCOPE_SIGNIN_MAIL_FROM",
                "PERISCOPE_SIGNIN_TERMS_VERSION",
                "PERISCOPE_SIGNIN_CLIENT_IP_HEADER",
                "PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS",
                "PERISCOPE_WEB_ISSUER",
                "PERISCOPE_WEB_CLIENT_ID",
                "PERISCOPE_WEB_CLIENT_SECRET",
                "PERISCOPE_WEB_CA_FILE",
                "PERISCOPE_WEB_ORGANIZATION_CLAIM",
                "PERISCOPE_WEB_DEFAULT_ORGANIZATION",
                "PERISCOPE_WEB_ALLOWED_EMAIL_DOMAINS",
                "PERISCOPE_ENRICH_GEOIP_CITY",
                "PERISCOPE_ENRICH_GEOIP_ASN",
                "PERISCOPE_ENRICH_ASN_TABLE",
                "PERISCOPE_INDEX_URL",
                "PERISCOPE_INDEX_CA_FILE",
                "PERISCOPE_INDEX_PASSWORD_FILE",
                "PERISCOPE_INDEX_TIMEOUT_MS",
                "PERISCOPE_INDEX_MEMORY_LIMIT_MB",
            ]
        );
        assert_eq!(
            periscope_state::DATABASE_URL_ENV,
            find(None, "database_url").unwrap().env_name()
        );
        // The reference lists every key and its variable.
        // Read from the running test's crate directory (a shared build directory may have
        // compiled this binary in another checkout).
        let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), PathBuf::from);
        let doc = std::fs::read_to_string(crate_dir.join("../../docs/configuration.md")).unwrap();
        for key in KEYS {
            assert!(doc.contains(&format!("`{}`", key.name)), "{}", key.dotted());
            assert!(doc.contains(&key.env_name()), "{}", key.env_name());
        }
    }

    #[test]
    fn signin_relay_settings_and_the_password_from_the_environment_only() {
        let path = file(
            "relay",
            "[signin]\nsmtp_host = \"smtp.example\"\nsmtp_tls = \"starttls\"\n\
             smtp_username = \"periscope\"\nsmtp_ca_file = \"/etc/periscope/ca.pem\"\n",
        );
        let c = Config::load(
            Some(&path),
            env(&[
                ("PERISCOPE_SIGNIN_SMTP_PASSWORD", "from-the-environment"),
                ("PERISCOPE_SIGNIN_SMTP_PASSWORD_FILE", "/run/secrets/smtp"),
            ]),
        )
        .unwrap();
        assert_eq!(c.signin.smtp_tls, periscope_signin::SmtpTls::Starttls);
        assert_eq!(c.signin.smtp_username.as_deref(), Some("periscope"));
        assert_eq!(
            c.signin.smtp_password,
            Some(Secret("from-the-environment".into()))
        );
        assert!(!format!("{c:?}").contains("from-the-environment"));
        assert_eq!(
            c.signin.smtp_password_file.as_deref(),
            Some(Path::new("/run/secrets/smtp"))
        );
        assert_eq!(
            c.signin.smtp_ca_file.as_deref(),
            Some(Path::new("/etc/periscope/ca.pem"))
        );
        assert_eq!(
            Config::load(None, env(&[])).unwrap().signin.smtp_tls,
            periscope_signin::SmtpTls::Opportunistic
        );
        // The password itself is no key of the file.
        let path = file("relay-password", "[signin]\nsmtp_password = \"hunter22\"\n");
        let e = Config::load(Some(&path), env(&[])).unwrap_err().to_string();
        assert!(e.contains("signin.smtp_password"), "{e}");
        let e = Config::load(None, env(&[("PERISCOPE_SIGNIN_SMTP_TLS", "ssl")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none, opportunistic, starttls, tls"), "{e}");
    }

    #[test]
    fn signin_proxy_header_and_acquire_timeout() {
        let none = ConfigArgs {
            config: None,
            data: None,
            database_url: None,
        };
        let c = none
            .load_with(env(&[
                ("PERISCOPE_SIGNIN_CLIENT_IP_HEADER", "X-Forwarded-For"),
                ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "500"),
            ]))
            .unwrap();
        assert_eq!(
            c.signin.client_ip_header.as_deref(),
            Some("X-Forwarded-For")
        );
        assert_eq!(c.signin.database_acquire_timeout_ms, Some(500));
        for (key, bad) in [
            ("PERISCOPE_SIGNIN_CLIENT_IP_HEADER", "not a header"),
            ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "0"),
            ("PERISCOPE_SIGNIN_DATABASE_ACQUIRE_TIMEOUT_MS", "60001"),
        ] {
            let e = none.load_with(env(&[(key, bad)])).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
    }

    #[test]
    fn flags_override_the_environment() {
        let path = file("flags", "data = \"/from/file\"\n");
        let args = ConfigArgs {
            config: Some(path),
            data: Some("/from/flag".into()),
            database_url: Some("postgres://flag@h/d".into()),
        };
        let c = args
            .load_with(env(&[
                ("PERISCOPE_DATA", "/from/env"),
                ("PERISCOPE_DATABASE_URL", "postgres://env@h/d"),
            ]))
            .unwrap();
        assert_eq!(c.data, PathBuf::from("/from/flag"));
        assert_eq!(c.database_url.as_deref(), Some("postgres://flag@h/d"));

        let mut c = Config::default();
        c.apply_flag("listen", "--listen", "10.0.0.1:81").unwrap();
        assert_eq!(c.listen.to_string(), "10.0.0.1:81");
        let e = c.apply_flag("listen", "--listen", "localhost").unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad value for `listen` in the command-line flag --listen: expected an IP address \
             and port such as 127.0.0.1:8080 or [::1]:8080, found \"localhost\""
        );
    }

    #[test]
    fn unknown_keys_are_errors_naming_key_and_file() {
        let path = file(
            "unknown",
            "listen = \"127.0.0.1:1\"\n\n[limits]\ndaily_search = 5\n",
        );
        let e = error(Some(&path), &[]);
        assert!(
            e.starts_with(&format!(
                "unknown configuration key `limits.daily_search` in the configuration file {} \
                 (line 4); known keys: limits.daily_searches, ",
                path.display()
            )),
            "{e}"
        );
        let path = file("unknown-top", "lisen = \"127.0.0.1:1\"\n");
        let e = error(Some(&path), &[]);
        assert!(e.contains("key `lisen` in the configuration file"), "{e}");
        assert!(
            e.contains("(line 1)") && e.contains("[limits], [dns]"),
            "{e}"
        );
        let path = file("unknown-section", "[limit]\ndaily_searches = 5\n");
        let e = error(Some(&path), &[]);
        assert!(e.contains("key `limit` in"), "{e}");
    }

    #[test]
    fn bad_values_name_key_source_and_expectation() {
        let path = file("bad", "[limits]\nsearches_total = \"32\"\n");
        assert_eq!(
            error(Some(&path), &[]),
            format!(
                "bad value for `limits.searches_total` in the configuration file {} (line 2): \
                 expected a whole number from 1 to 4294967295, found the string \"32\"",
                path.display()
            )
        );
        assert_eq!(
            error(None, &[("PERISCOPE_LIMITS_DAILY_SEARCHES", "lots")]),
            "bad value for `limits.daily_searches` in the environment variable \
             PERISCOPE_LIMITS_DAILY_SEARCHES: expected a whole number from 0 to 4294967295, \
             or \"unlimited\", found \"lots\""
        );
        // Check each key refuses values of the wrong kind or range.
        let cases: &[(&str, &str)] = &[
            ("PERISCOPE_LISTEN", "127.0.0.1"),
            ("PERISCOPE_DATA", "  "),
            ("PERISCOPE_LOG_FORMAT", "xml"),
            ("PERISCOPE_LIMITS_DAILY_SEARCHES", "-1"),
            ("PERISCOPE_LIMITS_SEARCHES_PER_ACCOUNT", "0"),
            ("PERISCOPE_LIMITS_SEARCHES_TOTAL", "4294967296"),
            ("PERISCOPE_LIMITS_SEARCH_TIMEOUT_MS", "1.5"),
            ("PERISCOPE_LIMITS_CURSOR_LIFETIME_SECS", "10s"),
            ("PERISCOPE_LIMITS_RATE_PER_SEC", "_1"),
            ("PERISCOPE_LIMITS_RATE_BURST", ""),
            ("PERISCOPE_LIMITS_MAX_SEARCH_HOSTS", "0"),
            ("PERISCOPE_LIMITS_RETENTION_DAYS", "36501"),
            ("PERISCOPE_DNS_SERVERS", "192.0.2.1,resolver.example"),
            ("PERISCOPE_DNS_TIMEOUT_MS", "0"),
        ];
        for (name, value) in cases {
            let result = Config::load(None, env(&[(name, value)]));
            if value.is_empty() {
                assert!(result.is_ok(), "{name}: empty is unset");
                continue;
            }
            let e = result.unwrap_err().to_string();
            assert!(
                e.contains(&format!("in the environment variable {name}: expected")),
                "{name}={value}: {e}"
            );
        }
        let path = file("bad-kind", "limits = 5\n");
        let e = error(Some(&path), &[]);
        assert!(
            e.contains("`limits`")
                && e.contains("expected a table ([limits]), found the integer 5"),
            "{e}"
        );
        let path = file("bad-list", "[dns]\nservers = [\"192.0.2.1\", 53]\n");
        let e = error(Some(&path), &[]);
        assert!(
            e.contains("`dns.servers`") && e.contains("(line 2)") && e.ends_with("an array"),
            "{e}"
        );
    }

    #[test]
    fn index_section_from_file_and_environment() {
        let c = Config::load(None, no_env).unwrap();
        assert_eq!(c.index.url, None);
        assert_eq!(c.index.timeout, Duration::from_secs(10));
        assert_eq!(c.index.memory_limit, Some(4 << 30));
        assert_eq!(c.index.password().unwrap(), None);
        let path = file(
            "index",
            "[index]\nurl = \"clickhouse://reader@ch1:8123/scans?cluster=edge\"\n\
             ca_file = \"/etc/periscope/ch-ca.pem\"\ntimeout_ms = 2500\nmemory_limit_mb = 512\n",
        );
        let c = Config::load(Some(&path), env(&[(INDEX_PASSWORD_ENV, "s3cret")])).unwrap();
        let url = c.index.url.as_ref().unwrap();
        assert_eq!(
            (
                url.endpoint.as_str(),
                url.database.as_str(),
                url.cluster.as_str()
            ),
            ("http://ch1:8123", "scans", "edge")
        );
        assert_eq!(
            c.index.ca_file.as_deref(),
            Some(Path::new("/etc/periscope/ch-ca.pem"))
        );
        assert_eq!(c.index.timeout, Duration::from_millis(2500));
        assert_eq!(c.index.memory_limit, Some(512 << 20));
        assert_eq!(c.index.password().unwrap().as_deref(), Some("s3cret"));
        let c = Config::load(None, env(&[("PERISCOPE_INDEX_MEMORY_LIMIT_MB", "0")])).unwrap();
        assert_eq!(c.index.memory_limit, None);
        let e = error(None, &[("PERISCOPE_INDEX_MEMORY_LIMIT_MB", "-1")]);
        assert!(
            e.contains("`index.memory_limit_mb` in the environment variable")
                && e.contains("a whole number of MiB"),
            "{e}"
        );
        assert!(!format!("{c:?}").contains("s3cret"));
        let e = error(None, &[("PERISCOPE_INDEX_URL", "http://ch1:8123/scans")]);
        assert!(
            e.contains("`index.url` in the environment variable PERISCOPE_INDEX_URL")
                && e.contains("clickhouse://"),
            "{e}"
        );
        let secret = file("index-password", "\n");
        let mut c = Config::load(None, no_env).unwrap();
        c.index.password_file = Some(secret.clone());
        let e = c.index.password().unwrap_err().to_string();
        assert!(e.contains("is empty"), "{e}");
        c.index.password = Some(Secret("x".into()));
        let e = c.index.password().unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn enrich_files_from_file_environment_and_flags() {
        assert!(Config::load(None, no_env).unwrap().enrich.is_empty());
        let path = file(
            "enrich",
            "[enrich]\ngeoip_city = \"/geo/city.mmdb\"\ngeoip_asn = \"/geo/asn.mmdb\"\n\
             asn_table = \"/geo/ip2asn.tsv.gz\"\n",
        );
        let c = Config::load(Some(&path), no_env).unwrap();
        assert_eq!(
            c.enrich,
            EnrichConfig {
                geoip_city: Some("/geo/city.mmdb".into()),
                geoip_asn: Some("/geo/asn.mmdb".into()),
                asn_table: Some("/geo/ip2asn.tsv.gz".into()),
            }
        );
        let mut c = Config::load(
            Some(&path),
            env(&[
                ("PERISCOPE_ENRICH_GEOIP_CITY", "/env/city.mmdb"),
                ("PERISCOPE_ENRICH_ASN_TABLE", "/env/ip2asn.tsv"),
            ]),
        )
        .unwrap();
        assert_eq!(c.enrich.geoip_city, Some("/env/city.mmdb".into()));
        assert_eq!(c.enrich.geoip_asn, Some("/geo/asn.mmdb".into()));
        assert_eq!(c.enrich.asn_table, Some("/env/ip2asn.tsv".into()));
        c.apply_flag("enrich.geoip_asn", "--geoip-asn", "/flag/asn.mmdb")
            .unwrap();
        assert_eq!(c.enrich.geoip_asn, Some("/flag/asn.mmdb".into()));

        let e = error(None, &[("PERISCOPE_ENRICH_GEOIP_ASN", "  ")]);
        assert_eq!(
            e,
            "bad value for `enrich.geoip_asn` in the environment variable \
             PERISCOPE_ENRICH_GEOIP_ASN: expected the path of a MaxMind DB file with autonomous \
             systems (GeoLite2 ASN…), found \"  \""
        );
        let path = file("enrich-bad", "[enrich]\n\ngeoip_city = 5\n");
        let e = error(Some(&path), &[]);
        assert!(
            e.contains("`enrich.geoip_city`")
                && e.contains("(line 3)")
                && e.ends_with("found the integer 5"),
            "{e}"
        );
        let path = file("enrich-unknown", "[enrich]\ngeoip_country = \"/x.mmdb\"\n");
        let e = error(Some(&path), &[]);
        assert!(
            e.contains("key `enrich.geoip_country`")
                && e.ends_with("known keys: enrich.geoip_city, enrich.geoip_asn, enrich.asn_table"),
            "{e}"
        );
    }

    #[test]
    fn unreadable_and_malformed_files() {
        let missing = std::env::temp_dir().join("periscope-config-missing/none.toml");
        let e = error(Some(&missing), &[]);
        assert!(e.starts_with("cannot read the configuration file "), "{e}");
        let path = file("syntax", "listen = \n");
        let e = error(Some(&path), &[]);
        assert!(
            e.contains("is not valid TOML") && e.contains("line 1"),
            "{e}"
        );
    }
}
