//! Snapshots of every page and fragment of the browser application as served (status, headers
//! and body, laid out and redacted by the sign-in suite's `snapshot::render`, included here),
//! through the real router — sign-in service, application and API in one listener as
//! `periscope serve` runs them — over a real state database on both backends: the same
//! snapshot must hold on SQLite and PostgreSQL. They pin what a browser gets before the pages
//! are rewritten (issue 18), so that the rewrite shows every change as a diff to review. The
//! files are in `snapshots/`; how to review and accept a change: `docs/testing.md`
//! ("Snapshots"). Under `CI=true` insta writes nothing and a missing or different snapshot
//! fails the test.
//!
//! The search pages run over a synthetic dataset fixed in time ([`AS_OF`], seed 11, and one
//! host with more services than a page holds) and a
//! search service whose clock stands at noon of that day ([`FixedClock`]), so results,
//! observation times and the allowance's reset are the same on every run; the application's
//! and the sign-in service's clock starts at the real time (the ID token's expiry is checked
//! against it) and is redacted as `[now]`.
//!
//! Not snapshotted: "Something went wrong" (500, `session::internal`) and the search
//! conditions only an injected engine failure gives (timeout, capacity, source busy; their
//! wording is checked in `routes::search` and the API suite), which no request through the
//! router produces without breaking what is under the application; "Signed out of Periscope",
//! shown only after a provider without an `end_session_endpoint` (both providers of the tests
//! have one); the static files under `/assets/` (not pages).

use std::sync::{Arc, OnceLock};

use periscope_index::{EmbeddedIndex, IndexConfig, LineLoader, ReferenceIndex, ScanIndex};
use periscope_model::Timestamp;
use periscope_resolve::FixedResolver;
use periscope_service::SearchService;
use periscope_state::testing::on_each_backend;
use periscope_state::{Access, DailyLimit};

use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::snapshot::{Redactions, render};
use crate::support::*;

/// The instant the snapshots' dataset describes.
pub const AS_OF: &str = "2026-11-20T00:00:00Z";

/// Noon of the dataset's day: the search service's "now".
pub fn noon() -> Timestamp {
    Timestamp::from_unix(Timestamp::parse(AS_OF).unwrap().unix() + 12 * 3600).unwrap()
}

/// The search service's clock: noon of the dataset's day, always.
pub struct FixedClock;

impl periscope_service::Clock for FixedClock {
    fn now(&self) -> Timestamp {
        noon()
    }
}

/// An address outside the synthetic plan's first blocks, with more services than a host
/// detail page holds (so "More services" has a next page).
pub const MANY_SERVICES: &str = "254.254.254.1";

/// The dataset of the snapshots: 600 synthetic hosts as of [`AS_OF`], and
/// [`MANY_SERVICES`] with 22 HTTP services.
pub struct Data {
    pub engine: Arc<EmbeddedIndex>,
    pub reference: ReferenceIndex,
}

