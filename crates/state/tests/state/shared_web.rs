//! What the web application keeps for a browser so that several servers answer alike: result
//! pages shown (per session, query and page; 10 minutes; 400 per session) and the create-key
//! form's one-time tokens (single use under concurrency; a day; 10,000 per account).

use periscope_state::{
    AccountId, Email, KEY_FORM_MEMORY_SECS, KEY_FORMS_PER_ACCOUNT, NewAccount,
    SHOWN_PAGE_LIFETIME_SECS, SHOWN_PAGES_PER_SESSION, State,
};

use crate::harness::{Fixture, Target, later, noon, on_each_backend};

async fn account(state: &State, email: &str) -> AccountId {
    let email = Email::parse(email).unwrap();
    state
        .create_account(&NewAccount::new(email, "Example Ltd"), noon())
        .await
        .unwrap()
        .id
}

/// Runs one statement directly on the fixture's database (bulk set-up the API has no call for).
async fn execute(fx: &Fixture, sql: &str, binds: &[i64]) {
    use sqlx::Connection;
    match &fx.target {
        Target::Sqlite(dir) => {
            let url = format!("sqlite://{}", dir.join("state.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let mut q = sqlx::query(sql);
            for b in binds {
                q = q.bind(*b);
            }
            q.execute(&mut conn).await.unwrap();
            conn.close().await.unwrap();
        }
        Target::Postgres(url) => {
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            let mut q = sqlx::query(sql);
            for b in binds {
                q = q.bind(*b);
            }
            q.execute(&mut conn).await.unwrap();
            conn.close().await.unwrap();
        }
    }
}

/// How many rows `table` holds.
async fn rows(fx: &Fixture, table: &str) -> i64 {
    use sqlx::Connection;
    let sql = format!("SELECT COUNT(*) FROM {table}");
    match &fx.target {
        Target::Sqlite(dir) => {
            let url = format!("sqlite://{}", dir.join("state.db").display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let (n,): (i64,) = sqlx::query_as(&sql).fetch_one(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            n
        }
        Target::Postgres(url) => {
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            let (n,): (i64,) = sqlx::query_as(&sql).fetch_one(&mut conn).await.unwrap();
            conn.close().await.unwrap();
            n
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_shown_are_kept_per_session_query_and_number_until_they_expire() {
    on_each_backend("shown_pages", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let bob = account(state, "bob@example.com").await;
        let t0 = noon();
        let put = |account, session: &'static str, query: &'static str, page, body, at| {
            let state = state.clone();
            async move {
                state
                    .remember_shown_page(account, session, query, page, body, at)
                    .await
                    .unwrap()
            }
        };
        let get = |session: &'static str, query: &'static str, page, at| {
            let state = state.clone();
            async move { state.shown_page(session, query, page, at).await.unwrap() }
        };
        put(ann, "csrf-ann", "port:22", 1, "<p>one</p>", t0).await;
        put(ann, "csrf-ann", "port:22", 2, "<p>two</p>", later(t0, 1)).await;
        put(bob, "csrf-bob", "port:22", 1, "<p>bob's</p>", t0).await;
        let at = later(t0, 100);
        assert_eq!(
            get("csrf-ann", "port:22", 1, at).await.as_deref(),
            Some("<p>one</p>")
        );
        assert_eq!(
            get("csrf-ann", "port:22", 2, at).await.as_deref(),
            Some("<p>two</p>")
        );
        assert_eq!(
            get("csrf-bob", "port:22", 1, at).await.as_deref(),
            Some("<p>bob's</p>")
        );
        assert_eq!(get("csrf-ann", "port:22", 3, at).await, None, "never shown");
        assert_eq!(
            get("csrf-ann", "port:80", 1, at).await,
            None,
            "another query"
        );
        assert_eq!(
            get("csrf-new", "port:22", 1, at).await,
            None,
            "another session"
        );
        // Live for less than the lifetime, gone at it (as a cursor).
        let last = later(t0, SHOWN_PAGE_LIFETIME_SECS - 1);
        assert!(get("csrf-ann", "port:22", 1, last).await.is_some());
        let expiry = later(t0, SHOWN_PAGE_LIFETIME_SECS);
        assert_eq!(get("csrf-ann", "port:22", 1, expiry).await, None, "expired");
        assert!(
            get("csrf-ann", "port:22", 2, expiry).await.is_some(),
            "shown 1 s later"
        );

        // A new run of page 1 replaces it and forgets the earlier run's page 2.
        put(
            ann,
            "csrf-ann",
            "port:22",
            1,
            "<p>one again</p>",
            later(t0, 200),
        )
        .await;
        let at = later(t0, 201);
        assert_eq!(
            get("csrf-ann", "port:22", 1, at).await.as_deref(),
            Some("<p>one again</p>")
        );
        assert_eq!(
            get("csrf-ann", "port:22", 2, at).await,
            None,
            "the earlier run's"
        );
        assert!(
            get("csrf-bob", "port:22", 1, at).await.is_some(),
            "bob's untouched"
        );

        // Writes delete expired pages of every session; so does the periodic purge.
        assert_eq!(rows(&fx, "web_pages").await, 2);
        put(
            ann,
            "csrf-ann",
            "port:80",
            1,
            "x",
            later(t0, SHOWN_PAGE_LIFETIME_SECS),
        )
        .await;
        assert_eq!(rows(&fx, "web_pages").await, 2, "bob's expired page went");
        let purged = state
            .purge_web(later(t0, 200 + SHOWN_PAGE_LIFETIME_SECS), 1800)
            .await
            .unwrap();
        assert_eq!(purged, 1, "ann's page 1 of port:22");
        assert_eq!(rows(&fx, "web_pages").await, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_at_most_its_cap_of_pages_the_oldest_going_first() {
    on_each_backend("shown_pages_cap", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let bob = account(state, "bob@example.com").await;
        let t0 = noon();
        state
            .remember_shown_page(bob, "csrf-bob", "q", 1, "bob", t0)
            .await
            .unwrap();
        // One page per query, each a second later than the one before.
        let cap = i64::from(SHOWN_PAGES_PER_SESSION);
        for n in 0..=cap {
            let query = format!("port:{n}");
            state
                .remember_shown_page(ann, "csrf-ann", &query, 1, "p", later(t0, n))
                .await
                .unwrap();
        }
        let now = later(t0, cap);
        assert_eq!(
            rows(&fx, "web_pages").await,
            cap + 1,
            "ann's cap and bob's page"
        );
        // port:0 was the oldest of ann's: it went (bob's, older still, is another session's).
        assert_eq!(
            state
                .shown_page("csrf-ann", "port:0", 1, now)
                .await
                .unwrap(),
            None
        );
        for n in [1, 300, cap] {
            assert!(
                state
                    .shown_page("csrf-ann", &format!("port:{n}"), 1, now)
                    .await
                    .unwrap()
                    .is_some(),
                "port:{n}"
            );
        }
        assert!(
            state
                .shown_page("csrf-bob", "q", 1, now)
                .await
                .unwrap()
                .is_some()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_key_form_token_is_used_once_for_a_day() {
    on_each_backend("key_forms", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let bob = account(state, "bob@example.com").await;
        let t0 = noon();
        let first = |account, token: &'static str, at| {
            let state = state.clone();
            async move { state.first_key_form_use(account, token, at).await.unwrap() }
        };
        assert!(first(ann, "form-token-1", t0).await);
        assert!(
            !first(ann, "form-token-1", later(t0, 1)).await,
            "sent again"
        );
        assert!(!first(bob, "form-token-1", later(t0, 2)).await, "by anyone");
        assert!(first(ann, "form-token-2", later(t0, 3)).await);
        // Another instance (another pool on the same database) refuses it too.
        let other = fx.reopen().await.unwrap();
        assert!(
            !other
                .first_key_form_use(ann, "form-token-2", later(t0, 4))
                .await
                .unwrap()
        );
        other.close().await;
        let last = later(t0, KEY_FORM_MEMORY_SECS - 1);
        assert!(!first(ann, "form-token-1", last).await, "still remembered");
        // A day later it is forgotten (as today in one process): accepted once more.
        let day = later(t0, KEY_FORM_MEMORY_SECS);
        assert!(first(ann, "form-token-1", day).await);
        assert!(!first(ann, "form-token-1", later(day, 1)).await);
        // Writes and the purge delete the expired ones.
        assert_eq!(rows(&fx, "web_key_forms").await, 2);
        let token_2_expired = later(t0, 3 + KEY_FORM_MEMORY_SECS);
        assert!(!first(ann, "form-token-1", token_2_expired).await);
        assert_eq!(
            rows(&fx, "web_key_forms").await,
            1,
            "token 2 went with the write"
        );
        let purged = state
            .purge_web(later(day, KEY_FORM_MEMORY_SECS), 1800)
            .await
            .unwrap();
        assert_eq!(purged, 1);
        assert_eq!(rows(&fx, "web_key_forms").await, 0);
        // An account that does not exist is refused, not recorded.
        let ghost = AccountId::from_i64(999_999);
        assert!(
            state
                .first_key_form_use(ghost, "form-token-3", t0)
                .await
                .is_err()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_keeps_at_most_its_cap_of_form_tokens_the_oldest_going_first() {
    on_each_backend("key_forms_cap", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let t0 = noon();
        assert!(
            state
                .first_key_form_use(ann, "the-oldest", t0)
                .await
                .unwrap()
        );
        // The rest of the cap, sent a minute later (set up in one statement).
        execute(
            &fx,
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) \
             INSERT INTO web_key_forms (token_digest, account_id, sent_at) \
             SELECT 'bulk-' || CAST(i AS TEXT), $2, $3 FROM n",
            &[
                i64::from(KEY_FORMS_PER_ACCOUNT) - 1,
                ann.as_i64(),
                later(t0, 60).unix(),
            ],
        )
        .await;
        let cap = i64::from(KEY_FORMS_PER_ACCOUNT);
        assert_eq!(rows(&fx, "web_key_forms").await, cap);
        assert!(
            !state
                .first_key_form_use(ann, "the-oldest", later(t0, 120))
                .await
                .unwrap()
        );
        // One more: the oldest goes, and is then accepted once more.
        assert!(
            state
                .first_key_form_use(ann, "one-more", later(t0, 120))
                .await
                .unwrap()
        );
        assert_eq!(rows(&fx, "web_key_forms").await, cap);
        assert!(
            state
                .first_key_form_use(ann, "the-oldest", later(t0, 180))
                .await
                .unwrap()
        );
        assert!(
            !state
                .first_key_form_use(ann, "one-more", later(t0, 180))
                .await
                .unwrap()
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_twenty_concurrent_uses_of_a_form_token_on_several_instances_one_wins() {
    on_each_backend("key_forms_race", |fx| async move {
        let ann = account(&fx.state, "ann@example.com").await;
        // Four instances: four pools on the same database.
        let mut instances = vec![fx.state.clone()];
        for _ in 0..3 {
            instances.push(fx.reopen().await.unwrap());
        }
        for round in 0..3 {
            let token = format!("raced-form-token-{round}");
            let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(20));
            let takers: Vec<_> = (0..20)
                .map(|i| {
                    let state = instances[i % instances.len()].clone();
                    let (token, barrier) = (token.clone(), barrier.clone());
                    tokio::spawn(async move {
                        barrier.wait().await;
                        state
                            .first_key_form_use(ann, &token, later(noon(), round))
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut winners = 0;
            for taker in takers {
                winners += usize::from(taker.await.unwrap());
            }
            assert_eq!(winners, 1, "round {round}: exactly one first use");
        }
        for state in &instances[1..] {
            state.close().await;
        }
    })
    .await;
}
