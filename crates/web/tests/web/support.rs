//! Test support: the embedded default (sign-in service under `/auth`, web application at `/`)
//! on a loopback port over a test database, a browser (reqwest with a cookie jar, redirects by
//! hand), a real SMTP server (aiosmtpd), and the log capture every secret is checked against.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::Duration;

use periscope_model::clock::{Clock, ManualClock, SystemClock};
use periscope_service::SearchService;
use periscope_signin::{ClientConfig, Config, MailConfig, SignIn};
use periscope_state::State;
use periscope_state::testing::{Fixture, Target, TempDir};
use periscope_ui::BANNER;
use periscope_web::{Web, WebConfig};

// ---------------------------------------------------------------- logs

static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs, once per process, a subscriber that keeps every event of every crate at every
/// level.
pub fn capture_logs() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(|| Capture)
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
    });
}

pub fn logs() -> String {
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

/// Fails when any of `secrets` appears in the log.
pub fn assert_not_logged(what: &str, secrets: &[&str]) {
    let logs = logs();
    assert!(!logs.is_empty(), "the log capture saw nothing");
    for secret in secrets {
        assert!(
            secret.len() >= 8,
            "{what}: {secret:?} is too short to search for"
        );
        assert!(!logs.contains(secret), "{what}: {secret:?} reached the log");
    }
}

// ---------------------------------------------------------------- the app

/// The database the sign-in tables go into: the state database itself.
pub fn database(fixture: &Fixture) -> String {
    match &fixture.target {
        Target::Sqlite(dir) => dir.join("state.db").display().to_string(),
        Target::Postgres(url) => url.clone(),
    }
}

pub const CLIENT_ID: &str = "periscope-web";
pub const CLIENT_SECRET: &str = "web-secret-0123456789";

/// What `periscope serve` runs in its embedded default, in this process: the sign-in service
/// under `/auth` and the web application at `/`, one listener, one clock for both.
pub struct App {
    pub origin: String,
    pub clock: Arc<ManualClock>,
    pub outbox: PathBuf,
    _outbox_dir: TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for App {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// The API's readiness probe over the test index: always ready.
struct ReadyIndex;

impl periscope_api::IndexProbe for ReadyIndex {
    fn gauge(&self) -> periscope_api::IndexGauge {
        periscope_api::IndexGauge {
            hosts: 0,
            services: 0,
            generation: 0,
        }
    }

    fn ready(&self) -> bool {
        true
    }
}

pub fn real_now() -> i64 {
    SystemClock.now().unix()
}

impl App {
    /// The embedded default; e-mail over SMTP to `smtp_port`, or into the outbox.
    pub async fn embedded(fixture: &Fixture, smtp_port: Option<u16>) -> App {
        Self::embedded_as(fixture, smtp_port, None).await
    }

    /// The embedded default; with `public_host`, browsers reach it under that name (a proxy's,
    /// say) while the application reaches the provider on the listening address.
    pub async fn embedded_as(
        fixture: &Fixture,
        smtp_port: Option<u16>,
        public_host: Option<&str>,
    ) -> App {
        Self::embedded_full(fixture, smtp_port, public_host, None, false, false).await
    }

    /// The embedded default with `service` as the search bar's, e-mail into the outbox.
    pub async fn embedded_searching(fixture: &Fixture, service: SearchService) -> App {
        Self::embedded_full(fixture, None, None, Some(service), false, false).await
    }

    /// What `periscope serve` runs, API included: the embedded default with `service` as the
    /// search bar's and the API's (`/v1/…`, one allowance), e-mail into the outbox.
    pub async fn embedded_with_api(fixture: &Fixture, service: SearchService) -> App {
        Self::embedded_full(fixture, None, None, Some(service), true, false).await
    }

    /// What `periscope serve --demo` runs without a search service: the embedded default with
    /// the demo notice on every page of both services (`WebConfig::demo`, `Config::demo`).
    pub async fn embedded_demo(fixture: &Fixture) -> App {
        Self::embedded_full(fixture, None, None, None, false, true).await
    }

    async fn embedded_full(
        fixture: &Fixture,
        smtp_port: Option<u16>,
        public_host: Option<&str>,
        search: Option<SearchService>,
        api: bool,
        demo: bool,
    ) -> App {
        capture_logs();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let origin = match public_host {
            Some(host) => format!("http://{host}:{}", address.port()),
            None => format!("http://{address}"),
        };
        let issuer = format!("{origin}/auth");
        let outbox_dir = TempDir::new("web-outbox");
        let outbox = outbox_dir.path().join("outbox");
        let mail = match smtp_port {
            Some(port) => MailConfig::Smtp {
                host: "127.0.0.1".into(),
                port,
                timeout_secs: 10,
                tls: periscope_signin::SmtpTls::None,
                credentials: None,
                ca_file: None,
            },
            None => MailConfig::Outbox {
                dir: outbox.clone(),
            },
        };
        let mut web_config = WebConfig::new(&origin, &issuer, CLIENT_ID, CLIENT_SECRET);
        if public_host.is_some() {
            web_config.provider_url = Some(format!("http://{address}"));
        }
        web_config.demo = demo;
        let mut config = Config::new(&issuer, database(fixture), mail);
        config.clients.push(ClientConfig {
            client_id: CLIENT_ID.into(),
            client_secret: CLIENT_SECRET.into(),
            redirect_uris: vec![web_config.callback_url()],
            post_logout_redirect_uris: vec![web_config.signed_out_url()],
        });
        config.mail_from = "Periscope <no-reply@periscope.test>".into();
        config.signing_key_pem = Some(test_key_pem());
        config.demo = demo;
        // Starts at the real time: the relying party checks token expiry against it.
        let clock = Arc::new(ManualClock::new(real_now()));
        let signin = SignIn::open_with_clock(config, clock.clone())
            .await
            .unwrap();
        let web = Web::new(
            web_config,
            fixture.state.clone(),
            clock.clone(),
            search.clone(),
        )
        .unwrap();
        let mut router = web.router().nest(signin.mount_path(), signin.router());
        if let Some(service) = search.filter(|_| api) {
            let api = periscope_api::App::new(
                service,
                periscope_api::RateLimit::new(1000, 1000),
                Arc::new(ReadyIndex),
            );
            router = periscope_api::router(api).merge(router);
        }
        let server = serve(listener, router);
        App {
            origin,
            clock,
            outbox,
            _outbox_dir: outbox_dir,
            server,
        }
    }

    /// The web application alone, signing in with the provider at `issuer`.
    pub async fn external(state: &State, issuer: &str, id: &str, secret: &str) -> App {
        Self::external_on(
            state,
            tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
            issuer,
            id,
            secret,
        )
    }

    pub fn external_on(
        state: &State,
        listener: tokio::net::TcpListener,
        issuer: &str,
        id: &str,
        secret: &str,
    ) -> App {
        Self::external_with(state, listener, issuer, id, secret, |_| {})
    }

    /// [`App::external_on`] with settings beyond the provider's (a CA file, claims…).
    pub fn external_with(
        state: &State,
        listener: tokio::net::TcpListener,
        issuer: &str,
        id: &str,
        secret: &str,
        configure: impl FnOnce(&mut WebConfig),
    ) -> App {
        capture_logs();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let clock = Arc::new(ManualClock::new(real_now()));
        let mut config = WebConfig::new(&origin, issuer, id, secret);
        configure(&mut config);
        let web = Web::new(config, state.clone(), clock.clone(), None).unwrap();
        let outbox_dir = TempDir::new("web-outbox");
        let server = serve(listener, web.router());
        App {
            origin,
            clock,
            outbox: outbox_dir.path().join("outbox"),
            _outbox_dir: outbox_dir,
            server,
        }
    }

    /// Another instance of the web application beside `first`, as a second `periscope serve`
    /// behind a load balancer runs it: its own listener, clock and pool on the same state
    /// database (`state`), signing in with `first`'s provider, searching through `search`
    /// (a service of its own: its own gate, the same allowance). Nothing but the database is
    /// shared with `first`.
    pub async fn second_instance(first: &App, state: &State, search: Option<SearchService>) -> App {
        capture_logs();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let issuer = format!("{}/auth", first.origin);
        let config = WebConfig::new(&origin, &issuer, CLIENT_ID, CLIENT_SECRET);
        let clock = Arc::new(ManualClock::new(real_now()));
        let web = Web::new(config, state.clone(), clock.clone(), search).unwrap();
        let outbox_dir = TempDir::new("web-outbox");
        let server = serve(listener, web.router());
        App {
            origin,
            clock,
            outbox: outbox_dir.path().join("outbox"),
            _outbox_dir: outbox_dir,
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// An absolute URL for a `Location` (relative ones are on this app).
    pub fn absolute(&self, location: &str) -> String {
        if location.starts_with('/') {
            self.url(location)
        } else {
            location.to_owned()
        }
    }
}

fn serve(listener: tokio::net::TcpListener, router: axum::Router) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    })
}

/// A key generated once per test process (RSA generation is slow in debug builds).
pub fn test_key_pem() -> String {
    static PEM: OnceLock<String> = OnceLock::new();
    PEM.get_or_init(|| {
        use rsa::pkcs8::EncodePrivateKey;
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
        key.to_pkcs8_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap()
            .to_string()
    })
    .clone()
}

// ---------------------------------------------------------------- mail

/// The first confirmation link in a message.
pub fn link_in(message: &str) -> String {
    let start = message.find("http://").expect("a link in the message");
    let end = message[start..]
        .find(char::is_whitespace)
        .map_or(message.len(), |e| start + e);
    let link = message[start..end].to_owned();
    assert!(link.contains("/auth/confirm?token="), "{link}");
    link
}

/// A real SMTP server (Python's aiosmtpd) on a loopback port, writing into a maildir.
pub struct SmtpServer {
    pub port: u16,
    child: tokio::process::Child,
    maildir: TempDir,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The python of the aiosmtpd virtual environment: PERISCOPE_TEST_AIOSMTPD_PYTHON, else what
/// `scripts/aiosmtpd-venv` makes. `None` (outside CI only) when it cannot be had.
fn aiosmtpd_python() -> Option<String> {
    static PYTHON: OnceLock<Option<String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Ok(python) = std::env::var("PERISCOPE_TEST_AIOSMTPD_PYTHON") {
                return Some(python);
            }
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/aiosmtpd-venv");
            match std::process::Command::new(&script).output() {
                Ok(out) if out.status.success() => {
                    Some(String::from_utf8(out.stdout).unwrap().trim().to_owned())
                }
                other => {
                    let why = match other {
                        Ok(out) => String::from_utf8_lossy(&out.stderr).into_owned(),
                        Err(e) => e.to_string(),
                    };
                    if std::env::var("CI").as_deref() == Ok("true") {
                        panic!("aiosmtpd is required under CI=true: {why}");
                    }
                    eprintln!(
                        "SKIPPED: the SMTP journey needs aiosmtpd ({}): {why}",
                        script.display()
                    );
                    None
                }
            }
        })
        .clone()
}

impl SmtpServer {
    /// Starts aiosmtpd, or `None` when it is unavailable (outside CI).
    pub async fn start() -> Option<SmtpServer> {
        let python = aiosmtpd_python()?;
        let port = free_port();
        let maildir = TempDir::new("aiosmtpd");
        let child = tokio::process::Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(maildir.path().join("mail"))
            .kill_on_drop(true)
            .spawn()
            .expect("aiosmtpd starts");
        wait_for_port(port, "aiosmtpd").await;
        Some(SmtpServer {
            port,
            child,
            maildir,
        })
    }

    /// The messages to `email`, oldest first.
    pub fn messages_to(&self, email: &str) -> Vec<String> {
        let new = self.maildir.path().join("mail").join("new");
        let Ok(entries) = std::fs::read_dir(new) else {
            return Vec::new();
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .map(|e| e.unwrap())
            .map(|e| (e.metadata().unwrap().modified().unwrap(), e.path()))
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|(_, p)| std::fs::read_to_string(p).unwrap())
            .filter(|m| {
                m.to_lowercase()
                    .contains(&format!("to: {}", email.to_lowercase()))
            })
            .collect()
    }
}

pub use periscope_testkit::free_port;

pub async fn wait_for_port(port: u16, what: &str) {
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not listen on 127.0.0.1:{port} within 20 s");
}

// ---------------------------------------------------------------- browser

/// A browser: a cookie jar, no automatic redirects.
pub struct Browser {
    client: reqwest::Client,
}

pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    async fn from(response: reqwest::Response, banner: bool) -> Page {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap();
        let page = Page {
            status,
            headers,
            body,
        };
        if banner && page.is_html() {
            assert!(
                page.body.contains(BANNER),
                "a page without the preview banner: {}",
                page.body
            );
        }
        page
    }

    pub fn is_html(&self) -> bool {
        self.headers
            .get("content-type")
            .is_some_and(|c| c.to_str().unwrap().starts_with("text/html"))
    }

    pub fn location(&self) -> String {
        self.headers
            .get("location")
            .unwrap_or_else(|| panic!("no Location ({}): {}", self.status, self.body))
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// The value of the hidden input `name`.
    pub fn hidden(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .body
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name}: {}", self.body))
            + marker.len();
        let end = start + self.body[start..].find('"').unwrap();
        self.body[start..end]
            .replace("&amp;", "&")
            .replace("&#39;", "'")
            .replace("&quot;", "\"")
    }

    pub fn csrf(&self) -> String {
        self.hidden("csrf")
    }

    /// The `Set-Cookie` header for `name`.
    pub fn set_cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with(&format!("{name}=")))
    }

    /// The value a `Set-Cookie` for `name` sets.
    pub fn cookie_value(&self, name: &str) -> Option<String> {
        let c = self.set_cookie(name)?;
        Some(c[name.len() + 1..].split(';').next().unwrap().to_owned())
    }
}

