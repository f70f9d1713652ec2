//! `signin_users` and `signin_links`: registrations, their e-mailed links, and confirmed
//! accounts with their password hash.

use sqlx::Row;

use super::{Store, on_db};
use crate::error::StoreError;

/// What registration stores.
pub(crate) struct NewRegistration<'a> {
    pub email: &'a str,
    pub email_key: &'a str,
    pub org_name: &'a str,
    pub terms_version: &'a str,
    pub marketing_consent: bool,
    pub now: i64,
    /// The digest of the link's token, and when the link stops working.
    pub link_digest: &'a str,
    pub link_expires_at: i64,
}

/// The outcome of a registration.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Registered {
    /// A new pending registration.
    Created,
    /// The address had a pending (never confirmed) registration: its details were replaced and
    /// its earlier links stopped working.
    Renewed,
    /// The address belongs to a confirmed account: nothing was changed.
    AddressTaken,
}

/// A stored user, pending or confirmed.
#[derive(Clone, Debug)]
pub(crate) struct User {
    pub id: i64,
    pub subject: String,
    pub email: String,
    pub org_name: String,
    pub terms_version: String,
    pub terms_accepted_at: i64,
    pub marketing_consent: bool,
    pub created_at: i64,
    pub confirmed_at: Option<i64>,
    pub password_hash: Option<String>,
}

/// What the link with a given digest can do.
#[derive(Debug)]
pub(crate) enum LinkStatus {
    /// It can still be used, for this user's address.
    Usable { email: String },
    /// It was used already.
    Used,
    /// Its time ran out.
    Expired,
    /// No such link (never issued, or replaced by a newer registration).
    Unknown,
}

/// The outcome of using a link to set a password.
#[derive(Debug)]
pub(crate) enum Confirmed {
    /// The address is confirmed and the password set.
    Done { email: String },
    /// The link cannot be used (any more).
    Refused(LinkStatus),
}

const USER_COLUMNS: &str = "id, subject, email, org_name, terms_version, terms_accepted_at, \
                            marketing_consent, created_at, confirmed_at, password_hash";

/// A [`User`] from a row of `SELECT {USER_COLUMNS}` (a macro: the row type differs per database).
macro_rules! user_from_row {
    ($row:expr) => {{
        let row = $row;
        User {
            id: row.get(0),
            subject: row.get(1),
            email: row.get(2),
            org_name: row.get(3),
            terms_version: row.get(4),
            terms_accepted_at: row.get(5),
            marketing_consent: row.get(6),
            created_at: row.get(7),
            confirmed_at: row.get(8),
            password_hash: row.get(9),
        }
    }};
}
pub(crate) use user_from_row;

