//! The configuration shared by `serve`, `ingest` and `admin`: built-in defaults, overridden by
//! an optional TOML file, overridden by `PERISCOPE_*` environment variables, overridden by
//! command-line flags — and checked into the typed [`Config`] before any command runs, so a bad
//! setting stops start-up with a message naming the key, where the value came from and what
//! was expected.
//!
//! [`Config`] and its sections are plain structs that derive `serde::Deserialize` and, where a
//! command has flags for them, `clap::Args`: each key is a field, its name in the file is the
//! field's (or its `rename`), its variable is `PERISCOPE_` + section + name in upper case, its
//! parser and expectation are its `deserialize_with` function (`parse`), its flag is its `#[arg]`
//! (with the same parser), and its default is the struct's `Default`. The file and the
//! environment reach the derived code through one deserializer (`layers`) that knows where
//! each value came from, so an unknown key or a bad value is reported with its line or its
//! variable; a command takes the flags it names ([`ConfigArgs`]) and applies them with the
//! derived `update_from_arg_matches`. [`Config::load`] takes the environment as a lookup
//! function so tests pass a map instead of changing the process environment. User reference:
//! `docs/configuration.md`.

mod layers;
mod parse;
#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command, FromArgMatches};
use periscope_enrich::EnrichConfig;
use periscope_index::IndexConfig;
use periscope_state::{DEFAULT_CURSOR_LIFETIME_SECS, DailyLimit};
use serde::Deserialize;

pub use layers::{ConfigError, Origin};
use layers::{File, Sources};

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
/// The help heading of the configuration's flags.
const CONFIGURATION: &str = "Configuration";

/// Every setting of Periscope, validated. Fields without `#[arg]` have no flag; flags only
/// ever update a loaded configuration ([`ConfigArgs`]), never build one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(default)]
pub struct Config {
    /// Address to listen on [default: 127.0.0.1:8080]
    #[serde(deserialize_with = "parse::listen")]
    #[arg(id = "listen", long, value_name = "ADDR", required = false,
          help_heading = CONFIGURATION,
          value_parser = parse::flag("listen", parse::LISTEN, parse::text::<SocketAddr>))]
    pub listen: SocketAddr,
    /// Data directory, created when missing: the scan store DIR/scan.store, the index file and,
    /// without a database URL, the SQLite state database state.db [default: ./data]
    #[serde(deserialize_with = "parse::data")]
    #[arg(id = "data", long, value_name = "DIR", required = false,
          help_heading = CONFIGURATION,
          value_parser = parse::flag("data", parse::DATA, parse::path))]
    pub data: PathBuf,
    /// PostgreSQL state database, postgres://user@host/db [default: SQLite DIR/state.db]
    #[serde(deserialize_with = "parse::database_url")]
    #[arg(id = "database_url", long = "database-url", value_name = "URL", help_heading = CONFIGURATION,
          value_parser = parse::flag("database_url", parse::DATABASE_URL, parse::string))]
    pub database_url: Option<String>,
    /// `database_acquire_timeout_ms`: how long a request waits for a connection to a
    /// PostgreSQL state database before it answers 503 (default 2 s).
    #[serde(
        rename = "database_acquire_timeout_ms",
        deserialize_with = "parse::millis"
    )]
    #[arg(skip)]
    pub database_acquire_timeout: Duration,
    /// `log_format`: how log lines are written (default [`LogFormat::Text`]).
    #[serde(deserialize_with = "parse::log_format")]
    #[arg(skip)]
    pub log_format: LogFormat,
    /// `public_url`: where browsers reach the server, `http(s)://host[:port]`; `None` (the
    /// default) means `http://` + the actual listening address. The embedded sign-in
    /// service's issuer is this + `/auth`.
    #[serde(deserialize_with = "parse::public_url")]
    #[arg(skip)]
    pub public_url: Option<String>,
    /// `[limits]`: searches, rates, cursors and retention.
    #[arg(skip)]
    pub limits: Limits,
    /// `[dns]`: how domain queries are resolved.
    #[arg(skip)]
    pub dns: Dns,
    /// `[http]`: connection limits and timeouts of the HTTP server.
    #[arg(skip)]
    pub http: Http,
    /// `[signin]`: the embedded sign-in service.
    #[arg(skip)]
    pub signin: SignInSettings,
    /// `[web]`: the browser application's OpenID Connect provider.
    #[arg(skip)]
    pub web: WebSettings,
    /// `[enrich]`: the GeoIP and ASN files `ingest` and `convert` enrich scanner output from
    /// (`docs/enrichment.md`); all unset by default, and then nothing is enriched.
    #[command(flatten)]
    pub enrich: EnrichSettings,
    /// `[index]`: where the scan index lives; unset (the default), the embedded index in the
    /// data directory.
    #[command(flatten)]
    pub index: IndexSettings,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            data: PathBuf::from("./data"),
            database_url: None,
            database_acquire_timeout: periscope_state::DEFAULT_ACQUIRE_TIMEOUT,
            log_format: LogFormat::Text,
            public_url: None,
            limits: Limits::default(),
            dns: Dns::default(),
            http: Http::default(),
            signin: SignInSettings::default(),
            web: WebSettings::default(),
            enrich: EnrichSettings::default(),
            index: IndexSettings::default(),
        }
    }
}

