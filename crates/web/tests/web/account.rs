//! The account menu and the pages behind it, over real HTTP with the API mounted beside the
//! application (as `periscope serve` runs them): the public pages with and without a session,
//! the quickstart's `curl` commands run by the real `curl` against the server with a key made
//! on the API access page, the ring's numbers after searches in the browser and by key, a
//! problem report stored and refused, and a key created, shown once, used, listed by its prefix
//! and revoked. `account_in_chromium` runs `tests/browser/account.mjs` in a real Chromium.

use periscope_state::testing::on_each_backend;
use periscope_state::{DailyLimit, is_well_formed_key};
use periscope_ui::BANNER;

use crate::browser::{artifacts, converse, node_suite, ready};
use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::search::service;
use crate::support::*;

/// HTML text as written (the entities `escape` produces).
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The text between `start` (after it) and the next `end`.
fn between<'a>(body: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let at = body.find(start)? + start.len();
    let len = body[at..].find(end)?;
    Some(&body[at..at + len])
}

/// The account menu's sentence of the ring.
fn ring_text(page: &Page) -> String {
    between(&page.body, "<strong class=\"ring-text\">", "</strong>")
        .unwrap_or_else(|| panic!("no ring: {}", page.body))
        .to_owned()
}

/// The full key shown once on the page, if any.
fn shown_key(page: &Page) -> Option<String> {
    between(&page.body, "<code id=\"new-key\">", "</code>").map(unescape)
}

/// An app with the API, and a browser signed in as a new account.
async fn signed_in(
    fixture: &periscope_state::testing::Fixture,
    email: &str,
) -> (App, Browser, String) {
    let app = App::embedded_with_api(fixture, service(fixture)).await;
    let browser = Browser::new();
    let password = "a long enough password 7";
    register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
    let (_, session, _, _) =
        sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
    (app, browser, session)
}

/// Creates a key on the API access page; returns the key and the page that showed it.
async fn create_key(app: &App, browser: &Browser, name: &str) -> (String, Page) {
    let form = browser.get(&app.url("/api-access")).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let sent = [
        ("csrf", form.csrf()),
        ("form", form.hidden("form")),
        ("name", name.to_owned()),
    ];
    let sent: Vec<(&str, &str)> = sent.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let created = browser.post(&app.url("/api-access/keys"), &sent).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let key = shown_key(&created).expect("the new key is shown");
    assert!(is_well_formed_key(&key), "{key}");
    // The same form sent again (a reload of the page that showed the key) creates nothing and
    // shows no key.
    let again = browser.post(&app.url("/api-access/keys"), &sent).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains("This form was already sent"),
        "{}",
        again.body
    );
    assert!(shown_key(&again).is_none());
    assert!(!again.body.contains(&key));
    (key, created)
}

