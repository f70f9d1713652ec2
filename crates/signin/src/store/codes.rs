//! `signin_codes` and `signin_access_tokens`: authorization codes (single use, short-lived,
//! bound to client, redirect URI, PKCE challenge and nonce) and the access tokens the token
//! endpoint issues for userinfo. A replayed code revokes the tokens issued for it.

use sqlx::Row;

use super::users::{User, user_from_row};
use super::{Store, on_db};
use crate::error::StoreError;

/// A code to store.
pub(crate) struct NewCode<'a> {
    pub digest: &'a str,
    pub client_id: &'a str,
    pub user_id: i64,
    pub redirect_uri: &'a str,
    pub code_challenge: &'a str,
    pub nonce: Option<&'a str>,
    pub scope: &'a str,
    pub auth_time: i64,
    pub now: i64,
    pub expires_at: i64,
}

/// What a redeemed code was issued for.
#[derive(Clone, Debug)]
pub(crate) struct CodeGrant {
    pub client_id: String,
    pub user_id: i64,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub nonce: Option<String>,
    pub scope: String,
    pub auth_time: i64,
}

/// The outcome of redeeming a code.
#[derive(Debug)]
pub(crate) enum Redeemed {
    /// First use, in time.
    Granted(CodeGrant),
    /// Used before: the tokens issued for it were revoked.
    Replayed,
    /// First use, too late.
    Expired,
    /// Never issued.
    Unknown,
}

impl Store {
    /// Stores an authorization code.
    pub(crate) async fn insert_code(&self, c: &NewCode<'_>) -> Result<(), StoreError> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO signin_codes (digest, client_id, user_id, redirect_uri, \
                 code_challenge, nonce, scope, auth_time, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(c.digest)
            .bind(c.client_id)
            .bind(c.user_id)
            .bind(c.redirect_uri)
            .bind(c.code_challenge)
            .bind(c.nonce)
            .bind(c.scope)
            .bind(c.auth_time)
            .bind(c.now)
            .bind(c.expires_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Marks the code used and returns what it grants. Of concurrent redemptions exactly one
    /// gets [`Redeemed::Granted`]; any later one revokes the access tokens issued for it.
    pub(crate) async fn redeem_code(&self, digest: &str, now: i64) -> Result<Redeemed, StoreError> {
        let taken = on_db!(&self.db, |pool| {
            sqlx::query(
                "UPDATE signin_codes SET used_at = $2 WHERE digest = $1 AND used_at IS NULL \
                 RETURNING client_id, user_id, redirect_uri, code_challenge, nonce, scope, \
                 auth_time, expires_at",
            )
            .bind(digest)
            .bind(now)
            .fetch_optional(pool)
            .await?
            .map(|row| {
                let expires_at: i64 = row.get(7);
                (
                    CodeGrant {
                        client_id: row.get(0),
                        user_id: row.get(1),
                        redirect_uri: row.get(2),
                        code_challenge: row.get(3),
                        nonce: row.get(4),
                        scope: row.get(5),
                        auth_time: row.get(6),
                    },
                    expires_at,
                )
            })
        });
        if let Some((grant, expires_at)) = taken {
            return Ok(if expires_at <= now {
                Redeemed::Expired
            } else {
                Redeemed::Granted(grant)
            });
        }
        let known = on_db!(&self.db, |pool| {
            sqlx::query("SELECT 1 FROM signin_codes WHERE digest = $1")
                .bind(digest)
                .fetch_optional(pool)
                .await?
                .is_some()
        });
        if !known {
            return Ok(Redeemed::Unknown);
        }
        on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM signin_access_tokens WHERE code_digest = $1")
                .bind(digest)
                .execute(pool)
                .await?;
        });
        Ok(Redeemed::Replayed)
    }

    /// Stores an access token issued for the code with `code_digest`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn insert_access_token(
        &self,
        digest: &str,
        code_digest: &str,
        client_id: &str,
        user_id: i64,
        scope: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO signin_access_tokens (digest, code_digest, client_id, user_id, scope, \
                 created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(digest)
            .bind(code_digest)
            .bind(client_id)
            .bind(user_id)
            .bind(scope)
            .bind(now)
            .bind(expires_at)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The user of an access token that is live at `now`.
    pub(crate) async fn access_token_user(
        &self,
        digest: &str,
        now: i64,
    ) -> Result<Option<User>, StoreError> {
        Ok(on_db!(&self.db, |pool| {
            sqlx::query(
                "SELECT u.id, u.subject, u.email, u.org_name, u.terms_version, \
                 u.terms_accepted_at, u.marketing_consent, u.created_at, u.confirmed_at, \
                 u.password_hash FROM signin_access_tokens t \
                 JOIN signin_users u ON u.id = t.user_id \
                 WHERE t.digest = $1 AND t.expires_at > $2",
            )
            .bind(digest)
            .bind(now)
            .fetch_optional(pool)
            .await?
            .map(|row| user_from_row!(row))
        }))
    }

    /// Deletes what can no longer be used at `now`: expired codes and tokens, links that
    /// expired or were used over a day ago, and sessions idle for `session_idle` seconds.
    /// Returns how many rows went.
    pub(crate) async fn purge(&self, now: i64, session_idle: i64) -> Result<u64, StoreError> {
        let statements: [(&str, i64); 4] = [
            // A replayed code must stay known until it would have expired anyway.
            (
                "DELETE FROM signin_codes WHERE expires_at <= $1",
                now - 3600,
            ),
            (
                "DELETE FROM signin_access_tokens WHERE expires_at <= $1",
                now,
            ),
            (
                "DELETE FROM signin_links WHERE expires_at <= $1 OR used_at <= $1",
                now - 86_400,
            ),
            (
                "DELETE FROM signin_sessions WHERE last_seen_at <= $1",
                now - session_idle,
            ),
        ];
        let mut gone = 0;
        for (sql, bound) in statements {
            gone += on_db!(&self.db, |pool| {
                sqlx::query(sql)
                    .bind(bound)
                    .execute(pool)
                    .await?
                    .rows_affected()
            });
        }
        Ok(gone)
    }
}