/// The `[limits]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// `daily_searches`: the daily search limit given to new accounts (default 20, or
    /// `"unlimited"`).
    #[serde(deserialize_with = "parse::daily_searches")]
    pub daily_searches: DailyLimit,
    /// `searches_per_account`: searches one account may run at once (default 2).
    #[serde(deserialize_with = "parse::count")]
    pub searches_per_account: u32,
    /// `searches_total`: searches the whole service runs at once (default 32).
    #[serde(deserialize_with = "parse::count")]
    pub searches_total: u32,
    /// `search_timeout_ms`: the time budget of one search (default 10 s).
    #[serde(rename = "search_timeout_ms", deserialize_with = "parse::millis")]
    pub search_timeout: Duration,
    /// `cursor_lifetime_secs`: how long a search cursor stays usable (default 10 minutes).
    #[serde(rename = "cursor_lifetime_secs", deserialize_with = "parse::secs")]
    pub cursor_lifetime: Duration,
    /// `rate_per_sec`: requests per second one key may make to the free endpoints (default
    /// 10).
    #[serde(deserialize_with = "parse::count")]
    pub rate_per_sec: u32,
    /// `rate_burst`: the burst allowed above that rate (default 20).
    #[serde(deserialize_with = "parse::count")]
    pub rate_burst: u32,
    /// `max_search_hosts`: organization alone or country alone is declined by search
    /// (`query_too_broad`) above this many hosts (default 10,000).
    #[serde(deserialize_with = "parse::max_search_hosts")]
    pub max_search_hosts: u64,
    /// `retention_days`: observations older than this stop being current (default 30 days).
    #[serde(deserialize_with = "parse::retention_days")]
    pub retention_days: u32,
}

impl Default for Limits {
    fn default() -> Self {
        let index = IndexConfig::default();
        Limits {
            daily_searches: DailyLimit::DEFAULT,
            searches_per_account: 2,
            searches_total: 32,
            search_timeout: Duration::from_secs(10),
            cursor_lifetime: Duration::from_secs(DEFAULT_CURSOR_LIFETIME_SECS.unsigned_abs()),
            rate_per_sec: 10,
            rate_burst: 20,
            max_search_hosts: index.max_host_only_results,
            retention_days: u32::try_from(index.retention_secs / 86_400).unwrap_or(30),
        }
    }
}

/// The `[dns]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Dns {
    /// `servers`: the resolvers to ask; empty (the default) means the system's
    /// (`/etc/resolv.conf`).
    #[serde(deserialize_with = "parse::dns_servers")]
    pub servers: Vec<SocketAddr>,
    /// `timeout_ms`: how long one resolution may take (default 2 s).
    #[serde(rename = "timeout_ms", deserialize_with = "parse::millis")]
    pub timeout: Duration,
}

impl Default for Dns {
    fn default() -> Self {
        Dns {
            servers: Vec::new(),
            timeout: Duration::from_secs(2),
        }
    }
}

