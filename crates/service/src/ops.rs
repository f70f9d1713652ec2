//! The five operations of the search capability — search, count, facets, exposure, host
//! detail — each running the steps the crate documentation lists, in that order.

use std::future::Future;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use periscope_index::{
    Count, Exposure, Facets, HostDetail, HostResult, IndexError, ScanIndex, SearchOutcome,
};
use periscope_model::Timestamp;
use periscope_query::{
    FilterQuery, Query, Violation, ViolationCode, check_count, check_cursor_format, check_exposure,
    check_facets, parse, parse_detail_ip, parse_resolution,
};
use periscope_resolve::DomainResolution;
use periscope_state::{
    AuditEntry, AuditId, Charge, CursorTake, CursorToken, DailyLimit, NewCursor, Operation, Usage,
    UtcDay,
};

use crate::error::{FieldViolation, Result, ServiceError, error_chain};
use crate::gate::{Permit, Refusal};
use crate::{Caller, SearchService};

/// Hosts per search page (the API's `limit` member).
pub const SEARCH_LIMITS: std::ops::RangeInclusive<u32> = 1..=100;
/// Services per host-detail page.
pub const DETAIL_LIMITS: std::ops::RangeInclusive<u32> = 1..=20;
/// The longest host-detail continuation, in characters.
pub const MAX_DETAIL_CURSOR_CHARS: usize = 512;

/// `POST /v1/search` as the service takes it.
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// The query text as sent.
    pub query: &'a str,
    /// Hosts per page, 1..=100.
    pub limit: u32,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<&'a str>,
}

/// `POST /v1/search/exposure` as the service takes it.
#[derive(Debug, Clone, Copy)]
pub struct ExposureRequest<'a> {
    /// The query text as sent.
    pub query: &'a str,
    /// `global`, `regional` or `local`.
    pub resolution: &'a str,
}

/// `POST /v1/hosts/detail` as the service takes it.
#[derive(Debug, Clone, Copy)]
pub struct DetailRequest<'a> {
    /// The address as sent.
    pub ip: &'a str,
    /// Services per page, 1..=20.
    pub limit: u32,
    /// The `next_cursor` of the previous page of this host.
    pub cursor: Option<&'a str>,
}

/// One answered search page.
#[derive(Debug, Clone)]
pub struct SearchAnswer {
    /// The query that ran.
    pub query: Query,
    /// At most `limit` hosts, ascending.
    pub hosts: Vec<HostResult>,
    /// The cursor of the next page, when more hosts match.
    pub next_cursor: Option<CursorToken>,
    /// The allowance including this search; `None` for an unlimited account.
    pub allowance: Option<Usage>,
    /// Domain searches: what DNS said.
    pub domain_resolution: Option<DomainResolution>,
}

/// A search page ready to send, not yet charged.
struct Prepared {
    answer: SearchAnswer,
    /// The UTC day the search started on (the day it is charged to).
    day: UtcDay,
    /// The cursor the page was taken with.
    taken: Option<CursorToken>,
}

/// The answer of the facets operation.
#[derive(Debug, Clone)]
pub struct FacetsAnswer {
    /// The filter query the groups belong to (`can_add_filters` and `selected` come from it).
    pub query: FilterQuery,
    /// The six groups.
    pub facets: Facets,
}

fn violation(field: &'static str, code: &'static str, detail: impl Into<String>) -> FieldViolation {
    FieldViolation {
        field,
        code,
        detail: detail.into(),
    }
}

fn limit_violation(
    limit: u32,
    range: &std::ops::RangeInclusive<u32>,
    out: &mut Vec<FieldViolation>,
) {
    if !range.contains(&limit) {
        out.push(violation(
            "limit",
            "out_of_range",
            format!(
                "limit {limit} is outside {}..={}",
                range.start(),
                range.end()
            ),
        ));
    }
}

/// Parses the query member, adding its violations to `out`.
fn query_member(text: &str, out: &mut Vec<FieldViolation>) -> Option<Query> {
    match parse(text) {
        Ok(q) => Some(q),
        Err(e) => {
            out.extend(e.violations.into_iter().map(FieldViolation::from));
            None
        }
    }
}

