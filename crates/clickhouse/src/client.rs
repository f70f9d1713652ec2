//! A small client of ClickHouse's HTTP interface: a statement is POSTed as the body (or, for
//! an insert, in the `query` parameter with the rows as the body); a non-200 answer is an
//! error carrying the server's message. Answers are read as TabSeparated text.

use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    http: reqwest::blocking::Client,
    recording: Option<Recording>,
}

impl Client {
    /// A client of `url` (`http://host:port`), each statement bounded by `timeout`.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, ClientError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| ClientError::Unreachable {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            url: url.trim_end_matches('/').to_owned(),
            http,
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
        let unreachable = |e: reqwest::Error| ClientError::Unreachable {
            url: self.url.clone(),
            reason: e.to_string(),
        };
        let response = request.send().map_err(unreachable)?;
        let status = response.status();
        let body = response.text().map_err(unreachable)?;
        if !status.is_success() {
            let message = body.lines().next().unwrap_or_default().to_owned();
            return Err(ClientError::Refused {
                status: status.as_u16(),
                message,
            });
        }
        Ok(body)
    }
}