/// The `[http]` section: what a connection may hold and for how long.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Http {
    /// `header_timeout_ms`: a request's headers must arrive within this (default 10 s).
    #[serde(rename = "header_timeout_ms", deserialize_with = "parse::millis")]
    pub header_timeout: Duration,
    /// `idle_timeout_secs`: a kept-alive connection with no request is closed after this
    /// (default 60 s).
    #[serde(rename = "idle_timeout_secs", deserialize_with = "parse::secs")]
    pub idle_timeout: Duration,
    /// `body_timeout_ms`: a request's body must arrive within this (default 30 s).
    #[serde(rename = "body_timeout_ms", deserialize_with = "parse::millis")]
    pub body_timeout: Duration,
    /// `max_connections`: connections open at once (default 10,000, and never more than the
    /// descriptor limit leaves room for).
    #[serde(deserialize_with = "parse::count")]
    pub max_connections: u32,
    /// `trusted_proxies`: reverse proxies whose `X-Forwarded-For` names the client (default
    /// none).
    #[serde(deserialize_with = "parse::trusted_proxies")]
    pub trusted_proxies: Vec<periscope_api::forwarded::Cidr>,
}

impl Default for Http {
    fn default() -> Self {
        Http {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            max_connections: 10_000,
            trusted_proxies: Vec::new(),
        }
    }
}