pub fn data() -> &'static Data {
    static DATA: OnceLock<Data> = OnceLock::new();
    DATA.get_or_init(|| {
        let as_of = Timestamp::parse(AS_OF).unwrap();
        let mut loader = LineLoader::new(IndexConfig::default(), as_of);
        let cfg = periscope_synth::SynthConfig {
            hosts: 600,
            seed: 11,
            as_of,
        };
        periscope_synth::write_dataset(&cfg, &mut loader).unwrap();
        for port in 8000..8022 {
            let line = serde_json::json!({
                "kind": "service", "ip": MANY_SERVICES, "port": port, "transport": "tcp",
                "protocol": "http", "observed_at": "2026-11-19T12:00:00Z", "status": "completed",
                "http": {"status_code": 200, "title": format!("Service on {port}"), "complete": true},
            });
            std::io::Write::write_all(&mut loader, format!("{line}\n").as_bytes()).unwrap();
        }
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

/// A search service over `engine` and `state` on the fixed clock (no DNS: a fixed resolver
/// with no names).
pub fn service_over(engine: Arc<dyn ScanIndex>, state: &periscope_state::State) -> SearchService {
    SearchService::builder(engine, state.clone(), Arc::new(FixedResolver::new()))
        .clock(Arc::new(FixedClock))
        .build()
}

/// Asserts the snapshot `name` of `page`.
fn check(name: &str, page: &Page, redactions: &Redactions) {
    insta::assert_snapshot!(
        name,
        render(page.status, &page.headers, &page.body, redactions)
    );
}

/// The redactions of an app's answers: its origin and port, its clock's instant, and the
/// release in the assets' URLs (`/assets/app.js?v=0.1.0`), so a version bump changes no
/// snapshot.
pub fn redactions(app: &App) -> Redactions {
    Redactions::new()
        .origin(&app.origin)
        .time(periscope_model::clock::Clock::now(&*app.clock).unix())
        .value(&format!("?v={}", env!("CARGO_PKG_VERSION")), "?v=[version]")
}

/// `q` percent-encoded for a query string.
fn encode(q: &str) -> String {
    url::form_urlencoded::byte_serialize(q.as_bytes()).collect()
}

/// `/?q=…` for `q`.
fn search(q: &str) -> String {
    format!("/?q={}", encode(q))
}

/// The text between `start` (after it) and the next `end`.
fn between<'a>(body: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let at = body.find(start)? + start.len();
    let len = body[at..].find(end)?;
    Some(&body[at..at + len])
}

/// `GET path` on `app`; the fragments and JSON under `/app/` carry no banner.
pub async fn fetch(app: &App, browser: &Browser, path: &str) -> Page {
    if path.starts_with("/app/") {
        browser.get_foreign(&app.url(path)).await
    } else {
        browser.get(&app.url(path)).await
    }
}

/// Registers `email` and signs `browser` in through the application.
async fn sign_in(app: &App, browser: &Browser, email: &str) {
    let password = "a long enough password 9";
    register_via_outbox(app, browser, email, "Example Ltd", password).await;
    sign_in_via_web(app, browser, "/signin?return_to=%2F", email, password).await;
}

#[test]
fn the_layout_and_redactions_hold() {
    crate::snapshot::self_check();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_without_a_session() {
    on_each_backend("web_views_signed_out", |fixture| async move {
        let app = App::embedded(&fixture, None).await;
        let r = redactions(&app);
        let browser = Browser::new();
        check("home_signed_out", &fetch(&app, &browser, "/").await, &r);
        check(
            "signed_out",
            &fetch(&app, &browser, "/signed-out").await,
            &r,
        );
        check(
            "quickstart_signed_out",
            &fetch(&app, &browser, "/quickstart").await,
            &r,
        );
        check(
            "release_notes_signed_out",
            &fetch(&app, &browser, "/release-notes").await,
            &r,
        );
        check("terms_redirect", &fetch(&app, &browser, "/terms").await, &r);
        // Every page that needs a session answers this way (with its own return_to).
        check(
            "account_signed_out",
            &fetch(&app, &browser, "/account").await,
            &r,
        );
        check(
            "fragment_signed_out",
            &fetch(&app, &browser, "/app/host?ip=240.0.0.1").await,
            &r,
        );
        check(
            "signin_redirect",
            &fetch(&app, &browser, "/signin?return_to=%2F").await,
            &r,
        );
        check(
            "callback_no_state",
            &fetch(&app, &browser, "/oidc/callback").await,
            &r,
        );
        check(
            "callback_state_mismatch",
            &fetch(&app, &browser, "/oidc/callback?state=forged&code=x").await,
            &r,
        );

        // The provider cannot be reached.
        let closed = free_port();
        let down = App::external(
            &fixture.state,
            &format!("http://127.0.0.1:{closed}/auth"),
            CLIENT_ID,
            CLIENT_SECRET,
        )
        .await;
        let page = browser.get(&down.url("/signin")).await;
        check("signin_provider_down", &page, &redactions(&down));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_notice_and_search_without_a_service() {
    on_each_backend("web_views_demo", |fixture| async move {
        let app = App::embedded_demo(&fixture).await;
        let r = redactions(&app);
        let browser = Browser::new();
        check(
            "demo_home_signed_out",
            &browser.get(&app.url("/")).await,
            &r,
        );
        check(
            "demo_signin_form",
            &browser.get(&app.url("/auth/signin")).await,
            &r,
        );
        sign_in(&app, &browser, "demo@example.com").await;
        // The ring is read from the state database on the application's clock.
        check(
            "demo_search_unavailable",
            &browser.get(&app.url(&search("port:443"))).await,
            &r,
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_pages_and_fragments() {
    on_each_backend("web_views_search", |fixture| async move {
        let engine = Arc::clone(&data().engine) as Arc<dyn ScanIndex>;
        let app = App::embedded_with_api(&fixture, service_over(engine, &fixture.state)).await;
        let r = redactions(&app);
        let browser = Browser::new();
        sign_in(&app, &browser, "sam@example.com").await;

        check("home_signed_in", &fetch(&app, &browser, "/").await, &r);
        let list = fetch(&app, &browser, &search("port:443")).await;
        check("results_filter", &list, &r);
        let next = between(&list.body, "rel=\"next\" href=\"", "\"")
            .expect("a next page")
            .replace("&amp;", "&");
        check(
            "results_filter_page_2",
            &fetch(&app, &browser, &next).await,
            &r,
        );
        check(
            "results_page_expired",
            &fetch(&app, &browser, &format!("{}&page=4", search("port:443"))).await,
            &r,
        );

        // An exact IP, its network's AS number, one of its domains.
        let now = noon();
        let (ip, detail) = data()
            .reference
            .records()
            .filter(|rec| rec.ip.is_ipv4())
            .find_map(|rec| {
                let d = data().engine.host_detail(rec.ip, None, 20, now).ok()??;
                (d.host.network.is_some() && !d.host.domains.is_empty()).then_some((rec.ip, d))
            })
            .expect("an IPv4 host with a network and a domain");
        let asn = detail.host.network.as_ref().unwrap().asn;
        let domain = detail.host.domains[0].name.clone();
        check(
            "results_exact_ip",
            &fetch(&app, &browser, &search(&ip.to_string())).await,
            &r,
        );
        check(
            "results_asn",
            &fetch(&app, &browser, &search(&format!("AS{asn}"))).await,
            &r,
        );
        check(
            "results_domain",
            &fetch(&app, &browser, &search(&domain)).await,
            &r,
        );
        check(
            "results_not_guessed",
            &fetch(&app, &browser, &search("22")).await,
            &r,
        );
        check(
            "results_invalid",
            &fetch(&app, &browser, &search("10.0.0.0/8")).await,
            &r,
        );
        check(
            "results_no_hosts",
            &fetch(&app, &browser, &search("port:443 cve:CVE-1999-9999")).await,
            &r,
        );
        check(
            "globe_view",
            &fetch(
                &app,
                &browser,
                &format!("{}&view=globe", search("port:443")),
            )
            .await,
            &r,
        );

        // The fragments the pages' scripts fetch.
        check(
            "fragment_host_panel",
            &fetch(&app, &browser, &format!("/app/host?ip={ip}")).await,
            &r,
        );
        check(
            "fragment_host_not_stored",
            &fetch(&app, &browser, "/app/host?ip=240.255.255.254").await,
            &r,
        );
        // "More services": the panel's next page of rows (a fragment), and the host page's.
        let panel = fetch(&app, &browser, &format!("/app/host?ip={MANY_SERVICES}")).await;
        check("fragment_host_panel_many_services", &panel, &r);
        let fragment = between(&panel.body, "data-fragment=\"", "\"")
            .expect("a More services link")
            .replace("&amp;", "&");
        check(
            "fragment_host_more_services",
            &fetch(&app, &browser, &fragment).await,
            &r,
        );
        let page = between(
            &panel.body,
            "class=\"button secondary more-services\" href=\"",
            "\"",
        )
        .expect("a More services link")
        .replace("&amp;", "&");
        check(
            "host_page_more_services",
            &fetch(&app, &browser, &page).await,
            &r,
        );
        check(
            "host_page",
            &fetch(&app, &browser, &format!("/host?ip={ip}")).await,
            &r,
        );
        check(
            "fragment_count",
            &fetch(&app, &browser, "/app/count?q=port%3A443").await,
            &r,
        );
        check(
            "fragment_count_unavailable",
            &fetch(&app, &browser, "/app/count?q=nonsense%3A1").await,
            &r,
        );
        check(
            "fragment_facets",
            &fetch(&app, &browser, "/app/facets?q=port%3A443").await,
            &r,
        );
        check(
            "fragment_facets_full",
            &fetch(
                &app,
                &browser,
                &format!(
                    "/app/facets?q={}",
                    encode("port:443 protocol:https exploit:no")
                ),
            )
            .await,
            &r,
        );
        check(
            "fragment_facets_unavailable",
            &fetch(&app, &browser, "/app/facets?q=asn%3A64500").await,
            &r,
        );
        check(
            "exposure_global",
            &fetch(
                &app,
                &browser,
                "/app/exposure?q=port%3A443&resolution=global",
            )
            .await,
            &r,
        );
        check(
            "exposure_refused",
            &fetch(
                &app,
                &browser,
                &format!("/app/exposure?q={}", encode(&format!("domain:{domain}"))),
            )
            .await,
            &r,
        );
        check(
            "filter_redirect",
            &fetch(
                &app,
                &browser,
                "/filter?base=port%3A443&field=country&value=DE",
            )
            .await,
            &r,
        );
        check(
            "filter_refused",
            &fetch(
                &app,
                &browser,
                "/filter?base=port%3A443&field=port&value=22",
            )
            .await,
            &r,
        );

        // The allowance: used up, then no daily limit; an inactive account.
        let account = account_of(&fixture.state, "sam@example.com").await;
        let state = &fixture.state;
        state
            .set_daily_limit(account.id, DailyLimit::Limited(1))
            .await
            .unwrap();
        check(
            "results_limit_reached",
            &fetch(&app, &browser, &search("port:80")).await,
            &r,
        );
        state
            .set_daily_limit(account.id, DailyLimit::Unlimited)
            .await
            .unwrap();
        check(
            "ring_unlimited",
            &fetch(&app, &browser, "/release-notes").await,
            &r,
        );
        state
            .set_access(account.id, Access::Inactive)
            .await
            .unwrap();
        check(
            "results_account_inactive",
            &fetch(&app, &browser, &search("port:80")).await,
            &r,
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_pages_forms_and_sign_out() {
    on_each_backend("web_views_account", |fixture| async move {
        let engine = Arc::clone(&data().engine) as Arc<dyn ScanIndex>;
        let app = App::embedded_with_api(&fixture, service_over(engine, &fixture.state)).await;
        let browser = Browser::new();
        sign_in(&app, &browser, "kim@example.com").await;
        let r = redactions(&app);

        let account = fetch(&app, &browser, "/account").await;
        check("account", &account, &r);
        let csrf = account.csrf();
        let changed = browser
            .post(
                &app.url("/account/marketing"),
                &[("csrf", &csrf), ("consent", "withdraw")],
            )
            .await;
        check("account_marketing_changed", &changed, &r);
        let refused = browser
            .post(
                &app.url("/account/marketing"),
                &[("csrf", &csrf), ("consent", "maybe")],
            )
            .await;
        check("account_marketing_refused", &refused, &r);
        check(
            "quickstart_signed_in",
            &fetch(&app, &browser, "/quickstart").await,
            &r,
        );
        check(
            "release_notes_signed_in",
            &fetch(&app, &browser, "/release-notes").await,
            &r,
        );

        // Report a problem.
        check(
            "report_form",
            &fetch(&app, &browser, "/report-a-problem").await,
            &r,
        );
        let empty = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", &csrf), ("description", " ")],
            )
            .await;
        check("report_refused", &empty, &r);
        let forged = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", "forged"), ("description", "x")],
            )
            .await;
        check("csrf_refused", &forged, &r);
        let sent = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", &csrf), ("description", "The Globe is empty.")],
            )
            .await;
        check("report_received", &sent, &r);

        // API access: a key created, shown once, listed, revoked.
        let empty = fetch(&app, &browser, "/api-access").await;
        check("api_access_empty", &empty, &r);
        let long = "n".repeat(101);
        let refused = browser
            .post(
                &app.url("/api-access/keys"),
                &[
                    ("csrf", &csrf),
                    ("form", &empty.hidden("form")),
                    ("name", &long),
                ],
            )
            .await;
        check("api_access_name_refused", &refused, &r);
        let sent = [
            ("csrf", csrf.clone()),
            ("form", empty.hidden("form")),
            ("name", "CI deploy".to_owned()),
        ];
        let sent: Vec<(&str, &str)> = sent.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let created = browser.post(&app.url("/api-access/keys"), &sent).await;
        let key = between(&created.body, "<code id=\"new-key\">", "</code>")
            .expect("the new key")
            .to_owned();
        // The key's id is random too (a 63-bit number in the revoke links).
        let id = between(&created.body, "data-key-id=\"", "\"")
            .expect("the key's row")
            .to_owned();
        let r = r
            .value(&key, "[api-key]")
            .value(&key[..12], "[api-key-prefix]")
            .value(&id, "[key-id]");
        check("api_access_key_created", &created, &r);
        let again = browser.post(&app.url("/api-access/keys"), &sent).await;
        check("api_access_form_sent_twice", &again, &r);
        let list = fetch(&app, &browser, "/api-access").await;
        check("api_access_list", &list, &r);
        let href = between(&list.body, "<a class=\"revoke\" href=\"", "\"")
            .unwrap()
            .to_owned();
        let confirm = fetch(&app, &browser, &href).await;
        check("api_key_revoke_confirm", &confirm, &r);
        let revoked = browser.post(&app.url(&href), &[("csrf", &csrf)]).await;
        check("api_key_revoked", &revoked, &r);
        check(
            "api_key_already_revoked",
            &fetch(&app, &browser, &href).await,
            &r,
        );
        check(
            "api_key_not_found",
            &fetch(&app, &browser, "/api-access/keys/999/revoke").await,
            &r,
        );

        // Sign-out: refused without the token, then ended here and at the provider.
        let forged = browser
            .post(&app.url("/signout"), &[("csrf", "forged")])
            .await;
        check("signout_csrf_refused", &forged, &r);
        let out = browser.post(&app.url("/signout"), &[("csrf", &csrf)]).await;
        check("signout_redirect", &out, &r);

        // Another session of the account, idle past the timeout.
        let idle = Browser::new();
        sign_in_via_web(
            &app,
            &idle,
            "/signin?return_to=%2F",
            "kim@example.com",
            "a long enough password 9",
        )
        .await;
        app.clock.advance(periscope_web::DEFAULT_IDLE_SECS + 60);
        check(
            "session_expired",
            &idle.get(&app.url("/api-access")).await,
            &r,
        );
    })
    .await;
}
