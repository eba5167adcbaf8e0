//! Compliance posture through `/v1` on both databases: per framework now and over time, a
//! triage moving a requirement from failed to triaged at once, drift, the query's refusals,
//! and another account getting nothing.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::cli_client::{env, tidemark};
use crate::common::{assert_error, sample_push, TestApp};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

async fn get(app: &TestApp, key: &str, path: &str) -> reqwest::Response {
    app.get_with_key(key, path).await
}

async fn get_json(app: &TestApp, key: &str, path: &str) -> Value {
    let res = get(app, key, path).await;
    assert_eq!(res.status(), StatusCode::OK, "GET {path}");
    res.json().await.unwrap()
}

/// The sample push with the instance's rule `status` on `at`.
fn scan(status: &str, at: &str) -> Value {
    let mut body = sample_push("payments api", 70.0, at);
    body["findings"][0]["status"] = json!(status);
    body
}

tidemark_store::test_each_backend! {
    async fn posture_per_framework_now_and_over_time(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let now = chrono::Utc::now();
        let at = |days_ago: i64| (now - chrono::Duration::days(days_ago)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let first = app.push_json(&key, &scan("FAIL", &at(3))).await;
        app.push_json(&key, &scan("PASS", &at(2))).await;
        let third = app.push_json(&key, &scan("FAIL", &at(1))).await;
        let project = first["project_id"].as_str().unwrap().to_owned();
        let path = format!("/v1/projects/{project}/posture");

        let posture = get_json(&app, &key, &path).await;
        assert_eq!(posture["project_id"], project.as_str());
        let frameworks = posture["frameworks"].as_array().unwrap();
        let names: Vec<&str> = frameworks.iter().map(|f| f["framework"].as_str().unwrap()).collect();
        assert_eq!(names, ["cis-gcp-2.0", "soc2"], "{backend:?}");
        let cis = &frameworks[0];
        assert_eq!(cis["current"]["scan_id"], third["scan_id"]);
        assert_eq!(cis["current"]["failed"], 1);
        assert_eq!(cis["current"]["passed"], 0);
        assert_eq!(cis["current"]["share_passing"], 0.0);
        assert_eq!(cis["sections"], json!([{"section": "4", "passed": 0, "failed": 1, "triaged": 0, "not_evaluated": 0, "share_passing": 0.0}]));
        // Failed, passed, failed again: the third scan drifted on 4.1.
        let history = cis["history"].as_array().unwrap();
        let passed: Vec<i64> = history.iter().map(|p| p["passed"].as_i64().unwrap()).collect();
        assert_eq!(passed, [0, 1, 0], "{backend:?}");
        assert_eq!(history[1]["share_passing"], 1.0);
        assert_eq!(history[2]["drifted"], json!(["cis-gcp-2.0-4.1"]));
        assert_eq!(cis["current"]["drifted"], json!(["cis-gcp-2.0-4.1"]));
        assert_eq!(history[0]["drifted"], json!([]));

        // The bucket set aside as an accepted risk: soc2's requirement is triaged now, not
        // passed; the history keeps what each scan was.
        let findings = get_json(&app, &key, &format!("/v1/projects/{project}/findings")).await;
        let bucket = findings["findings"].as_array().unwrap().iter()
            .find(|f| f["rule_id"] == "soc2-cc6.1").unwrap()["id"].as_str().unwrap().to_owned();
        let res = app.client
            .put(app.url(&format!("/v1/projects/{project}/findings/{bucket}/triage")))
            .header("X-API-Key", &key)
            .json(&json!({"state": "accepted_risk", "reason": "Logs bucket, versioning not needed"}))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let soc2 = get_json(&app, &key, &format!("{path}?framework=soc2")).await;
        let only = soc2["frameworks"].as_array().unwrap();
        assert_eq!(only.len(), 1);
        assert_eq!((only[0]["current"]["failed"].as_i64(), only[0]["current"]["triaged"].as_i64()), (Some(0), Some(1)), "{backend:?}");
        assert_eq!(only[0]["current"]["share_passing"], 0.0, "a triaged requirement is not passed");
        assert_eq!(only[0]["history"][2]["failed"], 1);

        // The range: the last 7 days hold all three; the label names the project too.
        let week = get_json(&app, &key, "/v1/projects/payments%20api/posture?range=7d").await;
        assert_eq!(week["frameworks"][0]["history"].as_array().unwrap().len(), 3);

        // Refusals, and another account.
        assert_error(get(&app, &key, &format!("{path}?range=1h")).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert_error(get(&app, &key, &format!("{path}?branch=nope")).await, StatusCode::NOT_FOUND, "not_found").await;
        assert_error(get(&app, &other_key, &path).await, StatusCode::NOT_FOUND, "not_found").await;
        let framework_nul = format!("{path}?framework=%00");
        assert_error(get(&app, &key, &framework_nul).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;

        // From the command line: a table with the share passing, its trend and the drift.
        let config = tempfile::tempdir().unwrap();
        let e = env(&app.base_url, config.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], chrono::Utc::now());
        let r = tidemark(&e, &["posture", "payments api", "--range", "7d"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        let lines: Vec<&str> = r.out.lines().collect();
        assert!(lines[0].starts_with("framework"), "{}", r.out);
        assert!(lines[1].starts_with("cis-gcp-2.0"), "{}", r.out);
        assert_eq!(lines[1].split_whitespace().skip(1).take(5).collect::<Vec<_>>(), ["0%", "0", "1", "0", "0"], "{}", r.out);
        assert!(lines[1].ends_with("0% → 0%"), "{}", r.out);
        assert_eq!(lines[2].trim(), "drifted in the latest scan: cis-gcp-2.0-4.1");
        assert!(lines[3].starts_with("soc2"), "{}", r.out);
        let r = tidemark(&e, &["posture", &project, "--framework", "soc2", "--json"]).await;
        let answer: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(answer["frameworks"][0]["current"]["triaged"], 1);
        let r = tidemark(&e, &["posture", "no-such-project"]).await;
        assert_eq!(r.status, 1, "{:?}", r.code);
    }
}