async fn api_get(app: &App, key: &str, path: &str) -> (u16, serde_json::Value) {
    let r = reqwest::Client::new()
        .get(app.url(path))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

async fn api_search(app: &App, key: &str, query: &str) -> (u16, serde_json::Value) {
    let r = reqwest::Client::new()
        .post(app.url("/v1/search"))
        .bearer_auth(key)
        .header("content-type", "application/json")
        .body(serde_json::json!({ "query": query }).to_string())
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (
        status,
        serde_json::from_str(&r.text().await.unwrap()).unwrap(),
    )
}

/// Whether the `curl` binary is there; outside CI a missing one skips.
fn curl_ready() -> bool {
    let found = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("curl is required under CI=true (apt-get install curl)");
    }
    eprintln!("SKIPPED: the quickstart's commands need curl (apt-get install curl)");
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_pages_quickstart_commands_and_the_ring() {
    on_each_backend("web_account_public", |fixture| async move {
        let app = App::embedded_with_api(&fixture, service(&fixture)).await;

        // Without a session: the pages answer, with a "Sign in" link and no account menu.
        let anonymous = Browser::new();
        for (path, heading) in [
            ("/quickstart", "<h1>Quickstart</h1>"),
            ("/release-notes", "<h1>Release notes</h1>"),
        ] {
            let page = anonymous.get(&app.url(path)).await;
            assert_eq!(page.status, 200, "{path}: {}", page.body);
            assert!(page.body.contains(heading), "{path}: {}", page.body);
            assert!(page.body.contains("href=\"/signin\">Sign in</a>"), "{path}");
            assert!(!page.body.contains("details class=\"menu\""), "{path}");
        }
        let notes = anonymous.get(&app.url("/release-notes")).await;
        assert!(
            notes.body.contains("<h2>Preview 0.1</h2>")
                && notes.body.contains("<code>service-v5</code>"),
            "the release notes are docs/release-notes.md: {}",
            notes.body
        );
        let terms = anonymous.get(&app.url("/terms")).await;
        assert_eq!(terms.status, 303, "{}", terms.body);
        assert_eq!(terms.location(), "/auth/terms");
        let terms = anonymous.get(&app.url("/auth/terms")).await;
        assert_eq!(terms.status, 200);
        assert!(terms.body.contains("Terms of service") && terms.body.contains(BANNER));

        // The quickstart uses the public URL and has an example for every route.
        let quickstart = anonymous.get(&app.url("/quickstart")).await;
        let mut examples = Vec::new();
        let mut rest = quickstart.body.as_str();
        while let Some(at) = rest.find("<code class=\"curl\" data-route=\"") {
            rest = &rest[at + 31..];
            let route = &rest[..rest.find('"').unwrap()];
            let code = between(rest, "\">", "</code>").unwrap();
            examples.push((unescape(route), unescape(code)));
        }
        let routes: Vec<&str> = examples.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            routes,
            [
                "GET /v1/search/capabilities",
                "GET /v1/allowance",
                "POST /v1/search",
                "POST /v1/search/count",
                "POST /v1/search/facets",
                "POST /v1/search/exposure",
                "POST /v1/hosts/detail",
                "GET /v1/openapi.json",
            ]
        );
        for (route, code) in &examples {
            let path = route.split(' ').nth(1).unwrap();
            assert!(
                code.contains(&format!("{}{path}", app.origin)),
                "{route}: {code}"
            );
        }

        // Signed in: the same pages with the account menu and its ring.
        let browser = Browser::new();
        let (email, password) = ("rin@example.com", "a long enough password 5");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
        for path in ["/quickstart", "/release-notes", "/"] {
            let page = browser.get(&app.url(path)).await;
            assert_eq!(page.status, 200, "{path}: {}", page.body);
            assert!(page.body.contains("details class=\"menu\""), "{path}");
            assert!(!page.body.contains(">Sign in</a></header>"), "{path}");
            assert_eq!(ring_text(&page), "20 of 20 searches left today", "{path}");
            let reset = between(&page.body, "<time datetime=\"", "\"").unwrap();
            assert!(reset.ends_with("T00:00:00Z"), "{reset}");
            assert!(page.body.contains("data-local-time>00:00 UTC</time>"));
            for link in [
                "/quickstart",
                "/release-notes",
                "/report-a-problem",
                "/api-access",
            ] {
                assert!(
                    page.body.contains(&format!("<a href=\"{link}\">")),
                    "{link}"
                );
            }
        }
        let terms = browser.get(&app.url("/terms")).await;
        assert_eq!(terms.status, 303);
        assert_eq!(terms.location(), "/auth/terms");
        // A results page shows the allowance after its own search.
        let results = browser.get(&app.url("/?q=port%3A443")).await;
        assert_eq!(results.status, 200, "{}", results.body);
        assert_eq!(ring_text(&results), "19 of 20 searches left today");
        assert!(
            results
                .body
                .contains("data-remaining=\"19\" data-limit=\"20\"")
        );

        // The quickstart's commands, run by curl with a key made on the API access page.
        if curl_ready() {
            let (key, _) = create_key(&app, &browser, "quickstart").await;
            for (route, code) in &examples {
                let out = tokio::process::Command::new("sh")
                    .arg("-ec")
                    .arg(code)
                    .env("KEY", &key)
                    .kill_on_drop(true)
                    .output()
                    .await
                    .expect("sh runs");
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success(),
                    "{route} failed:\n{code}\n{stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let json: serde_json::Value = serde_json::from_str(stdout.trim())
                    .unwrap_or_else(|e| panic!("{route}: not JSON ({e}): {stdout}"));
                if route.contains("openapi") {
                    assert!(json["openapi"].is_string(), "{stdout}");
                } else {
                    assert!(json["request_id"].is_string(), "{route}: {stdout}");
                }
                if route == "POST /v1/search" {
                    assert!(json["results"].as_array().is_some_and(|r| !r.is_empty()));
                }
                if route == "POST /v1/hosts/detail" {
                    assert!(json["host"]["ip"].is_string(), "{stdout}");
                }
            }
            // Two pages of the search example and one of the detail example were charged.
            let (status, allowance) = api_get(&app, &key, "/v1/allowance").await;
            assert_eq!(status, 200);
            assert_eq!(allowance["allowance"]["remaining"], 16, "{allowance}");
            let home = browser.get(&app.url("/")).await;
            assert_eq!(ring_text(&home), "16 of 20 searches left today");
        }

        // No daily limit is not zero.
        let account = account_of(&fixture.state, email).await;
        fixture
            .state
            .set_daily_limit(account.id, DailyLimit::Unlimited)
            .await
            .unwrap();
        let home = browser.get(&app.url("/release-notes")).await;
        assert_eq!(ring_text(&home), "No daily limit");
        assert!(!home.body.contains("data-local-time"));
        assert_not_logged("public pages", &[password]);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_problem_report_is_stored_and_refused_in_words() {
    on_each_backend("web_account_report", |fixture| async move {
        let app = App::embedded(&fixture, None).await;
        let anonymous = Browser::new();
        let page = anonymous.get(&app.url("/report-a-problem")).await;
        assert!(page.body.contains("Sign in to search"), "{}", page.body);
        assert!(page.body.contains("return_to=%2Freport-a-problem"));

        let browser = Browser::new();
        let (email, password) = ("rep@example.com", "a long enough password 6");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;

        let form = browser.get(&app.url("/report-a-problem")).await;
        assert_eq!(form.status, 200, "{}", form.body);
        assert!(form.body.contains("maxlength=\"4000\""), "{}", form.body);
        assert!(
            form.body
                .contains("<label class=\"field\" for=\"description\">")
        );
        assert!(form.body.contains("0 of 4,000 characters"));
        assert!(!form.body.contains("type=\"file\""), "no attachment field");
        let csrf = form.csrf();

        // Too long (characters, not bytes): refused, and the text comes back as typed.
        let long = "é".repeat(4_001);
        let refused = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", &csrf), ("description", &long)],
            )
            .await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert!(
            refused
                .body
                .contains("The description is 4,001 characters long; a report takes at most 4,000"),
            "{}",
            refused.body
        );
        assert!(refused.body.contains(&format!(">{long}</textarea>")));
        assert!(refused.body.contains("4,001 of 4,000 characters"));
        let empty = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", &csrf), ("description", "  \r\n ")],
            )
            .await;
        assert_eq!(empty.status, 422);
        assert!(
            empty.body.contains("The description is empty."),
            "{}",
            empty.body
        );
        let forged = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", "not-the-token"), ("description", "forged")],
            )
            .await;
        assert_eq!(forged.status, 403, "{}", forged.body);
        assert!(forged.body.contains("This form has expired"));
        // Text that could drive the administrator's terminal is refused at the edge, in words
        // that name the character: ESC, BEL, a bare CR (a browser's line break is CRLF), C1,
        // a bidirectional override.
        for (text, named) in [
            ("Map empty\u{1b}]0;pwned\u{7}", "(U+001B, character 10)"),
            ("ring \u{7} the bell", "(U+0007, character 6)"),
            (
                "line\r2026-01-01  boss@example.com",
                "(U+000D, character 5)",
            ),
            ("csi \u{9b}2J", "(U+009B, character 5)"),
            ("abc\u{202e}fed", "(U+202E, character 4)"),
        ] {
            let page = browser
                .post(
                    &app.url("/report-a-problem"),
                    &[("csrf", &csrf), ("description", text)],
                )
                .await;
            assert_eq!(page.status, 422, "{text:?}: {}", page.body);
            assert!(
                page.body.contains("invisible control character") && page.body.contains(named),
                "{text:?}: {}",
                page.body
            );
        }
        assert!(fixture.state.reports(10).await.unwrap().is_empty());

        // Exactly 4,000 characters with a line break sent as CRLF (one character) is stored.
        let text = format!("Search <b> for AS64894\r\n{}", "x".repeat(4_000 - 23));
        let sent = browser
            .post(
                &app.url("/report-a-problem"),
                &[("csrf", &csrf), ("description", &text)],
            )
            .await;
        assert_eq!(sent.status, 200, "{}", sent.body);
        assert!(sent.body.contains("Report received"));
        assert!(sent.body.contains("Reports receive no individual reply."));
        let reports = fixture.state.reports(10).await.unwrap();
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].email.as_str(), email);
        assert_eq!(reports[0].description, text.replace("\r\n", "\n"));
        assert_eq!(reports[0].description.chars().count(), 4_000);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_are_shown_once_used_listed_and_revoked() {
    on_each_backend("web_account_keys", |fixture| async move {
        let (app, browser, _) = signed_in(&fixture, "kim@example.com").await;
        let empty = browser.get(&app.url("/api-access")).await;
        assert_eq!(empty.status, 200, "{}", empty.body);
        assert!(empty.body.contains("You have no API keys yet."));
        assert_eq!(empty.headers["cache-control"], "no-store");

        // Refused names keep what was typed.
        let csrf = empty.csrf();
        let long = "n".repeat(101);
        let refused = browser
            .post(
                &app.url("/api-access/keys"),
                &[("csrf", &csrf), ("name", &long)],
            )
            .await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert!(refused.body.contains("The name is 101 characters long"));
        assert!(refused.body.contains(&format!("value=\"{long}\"")));
        let tab = browser
            .post(
                &app.url("/api-access/keys"),
                &[("csrf", &csrf), ("name", "deploy\tbot")],
            )
            .await;
        assert_eq!(tab.status, 422);
        assert!(tab.body.contains("control character"), "{}", tab.body);
        assert!(tab.body.contains("value=\"deploy\tbot\""));
        let forged = browser
            .post(
                &app.url("/api-access/keys"),
                &[("csrf", "forged"), ("name", "x")],
            )
            .await;
        assert_eq!(forged.status, 403);
        assert!(shown_key(&forged).is_none());
        let account = account_of(&fixture.state, "kim@example.com").await;
        assert!(fixture.state.keys_of(account.id).await.unwrap().is_empty());

        // Created: shown once, not cacheable, with the warning.
        let (key, created) = create_key(&app, &browser, "CI <deploy>").await;
        assert_eq!(
            fixture.state.keys_of(account.id).await.unwrap().len(),
            1,
            "one key, although the form was sent twice"
        );
        assert_eq!(created.headers["cache-control"], "no-store");
        assert!(created.body.contains("Keep the key out of source control"));
        assert!(created.body.contains("revoke it below"));
        assert!(created.body.contains("data-copy=\"new-key\""));
        assert!(created.body.contains("“CI &lt;deploy&gt;”"));
        let list = browser.get(&app.url("/api-access")).await;
        assert!(!list.body.contains(&key), "the key is shown once only");
        assert!(shown_key(&list).is_none());
        assert!(list.body.contains(&format!("<code>{}…</code>", &key[..12])));
        assert!(list.body.contains("CI &lt;deploy&gt;"));
        assert!(list.body.contains("<td>Never</td>"));

        // The key works on the API, on the same allowance as the browser.
        let (status, body) = api_get(&app, &key, "/v1/allowance").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["allowance"]["remaining"], 20);
        let (status, body) = api_search(&app, &key, "port:443").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["allowance"]["remaining"], 19);
        let list = browser.get(&app.url("/api-access")).await;
        assert_eq!(ring_text(&list), "19 of 20 searches left today");
        assert!(
            !list.body.contains("<td>Never</td>"),
            "last used is recorded"
        );

        // Revoke: a confirmation step, CSRF-protected, effective at the next request.
        let href = between(&list.body, "<a class=\"revoke\" href=\"", "\"").unwrap();
        let confirm = browser.get(&app.url(href)).await;
        assert_eq!(confirm.status, 200, "{}", confirm.body);
        assert!(confirm.body.contains("Revoke this key?"));
        let forged = browser.post(&app.url(href), &[("csrf", "forged")]).await;
        assert_eq!(forged.status, 403);
        assert_eq!(api_get(&app, &key, "/v1/allowance").await.0, 200);
        let revoked = browser
            .post(&app.url(href), &[("csrf", &confirm.csrf())])
            .await;
        assert_eq!(revoked.status, 200, "{}", revoked.body);
        assert!(revoked.body.contains("is revoked. A script using it fails"));
        assert!(revoked.body.contains("<td class=\"revoked\">Revoked "));
        let (status, body) = api_get(&app, &key, "/v1/allowance").await;
        assert_eq!(status, 401, "{body}");
        assert_eq!(body["code"], "unauthorized");
        let (status, _) = api_search(&app, &key, "port:443").await;
        assert_eq!(status, 401);

        // Another account cannot see or revoke it.
        let other = Browser::new();
        let password = "a long enough password 8";
        register_via_outbox(&app, &other, "lee@example.com", "Other Ltd", password).await;
        sign_in_via_web(
            &app,
            &other,
            "/signin?return_to=%2F",
            "lee@example.com",
            password,
        )
        .await;
        let theirs = other.get(&app.url(href)).await;
        assert_eq!(theirs.status, 404, "{}", theirs.body);
        assert_not_logged("api keys", &[&key]);
    })
    .await;
}

