//! Registration e-mail: composing the message with the confirmation link, and the two ways it
//! leaves — over SMTP ([`SmtpMailer`], lettre) when a relay is configured, otherwise into an
//! outbox directory ([`OutboxMailer`]) with the link written to the log, so a demo works
//! without a mail server. Only the outbox logs the link; SMTP delivery logs the address alone.
//!
//! SMTP goes through real relays: STARTTLS (opportunistic or required) or implicit TLS with
//! rustls, trusting the platform's roots plus an optional CA file, and AUTH PLAIN/LOGIN. A relay
//! that refuses is reported in words that say which setting to look at ([`explain`]).

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use lettre::message::header::{ContentTransferEncoding, ContentType};
use lettre::message::{Body, Mailbox};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tokio::io::AsyncWriteExt as _;

use crate::config::{MailConfig, SmtpTls};
use crate::error::SetupError;

/// A boxed future, for the object-safe [`Mailer`].
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The e-mail that carries a registration link.
pub(crate) struct RegistrationMail {
    /// The recipient, as stored.
    pub to: String,
    /// The confirmation link (a secret until used).
    pub link: String,
    /// How long the link works, in words ("24 hours").
    pub valid_for: String,
}

/// Why a message did not leave.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MailError {
    #[error("cannot compose the message: {0}")]
    Compose(String),
    #[error("SMTP delivery failed: {0}")]
    Smtp(String),
    #[error("cannot write to the outbox {path}: {source}")]
    Outbox {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where registration e-mail goes: SMTP or the outbox.
pub(crate) trait Mailer: Send + Sync + 'static {
    /// Delivers `mail` (or stores it, for the outbox).
    fn send<'a>(&'a self, mail: &'a RegistrationMail) -> BoxFuture<'a, Result<(), MailError>>;
}

/// Builds the mailer the configuration asks for.
pub(crate) fn from_config(
    config: &MailConfig,
    from: Mailbox,
) -> Result<Box<dyn Mailer>, SetupError> {
    Ok(match config {
        MailConfig::Outbox { dir } => {
            create_private_dir(dir).map_err(|source| SetupError::Outbox {
                path: dir.clone(),
                source,
            })?;
            Box::new(OutboxMailer {
                dir: dir.clone(),
                from,
            })
        }
        MailConfig::Smtp {
            host,
            port,
            timeout_secs,
            tls,
            credentials,
            ca_file,
        } => {
            let mut builder =
                AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host.as_str())
                    .port(*port)
                    .timeout(Some(Duration::from_secs(*timeout_secs)));
            if *tls != SmtpTls::None {
                let params = tls_parameters(host, ca_file.as_deref())?;
                builder = builder.tls(match tls {
                    SmtpTls::Opportunistic => Tls::Opportunistic(params),
                    SmtpTls::Starttls => Tls::Required(params),
                    SmtpTls::Implicit | SmtpTls::None => Tls::Wrapper(params),
                });
            }
            if let Some(login) = credentials {
                builder = builder
                    .credentials(Credentials::new(
                        login.username.clone(),
                        login.password.clone(),
                    ))
                    .authentication(vec![Mechanism::Plain, Mechanism::Login]);
            }
            Box::new(SmtpMailer {
                transport: builder.build(),
                from,
                relay: format!("{host}:{port}"),
                tls: *tls,
                timeout_secs: *timeout_secs,
            })
        }
    })
}

/// The TLS settings for `host`: the platform's roots, plus the certificates in `ca_file`.
fn tls_parameters(
    host: &str,
    ca_file: Option<&std::path::Path>,
) -> Result<TlsParameters, SetupError> {
    let mut params = TlsParameters::builder(host.to_owned());
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| {
            SetupError::Smtp(format!(
                "cannot read signin.smtp_ca_file {}: {e}",
                path.display()
            ))
        })?;
        let not_pem = || {
            SetupError::Smtp(format!(
                "signin.smtp_ca_file {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            ))
        };
        if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
            return Err(not_pem());
        }
        let cert = Certificate::from_pem(&pem).map_err(|_| not_pem())?;
        params = params.add_root_certificate(cert);
    }
    params
        .build_rustls()
        .map_err(|e| SetupError::Smtp(format!("TLS for the relay {host}: {e}")))
}

/// What went wrong with the relay, in words that name the setting to look at.
fn explain(
    error: &lettre::transport::smtp::Error,
    relay: &str,
    tls: SmtpTls,
    timeout_secs: u64,
) -> String {
    let text = error.to_string();
    let code = error.status().map(|c| c.to_string());
    let why = if error.is_timeout() {
        format!("no answer within {timeout_secs} s")
    } else if error.is_tls() || text.contains("certificate") || text.contains("handshake") {
        format!(
            "the TLS handshake failed, for instance a certificate not trusted (a private CA goes in signin.smtp_ca_file) or not for this host name, or a relay that does not speak TLS on this port (signin.smtp_tls = \"{}\"): {text}",
            tls.as_str()
        )
    } else if text.contains("STARTTLS is not supported") {
        "the relay does not offer STARTTLS, which signin.smtp_tls = \"starttls\" requires (the connection was not used)".to_owned()
    } else if matches!(code.as_deref(), Some("535" | "534")) {
        format!("the relay refused the login (check signin.smtp_username and the password): {text}")
    } else if text.contains("authentication mechanism") {
        format!(
            "the relay offers neither AUTH PLAIN nor AUTH LOGIN to this client (does it need STARTTLS first?): {text}"
        )
    } else if code.as_deref() == Some("530") {
        format!(
            "the relay demands something first, usually STARTTLS or a login (signin.smtp_tls, signin.smtp_username): {text}"
        )
    } else {
        text
    };
    format!("relay {relay}: {why}")
}

