//! `periscope serve`: the HTTP server — the JSON API under `/v1`, the OpenAPI document and the
//! operational endpoints, the browser application at `/` and, in the embedded default, the
//! sign-in service under `/auth` — over the scan store and the state database of one data directory.
//!
//! Start-up: read the configuration; with `--demo` on a data directory without scan data,
//! generate and ingest the demo dataset and create the demo account and key; open the scan
//! index (`LiveIndex`: load the index file, or build it), the state database and the DNS
//! resolver; listen on the HTTP address and on the ingest socket `DIR/ingest.sock`, through
//! which `periscope ingest` adds scan data while the server runs ([`crate::ingest_socket`]).
//! A background thread makes new data searchable every second: a delta over the records
//! written since the base index was built (milliseconds to a few seconds), and now and then a
//! full rebuild off to the side (see `LiveIndex`). SIGINT or SIGTERM stops accepting connections, lets requests in flight
//! finish, stops the refresher, removes the socket and closes the databases.
//!
//! Connections are served by `periscope_api::server` under the `[http]` deadlines and a
//! connection cap; at start the process raises its descriptor limit to the hard limit and
//! creates the data directory 0700 (it holds `state.db`, with the sign-in keys).
//!
//! Responses are gzip-compressed for clients that ask. `/metrics` also records the time of
//! each ingest batch and of each index refresh (`LiveIndex::spawn_refresher` reports them).
//!
//! Logs go to standard error, as text or one JSON object per line (`log_format`), at the
//! levels `RUST_LOG` selects (default `info`). No log
//! line carries a request header, body, key, password or cookie.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use periscope_api::{App, IndexGauge, IndexProbe, RateLimit, server};
use periscope_index::{LiveIndex, Opened};
use periscope_model::Timestamp;
use periscope_resolve::{DnsResolver, Resolver};
use periscope_service::{Clock, Limits, SearchService, SystemClock};
use periscope_signin::{ClientConfig, Config as SignInConfig, MailConfig, SignIn};
use periscope_state::{DailyLimit, Email, NewAccount, State};
use periscope_synth::SynthConfig;
use periscope_web::{Web, WebConfig};

use crate::config::{Config, ConfigArgs, LogFormat};
use crate::ingest::{DEFAULT_BATCH, STORE_FILE, ingest_synthetic};
use crate::ingest_socket;
use crate::synth::group;

/// How often dead sessions and sign-in records are deleted.
const PURGE_EVERY: Duration = Duration::from_secs(3600);
/// The embedded sign-in service's client id for the browser application.
pub(crate) const WEB_CLIENT_ID: &str = "periscope-web";
/// The file holding that client's secret, in the data directory.
const WEB_SECRET_FILE: &str = "web-client-secret";
/// How often the refresher looks for new data (a look that finds none costs nothing; a delta
/// refresh after a batch of 20,000 observations takes about 0.1 s at 1M hosts).
const REFRESH_EVERY: Duration = Duration::from_secs(1);
/// Hosts in the demo dataset.
const DEMO_HOSTS: u64 = 200_000;
/// The demo account.
const DEMO_EMAIL: &str = "demo@periscope.example";
/// The demo account's organisation.
const DEMO_ORG: &str = "Periscope demo";

/// Arguments of `periscope serve`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "With --demo on a data directory without scan data, a synthetic demo \
    dataset is generated and ingested first, and a demo account with an API key is created; \
    the key is printed once. On a data directory with data, --demo just serves. See \
    docs/configuration.md for every setting and docs/api.md for the API."
)]
pub(crate) struct Args {
    #[command(flatten)]
    config: ConfigArgs,
    /// Address to listen on (overrides `listen` and PERISCOPE_LISTEN) [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// On an empty data directory, generate and ingest demo data and create a demo key.
    #[arg(long)]
    demo: bool,
    /// Hosts of the demo dataset.
    #[arg(long, value_name = "N", default_value_t = DEMO_HOSTS, requires = "demo",
          value_parser = crate::synth::parse_hosts)]
    demo_hosts: u64,
}

/// Runs `periscope serve`.
pub(crate) fn run(args: &Args) -> Result<ExitCode> {
    let mut config = args.config.load()?;
    if let Some(listen) = &args.listen {
        config.apply_flag("listen", "--listen", listen)?;
    }
    init_logging(config.log_format)?;
    let demo = args.demo.then_some(args.demo_hosts);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("periscope-serve")
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(config, demo))?;
    Ok(ExitCode::SUCCESS)
}