impl Browser {
    /// A browser that finds `host` at `address` (as a proxy's DNS name would).
    pub fn resolving(host: &str, address: SocketAddr) -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .resolve(host, address)
                .build()
                .unwrap(),
        }
    }

    /// A browser that also trusts the CA certificate `ca_pem` (a provider served over https).
    pub fn trusting(ca_pem: &str) -> Browser {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject as _;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        Browser {
            client: reqwest::Client::builder()
                .use_preconfigured_tls(tls)
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    pub fn new() -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    pub async fn get(&self, url: &str) -> Page {
        Page::from(self.client.get(url).send().await.unwrap(), true).await
    }

    /// A page of another provider (no Periscope banner expected).
    pub async fn get_foreign(&self, url: &str) -> Page {
        Page::from(self.client.get(url).send().await.unwrap(), false).await
    }

    pub async fn post(&self, url: &str, fields: &[(&str, &str)]) -> Page {
        Page::from(
            self.client.post(url).form(fields).send().await.unwrap(),
            true,
        )
        .await
    }

    pub async fn post_foreign(&self, url: &str, fields: &[(&str, &str)]) -> Page {
        Page::from(
            self.client.post(url).form(fields).send().await.unwrap(),
            false,
        )
        .await
    }
}

/// The query parameter `name` of `url`.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// `url` with the query parameter `name` set to `value`.
pub fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut parsed = url::Url::parse(url).unwrap();
    let pairs: Vec<(String, String)> = parsed
        .query_pairs()
        .map(|(k, v)| {
            let v = if k == name {
                value.to_owned()
            } else {
                v.into_owned()
            };
            (k.into_owned(), v)
        })
        .collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs);
    parsed.to_string()
}

/// The account registered with `email` (it must exist).
pub async fn account_of(state: &periscope_state::State, email: &str) -> periscope_state::Account {
    state
        .account_by_email(&periscope_state::Email::parse(email).unwrap())
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("no account for {email}"))
}

/// A test CA and a certificate for 127.0.0.1 and localhost it issued, as PEM files in a
/// temporary directory: `ca.pem`, `cert.pem`, `key.pem`.
pub struct TestCa {
    pub dir: TempDir,
    pub ca_pem: String,
}

impl TestCa {
    pub fn generate(name: &str) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};
        let dir = TempDir::new(name);
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("Periscope test CA {name}"));
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        TestCa {
            dir,
            ca_pem: ca.pem(),
        }
    }

    pub fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }
}
