//! The daily search allowance: one counter per account and UTC day, charged atomically.
//!
//! The rules (reserve before the search, refund unless it answered 200; the UTC-day key) are
//! on [`Charge`], where the search service reads them.

use periscope_model::Timestamp;

use crate::State;
use crate::accounts::AccountId;
use crate::db::on_db;
use crate::error::{Result, StateError};

const DAY_SECS: i64 = 86_400;
/// 9999-12-31T23:59:59Z, the last instant a `Timestamp` holds.
const LAST_SECOND: i64 = 253_402_300_799;

/// A UTC calendar day, as days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcDay(i64);

impl UtcDay {
    /// The UTC day `t` falls on.
    pub fn of(t: Timestamp) -> Self {
        Self(t.unix().div_euclid(DAY_SECS))
    }

    /// Days since 1970-01-01.
    pub fn number(self) -> i64 {
        self.0
    }

    /// The next day.
    pub fn next(self) -> Self {
        Self(self.0 + 1)
    }

    /// 00:00:00Z of this day (the last representable instant for the day after 9999-12-31).
    pub fn start(self) -> Timestamp {
        Timestamp::from_unix((self.0 * DAY_SECS).clamp(0, LAST_SECOND))
            .expect("clamped into the range of Timestamp")
    }

    /// When this day's allowance resets: 00:00:00Z of the next day (`resets_at`).
    pub fn resets_at(self) -> Timestamp {
        self.next().start()
    }
}

/// An account's allowance on one day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// The day.
    pub day: UtcDay,
    /// The account's daily limit.
    pub limit: u32,
    /// Searches charged on that day (may exceed `limit` if the limit was lowered since).
    pub used: u32,
}

impl Usage {
    /// Searches left on that day.
    pub fn remaining(self) -> u32 {
        self.limit.saturating_sub(self.used)
    }

    /// When the allowance resets (the next midnight UTC).
    pub fn resets_at(self) -> Timestamp {
        self.day.resets_at()
    }
}

/// The outcome of [`State::charge`].
///
/// **How a search is charged exactly.** The specification charges a search only when it
/// answers 200, and with 20 remaining, 100 concurrent searches must give exactly 20 answers of
/// 200. The search service charges *last*, once the page is ready to send:
///
/// 1. A read of the counter ([`State::usage`]) refuses at once (429 `search_limit_reached`)
///    when nothing remains. It reserves nothing, so a request that will end up free (a
///    replayed cursor, a too-broad query, a timeout) never holds a unit another request needs.
/// 2. The cursor is taken and the page runs; every error of these steps is free because
///    nothing was charged.
/// 3. [`State::charge`] — one statement, `INSERT … ON CONFLICT (account_id, day) DO UPDATE SET
///    used = used + 1 WHERE used < limit RETURNING used` — takes one unit if one remains
///    ([`Charge::Charged`]: the page is answered, its `allowance` includes it) or refuses
///    ([`Charge::Exhausted`]: 429, the page is dropped, the taken cursor released and the new
///    one discarded). Both databases serialise conflicting upserts on the row, so no two
///    callers take the same unit and the counter never passes the limit: of 100 racing
///    searches with 20 remaining, exactly 20 answer 200.
///
/// The charge is the last write before the answer: the audit outcome is recorded before it,
/// and after it the response is only encoded and written. A process killed in that window
/// keeps a charge for an answer it did not send; a process killed earlier charged nothing.
/// [`State::refund`] gives a unit back (administration, corrections).
///
/// **Midnight UTC.** The counter is keyed by the UTC day number, so a new day has no row and
/// starts at 0: the reset happens in one step for every account, with nothing to run.
/// Unlimited accounts are never charged and keep no counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a charge that is not used must be refunded"]
pub enum Charge {
    /// One search was taken; the usage includes it.
    Charged(Usage),
    /// Nothing remained; nothing was taken.
    Exhausted(Usage),
}

fn count(v: i64) -> Result<u32> {
    u32::try_from(v).map_err(|_| StateError::Corrupt("allowance_usage.used"))
}

impl State {
    /// Takes one search from the account's allowance for `day` if fewer than `limit` are
    /// used. Atomic and exact under any concurrency, on both databases.
    pub async fn charge(&self, account: AccountId, day: UtcDay, limit: u32) -> Result<Charge> {
        if limit > 0 {
            let used: Option<(i64,)> = on_db!(&self.db, |pool| {
                sqlx::query_as(
                    "INSERT INTO allowance_usage (account_id, day, used) VALUES ($1, $2, 1) \
                     ON CONFLICT (account_id, day) DO UPDATE \
                     SET used = allowance_usage.used + 1 WHERE allowance_usage.used < $3 \
                     RETURNING used",
                )
                .bind(account.as_i64())
                .bind(day.0)
                .bind(i64::from(limit))
                .fetch_optional(pool)
                .await
                .map_err(crate::accounts::unknown_account_on_fk)?
            });
            if let Some((used,)) = used {
                let used = count(used)?;
                return Ok(Charge::Charged(Usage { day, limit, used }));
            }
        }
        let used = self.used(account, day).await?;
        Ok(Charge::Exhausted(Usage { day, limit, used }))
    }

    /// Gives back one search taken by [`State::charge`] on `day` (the day the charge
    /// returned, even if midnight has passed since).
    pub async fn refund(&self, account: AccountId, day: UtcDay) -> Result<()> {
        on_db!(&self.db, |pool| {
            sqlx::query(
                "UPDATE allowance_usage SET used = used - 1 \
                 WHERE account_id = $1 AND day = $2 AND used > 0",
            )
            .bind(account.as_i64())
            .bind(day.0)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Searches charged to the account on `day` (0 when none).
    pub async fn used(&self, account: AccountId, day: UtcDay) -> Result<u32> {
        let used: Option<(i64,)> = on_db!(&self.db, |pool| {
            sqlx::query_as("SELECT used FROM allowance_usage WHERE account_id = $1 AND day = $2")
                .bind(account.as_i64())
                .bind(day.0)
                .fetch_optional(pool)
                .await?
        });
        used.map_or(Ok(0), |(used,)| count(used))
    }

    /// The account's allowance on `day` under `limit`, without charging (`GET /v1/allowance`).
    pub async fn usage(&self, account: AccountId, day: UtcDay, limit: u32) -> Result<Usage> {
        Ok(Usage {
            day,
            limit,
            used: self.used(account, day).await?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days() {
        let t = Timestamp::parse("2026-11-20T23:59:59Z").unwrap();
        let day = UtcDay::of(t);
        assert_eq!(day.start().to_string(), "2026-11-20T00:00:00Z");
        assert_eq!(day.resets_at().to_string(), "2026-11-21T00:00:00Z");
        let next = Timestamp::from_unix(t.unix() + 1).unwrap();
        assert_eq!(UtcDay::of(next), day.next());
        assert_eq!(UtcDay::of(Timestamp::from_unix(0).unwrap()).number(), 0);
    }

    #[test]
    fn remaining_never_underflows() {
        let day = UtcDay(0);
        assert_eq!(
            Usage {
                day,
                limit: 20,
                used: 19
            }
            .remaining(),
            1
        );
        assert_eq!(
            Usage {
                day,
                limit: 10,
                used: 15
            }
            .remaining(),
            0
        );
    }
}
