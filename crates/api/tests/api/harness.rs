//! `TestApp`: the real router on a loopback port, over a real state database (a fresh SQLite
//! file or a fresh PostgreSQL database per test, see `periscope_state::testing`) and the real
//! embedded engine over a synthetic dataset, with the seams a test may replace: the index, the
//! audit sink, the plan source, the resolver, the clock and the limits.
//!
//! Every reply is checked for what holds on every route: a JSON body whose `request_id`
//! equals the `X-Request-ID` header, and for errors the error shape.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use periscope_api::{App, IndexGauge, IndexProbe, RateLimit};
use periscope_index::{
    Count, EmbeddedIndex, Exposure, Facets, HostDetail, IndexConfig, IndexError, LineLoader,
    ReferenceIndex, ScanIndex, SearchOutcome, SearchRequest,
};
use periscope_model::Timestamp;
use periscope_model::observation::DomainScan;
use periscope_query::{FilterQuery, Query, Resolution};
use periscope_resolve::{FixedResolver, Resolver};
use periscope_service::{Clock, Limits, SearchService};
use periscope_state::testing::Fixture;
use periscope_state::{
    Account, AccountId, AuditEntry, AuditId, AuditSink, BoxFuture, DailyLimit, Email, NewAccount,
    Plan, PlanSource, State, StateError,
};
use serde_json::Value;

/// The instant the synthetic dataset describes.
pub const AS_OF: &str = "2026-11-20T00:00:00Z";

/// Noon of the dataset's day: the tests' "now".
pub fn noon() -> Timestamp {
    Timestamp::from_unix(Timestamp::parse(AS_OF).unwrap().unix() + 12 * 3600).unwrap()
}

/// The dataset: the engine the server answers from and the reference index the tests read
/// expected values from. Built once per test binary.
pub struct Data {
    pub engine: Arc<EmbeddedIndex>,
    pub reference: ReferenceIndex,
}

/// Hosts in the dataset.
pub const HOSTS: u64 = 3_000;

pub fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let as_of = Timestamp::parse(AS_OF).unwrap();
        let mut loader = LineLoader::new(IndexConfig::default(), as_of);
        let cfg = periscope_synth::SynthConfig {
            hosts: HOSTS,
            seed: 11,
            as_of,
        };
        periscope_synth::write_dataset(&cfg, &mut loader).unwrap();
        let reference = loader.into_index();
        let engine = EmbeddedIndex::build(
            IndexConfig::default(),
            noon(),
            reference.records().cloned(),
            reference.domain_scans().clone(),
        )
        .unwrap();
        Data {
            engine: Arc::new(engine),
            reference,
        }
    })
}

/// A clock the test sets.
#[derive(Debug)]
pub struct TestClock(AtomicI64);

impl TestClock {
    pub fn set(&self, t: Timestamp) {
        self.0.store(t.unix(), Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix(self.0.load(Ordering::SeqCst)).unwrap()
    }
}

/// What a test changes about the app.
pub struct Options {
    pub limits: Limits,
    pub rate: (u32, u32),
    pub index: Option<Arc<dyn ScanIndex>>,
    pub audit: Option<Arc<dyn AuditSink>>,
    pub plans: Option<Arc<dyn PlanSource>>,
    pub resolver: Option<Arc<dyn Resolver>>,
    /// The server's connection settings (HSTS, timeouts).
    pub server: periscope_api::server::Settings,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            rate: (1_000, 1_000),
            index: None,
            audit: None,
            plans: None,
            resolver: None,
            server: periscope_api::server::Settings::default(),
        }
    }
}

struct Probe;

impl IndexProbe for Probe {
    fn gauge(&self) -> IndexGauge {
        let stats = data().engine.stats();
        IndexGauge {
            hosts: stats.hosts,
            services: stats.services,
            generation: 0,
        }
    }

    fn ready(&self) -> bool {
        true
    }
}

