//! The Periscope server as a library: everything `periscope serve` wires together — the JSON
//! API under `/v1`, the OpenAPI document and the operational endpoints, the browser
//! application at `/` and, in the embedded default, the sign-in service under `/auth` — over
//! a scan index and a state database. The `periscope serve` command is glue (arguments →
//! [`Config`] → [`Server::start`]); tests start servers in process the same way.
//!
//! [`Server::start`] creates the data directory 0700 (it holds the embedded sign-in client's
//! secret and, without `database_url`, `state.db`), raises the descriptor limit to the hard
//! limit, opens the scan index, the state database and the DNS resolver, binds the listener
//! and returns a [`RunningServer`] (its address; [`RunningServer::shutdown`] stops accepting
//! connections, lets requests in flight finish and closes everything).
//!
//! The scan index is one of two:
//! - **embedded** (no `[index] url`): `LiveIndex` over the store in the data directory (load
//!   the index file, or build it). `periscope ingest` adds data while the server runs through
//!   the ingest socket `DIR/ingest.sock` ([`ingest_socket`]), and a background thread makes
//!   new data searchable every second: a delta over the records written since the base index
//!   was built, and now and then a full rebuild off to the side. `/metrics` records the time of
//!   each ingest batch and of each refresh.
//! - **ClickHouse** (`[index] url = "clickhouse://…"`, [`clickhouse`]): every search goes to
//!   the cluster; the server keeps no scan data, no snapshot and no refresher, so with a
//!   PostgreSQL `database_url` any number of instances serve the same data and allowances
//!   (cursors, allowances, sessions live in the state database). `/readyz` follows
//!   ClickHouse's reachability; a search while ClickHouse is down is 503
//!   `service_unavailable` with nothing charged and the cursor not consumed, and searches
//!   answer again as soon as it returns. Data goes in with `periscope ingest --index URL`;
//!   the ingest socket is still bound so that `periscope ingest DIR` aimed at this server is
//!   refused with that advice instead of writing an embedded store nobody reads. `--demo`
//!   ([`Options::demo`]) is refused: the demo dataset is generated into the embedded store.
//!
//! Connections are served by `periscope_api::server` under the `[http]` deadlines and a
//! connection cap; responses are gzip-compressed for clients that ask. Dead sessions and
//! sign-in records are purged hourly. No log line carries a request header, body, key,
//! password or cookie.
//!
//! Modules: [`config`] (the configuration every command reads), [`ingest_socket`] (both sides
//! of the embedded server's ingest socket), [`lines`] (the observation line reader `ingest`,
//! `validate` and the socket share), [`clickhouse`] (the ClickHouse index and its probe).

pub mod clickhouse;
pub mod config;
pub mod ingest_socket;
pub mod lines;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use periscope_api::{App, IndexGauge, IndexProbe, RateLimit, server};
use periscope_index::{LiveIndex, Opened, ScanIndex};
use periscope_model::Timestamp;
use periscope_resolve::{DnsResolver, Resolver};
use periscope_service::{Clock, Limits, SearchService, SystemClock, error_chain};
use periscope_signin::{ClientConfig, Config as SignInConfig, MailConfig, SignIn};
use periscope_state::{DailyLimit, Email, NewAccount, State};
use periscope_web::{Web, WebConfig};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use config::Config;

/// How often dead sessions and sign-in records are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(3600);
/// The embedded sign-in service's client id for the browser application.
pub const WEB_CLIENT_ID: &str = "periscope-web";
/// The file holding that client's secret, in the data directory.
const WEB_SECRET_FILE: &str = "web-client-secret";
/// How often the refresher looks for new data (a look that finds none costs nothing; a delta
/// refresh after a batch of 20,000 observations takes about 0.1 s at 1M hosts).
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// The demo account.
pub const DEMO_EMAIL: &str = "demo@periscope.example";
/// The demo account's organisation.
const DEMO_ORG: &str = "Periscope demo";
/// The scan store file inside the data directory (the embedded index).
pub const STORE_FILE: &str = "scan.store";