/// The `[signin]` section: the sign-in service `serve` embeds under `/auth`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SignInSettings {
    /// `smtp_host`: an SMTP relay for the registration e-mail; `None` (the default) writes
    /// messages into `DATA/outbox` and the link into the log.
    #[serde(deserialize_with = "parse::smtp_host")]
    pub smtp_host: Option<String>,
    /// `smtp_port`: the relay's port (default 25).
    #[serde(deserialize_with = "parse::smtp_port")]
    pub smtp_port: Option<u16>,
    /// `smtp_tls`: how the relay connection is protected (default opportunistic STARTTLS).
    #[serde(deserialize_with = "parse::smtp_tls")]
    pub smtp_tls: periscope_signin::SmtpTls,
    /// `smtp_username`: the login for SMTP AUTH; its password comes from
    /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` or `smtp_password_file`, never from the file.
    #[serde(deserialize_with = "parse::smtp_username")]
    pub smtp_username: Option<String>,
    /// `smtp_password_file`: a file holding the SMTP password (one line).
    #[serde(deserialize_with = "parse::smtp_password_file")]
    pub smtp_password_file: Option<PathBuf>,
    /// `smtp_ca_file`: PEM certificates trusted for the relay besides the platform's roots.
    #[serde(deserialize_with = "parse::ca_file")]
    pub smtp_ca_file: Option<PathBuf>,
    /// `mail_from`: the sender (default `Periscope <no-reply@localhost>`).
    #[serde(deserialize_with = "parse::mail_from")]
    pub mail_from: Option<String>,
    /// `terms_version`: the dated terms version recorded at registration (default the
    /// sign-in crate's).
    #[serde(deserialize_with = "parse::terms_version")]
    pub terms_version: Option<String>,
    /// `client_ip_header`: the header a trusted reverse proxy puts the client address in
    /// (`x-forwarded-for`); unset, the connection's peer address (the proxy's, behind one).
    #[serde(deserialize_with = "parse::client_ip_header")]
    pub client_ip_header: Option<String>,
    /// `database_acquire_timeout_ms`: how long a sign-in request waits for a database
    /// connection (default the sign-in crate's, 2000).
    #[serde(deserialize_with = "parse::signin_acquire_timeout")]
    pub database_acquire_timeout_ms: Option<u64>,
    /// `PERISCOPE_SIGNIN_SMTP_PASSWORD` (environment only, never a key of the file).
    #[serde(skip)]
    pub smtp_password: Option<Secret>,
}

/// The `[web]` section: which OpenID Connect provider the browser application signs in with.
/// All unset (the default): the embedded sign-in service, with a client configured
/// automatically.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WebSettings {
    /// `issuer`: an external provider's issuer URL; the embedded service is then not mounted.
    #[serde(deserialize_with = "parse::issuer")]
    pub issuer: Option<String>,
    /// `client_id`: the application's client id there.
    #[serde(deserialize_with = "parse::client_id")]
    pub client_id: Option<String>,
    /// `client_secret`: the application's client secret there.
    #[serde(deserialize_with = "parse::client_secret")]
    pub client_secret: Option<String>,
    /// `ca_file`: PEM certificates trusted for an `https` provider besides the platform's
    /// roots.
    #[serde(deserialize_with = "parse::ca_file")]
    pub ca_file: Option<PathBuf>,
    /// `organization_claim`: the claim carrying the organisation (default `org_name`).
    #[serde(deserialize_with = "parse::organization_claim")]
    pub organization_claim: Option<String>,
    /// `default_organization`: the organisation when the provider sends none.
    #[serde(deserialize_with = "parse::default_organization")]
    pub default_organization: Option<String>,
    /// `allowed_email_domains`: the e-mail domains that may sign in; empty: any.
    #[serde(deserialize_with = "parse::allowed_email_domains")]
    pub allowed_email_domains: Vec<String>,
}

/// The `[enrich]` section: the files `ingest` and `convert` enrich scanner output from
/// ([`EnrichSettings::files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(default)]
pub struct EnrichSettings {
    /// A MaxMind DB file with locations (GeoLite2/GeoIP2 City or Country, DB-IP, IPinfo
    /// Lite): fills host.location of observations that carry none
    #[serde(deserialize_with = "parse::geoip_city")]
    #[arg(id = "enrich.geoip_city", long = "geoip-city", value_name = "FILE",
          help_heading = "Enrichment",
          value_parser = parse::flag("enrich.geoip_city", parse::GEOIP_CITY, parse::path))]
    pub geoip_city: Option<PathBuf>,
    /// A MaxMind DB file with autonomous systems (GeoLite2 ASN, DB-IP ASN, IPinfo Lite):
    /// fills host.asn.network and the provider
    #[serde(deserialize_with = "parse::geoip_asn")]
    #[arg(id = "enrich.geoip_asn", long = "geoip-asn", value_name = "FILE",
          help_heading = "Enrichment",
          value_parser = parse::flag("enrich.geoip_asn", parse::GEOIP_ASN, parse::path))]
    pub geoip_asn: Option<PathBuf>,
    /// An iptoasn TSV table (range_start range_end asn country organisation, plain or gzip),
    /// asked for ASNs after --geoip-asn
    #[serde(deserialize_with = "parse::asn_table")]
    #[arg(id = "enrich.asn_table", long = "asn-table", value_name = "FILE",
          help_heading = "Enrichment",
          value_parser = parse::flag("enrich.asn_table", parse::ASN_TABLE, parse::path))]
    pub asn_table: Option<PathBuf>,
}

impl EnrichSettings {
    /// The files, as the enrich crate opens them.
    pub fn files(&self) -> EnrichConfig {
        EnrichConfig {
            geoip_city: self.geoip_city.clone(),
            geoip_asn: self.geoip_asn.clone(),
            asn_table: self.asn_table.clone(),
        }
    }
}

