//! E-mail alerts end to end, on both databases: members choose in Settings what mails them,
//! pushes that fail a gate or lower the score queue one message per push and person, and the
//! mail reaches a real SMTP server.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::receiver::Receiver;
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
            json!({"email": "dev@example.com", "gate_failed": false, "score_regressed": false,
                   "posture_drifted": false, "key_expiring": true, "is_admin": false,
                   "drift_detection": true})
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

/// The sample push with the web instance's and the logs bucket's statuses, on `branch`.
fn drift_scan(web: &str, logs: &str, at: &str, branch: &str) -> Value {
    let mut body = sample_push("web", 80.0, at);
    body["findings"][0]["status"] = json!(web);
    body["findings"][1]["status"] = json!(logs);
    body["git"] = json!({"branch": branch, "default_branch": "main"});
    body
}

tidemark_store::test_each_backend! {
    /// Issue 47: a requirement that passed in the default branch's previous scan and fails
    /// now is drift: one `posture.drifted` webhook event and one alert mail per push, naming
    /// what drifted; none for a replay, a requirement that was already failing, another
    /// branch, or a licence without drift detection.
    async fn drift_is_sent_once_to_webhooks_and_mail(backend) {
        let sink = SmtpSink::start_anywhere();
        let receiver = Receiver::start().await;
        let (app, provider) = TestApp::spawn_with_oidc_and(backend, &[
            ("TIDEMARK_SMTP_URL", &sink.url()),
            ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
        ]).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let res = admin.post_form("/api/save_alerts", &[("posture_drifted", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let prefs: Value = admin.post_form("/api/alerts", &[]).await.json().await.unwrap();
        assert_eq!((prefs["posture_drifted"].as_bool(), prefs["drift_detection"].as_bool()), (Some(true), Some(true)));
        let url = format!("{}/hooks/drift", receiver.base);
        let res = admin.post_form("/api/create_webhook", &[("url", &url), ("posture_drifted", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK);

        app.push_json(&key, &drift_scan("PASS", "PASS", "2026-11-20T10:00:00Z", "main")).await;
        let drifted = app.push_json(&key, &drift_scan("FAIL", "PASS", "2026-11-20T11:00:00Z", "main")).await;
        let got = receiver.wait_for(1).await;
        let body = got[0].json();
        assert_eq!(body["type"], "posture.drifted", "{body}");
        assert_eq!(body["scan"]["scan_id"], drifted["scan_id"]);
        assert_eq!(body["scan"]["drifted"], json!([{"framework": "cis-gcp-2.0", "requirements": ["cis-gcp-2.0-4.1"]}]));
        let messages = exactly(&sink, 1).await;
        assert_eq!(messages[0].to, license.email);
        assert_eq!(messages[0].subject, "web: compliance drift (1 requirement passed before and fails now)");
        assert!(messages[0].text.contains("    - cis-gcp-2.0: cis-gcp-2.0-4.1"), "{}", messages[0].text);

        // Sent once: the same push again is a replay; still failing is no new drift; a
        // feature branch's drift is its own.
        app.push_json(&key, &drift_scan("FAIL", "PASS", "2026-11-20T11:00:00Z", "main")).await;
        app.push_json(&key, &drift_scan("FAIL", "PASS", "2026-11-20T12:00:00Z", "main")).await;
        app.push_json(&key, &drift_scan("PASS", "PASS", "2026-11-20T12:00:00Z", "feature")).await;
        app.push_json(&key, &drift_scan("FAIL", "PASS", "2026-11-20T13:00:00Z", "feature")).await;
        exactly(&sink, 1).await;
        assert_eq!(receiver.received().len(), 1, "one event");
        assert_eq!(app.count("scans WHERE drifted IS NOT NULL").await, 2, "the branch's scan keeps its drift too");

        // A licence without drift detection (an operator's override): drift is not kept and
        // raises nothing.
        let account = license.account_id.clone();
        tidemark_store::on_db_write!(&app.db, pool => {
            sqlx::query("UPDATE licenses SET features_removed = 'drift_detection' WHERE account_id = $1")
                .bind(account.as_str()).execute(pool).await.map(drop)
        }).unwrap();
        app.push_json(&key, &drift_scan("PASS", "PASS", "2026-11-20T14:00:00Z", "main")).await;
        app.push_json(&key, &drift_scan("FAIL", "PASS", "2026-11-20T15:00:00Z", "main")).await;
        exactly(&sink, 1).await;
        assert_eq!(receiver.received().len(), 1);
        assert_eq!(app.count("scans WHERE drifted IS NOT NULL").await, 2, "{backend:?}");
        let prefs: Value = admin.post_form("/api/alerts", &[]).await.json().await.unwrap();
        assert_eq!(prefs["drift_detection"], false, "the choice is not offered");
    }
}