fn endpoint_check(
    query: Option<&Query>,
    check: fn(&Query) -> std::result::Result<(), Violation>,
    out: &mut Vec<FieldViolation>,
) {
    if let Some(Err(v)) = query.map(check) {
        out.push(v.into());
    }
}

fn valid<T>(value: Option<T>, violations: Vec<FieldViolation>) -> Result<T> {
    match value {
        Some(v) if violations.is_empty() => Ok(v),
        _ => Err(ServiceError::Invalid(violations)),
    }
}

impl SearchService {
    /// `POST /v1/search`: one page of hosts, charged to the allowance only when answered.
    pub async fn search(
        &self,
        caller: &Caller,
        request_id: &str,
        req: SearchRequest<'_>,
    ) -> Result<SearchAnswer> {
        self.check_account(caller).await?;
        let mut violations = Vec::new();
        let query = query_member(req.query, &mut violations);
        limit_violation(req.limit, &SEARCH_LIMITS, &mut violations);
        let cursor = match req.cursor {
            None => None,
            Some(text) => match check_cursor_format(text).ok().and(CursorToken::parse(text)) {
                Some(token) => Some(token),
                None => {
                    violations.push(
                        Violation::new(
                            ViolationCode::InvalidCursor,
                            "the cursor is malformed; send back next_cursor exactly as it was \
                             received",
                        )
                        .into(),
                    );
                    None
                }
            },
        };
        let query = valid(query, violations)?;
        // The audit outcome is written before the charge (and again if the charge refuses),
        // so nothing but encoding and writing the answer follows the charge's commit.
        let audit = self
            .audit_begin(caller, request_id, Operation::Search, req.query)
            .await?;
        let page = self.run_search(caller, query, req.limit, cursor).await;
        let page = match page {
            Ok(page) => page,
            Err(e) => {
                self.audit_end(request_id, audit, e.error_code().as_str())
                    .await;
                return Err(e);
            }
        };
        self.audit_end(request_id, audit, "ok").await;
        let charged = self.charge(caller, page).await;
        if let Err(e) = &charged {
            self.audit_end(request_id, audit, e.error_code().as_str())
                .await;
        }
        charged
    }

    /// `POST /v1/search/count`: unique hosts of an ASN or filter query. Free.
    pub async fn count(&self, caller: &Caller, request_id: &str, query: &str) -> Result<Count> {
        self.check_account(caller).await?;
        let mut violations = Vec::new();
        let parsed = query_member(query, &mut violations);
        endpoint_check(parsed.as_ref(), check_count, &mut violations);
        let parsed = valid(parsed, violations)?;
        let run = async {
            let permit = self.admit(caller)?;
            let now = self.now();
            self.run_blocking(permit, ServiceError::Timeout, move |index| {
                index.count(&parsed, now)
            })
            .await
        };
        self.audited(caller, request_id, Operation::Count, query, run)
            .await
    }

    /// `POST /v1/search/facets`: the six suggested-filter groups of a filter query. Free.
    pub async fn facets(
        &self,
        caller: &Caller,
        request_id: &str,
        query: &str,
    ) -> Result<FacetsAnswer> {
        self.check_account(caller).await?;
        let mut violations = Vec::new();
        let parsed = query_member(query, &mut violations);
        endpoint_check(parsed.as_ref(), check_facets, &mut violations);
        let filter = valid(parsed.and_then(|q| q.as_filter().cloned()), violations)?;
        let run = async {
            let permit = self.admit(caller)?;
            let now = self.now();
            let query = filter.clone();
            let facets = self
                .run_blocking(permit, ServiceError::FacetTimeout, move |index| {
                    index.facets(&filter, now)
                })
                .await?;
            Ok(FacetsAnswer { query, facets })
        };
        self.audited(caller, request_id, Operation::Facets, query, run)
            .await
    }