/// The `[index]` section: a ClickHouse scan index instead of the embedded one
/// (`docs/scale-out.md`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, clap::Args)]
#[serde(default)]
pub struct IndexSettings {
    /// The ClickHouse index, `clickhouse://[USER@]HOST[:PORT]/DATABASE[?cluster=NAME]`, instead
    /// of the embedded store
    #[serde(deserialize_with = "parse::index_url")]
    #[arg(id = "index.url", long = "index", value_name = "URL", help_heading = CONFIGURATION,
          value_parser = parse::flag("index.url", parse::INDEX_URL, parse::location))]
    pub url: Option<periscope_clickhouse::Location>,
    /// `ca_file`: PEM certificates trusted for a `clickhouse+https` server besides the
    /// platform's roots.
    #[serde(deserialize_with = "parse::index_ca_file")]
    #[arg(skip)]
    pub ca_file: Option<PathBuf>,
    /// `password_file`: a file holding the ClickHouse user's password (its first line).
    #[serde(deserialize_with = "parse::index_password_file")]
    #[arg(skip)]
    pub password_file: Option<PathBuf>,
    /// `timeout_ms`: how long one statement may take before the request answers 503
    /// (default 10,000).
    #[serde(rename = "timeout_ms", deserialize_with = "parse::millis")]
    #[arg(skip)]
    pub timeout: Duration,
    /// `memory_limit_mb`: the most memory one statement may use on each ClickHouse server,
    /// in bytes (default 4 GiB); `None` (`0` in the file): the server's settings profile
    /// decides.
    #[serde(rename = "memory_limit_mb", deserialize_with = "parse::memory_limit")]
    #[arg(skip)]
    pub memory_limit: Option<u64>,
    /// `PERISCOPE_INDEX_PASSWORD` (environment only, never a key of the file).
    #[serde(skip)]
    #[arg(skip)]
    pub password: Option<Secret>,
}

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            url: None,
            ca_file: None,
            password_file: None,
            timeout: Duration::from_secs(10),
            memory_limit: Some(DEFAULT_INDEX_MEMORY_LIMIT_MB << 20),
            password: None,
        }
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (`text`).
    #[default]
    Text,
    /// One JSON object per line (`json`).
    Json,
}

impl Config {
    /// The defaults, overridden by `file` (when given), overridden by the environment:
    /// `env(name)` is the value of the variable `name`, if set (pass [`process_env`] for the
    /// real one). A variable set to the empty string counts as unset. The file and then the
    /// environment are each checked alone before they are read together, so a bad value is
    /// reported even where a variable overrides it.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let text = file.map(File::read).transpose()?;
        let file = file
            .zip(text.as_deref())
            .map(|(path, text)| File::parse(path, text))
            .transpose()?;
        let env = |name: &str| env(name).filter(|v| !v.is_empty());
        let env: layers::Env<'_> = &env;
        if let Some(file) = &file {
            layers::read(Sources {
                file: Some(file),
                env: None,
            })?;
        }
        layers::read(Sources {
            file: None,
            env: Some(env),
        })?;
        let mut config = layers::read(Sources {
            file: file.as_ref(),
            env: Some(env),
        })?;
        // Passwords are secrets: the environment only, never a key of the file.
        config.signin.smtp_password = env(SMTP_PASSWORD_ENV).map(Secret);
        config.index.password = env(INDEX_PASSWORD_ENV).map(Secret);
        Ok(config)
    }

    /// The scan index settings these limits imply.
    pub fn index_config(&self) -> IndexConfig {
        IndexConfig {
            retention_secs: i64::from(self.limits.retention_days) * 86_400,
            max_host_only_results: self.limits.max_search_hosts,
        }
    }

    /// The flags [`Config`] declares, each with its key as its id (`index.url`).
    fn flags() -> Command {
        <Config as clap::Args>::augment_args(Command::new("periscope").no_binary_name(true))
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

/// The keys whose flags a command takes (`["data", "database_url"]`).
pub trait Flags {
    /// The keys, each the id of a flag [`Config`] declares.
    const KEYS: &'static [&'static str];
}

/// The configuration arguments of a command: `--config FILE` (or `PERISCOPE_CONFIG`) and the
/// flags of the keys `F` names, as [`Config`] declares them, each with a help that names the
/// key and the variable it overrides. `global`, so they may stand before or after a
/// subcommand.
#[derive(Debug, Clone)]
pub struct ConfigArgs<F> {
    /// Configuration file (TOML).
    pub config: Option<PathBuf>,
    /// The flags given, as words of a command line (`--data`, `DIR`).
    given: Vec<OsString>,
    /// The keys of the flags given.
    keys: Vec<&'static str>,
    flags: PhantomData<fn() -> F>,
}

impl<F> Default for ConfigArgs<F> {
    fn default() -> Self {
        ConfigArgs {
            config: None,
            given: Vec::new(),
            keys: Vec::new(),
            flags: PhantomData,
        }
    }
}

