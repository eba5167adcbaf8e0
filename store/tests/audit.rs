//! The audit log on both backends: each audited change writes its event in its own
//! transaction (a refused change writes none), and the log lists by account, actor, action
//! and time, newest first.
#![allow(clippy::unwrap_used)]

use tidemark_domain::access::Role;
use tidemark_domain::audit::{Action, Actor, AuditContext};
use tidemark_domain::gate::QualityGate;
use tidemark_domain::text::Email;
use tidemark_store::access::{add_member, change_member, MembershipError};
use tidemark_store::audit::{list_audit, operator_context, AuditEvent, AuditQuery};
use tidemark_store::gates::set_project_gate;
use tidemark_store::pushes::record_push;
use tidemark_store::testing::{appended, fresh, insert_pushing_account, plain_push, push_context};

fn admin(at: i64) -> AuditContext {
    AuditContext {
        actor: Actor::User {
            user_id: "usr_admin".into(),
            email: "admin@example.com".into(),
        },
        client_ip: Some("203.0.113.7".into()),
        at,
    }
}

fn query(account: &tidemark_store::AccountId) -> AuditQuery {
    AuditQuery {
        account_id: Some(account.to_owned()),
        limit: 100,
        ..AuditQuery::default()
    }
}

fn summary(e: &AuditEvent) -> (String, String, String, Option<String>, Option<String>) {
    (
        e.actor.clone(),
        e.action.clone(),
        e.target.clone(),
        e.before_summary.clone(),
        e.after_summary.clone(),
    )
}

tidemark_store::test_each_backend! {
    async fn changes_are_recorded_with_actor_address_and_before_after(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;
        // After the license's creation (now), in a known order.
        let t0 = tidemark_domain::now_millis() + 1_000;
        let project = appended(record_push(&t.db, push_context(&acct("acct_a")), plain_push("web", 0, 80.0)).await.unwrap()).project_id;

        let dev = Email::parse("dev@example.com").unwrap();
        let added = add_member(&t.db, &acct("acct_a"), &dev, Role::Member, &admin(t0 + 10)).await.unwrap().unwrap();
        // Refused changes write nothing: already a member, another account's project.
        assert!(matches!(
            add_member(&t.db, &acct("acct_a"), &dev, Role::Admin, &admin(t0 + 11)).await.unwrap(),
            Err(MembershipError::AlreadyMember(_))
        ));
        let gate = QualityGate::new(Some(75.0), Some(3.0), None).unwrap().unwrap();
        assert!(!set_project_gate(&t.db, &acct("acct_b"), &project, Some(&gate), &admin(t0 + 12)).await.unwrap());
        assert!(set_project_gate(&t.db, &acct("acct_a"), &project, Some(&gate), &admin(t0 + 13)).await.unwrap());
        assert!(set_project_gate(&t.db, &acct("acct_a"), &project, None, &admin(t0 + 14)).await.unwrap());
        change_member(&t.db, &acct("acct_a"), &added.user_id, Some(Role::Admin), &admin(t0 + 15)).await.unwrap().unwrap();
        change_member(&t.db, &acct("acct_a"), &added.user_id, None, &operator_context("root", t0 + 16)).await.unwrap().unwrap();

        let log = list_audit(&t.db, &query(&acct("acct_a"))).await.unwrap();
        let got: Vec<_> = log.iter().map(summary).collect();
        let s = |v: &str| Some(v.to_owned());
        assert_eq!(got, [
            ("operator:root".into(), "member.removed".into(), "dev@example.com".into(), s("admin"), None),
            ("admin@example.com".into(), "member.role_changed".into(), "dev@example.com".into(), s("member"), s("admin")),
            ("admin@example.com".into(), "gate.removed".into(), "web".into(), s("min score 75; max drop 3"), None),
            ("admin@example.com".into(), "gate.set".into(), "web".into(), None, s("min score 75; max drop 3")),
            ("admin@example.com".into(), "member.added".into(), "dev@example.com".into(), None, s("member")),
            // insert_pushing_account created the license (as the "tests" operator).
            ("operator:tests".into(), "license.created".into(), log[5].target.clone(), None, log[5].after_summary.clone()),
        ], "{backend:?}");
        assert_eq!(log[1].client_ip.as_deref(), Some("203.0.113.7"));
        assert_eq!(log[1].at, t0 + 15);
        assert_eq!((log[1].actor_kind.as_str(), log[0].actor_kind.as_str()), ("user", "operator"));
        assert_eq!(log[0].client_ip, None);

        // Filters: actor, action, time; another account sees none of it.
        let by = |f: fn(&mut AuditQuery)| {
            let mut q = query(&acct("acct_a"));
            f(&mut q);
            q
        };
        let mine = list_audit(&t.db, &by(|q| q.actor = Some("operator:root".into()))).await.unwrap();
        assert_eq!(mine.len(), 1);
        let gates = list_audit(&t.db, &by(|q| q.action = Some(Action::GateSet))).await.unwrap();
        assert_eq!(gates.len(), 1);
        let mut since = query(&acct("acct_a"));
        since.since = Some(t0 + 14);
        let recent = list_audit(&t.db, &since).await.unwrap();
        assert_eq!(recent.len(), 3);
        let page = list_audit(&t.db, &by(|q| { q.offset = 1; q.limit = 2; })).await.unwrap();
        assert_eq!(page.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["member.role_changed", "gate.removed"]);
        let theirs = list_audit(&t.db, &query(&acct("acct_b"))).await.unwrap();
        assert_eq!(theirs.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["license.created"]);
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
