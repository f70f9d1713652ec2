//! A small client of ClickHouse's HTTP interface: a statement is POSTed as the body (or, for
//! an insert, in the `query` parameter with the rows as the body); a non-200 answer is an
//! error carrying the server's message. Answers are read as TabSeparated text.
//!
//! An `https` URL is spoken over TLS through rustls on AWS-LC (no OpenSSL), trusting the
//! platform's CA certificates (`/etc/ssl/certs`, through `rustls-native-certs`) plus those of
//! an optional CA file ([`ClientOptions::ca_file`], for a private CA); certificates and host
//! names are always verified. Credentials ([`ClientOptions::user`], [`ClientOptions::password`])
//! go in ClickHouse's `X-ClickHouse-User` and `X-ClickHouse-Key` headers, as managed ClickHouse
//! services demand. A memory bound ([`ClientOptions::memory_limit`]) goes with every statement
//! as ClickHouse settings in the URL, so no statement can take a server's whole memory.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::sql;

/// Why a statement failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The server could not be reached or the connection broke.
    #[error("ClickHouse at {url} cannot be reached: {reason}")]
    Unreachable {
        /// The server.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The server refused or failed the statement.
    #[error("ClickHouse refused a statement (HTTP {status}): {message}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's message (its first line).
        message: String,
    },
    /// The answer was not what the statement asks for.
    #[error("ClickHouse answered something unexpected: {0}")]
    Malformed(String),
    /// The client cannot be set up as asked (a bad URL, an unreadable CA file, a bad header
    /// value).
    #[error("ClickHouse client for {url}: {reason}")]
    Config {
        /// The server.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server's TLS certificate does not verify against the trusted CA certificates.
    #[error(
        "the TLS certificate of ClickHouse at {url} is not trusted ({reason}); trust comes from \
         the platform's CA certificates and the CA file ([index] ca_file)"
    )]
    Untrusted {
        /// The server.
        url: String,
        /// What failed.
        reason: String,
    },
    /// The server refused the credentials (an unknown user, a wrong or missing password).
    #[error(
        "ClickHouse at {url} refused the credentials of user {user} (HTTP {status}): {message}"
    )]
    Denied {
        /// The server.
        url: String,
        /// The user the client presented (`default` when none was configured).
        user: String,
        /// The HTTP status.
        status: u16,
        /// The server's message (its first line).
        message: String,
    },
}

/// How a [`Client`] reaches its server: the time bound of each statement, the CA file an
/// `https` server's certificate may be signed by, and the credentials.
#[derive(Clone)]
pub struct ClientOptions {
    /// Each statement's time bound.
    pub timeout: Duration,
    /// A PEM file of CA certificates trusted besides the platform's, for an `https` URL
    /// (a private CA). Setting it for an `http` URL is an error.
    pub ca_file: Option<PathBuf>,
    /// The ClickHouse user (`X-ClickHouse-User`); the server's `default` user when `None`.
    pub user: Option<String>,
    /// The user's password (`X-ClickHouse-Key`).
    pub password: Option<String>,
    /// The most memory, in bytes, one statement may use on each server (ClickHouse's
    /// `max_memory_usage`); past half of it, grouping and sorting spill to the server's
    /// temporary disk (`max_bytes_before_external_group_by`, `max_bytes_before_external_sort`).
    /// A statement needing more fails with ClickHouse's memory-limit error instead of growing
    /// until the server is killed. `None`: no setting is sent and the server's profile decides
    /// (a `readonly = 1` user may not change settings).
    pub memory_limit: Option<u64>,
}

impl ClientOptions {
    /// Plain options: `timeout`, no CA file, the `default` user without a password.
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            ca_file: None,
            user: None,
            password: None,
            memory_limit: None,
        }
    }
}

impl fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("timeout", &self.timeout)
            .field("ca_file", &self.ca_file)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .field("memory_limit", &self.memory_limit)
            .finish()
    }
}

/// One statement a recording client ran, with its data and the server's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The statement.
    pub statement: String,
    /// An insert's rows.
    pub data: Option<String>,
    /// The answer text.
    pub answer: String,
}

