//! The search service: the one path both channels — the JSON API under `/v1` and the browser
//! application — take to the scan index, so they share one account, one allowance and one set
//! of rules.
//!
//! Every operation of the search capability (search, count, facets, exposure, host detail)
//! goes through the same steps, in this order, each with the specification's answer:
//!
//! 1. **Caller** ([`SearchService::caller_for_key`]): a key that is missing, malformed,
//!    unknown or revoked is one and the same 401 `unauthorized`.
//! 2. **Account** ([`SearchService::check_account`]): inactive → 403 `account_inactive`; plan
//!    expired → 402 `plan_expired`; plan unreadable → 503 `commercial_access_unavailable`; not
//!    exactly one organisation → 400 `organization_required`.
//! 3. **Validation**: the query language and the endpoint's members → 422 `validation_failed`.
//! 4. **Audit**: the record is written before anything runs; if it cannot be, 503
//!    `audit_unavailable` and nothing runs or is charged.
//! 5. **Admission** ([`gate`]): the account's concurrent searches (429
//!    `user_concurrency_reached`), then the service's (503 `search_capacity_exhausted`),
//!    refused before starting.
//! 6. **Allowance** (search only): a read of the counter refuses at once (429
//!    `search_limit_reached`) when nothing remains; it reserves nothing, so a request that
//!    ends up free never refuses another. The unit is charged atomically *last*, once the page
//!    is ready to send (see [`periscope_state::Charge`]); a charge that finds nothing left
//!    drops the page (429). Unlimited accounts keep no counter.
//! 7. **Cursor** (search only): taken once; a mismatch is 422, anything else unusable 410
//!    `cursor_gone`; released again if the page is not answered.
//! 8. **Run** on a blocking thread within the time budget (504 `search_timeout`); a busy
//!    engine answers 503 `search_source_busy`.
//!
//! Domain searches resolve the name first through a [`Resolver`] (public routable addresses
//! only) and merge the hosts at those addresses with the stored matches.
//!
//! No clock is read except through [`Clock`] (the workspace's one, `periscope_model::clock`,
//! re-exported here), so day rollover and cursor expiry are tested
//! without waiting. Reference: `docs/api.md`.

mod error;
pub mod gate;
mod ops;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use periscope_index::ScanIndex;
use periscope_model::Timestamp;
use periscope_state::{
    Access, Account, AuditSink, Channel, DailyLimit, KeyId, PlanSource, State, Usage, UtcDay,
};

pub use error::{FieldViolation, Result, ServiceError, error_chain};
pub use gate::Gate;
pub use ops::{DetailRequest, ExposureRequest, FacetsAnswer, SearchAnswer, SearchRequest};
pub use periscope_model::clock::{Clock, SystemClock};
pub use periscope_resolve::{DomainResolution, Resolver};

/// The service's limits (DECISIONS.md defaults; all configurable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Searches one account may run at once (2).
    pub searches_per_account: u32,
    /// Searches the whole service runs at once (32).
    pub searches_total: u32,
    /// The time budget of one operation (10 s).
    pub time_budget: Duration,
    /// How long a search cursor stays usable (10 minutes).
    pub cursor_lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            searches_per_account: 2,
            searches_total: 32,
            time_budget: Duration::from_secs(10),
            cursor_lifetime: Duration::from_secs(600),
        }
    }
}

/// Who a request runs for: the account as read when the request arrived, and the key it
/// came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The account.
    pub account: Account,
    /// The API key presented (`None` for a browser session).
    pub key: Option<KeyId>,
    /// The channel.
    pub channel: Channel,
    /// The client's address as the server determined it (the peer, or the client behind a
    /// trusted proxy), kept in the audit record; `None` when unknown.
    pub client: Option<std::net::IpAddr>,
}

/// The search service. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct SearchService {
    inner: Arc<Inner>,
}

struct Inner {
    index: Arc<dyn ScanIndex>,
    state: State,
    plans: Arc<dyn PlanSource>,
    audit: Arc<dyn AuditSink>,
    resolver: Arc<dyn Resolver>,
    clock: Arc<dyn Clock>,
    limits: Limits,
    gate: Gate,
    charged: AtomicU64,
}

