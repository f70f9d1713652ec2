//! Trait seams where the search service needs a second implementation in its tests: reading
//! the plan (so "the plan could not be confirmed", 503 `commercial_access_unavailable`, can be
//! produced) and writing audit records (so 503 `audit_unavailable` can). [`State`] implements
//! both over the database.
//!
//! The traits are object-safe (`Arc<dyn PlanSource>`), so their methods return boxed futures.

use std::future::Future;
use std::pin::Pin;

use crate::State;
use crate::accounts::{AccountId, Plan};
use crate::audit::{AuditEntry, AuditId};
use crate::error::{Result, StateError};

/// A `Send` future in a box, as the seams' methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where the search service reads an account's plan.
pub trait PlanSource: Send + Sync {
    /// The account's plan. An `Err` means the plan could not be confirmed (503
    /// `commercial_access_unavailable`), not that it expired.
    fn plan(&self, account: AccountId) -> BoxFuture<'_, Result<Plan>>;
}

/// Where the search service writes audit records.
pub trait AuditSink: Send + Sync {
    /// Writes the record of a request about to run. An `Err` means the request must not run
    /// (503 `audit_unavailable`).
    fn record<'a>(&'a self, entry: &'a AuditEntry) -> BoxFuture<'a, Result<AuditId>>;

    /// Adds the outcome (`ok` or the error code) to a record written by [`AuditSink::record`].
    fn record_outcome<'a>(&'a self, id: AuditId, outcome: &'a str) -> BoxFuture<'a, Result<()>>;
}

impl PlanSource for State {
    fn plan(&self, account: AccountId) -> BoxFuture<'_, Result<Plan>> {
        Box::pin(async move {
            self.plan_of(account)
                .await?
                .ok_or(StateError::UnknownAccount)
        })
    }
}

impl AuditSink for State {
    fn record<'a>(&'a self, entry: &'a AuditEntry) -> BoxFuture<'a, Result<AuditId>> {
        Box::pin(self.write_audit(entry))
    }

    fn record_outcome<'a>(&'a self, id: AuditId, outcome: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.write_audit_outcome(id, outcome))
    }
}