/// A running server and a client for it.
pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub state: State,
    pub clock: Arc<TestClock>,
    /// The default account (limit 20) and its key.
    pub account: Account,
    pub key: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// One reply, checked for the envelope every route shares.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The error code (panics on a success body).
    pub fn code(&self) -> &str {
        self.body["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no code in {}", self.body))
    }

    /// `(field, code)` of each violation.
    pub fn violations(&self) -> Vec<(String, String)> {
        self.body["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["field"].as_str().unwrap().to_owned(),
                    v["code"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// Asserts an error answer with this status and code.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(
            (self.status, self.code()),
            (status, code),
            "body: {}",
            self.body
        );
    }

    /// Asserts a 422 with exactly these violations.
    #[track_caller]
    pub fn assert_violations(&self, expected: &[(&str, &str)]) {
        self.assert_error(422, "validation_failed");
        let got = self.violations();
        let got: Vec<(&str, &str)> = got.iter().map(|(f, c)| (f.as_str(), c.as_str())).collect();
        assert_eq!(got, expected, "body: {}", self.body);
    }

    /// Asserts a 200.
    #[track_caller]
    pub fn ok(&self) -> &Value {
        assert_eq!(self.status, 200, "body: {}", self.body);
        &self.body
    }
}

impl TestApp {
    pub async fn start(fixture: &Fixture, options: Options) -> TestApp {
        let state = fixture.state.clone();
        let clock = Arc::new(TestClock(AtomicI64::new(noon().unix())));
        let index: Arc<dyn ScanIndex> = options
            .index
            .unwrap_or_else(|| Arc::clone(&data().engine) as Arc<dyn ScanIndex>);
        let resolver = options
            .resolver
            .unwrap_or_else(|| Arc::new(FixedResolver::new()) as Arc<dyn Resolver>);
        let mut builder = SearchService::builder(index, state.clone(), resolver)
            .limits(options.limits)
            .clock(clock.clone());
        if let Some(audit) = options.audit {
            builder = builder.audit(audit);
        }
        if let Some(plans) = options.plans {
            builder = builder.plans(plans);
        }
        let app = App::new(
            builder.build(),
            RateLimit::new(options.rate.0, options.rate.1),
            Arc::new(Probe),
        );
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        let address = listener.local_addr().unwrap();
        let settings = options.server;
        let server = tokio::spawn(async move {
            periscope_api::server::serve(
                listener,
                periscope_api::router(app),
                settings,
                std::future::pending(),
            )
            .await;
        });
        let (account, key) = new_account(&state, "ann@example.com", DailyLimit::Limited(20)).await;
        TestApp {
            base: format!("http://{address}"),
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(256)
                .build()
                .unwrap(),
            state,
            clock,
            account,
            key,
            server,
        }
    }

    /// Another account with `limit` and a key.
    pub async fn account(&self, email: &str, limit: DailyLimit) -> (Account, String) {
        new_account(&self.state, email, limit).await
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Reply {
        let mut req = self.client.get(format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        reply(req.send().await.unwrap()).await
    }

    /// POSTs `body` as JSON with the default key.
    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.post_as(path, Some(&self.key), body).await
    }

    pub async fn post_as(&self, path: &str, key: Option<&str>, body: Value) -> Reply {
        self.post_raw(
            path,
            key,
            Some("application/json"),
            serde_json::to_vec(&body).unwrap(),
        )
        .await
    }

    pub async fn post_raw(
        &self,
        path: &str,
        key: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Reply {
        let mut req = self.client.post(format!("{}{path}", self.base)).body(body);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        reply(req.send().await.unwrap()).await
    }

    /// The test clock's now.
    pub fn clock_now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Searches charged to the default account today.
    pub async fn used(&self) -> u32 {
        self.used_by(self.account.id).await
    }

    pub async fn used_by(&self, account: AccountId) -> u32 {
        self.state
            .used(account, periscope_state::UtcDay::of(self.clock.now()))
            .await
            .unwrap()
    }
}

async fn new_account(state: &State, email: &str, limit: DailyLimit) -> (Account, String) {
    let mut new = NewAccount::new(Email::parse(email).unwrap(), "Example Ltd");
    new.daily_limit = limit;
    let account = state.create_account(&new, noon()).await.unwrap();
    let (key, _) = state
        .create_key(account.id, Some("test"), noon())
        .await
        .unwrap();
    (account, key.expose().to_owned())
}

/// Reads a response and checks the envelope every `/v1` answer shares.
pub async fn reply(response: reqwest::Response) -> Reply {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.unwrap();
    let body: Value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("status {status}: body is not JSON ({e}): {bytes:?}"));
    let id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("status {status}: no X-Request-ID"));
    assert_eq!(
        body["request_id"].as_str(),
        Some(id),
        "request_id of the body and the header"
    );
    if status != 200 {
        assert!(body["code"].is_string(), "error without code: {body}");
        assert!(body["message"].is_string(), "error without message: {body}");
        let violations = body["violations"]
            .as_array()
            .unwrap_or_else(|| panic!("error without violations: {body}"));
        assert_eq!(
            !violations.is_empty(),
            body["code"] == "validation_failed",
            "violations only for validation_failed: {body}"
        );
    }
    Reply {
        status,
        headers,
        body,
    }
}

