//! The registration journey with a real SMTP server (aiosmtpd) on loopback: register → the
//! e-mail captured → the link → choose a password → sign in, and every refusal on the way.

use periscope_state::testing::on_each_backend;

use crate::support::*;

const EMAIL: &str = "Carol.Jones@Acme-Widgets.example";
const ORG: &str = "  Acme Widgets & Sons <Ltd>  ";
const PASSWORD: &str = "correct horse battery staple, but longer";

/// Registers through the form and returns the page.
async fn register(
    browser: &Browser,
    provider: &Provider,
    email: &str,
    org: &str,
    terms: bool,
) -> Page {
    let form = browser.get(&provider.url("/register")).await;
    assert_eq!(form.status, 200);
    let csrf = form.csrf();
    let mut fields = vec![
        ("csrf", csrf.as_str()),
        ("email", email),
        ("organisation", org),
    ];
    if terms {
        fields.push(("terms", "accepted"));
    }
    browser.post(&provider.url("/register"), &fields).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journey_over_smtp_with_every_refusal() {
    let Some(smtp) = SmtpServer::start().await else {
        return;
    };
    let smtp = std::sync::Arc::new(smtp);
    on_each_backend("registration_journey", move |fixture| {
        let smtp = smtp.clone();
        async move {
            let options = Options {
                smtp_port: Some(smtp.port),
                ..Options::default()
            };
            let provider = Provider::start(&database(&fixture), options).await;
            // Each backend run uses its own address, since the SMTP server is shared.
            let email = match fixture.target {
                periscope_state::testing::Target::Sqlite(_) => EMAIL.to_owned(),
                periscope_state::testing::Target::Postgres(_) => EMAIL.replace("Carol", "Carol.Pg"),
            };
            let email = email.as_str();
            let stored = email.replace("Acme-Widgets.example", "acme-widgets.example");
            let browser = Browser::new();

            // The form asks for e-mail and organisation, no password; the box starts unticked,
            // and reading the terms does not tick it.
            let form = browser.get(&provider.url("/register")).await;
            assert!(
                form.body.contains("name=\"email\"") && form.body.contains("name=\"organisation\"")
            );
            assert!(!form.body.contains("type=\"password\""));
            assert!(
                form.body.contains("name=\"terms\" value=\"accepted\">"),
                "unticked: {}",
                form.body
            );
            let terms = browser.get(&provider.url("/terms")).await;
            assert_eq!(terms.status, 200);
            assert!(terms.body.contains("Version 2026-11-01"));
            let form = browser.get(&provider.url("/register")).await;
            assert!(!form.body.contains(" checked"), "{}", form.body);

            // Refusals that create nothing.
            let page = register(&browser, &provider, email, ORG, false).await;
            assert_eq!(page.status, 422);
            assert!(
                page.body.contains("Tick the box to accept the terms"),
                "{}",
                page.body
            );
            let page = register(&browser, &provider, "temp@Mailinator.com", ORG, true).await;
            assert_eq!(page.status, 422);
            assert!(
                page.body
                    .contains("Disposable and temporary e-mail addresses cannot be used")
            );
            let page = register(&browser, &provider, "temp@sub.yopmail.com.", ORG, true).await;
            assert_eq!(page.status, 422);
            let page = register(&browser, &provider, email, "   ", true).await;
            assert_eq!(page.status, 422);
            assert!(page.body.contains("Enter the name of your organisation"));
            // A name that could drive a terminal or reorder a screen is refused in words.
            for org in [
                "Evil\u{1b}]0;pwned\u{7} AG",
                "Two\rLines AG",
                "abc\u{202e}GA",
            ] {
                let page = register(&browser, &provider, email, org, true).await;
                assert_eq!(page.status, 422, "{org:?}");
                assert!(
                    page.body.contains("without control characters"),
                    "{org:?}: {}",
                    page.body
                );
            }
            let page = register(&browser, &provider, "not-an-address", ORG, true).await;
            assert_eq!(page.status, 422);
            assert!(provider.signin.account(email).await.unwrap().is_none());
            assert!(
                provider
                    .signin
                    .account("temp@mailinator.com")
                    .await
                    .unwrap()
                    .is_none()
            );
            assert!(smtp.messages_to(&stored).is_empty());

            // Registration: the address, organisation as typed, terms version, time and consent.
            let page = register(&browser, &provider, email, ORG, true).await;
            assert_eq!(page.status, 200, "{}", page.body);
            assert!(page.body.contains("Check your e-mail"));
            let record = provider.signin.account(email).await.unwrap().unwrap();
            assert_eq!(record.email, stored);
            assert_eq!(record.org_name, "Acme Widgets & Sons <Ltd>");
            assert_eq!(record.terms_version, "2026-11-01");
            assert_eq!(record.terms_accepted_at, provider.now());
            assert!(record.marketing_consent);
            assert_eq!(record.confirmed_at, None);
            let mails = wait_for_mail(&smtp, &stored, 1).await;
            let link = link_in(&mails[0]);
            assert!(mails[0].contains("Subject: Confirm your e-mail address for Periscope"));
            assert!(mails[0].contains("within 24 hours"));

            // The link is not the password: signing in before confirming fails, generically.
            let early = try_sign_in(&browser, &provider, email, PASSWORD).await;
            assert_eq!(early.status, 401);

            // Opening the link changes nothing (a scanner may prefetch it); weak passwords are
            // refused and the link still works afterwards.
            let form = browser.get(&link).await;
            assert_eq!(form.status, 200);
            assert!(form.body.contains(&stored));
            let local = email.split('@').next().unwrap().to_lowercase();
            for (weak, message) in [
                ("short1", "at least 8 characters"),
                ("password1", "too common"),
                ("Iloveyou2", "too common"),
                (local.as_str(), "too common"),
            ] {
                let page = browser
                    .post(
                        &provider.url("/confirm"),
                        &[
                            ("csrf", &form.csrf()),
                            ("token", &form.hidden("token")),
                            ("password", weak),
                            ("password2", weak),
                        ],
                    )
                    .await;
                assert_eq!(page.status, 422, "{weak}");
                assert!(page.body.contains(message), "{weak}: {}", page.body);
            }
            let mismatch = browser
                .post(
                    &provider.url("/confirm"),
                    &[
                        ("csrf", &form.csrf()),
                        ("token", &form.hidden("token")),
                        ("password", PASSWORD),
                        ("password2", "something else entirely"),
                    ],
                )
                .await;
            assert_eq!(mismatch.status, 422);
            assert!(
                provider
                    .signin
                    .account(email)
                    .await
                    .unwrap()
                    .unwrap()
                    .confirmed_at
                    .is_none()
            );

            // A second registration while pending sends a new link; the first stops working.
            let again = register(&browser, &provider, email, "Acme Widgets", true).await;
            assert_eq!(again.status, 200);
            let mails = wait_for_mail(&smtp, &stored, 2).await;
            let newer = link_in(&mails[1]);
            assert_ne!(newer, link);
            let old = browser.get(&link).await;
            assert_eq!(old.status, 404);
            assert!(old.body.contains("This link is not valid"));
            assert_eq!(
                provider
                    .signin
                    .account(email)
                    .await
                    .unwrap()
                    .unwrap()
                    .org_name,
                "Acme Widgets"
            );

            // The link: choose the password.
            provider.clock.advance(3600);
            choose_password(&browser, &newer, PASSWORD).await;
            let record = provider.signin.account(email).await.unwrap().unwrap();
            assert_eq!(record.confirmed_at, Some(provider.now()));

            // The link worked once.
            let reused = browser.get(&newer).await;
            assert_eq!(reused.status, 410);
            assert!(reused.body.contains("already used"));
            let form_again = browser
                .post(
                    &provider.url("/confirm"),
                    &[
                        ("csrf", &form.csrf()),
                        ("token", &query_param(&newer, "token").unwrap()),
                        ("password", "another long passphrase"),
                        ("password2", "another long passphrase"),
                    ],
                )
                .await;
            assert_eq!(form_again.status, 410);

            // Registering the address again: pointed to sign-in, nothing created, no e-mail.
            let duplicate = register(
                &browser,
                &provider,
                &email.to_uppercase(),
                "Other Org",
                true,
            )
            .await;
            assert_eq!(duplicate.status, 409);
            assert!(duplicate.body.contains("already registered"));
            assert!(duplicate.body.contains("href=\"/auth/signin\">Sign in</a>"));
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            assert_eq!(smtp.messages_to(&stored).len(), 2);
            assert_eq!(
                provider
                    .signin
                    .account(email)
                    .await
                    .unwrap()
                    .unwrap()
                    .org_name,
                "Acme Widgets"
            );

            // Sign in: the wrong password, then the right one (address in another case).
            let wrong =
                try_sign_in(&browser, &provider, email, "correct horse battery staple").await;
            assert_eq!(wrong.status, 401);
            assert!(wrong.body.contains("Sign-in failed."));
            let unknown =
                try_sign_in(&browser, &provider, "nobody@acme-widgets.example", PASSWORD).await;
            assert_eq!(
                unknown.body.replace("nobody@acme-widgets.example", ""),
                wrong.body.replace(email, ""),
                "unknown address and wrong password answer alike"
            );
            let done = try_sign_in(&browser, &provider, &email.to_lowercase(), PASSWORD).await;
            assert_eq!(done.status, 303, "{}", done.body);
            let session = done.set_cookie("periscope_signin").unwrap();
            let account = browser.get(&provider.url("/account")).await;
            assert_eq!(account.status, 200);
            assert!(account.body.contains(&stored));

            // No secret reached the log: link token, password, session id.
            let session_id = session
                .split(';')
                .next()
                .unwrap()
                .split_once('=')
                .unwrap()
                .1
                .to_owned();
            let tokens = [
                query_param(&link, "token").unwrap(),
                query_param(&newer, "token").unwrap(),
            ];
            assert_not_logged(
                "registration journey",
                &[&tokens[0], &tokens[1], PASSWORD, &session_id],
            );
            provider.signin.close().await;
        }
    })
    .await;
}

/// Waits until `count` messages to `email` arrived.
async fn wait_for_mail(smtp: &SmtpServer, email: &str, count: usize) -> Vec<String> {
    for _ in 0..100 {
        let mails = smtp.messages_to(email);
        if mails.len() >= count {
            return mails;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!(
        "{count} message(s) to {email} did not arrive; got {:?}",
        smtp.messages()
    );
}

/// Posts the sign-in form (whatever the outcome).
pub async fn try_sign_in(
    browser: &Browser,
    provider: &Provider,
    email: &str,
    password: &str,
) -> Page {
    sign_in(browser, &provider.url("/signin"), email, password).await
}
