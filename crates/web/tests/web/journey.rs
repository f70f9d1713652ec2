//! The whole journey through the embedded default, with a cookie-keeping client and a real SMTP
//! server, and every refusal of the web application's sign-in.

use periscope_state::testing::on_each_backend;
use periscope_web::{SESSION_COOKIE, SIGN_IN_TO_SEARCH, UNAVAILABLE};

use crate::support::*;

/// Follows the provider's redirects from `location` until the browser is back at the web
/// application's callback, signing in with the form when asked. Returns the callback URL and
/// whether the password was asked.
pub async fn through_provider(
    app: &App,
    browser: &Browser,
    location: &str,
    email: &str,
    password: &str,
) -> (String, bool) {
    let mut next = app.absolute(location);
    let mut asked = false;
    for _ in 0..6 {
        if next.contains("/oidc/callback") {
            return (next, asked);
        }
        if next.contains("/auth/signin") {
            asked = true;
            let form = browser.get(&next).await;
            assert_eq!(form.status, 200, "{}", form.body);
            let done = browser
                .post(
                    &app.url("/auth/signin"),
                    &[
                        ("csrf", &form.csrf()),
                        ("email", email),
                        ("password", password),
                        ("return_to", &form.hidden("return_to")),
                    ],
                )
                .await;
            assert_eq!(done.status, 303, "{}", done.body);
            next = app.absolute(&done.location());
            continue;
        }
        let page = browser.get(&next).await;
        assert_eq!(page.status, 303, "{next}: {}", page.body);
        next = app.absolute(&page.location());
    }
    panic!("no callback after six redirects: {next}");
}