    /// `POST /v1/search/exposure`: geotile buckets of a non-domain query. Free.
    pub async fn exposure(
        &self,
        caller: &Caller,
        request_id: &str,
        req: ExposureRequest<'_>,
    ) -> Result<Exposure> {
        self.check_account(caller).await?;
        let mut violations = Vec::new();
        let parsed = query_member(req.query, &mut violations);
        endpoint_check(parsed.as_ref(), check_exposure, &mut violations);
        let resolution = parse_resolution(req.resolution)
            .map_err(|v| violations.push(v.into()))
            .ok();
        let (parsed, resolution) = valid(parsed.zip(resolution), violations)?;
        let run = async {
            let permit = self.admit(caller)?;
            let now = self.now();
            self.run_blocking(permit, ServiceError::Timeout, move |index| {
                index.exposure(&parsed, resolution, now)
            })
            .await
        };
        self.audited(caller, request_id, Operation::Exposure, req.query, run)
            .await
    }

    /// `POST /v1/hosts/detail`: one address with a page of all its current services. Free.
    pub async fn host_detail(
        &self,
        caller: &Caller,
        request_id: &str,
        req: DetailRequest<'_>,
    ) -> Result<HostDetail> {
        self.check_account(caller).await?;
        let mut violations = Vec::new();
        let ip = parse_detail_ip(req.ip)
            .map_err(|v| violations.push(v.into()))
            .ok();
        limit_violation(req.limit, &DETAIL_LIMITS, &mut violations);
        if req
            .cursor
            .is_some_and(|c| c.is_empty() || c.chars().count() > MAX_DETAIL_CURSOR_CHARS)
        {
            violations.push(violation(
                "cursor",
                "invalid",
                "the continuation is malformed; send back next_cursor exactly as it was received",
            ));
        }
        let ip = valid(ip, violations)?;
        let limit = req.limit as usize;
        let continuation = req.cursor.map(str::to_owned);
        let run = async {
            let permit = self.admit(caller)?;
            let now = self.now();
            self.run_blocking(permit, ServiceError::Timeout, move |index| {
                index.host_detail(ip, continuation.as_deref(), limit, now)
            })
            .await?
            .ok_or(ServiceError::HostNotFound)
        };
        self.audited(caller, request_id, Operation::HostDetail, req.ip, run)
            .await
    }

    /// Step 5 onwards of a search up to the charge: admission, a look at the allowance that
    /// reserves nothing, the page (cursor taken, engine run, next cursor issued). The charge
    /// comes last ([`Self::charge`]), once the page is ready to send, so a request that ends
    /// up free never holds a unit another request needs, and a process that dies before the
    /// charge leaves nothing charged.
    async fn run_search(
        &self,
        caller: &Caller,
        query: Query,
        limit: u32,
        cursor: Option<CursorToken>,
    ) -> Result<Prepared> {
        let permit = self.admit(caller)?;
        let now = self.now();
        let account = caller.account.id;
        let day = UtcDay::of(now);
        if let DailyLimit::Limited(daily) = caller.account.daily_limit {
            let usage = self
                .inner
                .state
                .usage(account, day, daily)
                .await
                .map_err(|e| ServiceError::state("reading the allowance", &e))?;
            if usage.remaining() == 0 {
                return Err(ServiceError::LimitReached(usage));
            }
        }
        let answer = self
            .page(caller, query, limit, cursor.as_ref(), now, permit)
            .await?;
        Ok(Prepared {
            answer,
            day,
            taken: cursor,
        })
    }

    /// The last step of a search: charges the page that is ready to send. Nothing left (a
    /// search that ran meanwhile took the last unit) drops it: 429, the taken cursor usable
    /// again, the issued one deleted.
    async fn charge(&self, caller: &Caller, prepared: Prepared) -> Result<SearchAnswer> {
        let Prepared {
            mut answer,
            day,
            taken,
        } = prepared;
        if let DailyLimit::Limited(daily) = caller.account.daily_limit {
            let refused = match self.inner.state.charge(caller.account.id, day, daily).await {
                Ok(Charge::Charged(usage)) => {
                    answer.allowance = Some(usage);
                    None
                }
                Ok(Charge::Exhausted(usage)) => Some(ServiceError::LimitReached(usage)),
                Err(e) => Some(ServiceError::state("charging a search", &e)),
            };
            if let Some(error) = refused {
                self.unissue(caller, taken.as_ref(), answer.next_cursor.as_ref())
                    .await;
                return Err(error);
            }
        }
        self.inner.charged.fetch_add(1, Ordering::Relaxed);
        Ok(answer)
    }

