//! Interoperability: the web application signs in and out through npm's `oidc-provider` (an
//! OpenID Certified provider), started on loopback by this test from
//! `crates/web/tests/oidc-provider` (installed by `scripts/test` with `npm ci`). It proves the
//! application needs nothing but standard OpenID Connect: discovery, the code flow with PKCE,
//! the ID token with `email` and `org_name`, and RP-initiated logout — over https, the provider's
//! certificate issued by a CA the test generates and the application trusts through
//! `ca_file`; a provider whose certificate is not trusted is refused, the log naming it.

use std::path::{Path, PathBuf};

use periscope_state::testing::on_each_backend;
use periscope_web::{SESSION_COOKIE, SIGN_IN_TO_SEARCH};

use crate::support::*;

const EMAIL: &str = "ines@interop.example";
const ORG: &str = "Interop Org";
const ID: &str = "periscope-interop";
const SECRET: &str = "interop-secret-0123456789";

fn provider_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc-provider")
}

/// Whether `oidc-provider` is installed; outside CI a missing install skips with a message.
fn installed() -> bool {
    let dir = provider_dir();
    if dir.join("node_modules/oidc-provider/package.json").exists() {
        return true;
    }
    let why = format!(
        "{} has no node_modules (run `npm ci --prefix {}`, as scripts/test does)",
        dir.display(),
        dir.display()
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("oidc-provider is required under CI=true: {why}");
    }
    eprintln!("SKIPPED: the interoperability test needs npm's oidc-provider: {why}");
    false
}

struct Node(tokio::process::Child);

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

/// The attribute `name` of the first tag in `html` starting at `from`.
fn attr(tag: &str, name: &str) -> Option<String> {
    let marker = format!("{name}=\"");
    let start = tag.find(&marker)? + marker.len();
    let end = start + tag[start..].find('"')?;
    Some(tag[start..end].replace("&amp;", "&").replace("&#x2F;", "/"))
}

/// The first form of a page: its action and its fields (hidden ones with their values; a
/// login name and password filled in).
fn first_form(body: &str) -> (String, Vec<(String, String)>) {
    let start = body
        .find("<form")
        .unwrap_or_else(|| panic!("no form: {body}"));
    let end = start + body[start..].find("</form>").unwrap();
    let form = &body[start..end];
    let action = attr(&form[..form.find('>').unwrap()], "action").unwrap();
    let mut fields = Vec::new();
    for piece in form.split("<input").skip(1) {
        let tag = &piece[..piece.find('>').unwrap()];
        let Some(name) = attr(tag, "name") else {
            continue;
        };
        let value = match name.as_str() {
            "login" => EMAIL.to_owned(),
            "password" => "any password works here".to_owned(),
            _ => attr(tag, "value").unwrap_or_default(),
        };
        fields.push((name, value));
    }
    // A submit button with a value, anywhere on the page (the logout confirmation's
    // `logout=yes` sits outside its form, tied to it by `form=`).
    for piece in body.split("<button").skip(1) {
        let tag = &piece[..piece.find('>').unwrap()];
        if let (Some(name), Some(value)) = (attr(tag, "name"), attr(tag, "value")) {
            fields.push((name, value));
        }
    }
    (action, fields)
}

/// Walks the provider's pages from `url` until a redirect leaves for `until`; returns that URL
/// and whether a login form was shown.
async fn walk(browser: &Browser, issuer: &str, url: &str, until: &str) -> (String, bool) {
    let mut next = url.to_owned();
    let mut asked = false;
    for _ in 0..12 {
        if next.starts_with(until) {
            return (next, asked);
        }
        let page = browser.get_foreign(&next).await;
        match page.status {
            301 | 302 | 303 | 307 => {
                let location = page.location();
                next = if location.starts_with('/') {
                    format!("{issuer}{location}")
                } else {
                    location
                };
            }
            200 => {
                let (action, fields) = first_form(&page.body);
                asked |= fields.iter().any(|(k, _)| k == "password");
                let action = if action.starts_with('/') {
                    format!("{issuer}{action}")
                } else {
                    action
                };
                let borrowed: Vec<(&str, &str)> = fields
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                let done = browser.post_foreign(&action, &borrowed).await;
                assert!(
                    matches!(done.status, 302 | 303),
                    "{action}: {} {}",
                    done.status,
                    done.body
                );
                let location = done.location();
                next = if location.starts_with('/') {
                    format!("{issuer}{location}")
                } else {
                    location
                };
            }
            other => panic!("{next}: {other} {}", page.body),
        }
    }
    panic!("the provider never sent the browser to {until}");
}

