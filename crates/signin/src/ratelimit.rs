//! Sign-in failure limits: failed sign-ins are counted per client address and per account
//! (e-mail address); successful ones are never counted, so many people signing in from one
//! address — an office, or every user behind a reverse proxy without
//! `signin.client_ip_header` — are not locked out by their own successes. Over either limit an
//! attempt is refused, without checking the password, with the same generic message as a wrong
//! password, so the limit tells an attacker nothing. The failures are counted in the database
//! (`signin_failures`), so several instances behind a load balancer share one count: spreading
//! guesses over instances gains nothing.

use std::net::IpAddr;

use crate::error::StoreError;
use crate::store::Store;

/// Sliding-window limits of failed sign-ins.
#[derive(Debug)]
pub(crate) struct Limiter {
    window: i64,
    per_account: u64,
    per_client: u64,
}

impl Limiter {
    /// `per_account` failures per account and `per_client` failures per client address within
    /// `window` seconds.
    pub(crate) fn new(window: i64, per_account: u32, per_client: u32) -> Self {
        Self {
            window,
            per_account: u64::from(per_account),
            per_client: u64::from(per_client),
        }
    }

    /// Whether an attempt from `client` for `account_key` may go ahead at `now`: `false` when
    /// either has reached its failure limit (the attempt must then be refused without checking
    /// the password). Nothing is recorded: only [`Limiter::failed`] counts.
    pub(crate) async fn admit(
        &self,
        store: &Store,
        client: IpAddr,
        account_key: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let (account, client) = store
            .recent_failures(account_key, &client.to_string(), now - self.window)
            .await?;
        Ok(account < self.per_account && client < self.per_client)
    }

    /// Records a failed sign-in from `client` for `account_key` at `now`.
    pub(crate) async fn failed(
        &self,
        store: &Store,
        client: IpAddr,
        account_key: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        store
            .record_failure(account_key, &client.to_string(), now, now - self.window)
            .await
    }
}