// ---------------------------------------------------------------------------------------------
// Seams.

/// An audit sink whose writes fail.
pub struct FailingAudit;

impl AuditSink for FailingAudit {
    fn record<'a>(&'a self, _: &'a AuditEntry) -> BoxFuture<'a, periscope_state::Result<AuditId>> {
        Box::pin(async { Err(StateError::Random("injected audit failure".into())) })
    }

    fn record_outcome<'a>(
        &'a self,
        _: AuditId,
        _: &'a str,
    ) -> BoxFuture<'a, periscope_state::Result<()>> {
        Box::pin(async { Err(StateError::Random("injected audit failure".into())) })
    }
}

/// A plan store that cannot be read.
pub struct UnreadablePlans;

impl PlanSource for UnreadablePlans {
    fn plan(&self, _: AccountId) -> BoxFuture<'_, periscope_state::Result<Plan>> {
        Box::pin(async { Err(StateError::Random("injected plan failure".into())) })
    }
}

/// How [`Faulty`] misbehaves.
#[derive(Debug, Clone, Copy)]
pub enum Fault {
    /// Sleeps this long, then answers.
    Slow(Duration),
    /// Answers `search_source_busy`.
    Busy,
    /// Answers that the engine is unavailable.
    Down,
}

/// The dataset's engine, misbehaving on purpose.
pub struct Faulty(pub Fault);

impl Faulty {
    fn fault(&self) -> Result<(), IndexError> {
        match self.0 {
            Fault::Slow(d) => {
                std::thread::sleep(d);
                Ok(())
            }
            Fault::Busy => Err(IndexError::Busy),
            Fault::Down => Err(IndexError::Unavailable("injected".into())),
        }
    }
}

impl ScanIndex for Faulty {
    fn search(&self, req: &SearchRequest<'_>) -> Result<SearchOutcome, IndexError> {
        self.fault()?;
        data().engine.search(req)
    }

    fn count(&self, query: &Query, now: Timestamp) -> Result<Count, IndexError> {
        self.fault()?;
        data().engine.count(query, now)
    }

    fn facets(&self, query: &FilterQuery, now: Timestamp) -> Result<Facets, IndexError> {
        self.fault()?;
        data().engine.facets(query, now)
    }

    fn exposure(
        &self,
        query: &Query,
        resolution: Resolution,
        now: Timestamp,
    ) -> Result<Exposure, IndexError> {
        self.fault()?;
        data().engine.exposure(query, resolution, now)
    }

    fn domain_scans_of_name(
        &self,
        name: &periscope_model::DomainName,
    ) -> Result<Vec<DomainScan>, IndexError> {
        self.fault()?;
        data().engine.domain_scans_of_name(name)
    }

    fn domain_scans_of_address(&self, ip: IpAddr) -> Result<Vec<DomainScan>, IndexError> {
        self.fault()?;
        data().engine.domain_scans_of_address(ip)
    }

    fn host_detail(
        &self,
        ip: IpAddr,
        continuation: Option<&str>,
        limit: usize,
        now: Timestamp,
    ) -> Result<Option<HostDetail>, IndexError> {
        self.fault()?;
        data().engine.host_detail(ip, continuation, limit, now)
    }
}

/// Runs the body on each backend with the multi-threaded runtime the tests use.
pub use periscope_state::testing::on_each_backend;