/// How a server starts beyond its configuration.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Serve the demo: every page says the data is synthetic. Refused with a ClickHouse
    /// index. (The demo data itself is loaded by the caller before start.)
    pub demo: bool,
    /// Create the demo account if missing and a new API key for it
    /// ([`RunningServer::demo_key`]).
    pub demo_key: bool,
}

/// The server: see the crate documentation.
#[derive(Debug)]
pub struct Server;

/// A server accepting connections.
#[derive(Debug)]
pub struct RunningServer {
    address: SocketAddr,
    public_url: String,
    demo_key: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<()>>,
}

impl RunningServer {
    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Where browsers reach it (`public_url`, else `http://ADDRESS`).
    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    /// The demo key created at start ([`Options::demo_key`]); shown once.
    pub fn demo_key(&self) -> Option<&str> {
        self.demo_key.as_deref()
    }

    /// Serves until `signal` completes, then shuts down as [`RunningServer::shutdown`] does.
    pub async fn run_until(self, signal: impl Future<Output = ()>) -> Result<()> {
        tokio::pin!(signal);
        let mut this = self;
        tokio::select! {
            () = &mut signal => this.shutdown().await,
            joined = &mut this.task => {
                joined.context("the server task failed")?
            }
        }
    }

    /// Stops accepting connections, lets requests in flight finish, then closes the index,
    /// the sign-in service and the state database.
    pub async fn shutdown(mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.context("the server task failed")?
    }
}

/// The index a server searches, with what runs beside it.
enum Engine {
    /// The embedded index in the data directory.
    Embedded {
        live: Arc<LiveIndex>,
        /// Started once the metrics it reports to exist.
        refresher: Option<std::thread::JoinHandle<()>>,
        stop: Arc<AtomicBool>,
    },
    /// A ClickHouse cluster, probed for readiness.
    ClickHouse { probe_task: JoinHandle<()> },
}