/// Starts `oidc-provider` for an application listening at `origin`, its accounts in the
/// organisation `org`; returns it and its issuer.
async fn start_provider(origin: &str, org: &str) -> (Node, String) {
    start_provider_with(origin, org, None, &[]).await
}

/// [`start_provider`], over https with `tls`'s certificate when given, with more environment.
async fn start_provider_with(
    origin: &str,
    org: &str,
    tls: Option<&TestCa>,
    env: &[(&str, &str)],
) -> (Node, String) {
    let port = free_port();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let issuer = format!("{scheme}://127.0.0.1:{port}");
    let mut command = tokio::process::Command::new("node");
    if let Some(ca) = tls {
        command
            .env("TLS_CERT", ca.path("cert.pem"))
            .env("TLS_KEY", ca.path("key.pem"));
    }
    command.envs(env.iter().copied());
    let child = command
        .arg(provider_dir().join("server.mjs"))
        .env("PORT", port.to_string())
        .env("CLIENT_ID", ID)
        .env("CLIENT_SECRET", SECRET)
        .env("REDIRECT_URI", format!("{origin}/oidc/callback"))
        .env("POST_LOGOUT_REDIRECT_URI", format!("{origin}/signed-out"))
        .env("EMAIL", EMAIL)
        .env("ORG_NAME", org)
        .env("NODE_ENV", "development")
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let node = Node(child);
    wait_for_port(port, "oidc-provider").await;
    (node, issuer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_in_and_out_through_oidc_provider() {
    if !installed() {
        return;
    }
    on_each_backend("web_interop", |fixture| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let ca = TestCa::generate("interop");
        let (_node, issuer) = start_provider_with(&origin, ORG, Some(&ca), &[]).await;
        assert!(issuer.starts_with("https://"), "{issuer}");
        let app = App::external_with(&fixture.state, listener, &issuer, ID, SECRET, |c| {
            c.ca_file = Some(ca.path("ca.pem"));
        });
        let browser = Browser::trusting(&ca.ca_pem);

        // Sign in: our redirect carries PKCE S256, a state and a nonce; the provider's own
        // login and consent pages; back through the callback.
        let first = browser.get(&app.url("/signin?return_to=%2Faccount")).await;
        assert_eq!(first.status, 303, "{}", first.body);
        let authorize = first.location();
        assert!(authorize.starts_with(&issuer), "{authorize}");
        let (callback, asked) =
            walk(&browser, &issuer, &authorize, &app.url("/oidc/callback")).await;
        assert!(asked, "the provider showed its login form");
        let code = query_param(&callback, "code").unwrap();
        let done = browser.get(&callback).await;
        assert_eq!(done.status, 303, "{}", done.body);
        assert_eq!(done.location(), "/account");
        let session = done.cookie_value(SESSION_COOKIE).unwrap();
        let page = browser.get(&app.url("/account")).await;
        assert!(page.body.contains(EMAIL), "{}", page.body);
        assert!(page.body.contains(ORG), "{}", page.body);

        // The account was prepared from the standard claims and org_name; no terms claims
        // came, so none are recorded and there is no marketing consent.
        let account = account_of(&fixture.state, EMAIL).await;
        assert_eq!(account.terms, None);
        assert!(!account.marketing_consent);

        // Sign out through the provider's end_session_endpoint, confirmed on its page.
        let out = browser
            .post(&app.url("/signout"), &[("csrf", &page.csrf())])
            .await;
        assert_eq!(out.status, 303, "{}", out.body);
        let logout = out.location();
        assert!(logout.starts_with(&issuer), "{logout}");
        assert!(query_param(&logout, "id_token_hint").is_some());
        let (signed_out, _) = walk(&browser, &issuer, &logout, &app.url("/signed-out")).await;
        assert!(
            browser
                .get(&signed_out)
                .await
                .body
                .contains("You are signed out")
        );
        assert!(
            browser
                .get(&app.url("/"))
                .await
                .body
                .contains(SIGN_IN_TO_SEARCH)
        );

        // The provider's session ended: signing in again shows its login form again.
        let again = browser.get(&app.url("/signin")).await;
        let (callback, asked) = walk(
            &browser,
            &issuer,
            &again.location(),
            &app.url("/oidc/callback"),
        )
        .await;
        assert!(
            asked,
            "after sign-out the provider asks for the login again"
        );
        assert_eq!(browser.get(&callback).await.status, 303);

        assert_not_logged("interop", &[SECRET, &code, &session]);
    })
    .await;
}

/// Claims are text another service stored: an `org_name` holding ESC and BEL (it would retitle
/// the administrator's terminal) prepares no account, and the refusal says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_org_name_claim_with_control_characters_prepares_no_account() {
    if !installed() {
        return;
    }
    on_each_backend("web_interop_claims", |fixture| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let (_node, issuer) = start_provider(&origin, "Evil\u{1b}]0;pwned\u{7} Org").await;
        let app = App::external_on(&fixture.state, listener, &issuer, ID, SECRET);
        let browser = Browser::new();
        let first = browser.get(&app.url("/signin?return_to=%2Faccount")).await;
        assert_eq!(first.status, 303, "{}", first.body);
        let (callback, _) = walk(
            &browser,
            &issuer,
            &first.location(),
            &app.url("/oidc/callback"),
        )
        .await;
        let refused = browser.get(&callback).await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert!(
            refused.body.contains(
                "The org_name claim from the sign-in service holds the control character U+001B"
            ),
            "{}",
            refused.body
        );
        let email = periscope_state::Email::parse(EMAIL).unwrap();
        assert!(
            fixture
                .state
                .account_by_email(&email)
                .await
                .unwrap()
                .is_none()
        );
    })
    .await;
}

