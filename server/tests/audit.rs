//! The audit log end to end, on both databases: dashboard admin actions are recorded with the
//! admin's address and the client's, members cannot read the log, and filters and pages work.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::Value;
use tidemark_domain::access::Role;
use tidemark_wire::Tier;

tidemark_store::test_each_backend! {
    async fn admin_actions_in_the_dashboard_are_in_the_accounts_audit_log(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (other, _) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap();
        app.add_member(&license.account_id, "reader@example.com", Role::Member).await;

        let mut admin = app.signed_in(&provider, &license.email).await;
        for (path, form) in [
            ("/api/members/add", vec![("email", "dev@example.com")]),
            ("/api/change_member", vec![("email", "dev@example.com"), ("action", "make_admin")]),
            ("/api/rotate_keys", vec![]),
            ("/api/set_project_gate", vec![("project_id", project), ("min_score", "70"), ("max_drop", ""), ("new_findings_at", "")]),
            ("/api/issue_badge", vec![("project_id", project)]),
            ("/api/set_archived", vec![("project_id", project), ("archived", "true")]),
        ] {
            let res = admin.post_form(path, &form).await;
            assert_eq!(res.status(), StatusCode::OK, "{path}: {}", res.text().await.unwrap());
        }
        // Refused: nothing recorded.
        let res = admin.post_form("/api/members/add", &[("email", "dev@example.com")]).await;
        assert_eq!(res.status(), StatusCode::CONFLICT);

        let log: Value = admin.post_form("/api/audit", &[]).await.json().await.unwrap();
        let rows = log["rows"].as_array().unwrap();
        let actions: Vec<&str> = rows.iter().map(|r| r["action"].as_str().unwrap()).collect();
        assert_eq!(actions, [
            "project.archived", "badge.issued", "gate.set", "keys.rotated",
            "member.role_changed", "member.added", "member.added", "license.created",
        ], "{backend:?}");
        for r in &rows[..6] {
            assert_eq!(r["actor"], license.email.as_str());
            assert_eq!(r["client_ip"], "127.0.0.1");
        }
        assert_eq!(rows[2]["target"], "web");
        assert_eq!(rows[2]["after"], "min score 70");
        assert_eq!(rows[4]["before"], "member");
        assert_eq!(rows[4]["after"], "admin");
        assert_eq!(rows[3]["after"].as_str().unwrap().matches("svc_api_").count(), 1);
        assert!(!log.to_string().contains("bdg_"), "never a badge token");
        let actors: Vec<&str> = log["actors"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
        assert!(actors.contains(&license.email.as_str()));

        let only: Value = admin
            .post_form("/api/audit", &[("action", "member.added")])
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(only["rows"].as_array().unwrap().len(), 2);
        let paged: Value = admin.post_form("/api/audit", &[("page", "1")]).await.json().await.unwrap();
        assert_eq!(paged["rows"].as_array().unwrap().len(), 0);
        assert_eq!(paged["has_more"], false);
        let res = admin.post_form("/api/audit", &[("action", "keys.stolen")]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

        // Another account's log holds none of it; a member may not read the log at all.
        let theirs = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery {
            account_id: Some(other.account_id.clone()),
            limit: 100,
            ..Default::default()
        }).await.unwrap();
        assert_eq!(theirs.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["license.created"]);
        let mut reader = app.signed_in(&provider, "reader@example.com").await;
        assert_eq!(reader.post_form("/api/audit", &[]).await.status(), StatusCode::FORBIDDEN);
        let page = reader.get(&app.url("/settings/audit")).await.text().await.unwrap();
        assert!(page.contains("Only an admin"), "the page says why");
    }
}