/// The environment variable holding the log filter.
pub(crate) const LOG_FILTER_ENV: &str = "RUST_LOG";

/// Logs to standard error in `format`, at the levels `RUST_LOG` asks for (default `info`):
/// `warn`, `debug`, or per target such as `info,periscope_api=warn,sqlx=debug`. A filter
/// that does not parse is an error naming the variable.
pub(crate) fn init_logging(format: LogFormat) -> Result<()> {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = match std::env::var(LOG_FILTER_ENV) {
        Ok(value) if !value.trim().is_empty() => log_filter(&value)?,
        _ => log_filter("info")?,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false);
    // A subscriber set earlier (tests running twice in one process) stays.
    let _ = match format {
        LogFormat::Text => builder.finish().with(filter).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .finish()
            .with(filter)
            .try_init(),
    };
    Ok(())
}

/// Parses a `RUST_LOG`-style filter: comma-separated `level` or `target=level` directives
/// (levels `off`, `error`, `warn`, `info`, `debug`, `trace`).
pub(crate) fn log_filter(value: &str) -> Result<tracing_subscriber::filter::Targets> {
    value.trim().parse().map_err(|e| {
        anyhow!(
            "{LOG_FILTER_ENV}={value:?} is not a log filter ({e}); write a level (error, warn, \
             info, debug, trace, off) or comma-separated target=level directives, such as \
             info,periscope_api=warn"
        )
    })
}

/// The index as `/readyz` and `/metrics` see it.
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
fn private_data_dir(data: &Path) -> Result<()> {
    use periscope_state::files;
    files::create_private_dir(data)
        .with_context(|| format!("cannot create the data directory {}", data.display()))?;
    if files::group_or_other_access(data).unwrap_or(false) {
        tracing::warn!(data = %data.display(),
            "the data directory is open to other users; it holds secrets (state.db): chmod 700 it");
    }
    Ok(())
}

