//! Search cursors: one-time, bound to account, query and limit, expiring.

use periscope_state::{AccountId, CursorTake, Email, NewAccount, NewCursor, State};

use crate::harness::{later, noon, on_each_backend};

async fn account(state: &State, email: &str) -> AccountId {
    let email = Email::parse(email).unwrap();
    state
        .create_account(&NewAccount::new(email, "Example Ltd"), noon())
        .await
        .unwrap()
        .id
}

fn taken(position: &str) -> CursorTake {
    CursorTake::Taken {
        resume_after: position.to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_is_used_once_with_its_query_and_limit() {
    on_each_backend("cursor_rules", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let bob = account(state, "bob@example.com").await;
        let new = NewCursor {
            account: ann,
            query: "port:22",
            limit: 25,
            resume_after: "240.0.0.7",
            expires_at: later(noon(), 600),
        };
        let token = state.create_cursor(&new, noon()).await.unwrap();
        assert!(token.as_str().starts_with("sc1_"));
        assert_eq!(token.as_str().len(), 36);

        // Mismatches leave it unused; another account's use is simply gone.
        let now = later(noon(), 10);
        let take = |account, query: &'static str, limit| {
            let (state, token) = (state.clone(), token.clone());
            async move {
                state
                    .take_cursor(&token, account, query, limit, now)
                    .await
                    .unwrap()
            }
        };
        assert_eq!(take(ann, "port:23", 25).await, CursorTake::Mismatch);
        assert_eq!(take(ann, "port:22", 50).await, CursorTake::Mismatch);
        assert_eq!(take(bob, "port:22", 25).await, CursorTake::Gone);
        assert_eq!(take(ann, "port:22", 25).await, taken("240.0.0.7"));
        // Used: replays are gone, whatever the query.
        assert_eq!(take(ann, "port:22", 25).await, CursorTake::Gone);
        assert_eq!(take(ann, "port:23", 25).await, CursorTake::Gone);

        // A search that took it and then failed gives it back.
        state.release_cursor(&token, bob).await.unwrap();
        assert_eq!(take(ann, "port:22", 25).await, CursorTake::Gone);
        state.release_cursor(&token, ann).await.unwrap();
        assert_eq!(take(ann, "port:22", 25).await, taken("240.0.0.7"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_cursor_is_gone_and_purged() {
    on_each_backend("cursor_expiry", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let expires_at = later(noon(), 600);
        let new = NewCursor {
            account: ann,
            query: "port:22",
            limit: 25,
            resume_after: "x",
            expires_at,
        };
        let token = state.create_cursor(&new, noon()).await.unwrap();
        let live = state
            .create_cursor(
                &NewCursor {
                    expires_at: later(noon(), 6_000),
                    ..new.clone()
                },
                noon(),
            )
            .await
            .unwrap();
        // Expired at its expiry instant, also for a mismatching query.
        let at_expiry = state
            .take_cursor(&token, ann, "port:22", 25, expires_at)
            .await
            .unwrap();
        assert_eq!(at_expiry, CursorTake::Gone);
        let mismatch = state
            .take_cursor(&token, ann, "port:80", 25, expires_at)
            .await
            .unwrap();
        assert_eq!(mismatch, CursorTake::Gone);
        assert_eq!(state.purge_cursors(expires_at).await.unwrap(), 1);
        assert_eq!(state.purge_cursors(expires_at).await.unwrap(), 0);
        let taken_live = state
            .take_cursor(&live, ann, "port:22", 25, expires_at)
            .await
            .unwrap();
        assert_eq!(taken_live, taken("x"));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_used_concurrently_succeeds_once() {
    on_each_backend("cursor_race", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        for round in 0..5 {
            let new = NewCursor {
                account: ann,
                query: "country:DE port:443",
                limit: 100,
                resume_after: "3fff::1",
                expires_at: later(noon(), 600),
            };
            let token = state.create_cursor(&new, noon()).await.unwrap();
            let tasks: Vec<_> = (0..10)
                .map(|_| {
                    let (state, token) = (state.clone(), token.clone());
                    tokio::spawn(async move {
                        state
                            .take_cursor(&token, ann, "country:DE port:443", 100, noon())
                            .await
                            .unwrap()
                    })
                })
                .collect();
            let mut wins = 0;
            for task in tasks {
                match task.await.unwrap() {
                    CursorTake::Taken { resume_after } => {
                        assert_eq!(resume_after, "3fff::1");
                        wins += 1;
                    }
                    CursorTake::Gone => {}
                    CursorTake::Mismatch => panic!("round {round}: mismatch"),
                }
            }
            assert_eq!(wins, 1, "round {round}");
        }
    })
    .await;
}
