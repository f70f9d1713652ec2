//! The web application's records: sessions stored hashed with an idle timeout, sign-ins in
//! flight used once, identities linked once, organisations not verified.

use periscope_state::{AccountId, Email, NewAccount, PendingSignIn, State, WebSessionLookup};

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
async fn sessions_expire_after_the_idle_time_and_end_once() {
    on_each_backend("web_sessions", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let id = "session-id-0123456789";
        state
            .create_web_session(id, ann, "csrf-token", "id.token.hint", noon())
            .await
            .unwrap();
        let active = |lookup| match lookup {
            WebSessionLookup::Active(s) => s,
            other => panic!("expected a live session, got {other:?}"),
        };
        // 29 minutes idle: live, and its idle time restarts.
        let s = active(
            state
                .web_session(id, later(noon(), 1740), 1800)
                .await
                .unwrap(),
        );
        assert_eq!(
            (s.account, s.csrf.as_str(), s.id_token.as_str()),
            (ann, "csrf-token", "id.token.hint")
        );
        active(
            state
                .web_session(id, later(noon(), 3480), 1800)
                .await
                .unwrap(),
        );
        // 30 idle minutes: expired and deleted.
        assert_eq!(
            state
                .web_session(id, later(noon(), 3480 + 1800), 1800)
                .await
                .unwrap(),
            WebSessionLookup::Expired
        );
        assert_eq!(
            state
                .web_session(id, later(noon(), 3480), 1800)
                .await
                .unwrap(),
            WebSessionLookup::Unknown
        );
        assert_eq!(
            state
                .web_session("another-session-id", noon(), 1800)
                .await
                .unwrap(),
            WebSessionLookup::Unknown
        );

        // Ending returns the session once.
        state
            .create_web_session("second-session-id", ann, "c", "hint", noon())
            .await
            .unwrap();
        assert_eq!(
            state
                .end_web_session("second-session-id")
                .await
                .unwrap()
                .unwrap()
                .id_token,
            "hint"
        );
        assert_eq!(
            state.end_web_session("second-session-id").await.unwrap(),
            None
        );

        // Idle sessions are purged.
        state
            .create_web_session("third-session-id", ann, "c", "hint", noon())
            .await
            .unwrap();
        assert_eq!(state.purge_web(later(noon(), 1800), 1800).await.unwrap(), 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_in_flight_is_taken_once_before_it_expires() {
    on_each_backend("web_sign_ins", |fx| async move {
        let state = &fx.state;
        let pending = PendingSignIn {
            nonce: "nonce".into(),
            pkce_verifier: "verifier".into(),
            return_to: "/?q=port%3A22".into(),
        };
        state
            .begin_web_sign_in("state-1", &pending, noon(), later(noon(), 600))
            .await
            .unwrap();
        assert_eq!(
            state.take_web_sign_in("state-2", noon()).await.unwrap(),
            None
        );
        assert_eq!(
            state
                .take_web_sign_in("state-1", later(noon(), 10))
                .await
                .unwrap(),
            Some(pending.clone())
        );
        assert_eq!(
            state
                .take_web_sign_in("state-1", later(noon(), 10))
                .await
                .unwrap(),
            None
        );
        // Expired: gone, even on the first take.
        state
            .begin_web_sign_in("state-3", &pending, noon(), later(noon(), 600))
            .await
            .unwrap();
        assert_eq!(
            state
                .take_web_sign_in("state-3", later(noon(), 600))
                .await
                .unwrap(),
            None
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identities_link_once_and_organisations_start_unverified() {
    on_each_backend("web_identities", |fx| async move {
        let state = &fx.state;
        let ann = account(state, "ann@example.com").await;
        let bob = account(state, "bob@example.com").await;
        let issuer = "http://127.0.0.1:8080/auth";
        assert_eq!(state.identity_account(issuer, "sub-1").await.unwrap(), None);
        state
            .link_identity(issuer, "sub-1", ann, noon())
            .await
            .unwrap();
        state
            .link_identity(issuer, "sub-1", bob, noon())
            .await
            .unwrap();
        assert_eq!(
            state.identity_account(issuer, "sub-1").await.unwrap(),
            Some(ann)
        );
        assert_eq!(
            state
                .identity_account("http://other", "sub-1")
                .await
                .unwrap(),
            None
        );
        let orgs = state.organisations_of(ann).await.unwrap();
        assert!(!orgs[0].verified);
    })
    .await;
}