/// Where the browser suite saves its screenshots: `PERISCOPE_ARTIFACTS`, else
/// `browser-artifacts` in `CARGO_TARGET_DIR`, else in the temporary directory — never in the
/// repository.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_in_chromium() {
    if !ready() {
        return;
    }
    on_each_backend("web_account_browser", |fixture| async move {
        let (app, browser, session) = signed_in(&fixture, "chr@example.com").await;
        // One search in this session before the script reads the ring: 19 of 20.
        let first = browser.get(&app.url("/?q=port%3A443")).await;
        assert_eq!(ring_text(&first), "19 of 20 searches left today");
        let artifacts = artifacts("account", &fixture);
        let key = std::sync::Mutex::new(None);
        let (app_ref, key_ref) = (&app, &key);
        // The script prints the key it created and copied, then waits while it is used here.
        let mut command = node_suite("account.mjs", &app.origin, &session, &artifacts);
        converse(&mut command, "the account suite", |line| async move {
            let k = line.strip_prefix("key: ")?.trim().to_owned();
            assert!(is_well_formed_key(&k), "{k}");
            let (status, body) = api_get(app_ref, &k, "/v1/allowance").await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(body["allowance"]["remaining"], 19, "{body}");
            let (status, body) = api_search(app_ref, &k, "port:443").await;
            assert_eq!(status, 200, "{body}");
            *key_ref.lock().unwrap() = Some(k);
            Some("used".to_owned())
        })
        .await;
        eprintln!("screenshots: {}", artifacts.display());

        // Revoked in the browser: the key's next request is refused.
        let key = key
            .into_inner()
            .unwrap()
            .expect("the script printed the key");
        let (status, body) = api_get(&app, &key, "/v1/allowance").await;
        assert_eq!(status, 401, "revoked in the browser: {body}");
        assert_eq!(body["code"], "unauthorized");
        let reports = fixture.state.reports(10).await.unwrap();
        assert_eq!(reports.len(), 1);
        assert!(
            reports[0].description.starts_with("The Globe"),
            "{reports:?}"
        );
    })
    .await;
}