impl Server {
    /// Opens everything `config` names and starts serving; see the crate documentation.
    pub async fn start(config: Config, options: Options) -> Result<RunningServer> {
        if options.demo && config.index.url.is_some() {
            return Err(anyhow!(
                "--demo generates its dataset into the embedded index, but [index] url names a \
                 ClickHouse index; load data there with `periscope ingest --index URL` (for \
                 synthetic data, `periscope synth … | periscope ingest --index URL -`) and \
                 serve without --demo"
            ));
        }
        let data = config.data.clone();
        let descriptors = raise_descriptor_limit();
        private_data_dir(&data)?;
        let clock = Arc::new(SystemClock);
        let index_config = config.index_config();

        let (engine, index, probe): (Engine, Arc<dyn ScanIndex>, Arc<dyn IndexProbe>) =
            match &config.index.url {
                None => {
                    let store_path = data.join(STORE_FILE);
                    let open_path = store_path.clone();
                    let now = clock.now();
                    let (live, opened) = tokio::task::spawn_blocking(move || {
                        LiveIndex::open(&open_path, index_config, now)
                    })
                    .await
                    .context("the index thread failed")?
                    .with_context(|| {
                        format!("cannot open the scan index at {}", store_path.display())
                    })?;
                    match opened {
                        Opened::Loaded => tracing::info!("scan index loaded from its index file"),
                        Opened::Built { why, saved } => {
                            tracing::info!(reason = %why, "scan index built");
                            if let Err(e) = saved {
                                tracing::warn!(error = %e, "the index file could not be saved; the next start builds again");
                            }
                        }
                    }
                    let live = Arc::new(live);
                    let engine = Engine::Embedded {
                        live: Arc::clone(&live),
                        refresher: None,
                        stop: Arc::new(AtomicBool::new(false)),
                    };
                    (
                        engine,
                        Arc::clone(&live) as _,
                        Arc::new(LiveProbe(Arc::clone(&live))) as _,
                    )
                }
                Some(location) => {
                    let (location, settings) = (location.clone(), config.index.clone());
                    let (index, client, location, checked) =
                        tokio::task::spawn_blocking(move || {
                            let (index, client) =
                                clickhouse::connect(&location, &settings, index_config)?;
                            let checked = clickhouse::check_schema(&client, &location, &settings);
                            anyhow::Ok((index, client, location, checked))
                        })
                        .await
                        .context("the index thread failed")?
                        .context("cannot set up the ClickHouse index")?;
                    if let Err(e @ clickhouse::SchemaCheckError::Refused(_)) = checked {
                        return Err(
                            anyhow::Error::new(e).context("refusing to serve the ClickHouse index")
                        );
                    }
                    tracing::info!(index = %location, "the scan index is ClickHouse");
                    let probe = Arc::new(clickhouse::ClickHouseProbe::default());
                    let first = {
                        let (probe, client, location) =
                            (Arc::clone(&probe), client.clone(), location.clone());
                        tokio::task::spawn_blocking(move || probe.measure(&client, &location))
                            .await
                            .context("the index thread failed")?
                    };
                    if let Err(e) = checked.map_err(anyhow::Error::new).and(first) {
                        tracing::error!(error = %format!("{e:#}"),
                            "the ClickHouse index cannot be used yet; /readyz says \
                             index_unavailable until it can");
                    }
                    let probe_task = tokio::spawn(Arc::clone(&probe).watch(client, location));
                    (
                        Engine::ClickHouse { probe_task },
                        Arc::new(index) as _,
                        probe as _,
                    )
                }
            };

        let state = State::open_configured_with(
            config.database_url.as_deref(),
            &data,
            config.database_acquire_timeout,
        )
        .await
        .context("cannot open the state database")?;
        let demo_key = if options.demo_key {
            Some(create_demo_key(&state, clock.now()).await?)
        } else {
            None
        };

        let resolver: Arc<dyn Resolver> = Arc::new(if config.dns.servers.is_empty() {
            DnsResolver::system().context(
                "cannot read the system DNS configuration; set dns.servers (see docs/configuration.md)",
            )?
        } else {
            DnsResolver::with_servers(&config.dns.servers, config.dns.timeout)
                .context("cannot set up the DNS resolver")?
        });
        let limits = Limits {
            searches_per_account: config.limits.searches_per_account,
            searches_total: config.limits.searches_total,
            time_budget: config.limits.search_timeout,
            cursor_lifetime: config.limits.cursor_lifetime,
        };
        let service = SearchService::builder(index, state.clone(), resolver)
            .limits(limits)
            .clock(clock.clone())
            .build();
        let app = App::new(
            service.clone(),
            RateLimit::new(config.limits.rate_per_sec, config.limits.rate_burst),
            probe,
        );
        let metrics = Arc::clone(&app.metrics);

        let engine = match engine {
            Engine::Embedded { live, stop, .. } => {
                let (clock, metrics) = (clock.clone(), Arc::clone(&metrics));
                let refresher = live
                    .spawn_refresher(
                        REFRESH_EVERY,
                        move || clock.now(),
                        Arc::clone(&stop),
                        move |kind, took| metrics.observe_refresh(kind.as_str(), took),
                        |e| tracing::error!(error = %error_chain(e), "index refresh failed"),
                    )
                    .context("cannot start the index refresher")?;
                Engine::Embedded {
                    live,
                    refresher: Some(refresher),
                    stop,
                }
            }
            other => other,
        };

        let (ingest_listener, socket_path) = ingest_socket::bind(&data)?;
        let ingest_task = match &engine {
            Engine::Embedded { live, .. } => {
                let clock = clock.clone();
                tokio::spawn(ingest_socket::serve(
                    ingest_listener,
                    Arc::clone(live),
                    Arc::new(move || clock.now()),
                    {
                        let metrics = Arc::clone(&metrics);
                        Arc::new(move |elapsed| metrics.observe_ingest(elapsed))
                    },
                ))
            }
            Engine::ClickHouse { .. } => {
                let location = config
                    .index
                    .url
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                tokio::spawn(ingest_socket::refuse(
                    ingest_listener,
                    format!(
                        "this server's scan index is ClickHouse ({location}); ingest with \
                         `periscope ingest --index {location} …`"
                    ),
                ))
            }
        };

        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let public_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{address}"));
        // The search bar runs the API's service: one allowance for both channels. Every page
        // of the demo says the data is synthetic (DECISIONS.md).
        let (browser, signin) =
            browser_app(&config, &public_url, address, &state, service, options.demo).await?;
        let mut router = periscope_api::router(app).merge(browser.router());
        if let Some(signin) = &signin {
            router = router.nest(signin.mount_path(), signin.router());
        }
        // gzip for clients that ask (`Accept-Encoding: gzip`); bodies under 32 bytes, images
        // and event streams are sent as they are.
        router = router.layer(tower_http::compression::CompressionLayer::new());
        let purger = {
            let (browser, signin) = (browser.clone(), signin.clone());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(PURGE_EVERY);
                loop {
                    every.tick().await;
                    if let Err(e) = browser.purge().await {
                        tracing::warn!(error = %error_chain(&e), "cannot purge web sessions");
                    }
                    if let Some(signin) = &signin
                        && let Err(e) = signin.purge().await
                    {
                        tracing::warn!(error = %error_chain(&e), "cannot purge sign-in records");
                    }
                }
            })
        };
        let settings = server::Settings {
            header_timeout: config.http.header_timeout,
            idle_timeout: config.http.idle_timeout,
            body_timeout: config.http.body_timeout,
            max_connections: server::connection_cap(config.http.max_connections, descriptors),
            hsts: public_url.starts_with("https://"),
            trusted_proxies: config.http.trusted_proxies.clone().into(),
        };
        tracing::info!(address = %address, data = %data.display(), public_url = %public_url,
            descriptors, max_connections = settings.max_connections, "listening");

        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                // A dropped sender (the RunningServer dropped without shutdown) stops too.
                let _ = stop_rx.await;
            };
            server::serve(listener, router, settings, shutdown).await;
            purger.abort();
            if let Some(signin) = &signin {
                signin.close().await;
            }
            tracing::info!("shutting down");
            ingest_task.abort();
            remove_socket(&socket_path);
            match engine {
                Engine::Embedded {
                    refresher, stop, ..
                } => {
                    stop.store(true, Ordering::SeqCst);
                    if let Some(refresher) = refresher {
                        let _ = tokio::task::spawn_blocking(move || refresher.join()).await;
                    }
                }
                Engine::ClickHouse { probe_task } => probe_task.abort(),
            }
            state.close().await;
            Ok(())
        });
        Ok(RunningServer {
            address,
            public_url,
            demo_key,
            stop: Some(stop_tx),
            task,
        })
    }
}