/// A provider whose certificate comes from a CA the application does not trust: no sign-in,
/// "Session service unavailable", and the log names the provider and the certificate; with
/// the CA in `ca_file` the same provider works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_provider_certificate_is_refused_naming_the_issuer() {
    if !installed() {
        return;
    }
    let dir = periscope_state::testing::TempDir::new("web_interop_untrusted");
    let state = periscope_state::State::open_sqlite(dir.path())
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let ca = TestCa::generate("untrusted");
    let other = TestCa::generate("other");
    let (_node, issuer) = start_provider_with(&origin, ORG, Some(&ca), &[]).await;
    // Trusts another CA only (the platform's roots cannot have issued a test certificate).
    let app = App::external_with(&state, listener, &issuer, ID, SECRET, |c| {
        c.ca_file = Some(other.path("ca.pem"));
    });
    let page = Browser::new().get(&app.url("/signin")).await;
    assert_eq!(page.status, 503, "{}", page.body);
    assert!(
        page.body.contains("Session service unavailable"),
        "{}",
        page.body
    );
    let logs = logs();
    let line = logs
        .lines()
        .find(|l| l.contains("cannot be reached") && l.contains(&issuer))
        .unwrap_or_else(|| panic!("no refusal naming {issuer}:\n{logs}"));
    assert!(
        line.contains(&format!(
            "the TLS certificate of the provider {issuer}/ is not trusted"
        )) || line.contains(&format!(
            "the TLS certificate of the provider {issuer} is not trusted"
        )),
        "{line}"
    );
    assert!(line.contains("web.ca_file"), "{line}");

    // The right CA: the redirect to the provider.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let trusted = App::external_with(&state, listener, &issuer, ID, SECRET, |c| {
        c.ca_file = Some(ca.path("ca.pem"));
    });
    let page = Browser::new().get(&trusted.url("/signin")).await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert!(page.location().starts_with(&issuer));
}

