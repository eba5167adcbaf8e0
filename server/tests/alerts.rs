//! E-mail alerts end to end, on both databases: members choose in Settings what mails them,
//! pushes that fail a gate or lower the score queue one message per push and person, and the
//! mail reaches a real SMTP server.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::smtp::{SinkMessage, SmtpSink};
use common::{sample_push, wait_for_async, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_domain::access::Role;
use tidemark_wire::Tier;

/// Waits until the sink holds `n` messages, then a little longer to see that no more come.
async fn exactly(sink: &SmtpSink, n: usize) -> Vec<SinkMessage> {
    let got = wait_for_async(Duration::from_secs(30), || {
        let m = sink.messages();
        async move { (m.len() >= n).then_some(()) }
    })
    .await;
    assert!(
        got.is_some(),
        "expected {n} messages; the sink saw: {}",
        sink.output()
    );
    // The sender runs every 2 s at most; an extra message would be there by now.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let messages = sink.messages();
    assert_eq!(messages.len(), n, "{messages:#?}");
    messages
}

tidemark_store::test_each_backend! {
    async fn members_get_one_mail_per_push_for_the_outcomes_they_chose(backend) {
        let sink = SmtpSink::start_anywhere();
        let (app, provider) =
            TestApp::spawn_with_oidc_and(backend, &[("TIDEMARK_SMTP_URL", &sink.url())]).await;
        let (license, key) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;

        // Nobody signed in (from the dashboard's own origin): refused.
        let anonymous = reqwest::Client::new()
            .post(app.url("/api/save_alerts"))
            .header("Origin", app.base_url.as_str())
            .form(&[("gate_failed", "true")])
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);

        // The admin wants regressions; the member, gate failures (members choose for
        // themselves: the form has no account or user field).
        let mut admin = app.signed_in(&provider, &license.email).await;
        let mut dev = app.signed_in(&provider, "dev@example.com").await;
        let before: Value = dev.post_form("/api/alerts", &[]).await.json().await.unwrap();
        assert_eq!(
            before,
            json!({"email": "dev@example.com", "gate_failed": false, "score_regressed": false})
        );
        let res = admin.post_form("/api/save_alerts", &[("score_regressed", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let res = dev.post_form("/api/save_alerts", &[("gate_failed", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let res = dev.post_form("/api/save_alerts", &[("gate_failed", "maybe")]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "a value that is not a boolean");
        assert!(res.text().await.unwrap().contains("could not be read"));
        let after: Value = dev.post_form("/api/alerts", &[]).await.json().await.unwrap();
        assert_eq!(after["gate_failed"], true, "the bad request changed nothing: {after}");
        assert_eq!(after["score_regressed"], false);

        let first = app.push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let project = first["project_id"].as_str().unwrap().to_owned();
        let gate = [
            ("project_id", project.as_str()),
            ("min_score", "78"),
            ("max_drop", ""),
            ("new_findings_at", ""),
        ];
        assert_eq!(admin.post_form("/api/set_project_gate", &gate).await.status(), StatusCode::OK);
        // A rise that passes: nothing.
        app.push_json(&key, &sample_push("web", 81.0, "2026-11-20T11:00:00Z")).await;

        // Below the minimum and lower: one mail each, however many reasons.
        let failed = app.push_json(&key, &sample_push("web", 76.0, "2026-11-20T12:00:00Z")).await;
        assert_eq!(failed["gate"]["status"], "failed");
        let messages = exactly(&sink, 2).await;
        let to_dev = messages.iter().find(|m| m.to == "dev@example.com").unwrap();
        assert_eq!(to_dev.subject, "web: quality gate failed (score 76.0)");
        assert!(to_dev.text.contains("score 76 is below the gate's minimum of 78"), "{}", to_dev.text);
        assert!(to_dev.text.contains("Score:        76.0 (-5.0 since the previous scan)"), "{}", to_dev.text);
        let scan_url = format!("{}/projects/{project}/scans/{}", app.base_url, failed["scan_id"].as_str().unwrap());
        assert!(to_dev.text.contains(&scan_url), "{}", to_dev.text);
        let to_admin = messages.iter().find(|m| m.to == license.email).unwrap();
        assert_eq!(to_admin.subject, "web: quality gate failed (score 76.0)");

        // The same push again is a replay: no mail. A rise that still fails: the member only.
        app.push_json(&key, &sample_push("web", 76.0, "2026-11-20T12:00:00Z")).await;
        app.push_json(&key, &sample_push("web", 77.0, "2026-11-20T13:00:00Z")).await;
        let messages = exactly(&sink, 3).await;
        assert_eq!(messages[2].to, "dev@example.com");
        assert_eq!(messages[2].subject, "web: quality gate failed (score 77.0)");

        // Turned off (no box ticked): a drop that passes mails the admin only.
        assert_eq!(dev.post_form("/api/save_alerts", &[]).await.status(), StatusCode::OK);
        app.push_json(&key, &sample_push("web", 78.0, "2026-11-20T14:00:00Z")).await;
        app.push_json(&key, &sample_push("web", 78.5, "2026-11-20T15:00:00Z")).await;
        app.push_json(&key, &sample_push("web", 78.2, "2026-11-20T16:00:00Z")).await;
        let messages = exactly(&sink, 4).await;
        assert_eq!(messages[3].to, license.email);
        assert_eq!(messages[3].subject, "web: score dropped 0.3 points to 78.2");
        assert!(messages[3].text.contains("Quality gate: passed"), "{}", messages[3].text);
    }
}