fn remove_socket(path: &PathBuf) {
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(error = %e, socket = %path.display(), "cannot remove the ingest socket");
    }
}

/// The embedded index as `/readyz` and `/metrics` see it.
struct LiveProbe(Arc<LiveIndex>);

impl IndexProbe for LiveProbe {
    fn gauge(&self) -> IndexGauge {
        let index = self.0.current();
        let stats = index.stats();
        IndexGauge {
            hosts: stats.hosts,
            services: stats.services,
            generation: index.generation(),
        }
    }

    fn ready(&self) -> bool {
        true
    }
}

/// Raises the soft descriptor limit to the hard one and returns the limit in force.
fn raise_descriptor_limit() -> u64 {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => limit,
        Err(e) => {
            let (soft, _) = rlimit::getrlimit(rlimit::Resource::NOFILE).unwrap_or((1024, 1024));
            tracing::warn!(error = %e, limit = soft, "cannot raise the descriptor limit");
            soft
        }
    }
}

/// Creates the data directory private (0700); warns when an existing one is open to others.
pub fn private_data_dir(data: &Path) -> Result<()> {
    use periscope_state::files;
    files::create_private_dir(data)
        .with_context(|| format!("cannot create the data directory {}", data.display()))?;
    if files::group_or_other_access(data).unwrap_or(false) {
        tracing::warn!(data = %data.display(),
            "the data directory is open to other users; it holds secrets (state.db): chmod 700 it");
    }
    Ok(())
}

