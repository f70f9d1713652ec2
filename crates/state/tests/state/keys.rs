//! API keys: shown once, stored as a digest, revocation effective at once, unknown and revoked
//! keys indistinguishable.

use periscope_state::{Access, AccountId, Email, NewAccount, State, StateError};

use crate::harness::{later, noon, on_each_backend};

async fn account(state: &State, email: &str) -> AccountId {
    let email = Email::parse(email).unwrap();
    state
        .create_account(&NewAccount::new(email, "Example Ltd"), noon())
        .await
        .unwrap()
        .id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_authenticate_until_revoked() {
    on_each_backend("keys", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let (key, info) = state.create_key(ann, Some(" ci "), noon()).await.unwrap();
        assert_eq!(info.name.as_deref(), Some("ci"));
        assert!(key.expose().starts_with("psk_"));

        let owner = state
            .authenticate(key.expose(), noon())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(owner.key, info.id);
        assert_eq!(owner.account.id, ann);
        let listed = state.keys_of(ann).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].last_used_at, Some(noon()));

        // Use is recorded to the minute: a use 30 s later does not rewrite it, 61 s later does.
        state
            .authenticate(key.expose(), later(noon(), 30))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            state.keys_of(ann).await.unwrap()[0].last_used_at,
            Some(noon())
        );
        state
            .authenticate(key.expose(), later(noon(), 61))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            state.keys_of(ann).await.unwrap()[0].last_used_at,
            Some(later(noon(), 61))
        );

        // The owner is read at every lookup: an administrator's change shows at once.
        state.set_access(ann, Access::Inactive).await.unwrap();
        let owner = state
            .authenticate(key.expose(), noon())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(owner.account.access, Access::Inactive);

        // Another account cannot revoke it.
        let bob = account(state, "bob@example.com").await;
        assert!(!state.revoke_key(bob, info.id, noon()).await.unwrap());
        assert!(
            state
                .authenticate(key.expose(), noon())
                .await
                .unwrap()
                .is_some()
        );

        // Revocation is effective on the very next lookup.
        assert!(
            state
                .revoke_key(ann, info.id, later(noon(), 100))
                .await
                .unwrap()
        );
        assert!(
            !state
                .revoke_key(ann, info.id, later(noon(), 200))
                .await
                .unwrap()
        );
        let revoked = state
            .authenticate(key.expose(), later(noon(), 101))
            .await
            .unwrap();
        assert_eq!(revoked, None);
        assert_eq!(
            state.keys_of(ann).await.unwrap()[0].revoked_at,
            Some(later(noon(), 100))
        );

        // A revoked key, a key with a typo (it fails the checksum) and malformed values all
        // give the same outcome.
        let mut typo = key.expose().to_owned();
        typo.replace_range(4..5, if &typo[4..5] == "A" { "B" } else { "A" });
        for presented in [key.expose(), typo.as_str(), "psk_short", "", "Bearer x"] {
            assert_eq!(state.authenticate(presented, noon()).await.unwrap(), None);
        }

        let err = state
            .create_key(AccountId::from_i64(-1), None, noon())
            .await
            .unwrap_err();
        assert!(matches!(err, StateError::UnknownAccount), "{err:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_well_formed_key_that_was_never_stored_is_unknown() {
    // Keys of one database are unknown to another: a real, well-formed, never-stored key.
    let elsewhere = crate::harness::TempDir::new("elsewhere");
    let other_state = State::open_sqlite(elsewhere.path()).await.unwrap();
    let someone = account(&other_state, "carol@example.com").await;
    let (foreign, _) = other_state.create_key(someone, None, noon()).await.unwrap();
    other_state.close().await;
    let foreign = foreign.expose().to_owned();
    assert!(periscope_state::is_well_formed_key(&foreign));

    on_each_backend("unknown_key", move |fx| {
        let foreign = foreign.clone();
        async move {
            let state = &fx.state;
            let ann = account(state, "ann@example.com").await;
            let (revoked, info) = state.create_key(ann, None, noon()).await.unwrap();
            state.revoke_key(ann, info.id, noon()).await.unwrap();
            let unknown = state.authenticate(&foreign, noon()).await.unwrap();
            let gone = state.authenticate(revoked.expose(), noon()).await.unwrap();
            assert_eq!(unknown, None);
            assert_eq!(unknown, gone);
        }
    })
    .await;
}
