//! Stored values that hold markup come back escaped on every page and fragment that shows
//! them, and raw on none: an organisation name (typed at registration, carried by the ID token,
//! stored at the first sign-in), an API key name (the create-key form), a problem report (the
//! report form), the query text (the search bar, Add filter, the host routes and the
//! fragments), and certificate names (subject and issuer organisation, issuer and common name,
//! read from observation lines by the observation reader into the index the search service
//! answers from). Each value is sent through the path a user or a scanner takes, then every
//! page that displays it is fetched through the real router.
//!
//! "Escaped" accepts any of the usual entity spellings (`&quot;`, `&#34;`, `&#x22;`…), so a
//! template engine that spells them otherwise still passes; "raw" is the value itself, or one
//! of its tags, anywhere in the body.

use std::sync::Arc;

use periscope_index::{EmbeddedIndex, IndexConfig, LineLoader, ScanIndex};
use periscope_state::testing::on_each_backend;

use crate::journey::{register_via_outbox, sign_in_via_web};
use crate::support::*;
use crate::views::{fetch, noon, service_over};

/// The values every field is tried with: a script element, and an attribute breakout.
const MARKUP: [&str; 2] = [
    "<script>alert(1)</script>",
    "\"><img src=x onerror=alert(1)>",
];

/// The tags of [`MARKUP`], none of which may appear raw in any body.
const TAGS: [&str; 2] = ["<script>alert(1)", "<img src=x onerror"];

/// `text` as HTML-escaped text, with the entities spelled the one way [`canonical`] writes
/// them.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `body` with the other spellings of the five entities rewritten as [`escaped`] spells them.
fn canonical(body: &str) -> String {
    let mut out = body.to_owned();
    for (other, canonical) in [
        ("&#34;", "&quot;"),
        ("&#x22;", "&quot;"),
        ("&#60;", "&lt;"),
        ("&#x3c;", "&lt;"),
        ("&#x3C;", "&lt;"),
        ("&#62;", "&gt;"),
        ("&#x3e;", "&gt;"),
        ("&#x3E;", "&gt;"),
        ("&#38;", "&amp;"),
        ("&#x26;", "&amp;"),
        ("&apos;", "&#39;"),
        ("&#x27;", "&#39;"),
    ] {
        out = out.replace(other, canonical);
    }
    out
}

/// Fails when `value`, or any tag of [`MARKUP`], is in `page` raw.
fn never_raw(what: &str, page: &Page, value: &str) {
    assert!(
        !page.body.contains(value),
        "{what}: {value:?} is in the page raw:\n{}",
        page.body
    );
    for tag in TAGS {
        assert!(
            !page.body.contains(tag),
            "{what}: {tag:?} is in the page raw:\n{}",
            page.body
        );
    }
}

/// Fails unless `page` shows `value` escaped, and never raw.
fn shows_escaped(what: &str, page: &Page, value: &str) {
    never_raw(what, page, value);
    assert!(
        canonical(&page.body).contains(&escaped(value)),
        "{what}: {:?} (escaped) is not in the page:\n{}",
        escaped(value),
        page.body
    );
}

/// An observation line of an HTTPS service on `ip` whose certificate and HTTP answer carry
/// `value` in every free-text member, and `subject`/`issuer` words to search them by.
fn certificate_line(ip: &str, value: &str, san: &str) -> String {
    let line = serde_json::json!({
        "kind": "service", "ip": ip, "port": 443, "transport": "tcp", "protocol": "https",
        "observed_at": "2026-11-20T10:00:00Z", "status": "completed",
        "tls": {"version": "TLSv1.3", "certificate": {
            "subject_alt_names": [san],
            "common_name": format!("cn {value}"),
            "subject_organization": format!("Zorblatt {value}"),
            "issuer_common_name": format!("Issuer {value}"),
            "issuer_organization": format!("Quixwell {value}"),
        }},
        "http": {"status_code": 200, "title": format!("Title {value}"),
                 "server": format!("Server {value}"), "complete": true},
        "host": {"location": {"country_code": "DE", "city": format!("City {value}")}},
    });
    format!("{line}\n")
}

