//! The pages and their protections, with the outbox mailer: the banner on every public page,
//! CSRF refusals, link expiry on the settable clock, sign-in limits with one message, the
//! session's idle end, what the outbox writes to the log, and the outbox's file modes.

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
            // No third-party request: nothing is loaded but the service's own stylesheet.
            assert!(!page.body.contains("<script") && !page.body.contains("<img"));
            assert_eq!(page.body.matches("<link").count(), 1, "{path}");
            assert!(
                page.body
                    .contains("<link rel=\"stylesheet\" href=\"/auth/assets/periscope.css?v="),
                "{path}: {}",
                page.body
            );
        }
        let style = browser.get(&provider.url("/assets/periscope.css")).await;
        assert_eq!(style.status, 200);
        assert_eq!(style.headers["content-type"], "text/css; charset=utf-8");
        assert!(style.body.contains(".banner{") && style.body.contains(".button{"));
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

/// Failed sign-ins are limited per account and per client address, with one message for
/// every refusal; successful sign-ins never count, so an office (or every user behind a proxy)
/// signing in from one address is not locked out. The clients are told apart by
/// `x-forwarded-for` (`signin.client_ip_header`), as behind a reverse proxy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_failures_are_limited_per_account_and_per_client_with_one_message() {
    on_each_backend("rate_limits", |fixture| async move {
        let options = Options {
            attempts_per_address: 3,
            attempts_per_client: 10,
            client_ip_header: Some("x-forwarded-for".into()),
            ..Options::default()
        };
        let provider = Provider::start(&database(&fixture), options).await;
        let erin = ("erin@example.com", "erin's long passphrase");
        let frank = ("frank@example.com", "frank's long passphrase");
        provider
            .register_via_outbox(erin.0, "Erin AG", erin.1)
            .await;
        provider
            .register_via_outbox(frank.0, "Frank AG", frank.1)
            .await;
        let message = "Sign-in failed. Check your e-mail address and password";
        let refused = |page: &Page, what: &str| {
            assert_eq!(page.status, 401, "{what}: {}", page.body);
            assert!(page.body.contains(message), "{what}: {}", page.body);
        };

        // More than twice the per-client limit of successful sign-ins from one address.
        let office = Browser::behind_proxy("198.51.100.7");
        for i in 0..25 {
            let (email, password) = if i % 2 == 0 { erin } else { frank };
            let page = try_sign_in(&office, &provider, email, password).await;
            assert_eq!(page.status, 303, "successful sign-in {i} from one address");
        }

        // Per account: three failures for erin, each from another address...
        for i in 0..3 {
            let page = try_sign_in(
                &Browser::behind_proxy(&format!("203.0.113.{i}")),
                &provider,
                erin.0,
                "wrong passphrase!",
            )
            .await;
            refused(&page, "a wrong password");
        }
        // ...and even the right password, from a fourth address, is refused alike,
        let fourth = Browser::behind_proxy("203.0.113.9");
        refused(
            &try_sign_in(&fourth, &provider, erin.0, erin.1).await,
            "erin after three failures",
        );
        // while another account from that address still signs in.
        let page = try_sign_in(&fourth, &provider, frank.0, frank.1).await;
        assert_eq!(page.status, 303, "{}", page.body);
        // After the window erin can sign in again.
        provider.clock.advance(15 * 60 + 1);
        let page = try_sign_in(&fourth, &provider, erin.0, erin.1).await;
        assert_eq!(page.status, 303, "{}", page.body);

        // Per client address: ten failures from one address, whatever the accounts...
        let guesser = Browser::behind_proxy("192.0.2.66");
        for i in 0..10 {
            let page = try_sign_in(
                &guesser,
                &provider,
                &format!("user{i}@example.com"),
                "irrelevant pass",
            )
            .await;
            refused(&page, "an unknown account");
        }
        // ...then the right password from that address is refused,
        refused(
            &try_sign_in(&guesser, &provider, frank.0, frank.1).await,
            "frank from the guessing address",
        );
        // while frank from his own address signs in.
        let page = try_sign_in(&office, &provider, frank.0, frank.1).await;
        assert_eq!(page.status, 303, "{}", page.body);
        provider.signin.close().await;
    })
    .await;
}

/// Two instances on one database, as behind a load balancer: failures counted by one limit the
/// other, so spreading guesses over the instances gains nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_failures_are_counted_over_every_instance() {
    on_each_backend("rate_limits_shared", |fixture| async move {
        let options = || Options {
            attempts_per_address: 3,
            attempts_per_client: 4,
            client_ip_header: Some("x-forwarded-for".into()),
            ..Options::default()
        };
        let one = Provider::start(&database(&fixture), options()).await;
        let two = Provider::start(&database(&fixture), options()).await;
        let erin = ("erin@example.com", "erin's long passphrase");
        let frank = ("frank@example.com", "frank's long passphrase");
        one.register_via_outbox(erin.0, "Erin AG", erin.1).await;
        two.register_via_outbox(frank.0, "Frank AG", frank.1).await;
        let refused = |page: &Page, what: &str| {
            assert_eq!(page.status, 401, "{what}: {}", page.body);
            assert!(
                page.body.contains("Sign-in failed."),
                "{what}: {}",
                page.body
            );
        };
        let instance = |i: usize| if i.is_multiple_of(2) { &one } else { &two };

        // Per account: three failures for erin, alternating instances and addresses...
        for i in 0..3 {
            let browser = Browser::behind_proxy(&format!("203.0.113.{i}"));
            let page = try_sign_in(&browser, instance(i), erin.0, "wrong passphrase!").await;
            refused(&page, "a wrong password");
        }
        // ...and the right password is refused by both.
        let fourth = Browser::behind_proxy("203.0.113.9");
        for provider in [&one, &two] {
            let page = try_sign_in(&fourth, provider, erin.0, erin.1).await;
            refused(&page, "erin after three failures over two instances");
        }

        // Per client address: four failures from one address over both instances...
        let guesser = Browser::behind_proxy("192.0.2.66");
        for i in 0..4 {
            let email = format!("user{i}@example.com");
            let page = try_sign_in(&guesser, instance(i), &email, "irrelevant pass").await;
            refused(&page, "an unknown account");
        }
        // ...then frank's right password from that address is refused by both,
        for provider in [&one, &two] {
            let page = try_sign_in(&guesser, provider, frank.0, frank.1).await;
            refused(&page, "frank from the guessing address");
        }
        // while from another address he signs in on either.
        for provider in [&one, &two] {
            let page = try_sign_in(&fourth, provider, frank.0, frank.1).await;
            assert_eq!(page.status, 303, "{}", page.body);
        }
        one.signin.close().await;
        two.signin.close().await;
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

/// The outbox holds live confirmation links: its directory is 0700 and every message 0600,
/// whatever the process umask lets through (the test process has the usual 022).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbox_messages_are_private_after_a_registration() {
    use std::os::unix::fs::PermissionsExt as _;
    on_each_backend("outbox_modes", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        provider
            .register_via_outbox("ivy@example.com", "Ivy GmbH", "ivy's long passphrase")
            .await;
        let mode =
            |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&provider.outbox),
            0o700,
            "the outbox directory {}",
            provider.outbox.display()
        );
        let messages: Vec<_> = std::fs::read_dir(&provider.outbox)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(messages.len(), 1, "{messages:?}");
        for message in messages {
            assert!(
                message.extension().is_some_and(|x| x == "eml"),
                "{message:?}"
            );
            assert_eq!(mode(&message), 0o600, "{}", message.display());
        }
        provider.signin.close().await;
    })
    .await;
}
