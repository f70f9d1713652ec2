//! The daily allowance: exact under concurrency, reset by the UTC day, refundable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use periscope_state::{AccountId, Charge, Email, NewAccount, State, UtcDay};

use crate::harness::{later, noon, on_each_backend};

async fn account(state: &State) -> AccountId {
    let email = Email::parse("ann@example.com").unwrap();
    state
        .create_account(&NewAccount::new(email, "Example Ltd"), noon())
        .await
        .unwrap()
        .id
}

/// Runs `n` concurrent charges; returns the `used` values of the successful ones, sorted.
async fn charge_concurrently(
    state: &State,
    id: AccountId,
    day: UtcDay,
    limit: u32,
    n: usize,
) -> Vec<u32> {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let state = state.clone();
            tokio::spawn(async move { state.charge(id, day, limit).await.unwrap() })
        })
        .collect();
    let mut charged = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Charge::Charged(usage) => {
                assert!(usage.used <= limit);
                charged.push(usage.used);
            }
            Charge::Exhausted(usage) => assert_eq!(usage.remaining(), 0),
        }
    }
    charged.sort_unstable();
    charged
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_20_remaining_100_concurrent_charges_give_exactly_20() {
    on_each_backend("charge_100", |fx| async move {
        let state = &fx.state;
        let id = account(state).await;
        let day = UtcDay::of(noon());
        let charged = charge_concurrently(state, id, day, 20, 100).await;
        // Each unit was taken once: the counts seen are exactly 1..=20.
        assert_eq!(charged, (1..=20).collect::<Vec<_>>());
        assert_eq!(state.used(id, day).await.unwrap(), 20);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_19_used_10_concurrent_charges_give_exactly_one() {
    on_each_backend("charge_last", |fx| async move {
        let state = &fx.state;
        let id = account(state).await;
        let day = UtcDay::of(noon());
        for _ in 0..19 {
            assert!(matches!(
                state.charge(id, day, 20).await.unwrap(),
                Charge::Charged(_)
            ));
        }
        let charged = charge_concurrently(state, id, day, 20, 10).await;
        assert_eq!(charged, vec![20]);
        assert_eq!(state.used(id, day).await.unwrap(), 20);
        let usage = state.usage(id, day, 20).await.unwrap();
        assert_eq!((usage.used, usage.remaining()), (20, 0));
        assert_eq!(usage.resets_at().to_string(), "2026-11-21T00:00:00Z");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserve_then_refund_charges_exactly_the_answered_searches() {
    // The search service's pattern: charge before running, refund when the answer is not 200.
    // However the failures interleave, the counter ends equal to the number of 200s and
    // never exceeds the limit.
    on_each_backend("reserve_refund", |fx| async move {
        let state = &fx.state;
        let id = account(state).await;
        let day = UtcDay::of(noon());
        let answered = Arc::new(AtomicU32::new(0));
        let tasks: Vec<_> = (0..60)
            .map(|i| {
                let (state, answered) = (state.clone(), answered.clone());
                tokio::spawn(async move {
                    if let Charge::Charged(_) = state.charge(id, day, 20).await.unwrap() {
                        if i % 3 == 0 {
                            state.refund(id, day).await.unwrap();
                        } else {
                            answered.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let answered = answered.load(Ordering::SeqCst);
        assert!(answered <= 20);
        assert_eq!(state.used(id, day).await.unwrap(), answered);
        // Refunding never goes below zero.
        let other_day = day.next().next();
        state.refund(id, other_day).await.unwrap();
        assert_eq!(state.used(id, other_day).await.unwrap(), 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_utc_day_starts_fresh() {
    on_each_backend("rollover", |fx| async move {
        let state = &fx.state;
        let id = account(state).await;
        let last_second = crate::harness::later(UtcDay::of(noon()).resets_at(), -1);
        let today = UtcDay::of(last_second);
        for _ in 0..3 {
            assert!(matches!(
                state.charge(id, today, 3).await.unwrap(),
                Charge::Charged(_)
            ));
        }
        match state.charge(id, today, 3).await.unwrap() {
            Charge::Exhausted(usage) => {
                assert_eq!((usage.used, usage.remaining()), (3, 0));
                assert_eq!(usage.resets_at(), later(last_second, 1));
            }
            other => panic!("{other:?}"),
        }
        let tomorrow = UtcDay::of(later(last_second, 1));
        assert_eq!(tomorrow, today.next());
        assert_eq!(state.used(id, tomorrow).await.unwrap(), 0);
        match state.charge(id, tomorrow, 3).await.unwrap() {
            Charge::Charged(usage) => assert_eq!((usage.used, usage.remaining()), (1, 2)),
            other => panic!("{other:?}"),
        }
        assert_eq!(state.used(id, today).await.unwrap(), 3);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_or_lowered_limit_charges_nothing() {
    on_each_backend("zero_limit", |fx| async move {
        let state = &fx.state;
        let id = account(state).await;
        let day = UtcDay::of(noon());
        assert!(matches!(
            state.charge(id, day, 0).await.unwrap(),
            Charge::Exhausted(_)
        ));
        assert_eq!(state.used(id, day).await.unwrap(), 0);
        for _ in 0..5 {
            assert!(matches!(
                state.charge(id, day, 20).await.unwrap(),
                Charge::Charged(_)
            ));
        }
        // An account that does not exist cannot be charged.
        let nobody = AccountId::from_i64(-1);
        assert!(state.charge(nobody, day, 20).await.is_err());
        // The administrator lowers the limit below today's use: nothing remains.
        match state.charge(id, day, 3).await.unwrap() {
            Charge::Exhausted(usage) => assert_eq!((usage.used, usage.remaining()), (5, 0)),
            other => panic!("{other:?}"),
        }
    })
    .await;
}