/// Builds a [`SearchService`]; the seams default to the state database and the system clock.
pub struct Builder {
    index: Arc<dyn ScanIndex>,
    state: State,
    resolver: Arc<dyn Resolver>,
    plans: Option<Arc<dyn PlanSource>>,
    audit: Option<Arc<dyn AuditSink>>,
    clock: Arc<dyn Clock>,
    limits: Limits,
}

impl Builder {
    /// Reads plans from `plans` instead of the state database.
    pub fn plans(mut self, plans: Arc<dyn PlanSource>) -> Self {
        self.plans = Some(plans);
        self
    }

    /// Writes audit records to `audit` instead of the state database.
    pub fn audit(mut self, audit: Arc<dyn AuditSink>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Reads the time from `clock`.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Uses these limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The service.
    pub fn build(self) -> SearchService {
        let state = self.state;
        SearchService {
            inner: Arc::new(Inner {
                plans: self
                    .plans
                    .unwrap_or_else(|| Arc::new(state.clone()) as Arc<dyn PlanSource>),
                audit: self
                    .audit
                    .unwrap_or_else(|| Arc::new(state.clone()) as Arc<dyn AuditSink>),
                index: self.index,
                state,
                resolver: self.resolver,
                clock: self.clock,
                gate: Gate::new(self.limits.searches_per_account, self.limits.searches_total),
                limits: self.limits,
                charged: AtomicU64::new(0),
            }),
        }
    }
}

impl SearchService {
    /// Starts building a service over `index`, the state database and a resolver.
    pub fn builder(
        index: Arc<dyn ScanIndex>,
        state: State,
        resolver: Arc<dyn Resolver>,
    ) -> Builder {
        Builder {
            index,
            state,
            resolver,
            plans: None,
            audit: None,
            clock: Arc::new(SystemClock),
            limits: Limits::default(),
        }
    }

    /// The state database.
    pub fn state(&self) -> &State {
        &self.inner.state
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// Now, by the service's clock.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// Searches charged since the service started (for metrics).
    pub fn searches_charged(&self) -> u64 {
        self.inner.charged.load(Ordering::Relaxed)
    }

    /// Operations running now (for metrics).
    pub fn running(&self) -> u32 {
        self.inner.gate.running()
    }

    /// The caller a presented API key acts for. A missing, malformed, unknown or revoked key
    /// is the same [`ServiceError::Unauthorized`].
    pub async fn caller_for_key(&self, presented: Option<&str>) -> Result<Caller> {
        let Some(presented) = presented else {
            return Err(ServiceError::Unauthorized);
        };
        match self.inner.state.authenticate(presented, self.now()).await {
            Ok(Some(owner)) => Ok(Caller {
                account: owner.account,
                key: Some(owner.key),
                channel: Channel::Api,
                client: None,
            }),
            Ok(None) => Err(ServiceError::Unauthorized),
            Err(e) => Err(ServiceError::state("authenticating a key", &e)),
        }
    }

    /// Step 2 of every operation: the account may search now.
    pub async fn check_account(&self, caller: &Caller) -> Result<()> {
        let account = &caller.account;
        if account.access == Access::Inactive {
            return Err(ServiceError::AccountInactive);
        }
        match self.inner.plans.plan(account.id).await {
            Ok(plan) if plan.is_current(self.now()) => {}
            Ok(_) => return Err(ServiceError::PlanExpired),
            Err(e) => {
                tracing::warn!(account.id = account.id.as_i64(), error = %error::error_chain(&e),
                    "plan could not be read");
                return Err(ServiceError::PlanUnavailable);
            }
        }
        let organisations = self
            .inner
            .state
            .organisations_of(account.id)
            .await
            .map_err(|e| ServiceError::state("reading organisations", &e))?;
        if organisations.len() != 1 {
            return Err(ServiceError::OrganizationRequired);
        }
        Ok(())
    }

    /// The caller's allowance today (`GET /v1/allowance`); `None` for an unlimited account.
    /// Never charges.
    pub async fn allowance(&self, caller: &Caller) -> Result<Option<Usage>> {
        let DailyLimit::Limited(limit) = caller.account.daily_limit else {
            return Ok(None);
        };
        let day = UtcDay::of(self.now());
        self.inner
            .state
            .usage(caller.account.id, day, limit)
            .await
            .map(Some)
            .map_err(|e| ServiceError::state("reading the allowance", &e))
    }
}
