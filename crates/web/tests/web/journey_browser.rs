//! A newcomer's whole journey in Chromium, with no session handed in
//! (`tests/browser/journey.mjs`): "Sign in to search", the provider's sign-in page, registration
//! (the terms box starts unticked and stays so after reading the terms), "Check your e-mail",
//! the e-mail's link (read from the outbox when the script asks `ASK link <email>`), the
//! password, signing in through the application, the account menu's allowance
//! before and after a `port:443` search, the Selected host panel, sign-out and a later sign-in
//! asking for the password again. No request may leave 127.0.0.1 and the password never reaches
//! the log.

use periscope_state::testing::on_each_backend;

use crate::browser::{artifacts, converse, node_suite, ready};
use crate::search::service;
use crate::search::used;
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
        let search = service(&fixture);
        let app = App::embedded_searching(&fixture, search.clone()).await;
        let (email, password) = ("noor@example.com", "cedar window patiently 58");
        let artifacts = artifacts("journey", &fixture);
        let mut command = node_suite("journey.mjs", &app.origin, "", &artifacts);
        command
            .env("PERISCOPE_EMAIL", email)
            .env("PERISCOPE_PASSWORD", password);
        let links = std::sync::Mutex::new(Vec::new());
        let (fixture_ref, search, app_ref, links_ref) = (&fixture, &search, &app, &links);
        // The script's questions: `ASK link <email>` (the e-mail's confirmation link) and
        // `ASK allowance` (searches charged today).
        let stdout = converse(&mut command, "the journey in Chromium", |line| async move {
            if let Some(to) = line.strip_prefix("ASK link ") {
                let link = link_from_outbox(app_ref, to).unwrap_or_default();
                links_ref.lock().unwrap().push(link.clone());
                Some(link)
            } else if line == "ASK allowance" {
                Some(used(search, &fixture_ref.state, email).await.to_string())
            } else {
                None
            }
        })
        .await;
        let links = links.into_inner().unwrap();
        assert!(
            stdout.contains("ok: after signing out, /signin asks for the password again"),
            "{stdout}"
        );

        // The browser did register: the account exists, with the terms accepted and the
        // organisation as typed.
        let account = account_of(&fixture.state, email).await;
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