/// Creates `dir` (and missing parents) readable by this user alone (0700): its messages carry
/// live confirmation links. An existing directory keeps its mode; each message is 0600 anyway.
fn create_private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Whether lettre accepts `address` as a recipient (checked before anything is stored).
pub(crate) fn deliverable(address: &str) -> bool {
    address.parse::<lettre::Address>().is_ok()
}

/// The message for `mail`, in 7-bit plain text so the link is never re-encoded or split.
fn compose(from: &Mailbox, mail: &RegistrationMail) -> Result<Message, MailError> {
    let to: Mailbox = mail
        .to
        .parse()
        .map_err(|e| MailError::Compose(format!("recipient: {e}")))?;
    let text = format!(
        "Hello,\r\n\r\n\
         this address was used to register for Periscope.\r\n\r\n\
         To confirm it and choose your password, open this link within {valid_for}:\r\n\r\n\
         {link}\r\n\r\n\
         The link works once. If you did not register, ignore this e-mail: no account is\r\n\
         created without it.\r\n\r\n\
         Periscope is a preview, free of charge and offered to businesses only. Its functions\r\n\
         and limits may change at any time.\r\n",
        valid_for = mail.valid_for,
        link = mail.link,
    );
    // 7-bit as it is: the text is ASCII and its lines are within RFC 5322's 998 characters.
    // (lettre would pick quoted-printable for lines over 76, splitting the link with soft
    // breaks that some readers do not join.)
    if !text.is_ascii() || text.split("\r\n").any(|line| line.len() > 998) {
        return Err(MailError::Compose(
            "the link makes a line longer than 998 characters (is the issuer URL that long?)"
                .to_owned(),
        ));
    }
    let body = Body::dangerous_pre_encoded(text.into_bytes(), ContentTransferEncoding::SevenBit);
    Message::builder()
        .from(from.clone())
        .to(to)
        .subject("Confirm your e-mail address for Periscope")
        .header(ContentType::TEXT_PLAIN)
        .body(body)
        .map_err(|e| MailError::Compose(e.to_string()))
}

/// Sends over SMTP.
pub(crate) struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    relay: String,
    tls: SmtpTls,
    timeout_secs: u64,
}

impl Mailer for SmtpMailer {
    fn send<'a>(&'a self, mail: &'a RegistrationMail) -> BoxFuture<'a, Result<(), MailError>> {
        Box::pin(async move {
            let message = compose(&self.from, mail)?;
            self.transport.send(message).await.map_err(|e| {
                MailError::Smtp(explain(&e, &self.relay, self.tls, self.timeout_secs))
            })?;
            tracing::info!(mail.to = %mail.to, smtp.relay = %self.relay, "registration e-mail sent");
            Ok(())
        })
    }
}

/// Writes each message as an `.eml` file into a directory and the link to the log.
pub(crate) struct OutboxMailer {
    dir: PathBuf,
    from: Mailbox,
}

impl Mailer for OutboxMailer {
    fn send<'a>(&'a self, mail: &'a RegistrationMail) -> BoxFuture<'a, Result<(), MailError>> {
        Box::pin(async move {
            let message = compose(&self.from, mail)?;
            let mut suffix = [0u8; 6];
            crate::random::fill(&mut suffix).map_err(|e| MailError::Compose(e.to_string()))?;
            // Names sort in the order messages were written.
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let name = format!("{nanos:020}-{}.eml", crate::random::hex(&suffix));
            let path = self.dir.join(&name);
            let partial = self.dir.join(format!(".{name}.partial"));
            let failed = |source| MailError::Outbox {
                path: path.clone(),
                source,
            };
            // 0600 from the start (never readable by others, not even for a moment): the
            // message carries a live confirmation link.
            let mut file = tokio::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&partial)
                .await
                .map_err(failed)?;
            file.write_all(&message.formatted()).await.map_err(failed)?;
            // Written out before the rename, so no reader sees a partial message.
            file.flush().await.map_err(failed)?;
            drop(file);
            tokio::fs::rename(&partial, &path).await.map_err(failed)?;
            // Deliberate: without a mail server the log is how a demo user finds the link.
            tracing::info!(
                mail.to = %mail.to,
                outbox.file = %path.display(),
                link = %mail.link,
                "registration e-mail written to the outbox (no SMTP relay configured)"
            );
            Ok(())
        })
    }
}
