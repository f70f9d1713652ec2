//! Registration e-mail through a demanding relay: aiosmtpd (`smtp_relay.py`) on loopback with a
//! certificate from a CA generated here, requiring STARTTLS (or TLS from the first byte) and a
//! login. Delivery works with the right settings; a wrong password, a relay that offers no
//! STARTTLS when it is required, and a certificate from an untrusted CA are each refused with
//! a page for the user and a log line that names the cause, and the registration can be
//! retried once the relay is reachable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use periscope_signin::{MailConfig, SmtpCredentials, SmtpTls};
use periscope_state::testing::TempDir;

use crate::support::*;

const USER: &str = "periscope-relay-user";
const PASSWORD: &str = "relay-password-8c1f0e27";

/// The test CA and the relay's certificate for 127.0.0.1, as PEM files.
struct Certificates {
    dir: TempDir,
}

impl Certificates {
    fn generate() -> Certificates {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
        let dir = TempDir::new("relay-certs");
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Periscope test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress([127, 0, 0, 1].into()));
        let cert = params.signed_by(&key, &issuer).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), cert.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Certificates { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// `smtp_relay.py` in one of its modes.
struct Relay {
    port: u16,
    maildir: TempDir,
    child: tokio::process::Child,
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Relay {
    async fn start(python: &str, mode: &str, certs: &Certificates) -> Relay {
        use tokio::io::AsyncBufReadExt as _;
        let port = periscope_testkit::free_port();
        let maildir = TempDir::new("relay-mail");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/signin/smtp_relay.py");
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .arg(port.to_string())
            .arg(maildir.path().join("mail"))
            .arg(mode)
            .arg(certs.path("cert.pem"))
            .arg(certs.path("key.pem"))
            .args([USER, PASSWORD])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("smtp_relay.py starts");
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("smtp_relay.py ready within 20 s")
            .unwrap();
        assert_eq!(ready.as_deref(), Some("ready"), "smtp_relay.py {mode}");
        Relay {
            port,
            maildir,
            child,
        }
    }

    fn messages_to(&self, email: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.maildir.path().join("mail").join("new")) else {
            return Vec::new();
        };
        entries
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .filter(|m| m.to_lowercase().contains(&format!("to: {email}")))
            .collect()
    }

    fn mail(&self, tls: SmtpTls, password: &str, ca_file: Option<PathBuf>) -> MailConfig {
        MailConfig::Smtp {
            host: "127.0.0.1".into(),
            port: self.port,
            timeout_secs: 10,
            tls,
            credentials: Some(SmtpCredentials {
                username: USER.into(),
                password: password.into(),
            }),
            ca_file,
        }
    }
}

/// Registers `email` through the form on a fresh browser.
async fn register(provider: &Provider, email: &str) -> Page {
    let browser = Browser::new();
    let form = browser.get(&provider.url("/register")).await;
    assert_eq!(form.status, 200);
    let csrf = form.csrf();
    browser
        .post(
            &provider.url("/register"),
            &[
                ("csrf", csrf.as_str()),
                ("email", email),
                ("organisation", "Relay Testers"),
                ("terms", "accepted"),
            ],
        )
        .await
}

/// The log line about `email`'s unsent message, which must name `cause`.
fn assert_refusal_logged(email: &str, cause: &str) {
    let logs = logs();
    let line = logs
        .lines()
        .find(|l| l.contains("registration e-mail not sent") && l.contains(email))
        .unwrap_or_else(|| panic!("no refusal logged for {email}:\n{logs}"));
    assert!(line.contains(cause), "{cause:?} not in {line}");
}

/// The page the user gets when the relay refuses.
fn assert_refusal_page(page: &Page) {
    assert_eq!(page.status, 503, "{}", page.body);
    assert!(
        page.body.contains("The e-mail could not be sent") && page.body.contains("Register again"),
        "{}",
        page.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_mail_through_a_relay_demanding_tls_and_a_login() {
    let Some(python) = aiosmtpd_python() else {
        return;
    };
    let certs = Certificates::generate();
    let ca = Some(certs.path("ca.pem"));
    let db_dir = TempDir::new("relay-db");
    let database = db_dir.path().join("signin.db").display().to_string();
    let starttls = Relay::start(&python, "starttls", &certs).await;

    // STARTTLS and the right login: the message arrives, with a working link.
    let options = |mail| Options {
        mail: Some(mail),
        ..Options::default()
    };
    let provider = Provider::start(
        &database,
        options(starttls.mail(SmtpTls::Starttls, PASSWORD, ca.clone())),
    )
    .await;
    let email = "ada@relay-starttls.example";
    let page = register(&provider, email).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Check your e-mail"), "{}", page.body);
    let messages = starttls.messages_to(email);
    assert_eq!(messages.len(), 1, "{messages:?}");
    let link = link_in(&messages[0]);
    assert_eq!(Browser::new().get(&link).await.status, 200);

    // A wrong password: the page says so, the log names the login, and once the operator has
    // fixed the password the same address registers again and the message arrives.
    let wrong = Provider::start(
        &database,
        options(starttls.mail(SmtpTls::Starttls, "not-the-relay-password", ca.clone())),
    )
    .await;
    let email = "bob@relay-password.example";
    assert_refusal_page(&register(&wrong, email).await);
    assert_refusal_logged(email, "the relay refused the login");
    assert!(starttls.messages_to(email).is_empty());
    let page = register(&provider, email).await;
    assert_eq!(page.status, 200, "the retry: {}", page.body);
    assert_eq!(starttls.messages_to(email).len(), 1);

    // The test CA not trusted: the handshake fails and the log points at smtp_ca_file.
    let untrusted = Provider::start(
        &database,
        options(starttls.mail(SmtpTls::Starttls, PASSWORD, None)),
    )
    .await;
    let email = "carol@relay-untrusted.example";
    assert_refusal_page(&register(&untrusted, email).await);
    assert_refusal_logged(email, "signin.smtp_ca_file");
    assert!(starttls.messages_to(email).is_empty());

    // STARTTLS required but the relay offers none: nothing is sent, not even the login.
    let plain = Relay::start(&python, "plain", &certs).await;
    let stripped = Provider::start(
        &database,
        options(plain.mail(SmtpTls::Starttls, PASSWORD, ca.clone())),
    )
    .await;
    let email = "dan@relay-plain.example";
    assert_refusal_page(&register(&stripped, email).await);
    assert_refusal_logged(email, "does not offer STARTTLS");
    assert!(plain.messages_to(email).is_empty());

    // TLS from the first byte (SMTPS).
    let implicit = Relay::start(&python, "implicit", &certs).await;
    let smtps = Provider::start(
        &database,
        options(implicit.mail(SmtpTls::Implicit, PASSWORD, ca.clone())),
    )
    .await;
    let email = "eve@relay-implicit.example";
    let page = register(&smtps, email).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(implicit.messages_to(email).len(), 1);

    assert_not_logged("the relay tests", &[PASSWORD]);
}

#[tokio::test]
async fn unreadable_or_empty_ca_file_is_refused_at_start() {
    let dir = TempDir::new("relay-ca");
    let database = dir.path().join("signin.db").display().to_string();
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    for (ca, expected) in [
        (
            dir.path().join("missing.pem"),
            "cannot read signin.smtp_ca_file",
        ),
        (empty, "holds no PEM certificate"),
    ] {
        let mut config = periscope_signin::Config::new(
            "http://127.0.0.1:9/auth",
            &database,
            MailConfig::Smtp {
                host: "127.0.0.1".into(),
                port: 9,
                timeout_secs: 1,
                tls: SmtpTls::Starttls,
                credentials: None,
                ca_file: Some(ca),
            },
        );
        config.clients = clients();
        config.signing_key_pem = Some(test_key_pem());
        let error = match periscope_signin::SignIn::open(config).await {
            Ok(_) => panic!("a bad CA file was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains(expected), "{error}");
    }
}