/// The exchanges of a recording client, in order.
pub type Recording = Arc<Mutex<Vec<Exchange>>>;

/// One ClickHouse server's HTTP endpoint.
#[derive(Debug, Clone)]
pub struct Client {
    url: String,
    /// The user presented, for error messages (`default` when none is configured).
    user: String,
    http: reqwest::blocking::Client,
    /// ClickHouse settings sent with every statement (the memory bound).
    settings: Vec<(&'static str, String)>,
    recording: Option<Recording>,
}

impl Client {
    /// A client of `url` (`http://host:port`), each statement bounded by `timeout`, as the
    /// `default` user without a password.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, ClientError> {
        Self::with_options(url, &ClientOptions::new(timeout))
    }

    /// A client of `url` (`http://host:port` or `https://host:port`) with `options`.
    pub fn with_options(url: &str, options: &ClientOptions) -> Result<Self, ClientError> {
        let url = url.trim_end_matches('/').to_owned();
        let config = |reason: String| ClientError::Config {
            url: url.clone(),
            reason,
        };
        let https = if url.starts_with("https://") {
            true
        } else if url.starts_with("http://") {
            false
        } else {
            return Err(config(
                "the URL must start with http:// or https://".to_owned(),
            ));
        };
        let mut builder = reqwest::blocking::Client::builder()
            .timeout(options.timeout)
            .redirect(reqwest::redirect::Policy::none());
        if https {
            builder = builder
                .use_preconfigured_tls(tls_config(options.ca_file.as_deref()).map_err(config)?);
        } else if let Some(ca_file) = &options.ca_file {
            return Err(config(format!(
                "a CA file ({}) is set but the URL is not https",
                ca_file.display()
            )));
        }
        let mut headers = HeaderMap::new();
        if let Some(user) = &options.user {
            let value = HeaderValue::from_str(user)
                .map_err(|_| config("the user name must be printable ASCII".to_owned()))?;
            headers.insert("x-clickhouse-user", value);
        }
        if let Some(password) = &options.password {
            let mut value = HeaderValue::from_str(password).map_err(|_| {
                config("the password must be printable ASCII (no line breaks)".to_owned())
            })?;
            value.set_sensitive(true);
            headers.insert("x-clickhouse-key", value);
        }
        let http = builder
            .default_headers(headers)
            .build()
            .map_err(|e| config(chain(&e)))?;
        Ok(Self {
            user: options.user.clone().unwrap_or_else(|| "default".to_owned()),
            url,
            http,
            settings: options
                .memory_limit
                .map(memory_settings)
                .unwrap_or_default(),
            recording: None,
        })
    }

    /// This client, also keeping every successful exchange in the returned [`Recording`]
    /// (so tests can replay the statements on another ClickHouse release).
    pub fn recording(mut self) -> (Self, Recording) {
        let recording = Recording::default();
        self.recording = Some(recording.clone());
        (self, recording)
    }

    fn record(&self, statement: &str, data: Option<&str>, answer: &str) {
        if let Some(recording) = &self.recording
            && let Ok(mut exchanges) = recording.lock()
        {
            exchanges.push(Exchange {
                statement: statement.to_owned(),
                data: data.map(str::to_owned),
                answer: answer.to_owned(),
            });
        }
    }

    /// The endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `statement` and returns its answer text.
    pub fn execute(&self, statement: &str) -> Result<String, ClientError> {
        let request = self
            .http
            .post(format!("{}/", self.url))
            .query(&self.settings)
            .body(statement.to_owned());
        let answer = self.send(request)?;
        self.record(statement, None, &answer);
        Ok(answer)
    }

    /// Runs `INSERT … FORMAT TabSeparated` (the `statement`) with `rows` as its data. The
    /// insert into a Distributed table is synchronous: acknowledged when every shard has it.
    pub fn insert(&self, statement: &str, rows: String) -> Result<(), ClientError> {
        let kept = self.recording.as_ref().map(|_| rows.clone());
        let request = self
            .http
            .post(format!("{}/", self.url))
            .query(&[("query", statement), ("insert_distributed_sync", "1")])
            .query(&self.settings)
            .body(rows);
        let answer = self.send(request)?;
        self.record(statement, kept.as_deref(), &answer);
        Ok(())
    }

