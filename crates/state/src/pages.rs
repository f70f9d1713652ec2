//! Result pages a browser session has already been shown (`web_pages`), so that "Previous
//! page", the browser's Back button and a "Next page" already visited show them again without
//! a new charged search, on whichever instance behind a load balancer the request reaches.
//!
//! A page is keyed by its session (the SHA-256 of the session's CSRF token, a random
//! per-session value that is not the cookie), the SHA-256 of the prefixed query and the page
//! number; it is stored as the web application rendered it (opaque here). It lives
//! [`SHOWN_PAGE_LIFETIME_SECS`] (a search cursor's lifetime) and a session keeps at most
//! [`SHOWN_PAGES_PER_SESSION`], the oldest going first. Every write deletes the expired pages
//! of every session; [`State::purge_web`] does too.

use periscope_model::Timestamp;

use crate::State;
use crate::accounts::{AccountId, unknown_account_on_fk};
use crate::db::on_db;
use crate::error::Result;
use periscope_model::random::digest;

/// How long a page shown is kept, in seconds: a search cursor's lifetime (DECISIONS.md).
pub const SHOWN_PAGE_LIFETIME_SECS: i64 = crate::DEFAULT_CURSOR_LIFETIME_SECS;

/// At most this many pages per session; the oldest goes first.
pub const SHOWN_PAGES_PER_SESSION: u32 = 400;

impl State {
    /// The page `page` of `query` that `session` was shown less than
    /// [`SHOWN_PAGE_LIFETIME_SECS`] before `now`, as it was stored.
    pub async fn shown_page(
        &self,
        session: &str,
        query: &str,
        page: u32,
        now: Timestamp,
    ) -> Result<Option<String>> {
        let row: Option<(String,)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT body FROM web_pages WHERE session_digest = $1 AND query_digest = $2 \
                 AND page = $3 AND shown_at > $4",
            )
            .bind(digest(session))
            .bind(digest(query))
            .bind(i64::from(page))
            .bind(now.unix() - SHOWN_PAGE_LIFETIME_SECS)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(|(body,)| body))
    }

    /// Remembers that `session` (of `account`) was shown `body` as page `page` of `query` at
    /// `now`. An older copy of the page is replaced and the pages after it are forgotten: those
    /// belong to an earlier run of the search, and the next page must follow this page's
    /// cursor. Expired pages (of every session) and the session's pages beyond
    /// [`SHOWN_PAGES_PER_SESSION`] (the oldest) are deleted.
    pub async fn remember_shown_page(
        &self,
        account: AccountId,
        session: &str,
        query: &str,
        page: u32,
        body: &str,
        now: Timestamp,
    ) -> Result<()> {
        let (session, query) = (digest(session), digest(query));
        on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM web_pages WHERE shown_at <= $1")
                .bind(now.unix() - SHOWN_PAGE_LIFETIME_SECS)
                .execute(pool)
                .await?;
            sqlx::query(
                "DELETE FROM web_pages WHERE session_digest = $1 AND query_digest = $2 \
                 AND page > $3",
            )
            .bind(&session)
            .bind(&query)
            .bind(i64::from(page))
            .execute(pool)
            .await?;
            sqlx::query(
                "INSERT INTO web_pages (session_digest, query_digest, page, account_id, body, \
                 shown_at) VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (session_digest, query_digest, page) DO UPDATE \
                 SET account_id = excluded.account_id, body = excluded.body, \
                 shown_at = excluded.shown_at",
            )
            .bind(&session)
            .bind(&query)
            .bind(i64::from(page))
            .bind(account.as_i64())
            .bind(body)
            .bind(now.unix())
            .execute(pool)
            .await
            .map_err(unknown_account_on_fk)?;
            // Over the cap: the oldest go (by time shown, then page number: a search's pages
            // are shown in order).
            sqlx::query(
                "DELETE FROM web_pages WHERE session_digest = $1 AND (query_digest, page) NOT IN \
                 (SELECT query_digest, page FROM web_pages WHERE session_digest = $1 \
                 ORDER BY shown_at DESC, page DESC LIMIT $2)",
            )
            .bind(&session)
            .bind(i64::from(SHOWN_PAGES_PER_SESSION))
            .execute(pool)
            .await?;
        });
        Ok(())
    }
}
