//! Test support: a provider on a loopback port over a test database, a browser (reqwest with a
//! cookie jar, redirects by hand), the outbox and the aiosmtpd maildir readers, and the log
//! capture every secret is checked against.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::Duration;

use periscope_model::clock::{Clock, ManualClock, SystemClock};
use periscope_signin::{ClientConfig, Config, MailConfig, SignIn};
use periscope_state::testing::{Fixture, Target, TempDir};
use periscope_ui::BANNER;

pub const WEB_ID: &str = "periscope-web";
pub const WEB_SECRET: &str = "web-secret-0123456789";
pub const WEB_CALLBACK: &str = "http://127.0.0.1:9/callback";
pub const WEB_SIGNED_OUT: &str = "http://127.0.0.1:9/signed-out";
pub const POST_ID: &str = "post-client";
pub const POST_SECRET: &str = "post-secret-0123456789";
pub const POST_CALLBACK: &str = "http://127.0.0.1:9/post/callback?kept=1";

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

/// Everything logged so far in this process.
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

// ---------------------------------------------------------------- provider

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

/// The database a fixture's sign-in tables go into: the state database itself.
pub fn database(fixture: &Fixture) -> String {
    match &fixture.target {
        Target::Sqlite(dir) => dir.join("state.db").display().to_string(),
        Target::Postgres(url) => url.clone(),
    }
}

pub struct Options {
    pub smtp_port: Option<u16>,
    /// Where mail goes, when more than a port is needed (TLS, a login); before `smtp_port`.
    pub mail: Option<MailConfig>,
    pub attempts_per_address: u32,
    pub attempts_per_client: u32,
    pub client_ip_header: Option<String>,
    pub signing_key: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            smtp_port: None,
            mail: None,
            attempts_per_address: 5,
            attempts_per_client: 50,
            client_ip_header: None,
            signing_key: true,
        }
    }
}

pub struct Provider {
    pub signin: SignIn,
    pub issuer: String,
    pub clock: Arc<ManualClock>,
    pub outbox: PathBuf,
    _outbox_dir: TempDir,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.server.abort();
    }
}

pub fn clients() -> Vec<ClientConfig> {
    vec![
        ClientConfig {
            client_id: WEB_ID.into(),
            client_secret: WEB_SECRET.into(),
            redirect_uris: vec![WEB_CALLBACK.into()],
            post_logout_redirect_uris: vec![WEB_SIGNED_OUT.into()],
        },
        ClientConfig {
            client_id: POST_ID.into(),
            client_secret: POST_SECRET.into(),
            redirect_uris: vec![POST_CALLBACK.into()],
            post_logout_redirect_uris: vec![],
        },
    ]
}

