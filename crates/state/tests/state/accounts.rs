//! Accounts, organisations, access, limits and plans.

use periscope_state::{
    Access, AccountId, DailyLimit, Email, NewAccount, Plan, PlanSource, StateError, TermsAcceptance,
};

use crate::harness::{later, noon, on_each_backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_addresses_are_unique_case_insensitively() {
    on_each_backend("email_unique", |fx| async move {
        let state = &fx.state;
        let ann = Email::parse("Ann@Example.com").unwrap();
        let account = state
            .create_account(&NewAccount::new(ann, "Example Ltd"), noon())
            .await
            .unwrap();
        let shouted = Email::parse("ANN@EXAMPLE.COM").unwrap();
        let err = state
            .create_account(&NewAccount::new(shouted.clone(), "Other"), noon())
            .await
            .unwrap_err();
        assert!(matches!(err, StateError::EmailTaken(_)), "{err:?}");
        let found = state.account_by_email(&shouted).await.unwrap().unwrap();
        assert_eq!(found.id, account.id);
        assert_eq!(found.email.as_str(), "Ann@Example.com");
        assert_eq!(state.accounts().await.unwrap().len(), 1);
        // The failed attempt created no organisation membership either.
        assert_eq!(state.organisations_of(account.id).await.unwrap().len(), 1);

        // Concurrent registrations of one address in different cases: exactly one wins.
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let state = state.clone();
                let typed = if i % 2 == 0 {
                    "bob@example.com"
                } else {
                    "BOB@example.com"
                };
                tokio::spawn(async move {
                    let email = Email::parse(typed).unwrap();
                    state
                        .create_account(&NewAccount::new(email, format!("Org {i}")), noon())
                        .await
                })
            })
            .collect();
        let mut created = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(_) => created += 1,
                Err(StateError::EmailTaken(_)) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
        assert_eq!(created, 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_round_trip() {
    on_each_backend("settings", |fx| async move {
        let state = &fx.state;
        let email = Email::parse("ann@example.com").unwrap();
        let created = state
            .create_account(&NewAccount::new(email, "Example Ltd"), noon())
            .await
            .unwrap();
        let id = created.id;
        assert_eq!(state.account(id).await.unwrap().unwrap(), created);
        assert_eq!(created.access, Access::Active);
        assert_eq!(created.daily_limit, DailyLimit::Limited(20));
        assert_eq!(created.plan, Plan::Never);

        state.set_access(id, Access::Inactive).await.unwrap();
        state
            .set_daily_limit(id, DailyLimit::Unlimited)
            .await
            .unwrap();
        let expiry = later(noon(), 3_600);
        state.set_plan(id, Plan::ExpiresAt(expiry)).await.unwrap();
        let terms = TermsAcceptance {
            version: "2026-11-01".into(),
            accepted_at: noon(),
        };
        state.record_terms(id, &terms, true).await.unwrap();
        let account = state.account(id).await.unwrap().unwrap();
        assert_eq!(account.access, Access::Inactive);
        assert_eq!(account.daily_limit, DailyLimit::Unlimited);
        assert_eq!(account.plan, Plan::ExpiresAt(expiry));
        assert_eq!(account.terms, Some(terms));
        assert!(account.marketing_consent);
        assert!(account.plan.is_current(noon()));
        assert!(!account.plan.is_current(expiry));

        state.set_marketing_consent(id, false).await.unwrap();
        state
            .set_daily_limit(id, DailyLimit::Limited(0))
            .await
            .unwrap();
        state.set_access(id, Access::Active).await.unwrap();
        state.set_plan(id, Plan::Never).await.unwrap();
        let account = state.account(id).await.unwrap().unwrap();
        assert!(!account.marketing_consent);
        assert_eq!(account.daily_limit, DailyLimit::Limited(0));
        assert_eq!(account.access, Access::Active);
        assert_eq!(account.plan, Plan::Never);

        // The plan seam reads the same value; an unknown account is an error, not a plan.
        let source: &dyn PlanSource = state;
        assert_eq!(source.plan(id).await.unwrap(), Plan::Never);
        let nobody = AccountId::from_i64(-1);
        assert!(source.plan(nobody).await.is_err());
        assert!(state.account(nobody).await.unwrap().is_none());
        for err in [
            state.set_access(nobody, Access::Active).await,
            state.set_daily_limit(nobody, DailyLimit::Unlimited).await,
            state.set_plan(nobody, Plan::Never).await,
            state.set_marketing_consent(nobody, true).await,
        ] {
            assert!(matches!(err, Err(StateError::UnknownAccount)), "{err:?}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership() {
    on_each_backend("membership", |fx| async move {
        let state = &fx.state;
        let new =
            |email: &str, org: &str| NewAccount::new(Email::parse(email).unwrap(), org.to_owned());
        let ann = state
            .create_account(&new("ann@example.com", "Example Ltd"), noon())
            .await
            .unwrap();
        let bob = state
            .create_account(&new("bob@example.com", "Example Ltd"), noon())
            .await
            .unwrap();
        // Same name, same organisation.
        let ann_orgs = state.organisations_of(ann.id).await.unwrap();
        assert_eq!(ann_orgs.len(), 1);
        assert_eq!(ann_orgs[0].name, "Example Ltd");
        assert_eq!(state.organisations_of(bob.id).await.unwrap(), ann_orgs);

        let second = state
            .join_organisation(ann.id, "Second GmbH", noon())
            .await
            .unwrap();
        // Joining twice is a no-op.
        state
            .join_organisation(ann.id, "Second GmbH", noon())
            .await
            .unwrap();
        assert_eq!(state.organisations_of(ann.id).await.unwrap().len(), 2);
        assert!(
            state
                .leave_organisation(ann.id, ann_orgs[0].id)
                .await
                .unwrap()
        );
        assert!(
            !state
                .leave_organisation(ann.id, ann_orgs[0].id)
                .await
                .unwrap()
        );
        assert_eq!(
            state.organisations_of(ann.id).await.unwrap(),
            vec![second.clone()]
        );
        assert!(state.leave_organisation(ann.id, second.id).await.unwrap());
        assert!(state.organisations_of(ann.id).await.unwrap().is_empty());

        let err = state
            .join_organisation(AccountId::from_i64(-1), "Example Ltd", noon())
            .await
            .unwrap_err();
        assert!(matches!(err, StateError::UnknownAccount), "{err:?}");
        assert!(state.join_organisation(ann.id, "  ", noon()).await.is_err());
    })
    .await;
}