/// Signs in through the provider at `issuer` and returns the application's answer to the
/// callback.
async fn sign_in_once(app: &App, browser: &Browser, issuer: &str) -> Page {
    let first = browser.get(&app.url("/signin?return_to=%2Faccount")).await;
    assert_eq!(first.status, 303, "{}", first.body);
    let (callback, _) = walk(
        browser,
        issuer,
        &first.location(),
        &app.url("/oidc/callback"),
    )
    .await;
    browser.get(&callback).await
}

/// Corporate providers: the organisation from another claim (`organization_claim`, a list as
/// Keycloak's organisation scope sends), the deployment's `default_organization` when there is
/// none, the `allowed_email_domains` allow-list, and `email_verified` false refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corporate_claims_fallback_domains_and_email_verified() {
    if !installed() {
        return;
    }
    let dir = periscope_state::testing::TempDir::new("web_interop_corporate");
    let state = periscope_state::State::open_sqlite(dir.path())
        .await
        .unwrap();
    type Configure = fn(&mut periscope_web::WebConfig);
    let cases: [(&str, &str, Configure, Result<&str, &str>); 5] = [
        // The organisation in `organization`, a list; no org_name.
        (
            "kim@corp.example",
            r#"{"org_name": null, "organization": ["Corp Org"]}"#,
            |c| c.organization_claim = "organization".into(),
            Ok("Corp Org"),
        ),
        // No organisation claim at all: the deployment's default, the domain allowed.
        (
            "lee@corp.example",
            r#"{"org_name": null}"#,
            |c| {
                c.default_organization = Some("Fallback Ltd".into());
                c.allowed_email_domains = vec!["Corp.Example".into()];
            },
            Ok("Fallback Ltd"),
        ),
        // No organisation and no default: refused, naming the claim.
        (
            "max@corp.example",
            r#"{"org_name": null}"#,
            |c| c.organization_claim = "organization".into(),
            Err("sent no organisation name (claim organization)"),
        ),
        // A domain outside the allow-list.
        (
            "ned@elsewhere.example",
            "{}",
            |c| c.allowed_email_domains = vec!["corp.example".into()],
            Err("Addresses at elsewhere.example may not sign in"),
        ),
        // The provider says the address is not verified.
        (
            "oda@corp.example",
            r#"{"email_verified": false}"#,
            |_| {},
            Err("the e-mail address is not verified"),
        ),
    ];
    for (email, claims, configure, expected) in cases {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        let extra = {
            let mut v: serde_json::Value = serde_json::from_str(claims).unwrap();
            v["email"] = email.into();
            v.to_string()
        };
        let (_node, issuer) =
            start_provider_with(&origin, ORG, None, &[("EXTRA_CLAIMS", extra.as_str())]).await;
        let app = App::external_with(&state, listener, &issuer, ID, SECRET, configure);
        let browser = Browser::new();
        let done = sign_in_once(&app, &browser, &issuer).await;
        let known = state
            .account_by_email(&periscope_state::Email::parse(email).unwrap())
            .await
            .unwrap();
        match expected {
            Ok(org) => {
                assert_eq!(done.status, 303, "{email}: {}", done.body);
                let page = browser.get(&app.url("/account")).await;
                assert!(page.body.contains(org), "{email}: {}", page.body);
                assert!(!page.body.contains(ORG), "{email}: org_name was used");
                assert!(known.is_some());
            }
            Err(why) => {
                assert_eq!(done.status, 400, "{email}: {}", done.body);
                assert!(done.body.contains(why), "{email}: {}", done.body);
                assert!(known.is_none(), "{email}: an account was prepared");
            }
        }
    }
}
