//! Accounts, organisations and membership, with the per-account settings an administrator
//! changes: access (active or inactive), the daily search limit and the plan's expiry.
//!
//! An email address is kept as typed and compared case-insensitively: `Ann@Example.com` and
//! `ann@example.com` are one account. Organisation names are recorded as typed and are unique:
//! creating an account for an existing name joins that organisation.

use std::fmt;

use periscope_model::Timestamp;

use crate::db::on_db;
use crate::error::{Result, StateError};
use periscope_model::random;

use crate::State;

/// Identifies an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccountId(i64);

impl AccountId {
    /// The id as stored.
    pub fn as_i64(self) -> i64 {
        self.0
    }

    /// An id as stored (for example one printed by `periscope admin`).
    pub fn from_i64(id: i64) -> Self {
        Self(id)
    }
}

impl fmt::Display for AccountId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Identifies an organisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrganisationId(i64);

impl OrganisationId {
    /// The id as stored.
    pub fn as_i64(self) -> i64 {
        self.0
    }
}

/// An email address: at most 254 characters, one `@` with something on both sides, no
/// whitespace or control characters. Equality is case-insensitive.
#[derive(Debug, Clone)]
pub struct Email {
    typed: String,
    key: String,
}

impl Email {
    /// Parses an address, trimming surrounding whitespace.
    pub fn parse(s: &str) -> Result<Self> {
        let typed = s.trim();
        let bad = |why: &str| Err(StateError::invalid("email address", why));
        if typed.chars().count() > 254 {
            return bad("longer than 254 characters");
        }
        if typed.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return bad("contains whitespace or control characters");
        }
        match typed.split_once('@') {
            Some((local, domain)) if !local.is_empty() && !domain.is_empty() => {
                if domain.contains('@') {
                    return bad("more than one @");
                }
            }
            _ => return bad("expected name@domain"),
        }
        Ok(Self {
            typed: typed.to_owned(),
            key: typed.to_lowercase(),
        })
    }

    /// The address as typed.
    pub fn as_str(&self) -> &str {
        &self.typed
    }

    /// The case-folded form that makes addresses unique.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }
}

impl PartialEq for Email {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}

impl Eq for Email {}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.typed)
    }
}

/// Whether an account may search. Only an administrator changes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// The account may search.
    Active,
    /// The account cannot search (403 `account_inactive`).
    Inactive,
}

impl Access {
    fn as_str(self) -> &'static str {
        match self {
            Access::Active => "active",
            Access::Inactive => "inactive",
        }
    }

    fn from_stored(s: &str) -> Result<Self> {
        match s {
            "active" => Ok(Access::Active),
            "inactive" => Ok(Access::Inactive),
            _ => Err(StateError::Corrupt("accounts.access")),
        }
    }
}

/// How many searches an account may run per UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DailyLimit {
    /// At most this many charged searches per UTC day.
    Limited(u32),
    /// No daily limit: no counter is kept and responses carry no `allowance`.
    Unlimited,
}

impl DailyLimit {
    /// The specification's limit: 20 searches per day and person.
    pub const DEFAULT: DailyLimit = DailyLimit::Limited(20);

    fn to_stored(self) -> Option<i64> {
        match self {
            DailyLimit::Limited(n) => Some(i64::from(n)),
            DailyLimit::Unlimited => None,
        }
    }

    fn from_stored(v: Option<i64>) -> Result<Self> {
        match v {
            None => Ok(DailyLimit::Unlimited),
            Some(n) => u32::try_from(n)
                .map(DailyLimit::Limited)
                .map_err(|_| StateError::Corrupt("accounts.daily_limit")),
        }
    }
}

/// Whether an account's plan includes search access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// The plan never expires.
    Never,
    /// The plan is current before this instant and expired from it on (402 `plan_expired`).
    ExpiresAt(Timestamp),
}

impl Plan {
    /// Whether the plan includes search access at `now`.
    pub fn is_current(self, now: Timestamp) -> bool {
        match self {
            Plan::Never => true,
            Plan::ExpiresAt(at) => now < at,
        }
    }

    fn to_stored(self) -> Option<i64> {
        match self {
            Plan::Never => None,
            Plan::ExpiresAt(at) => Some(at.unix()),
        }
    }

    fn from_stored(v: Option<i64>) -> Result<Self> {
        v.map_or(Ok(Plan::Never), |secs| {
            Ok(Plan::ExpiresAt(timestamp(
                secs,
                "accounts.plan_expires_at",
            )?))
        })
    }
}