/// The index of the certificate lines (one host per value), through the observation reader.
fn certificate_index() -> Arc<dyn ScanIndex> {
    use std::io::Write as _;
    let mut loader = LineLoader::new(IndexConfig::default(), noon());
    for (i, value) in MARKUP.iter().enumerate() {
        let line = certificate_line(&format!("240.0.9.{}", i + 1), value, "www.cert.example");
        loader.write_all(line.as_bytes()).unwrap();
    }
    // A subject alternative name is a DNS name: markup there is refused at ingest, so it can
    // never be stored or shown.
    for value in MARKUP {
        let refused = loader.write_all(certificate_line("240.0.9.9", "x", value).as_bytes());
        let error = refused.expect_err("a SAN holding markup is refused");
        assert!(
            error.to_string().contains("subject_alt_names"),
            "the refusal names the member: {error}"
        );
    }
    let reference = loader.into_index();
    assert_eq!(reference.records().count(), MARKUP.len());
    let engine = EmbeddedIndex::build(
        IndexConfig::default(),
        noon(),
        reference.records().cloned(),
        reference.domain_scans().clone(),
    )
    .unwrap();
    Arc::new(engine)
}

/// `path` with `value` percent-encoded into the query parameter `name`.
fn with(path: &str, name: &str, value: &str) -> String {
    let encoded: String = url::form_urlencoded::byte_serialize(value.as_bytes()).collect();
    let join = if path.contains('?') { '&' } else { '?' };
    format!("{path}{join}{name}={encoded}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_markup_comes_back_escaped_on_every_page() {
    on_each_backend("web_escaping", |fixture| async move {
        let app =
            App::embedded_with_api(&fixture, service_over(certificate_index(), &fixture.state))
                .await;
        for (i, value) in MARKUP.iter().copied().enumerate() {
            let browser = Browser::new();
            let get = |path: String| {
                let (app, browser) = (&app, &browser);
                async move { fetch(app, browser, &path).await }
            };

            // The organisation: typed at registration (and shown again when the form is
            // refused), stored at the first sign-in, shown on the account page.
            let email = format!("esc{i}@example.com");
            let organisation = format!("Acme {value}");
            let form = browser.get(&app.url("/auth/register")).await;
            let refused = browser
                .post(
                    &app.url("/auth/register"),
                    &[
                        ("csrf", &form.csrf()),
                        ("email", &email),
                        ("organisation", &organisation),
                    ],
                )
                .await;
            assert_eq!(refused.status, 422, "{}", refused.body);
            shows_escaped("registration refused", &refused, &organisation);
            let password = "a long enough password 3";
            register_via_outbox(&app, &browser, &email, &organisation, password).await;
            sign_in_via_web(&app, &browser, "/signin?return_to=%2F", &email, password).await;
            let account = account_of(&fixture.state, &email).await;
            let orgs = fixture.state.organisations_of(account.id).await.unwrap();
            assert_eq!(orgs[0].name, organisation, "stored as typed");
            shows_escaped("account", &get("/account".into()).await, &organisation);

            // An API key's name: the page that shows the key, the list, the revoke steps.
            let page = get("/api-access".into()).await;
            let csrf = page.csrf();
            let created = browser
                .post(
                    &app.url("/api-access/keys"),
                    &[
                        ("csrf", &csrf),
                        ("form", &page.hidden("form")),
                        ("name", value),
                    ],
                )
                .await;
            assert_eq!(created.status, 200, "{}", created.body);
            shows_escaped("key created", &created, value);
            let list = get("/api-access".into()).await;
            shows_escaped("key list", &list, value);
            let marker = "<a class=\"revoke\" href=\"";
            let at = list.body.find(marker).expect("a revoke link") + marker.len();
            let href = list.body[at..at + list.body[at..].find('"').unwrap()].to_owned();
            shows_escaped("revoke confirmation", &get(href.clone()).await, value);
            let revoked = browser.post(&app.url(&href), &[("csrf", &csrf)]).await;
            assert_eq!(revoked.status, 200, "{}", revoked.body);
            shows_escaped("key revoked", &revoked, value);
            shows_escaped("key already revoked", &get(href).await, value);
            shows_escaped("key list after", &get("/api-access".into()).await, value);
            let too_long = format!("{value}{}", "n".repeat(101));
            let refused = browser
                .post(
                    &app.url("/api-access/keys"),
                    &[("csrf", &csrf), ("name", &too_long)],
                )
                .await;
            assert_eq!(refused.status, 422, "{}", refused.body);
            shows_escaped("key name refused", &refused, &too_long);

            // A problem report: stored as sent, and shown again escaped when refused.
            let report = format!("The map shows {value} instead of hosts.");
            let sent = browser
                .post(
                    &app.url("/report-a-problem"),
                    &[("csrf", &csrf), ("description", &report)],
                )
                .await;
            assert_eq!(sent.status, 200, "{}", sent.body);
            never_raw("report received", &sent, value);
            let stored = fixture.state.reports(10).await.unwrap();
            assert!(stored.iter().any(|r| r.description == report), "{stored:?}");
            let long = format!("{report}{}", "x".repeat(4_000));
            let refused = browser
                .post(
                    &app.url("/report-a-problem"),
                    &[("csrf", &csrf), ("description", &long)],
                )
                .await;
            assert_eq!(refused.status, 422, "{}", refused.body);
            shows_escaped("report refused", &refused, &long);

            // The query text, wherever a page or fragment shows it.
            let queries = [
                value.to_owned(),
                format!("organization:\"Zorblatt {value}\""),
            ];
            for q in &queries {
                shows_escaped("search bar", &get(with("/", "q", q)).await, q);
                shows_escaped(
                    "search bar, Globe",
                    &get(with(&with("/", "q", q), "view", "globe")).await,
                    q,
                );
                let base = with("/filter?field=port&value=70000", "base", q);
                shows_escaped("Add filter refused", &get(base).await, q);
                shows_escaped("host page", &get(with("/host", "ip", q)).await, q);
                for fragment in ["/app/host?", "/app/count?", "/app/facets?"] {
                    let name = if fragment == "/app/host?" { "ip" } else { "q" };
                    never_raw(fragment, &get(with(fragment, name, q)).await, q);
                }
            }
            let field = with("/filter?base=port%3A443&value=1", "field", value);
            never_raw("Add filter, field", &get(field).await, value);

            // Certificate names and the HTTP answer, on every host view and in the matched
            // evidence of an organisation search.
            let ip = format!("240.0.9.{}", i + 1);
            for (what, path) in [
                ("exact-IP view", with("/", "q", &ip)),
                ("host page", with("/host", "ip", &ip)),
                ("Selected host panel", with("/app/host", "ip", &ip)),
            ] {
                let page = get(path).await;
                assert_eq!(page.status, 200, "{what}: {}", page.body);
                for shown in [
                    format!("Issuer {value}"),
                    format!("Title {value}"),
                    format!("Server {value}"),
                    format!("City {value}"),
                ] {
                    shows_escaped(what, &page, &shown);
                }
                // A common name that is not a DNS name is not shown at all.
                never_raw(what, &page, &format!("cn {value}"));
            }
            for shown in [format!("Zorblatt {value}"), format!("Quixwell {value}")] {
                let word = &shown[..8];
                let page = get(with("/", "q", &format!("organization:\"{word}\""))).await;
                assert_eq!(page.status, 200, "{}", page.body);
                assert!(page.body.contains(&ip), "{ip} matches: {}", page.body);
                shows_escaped("organisation search", &page, &shown);
            }
        }
    })
    .await;
}
