//! Webhook endpoints and their outbox on both backends: deliveries are queued in the
//! transaction that raised the event, to the endpoints subscribed to it, and claimed by one
//! sender at a time.
#![allow(clippy::unwrap_used)]

use tidemark_domain::gate::QualityGate;
use tidemark_domain::webhook::{Event, EventSet, PayloadFormat};
use tidemark_store::gates::set_project_gate;
use tidemark_store::pushes::record_push;
use tidemark_store::testing::{
    appended, fresh, insert_pushing_account, plain_push as push, push_context as ctx,
};
use tidemark_store::webhooks::{
    claim_due, create_webhook, delete_webhook, delivery_log, enqueue_test_event, list_webhooks,
    pending_count, record_attempt, redeliver, replace_secret, Attempt, CreateOutcome, NewWebhook,
};
use tidemark_store::Writer;
use tidemark_wire::GateStatus;

async fn add_hook(
    db: &Writer,
    account: &tidemark_store::AccountId,
    project: Option<&tidemark_store::ProjectId>,
    events: &[&str],
) -> String {
    let id = tidemark_domain::ids::new_webhook_id();
    let outcome = create_webhook(
        db,
        &NewWebhook {
            id: id.clone(),
            account_id: account.clone(),
            project_id: project.cloned(),
            url_sealed: "sealed-url".into(),
            url_display: "https://hooks.example.com/…".into(),
            format: PayloadFormat::Tidemark,
            events: EventSet::parse(events.iter().copied()).unwrap(),
            secret_sealed: "sealed-secret".into(),
            now: 1,
        },
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
    assert_eq!(outcome, CreateOutcome::Created);
    id
}

/// (event, webhook id) of every queued delivery, sorted.
async fn queued(db: &Writer) -> Vec<(String, String)> {
    let due = claim_due(db, i64::MAX / 4, 1, 1_000).await.unwrap();
    let mut out: Vec<_> = due
        .into_iter()
        .map(|d| (d.event.as_str().to_owned(), d.webhook_id))
        .collect();
    out.sort();
    out
}

tidemark_store::test_each_backend! {
    async fn a_push_queues_one_delivery_per_raised_event_and_subscribed_endpoint(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;

        // Without endpoints a push queues nothing.
        let first = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 0, 90.0)).await.unwrap());
        assert!(!first.webhooks_queued);
        assert_eq!(pending_count(&t.db).await.unwrap(), 0);

        let all = add_hook(&t.db, &acct("acct_a"), None, &["scan.pushed", "gate.failed", "score.regressed"]).await;
        let failures = add_hook(&t.db, &acct("acct_a"), None, &["gate.failed"]).await;
        let web_only = add_hook(&t.db, &acct("acct_a"), Some(&first.project_id), &["scan.pushed"]).await;
        let other_account = add_hook(&t.db, &acct("acct_b"), None, &["scan.pushed"]).await;

        // A gate that this push fails, and a drop: all three events.
        let gate = QualityGate::new(Some(80.0), None, None).unwrap().unwrap();
        assert!(set_project_gate(&t.db, &acct("acct_a"), &first.project_id, Some(&gate), &tidemark_store::testing::audit()).await.unwrap());
        let second = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 1, 70.0)).await.unwrap());
        assert!(second.webhooks_queued);
        assert_eq!(second.gate.status, GateStatus::Failed);
        let mut expected = vec![
            ("gate.failed".to_owned(), all.clone()),
            ("gate.failed".to_owned(), failures.clone()),
            ("scan.pushed".to_owned(), all.clone()),
            ("scan.pushed".to_owned(), web_only.clone()),
            ("score.regressed".to_owned(), all.clone()),
        ];
        expected.sort();
        assert_eq!(queued(&t.db).await, expected);

        // A replay queues nothing; another project reaches only the account-wide endpoint.
        record_push(&t.db, ctx(&acct("acct_a")), push("api", 1, 70.0)).await.unwrap();
        appended(record_push(&t.db, ctx(&acct("acct_a")), push("worker", 2, 95.0)).await.unwrap());
        assert_eq!(queued(&t.db).await, [("scan.pushed".to_owned(), all.clone())]);
        assert!(!other_account.is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn endpoints_are_listed_per_account_capped_and_scoped_to_its_projects(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;
        let b_project = appended(record_push(&t.db, ctx(&acct("acct_b")), push("api", 0, 90.0)).await.unwrap()).project_id;

        let id = add_hook(&t.db, &acct("acct_a"), None, &["keys.rotated"]).await;
        let stranger = NewWebhook {
            id: tidemark_domain::ids::new_webhook_id(),
            account_id: acct("acct_a"),
            project_id: Some(b_project),
            url_sealed: "u".into(),
            url_display: "https://x".into(),
            format: PayloadFormat::Slack,
            events: EventSet::parse(["scan.pushed"]).unwrap(),
            secret_sealed: "s".into(),
            now: 2,
        };
        assert_eq!(create_webhook(&t.db, &stranger, &tidemark_store::testing::audit()).await.unwrap(), CreateOutcome::NoSuchProject);
        for _ in 1..tidemark_domain::webhook::MAX_ENDPOINTS {
            add_hook(&t.db, &acct("acct_a"), None, &["scan.pushed"]).await;
        }
        let one_more = NewWebhook { project_id: None, id: tidemark_domain::ids::new_webhook_id(), ..stranger };
        assert_eq!(create_webhook(&t.db, &one_more, &tidemark_store::testing::audit()).await.unwrap(), CreateOutcome::TooMany);

        let listed = list_webhooks(&t.db, &acct("acct_a")).await.unwrap();
        assert_eq!(listed.len(), tidemark_domain::webhook::MAX_ENDPOINTS);
        let first = listed.iter().find(|w| w.id == id).unwrap();
        assert_eq!(first.events.events(), [Event::KeysRotated]);
        assert_eq!(first.project_id, None);
        assert!(list_webhooks(&t.db, &acct("acct_b")).await.unwrap().is_empty());

        assert!(!replace_secret(&t.db, &acct("acct_b"), &id, "new", &tidemark_store::testing::audit()).await.unwrap(), "another account's");
        assert!(replace_secret(&t.db, &acct("acct_a"), &id, "new", &tidemark_store::audit::operator_context("tests", 5)).await.unwrap());
        let rotated = list_webhooks(&t.db, &acct("acct_a")).await.unwrap();
        assert_eq!(rotated.iter().find(|w| w.id == id).unwrap().secret_rotated_at, Some(5));
        assert!(!delete_webhook(&t.db, &acct("acct_b"), &id, &tidemark_store::testing::audit()).await.unwrap());
        assert!(delete_webhook(&t.db, &acct("acct_a"), &id, &tidemark_store::testing::audit()).await.unwrap());
        assert_eq!(list_webhooks(&t.db, &acct("acct_a")).await.unwrap().len(), tidemark_domain::webhook::MAX_ENDPOINTS - 1);
    }
}