async fn serve(config: Config, demo: Option<u64>) -> Result<()> {
    let data = config.data.clone();
    let descriptors = raise_descriptor_limit();
    private_data_dir(&data)?;
    let store_path = data.join(STORE_FILE);
    let clock = Arc::new(SystemClock);
    let fresh = demo.is_some() && !has_scan_data(&store_path)?;
    if let Some(hosts) = demo.filter(|_| fresh) {
        ingest_demo(&data, hosts, clock.now())?;
    }

    let index_config = config.index_config();
    let open_path = store_path.clone();
    let now = clock.now();
    let (live, opened) =
        tokio::task::spawn_blocking(move || LiveIndex::open(&open_path, index_config, now))
            .await
            .context("the index thread failed")?
            .with_context(|| format!("cannot open the scan index at {}", store_path.display()))?;
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

    let state = State::open_configured_with(
        config.database_url.as_deref(),
        &data,
        config.database_acquire_timeout,
    )
    .await
    .context("cannot open the state database")?;
    let demo_key = if fresh {
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
    let service = SearchService::builder(Arc::clone(&live) as _, state.clone(), resolver)
        .limits(limits)
        .clock(clock.clone())
        .build();
    let app = App::new(
        service.clone(),
        RateLimit::new(config.limits.rate_per_sec, config.limits.rate_burst),
        Arc::new(LiveProbe(Arc::clone(&live))),
    );

    let metrics = Arc::clone(&app.metrics);
    let stop = Arc::new(AtomicBool::new(false));
    let refresher = {
        let (clock, metrics) = (clock.clone(), Arc::clone(&metrics));
        live.spawn_refresher(
            REFRESH_EVERY,
            move || clock.now(),
            Arc::clone(&stop),
            move |kind, took| metrics.observe_refresh(kind.as_str(), took),
            |e| tracing::error!(error = %error_chain(e), "index refresh failed"),
        )
        .context("cannot start the index refresher")?
    };

    let (ingest_listener, socket_path) = ingest_socket::bind(&data)?;
    let ingest_task = {
        let clock = clock.clone();
        tokio::spawn(ingest_socket::serve(
            ingest_listener,
            Arc::clone(&live),
            Arc::new(move || clock.now()),
            {
                let metrics = Arc::clone(&metrics);
                Arc::new(move |elapsed| metrics.observe_ingest(elapsed))
            },
        ))
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
    let (browser, signin) = browser_app(&config, &public_url, address, &state).await?;
    // The search bar runs the API's service: one allowance for both channels.
    browser.set_search(service);
    let mut router = periscope_api::router(app).merge(browser.router());
    if let Some(signin) = &signin {
        router = router.nest(signin.mount_path(), signin.router());
    }
    if demo.is_some() {
        // Every page of the demo says the data is synthetic (DECISIONS.md).
        router = router.layer(axum::middleware::map_response(periscope_web::mark_demo));
    }
    // gzip for clients that ask (`Accept-Encoding: gzip`); bodies under 32 bytes, images and
    // event streams are sent as they are.
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
    announce(address, &public_url, demo_key.as_deref());

    server::serve(listener, router, settings, shutdown_signal()).await;
    purger.abort();
    if let Some(signin) = &signin {
        signin.close().await;
    }

    tracing::info!("shutting down");
    ingest_task.abort();
    if let Err(e) = std::fs::remove_file(&socket_path) {
        tracing::warn!(error = %e, socket = %socket_path.display(), "cannot remove the ingest socket");
    }
    stop.store(true, Ordering::SeqCst);
    let _ = tokio::task::spawn_blocking(move || refresher.join()).await;
    state.close().await;
    Ok(())
}

/// The browser application, and the embedded sign-in service it signs in with unless `[web]`
/// names an external provider.
async fn browser_app(
    config: &Config,
    public_url: &str,
    address: SocketAddr,
    state: &State,
) -> Result<(Web, Option<SignIn>)> {
    let clock: Arc<dyn periscope_signin::Clock> = Arc::new(periscope_signin::SystemClock);
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
        let web = Web::new(web_config, state.clone(), clock)?;
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
    let mut signin_config = SignInConfig::new(&issuer, database, mail);
    signin_config.clients.push(ClientConfig {
        client_id: WEB_CLIENT_ID.into(),
        client_secret: secret,
        redirect_uris: vec![web_config.callback_url()],
        post_logout_redirect_uris: vec![web_config.signed_out_url()],
    });
    signin_config.application_url = Some(format!("{public_url}/"));
    apply_signin_settings(config, &mut signin_config);
    let signin = SignIn::open(signin_config)
        .await
        .context("cannot start the sign-in service")?;
    let web = Web::new(web_config, state.clone(), clock)?;
    Ok((web, Some(signin)))
}

/// Where the sign-in service's registration e-mail goes: the `[signin]` SMTP relay (with its
/// TLS mode, login and CA file), or `DATA/outbox`.
pub(crate) fn mail_config(config: &Config) -> Result<MailConfig> {
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
    let env = crate::config::SMTP_PASSWORD_ENV;
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
pub(crate) fn apply_signin_settings(config: &Config, signin: &mut SignInConfig) {
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
pub(crate) fn web_client_secret(data: &Path) -> Result<String> {
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

/// Whether the store holds any host (a missing store holds none).
fn has_scan_data(store_path: &Path) -> Result<bool> {
    if !store_path.exists() {
        return Ok(false);
    }
    let store = periscope_index::durable::DurableStore::open(store_path)
        .with_context(|| format!("cannot open the scan store {}", store_path.display()))?;
    let stats = store
        .stats()
        .with_context(|| format!("cannot read the scan store {}", store_path.display()))?;
    Ok(stats.hosts > 0)
}

fn ingest_demo(data: &Path, hosts: u64, now: Timestamp) -> Result<()> {
    eprintln!(
        "periscope: no scan data in {}; generating a synthetic demo dataset of {} hosts…",
        data.display(),
        group(hosts)
    );
    let cfg = SynthConfig {
        hosts,
        seed: 1,
        as_of: now.start_of_day(),
    };
    let (_, _, report) = ingest_synthetic(&cfg, data, DEFAULT_BATCH)?;
    eprintln!(
        "periscope: demo data ingested: {} observations in {:.1} s",
        group(report.observations()),
        report.seconds()
    );
    Ok(())
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

fn announce(address: SocketAddr, public_url: &str, demo_key: Option<&str>) {
    let base = format!("http://{address}");
    eprintln!("periscope: serving {base} (Ctrl-C stops); the browser application at {public_url}/");
    if let Some(key) = demo_key {
        eprintln!(
            "periscope: demo account {DEMO_EMAIL}; its API key (shown once, keep it):\n\n    \
             {key}\n\nTry:\n\n    curl -s -H 'Authorization: Bearer {key}' \
             -H 'Content-Type: application/json' -d '{{\"query\":\"port:22\",\"limit\":3}}' \
             {base}/v1/search\n\nThe demo data is synthetic: addresses in 240.0.0.0/4 and \
             3fff::/20, names under .example.\n"
        );
    }
}

pub(crate) async fn shutdown_signal() {
    let interrupt = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
