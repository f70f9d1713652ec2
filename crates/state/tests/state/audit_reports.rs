//! Audit records and problem reports.

use std::sync::Arc;

use periscope_state::{
    AccountId, AuditEntry, AuditSink, Channel, Email, NewAccount, Operation, StateError,
};

use crate::harness::{later, noon, on_each_backend};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_records_are_written_listed_and_completed() {
    on_each_backend("audit", |fx| async move {
        let state = &fx.state;
        let email = Email::parse("ann@example.com").unwrap();
        let ann = state
            .create_account(&NewAccount::new(email, "Example Ltd"), noon())
            .await
            .unwrap()
            .id;
        let (_, key) = state.create_key(ann, None, noon()).await.unwrap();
        let sink: Arc<dyn AuditSink> = Arc::new(state.clone());
        let first = AuditEntry {
            request_id: "req-1".into(),
            at: noon(),
            account: ann,
            key: Some(key.id),
            channel: Channel::Api,
            operation: Operation::Search,
            subject: Some("port:22".into()),
            client: Some("2001:db8::7".parse().unwrap()),
        };
        let second = AuditEntry {
            request_id: "req-2".into(),
            at: later(noon(), 1),
            key: None,
            channel: Channel::Web,
            operation: Operation::HostDetail,
            subject: Some("240.0.0.1".into()),
            client: Some("192.0.2.9".parse().unwrap()),
            ..first.clone()
        };
        let first_id = sink.record(&first).await.unwrap();
        let second_id = sink.record(&second).await.unwrap();
        sink.record_outcome(first_id, "ok").await.unwrap();

        let records = state.audit_records(Some(ann), 10).await.unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].id, second_id);
        assert_eq!(records[0].entry, second);
        assert_eq!(records[0].outcome, None);
        assert_eq!(records[1].entry, first);
        assert_eq!(records[1].outcome.as_deref(), Some("ok"));
        // The client address is kept as sent, IPv6 and IPv4.
        assert_eq!(records[1].entry.client, first.client);
        assert_eq!(records[0].entry.client, second.client);
        // A record without a known client (as before schema version 4) reads back as None.
        let unknown = AuditEntry {
            request_id: "req-3".into(),
            at: later(noon(), 2),
            client: None,
            ..first.clone()
        };
        sink.record(&unknown).await.unwrap();
        let newest = state.audit_records(Some(ann), 1).await.unwrap();
        assert_eq!(newest[0].entry, unknown);
        assert_eq!(state.audit_records(None, 1).await.unwrap().len(), 1);
        assert!(
            state
                .audit_records(Some(AccountId::from_i64(-1)), 10)
                .await
                .unwrap()
                .is_empty()
        );

        // A record that cannot be written is an error the service turns into a 503.
        let orphan = AuditEntry {
            account: AccountId::from_i64(-1),
            ..first.clone()
        };
        assert!(sink.record(&orphan).await.is_err());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn problem_reports_are_kept_for_the_administrator() {
    on_each_backend("reports", |fx| async move {
        let state = &fx.state;
        let email = Email::parse("Ann@Example.com").unwrap();
        let ann = state
            .create_account(&NewAccount::new(email, "Example Ltd"), noon())
            .await
            .unwrap()
            .id;
        let text = "The Globe view stays empty.\nSteps: …";
        let first = state.submit_report(ann, text, noon()).await.unwrap();
        let longest = "é".repeat(4_000);
        let second = state
            .submit_report(ann, &longest, later(noon(), 5))
            .await
            .unwrap();
        for bad in ["   ".to_owned(), "é".repeat(4_001)] {
            let err = state.submit_report(ann, &bad, noon()).await.unwrap_err();
            assert!(matches!(err, StateError::Invalid { .. }), "{err:?}");
        }
        let err = state
            .submit_report(AccountId::from_i64(-1), "x", noon())
            .await
            .unwrap_err();
        assert!(matches!(err, StateError::UnknownAccount), "{err:?}");

        let reports = state.reports(10).await.unwrap();
        assert_eq!(reports.len(), 2);
        assert_eq!((reports[0].id, reports[1].id), (second, first));
        assert_eq!(reports[0].description, longest);
        assert_eq!(reports[1].description, text);
        assert_eq!(reports[1].email.as_str(), "Ann@Example.com");
        assert_eq!(reports[1].account, ann);
        assert_eq!(reports[1].created_at, noon());
        assert_eq!(state.reports(1).await.unwrap().len(), 1);
    })
    .await;
}
