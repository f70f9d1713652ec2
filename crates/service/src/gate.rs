//! The concurrency gate: how many searches run at once, per account and in the whole service.
//!
//! A request is admitted or refused *before* it starts — never queued — so a refusal is
//! immediate: the account's own limit answers 429 `user_concurrency_reached`, the service's
//! 503 `search_capacity_exhausted`. An admitted request holds a [`Permit`] until its work has
//! really ended: a search that overran its time budget keeps its permit until the engine
//! returns, so the gate counts what the machine is actually doing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use periscope_state::AccountId;

/// Why the gate refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The account already runs its maximum.
    Account,
    /// The service already runs its maximum.
    Service,
}

#[derive(Debug, Default)]
struct Running {
    total: u32,
    by_account: HashMap<AccountId, u32>,
}

/// Counts running searches against the two limits.
#[derive(Debug, Clone)]
pub struct Gate {
    per_account: u32,
    total: u32,
    running: Arc<Mutex<Running>>,
}

impl Gate {
    /// A gate admitting at most `per_account` searches per account and `total` in all.
    pub fn new(per_account: u32, total: u32) -> Self {
        Self {
            per_account,
            total,
            running: Arc::default(),
        }
    }

    /// Admits one search of `account`, or says which limit is reached. The account's limit
    /// is checked first: a caller at their own limit is told so even when the service is
    /// full as well.
    pub fn admit(&self, account: AccountId) -> Result<Permit, Refusal> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = running.by_account.get(&account).copied().unwrap_or(0);
        if mine >= self.per_account {
            return Err(Refusal::Account);
        }
        if running.total >= self.total {
            return Err(Refusal::Service);
        }
        running.total += 1;
        running.by_account.insert(account, mine + 1);
        Ok(Permit {
            account,
            running: Arc::clone(&self.running),
        })
    }

    /// Searches running now (for metrics).
    pub fn running(&self) -> u32 {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .total
    }
}

/// One admitted search; dropping it lets the next one in.
#[derive(Debug)]
pub struct Permit {
    account: AccountId,
    running: Arc<Mutex<Running>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.total = running.total.saturating_sub(1);
        if let Some(n) = running.by_account.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                running.by_account.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_limit_then_service_limit_and_release() {
        let gate = Gate::new(2, 3);
        let a = AccountId::from_i64(1);
        let b = AccountId::from_i64(2);
        let a1 = gate.admit(a).unwrap();
        let _a2 = gate.admit(a).unwrap();
        assert_eq!(gate.admit(a).unwrap_err(), Refusal::Account);
        let _b1 = gate.admit(b).unwrap();
        assert_eq!(gate.admit(b).unwrap_err(), Refusal::Service);
        assert_eq!(gate.running(), 3);
        drop(a1);
        assert_eq!(gate.running(), 2);
        let _b2 = gate.admit(b).unwrap();
        assert_eq!(gate.admit(b).unwrap_err(), Refusal::Account);
    }
}
