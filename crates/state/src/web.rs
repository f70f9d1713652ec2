//! The web application's records: which account an OpenID Connect identity signs in as
//! (`web_identities`), browser sessions (`web_sessions`, stored as the SHA-256 of the cookie
//! value, with an idle timeout checked on every lookup), and sign-ins in flight between the
//! redirect to the provider and its callback (`web_sign_ins`, keyed by the SHA-256 of the OAuth
//! `state`, single use).
//!
//! The session id, the OAuth state and the PKCE verifier come from the web crate; this module
//! never logs them and stores the first two only hashed.

use periscope_model::Timestamp;
use periscope_model::random::digest;

use crate::AccountId;
use crate::State;
use crate::accounts::unknown_account_on_fk;
use crate::db::on_db;
use crate::error::Result;

/// A live browser session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSession {
    /// The signed-in account.
    pub account: AccountId,
    /// The token every state-changing form of this session must carry.
    pub csrf: String,
    /// The provider's ID token, the `id_token_hint` of RP-initiated logout.
    pub id_token: String,
}

/// What a session cookie leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebSessionLookup {
    /// A live session (its idle time restarts now).
    Active(WebSession),
    /// The session existed and was idle too long; it is deleted now.
    Expired,
    /// No such session (never existed, signed out, or purged).
    Unknown,
}

/// A sign-in in flight, as recorded before the redirect to the provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSignIn {
    /// The nonce sent in the authorization request, expected in the ID token.
    pub nonce: String,
    /// The PKCE code verifier.
    pub pkce_verifier: String,
    /// Where the browser returns after signing in (a same-origin relative path and query).
    pub return_to: String,
}