    /// Rows of a TabSeparated answer, each split into its unescaped fields.
    pub fn rows(&self, statement: &str) -> Result<Vec<Vec<Vec<u8>>>, ClientError> {
        let text = self.execute(statement)?;
        text.lines()
            .map(|line| {
                line.split('\t')
                    .map(|field| sql::tsv_unescape(field).map_err(ClientError::Malformed))
                    .collect()
            })
            .collect()
    }

    fn send(&self, request: reqwest::blocking::RequestBuilder) -> Result<String, ClientError> {
        let unreachable = |e: reqwest::Error| {
            let reason = chain(&e);
            if reason.contains("certificate") || reason.contains("Certificate") {
                ClientError::Untrusted {
                    url: self.url.clone(),
                    reason,
                }
            } else {
                ClientError::Unreachable {
                    url: self.url.clone(),
                    reason,
                }
            }
        };
        let response = request.send().map_err(unreachable)?;
        let status = response.status();
        let body = response.text().map_err(unreachable)?;
        if !status.is_success() {
            let message = body.lines().next().unwrap_or_default().to_owned();
            if is_authentication_failure(status.as_u16(), &message) {
                return Err(ClientError::Denied {
                    url: self.url.clone(),
                    user: self.user.clone(),
                    status: status.as_u16(),
                    message,
                });
            }
            return Err(ClientError::Refused {
                status: status.as_u16(),
                message,
            });
        }
        Ok(body)
    }
}

/// The settings bounding a statement's memory to `limit` bytes: grouping and sorting spill to
/// disk past half of it, so that what is left covers the rest of the statement.
fn memory_settings(limit: u64) -> Vec<(&'static str, String)> {
    let spill = (limit / 2).to_string();
    vec![
        ("max_memory_usage", limit.to_string()),
        ("max_bytes_before_external_group_by", spill.clone()),
        ("max_bytes_before_external_sort", spill),
    ]
}

/// Whether ClickHouse's answer refuses the credentials: HTTP 401 or 403, or one of its
/// authentication error codes (192 unknown user, 193 wrong password, 194 password required,
/// 516 authentication failed), which older releases answer with HTTP 500.
fn is_authentication_failure(status: u16, message: &str) -> bool {
    matches!(status, 401 | 403)
        || ["192", "193", "194", "516"].iter().any(|code| {
            message.starts_with(&format!("Code: {code},"))
                || message.starts_with(&format!("Code: {code}."))
        })
}

/// An error's sources, joined with `: ` — the error's own text too when it has none (reqwest's
/// own text names only the URL, which the caller's message already does; the reason, such as
/// a certificate that does not verify, is in its sources).
fn chain(error: &dyn std::error::Error) -> String {
    let Some(first) = error.source() else {
        return error.to_string();
    };
    let mut text = first.to_string();
    let mut source = first.source();
    while let Some(e) = source {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = e.source();
    }
    text
}

/// The TLS settings of an `https` client: rustls on AWS-LC trusting the platform's CA
/// certificates and those of `ca_file`.
fn tls_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        let pem = std::fs::read(path)
            .map_err(|e| format!("the CA file {} cannot be read: {e}", path.display()))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the CA file {} is not PEM: {e}", path.display()))?;
        if certs.is_empty() {
            return Err(format!(
                "the CA file {} holds no certificate (-----BEGIN CERTIFICATE-----)",
                path.display()
            ));
        }
        for cert in certs {
            roots.add(cert).map_err(|e| {
                format!(
                    "the CA file {} holds an unusable certificate: {e}",
                    path.display()
                )
            })?;
        }
    }
    if roots.is_empty() {
        return Err(
            "no CA certificates to verify the server with: the platform has none (install \
             ca-certificates) and no CA file is set"
                .to_owned(),
        );
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