/// Signs in through the web application from `start` (a `/signin?…` URL); returns the final
/// redirect's target, the session cookie set, and whether the password was asked.
pub async fn sign_in_via_web(
    app: &App,
    browser: &Browser,
    start: &str,
    email: &str,
    password: &str,
) -> (String, String, bool, Vec<String>) {
    let first = browser.get(&app.absolute(start)).await;
    assert_eq!(first.status, 303, "{}", first.body);
    let authorize = first.location();
    assert!(
        authorize.starts_with(&app.url("/auth/authorize?")),
        "{authorize}"
    );
    for p in ["state", "nonce", "code_challenge"] {
        assert!(query_param(&authorize, p).is_some(), "no {p}: {authorize}");
    }
    assert_eq!(
        query_param(&authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    let login = first
        .set_cookie("periscope_login")
        .expect("the state is bound to the browser");
    assert!(
        login.contains("HttpOnly") && login.contains("SameSite=Lax"),
        "{login}"
    );
    let (callback, asked) = through_provider(app, browser, &authorize, email, password).await;
    let code = query_param(&callback, "code").unwrap();
    let state = query_param(&callback, "state").unwrap();
    let done = browser.get(&callback).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let cookie = done.set_cookie(SESSION_COOKIE).expect("a session cookie");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(
        !cookie.contains("Secure"),
        "plain HTTP: no Secure ({cookie})"
    );
    let session = done.cookie_value(SESSION_COOKIE).unwrap();
    (done.location(), session, asked, vec![code, state])
}

async fn register(app: &App, smtp: &SmtpServer, email: &str, org: &str, password: &str) -> String {
    let browser = Browser::new();
    let form = browser.get(&app.url("/auth/register")).await;
    let page = browser
        .post(
            &app.url("/auth/register"),
            &[
                ("csrf", &form.csrf()),
                ("email", email),
                ("organisation", org),
                ("terms", "accepted"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    // The newest message (one SMTP server serves both backends' runs).
    let messages = smtp.messages_to(email);
    let link = link_in(messages.last().expect("an e-mail over SMTP"));
    let form = browser.get(&link).await;
    assert_eq!(form.status, 200, "{}", form.body);
    let done = browser
        .post(
            link.split('?').next().unwrap(),
            &[
                ("csrf", &form.csrf()),
                ("token", &form.hidden("token")),
                ("password", password),
                ("password2", password),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    link
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_sign_in_expire_return_and_sign_out() {
    let Some(smtp) = SmtpServer::start().await else {
        return;
    };
    let smtp = std::sync::Arc::new(smtp);
    on_each_backend("web_journey", |fixture| {
        let smtp = smtp.clone();
        async move {
            let smtp = &*smtp;
            let app = App::embedded(&fixture, Some(smtp.port)).await;
            let email = "Dana@Example.com";
            let org = "Example Ops — Ünïcode & Co";
            let password = "amber lantern quietly 77";
            // As the provider stores it: local part as typed, domain lower-case.
            let shown = "Dana@example.com";
            let browser = Browser::new();

            // No session: "Sign in to search", with the banner (checked on every page).
            let home = browser.get(&app.url("/")).await;
            assert_eq!(home.status, 200);
            assert!(home.body.contains(SIGN_IN_TO_SEARCH), "{}", home.body);
            assert!(
                home.body.contains("href=\"/signin?return_to=%2F\""),
                "{}",
                home.body
            );

            // Register: the e-mail arrives over SMTP; the link; the password.
            let link = register(&app, smtp, email, org, password).await;

            // Sign in through the web application.
            let (back, first_session, asked, mut secrets) =
                sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
            assert!(asked, "the first sign-in asks for the password");
            assert_eq!(back, "/");
            let home = browser.get(&app.url("/")).await;
            assert_eq!(home.status, 200);
            assert!(
                home.body.contains(shown),
                "the top bar shows the address: {}",
                home.body
            );
            for link in [
                "/quickstart",
                "/release-notes",
                "/report-a-problem",
                "/api-access",
                "/account",
            ] {
                assert!(
                    home.body.contains(&format!("href=\"{link}\"")),
                    "menu link {link}"
                );
                let page = browser.get(&app.url(link)).await;
                assert_eq!(page.status, 200, "{link}: {}", page.body);
            }
            assert!(home.body.contains("action=\"/signout\""));

            // The account was prepared at first sign-in.
            let account = account_of(&fixture.state, email).await;
            let terms = account.terms.clone().expect("terms recorded");
            assert_eq!(terms.version, periscope_signin::DEFAULT_TERMS_VERSION);
            assert!((terms.accepted_at.unix() - real_now()).abs() < 300);
            assert!(account.marketing_consent);
            let orgs = fixture.state.organisations_of(account.id).await.unwrap();
            assert_eq!(orgs.len(), 1);
            assert_eq!(orgs[0].name, org);
            assert!(!orgs[0].verified);

            // Withdrawing marketing consent: CSRF first, then the change; access unchanged.
            let page = browser.get(&app.url("/account")).await;
            assert!(page.body.contains("Withdraw consent"), "{}", page.body);
            let refused = browser
                .post(
                    &app.url("/account/marketing"),
                    &[("csrf", "forged-token-value"), ("consent", "withdraw")],
                )
                .await;
            assert_eq!(refused.status, 403, "{}", refused.body);
            assert!(
                fixture
                    .state
                    .account(account.id)
                    .await
                    .unwrap()
                    .unwrap()
                    .marketing_consent
            );
            let done = browser
                .post(
                    &app.url("/account/marketing"),
                    &[("csrf", &page.csrf()), ("consent", "withdraw")],
                )
                .await;
            assert_eq!(done.status, 200, "{}", done.body);
            assert!(done.body.contains("withdrawn"), "{}", done.body);
            let after = fixture.state.account(account.id).await.unwrap().unwrap();
            assert!(!after.marketing_consent);
            assert_eq!(after.access, account.access);
            assert_eq!(browser.get(&app.url("/")).await.status, 200);

            // A search page; then 30 idle minutes: the session expired, and signing in again
            // returns to the same page.
            let search = "/?q=port%3A22+country%3ADE";
            let page = browser.get(&app.url(search)).await;
            assert!(page.body.contains(shown));
            app.clock.advance(29 * 60);
            assert!(
                browser.get(&app.url(search)).await.body.contains(shown),
                "29 minutes: still signed in"
            );
            app.clock.advance(30 * 60);
            let expired = browser.get(&app.url(search)).await;
            assert!(
                expired.body.contains("Your session expired"),
                "{}",
                expired.body
            );
            let again = expired.hidden_link("Sign in again");
            assert_eq!(
                again,
                "/signin?return_to=%2F%3Fq%3Dport%253A22%2Bcountry%253ADE"
            );
            let (back, second_session, asked, more) =
                sign_in_via_web(&app, &browser, &again, email, password).await;
            assert!(
                asked,
                "the provider's session idled out too: the password is asked"
            );
            assert_eq!(back, search, "back where the user was");
            assert_ne!(
                first_session, second_session,
                "a new session id at every sign-in"
            );
            secrets.extend(more);
            let page = browser.get(&app.url(&back)).await;
            assert!(page.body.contains(shown));

            // Sign out: ends the application session and the provider's.
            let csrf = page.csrf();
            let out = browser.post(&app.url("/signout"), &[("csrf", &csrf)]).await;
            assert_eq!(out.status, 303, "{}", out.body);
            let cleared = out.set_cookie(SESSION_COOKIE).unwrap();
            assert!(cleared.contains("Max-Age=0"), "{cleared}");
            let logout = out.location();
            assert!(logout.starts_with(&app.url("/auth/logout?")), "{logout}");
            assert!(query_param(&logout, "id_token_hint").is_some());
            assert_eq!(
                query_param(&logout, "post_logout_redirect_uri").unwrap(),
                app.url("/signed-out")
            );
            let done = browser.get(&logout).await;
            assert_eq!(done.status, 303, "{}", done.body);
            assert!(
                done.location().starts_with(&app.url("/signed-out")),
                "{}",
                done.location()
            );
            let signed_out = browser.get(&done.location()).await;
            assert!(signed_out.body.contains("You are signed out"));
            let home = browser.get(&app.url("/")).await;
            assert!(home.body.contains(SIGN_IN_TO_SEARCH), "{}", home.body);
            // The old session cookie is dead, even replayed.
            let replay = reqwest::Client::new()
                .get(app.url("/"))
                .header("cookie", format!("{SESSION_COOKIE}={second_session}"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(!replay.contains(shown), "a signed-out session still works");

            // A later sign-in asks for the password again.
            let (_, _, asked, more) =
                sign_in_via_web(&app, &browser, "/signin?return_to=%2F", email, password).await;
            assert!(asked, "after sign-out the password is asked again");
            secrets.extend(more);

            let token = query_param(&link, "token").unwrap();
            let mut all: Vec<&str> = vec![password, &token, &first_session, &second_session, &csrf];
            all.extend(secrets.iter().map(String::as_str));
            assert_not_logged("web journey", &all);
        }
    })
    .await;
}

impl Page {
    /// The `href` of the link whose text is `label`.
    fn hidden_link(&self, label: &str) -> String {
        let end = self
            .body
            .find(&format!("\">{label}</a>"))
            .unwrap_or_else(|| panic!("no link {label}: {}", self.body));
        let start = self.body[..end].rfind("href=\"").unwrap() + 6;
        self.body[start..end].replace("&amp;", "&")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_state_or_nonce_and_foreign_callbacks_get_no_session() {
    on_each_backend("web_tampered", |fixture| async move {
        let app = App::embedded(&fixture, None).await;
        let email = "erin@example.org";
        let password = "violet harbour seven 31";
        register_via_outbox(&app, &Browser::new(), email, "Erin Ltd", password).await;
        let browser = Browser::new();

        // A tampered state.
        let first = browser.get(&app.url("/signin")).await;
        let (callback, _) =
            through_provider(&app, &browser, &first.location(), email, password).await;
        let code = query_param(&callback, "code").unwrap();
        let tampered = with_param(&callback, "state", "tampered-state-value");
        let page = browser.get(&tampered).await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(
            page.body.contains("The sign-in could not be completed"),
            "{}",
            page.body
        );
        assert!(page.body.contains("state does not match"), "{}", page.body);
        assert!(page.set_cookie(SESSION_COOKIE).is_none());
        assert!(
            browser
                .get(&app.url("/"))
                .await
                .body
                .contains(SIGN_IN_TO_SEARCH)
        );

        // The genuine callback, but from another browser (no binding cookie).
        let other = Browser::new();
        let page = other.get(&callback).await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(page.set_cookie(SESSION_COOKIE).is_none());

        // A tampered nonce: the provider puts the changed nonce in the ID token, which the
        // application refuses.
        let first = browser.get(&app.url("/signin")).await;
        let authorize = with_param(&first.location(), "nonce", "tampered-nonce-value");
        let (callback, asked) = through_provider(&app, &browser, &authorize, email, password).await;
        assert!(!asked, "the provider session is still open");
        let page = browser.get(&callback).await;
        assert_eq!(page.status, 400, "{}", page.body);
        assert!(page.body.to_lowercase().contains("nonce"), "{}", page.body);
        assert!(page.set_cookie(SESSION_COOKIE).is_none());
        assert!(
            browser
                .get(&app.url("/"))
                .await
                .body
                .contains(SIGN_IN_TO_SEARCH)
        );

        // A state used once cannot be replayed.
        let first = browser.get(&app.url("/signin")).await;
        let (callback, _) =
            through_provider(&app, &browser, &first.location(), email, password).await;
        let login = first.cookie_value("periscope_login").unwrap();
        assert_eq!(browser.get(&callback).await.status, 303);
        let replay = reqwest::Client::new()
            .get(&callback)
            .header("cookie", format!("periscope_login={login}"))
            .send()
            .await
            .unwrap();
        assert_eq!(replay.status().as_u16(), 400);

        // A form without the session's CSRF token cannot sign out.
        let refused = browser
            .post(&app.url("/signout"), &[("csrf", "forged-token-value")])
            .await;
        assert_eq!(refused.status, 403, "{}", refused.body);
        assert!(browser.get(&app.url("/")).await.body.contains(email));

        // An open redirect through return_to is refused: it falls back to "/".
        let start = browser
            .get(&app.url("/signin?return_to=%2F%2Fevil.example%2F"))
            .await;
        let (callback, _) =
            through_provider(&app, &browser, &start.location(), email, password).await;
        assert_eq!(browser.get(&callback).await.location(), "/");

        assert_not_logged("tampering", &[password, &code, "tampered-nonce-value"]);
    })
    .await;
}

pub async fn register_via_outbox(
    app: &App,
    browser: &Browser,
    email: &str,
    org: &str,
    password: &str,
) {
    let form = browser.get(&app.url("/auth/register")).await;
    let page = browser
        .post(
            &app.url("/auth/register"),
            &[
                ("csrf", &form.csrf()),
                ("email", email),
                ("organisation", org),
                ("terms", "accepted"),
            ],
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let mut messages: Vec<_> = std::fs::read_dir(&app.outbox)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .filter(|m| m.to_lowercase().contains(&format!("to: {email}")))
        .collect();
    let link = link_in(&messages.pop().expect("an outbox message"));
    let form = browser.get(&link).await;
    let done = browser
        .post(
            link.split('?').next().unwrap(),
            &[
                ("csrf", &form.csrf()),
                ("token", &form.hidden("token")),
                ("password", password),
                ("password2", password),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_down_says_session_service_unavailable() {
    on_each_backend("web_down", |fixture| async move {
        let closed = free_port();
        let app = App::external(
            &fixture.state,
            &format!("http://127.0.0.1:{closed}/auth"),
            CLIENT_ID,
            CLIENT_SECRET,
        )
        .await;
        let browser = Browser::new();
        let home = browser.get(&app.url("/")).await;
        assert!(home.body.contains(SIGN_IN_TO_SEARCH));
        let page = browser.get(&app.url("/signin")).await;
        assert_eq!(page.status, 503, "{}", page.body);
        assert!(page.body.contains(UNAVAILABLE), "{}", page.body);
        assert!(page.set_cookie("periscope_login").is_none());
        // Protected pages without a session offer sign-in and come back to them.
        let account = browser.get(&app.url("/account")).await;
        assert!(account.body.contains(SIGN_IN_TO_SEARCH));
        assert!(
            account.body.contains("return_to=%2Faccount"),
            "{}",
            account.body
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_public_name_the_provider_is_reached_on_the_listening_address() {
    on_each_backend("web_public_name", |fixture| async move {
        // Browsers use a name only they resolve; the application's own requests to the
        // provider (discovery, keys, token) go to the listening address instead.
        let app = App::embedded_as(&fixture, None, Some("periscope.test")).await;
        let address = app.origin.strip_prefix("http://periscope.test:").unwrap();
        let address: std::net::SocketAddr = format!("127.0.0.1:{address}").parse().unwrap();
        let browser = Browser::resolving("periscope.test", address);
        let email = "finn@example.net";
        let password = "copper meadow ninety 12";
        register_via_outbox(&app, &browser, email, "Finn GmbH", password).await;
        let (back, _, asked, _) = sign_in_via_web(
            &app,
            &browser,
            "/signin?return_to=%2Faccount",
            email,
            password,
        )
        .await;
        assert!(asked);
        assert_eq!(back, "/account");
        let page = browser.get(&app.url("/account")).await;
        assert!(page.body.contains(email), "{}", page.body);
        assert!(page.body.contains("Finn GmbH"), "{}", page.body);
    })
    .await;
}