/// The terms an account accepted, and its marketing consent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TermsAcceptance {
    /// The accepted terms version (a dated string such as `2026-11-01`).
    pub version: String,
    /// When they were accepted.
    pub accepted_at: Timestamp,
}

/// An account as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Its id.
    pub id: AccountId,
    /// Its email address as typed at creation.
    pub email: Email,
    /// Whether it may search.
    pub access: Access,
    /// Its daily search limit.
    pub daily_limit: DailyLimit,
    /// Its plan as stored. The search service asks a [`crate::PlanSource`] instead, so that a
    /// plan store that cannot be read is a distinct failure.
    pub plan: Plan,
    /// When it was created.
    pub created_at: Timestamp,
    /// The accepted terms, once recorded.
    pub terms: Option<TermsAcceptance>,
    /// Consent to marketing email (given with the terms, withdrawable at any time).
    pub marketing_consent: bool,
}

/// An organisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Organisation {
    /// Its id.
    pub id: OrganisationId,
    /// Its name as typed.
    pub name: String,
    /// Whether an administrator verified it. Names typed at registration are not verified;
    /// this has no effect on access.
    pub verified: bool,
}

/// What an account is created with.
#[derive(Debug, Clone)]
pub struct NewAccount {
    /// Its email address (unique, case-insensitively).
    pub email: Email,
    /// The organisation it joins, created if no organisation has this exact name.
    pub organisation: String,
    /// Its access state.
    pub access: Access,
    /// Its daily search limit.
    pub daily_limit: DailyLimit,
    /// Its plan.
    pub plan: Plan,
}

impl NewAccount {
    /// An active account with the default limit and a plan that never expires.
    pub fn new(email: Email, organisation: impl Into<String>) -> Self {
        Self {
            email,
            organisation: organisation.into(),
            access: Access::Active,
            daily_limit: DailyLimit::DEFAULT,
            plan: Plan::Never,
        }
    }
}

/// The columns an [`AccountRow`] is read from, of the table aliased `a`.
macro_rules! account_columns {
    () => {
        "a.id, a.email, a.access, a.daily_limit, a.plan_expires_at, a.created_at, \
         a.terms_version, a.terms_accepted_at, a.marketing_consent"
    };
}
pub(crate) use account_columns;

/// An account as read by [`account_columns!`].
pub(crate) type AccountRow = (
    i64,
    String,
    String,
    Option<i64>,
    Option<i64>,
    i64,
    Option<String>,
    Option<i64>,
    bool,
);

pub(crate) fn account_from_row(row: AccountRow) -> Result<Account> {
    let (id, email, access, limit, plan, created, terms_version, terms_at, consent) = row;
    let terms = match (terms_version, terms_at) {
        (Some(version), Some(at)) => Some(TermsAcceptance {
            version,
            accepted_at: timestamp(at, "accounts.terms_accepted_at")?,
        }),
        _ => None,
    };
    Ok(Account {
        id: AccountId(id),
        email: Email::parse(&email).map_err(|_| StateError::Corrupt("accounts.email"))?,
        access: Access::from_stored(&access)?,
        daily_limit: DailyLimit::from_stored(limit)?,
        plan: Plan::from_stored(plan)?,
        created_at: timestamp(created, "accounts.created_at")?,
        terms,
        marketing_consent: consent,
    })
}

/// A stored instant, or `Corrupt(what)`.
pub(crate) fn timestamp(secs: i64, what: &'static str) -> Result<Timestamp> {
    Timestamp::from_unix(secs).ok_or(StateError::Corrupt(what))
}

/// `UnknownAccount` when an update touched no row.
fn touched(rows: u64) -> Result<()> {
    if rows == 0 {
        Err(StateError::UnknownAccount)
    } else {
        Ok(())
    }
}

/// Maps a foreign-key violation (the account does not exist) to `UnknownAccount`.
pub(crate) fn unknown_account_on_fk(e: sqlx::Error) -> StateError {
    match &e {
        sqlx::Error::Database(db) if db.is_foreign_key_violation() => StateError::UnknownAccount,
        _ => StateError::Database(e),
    }
}

fn organisation_name(name: &str) -> Result<&str> {
    let name = name.trim();
    if name.is_empty() {
        return Err(StateError::invalid("organisation name", "empty"));
    }
    if name.chars().count() > 200 {
        return Err(StateError::invalid(
            "organisation name",
            "longer than 200 characters",
        ));
    }
    Ok(name)
}