    /// Undoes the cursors of a page that will not be sent: the taken one is usable again, the
    /// one issued for the next page is deleted.
    async fn unissue(
        &self,
        caller: &Caller,
        taken: Option<&CursorToken>,
        issued: Option<&CursorToken>,
    ) {
        let account = caller.account.id;
        if let Some(token) = taken
            && let Err(e) = self.inner.state.release_cursor(token, account).await
        {
            tracing::warn!(account.id = account.as_i64(), error = %error_chain(&e),
                "a taken cursor could not be released");
        }
        if let Some(token) = issued
            && let Err(e) = self.inner.state.discard_cursor(token, account).await
        {
            tracing::warn!(account.id = account.as_i64(), error = %error_chain(&e),
                "the cursor of a page that was not sent could not be discarded");
        }
    }

    /// Takes the cursor, runs the page and issues the next cursor; releases the taken cursor
    /// again when the page is not answered, so the client can retry it.
    async fn page(
        &self,
        caller: &Caller,
        query: Query,
        limit: u32,
        cursor: Option<&CursorToken>,
        now: Timestamp,
        permit: Permit,
    ) -> Result<SearchAnswer> {
        let canonical = query.to_string();
        let after = match cursor {
            None => None,
            Some(token) => Some(
                self.take_cursor(token, caller, &canonical, limit, now)
                    .await?,
            ),
        };
        let answer = self
            .page_after(caller, query, &canonical, limit, after, now, permit)
            .await;
        if answer.is_err() {
            self.unissue(caller, cursor, None).await;
        }
        answer
    }

