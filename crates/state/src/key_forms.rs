//! The one-time tokens of the web application's create-key form (`web_key_forms`): a form sent
//! twice (a reload of the page that showed the new key resends it) creates one key, not two,
//! whichever instance behind a load balancer each sending reaches.
//!
//! The first use is one conditional insert keyed by the SHA-256 of the token: of any number of
//! concurrent uses of one token, on any number of instances, the database lets exactly one
//! through. A token is remembered [`KEY_FORM_MEMORY_SECS`] (a day); an account keeps at most
//! [`KEY_FORMS_PER_ACCOUNT`], the oldest going first. Every write deletes the expired tokens of
//! every account; [`State::purge_web`] does too.

use periscope_model::Timestamp;

use crate::State;
use crate::accounts::{AccountId, unknown_account_on_fk};
use crate::db::on_db;
use crate::error::Result;
use periscope_model::random::digest;

/// How long a create-key form token is remembered, in seconds: a day.
pub const KEY_FORM_MEMORY_SECS: i64 = 86_400;

/// At most this many form tokens per account; the oldest goes first.
pub const KEY_FORMS_PER_ACCOUNT: u32 = 10_000;

impl State {
    /// Records that `account` sent the create-key form carrying `token` at `now`: `true` the
    /// first time, `false` when the token was sent before (less than [`KEY_FORM_MEMORY_SECS`]
    /// ago, by any account). Exactly one of concurrent first uses gets `true`.
    pub async fn first_key_form_use(
        &self,
        account: AccountId,
        token: &str,
        now: Timestamp,
    ) -> Result<bool> {
        let expired = now.unix() - KEY_FORM_MEMORY_SECS;
        let key = digest(token);
        let first = on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM web_key_forms WHERE sent_at <= $1")
                .bind(expired)
                .execute(pool)
                .await?;
            // A row left expired (a concurrent cleanup has not reached it) counts as unsent.
            let inserted = sqlx::query(
                "INSERT INTO web_key_forms (token_digest, account_id, sent_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (token_digest) DO UPDATE \
                 SET account_id = excluded.account_id, sent_at = excluded.sent_at \
                 WHERE web_key_forms.sent_at <= $4",
            )
            .bind(&key)
            .bind(account.as_i64())
            .bind(now.unix())
            .bind(expired)
            .execute(pool)
            .await
            .map_err(unknown_account_on_fk)?
            .rows_affected();
            if inserted == 1 {
                sqlx::query(
                    "DELETE FROM web_key_forms WHERE account_id = $1 AND token_digest NOT IN \
                     (SELECT token_digest FROM web_key_forms WHERE account_id = $1 \
                     ORDER BY sent_at DESC, token_digest LIMIT $2)",
                )
                .bind(account.as_i64())
                .bind(i64::from(KEY_FORMS_PER_ACCOUNT))
                .execute(pool)
                .await?;
            }
            inserted == 1
        });
        Ok(first)
    }
}
