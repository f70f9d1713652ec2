//! Search cursors: `sc1_` + 32 base64url characters (24 random bytes), stored so that any
//! instance behind a load balancer can honour them; one-time, bound to the account, the query
//! and the page limit, and valid until an expiry the search service chooses (10 minutes by
//! default).
//!
//! Taking a cursor is one conditional `UPDATE … RETURNING`: of two concurrent requests with the
//! same cursor, exactly one gets the position. A cursor presented with another query or limit
//! is left unchanged ([`CursorTake::Mismatch`] → 422 `query_mismatch`); unknown, expired,
//! used and other accounts' cursors are all [`CursorTake::Gone`] (410 `cursor_gone`).

use std::fmt;

use periscope_model::Timestamp;

use crate::accounts::AccountId;
use crate::db::on_db;
use crate::error::Result;
use periscope_model::random;

use crate::State;

const PREFIX: &str = "sc1_";
const RANDOM_BYTES: usize = 24;
/// The length of a cursor token: `sc1_` + 32.
pub const CURSOR_LEN: usize = 36;

/// The default lifetime of a search cursor, in seconds.
pub const DEFAULT_CURSOR_LIFETIME_SECS: i64 = 600;

/// A well-formed search cursor token.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct CursorToken(String);

impl CursorToken {
    fn generate() -> Result<Self> {
        let mut bytes = [0u8; RANDOM_BYTES];
        random::fill(&mut bytes)?;
        Ok(Self(format!("{PREFIX}{}", random::base64url(&bytes))))
    }

    /// The token if `s` has the shape of one (36 characters, `sc1_`, base64url); `None` is a
    /// malformed cursor (422 `invalid` on `cursor`).
    pub fn parse(s: &str) -> Option<Self> {
        (s.len() == CURSOR_LEN
            && s.starts_with(PREFIX)
            && s.as_bytes()[PREFIX.len()..]
                .iter()
                .all(|&c| random::is_base64url(c)))
        .then(|| Self(s.to_owned()))
    }

    /// The token, as sent to the client.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for CursorToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens are bearer values of a sort: show only the start.
        write!(f, "CursorToken({}…)", &self.0[..PREFIX.len() + 4])
    }
}

impl fmt::Display for CursorToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a new cursor is bound to and where it resumes.
#[derive(Debug, Clone)]
pub struct NewCursor<'a> {
    /// The account it was issued to.
    pub account: AccountId,
    /// The query text it was issued for (compared exactly when it is used).
    pub query: &'a str,
    /// The page limit it was issued for.
    pub limit: u32,
    /// Where the next page starts, in a form the search service chooses (opaque here).
    pub resume_after: &'a str,
    /// When it stops being usable.
    pub expires_at: Timestamp,
}

/// The outcome of [`State::take_cursor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CursorTake {
    /// The cursor was valid and is now used; the next page starts after this position.
    Taken {
        /// The position stored with the cursor.
        resume_after: String,
    },
    /// The cursor is valid but was issued for another query or limit; it stays unused.
    Mismatch,
    /// Unknown, expired, used, or issued to another account.
    Gone,
}

impl State {
    /// Stores a new cursor and returns its token.
    pub async fn create_cursor(&self, new: &NewCursor<'_>, now: Timestamp) -> Result<CursorToken> {
        let token = CursorToken::generate()?;
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO search_cursors (token, account_id, query, page_limit, \
                 resume_after, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(token.as_str())
            .bind(new.account.as_i64())
            .bind(new.query)
            .bind(i64::from(new.limit))
            .bind(new.resume_after)
            .bind(now.unix())
            .bind(new.expires_at.unix())
            .execute(pool)
            .await
            .map_err(crate::accounts::unknown_account_on_fk)?;
        });
        Ok(token)
    }

    /// Uses a cursor once: exactly one of any number of concurrent calls with the same token
    /// gets [`CursorTake::Taken`].
    pub async fn take_cursor(
        &self,
        token: &CursorToken,
        account: AccountId,
        query: &str,
        limit: u32,
        now: Timestamp,
    ) -> Result<CursorTake> {
        let taken: Option<(String,)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "UPDATE search_cursors SET used_at = $5 \
                 WHERE token = $1 AND account_id = $2 AND query = $3 AND page_limit = $4 \
                 AND used_at IS NULL AND expires_at > $5 \
                 RETURNING resume_after",
            )
            .bind(token.as_str())
            .bind(account.as_i64())
            .bind(query)
            .bind(i64::from(limit))
            .bind(now.unix())
            .fetch_optional(pool)
            .await?
        });
        if let Some((resume_after,)) = taken {
            return Ok(CursorTake::Taken { resume_after });
        }
        // Not taken: a mismatch only if the cursor is otherwise usable by this account.
        let usable: Option<(i64,)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT account_id FROM search_cursors WHERE token = $1 AND account_id = $2 \
                 AND used_at IS NULL AND expires_at > $3",
            )
            .bind(token.as_str())
            .bind(account.as_i64())
            .bind(now.unix())
            .fetch_optional(pool)
            .await?
        });
        Ok(if usable.is_some() {
            CursorTake::Mismatch
        } else {
            CursorTake::Gone
        })
    }

    /// Makes a taken cursor usable again, for a search that took it and then did not answer
    /// 200 (so the client can retry the page). No effect on other accounts' cursors or on an
    /// expired one (its expiry is unchanged).
    pub async fn release_cursor(&self, token: &CursorToken, account: AccountId) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "UPDATE search_cursors SET used_at = NULL WHERE token = $1 AND account_id = $2",
            )
            .bind(token.as_str())
            .bind(account.as_i64())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Deletes a cursor that was issued for a page the client never received (its search
    /// was refused when it was charged), so it cannot be used. No effect on other accounts'
    /// cursors.
    pub async fn discard_cursor(&self, token: &CursorToken, account: AccountId) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM search_cursors WHERE token = $1 AND account_id = $2")
                .bind(token.as_str())
                .bind(account.as_i64())
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Deletes cursors expired at `now`; returns how many. Used cursors stay until they
    /// expire, but a deleted one answers the same [`CursorTake::Gone`].
    pub async fn purge_cursors(&self, now: Timestamp) -> Result<u64> {
        Ok(on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM search_cursors WHERE expires_at <= $1")
                .bind(now.unix())
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens() {
        let t = CursorToken::generate().unwrap();
        assert_eq!(t.as_str().len(), CURSOR_LEN);
        assert_eq!(CursorToken::parse(t.as_str()), Some(t.clone()));
        assert_ne!(t, CursorToken::generate().unwrap());
        for bad in [
            "",
            "sc1_",
            &t.as_str()[1..],
            &format!("sc2_{}", &t.as_str()[4..]),
            &format!("sc1_{}=", "a".repeat(31)),
            &format!("sc1_{}.", "a".repeat(31)),
        ] {
            assert_eq!(CursorToken::parse(bad), None, "{bad:?}");
        }
        assert!(format!("{t:?}").starts_with("CursorToken(sc1_"));
    }
}