impl Store {
    /// Records a registration and its link, in one transaction. A confirmed address is left
    /// as it is ([`Registered::AddressTaken`]); concurrent registrations of one address
    /// create one user.
    pub(crate) async fn register(&self, r: &NewRegistration<'_>) -> Result<Registered, StoreError> {
        let id = crate::random::id()?;
        let subject = crate::random::subject()?;
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO signin_users (id, subject, email, email_key, org_name, terms_version, \
                 terms_accepted_at, marketing_consent, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $7) \
                 ON CONFLICT (email_key) DO NOTHING RETURNING id",
            )
            .bind(id)
            .bind(&subject)
            .bind(r.email)
            .bind(r.email_key)
            .bind(r.org_name)
            .bind(r.terms_version)
            .bind(r.now)
            .bind(r.marketing_consent)
            .fetch_optional(&mut *tx)
            .await?;
            let (user_id, outcome) = match inserted {
                Some(row) => (row.get::<i64, _>(0), Registered::Created),
                None => {
                    let existing = sqlx::query(
                        "UPDATE signin_users SET email = $2, org_name = $3, terms_version = $4, \
                         terms_accepted_at = $5, marketing_consent = $6 \
                         WHERE email_key = $1 AND confirmed_at IS NULL RETURNING id",
                    )
                    .bind(r.email_key)
                    .bind(r.email)
                    .bind(r.org_name)
                    .bind(r.terms_version)
                    .bind(r.now)
                    .bind(r.marketing_consent)
                    .fetch_optional(&mut *tx)
                    .await?;
                    let Some(row) = existing else {
                        return Ok(Registered::AddressTaken);
                    };
                    let user_id: i64 = row.get(0);
                    sqlx::query("DELETE FROM signin_links WHERE user_id = $1")
                        .bind(user_id)
                        .execute(&mut *tx)
                        .await?;
                    (user_id, Registered::Renewed)
                }
            };
            sqlx::query(
                "INSERT INTO signin_links (digest, user_id, created_at, expires_at) \
                 VALUES ($1, $2, $3, $4)",
            )
            .bind(r.link_digest)
            .bind(user_id)
            .bind(r.now)
            .bind(r.link_expires_at)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(outcome)
        })
    }

    /// What the link with this digest can do at `now` (nothing is changed).
    pub(crate) async fn link_status(
        &self,
        digest: &str,
        now: i64,
    ) -> Result<LinkStatus, StoreError> {
        let row = on_db!(&self.db, |pool| {
            sqlx::query(
                "SELECT l.used_at, l.expires_at, u.email, u.confirmed_at FROM signin_links l \
                 JOIN signin_users u ON u.id = l.user_id WHERE l.digest = $1",
            )
            .bind(digest)
            .fetch_optional(pool)
            .await?
            .map(|row| {
                (
                    row.get::<Option<i64>, _>(0),
                    row.get::<i64, _>(1),
                    row.get::<String, _>(2),
                    row.get::<Option<i64>, _>(3),
                )
            })
        });
        Ok(match row {
            None => LinkStatus::Unknown,
            Some((Some(_), _, _, _)) | Some((_, _, _, Some(_))) => LinkStatus::Used,
            Some((None, expires_at, _, _)) if expires_at <= now => LinkStatus::Expired,
            Some((None, _, email, None)) => LinkStatus::Usable { email },
        })
    }

    /// Uses the link once: marks it used, confirms the address and stores the password hash,
    /// in one transaction. Of concurrent uses exactly one succeeds.
    pub(crate) async fn confirm(
        &self,
        digest: &str,
        password_hash: &str,
        now: i64,
    ) -> Result<Confirmed, StoreError> {
        let done = on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            let taken = sqlx::query(
                "UPDATE signin_links SET used_at = $2 \
                 WHERE digest = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id",
            )
            .bind(digest)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(taken) = taken else {
                tx.rollback().await?;
                return Ok(Confirmed::Refused(self.link_status(digest, now).await?));
            };
            let user_id: i64 = taken.get(0);
            let confirmed = sqlx::query(
                "UPDATE signin_users SET confirmed_at = $2, password_hash = $3 \
                 WHERE id = $1 AND confirmed_at IS NULL RETURNING email",
            )
            .bind(user_id)
            .bind(now)
            .bind(password_hash)
            .fetch_optional(&mut *tx)
            .await?;
            match confirmed {
                Some(row) => {
                    let email: String = row.get(0);
                    tx.commit().await?;
                    Some(email)
                }
                None => {
                    tx.rollback().await?;
                    None
                }
            }
        });
        Ok(match done {
            Some(email) => Confirmed::Done { email },
            None => Confirmed::Refused(LinkStatus::Used),
        })
    }

    /// The user registered with this address key (lower-case address), pending or confirmed.
    pub(crate) async fn user_by_email_key(&self, key: &str) -> Result<Option<User>, StoreError> {
        let sql = format!("SELECT {USER_COLUMNS} FROM signin_users WHERE email_key = $1");
        Ok(on_db!(&self.db, |pool| {
            sqlx::query(&sql)
                .bind(key)
                .fetch_optional(pool)
                .await?
                .map(|row| user_from_row!(row))
        }))
    }

    /// The user with this id.
    pub(crate) async fn user_by_id(&self, id: i64) -> Result<Option<User>, StoreError> {
        let sql = format!("SELECT {USER_COLUMNS} FROM signin_users WHERE id = $1");
        Ok(on_db!(&self.db, |pool| {
            sqlx::query(&sql)
                .bind(id)
                .fetch_optional(pool)
                .await?
                .map(|row| user_from_row!(row))
        }))
    }
}
