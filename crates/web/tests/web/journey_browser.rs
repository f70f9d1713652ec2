//! A newcomer's whole journey in Chromium, with no session handed in
//! (`tests/browser/journey.mjs`): "Sign in to search", the provider's sign-in page, registration
//! (the terms box starts unticked and stays so after reading the terms), "Check your e-mail",
//! the e-mail's link (read from the outbox when the script asks `ASK link <email>`), the
//! password, signing in through the application, the account menu's allowance
//! before and after a `port:443` search, the Selected host panel, sign-out and a later sign-in
//! asking for the password again. No request may leave 127.0.0.1 and the password never reaches
//! the log.

use periscope_service::Caller;
use periscope_state::testing::on_each_backend;
use periscope_state::{Channel, Email};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::browser::{artifacts, node_suite, ready};
use crate::search::service;
use crate::support::*;

/// The confirmation link of the newest e-mail to `email` in the outbox (as `register_via_outbox`
/// reads it).
fn link_from_outbox(app: &App, email: &str) -> Option<String> {
    let mut messages: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&app.outbox)
        .ok()?
        .map(|e| {
            let path = e.unwrap().path();
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            (modified, std::fs::read_to_string(path).unwrap())
        })
        .filter(|(_, m)| m.to_lowercase().contains(&format!("to: {email}")))
        .collect();
    messages.sort_by_key(|(modified, _)| *modified);
    messages.pop().map(|(_, m)| link_in(&m))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newcomer_journey_in_chromium() {
    if !ready() {
        return;
    }
    on_each_backend("web_journey_browser", |fixture| async move {
        let app = App::embedded(&fixture, None).await;
        let search = service(&fixture);
        assert!(app.web.set_search(search.clone()));
        let (email, password) = ("noor@example.com", "cedar window patiently 58");
        let artifacts = artifacts("journey", &fixture);
        let mut child = node_suite("journey.mjs", &app.origin, "", &artifacts)
            .env("PERISCOPE_EMAIL", email)
            .env("PERISCOPE_PASSWORD", password)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut stdout = String::new();
        let mut links = Vec::new();
        // The script's questions: `ASK link <email>` (the e-mail's confirmation link) and
        // `ASK allowance` (searches charged today).
        while let Some(line) = lines.next_line().await.unwrap() {
            let answer = if let Some(to) = line.strip_prefix("ASK link ") {
                let link = link_from_outbox(&app, to).unwrap_or_default();
                links.push(link.clone());
                Some(link)
            } else if line == "ASK allowance" {
                let account = fixture
                    .state
                    .account_by_email(&Email::parse(email).unwrap())
                    .await
                    .unwrap()
                    .unwrap();
                let caller = Caller {
                    account,
                    key: None,
                    channel: Channel::Web,
                };
                let used = search
                    .allowance(&caller)
                    .await
                    .unwrap()
                    .map_or(0, |u| u.used);
                Some(used.to_string())
            } else {
                None
            };
            match answer {
                Some(a) => stdin.write_all(format!("{a}\n").as_bytes()).await.unwrap(),
                None => {
                    stdout.push_str(&line);
                    stdout.push('\n');
                }
            }
        }
        let out = child.wait_with_output().await.expect("node ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "the journey in Chromium failed:\n{stdout}\n{stderr}"
        );
        assert!(stdout.contains("ok: no request left"), "{stdout}");
        assert!(
            stdout.contains("ok: after signing out, /signin asks for the password again"),
            "{stdout}"
        );
        eprintln!("{stdout}");

        // The browser did register: the account exists, with the terms accepted and the
        // organisation as typed.
        let account = fixture
            .state
            .account_by_email(&Email::parse(email).unwrap())
            .await
            .unwrap()
            .expect("the account exists");
        assert!(account.terms.is_some(), "terms recorded");
        let orgs = fixture.state.organisations_of(account.id).await.unwrap();
        assert_eq!(orgs.len(), 1);
        assert_eq!(orgs[0].name, "Newcomer Networks Ltd");

        // One link was asked for and answered. Its token is not checked against the log: the
        // outbox (no SMTP relay) logs the link on purpose, so a demo user can find it.
        assert!(
            matches!(links.as_slice(), [link] if link.contains("/auth/confirm?token=")),
            "{links:?}"
        );
        assert_not_logged("journey in Chromium", &[password]);
    })
    .await;
}