impl Provider {
    pub async fn start(database: &str, options: Options) -> Provider {
        capture_logs();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let issuer = format!("http://127.0.0.1:{port}/auth");
        let outbox_dir = TempDir::new("signin-outbox");
        let outbox = outbox_dir.path().join("outbox");
        let mail = match options.smtp_port {
            _ if options.mail.is_some() => options.mail.clone().unwrap(),
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
        let mut config = Config::new(&issuer, database, mail);
        config.clients = clients();
        config.attempts_per_address = options.attempts_per_address;
        config.attempts_per_client = options.attempts_per_client;
        config.client_ip_header = options.client_ip_header;
        config.application_url = Some(format!("http://127.0.0.1:{port}/"));
        config.mail_from = "Periscope <no-reply@periscope.test>".into();
        if options.signing_key {
            config.signing_key_pem = Some(test_key_pem());
        }
        // Starts at the real time: the relying-party library checks token expiry against it.
        let clock = Arc::new(ManualClock::new(SystemClock.now().unix()));
        let signin = SignIn::open_with_clock(config, clock.clone())
            .await
            .unwrap();
        assert_eq!(signin.mount_path(), "/auth");
        let app = signin.standalone_router();
        let server = tokio::spawn(async move {
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await
            .unwrap();
        });
        Provider {
            signin,
            issuer,
            clock,
            outbox,
            _outbox_dir: outbox_dir,
            server,
        }
    }

    pub fn now(&self) -> i64 {
        self.clock.now().unix()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// Registers `email` through the pages, takes the link from the outbox, and chooses
    /// `password`. Returns the link.
    pub async fn register_via_outbox(&self, email: &str, org: &str, password: &str) -> String {
        let browser = Browser::new();
        let page = browser.get(&self.url("/register")).await;
        let page = browser
            .post(
                &self.url("/register"),
                &[
                    ("csrf", &page.csrf()),
                    ("email", email),
                    ("organisation", org),
                    ("terms", "accepted"),
                ],
            )
            .await;
        assert_eq!(
            page.status,
            200,
            "{}\nLOGS:\n{}",
            page.body,
            logs()
                .lines()
                .filter(|l| l.contains("ERROR"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let link = outbox_link(&self.outbox, email);
        choose_password(&browser, &link, password).await;
        link
    }
}

/// Opens `link` and chooses `password` (expects success).
pub async fn choose_password(browser: &Browser, link: &str, password: &str) {
    let form = browser.get(link).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let token = form.hidden("token");
    let action = link.split('?').next().unwrap();
    let done = browser
        .post(
            action,
            &[
                ("csrf", &form.csrf()),
                ("token", &token),
                ("password", password),
                ("password2", password),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(done.location().ends_with("/auth/signin?confirmed=1"));
}

/// Signs in through the form at `signin_url` (expects success); returns where it redirected.
pub async fn sign_in(browser: &Browser, signin_url: &str, email: &str, password: &str) -> Page {
    let form = browser.get(signin_url).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let mut fields = vec![
        ("csrf".to_owned(), form.csrf()),
        ("email".to_owned(), email.to_owned()),
        ("password".to_owned(), password.to_owned()),
    ];
    if form.body.contains("name=\"return_to\"") {
        fields.push(("return_to".to_owned(), form.hidden("return_to")));
    }
    let action = signin_url.split('?').next().unwrap();
    let borrowed: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    browser.post(action, &borrowed).await
}

// ---------------------------------------------------------------- mail

/// The confirmation link in the newest outbox message to `email`.
pub fn outbox_link(outbox: &Path, email: &str) -> String {
    let mut messages: Vec<(PathBuf, String)> = std::fs::read_dir(outbox)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "eml"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .filter(|(_, text)| {
            text.to_lowercase()
                .contains(&format!("to: {}", email.to_lowercase()))
        })
        .collect();
    messages.sort();
    let (_, text) = messages
        .pop()
        .unwrap_or_else(|| panic!("no outbox message to {email}"));
    link_in(&text)
}

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
pub fn aiosmtpd_python() -> Option<String> {
    static PYTHON: OnceLock<Option<String>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if let Ok(python) = std::env::var("PERISCOPE_TEST_AIOSMTPD_PYTHON") {
                return Some(python);
            }
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/aiosmtpd-venv");
            let out = std::process::Command::new(&script).output();
            match out {
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
        let port = periscope_testkit::free_port();
        let maildir = TempDir::new("aiosmtpd");
        let child = tokio::process::Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(maildir.path().join("mail"))
            .kill_on_drop(true)
            .spawn()
            .expect("aiosmtpd starts");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(SmtpServer {
                    port,
                    child,
                    maildir,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("aiosmtpd did not listen on 127.0.0.1:{port} within 10 s");
    }

    /// Every message received so far, oldest first.
    pub fn messages(&self) -> Vec<String> {
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
            .collect()
    }

    /// The messages to `email`.
    pub fn messages_to(&self, email: &str) -> Vec<String> {
        self.messages()
            .into_iter()
            .filter(|m| {
                m.to_lowercase()
                    .contains(&format!("to: {}", email.to_lowercase()))
            })
            .collect()
    }
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
    async fn from(response: reqwest::Response) -> Page {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap();
        let page = Page {
            status,
            headers,
            body,
        };
        if page.is_html() {
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
}

impl Browser {
    pub fn new() -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// A browser behind a reverse proxy that names it `ip` in `x-forwarded-for` (after an
    /// entry the client made up, which the provider must ignore).
    pub fn behind_proxy(ip: &str) -> Browser {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            format!("10.9.9.9, {ip}").parse().unwrap(),
        );
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .default_headers(headers)
                .build()
                .unwrap(),
        }
    }

    pub async fn get(&self, url: &str) -> Page {
        Page::from(self.client.get(url).send().await.unwrap()).await
    }

    pub async fn post(&self, url: &str, fields: &[(&str, &str)]) -> Page {
        Page::from(self.client.post(url).form(fields).send().await.unwrap()).await
    }
}

/// `http://127.0.0.1:PORT` of an issuer.
pub fn origin(issuer: &str) -> String {
    issuer.trim_end_matches("/auth").to_owned()
}

/// The query parameter `name` of `url`.
pub fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