    async fn take_cursor(
        &self,
        token: &CursorToken,
        caller: &Caller,
        canonical: &str,
        limit: u32,
        now: Timestamp,
    ) -> Result<IpAddr> {
        let taken = self
            .inner
            .state
            .take_cursor(token, caller.account.id, canonical, limit, now)
            .await
            .map_err(|e| ServiceError::state("taking a cursor", &e))?;
        match taken {
            CursorTake::Taken { resume_after } => {
                resume_after.parse().map_err(|_| ServiceError::CursorGone)
            }
            CursorTake::Mismatch => Err(ServiceError::invalid(Violation::new(
                ViolationCode::QueryMismatch,
                "the cursor was issued for another query or limit; send the query and limit \
                 of the page it came with, or start again without a cursor",
            ))),
            CursorTake::Gone => Err(ServiceError::CursorGone),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn page_after(
        &self,
        caller: &Caller,
        query: Query,
        canonical: &str,
        limit: u32,
        after: Option<IpAddr>,
        now: Timestamp,
        permit: Permit,
    ) -> Result<SearchAnswer> {
        let resolution = match &query {
            Query::Domain(name) => Some(self.inner.resolver.resolve(name).await),
            _ => None,
        };
        let resolved = resolution
            .as_ref()
            .map(|r| r.addresses().to_vec())
            .unwrap_or_default();
        let q = query.clone();
        let outcome = self
            .run_blocking(permit, ServiceError::Timeout, move |index| {
                index.search(&periscope_index::SearchRequest {
                    query: &q,
                    after,
                    limit: limit as usize,
                    resolved: &resolved,
                    now,
                })
            })
            .await?;
        let page = match outcome {
            SearchOutcome::Page(page) => page,
            SearchOutcome::TooBroad { matching } => {
                return Err(ServiceError::invalid(Violation::new(
                    ViolationCode::QueryTooBroad,
                    format!(
                        "the query names no service and matches {matching} hosts, more than \
                         one search returns; add a port, protocol, product or other service \
                         clause"
                    ),
                )));
            }
        };
        let next_cursor = match page.hosts.last() {
            Some(last) if page.has_more => {
                let lifetime = i64::try_from(self.inner.limits.cursor_lifetime.as_secs())
                    .unwrap_or(i64::MAX / 2);
                let expires_at = Timestamp::from_unix(now.unix().saturating_add(lifetime))
                    .ok_or_else(|| ServiceError::Unavailable("cursor expiry overflow".into()))?;
                let resume_after = last.host.ip.to_string();
                let token = self
                    .inner
                    .state
                    .create_cursor(
                        &NewCursor {
                            account: caller.account.id,
                            query: canonical,
                            limit,
                            resume_after: &resume_after,
                            expires_at,
                        },
                        now,
                    )
                    .await
                    .map_err(|e| ServiceError::state("issuing a cursor", &e))?;
                Some(token)
            }
            _ => None,
        };
        Ok(SearchAnswer {
            query,
            hosts: page.hosts,
            next_cursor,
            allowance: None,
            domain_resolution: resolution,
        })
    }

    /// Step 5: admission through the concurrency gate.
    fn admit(&self, caller: &Caller) -> Result<Permit> {
        self.inner
            .gate
            .admit(caller.account.id)
            .map_err(|refusal| match refusal {
                Refusal::Account => ServiceError::UserConcurrency,
                Refusal::Service => ServiceError::Capacity,
            })
    }

    /// Step 4: writes the audit record, runs `run` only once it is written, then records the
    /// outcome.
    async fn audited<T>(
        &self,
        caller: &Caller,
        request_id: &str,
        operation: Operation,
        subject: &str,
        run: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let id = self
            .audit_begin(caller, request_id, operation, subject)
            .await?;
        let result = run.await;
        let outcome = result
            .as_ref()
            .map_or_else(|e| e.error_code().as_str(), |_| "ok");
        self.audit_end(request_id, id, outcome).await;
        result
    }

    /// Writes the audit record of a request about to run (503 `audit_unavailable` when it
    /// cannot be written: the request does not run).
    async fn audit_begin(
        &self,
        caller: &Caller,
        request_id: &str,
        operation: Operation,
        subject: &str,
    ) -> Result<AuditId> {
        let entry = AuditEntry {
            request_id: request_id.to_owned(),
            at: self.now(),
            account: caller.account.id,
            key: caller.key,
            channel: caller.channel,
            operation,
            subject: Some(subject.to_owned()),
            client: caller.client,
        };
        self.inner.audit.record(&entry).await.map_err(|e| {
            tracing::error!(request.id = request_id, error = %error_chain(&e),
                "audit record could not be written; the request did not run");
            ServiceError::AuditUnavailable
        })
    }

    /// Records the outcome of an audited request (a failure is logged, not answered).
    async fn audit_end(&self, request_id: &str, id: AuditId, outcome: &str) {
        if let Err(e) = self.inner.audit.record_outcome(id, outcome).await {
            tracing::warn!(request.id = request_id, error = %error_chain(&e),
                "audit outcome could not be written");
        }
    }

    /// Step 8: runs engine work on a blocking thread within the time budget. The permit moves
    /// with the work, so a search that overran its budget still counts until it ends.
    async fn run_blocking<T: Send + 'static>(
        &self,
        permit: Permit,
        on_timeout: ServiceError,
        work: impl FnOnce(&dyn ScanIndex) -> std::result::Result<T, IndexError> + Send + 'static,
    ) -> Result<T> {
        let index = Arc::clone(&self.inner.index);
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            work(&*index)
        });
        match tokio::time::timeout(self.inner.limits.time_budget, task).await {
            Err(_) => Err(on_timeout),
            Ok(Err(join)) => {
                tracing::error!(error = %join, "the scan index failed");
                Err(ServiceError::Unavailable("the scan index failed".into()))
            }
            Ok(Ok(result)) => result.map_err(ServiceError::from),
        }
    }
}
