//! Audit records: one per request of the search capability (search, count, facets, exposure,
//! host detail, from the API or the browser), written *before* the request runs. If the write
//! fails the service answers 503 `audit_unavailable`, runs nothing and charges nothing; the
//! outcome is added afterwards.
//!
//! The record holds who (account, and the API key when one was used), when, through which
//! channel, which operation, its subject (the query text, or the IP address for host detail),
//! the request id that the response carries, the client's address, and later the outcome.

use std::net::IpAddr;

use periscope_model::Timestamp;

use crate::accounts::{AccountId, timestamp};
use crate::db::on_db;
use crate::error::{Result, StateError};
use crate::keys::KeyId;
use periscope_model::random;

use crate::State;

/// How a request reached the search service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The JSON HTTP API under `/v1`.
    Api,
    /// The browser application.
    Web,
}

impl Channel {
    /// The stored name (`api`, `web`).
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Api => "api",
            Channel::Web => "web",
        }
    }

    fn from_stored(s: &str) -> Result<Self> {
        match s {
            "api" => Ok(Channel::Api),
            "web" => Ok(Channel::Web),
            _ => Err(StateError::Corrupt("audit_records.channel")),
        }
    }
}

/// Which operation of the search capability was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A search page (`POST /v1/search`).
    Search,
    /// A count (`POST /v1/search/count`).
    Count,
    /// Suggested filters (`POST /v1/search/facets`).
    Facets,
    /// The Globe view's buckets (`POST /v1/search/exposure`).
    Exposure,
    /// One host's services (`POST /v1/hosts/detail`).
    HostDetail,
}

impl Operation {
    /// The stored name (`search`, `count`, `facets`, `exposure`, `host_detail`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Search => "search",
            Operation::Count => "count",
            Operation::Facets => "facets",
            Operation::Exposure => "exposure",
            Operation::HostDetail => "host_detail",
        }
    }

    fn from_stored(s: &str) -> Result<Self> {
        Ok(match s {
            "search" => Operation::Search,
            "count" => Operation::Count,
            "facets" => Operation::Facets,
            "exposure" => Operation::Exposure,
            "host_detail" => Operation::HostDetail,
            _ => return Err(StateError::Corrupt("audit_records.operation")),
        })
    }
}

/// Identifies an audit record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuditId(i64);

impl AuditId {
    /// The id as stored.
    pub fn as_i64(self) -> i64 {
        self.0
    }
}

/// What is recorded before a request runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// The request id the response carries (`request_id`, `X-Request-ID`).
    pub request_id: String,
    /// When the request arrived.
    pub at: Timestamp,
    /// The account it runs for.
    pub account: AccountId,
    /// The API key it came with (`None` for the browser).
    pub key: Option<KeyId>,
    /// The channel.
    pub channel: Channel,
    /// The operation.
    pub operation: Operation,
    /// The query text as sent, or the IP address for host detail.
    pub subject: Option<String>,
    /// The client's address as the server determined it (the peer, or the client behind a
    /// trusted proxy); `None` for records written before it was kept, or when unknown.
    pub client: Option<IpAddr>,
}

/// A stored audit record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    /// Its id.
    pub id: AuditId,
    /// What was recorded before the request ran.
    pub entry: AuditEntry,
    /// How the request ended (`ok` or the error code), once known.
    pub outcome: Option<String>,
}

type AuditRow = (
    i64,
    String,
    i64,
    i64,
    Option<i64>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn record_from_row(row: AuditRow) -> Result<AuditRecord> {
    let (id, request_id, at, account, key, channel, operation, subject, client, outcome) = row;
    let client = match client {
        None => None,
        Some(text) => Some(
            text.parse::<IpAddr>()
                .map_err(|_| StateError::Corrupt("audit_records.client"))?,
        ),
    };
    Ok(AuditRecord {
        id: AuditId(id),
        entry: AuditEntry {
            request_id,
            at: timestamp(at, "audit_records.recorded_at")?,
            account: AccountId::from_i64(account),
            key: key.map(KeyId::from_i64),
            channel: Channel::from_stored(&channel)?,
            operation: Operation::from_stored(&operation)?,
            subject,
            client,
        },
        outcome,
    })
}

impl State {
    /// Writes an audit record; the request may run only once this returned `Ok`.
    pub async fn write_audit(&self, entry: &AuditEntry) -> Result<AuditId> {
        let id = random::id()?;
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO audit_records (id, recorded_at, request_id, account_id, key_id, \
                 channel, operation, subject, client) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            )
            .bind(id)
            .bind(entry.at.unix())
            .bind(&entry.request_id)
            .bind(entry.account.as_i64())
            .bind(entry.key.map(KeyId::as_i64))
            .bind(entry.channel.as_str())
            .bind(entry.operation.as_str())
            .bind(&entry.subject)
            .bind(entry.client.map(|ip| ip.to_string()))
            .execute(pool)
            .await
            .map_err(crate::accounts::unknown_account_on_fk)?;
        });
        Ok(AuditId(id))
    }

    /// Adds how the request ended to its audit record.
    pub async fn write_audit_outcome(&self, id: AuditId, outcome: &str) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query("UPDATE audit_records SET outcome = $1 WHERE id = $2")
                .bind(outcome)
                .bind(id.0)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// The newest audit records first, of one account or of all, at most `limit`.
    pub async fn audit_records(
        &self,
        account: Option<AccountId>,
        limit: u32,
    ) -> Result<Vec<AuditRecord>> {
        let rows: Vec<AuditRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT id, request_id, recorded_at, account_id, key_id, channel, operation, \
                 subject, client, outcome FROM audit_records \
                 WHERE $1 IS NULL OR account_id = $1 \
                 ORDER BY recorded_at DESC, id DESC LIMIT $2",
            )
            .bind(account.map(AccountId::as_i64))
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(record_from_row).collect()
    }
}
