//! The search page in a real browser: Debian's Chromium (`/usr/bin/chromium`, or
//! `PERISCOPE_CHROMIUM`) driven by `playwright-core` (`crates/web/tests/browser`, installed by
//! `scripts/test` with `npm ci`) against the in-process application on 127.0.0.1, signed in
//! through the real registration and sign-in pages. The script checks the banner, entry
//! recognition, the host view of an exact IP, a page of 25 hosts with a working next page, and
//! that no request leaves 127.0.0.1, first without script; then with script the Selected host
//! panel, Add filter (checked before sending), Suggested Filters, the total, next and previous
//! pages (the script asks this test for the allowance used, over its stdin and stdout: previous
//! costs nothing), and the session expiring mid-search (the test advances the clock when the
//! script asks). Screenshots go to `PERISCOPE_ARTIFACTS` (`$CARGO_TARGET_DIR/browser-artifacts`
//! or a temporary directory; printed). Outside CI a missing Chromium or install skips with a
//! message; under `CI=true` it fails.

use std::path::{Path, PathBuf};

use periscope_state::testing::on_each_backend;
use periscope_ui::BANNER;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::search::{data, service, used};
use crate::support::*;

pub(crate) fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser")
}

pub(crate) fn chromium() -> PathBuf {
    std::env::var_os("PERISCOPE_CHROMIUM").map_or_else(|| "/usr/bin/chromium".into(), PathBuf::from)
}

/// Whether Chromium and `playwright-core` are there; outside CI a missing one skips.
pub(crate) fn ready() -> bool {
    let dir = suite_dir();
    let why = if !chromium().exists() {
        format!(
            "{} is missing (apt-get install chromium)",
            chromium().display()
        )
    } else if !dir
        .join("node_modules/playwright-core/package.json")
        .exists()
    {
        format!(
            "{} has no node_modules (run `npm ci --prefix {}`, as scripts/test does)",
            dir.display(),
            dir.display()
        )
    } else {
        return true;
    };
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the browser suite is required under CI=true: {why}");
    }
    eprintln!("SKIPPED: the browser suite needs Chromium and playwright-core: {why}");
    false
}

/// Where a suite's screenshots go: `$PERISCOPE_ARTIFACTS`, else
/// `$CARGO_TARGET_DIR/browser-artifacts`, else the temporary directory; then `<suite>-<backend>`
/// below it (created, and printed).
pub(crate) fn artifacts(suite: &str, fixture: &periscope_state::testing::Fixture) -> PathBuf {
    let root = std::env::var_os("PERISCOPE_ARTIFACTS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|t| PathBuf::from(t).join("browser-artifacts"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("periscope-browser-artifacts"));
    let dir = root.join(format!("{suite}-{:?}", fixture.state.backend()).to_lowercase());
    std::fs::create_dir_all(&dir).unwrap();
    eprintln!("screenshots of {suite}: {}", dir.display());
    dir
}

/// `node <script>` from the suite directory with what every script reads: the server's origin,
/// a signed-in session cookie, the banner, Chromium and where to save screenshots.
pub(crate) fn node_suite(
    script: &str,
    origin: &str,
    session: &str,
    artifacts: &Path,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(suite_dir().join(script))
        .env("PERISCOPE_BASE", origin)
        .env("PERISCOPE_SESSION", session)
        .env("PERISCOPE_BANNER", BANNER)
        .env("PERISCOPE_CHROMIUM", chromium())
        .env("PERISCOPE_ARTIFACTS", artifacts)
        .kill_on_drop(true);
    command
}

/// Runs a suite script to its end and answers its questions: each line of its output that
/// `answer` replies to (`Some`) is answered on the script's stdin; the other lines are its
/// report. Asserts that the script succeeded and that no request left the origin; returns the
/// report (also printed).
pub(crate) async fn converse<F, Fut>(
    command: &mut tokio::process::Command,
    what: &str,
    mut answer: F,
) -> String
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("node runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut report = String::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        report.push_str(&line);
        report.push('\n');
        if let Some(reply) = answer(line).await {
            stdin
                .write_all(format!("{reply}\n").as_bytes())
                .await
                .unwrap();
            stdin.flush().await.unwrap();
        }
    }
    let out = child.wait_with_output().await.expect("node ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The script's error first: a long report must not push it out of a shortened log.
    assert!(
        out.status.success(),
        "{what} failed:\n{stderr}\nits report up to the failure:\n{report}"
    );
    assert!(report.contains("ok: no request left"), "{report}");
    eprintln!("{report}");
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_search_page_in_chromium() {
    if !ready() {
        return;
    }
    on_each_backend("web_browser", |fixture| async move {
        let search = service(&fixture);
        let app = App::embedded_searching(&fixture, search.clone()).await;
        let browser = Browser::new();
        let (email, password) = ("cho@example.com", "a long enough password 2");
        register_via_outbox(&app, &browser, email, "Example Ltd", password).await;
        let (_, session, _, _) =
            sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
        let ip = data()
            .reference
            .records()
            .find(|r| r.ip.is_ipv4())
            .unwrap()
            .ip
            .to_string();
        let artifacts = artifacts("search", &fixture);
        let mut command = node_suite("search.mjs", &app.origin, &session, &artifacts);
        command.env("PERISCOPE_IP", &ip);
        let (fixture, search, app) = (&fixture, &search, &app);
        // The script's questions: `ASK allowance` (searches charged today) and `ASK expire`
        // (the session idles out).
        let stdout = converse(&mut command, "the search suite", |line| async move {
            match line.as_str() {
                "ASK allowance" => Some(used(search, &fixture.state, email).await.to_string()),
                "ASK expire" => {
                    app.clock.advance(periscope_web::DEFAULT_IDLE_SECS + 1);
                    Some("expired".to_owned())
                }
                _ => None,
            }
        })
        .await;
        assert!(
            stdout.contains("ok: previous page costs nothing"),
            "{stdout}"
        );
    })
    .await;
}