impl State {
    /// Creates an account and makes it a member of its organisation (created if absent).
    /// Fails with [`StateError::EmailTaken`] when the address exists, in any letter case; no
    /// second account is created.
    pub async fn create_account(&self, new: &NewAccount, now: Timestamp) -> Result<Account> {
        let organisation = organisation_name(&new.organisation)?;
        let (account_id, organisation_id) = (random::id()?, random::id()?);
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            // A write first, so a SQLite transaction holds the write lock from its start.
            sqlx::query(
                "INSERT INTO organisations (id, name, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(organisation_id)
            .bind(organisation)
            .bind(now.unix())
            .execute(&mut *tx)
            .await?;
            let (organisation_id,): (i64,) =
                sqlx::query_as("SELECT id FROM organisations WHERE name = $1")
                    .bind(organisation)
                    .fetch_one(&mut *tx)
                    .await?;
            let inserted = sqlx::query(
                "INSERT INTO accounts (id, email, email_key, access, daily_limit, \
                 plan_expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (email_key) DO NOTHING",
            )
            .bind(account_id)
            .bind(new.email.as_str())
            .bind(new.email.key())
            .bind(new.access.as_str())
            .bind(new.daily_limit.to_stored())
            .bind(new.plan.to_stored())
            .bind(now.unix())
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 0 {
                return Err(StateError::EmailTaken(new.email.to_string()));
            }
            sqlx::query(
                "INSERT INTO memberships (account_id, organisation_id, joined_at) \
                 VALUES ($1, $2, $3)",
            )
            .bind(account_id)
            .bind(organisation_id)
            .bind(now.unix())
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        Ok(Account {
            id: AccountId(account_id),
            email: new.email.clone(),
            access: new.access,
            daily_limit: new.daily_limit,
            plan: new.plan,
            created_at: now,
            terms: None,
            marketing_consent: false,
        })
    }

    /// The account with this id, if any.
    pub async fn account(&self, id: AccountId) -> Result<Option<Account>> {
        let row: Option<AccountRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts a WHERE a.id = $1"
            ))
            .bind(id.0)
            .fetch_optional(pool)
            .await?
        });
        row.map(account_from_row).transpose()
    }

    /// The account with this email address (compared case-insensitively), if any.
    pub async fn account_by_email(&self, email: &Email) -> Result<Option<Account>> {
        let row: Option<AccountRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts a WHERE a.email_key = $1"
            ))
            .bind(email.key())
            .fetch_optional(pool)
            .await?
        });
        row.map(account_from_row).transpose()
    }

    /// The account's plan; `None` when there is no such account.
    pub async fn plan_of(&self, id: AccountId) -> Result<Option<Plan>> {
        let row: Option<(Option<i64>,)> = on_db!(&self.db, |pool| {
            sqlx::query_as("SELECT plan_expires_at FROM accounts WHERE id = $1")
                .bind(id.0)
                .fetch_optional(pool)
                .await?
        });
        row.map(|(plan,)| Plan::from_stored(plan)).transpose()
    }

    /// Every account, ordered by email address.
    pub async fn accounts(&self) -> Result<Vec<Account>> {
        let rows: Vec<AccountRow> = on_db!(&self.db, |pool| {
            sqlx::query_as(concat!(
                "SELECT ",
                account_columns!(),
                " FROM accounts a ORDER BY a.email_key"
            ))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(account_from_row).collect()
    }

    /// Sets whether the account may search.
    pub async fn set_access(&self, id: AccountId, access: Access) -> Result<()> {
        touched(on_db!(&self.db, |pool| {
            sqlx::query("UPDATE accounts SET access = $1 WHERE id = $2")
                .bind(access.as_str())
                .bind(id.0)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Sets the account's daily search limit. Today's usage is kept: lowering the limit below
    /// it leaves nothing remaining today.
    pub async fn set_daily_limit(&self, id: AccountId, limit: DailyLimit) -> Result<()> {
        touched(on_db!(&self.db, |pool| {
            sqlx::query("UPDATE accounts SET daily_limit = $1 WHERE id = $2")
                .bind(limit.to_stored())
                .bind(id.0)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Sets when the account's plan expires.
    pub async fn set_plan(&self, id: AccountId, plan: Plan) -> Result<()> {
        touched(on_db!(&self.db, |pool| {
            sqlx::query("UPDATE accounts SET plan_expires_at = $1 WHERE id = $2")
                .bind(plan.to_stored())
                .bind(id.0)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Records the accepted terms and the marketing consent given with them.
    pub async fn record_terms(
        &self,
        id: AccountId,
        terms: &TermsAcceptance,
        marketing_consent: bool,
    ) -> Result<()> {
        touched(on_db!(&self.db, |pool| {
            sqlx::query(
                "UPDATE accounts SET terms_version = $1, terms_accepted_at = $2, \
                 marketing_consent = $3 WHERE id = $4",
            )
            .bind(&terms.version)
            .bind(terms.accepted_at.unix())
            .bind(marketing_consent)
            .bind(id.0)
            .execute(pool)
            .await?
            .rows_affected()
        }))
    }

    /// Gives or withdraws consent to marketing email; access is unaffected.
    pub async fn set_marketing_consent(&self, id: AccountId, consent: bool) -> Result<()> {
        touched(on_db!(&self.db, |pool| {
            sqlx::query("UPDATE accounts SET marketing_consent = $1 WHERE id = $2")
                .bind(consent)
                .bind(id.0)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// The organisations the account belongs to, by name. The search service refuses
    /// (400 `organization_required`) unless there is exactly one.
    pub async fn organisations_of(&self, id: AccountId) -> Result<Vec<Organisation>> {
        let rows: Vec<(i64, String, bool)> = on_db!(&self.db, |pool| {
            sqlx::query_as(
                "SELECT o.id, o.name, o.verified FROM memberships m \
                 JOIN organisations o ON o.id = m.organisation_id \
                 WHERE m.account_id = $1 ORDER BY o.name, o.id",
            )
            .bind(id.0)
            .fetch_all(pool)
            .await?
        });
        Ok(rows
            .into_iter()
            .map(|(id, name, verified)| Organisation {
                id: OrganisationId(id),
                name,
                verified,
            })
            .collect())
    }

    /// Makes the account a member of the organisation with this exact name (created if
    /// absent); a no-op when it is one already.
    pub async fn join_organisation(
        &self,
        id: AccountId,
        organisation: &str,
        now: Timestamp,
    ) -> Result<Organisation> {
        let name = organisation_name(organisation)?;
        let new_id = random::id()?;
        let organisation_id = on_db!(&self.db, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(
                "INSERT INTO organisations (id, name, created_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(new_id)
            .bind(name)
            .bind(now.unix())
            .execute(&mut *tx)
            .await?;
            let (organisation_id, verified): (i64, bool) =
                sqlx::query_as("SELECT id, verified FROM organisations WHERE name = $1")
                    .bind(name)
                    .fetch_one(&mut *tx)
                    .await?;
            sqlx::query(
                "INSERT INTO memberships (account_id, organisation_id, joined_at) \
                 VALUES ($1, $2, $3) ON CONFLICT (account_id, organisation_id) DO NOTHING",
            )
            .bind(id.0)
            .bind(organisation_id)
            .bind(now.unix())
            .execute(&mut *tx)
            .await
            .map_err(unknown_account_on_fk)?;
            tx.commit().await?;
            (organisation_id, verified)
        });
        let (organisation_id, verified) = organisation_id;
        Ok(Organisation {
            id: OrganisationId(organisation_id),
            name: name.to_owned(),
            verified,
        })
    }

    /// Ends the account's membership of an organisation; `false` when it was not a member.
    pub async fn leave_organisation(
        &self,
        id: AccountId,
        organisation: OrganisationId,
    ) -> Result<bool> {
        let rows = on_db!(&self.db, |pool| {
            sqlx::query("DELETE FROM memberships WHERE account_id = $1 AND organisation_id = $2")
                .bind(id.0)
                .bind(organisation.0)
                .execute(pool)
                .await?
                .rows_affected()
        });
        Ok(rows > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails() {
        let a = Email::parse("  Ann@Example.COM ").unwrap();
        assert_eq!(a.as_str(), "Ann@Example.COM");
        assert_eq!(a, Email::parse("ann@example.com").unwrap());
        for bad in [
            "",
            "ann",
            "@example.com",
            "ann@",
            "a b@example.com",
            "a@b@c",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Email::parse(&format!("{}@example.com", "a".repeat(250))).is_err());
    }

    #[test]
    fn plans() {
        let t = Timestamp::from_unix(1_000).unwrap();
        assert!(Plan::Never.is_current(t));
        assert!(Plan::ExpiresAt(Timestamp::from_unix(1_001).unwrap()).is_current(t));
        assert!(!Plan::ExpiresAt(t).is_current(t));
    }
}
