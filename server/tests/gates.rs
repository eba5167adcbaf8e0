//! Quality gates end to end: an admin sets one through the dashboard's server function, and
//! every push answers with its verdict, on both databases.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::browser::location;
use common::{sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_store::Backend;
use tidemark_wire::Tier;

tidemark_store::test_each_backend! {
    async fn an_admins_gate_judges_the_next_pushes_and_a_replay_repeats_the_verdict(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let first = app.push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        assert_eq!(first["gate"], json!({"status": "none", "reasons": []}));
        let project = first["project_id"].as_str().unwrap().to_owned();
        let theirs = app.push_json(&other_key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;

        let mut admin = app.signed_in(&provider, &license.email).await;
        let set = |project: &str, min: &str, drop: &str, severity: &str| {
            vec![
                ("project_id", project.to_owned()),
                ("min_score", min.to_owned()),
                ("max_drop", drop.to_owned()),
                ("new_findings_at", severity.to_owned()),
            ]
        };
        let form = set(&project, "eighty", "", "");
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let res = admin.post_form("/api/set_project_gate", &form).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(res.text().await.unwrap().contains("minimum score must be a number"));

        let form = set(theirs["project_id"].as_str().unwrap(), "99", "", "");
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let res = admin.post_form("/api/set_project_gate", &form).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "another account's project");

        let form = set(&project, "75", "3", "high");
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let res = admin.post_form("/api/set_project_gate", &form).await;
        assert_eq!(res.status(), StatusCode::OK);

        // A drop of 4 fails; the same push again is a replay with the same verdict.
        let falling = sample_push("web", 76.0, "2026-11-20T11:00:00Z");
        let failed = app.push_json(&key, &falling).await;
        assert_eq!(failed["gate"], json!({
            "status": "failed",
            "reasons": ["score dropped 4 points since the previous scan; the gate allows at most 3"],
        }));
        let again = app.push_json(&key, &falling).await;
        assert_eq!(again, failed);

        // A new high finding fails; a medium one would not.
        let mut worse = sample_push("web", 77.0, "2026-11-20T12:00:00Z");
        worse["findings"].as_array_mut().unwrap().push(json!({
            "rule_id": "cis-gcp-2.0-9.9", "resource": "google_sql_database_instance.main",
            "status": "WARN", "severity": "critical", "message": "m", "remediation": "r"}));
        let failed = app.push_json(&key, &worse).await;
        assert_eq!(failed["gate"]["reasons"], json!([
            "1 new open finding at high severity or above; the gate allows none"
        ]));
        let passed = app.push_json(&key, &sample_push("web", 78.0, "2026-11-20T13:00:00Z")).await;
        assert_eq!(passed["gate"], json!({"status": "passed", "reasons": []}));

        // The project page shows the gate and each scan's verdict.
        let chart: Value = admin
            .post_form("/api/project_chart", &[("project_id", project.as_str()), ("range", "All")])
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(chart["gate"], json!({"min_score": 75.0, "max_drop": 3.0, "new_findings_at": "high"}));
        let verdicts: Vec<&str> = chart["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["gate"].as_str().unwrap())
            .collect();
        assert_eq!(verdicts, ["none", "failed", "failed", "passed"]);

        // All fields blank removes the gate.
        let form = set(&project, "", "", "");
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(admin.post_form("/api/set_project_gate", &form).await.status(), StatusCode::OK);
        let none = app.push_json(&key, &sample_push("web", 1.0, "2026-11-20T14:00:00Z")).await;
        assert_eq!(none["gate"]["status"], "none");
    }
}

/// The project page loads no WASM: its gate form posts to the server function, which sends
/// the browser back to the same page (its range kept) saying the gate was saved, or why not.
#[tokio::test]
async fn the_project_pages_gate_form_goes_back_saying_what_happened() {
    let (app, provider) = TestApp::spawn_with_oidc(Backend::Sqlite).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let first = app
        .push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
        .await;
    let project = first["project_id"].as_str().unwrap().to_owned();
    let mut admin = app.signed_in(&provider, &license.email).await;
    let page = format!("/projects/{project}?range=all");
    let gate = |min| {
        [
            ("project_id", project.as_str()),
            ("min_score", min),
            ("max_drop", ""),
            ("new_findings_at", ""),
        ]
    };
    let bad = gate("eighty");
    let res = admin
        .submit_page_form("/api/set_project_gate", &page, &bad)
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    let refused = location(&res);
    assert!(
        refused.starts_with(&app.url(&format!("{page}&__path=%2Fapi%2Fset_project_gate&__err="))),
        "{refused}"
    );
    let page = admin.get(&refused).await;
    assert_eq!(
        page.status(),
        StatusCode::UNPROCESSABLE_ENTITY,
        "answered as a refusal"
    );
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"role="alert" class="notice error">The minimum score must be a number"#),
        "{html}"
    );
    assert!(html.contains("No gate yet"), "nothing was saved");
    // The error is shown under the server's seal only: an address anyone wrote, without the
    // seal or with other words under it, shows none.
    let (unsealed, sig) = refused.split_once("&__sig=").expect("sealed");
    let err = unsealed.split("__err=").nth(1).unwrap();
    let other_words = format!(
        "{}__err={}&__sig={sig}",
        unsealed.split("__err=").next().unwrap(),
        "A".repeat(err.len())
    );
    for crafted in [unsealed.to_owned(), other_words] {
        let page = admin.get(&crafted).await;
        assert_eq!(page.status(), StatusCode::OK, "{crafted}");
        assert!(
            !page.text().await.unwrap().contains(r#"role="alert""#),
            "{crafted}"
        );
    }

    // Sent again from the page that said why: it says saved, and the old error is gone.
    let res = admin
        .submit_page_form("/api/set_project_gate", &refused, &gate("75"))
        .await;
    assert_eq!(res.status(), StatusCode::FOUND);
    assert_eq!(
        location(&res),
        format!("/projects/{project}?range=all&done=set_project_gate")
    );
    let html = admin
        .get(&app.url(&location(&res)))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        html.contains("Saved. The next push is judged by this gate."),
        "{html}"
    );
    assert!(html.contains("score at least 75"), "{html}");
    assert!(!html.contains(r#"role="alert""#), "{html}");
}