tidemark_store::test_each_backend! {
    async fn a_delivery_is_claimed_once_retried_logged_and_redelivered(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let hook = add_hook(&t.db, &acct("acct_a"), None, &["scan.pushed"]).await;
        let scan = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 0, 90.0)).await.unwrap());
        let now = tidemark_domain::now_millis();

        let claimed = claim_due(&t.db, now, 60_000, 10).await.unwrap();
        assert_eq!(claimed.len(), 1);
        let d = &claimed[0];
        assert_eq!((d.event, d.attempts, d.format), (Event::ScanPushed, 1, PayloadFormat::Tidemark));
        let facts = d.scan.as_ref().unwrap();
        assert_eq!((facts.scan_id.as_str(), facts.score, facts.project_label.as_str()), (scan.scan_id.as_str(), 90.0, "api"));
        assert_eq!((facts.passed, facts.failed, facts.severity_counts.high), (3, 1, 1));
        // Leased: nobody else gets it until the lease ends.
        assert!(claim_due(&t.db, now + 59_000, 60_000, 10).await.unwrap().is_empty());

        record_attempt(&t.db, d, &Attempt {
            at: now, status: Some(500), latency_ms: 12,
            error: Some("the receiver answered 500".into()), retry_at: Some(now + 10_000),
        }).await.unwrap();
        assert!(claim_due(&t.db, now + 9_999, 60_000, 10).await.unwrap().is_empty());
        let again = claim_due(&t.db, now + 10_000, 60_000, 10).await.unwrap();
        assert_eq!(again[0].attempts, 2);
        assert_eq!(again[0].window_start, d.window_start, "a retry keeps its window");

        let log = delivery_log(&t.db, &acct("acct_a"), 50).await.unwrap();
        assert_eq!((log[0].state.as_str(), log[0].last_status, log[0].attempts), ("pending", Some(500), 2));
        assert_eq!(log[0].last_error.as_deref(), Some("the receiver answered 500"));

        record_attempt(&t.db, &again[0], &Attempt {
            at: now + 10_000, status: Some(204), latency_ms: 8, error: None, retry_at: None,
        }).await.unwrap();
        let log = delivery_log(&t.db, &acct("acct_a"), 50).await.unwrap();
        assert_eq!((log[0].state.as_str(), log[0].last_status, log[0].last_latency_ms), ("delivered", Some(204), Some(8)));
        assert_eq!(log[0].next_attempt_at, None);
        assert!(claim_due(&t.db, i64::MAX / 4, 60_000, 10).await.unwrap().is_empty());

        // Redeliver: due again at once, with a fresh window; another account cannot.
        assert!(!redeliver(&t.db, &acct("acct_b"), &log[0].event_id, &hook, now + 20_000).await.unwrap());
        assert!(redeliver(&t.db, &acct("acct_a"), &log[0].event_id, &hook, now + 20_000).await.unwrap());
        let third = claim_due(&t.db, now + 20_000, 60_000, 10).await.unwrap();
        assert_eq!((third[0].event_id.as_str(), third[0].window_start, third[0].attempts), (log[0].event_id.as_str(), now + 20_000, 3));

        // Giving up: failed, never due again.
        record_attempt(&t.db, &third[0], &Attempt {
            at: now + 20_000, status: None, latency_ms: 5_000,
            error: Some("timed out".into()), retry_at: None,
        }).await.unwrap();
        assert_eq!(delivery_log(&t.db, &acct("acct_a"), 50).await.unwrap()[0].state, "failed");
        assert!(claim_due(&t.db, i64::MAX / 4, 60_000, 10).await.unwrap().is_empty());

        // The test event goes to the one endpoint, whatever it subscribes to.
        assert!(!enqueue_test_event(&t.db, &acct("acct_b"), &hook, "evt_test", now).await.unwrap());
        assert!(enqueue_test_event(&t.db, &acct("acct_a"), &hook, &tidemark_domain::ids::new_event_id(), now).await.unwrap());
        let test = claim_due(&t.db, now, 60_000, 10).await.unwrap();
        assert_eq!((test[0].event, test[0].scan.is_none()), (Event::Test, true));

        // Deleting the endpoint removes its log.
        assert!(delete_webhook(&t.db, &acct("acct_a"), &hook, &tidemark_store::testing::audit()).await.unwrap());
        assert!(delivery_log(&t.db, &acct("acct_a"), 50).await.unwrap().is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn rotating_keys_queues_keys_rotated_in_the_same_transaction(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let hook = add_hook(&t.db, &acct("acct_a"), None, &["keys.rotated"]).await;
        add_hook(&t.db, &acct("acct_a"), None, &["scan.pushed"]).await;
        let revoked = tidemark_store::licenses::rotate_api_keys(&t.db, &tidemark_store::licenses::NewApiKey {
            id: tidemark_domain::ids::new_key_id(),
            account_id: acct("acct_a"),
            hash: tidemark_domain::secrets::ApiKey::generate().hash(),
            prefix: "svc_api_x".into(),
            machine: "m".into(),
            now: 7,
        }, &tidemark_store::testing::audit()).await.unwrap();
        assert_eq!(revoked, 1);
        assert_eq!(queued(&t.db).await, [("keys.rotated".to_owned(), hook)]);
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
