//! `signin_failures`: failed sign-ins, one row per failure and per limit it counts against
//! (the account, the client address), both subjects stored as SHA-256 digests. Every instance
//! on the database counts the same rows, so the limits hold for the service as a whole.

use super::{Store, on_db};
use crate::error::StoreError;
use crate::random::digest;

const ACCOUNT: &str = "account";
const CLIENT: &str = "client";

impl Store {
    /// How many failures `account_key` and `client` each had after `since`: `(account,
    /// client)`.
    pub(crate) async fn recent_failures(
        &self,
        account_key: &str,
        client: &str,
        since: i64,
    ) -> Result<(u64, u64), StoreError> {
        let sql = "SELECT COUNT(*) FROM signin_failures WHERE kind = $1 AND subject = $2 \
                   AND failed_at > $3";
        let mut counts = [0u64; 2];
        for (count, (kind, subject)) in counts
            .iter_mut()
            .zip([(ACCOUNT, account_key), (CLIENT, client)])
        {
            let (n,): (i64,) = on_db!(&self.db, |pool| {
                sqlx::query_as(sql)
                    .bind(kind)
                    .bind(digest(subject))
                    .bind(since)
                    .fetch_one(pool)
                    .await?
            });
            *count = u64::try_from(n).unwrap_or(0);
        }
        Ok((counts[0], counts[1]))
    }

    /// Records a failed sign-in for `account_key` from `client` at `now`, and deletes the
    /// failures of every account and client at or before `forget_before` (out of the window).
    pub(crate) async fn record_failure(
        &self,
        account_key: &str,
        client: &str,
        now: i64,
        forget_before: i64,
    ) -> Result<(), StoreError> {
        on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM signin_failures WHERE failed_at <= $1")
                .bind(forget_before)
                .execute(pool)
                .await?;
            sqlx::query(
                "INSERT INTO signin_failures (kind, subject, failed_at) \
                 VALUES ($1, $2, $5), ($3, $4, $5)",
            )
            .bind(ACCOUNT)
            .bind(digest(account_key))
            .bind(CLIENT)
            .bind(digest(client))
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}