impl<F: Flags> clap::Args for ConfigArgs<F> {
    fn augment_args(command: Command) -> Command {
        let declared = Config::flags();
        let config = Arg::new("config")
            .long("config")
            .value_name("FILE")
            .env(CONFIG_FILE_ENV)
            .value_parser(clap::value_parser!(PathBuf))
            .global(true)
            .help_heading(CONFIGURATION)
            .help("Configuration file (TOML); see docs/configuration.md");
        let flags = declared
            .get_arguments()
            .filter(|arg| F::KEYS.contains(&arg.get_id().as_str()))
            .map(|arg| {
                let key = arg.get_id().as_str();
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                let env = layers::env_name(key);
                let (what, default) = help.split_once(" [default: ").unwrap_or((&help, ""));
                let default = if default.is_empty() {
                    String::new()
                } else {
                    format!(" [default: {default}")
                };
                arg.clone()
                    .global(true)
                    .help(format!("{what} (overrides `{key}` and {env}){default}"))
            });
        command.arg(config).args(flags)
    }

    fn augment_args_for_update(command: Command) -> Command {
        Self::augment_args(command)
    }
}

impl<F: Flags> FromArgMatches for ConfigArgs<F> {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = ConfigArgs {
            config: matches.get_one::<PathBuf>("config").cloned(),
            ..ConfigArgs::default()
        };
        let declared = Config::flags();
        for arg in declared.get_arguments() {
            let key = arg.get_id().as_str();
            let Some(key) = F::KEYS.iter().copied().find(|k| *k == key) else {
                continue;
            };
            if matches.value_source(key) != Some(ValueSource::CommandLine) {
                continue;
            }
            let value = matches.get_raw(key).and_then(|mut values| values.next());
            if let (Some(long), Some(value)) = (arg.get_long(), value) {
                args.given.push(format!("--{long}").into());
                args.given.push(value.to_owned());
                args.keys.push(key);
            }
        }
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl<F> ConfigArgs<F> {
    /// The configuration: defaults, file, process environment, then these flags.
    pub fn load(&self) -> Result<Config, ConfigError> {
        self.load_with(process_env)
    }

    /// As [`ConfigArgs::load`], with the environment given by `env`.
    pub fn load_with(&self, env: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::load(self.config.as_deref(), env)?;
        // The command parsed the flags with their keys' parsers already; parsed again by
        // `Config`'s own declaration, the derived update sets exactly the keys given.
        let refused = |e: clap::Error| ConfigError::Invalid(e.to_string());
        let matches = Config::flags()
            .try_get_matches_from(&self.given)
            .map_err(refused)?;
        config.update_from_arg_matches(&matches).map_err(refused)?;
        Ok(config)
    }

    /// Whether the flag of `key` was given.
    pub fn given(&self, key: &str) -> bool {
        self.keys.contains(&key)
    }
}

/// One key as the reference and the command line name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyReference {
    /// Its dotted name (`limits.daily_searches`).
    pub key: String,
    /// Its environment variable (`PERISCOPE_LIMITS_DAILY_SEARCHES`).
    pub env: String,
    /// The command-line flag that sets it (`--data`), in whichever commands take it.
    pub flag: Option<String>,
}

/// Every key, in the order of `docs/configuration.md` (the order of the fields): what the
/// commands' help and the reference are checked against.
pub fn reference() -> Vec<KeyReference> {
    let declared = Config::flags();
    let flag = |key: &str| {
        declared
            .get_arguments()
            .find(|arg| arg.get_id() == key)
            .and_then(Arg::get_long)
            .map(|long| format!("--{long}"))
    };
    let mut keys = Vec::new();
    let mut push = |section: Option<&str>, field: &str| {
        let key = layers::dotted(section, field);
        keys.push(KeyReference {
            flag: flag(&key),
            env: layers::env_name(&key),
            key,
        });
    };
    let shape = layers::shape();
    for (field, _) in shape.fields.iter().filter(|(_, inner)| inner.is_none()) {
        push(None, field);
    }
    for (section, inner) in &shape.fields {
        for field in inner.iter().copied().flatten() {
            push(Some(section), field);
        }
    }
    keys
}
