//! Problem reports: a signed-in user's description of a problem (at most 4,000 characters, no
//! attachment, no reply), kept for the administrator's `periscope admin reports`.

use periscope_model::Timestamp;

use crate::accounts::{AccountId, Email, timestamp};
use crate::db::on_db;
use crate::error::{Result, StateError};
use periscope_model::random;

use crate::State;

/// The longest description accepted, in characters.
pub const REPORT_MAX_CHARS: usize = 4_000;

/// Identifies a problem report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportId(i64);

impl ReportId {
    /// The id as stored.
    pub fn as_i64(self) -> i64 {
        self.0
    }
}

/// A stored problem report, with its author's email address for the administrator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemReport {
    /// Its id.
    pub id: ReportId,
    /// The account that sent it.
    pub account: AccountId,
    /// That account's email address.
    pub email: Email,
    /// When it was sent.
    pub created_at: Timestamp,
    /// What the user wrote.
    pub description: String,
}

/// Checks a description: not blank, at most [`REPORT_MAX_CHARS`] characters. Kept as written
/// (line breaks included); only surrounding whitespace is trimmed.
pub fn check_description(description: &str) -> Result<&str> {
    let description = description.trim();
    if description.is_empty() {
        return Err(StateError::invalid(
            "problem report",
            "the description is empty",
        ));
    }
    if description.chars().count() > REPORT_MAX_CHARS {
        return Err(StateError::invalid(
            "problem report",
            format!("the description is longer than {REPORT_MAX_CHARS} characters"),
        ));
    }
    Ok(description)
}

impl State {
    /// Stores a problem report from a signed-in account.
    pub async fn submit_report(
        &self,
        account: AccountId,
        description: &str,
        now: Timestamp,
    ) -> Result<ReportId> {
        let description = check_description(description)?;
        let id = random::id()?;
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO problem_reports (id, account_id, created_at, description) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(id)
            .bind(account.as_i64())
            .bind(now.unix())
            .bind(description)
            .execute(pool)
            .await
            .map_err(crate::accounts::unknown_account_on_fk)?;
        });
        Ok(ReportId(id))
    }

    /// Problem reports, newest first, at most `limit`.
    pub async fn reports(&self, limit: u32) -> Result<Vec<ProblemReport>> {
        let rows: Vec<(i64, i64, String, i64, String)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT r.id, r.account_id, a.email, r.created_at, r.description \
                 FROM problem_reports r JOIN accounts a ON a.id = r.account_id \
                 ORDER BY r.created_at DESC, r.id DESC LIMIT $1",
            )
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter()
            .map(|(id, account, email, created, description)| {
                Ok(ProblemReport {
                    id: ReportId(id),
                    account: AccountId::from_i64(account),
                    email: Email::parse(&email)
                        .map_err(|_| StateError::Corrupt("accounts.email"))?,
                    created_at: timestamp(created, "problem_reports.created_at")?,
                    description,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions() {
        assert_eq!(check_description("  it broke\n").unwrap(), "it broke");
        assert!(check_description(" \n ").is_err());
        assert!(check_description(&"é".repeat(4_000)).is_ok());
        assert!(check_description(&"é".repeat(4_001)).is_err());
    }
}
