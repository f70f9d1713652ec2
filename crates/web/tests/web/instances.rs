//! Two instances of the web application over one state database, as two `periscope serve`
//! behind a load balancer: a browser's requests may reach either, and get the same answers —
//! a result page shown by one comes back free from the other ("Previous", Back, a "Next page"
//! already visited), and a create-key form is accepted once whichever instance it reaches.

use periscope_state::testing::on_each_backend;

use crate::search::{first_row_ip, href, rows, search_url, service, service_on, signed_in, used};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_shown_by_one_instance_comes_back_free_from_the_other() {
    on_each_backend("web_two_pages", |fixture| async move {
        let search = service(&fixture);
        let one = App::embedded_searching(&fixture, search.clone()).await;
        let state_two = fixture.reopen().await.unwrap();
        let two = App::second_instance(&one, &state_two, Some(service_on(&state_two))).await;
        let email = "rae@example.com";
        let (browser, _) = signed_in(&one, email).await;
        let state = &fixture.state;

        let before = used(&search, state, email).await;
        let first = browser.get(&search_url(&one, "port:443")).await;
        assert_eq!(first.status, 200, "{}", first.body);
        assert_eq!(rows(&first), 25, "{}", first.body);
        // What the database keeps is the host list exactly as shown.
        let now = periscope_model::Timestamp::from_unix(real_now()).unwrap();
        let stored = state
            .shown_page(&first.csrf(), "port:443", 1, now)
            .await
            .unwrap()
            .expect("page 1 is in the state database");
        assert!(first.body.contains(&stored), "{stored}");
        assert_eq!(stored.matches("class=\"host-row\"").count(), 25);
        eprintln!("a stored page of 25 hosts: {} bytes", stored.len());
        let next = href(&first, "next").expect("a next page");
        let second = browser.get(&one.url(&next)).await;
        assert_eq!(second.status, 200, "{}", second.body);
        assert_eq!(
            used(&search, state, email).await,
            before + 2,
            "two pages, two charges"
        );

        // Through the other instance: Previous (page 1), and page 2 again (its cursor is used
        // already), as shown, free.
        let prev = href(&second, "prev").expect("a previous page");
        let again = two.url(&prev);
        let again = browser.get(&again).await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(rows(&again), 25, "{}", again.body);
        assert_eq!(first_row_ip(&again), first_row_ip(&first));
        let back = browser.get(&two.url(&next)).await;
        assert_eq!(back.status, 200, "{}", back.body);
        assert_eq!(first_row_ip(&back), first_row_ip(&second));
        assert_eq!(
            href(&back, "next"),
            href(&second, "next"),
            "the same next cursor"
        );
        assert_eq!(
            used(&search, state, email).await,
            before + 2,
            "nothing charged on the other instance"
        );

        // A new page through the other instance: one charge; then Previous through the first,
        // free.
        let third = browser
            .get(&two.url(&href(&back, "next").expect("a third page")))
            .await;
        assert_eq!(third.status, 200, "{}", third.body);
        assert_eq!(used(&search, state, email).await, before + 3);
        let prev = href(&third, "prev").expect("a previous page");
        let second_again = browser.get(&one.url(&prev)).await;
        assert_eq!(second_again.status, 200, "{}", second_again.body);
        assert_eq!(first_row_ip(&second_again), first_row_ip(&second));
        assert_eq!(used(&search, state, email).await, before + 3, "free");

        // A new run of the search on one instance starts over on both: page 2 of the earlier
        // run is forgotten, so the other instance says it has expired.
        let rerun = browser.get(&search_url(&one, "port:443")).await;
        assert_eq!(rerun.status, 200, "{}", rerun.body);
        let gone = browser.get(&two.url("/?q=port%3A443&page=2")).await;
        assert_eq!(gone.status, 410, "{}", gone.body);
        assert!(
            gone.body.contains("This result page has expired"),
            "{}",
            gone.body
        );
        state_two.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_key_form_is_accepted_once_whichever_instance_it_reaches() {
    on_each_backend("web_two_key_forms", |fixture| async move {
        let one = App::embedded(&fixture, None).await;
        let state_two = fixture.reopen().await.unwrap();
        let two = App::second_instance(&one, &state_two, None).await;
        let email = "sol@example.com";
        let (browser, _) = signed_in(&one, email).await;
        let account = account_of(&fixture.state, email).await;

        // A form issued by the first instance, sent to the second: one key.
        let form = browser.get(&one.url("/api-access")).await;
        assert_eq!(form.status, 200, "{}", form.body);
        let (csrf, token) = (form.csrf(), form.hidden("form"));
        let sent = [
            ("csrf", csrf.as_str()),
            ("form", token.as_str()),
            ("name", "first"),
        ];
        let created = browser.post(&two.url("/api-access/keys"), &sent).await;
        assert_eq!(created.status, 200, "{}", created.body);
        assert!(
            created.body.contains("<code id=\"new-key\">"),
            "{}",
            created.body
        );
        // Sent again (a reload) to the first instance, and to the second: nothing created.
        for app in [&one, &two] {
            let again = browser.post(&app.url("/api-access/keys"), &sent).await;
            assert_eq!(again.status, 409, "{}", again.body);
            assert!(
                again.body.contains("This form was already sent"),
                "{}",
                again.body
            );
            assert!(!again.body.contains("<code id=\"new-key\">"));
        }
        let keys = fixture.state.keys_of(account.id).await.unwrap();
        assert_eq!(keys.len(), 1, "{keys:?}");

        // One form sent ten times at once, spread over both instances: one key.
        let form = browser.get(&two.url("/api-access")).await;
        let token = form.hidden("form");
        let sendings: Vec<_> = (0..10)
            .map(|i| {
                let url = if i % 2 == 0 {
                    one.url("/api-access/keys")
                } else {
                    two.url("/api-access/keys")
                };
                let fields = [
                    ("csrf", csrf.clone()),
                    ("form", token.clone()),
                    ("name", "raced".to_owned()),
                ];
                let browser = &browser;
                async move {
                    let fields: Vec<(&str, &str)> =
                        fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
                    browser.post(&url, &fields).await.status
                }
            })
            .collect();
        let statuses = futures_join_all(sendings).await;
        assert_eq!(
            statuses.iter().filter(|s| **s == 200).count(),
            1,
            "{statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 409).count(),
            9,
            "{statuses:?}"
        );
        let keys = fixture.state.keys_of(account.id).await.unwrap();
        assert_eq!(keys.len(), 2, "{keys:?}");
        state_two.close().await;
    })
    .await;
}

/// Runs the futures concurrently on this task and collects their outputs in order.
async fn futures_join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *output = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.unwrap()).collect()
}
