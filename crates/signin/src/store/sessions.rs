//! `signin_sessions`: the sign-in service's own browser sessions, kept by the digest of the
//! cookie value, ending after an idle period, a maximum age, or sign-out.

use sqlx::Row;

use super::{Store, on_db};
use crate::error::StoreError;

/// The user behind a live session.
#[derive(Clone, Debug)]
pub(crate) struct SessionUser {
    pub user_id: i64,
    pub subject: String,
    pub email: String,
    /// When the user signed in (the ID token's `auth_time`).
    pub auth_time: i64,
}

/// How often a session's `last_seen_at` is rewritten at most (seconds).
const TOUCH_EVERY: i64 = 60;

impl Store {
    /// Starts a session for `user_id`.
    pub(crate) async fn create_session(
        &self,
        digest: &str,
        user_id: i64,
        now: i64,
    ) -> Result<(), StoreError> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO signin_sessions (digest, user_id, created_at, last_seen_at) \
                 VALUES ($1, $2, $3, $3)",
            )
            .bind(digest)
            .bind(user_id)
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The session's user if the session is live at `now` (idle for less than `idle` seconds and
    /// younger than `max_age`); a dead session is deleted. Marks the session as seen.
    pub(crate) async fn session(
        &self,
        digest: &str,
        now: i64,
        idle: i64,
        max_age: i64,
    ) -> Result<Option<SessionUser>, StoreError> {
        let row = on_db!(&self.db, |pool| {
            sqlx::query(
                "SELECT s.user_id, s.created_at, s.last_seen_at, u.email, u.subject FROM signin_sessions s \
                 JOIN signin_users u ON u.id = s.user_id WHERE s.digest = $1",
            )
            .bind(digest)
            .fetch_optional(pool)
            .await?
            .map(|row| {
                (
                    row.get::<i64, _>(0),
                    row.get::<i64, _>(1),
                    row.get::<i64, _>(2),
                    row.get::<String, _>(3),
                    row.get::<String, _>(4),
                )
            })
        });
        let Some((user_id, created_at, last_seen_at, email, subject)) = row else {
            return Ok(None);
        };
        if now >= last_seen_at + idle || now >= created_at + max_age {
            self.end_session(digest).await?;
            return Ok(None);
        }
        if now - last_seen_at >= TOUCH_EVERY {
            on_db!(&self.db, |pool| {
                sqlx::query("UPDATE signin_sessions SET last_seen_at = $2 WHERE digest = $1")
                    .bind(digest)
                    .bind(now)
                    .execute(pool)
                    .await?;
            });
        }
        Ok(Some(SessionUser {
            user_id,
            subject,
            email,
            auth_time: created_at,
        }))
    }

    /// Ends the session (nothing happens for an unknown digest).
    pub(crate) async fn end_session(&self, digest: &str) -> Result<(), StoreError> {
        on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM signin_sessions WHERE digest = $1")
                .bind(digest)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}
