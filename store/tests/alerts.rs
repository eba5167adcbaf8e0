//! E-mail alert preferences and the alert mails a push queues, on both backends: one mail per
//! push and opted-in member, only for what that member asked about, in the push transaction.
#![allow(clippy::unwrap_used)]

use tidemark_domain::access::Role;
use tidemark_domain::gate::QualityGate;
use tidemark_domain::text::Email;
use tidemark_store::access::{add_member, change_member};
use tidemark_store::alerts::{alert_prefs, set_alert_prefs, AlertPrefs, ALERT_MAIL_KIND};
use tidemark_store::gates::set_project_gate;
use tidemark_store::outbox::claim_due_mail;
use tidemark_store::pushes::record_push;
use tidemark_store::testing::{
    appended, fresh, insert_pushing_account, plain_push as push, push_context as ctx,
};
use tidemark_store::Writer;
use tidemark_wire::GateStatus;

async fn member(db: &Writer, account: &tidemark_store::AccountId, email: &str) -> String {
    let email = Email::parse(email).unwrap();
    add_member(
        db,
        account,
        &email,
        Role::Member,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap()
    .unwrap()
    .user_id
}

fn prefs(gate_failed: bool, score_regressed: bool) -> AlertPrefs {
    AlertPrefs {
        gate_failed,
        score_regressed,
        posture_drifted: false,
        key_expiring: true,
    }
}

/// (recipient, project label, scan id) of every alert due, sorted; claiming them empties the
/// queue for the next look.
async fn alerts_queued(db: &Writer) -> Vec<(String, String, tidemark_store::ScanId)> {
    let due = claim_due_mail(db, i64::MAX / 4, 1, 1_000).await.unwrap();
    let mut out: Vec<_> = due
        .into_iter()
        .map(|m| {
            assert_eq!(m.kind, ALERT_MAIL_KIND);
            let scan = m.scan.expect("an alert is about a scan");
            (m.recipient, scan.project_label, scan.scan_id)
        })
        .collect();
    out.sort();
    out
}

tidemark_store::test_each_backend! {
    async fn preferences_default_to_nothing_and_only_members_can_store_them(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;
        let ann = member(&t.db, &acct("acct_a"), "ann@example.com").await;
        assert_eq!(alert_prefs(&t.db, &acct("acct_a"), &ann).await.unwrap(), AlertPrefs::default());

        assert!(set_alert_prefs(&t.db, &acct("acct_a"), &ann, prefs(true, false), 5).await.unwrap());
        assert_eq!(alert_prefs(&t.db, &acct("acct_a"), &ann).await.unwrap(), prefs(true, false));
        assert!(set_alert_prefs(&t.db, &acct("acct_a"), &ann, prefs(false, true), 6).await.unwrap());
        assert_eq!(alert_prefs(&t.db, &acct("acct_a"), &ann).await.unwrap(), prefs(false, true));

        // Not a member of acct_b: refused, nothing stored.
        assert!(!set_alert_prefs(&t.db, &acct("acct_b"), &ann, prefs(true, true), 7).await.unwrap());
        assert_eq!(alert_prefs(&t.db, &acct("acct_b"), &ann).await.unwrap(), AlertPrefs::default());
    }
}

tidemark_store::test_each_backend! {
    async fn a_push_queues_one_alert_per_opted_in_member_for_what_it_raised(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;
        let gates = member(&t.db, &acct("acct_a"), "gates@example.com").await;
        let drops = member(&t.db, &acct("acct_a"), "drops@example.com").await;
        let both = member(&t.db, &acct("acct_a"), "both@example.com").await;
        let _silent = member(&t.db, &acct("acct_a"), "silent@example.com").await;
        let elsewhere = member(&t.db, &acct("acct_b"), "elsewhere@example.com").await;
        set_alert_prefs(&t.db, &acct("acct_a"), &gates, prefs(true, false), 1).await.unwrap();
        set_alert_prefs(&t.db, &acct("acct_a"), &drops, prefs(false, true), 1).await.unwrap();
        set_alert_prefs(&t.db, &acct("acct_a"), &both, prefs(true, true), 1).await.unwrap();
        set_alert_prefs(&t.db, &acct("acct_b"), &elsewhere, prefs(true, true), 1).await.unwrap();

        // A first scan raises nothing; a rise raises nothing.
        let first = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 0, 80.0)).await.unwrap());
        assert!(!first.alerts_queued);
        let up = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 1, 85.0)).await.unwrap());
        assert!(!up.alerts_queued);
        assert_eq!(alerts_queued(&t.db).await, []);

        // A drop without a gate: the two who asked about drops, once each.
        let down = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 2, 84.0)).await.unwrap());
        assert!(down.alerts_queued);
        assert_eq!(alerts_queued(&t.db).await, [
            ("both@example.com".to_owned(), "api".to_owned(), down.scan_id.clone()),
            ("drops@example.com".to_owned(), "api".to_owned(), down.scan_id.clone()),
        ]);

        // A failed gate and a drop in one push: each of the three gets one mail, not two.
        let gate = QualityGate::new(Some(90.0), None, None).unwrap().unwrap();
        assert!(set_project_gate(&t.db, &acct("acct_a"), &first.project_id, Some(&gate), &tidemark_store::testing::audit()).await.unwrap());
        let failed = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 3, 83.0)).await.unwrap());
        assert_eq!(failed.gate.status, GateStatus::Failed);
        assert_eq!(alerts_queued(&t.db).await, [
            ("both@example.com".to_owned(), "api".to_owned(), failed.scan_id.clone()),
            ("drops@example.com".to_owned(), "api".to_owned(), failed.scan_id.clone()),
            ("gates@example.com".to_owned(), "api".to_owned(), failed.scan_id.clone()),
        ]);

        // A replay of that push queues nothing again.
        let replay = record_push(&t.db, ctx(&acct("acct_a")), push("api", 3, 83.0)).await.unwrap();
        assert!(matches!(replay, tidemark_store::pushes::PushOutcome::Replayed(..)));
        assert_eq!(alerts_queued(&t.db).await, []);

        // A failed gate with a higher score: only those who asked about gates.
        let rising_fail = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 4, 86.0)).await.unwrap());
        assert_eq!(rising_fail.gate.status, GateStatus::Failed);
        assert_eq!(alerts_queued(&t.db).await, [
            ("both@example.com".to_owned(), "api".to_owned(), rising_fail.scan_id.clone()),
            ("gates@example.com".to_owned(), "api".to_owned(), rising_fail.scan_id.clone()),
        ]);

        // A removed member's preferences go with the membership.
        change_member(&t.db, &acct("acct_a"), &both, None, &tidemark_store::testing::audit()).await.unwrap().unwrap();
        assert_eq!(alert_prefs(&t.db, &acct("acct_a"), &both).await.unwrap(), AlertPrefs::default());
        let again = appended(record_push(&t.db, ctx(&acct("acct_a")), push("api", 5, 70.0)).await.unwrap());
        assert_eq!(alerts_queued(&t.db).await, [
            ("drops@example.com".to_owned(), "api".to_owned(), again.scan_id.clone()),
            ("gates@example.com".to_owned(), "api".to_owned(), again.scan_id.clone()),
        ]);
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