/// The browser application, and the embedded sign-in service it signs in with unless `[web]`
/// names an external provider.
async fn browser_app(
    config: &Config,
    public_url: &str,
    address: SocketAddr,
    state: &State,
    search: periscope_service::SearchService,
    demo: bool,
) -> Result<(Web, Option<SignIn>)> {
    let clock: Arc<dyn periscope_model::clock::Clock> =
        Arc::new(periscope_model::clock::SystemClock);
    if let Some(issuer) = &config.web.issuer {
        let (Some(id), Some(secret)) = (&config.web.client_id, &config.web.client_secret) else {
            return Err(anyhow!(
                "`web.issuer` names an external sign-in provider, so `web.client_id` and \
                 `web.client_secret` are required too (see docs/configuration.md)"
            ));
        };
        let mut web_config = WebConfig::new(public_url, issuer, id, secret);
        web_config.ca_file = config.web.ca_file.clone();
        if let Some(claim) = &config.web.organization_claim {
            web_config.organization_claim = claim.clone();
        }
        web_config.default_organization = config.web.default_organization.clone();
        web_config.allowed_email_domains = config.web.allowed_email_domains.clone();
        web_config.demo = demo;
        let web = Web::new(web_config, state.clone(), clock, Some(search))?;
        tracing::info!(issuer = %issuer, "the web application signs in with an external provider");
        if config.signin.smtp_host.is_some() || config.signin.mail_from.is_some() {
            tracing::warn!(
                "[signin] mail settings are not used: web.issuer names an external provider, so \
                 the embedded sign-in service (registration and its e-mail) is not mounted"
            );
        }
        return Ok((web, None));
    }
    let data = &config.data;
    let secret = web_client_secret(data)?;
    let database = match &config.database_url {
        Some(url) => url.clone(),
        None => data.join("state.db").display().to_string(),
    };
    let mail = mail_config(config)?;
    let issuer = format!("{public_url}/auth");
    let mut web_config = WebConfig::new(public_url, &issuer, WEB_CLIENT_ID, &secret);
    // The web application reaches the embedded provider on the listening address, whatever
    // the public URL (a proxy's, perhaps https) says.
    let mut internal = address;
    if internal.ip().is_unspecified() {
        internal.set_ip(match internal.ip() {
            std::net::IpAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            std::net::IpAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    web_config.provider_url = Some(format!("http://{internal}"));
    web_config.demo = demo;
    let mut signin_config = SignInConfig::new(&issuer, database, mail);
    signin_config.clients.push(ClientConfig {
        client_id: WEB_CLIENT_ID.into(),
        client_secret: secret,
        redirect_uris: vec![web_config.callback_url()],
        post_logout_redirect_uris: vec![web_config.signed_out_url()],
    });
    signin_config.application_url = Some(format!("{public_url}/"));
    signin_config.demo = demo;
    apply_signin_settings(config, &mut signin_config);
    let signin = SignIn::open(signin_config)
        .await
        .context("cannot start the sign-in service")?;
    let web = Web::new(web_config, state.clone(), clock, Some(search))?;
    Ok((web, Some(signin)))
}

/// Where the sign-in service's registration e-mail goes: the `[signin]` SMTP relay (with its
/// TLS mode, login and CA file), or `DATA/outbox`.
pub fn mail_config(config: &Config) -> Result<MailConfig> {
    let signin = &config.signin;
    let Some(host) = &signin.smtp_host else {
        return Ok(MailConfig::Outbox {
            dir: config.data.join("outbox"),
        });
    };
    let credentials = match &signin.smtp_username {
        None => None,
        Some(username) => Some(periscope_signin::SmtpCredentials {
            username: username.clone(),
            password: smtp_password(config)?,
        }),
    };
    Ok(MailConfig::Smtp {
        host: host.clone(),
        port: signin.smtp_port.unwrap_or(25),
        timeout_secs: 10,
        tls: signin.smtp_tls,
        credentials,
        ca_file: signin.smtp_ca_file.clone(),
    })
}

/// The relay password: `PERISCOPE_SIGNIN_SMTP_PASSWORD`, or the first line of
/// `smtp_password_file`; exactly one of them.
fn smtp_password(config: &Config) -> Result<String> {
    let env = config::SMTP_PASSWORD_ENV;
    match (
        &config.signin.smtp_password,
        &config.signin.smtp_password_file,
    ) {
        (Some(password), None) => Ok(password.0.clone()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).with_context(|| {
                format!("cannot read signin.smtp_password_file {}", path.display())
            })?;
            let password = text.lines().next().unwrap_or("").to_owned();
            if password.is_empty() {
                return Err(anyhow!(
                    "signin.smtp_password_file {} is empty: its first line is the relay password",
                    path.display()
                ));
            }
            Ok(password)
        }
        (Some(_), Some(_)) => Err(anyhow!(
            "the SMTP password is given twice ({env} and signin.smtp_password_file): set one"
        )),
        (None, None) => Err(anyhow!(
            "signin.smtp_username is set but no password: set {env} or signin.smtp_password_file"
        )),
    }
}

/// The `[signin]` settings beyond the mail relay.
pub fn apply_signin_settings(config: &Config, signin: &mut SignInConfig) {
    if let Some(from) = &config.signin.mail_from {
        signin.mail_from = from.clone();
    }
    if let Some(version) = &config.signin.terms_version {
        signin.terms_version = version.clone();
    }
    signin.client_ip_header = config.signin.client_ip_header.clone();
    if let Some(ms) = config.signin.database_acquire_timeout_ms {
        signin.database_acquire_timeout_ms = ms;
    }
}

/// The embedded client's secret: generated once into `DATA/web-client-secret` (mode 0600)
/// and read back at every start.
pub fn web_client_secret(data: &Path) -> Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = data.join(WEB_SECRET_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) if s.trim().len() >= 16 => return Ok(s.trim().to_owned()),
        Ok(_) => {
            return Err(anyhow!(
                "{} holds no usable secret (at least 16 characters); delete it to generate a new one",
                path.display()
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| anyhow!("no randomness for the client secret: {e}"))?;
    let secret: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(data)
        .with_context(|| format!("cannot create the data directory {}", data.display()))?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    writeln!(file, "{secret}").with_context(|| format!("cannot write {}", path.display()))?;
    Ok(secret)
}

async fn create_demo_key(state: &State, now: Timestamp) -> Result<String> {
    let email = Email::parse(DEMO_EMAIL).map_err(|e| anyhow!("{e}"))?;
    let account = match state.account_by_email(&email).await? {
        Some(account) => account,
        None => {
            let mut new = NewAccount::new(email, DEMO_ORG);
            new.daily_limit = DailyLimit::DEFAULT;
            state.create_account(&new, now).await?
        }
    };
    let (key, _) = state
        .create_key(account.id, Some("demo"), now)
        .await
        .context("cannot create the demo key")?;
    Ok(key.expose().to_owned())
}

/// Listens for SIGINT and SIGTERM from this call on; the future completes at the first of
/// them. Call it before announcing that the server is serving: a signal sent right after
/// that announcement then stops the server gracefully, where a handler installed later (at
/// the future's first poll) would leave a moment in which the signal kills the process.
pub fn shutdown_signal() -> Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {},
            _ = terminate.recv() => {},
        }
    })
}
