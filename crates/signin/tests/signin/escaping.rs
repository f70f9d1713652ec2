//! Values a user typed or a request carried — markup, quotes, ampersands — come back escaped on
//! every sign-in page that shows them: the organisation name and the address kept in the
//! registration form, the address kept in the sign-in form after a refusal, the parameters the
//! "Sign out?" form carries on, the address of the choose-password page and of the account page,
//! and an organisation name with markup is stored as typed (escaping is the pages' job).

use periscope_state::testing::on_each_backend;

use crate::support::*;

/// Markup that would run or break out of an attribute if it reached a page unescaped.
const MARKUP: &str = "<script>alert(\"x\")</script>'&";

/// Whether `body` shows `value` only escaped: no raw `<script>`, and the escaped text present.
fn assert_escaped(body: &str, what: &str) {
    assert!(
        !body.contains("<script"),
        "{what}: raw markup on the page:\n{body}"
    );
    assert!(
        body.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"),
        "{what}: the escaped value is missing:\n{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_and_stored_values_come_back_escaped() {
    on_each_backend("escaping", |fixture| async move {
        let provider = Provider::start(&database(&fixture), Options::default()).await;
        let browser = Browser::new();

        // The registration form, shown again with the problems (the terms are not ticked).
        let form = browser.get(&provider.url("/register")).await;
        let again = browser
            .post(
                &provider.url("/register"),
                &[
                    ("csrf", &form.csrf()),
                    ("email", &format!("a{MARKUP}@example.com")),
                    ("organisation", MARKUP),
                ],
            )
            .await;
        assert_eq!(again.status, 422, "{}", again.body);
        assert_escaped(&again.body, "register");
        assert!(
            again
                .body
                .contains("value=\"&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'&amp;\""),
            "{}",
            again.body
        );

        // An organisation name with markup is stored as typed and never shown raw.
        let org = "Acme <b>&</b> \"Sons\"";
        provider
            .register_via_outbox("ada@example.com", org, "correct horse battery staple")
            .await;
        let record = provider
            .signin
            .account("ada@example.com")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.org_name, org);

        // The sign-in form keeps the typed address after a refusal.
        let form = browser.get(&provider.url("/signin")).await;
        let refused = browser
            .post(
                &provider.url("/signin"),
                &[
                    ("csrf", &form.csrf()),
                    ("email", MARKUP),
                    ("password", "wrong"),
                ],
            )
            .await;
        assert_eq!(refused.status, 401, "{}", refused.body);
        assert_escaped(&refused.body, "sign-in refused");

        // The "Sign out?" form carries the request's parameters on as hidden fields (or the
        // refusal names them): escaped either way.
        let state: String = url::form_urlencoded::byte_serialize(MARKUP.as_bytes()).collect();
        let question = browser
            .get(&provider.url(&format!("/logout?state={state}&client_id={state}")))
            .await;
        assert_eq!(question.status, 200, "{}", question.body);
        assert_escaped(&question.body, "logout");
        for name in ["state", "client_id"] {
            let carried = question
                .hidden(name)
                .replace("&lt;", "<")
                .replace("&gt;", ">");
            assert_eq!(carried, MARKUP, "{name}");
        }

        // A refusal page naming a parameter (an unknown client) escapes it too.
        let client: String = url::form_urlencoded::byte_serialize(MARKUP.as_bytes()).collect();
        let refusal = browser
            .get(&provider.url(&format!(
                "/authorize?client_id={client}&response_type=code&scope=openid"
            )))
            .await;
        assert!(!refusal.body.contains("<script"), "{}", refusal.body);
        provider.signin.close().await;
    })
    .await;
}
