//! The pages and their protections, with the outbox mailer: the banner on every public page,
//! CSRF refusals, link expiry on the settable clock, sign-in limits with one message, the
//! session's idle end, and what the outbox writes to the log.

use periscope_state::testing::on_each_backend;

use crate::registration::try_sign_in;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_pages_carry_the_banner_and_safe_headers() {
    on_each_backend("public_pages", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let browser = Browser::new();
        // Page::from checks the banner on every HTML answer.
        for path in [
            "/register",
            "/terms",
            "/signin",
            "/logout",
            "/confirm?token=nope",
            "/nowhere",
        ] {
            let page = browser.get(&provider.url(path)).await;
            assert!(page.is_html(), "{path}");
            assert_eq!(page.headers["cache-control"], "no-store", "{path}");
            assert_eq!(page.headers["referrer-policy"], "no-referrer", "{path}");
            assert!(
                page.headers["content-security-policy"]
                    .to_str()
                    .unwrap()
                    .contains("default-src 'none'")
            );
            // No third-party request: nothing is loaded from anywhere.
            assert!(
                !page.body.contains("<script")
                    && !page.body.contains("<link")
                    && !page.body.contains("<img")
            );
        }
        let csrf_cookie = browser
            .get(&provider.url("/register"))
            .await
            .set_cookie("periscope_signin_csrf");
        // The browser already holds the cookie: it is set once.
        assert!(csrf_cookie.is_none());
        let fresh = Browser::new().get(&provider.url("/register")).await;
        let cookie = fresh.set_cookie("periscope_signin_csrf").unwrap();
        assert!(
            cookie.contains("HttpOnly")
                && cookie.contains("SameSite=Lax")
                && cookie.contains("Path=/auth")
        );
        provider.signin.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forms_refuse_a_missing_or_foreign_csrf_token() {
    on_each_backend("csrf", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let alice = Browser::new();
        let mallory = Browser::new();
        let mallory_token = mallory.get(&provider.url("/register")).await.csrf();
        alice.get(&provider.url("/register")).await;
        let fields = |csrf: &'static str| {
            vec![
                ("csrf", csrf),
                ("email", "dave@example.com"),
                ("organisation", "Dave Co"),
                ("terms", "accepted"),
            ]
        };
        for (path, csrf) in [
            ("/register", ""),
            ("/signin", ""),
            ("/confirm", ""),
            ("/logout", ""),
        ] {
            let page = alice.post(&provider.url(path), &fields(csrf)).await;
            assert_eq!(page.status, 403, "{path}");
        }
        let mut foreign = fields("");
        foreign[0] = ("csrf", &mallory_token);
        let page = alice.post(&provider.url("/register"), &foreign).await;
        assert_eq!(page.status, 403);
        assert!(
            provider
                .signin
                .account("dave@example.com")
                .await
                .unwrap()
                .is_none()
        );
        provider.signin.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_link_expires_after_24_hours() {
    on_each_backend("link_expiry", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let browser = Browser::new();
        for (email, wait, usable) in [
            ("early@example.com", 24 * 3600 - 1, true),
            ("late@example.com", 24 * 3600, false),
        ] {
            let form = browser.get(&provider.url("/register")).await;
            let page = browser
                .post(
                    &provider.url("/register"),
                    &[
                        ("csrf", &form.csrf()),
                        ("email", email),
                        ("organisation", "Clocks Inc"),
                        ("terms", "accepted"),
                    ],
                )
                .await;
            assert_eq!(page.status, 200);
            let link = outbox_link(&provider.outbox, email);
            let opened = browser.get(&link).await;
            assert_eq!(opened.status, 200);
            provider.clock.advance(wait);
            let confirm = browser
                .post(
                    &provider.url("/confirm"),
                    &[
                        ("csrf", &opened.csrf()),
                        ("token", &opened.hidden("token")),
                        ("password", "a perfectly fine passphrase"),
                        ("password2", "a perfectly fine passphrase"),
                    ],
                )
                .await;
            if usable {
                assert_eq!(confirm.status, 303, "{email}");
            } else {
                assert_eq!(confirm.status, 410, "{email}");
                assert!(confirm.body.contains("This link has expired"));
                assert_eq!(browser.get(&link).await.status, 410);
                let record = provider.signin.account(email).await.unwrap().unwrap();
                assert_eq!(record.confirmed_at, None);
                // Registering again gives a new link that works.
                let form = browser.get(&provider.url("/register")).await;
                browser
                    .post(
                        &provider.url("/register"),
                        &[
                            ("csrf", &form.csrf()),
                            ("email", email),
                            ("organisation", "Clocks Inc"),
                            ("terms", "accepted"),
                        ],
                    )
                    .await;
                let fresh = outbox_link(&provider.outbox, email);
                assert_ne!(fresh, link);
                choose_password(&browser, &fresh, "a perfectly fine passphrase").await;
            }
            provider.clock.advance(-wait);
        }
        provider.signin.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_is_limited_per_address_and_per_client_with_one_message() {
    on_each_backend("rate_limits", |fixture| async move {
        let options = Options {
            attempts_per_address: 3,
            attempts_per_client: 10,
            ..Options::default()
        };
        let provider = Provider::start(&database(&fixture), options).await;
        provider
            .register_via_outbox("erin@example.com", "Erin AG", "erin's long passphrase")
            .await;
        provider
            .register_via_outbox("frank@example.com", "Frank AG", "frank's long passphrase")
            .await;
        let browser = Browser::new();
        let message = "Sign-in failed. Check your e-mail address and password";
        for _ in 0..3 {
            let page =
                try_sign_in(&browser, &provider, "erin@example.com", "wrong passphrase!").await;
            assert_eq!(page.status, 401);
            assert!(page.body.contains(message));
        }
        // Three failures for the address: even the right password is refused, alike.
        let page = try_sign_in(
            &browser,
            &provider,
            "erin@example.com",
            "erin's long passphrase",
        )
        .await;
        assert_eq!(page.status, 401);
        assert!(page.body.contains(message));
        // Another address from the same client still works (4 of 10 attempts so far).
        let page = try_sign_in(
            &browser,
            &provider,
            "frank@example.com",
            "frank's long passphrase",
        )
        .await;
        assert_eq!(page.status, 303);
        // After the window the address can sign in again.
        provider.clock.advance(15 * 60 + 1);
        let page = try_sign_in(
            &browser,
            &provider,
            "erin@example.com",
            "erin's long passphrase",
        )
        .await;
        assert_eq!(page.status, 303);
        // Per client: 10 attempts in the window, whatever the addresses.
        for i in 0..10 {
            let page = try_sign_in(
                &browser,
                &provider,
                &format!("user{i}@example.com"),
                "irrelevant pass",
            )
            .await;
            assert_eq!(page.status, 401);
        }
        let page = try_sign_in(
            &browser,
            &provider,
            "frank@example.com",
            "frank's long passphrase",
        )
        .await;
        assert_eq!(page.status, 401);
        assert!(page.body.contains(message));
        provider.signin.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_ends_after_30_idle_minutes() {
    on_each_backend("idle_session", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        provider
            .register_via_outbox("gina@example.com", "Gina SA", "gina's long passphrase")
            .await;
        let browser = Browser::new();
        let page = try_sign_in(
            &browser,
            &provider,
            "gina@example.com",
            "gina's long passphrase",
        )
        .await;
        assert_eq!(page.status, 303);
        provider.clock.advance(29 * 60);
        assert_eq!(
            browser.get(&provider.url("/account")).await.status,
            200,
            "activity renews it"
        );
        provider.clock.advance(29 * 60);
        assert_eq!(browser.get(&provider.url("/account")).await.status, 200);
        provider.clock.advance(30 * 60);
        let page = browser.get(&provider.url("/account")).await;
        assert_eq!(page.status, 303);
        assert_eq!(page.location(), "/auth/signin");
        provider.signin.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outbox_logs_the_link_and_nothing_else_secret() {
    on_each_backend("outbox_log", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let password = "harry's long passphrase";
        let link = provider
            .register_via_outbox("harry@example.com", "Harry BV", password)
            .await;
        // Deliberate: without a mail server, the log is where a demo user finds the link.
        assert!(logs().contains(&link), "the outbox link is in the log");
        let browser = Browser::new();
        let page = try_sign_in(&browser, &provider, "harry@example.com", password).await;
        let cookie = page.set_cookie("periscope_signin").unwrap();
        let session_id = cookie
            .split(';')
            .next()
            .unwrap()
            .split_once('=')
            .unwrap()
            .1
            .to_owned();
        assert_not_logged("outbox", &[password, &session_id]);
        provider.signin.close().await;
    })
    .await;
}