impl State {
    /// The account an identity (issuer, subject) signs in as, if it signed in before.
    pub async fn identity_account(&self, issuer: &str, subject: &str) -> Result<Option<AccountId>> {
        let row: Option<(i64,)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT account_id FROM web_identities WHERE issuer = $1 AND subject = $2",
            )
            .bind(issuer)
            .bind(subject)
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(|(id,)| AccountId::from_i64(id)))
    }

    /// Records that the identity (issuer, subject) signs in as `account`; a no-op when it is
    /// recorded already (the first record stays).
    pub async fn link_identity(
        &self,
        issuer: &str,
        subject: &str,
        account: AccountId,
        now: Timestamp,
    ) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO web_identities (issuer, subject, account_id, created_at) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, subject) DO NOTHING",
            )
            .bind(issuer)
            .bind(subject)
            .bind(account.as_i64())
            .bind(now.unix())
            .execute(pool)
            .await
            .map_err(unknown_account_on_fk)?;
        });
        Ok(())
    }

    /// Starts a browser session whose cookie value is `session_id` (stored hashed).
    pub async fn create_web_session(
        &self,
        session_id: &str,
        account: AccountId,
        csrf: &str,
        id_token: &str,
        now: Timestamp,
    ) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO web_sessions (digest, account_id, csrf, id_token, created_at, \
                 last_seen_at) VALUES ($1, $2, $3, $4, $5, $5)",
            )
            .bind(digest(session_id))
            .bind(account.as_i64())
            .bind(csrf)
            .bind(id_token)
            .bind(now.unix())
            .execute(pool)
            .await
            .map_err(unknown_account_on_fk)?;
        });
        Ok(())
    }

    /// Looks a session up. A session last seen `idle_secs` or more ago is deleted and reported
    /// `Expired`; a live one has its idle time restarted.
    pub async fn web_session(
        &self,
        session_id: &str,
        now: Timestamp,
        idle_secs: i64,
    ) -> Result<WebSessionLookup> {
        let key = digest(session_id);
        let row: Option<(i64, String, String, i64)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT account_id, csrf, id_token, last_seen_at FROM web_sessions \
                 WHERE digest = $1",
            )
            .bind(&key)
            .fetch_optional(pool)
            .await?
        });
        let Some((account, csrf, id_token, last_seen)) = row else {
            return Ok(WebSessionLookup::Unknown);
        };
        if now.unix() - last_seen >= idle_secs {
            on_db!(&self.db, |pool| {
                sqlx::query("DELETE FROM web_sessions WHERE digest = $1")
                    .bind(&key)
                    .execute(pool)
                    .await?;
            });
            return Ok(WebSessionLookup::Expired);
        }
        on_db!(&self.db, |pool| {
            sqlx::query("UPDATE web_sessions SET last_seen_at = $1 WHERE digest = $2")
                .bind(now.unix())
                .bind(&key)
                .execute(pool)
                .await?;
        });
        Ok(WebSessionLookup::Active(WebSession {
            account: AccountId::from_i64(account),
            csrf,
            id_token,
        }))
    }

    /// Ends a session; returns it when it existed.
    pub async fn end_web_session(&self, session_id: &str) -> Result<Option<WebSession>> {
        let row: Option<(i64, String, String)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "DELETE FROM web_sessions WHERE digest = $1 \
                 RETURNING account_id, csrf, id_token",
            )
            .bind(digest(session_id))
            .fetch_optional(pool)
            .await?
        });
        Ok(row.map(|(account, csrf, id_token)| WebSession {
            account: AccountId::from_i64(account),
            csrf,
            id_token,
        }))
    }

    /// Records a sign-in in flight under its OAuth `state` (stored hashed), usable until
    /// `expires_at`.
    pub async fn begin_web_sign_in(
        &self,
        state: &str,
        pending: &PendingSignIn,
        now: Timestamp,
        expires_at: Timestamp,
    ) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "INSERT INTO web_sign_ins (digest, nonce, pkce_verifier, return_to, \
                 created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(digest(state))
            .bind(&pending.nonce)
            .bind(&pending.pkce_verifier)
            .bind(&pending.return_to)
            .bind(now.unix())
            .bind(expires_at.unix())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Takes (deletes and returns) the sign-in in flight under `state`, if it exists and has
    /// not expired. Of two concurrent takes, one gets it.
    pub async fn take_web_sign_in(
        &self,
        state: &str,
        now: Timestamp,
    ) -> Result<Option<PendingSignIn>> {
        let row: Option<(String, String, String, i64)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "DELETE FROM web_sign_ins WHERE digest = $1 \
                 RETURNING nonce, pkce_verifier, return_to, expires_at",
            )
            .bind(digest(state))
            .fetch_optional(pool)
            .await?
        });
        Ok(row
            .filter(|&(_, _, _, expires_at)| now.unix() < expires_at)
            .map(|(nonce, pkce_verifier, return_to, _)| PendingSignIn {
                nonce,
                pkce_verifier,
                return_to,
            }))
    }

    /// Deletes sessions idle for `idle_secs` or more, expired sign-ins in flight, expired
    /// result pages shown ([`crate::SHOWN_PAGE_LIFETIME_SECS`]) and expired create-key form
    /// tokens ([`crate::KEY_FORM_MEMORY_SECS`]); returns how many rows went.
    pub async fn purge_web(&self, now: Timestamp, idle_secs: i64) -> Result<u64> {
        Ok(on_db!(&self.db, |pool| {
            let sessions = sqlx::query("DELETE FROM web_sessions WHERE last_seen_at <= $1")
                .bind(now.unix() - idle_secs)
                .execute(pool)
                .await?
                .rows_affected();
            let sign_ins = sqlx::query("DELETE FROM web_sign_ins WHERE expires_at <= $1")
                .bind(now.unix())
                .execute(pool)
                .await?
                .rows_affected();
            let pages = sqlx::query("DELETE FROM web_pages WHERE shown_at <= $1")
                .bind(now.unix() - crate::SHOWN_PAGE_LIFETIME_SECS)
                .execute(pool)
                .await?
                .rows_affected();
            let forms = sqlx::query("DELETE FROM web_key_forms WHERE sent_at <= $1")
                .bind(now.unix() - crate::KEY_FORM_MEMORY_SECS)
                .execute(pool)
                .await?
                .rows_affected();
            sessions + sign_ins + pages + forms
        }))
    }
}
