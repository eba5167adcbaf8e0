//! Tracked findings, triage and gates through `/v1` and the `tidemark` command, on both
//! databases: listing with states and filters, triage with a reason and expiry (and its
//! refusals), the SARIF export's suppressions (validated against the OASIS schema), gates
//! read and set as code, and another account getting nothing.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::cli_client::{env, tidemark};
use crate::common::{assert_error, sample_push, TestApp};
use crate::exports::sarif_validator;

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

async fn call(
    app: &TestApp,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = app
        .client
        .request(method, app.url(path))
        .header("X-API-Key", key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap()
}

async fn get_json(app: &TestApp, key: &str, path: &str) -> Value {
    let res = call(app, reqwest::Method::GET, key, path, None).await;
    assert_eq!(res.status(), StatusCode::OK, "GET {path}");
    res.json().await.unwrap()
}

tidemark_store::test_each_backend! {
    async fn findings_are_listed_triaged_and_exported_with_their_triage(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &sample_push("payments api", 70.0, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let scan = pushed["scan_id"].as_str().unwrap().to_owned();
        let list = format!("/v1/projects/{project}/findings");

        let page = get_json(&app, &key, &list).await;
        let findings = page["findings"].as_array().unwrap();
        // A branch with no line is not found; the project's default is also its named branch.
        let res = call(&app, reqwest::Method::GET, &key, &format!("{list}?branch=nope"), None).await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        assert_eq!(findings.len(), 2);
        assert_eq!(page["next_cursor"], Value::Null);
        // Most severe first.
        assert_eq!((findings[0]["severity"].as_str(), findings[1]["severity"].as_str()), (Some("high"), Some("medium")));
        assert_eq!(findings[0]["state"], "open");
        assert_eq!(findings[0]["first_seen_scan_id"], scan.as_str());
        assert_eq!(findings[0]["first_seen_at"], "2026-11-20T10:00:00Z");
        assert_eq!(findings[0]["triage"], Value::Null);
        let medium = findings[1]["id"].as_str().unwrap().to_owned();
        // The label names the project too (percent-encoded).
        let by_label = get_json(&app, &key, "/v1/projects/payments%20api/findings?limit=1").await;
        assert_eq!(by_label["findings"].as_array().unwrap().len(), 1);
        // The cursor goes on from the last finding given; the last page gives none (no
        // cursor to an empty page).
        let cursor = by_label["next_cursor"].as_str().unwrap().to_owned();
        let rest = get_json(&app, &key, &format!("/v1/projects/payments%20api/findings?limit=1&cursor={cursor}")).await;
        assert_eq!(rest["findings"][0]["id"].as_str(), Some(medium.as_str()));
        assert_eq!(rest["next_cursor"], Value::Null);

        // Triage: reason and expiry; the answer is the finding, triaged by the key.
        let triage = format!("{list}/{medium}/triage");
        let res = call(&app, reqwest::Method::PUT, &key, &triage, Some(json!({
            "state": "accepted_risk", "reason": "Logs bucket: versioning is not needed",
            "expires_at": "2099-01-01"
        }))).await;
        assert_eq!(res.status(), StatusCode::OK);
        let triaged: Value = res.json().await.unwrap();
        assert_eq!(triaged["state"], "triaged");
        assert_eq!(triaged["triage"]["state"], "accepted_risk");
        assert_eq!(triaged["triage"]["expires_at"], "2099-01-01T00:00:00Z");
        assert!(triaged["triage"]["by"].as_str().unwrap().starts_with("api-key:svc_api_"), "{triaged}");
        let only_triaged = get_json(&app, &key, &format!("{list}?state=triaged")).await;
        assert_eq!(only_triaged["findings"].as_array().unwrap().len(), 1);
        assert_eq!(get_json(&app, &key, &format!("{list}?state=open&severity=high")).await["findings"].as_array().unwrap().len(), 1);
        assert_eq!(app.count("finding_triage_events").await, 1);

        // Refusals change nothing.
        for (body, why) in [
            (json!({"state": "accepted_risk", "reason": "  "}), "reason"),
            (json!({"state": "accepted_risk", "reason": "r", "expires_at": "2001-01-01"}), "future"),
            (json!({"state": "ignored", "reason": "r"}), "state"),
            (json!({"state": "wont_fix", "reason": "r", "until": "2099-01-01"}), "until"),
            (json!({"state": "wont_fix", "reason": "r", "expires_at": ""}), "leave it out"),
        ] {
            let res = call(&app, reqwest::Method::PUT, &key, &triage, Some(body)).await;
            let message = assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
            assert!(message.contains(why), "{message}");
        }
        let res = app.client.put(app.url(&triage)).header("X-API-Key", &key)
            .header("Content-Type", "application/json").body("{").send().await.unwrap();
        assert_error(res, StatusCode::BAD_REQUEST, "invalid_json").await;
        let res = app.client.put(app.url(&triage)).header("X-API-Key", &key).body("state=x").send().await.unwrap();
        assert_error(res, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        for query in ["state=closed", "severity=urgent", "limit=0", "limit=501", "cursor=-1", "cursor=x", "cursor=999999", "cursor=400", "branch=a%00b"] {
            let res = call(&app, reqwest::Method::GET, &key, &format!("{list}?{query}"), None).await;
            assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        }
        assert_eq!(app.count("finding_triage_events").await, 1);

        // The SARIF export carries the triage as an accepted external suppression.
        let sarif: Value = get_json(&app, &key, &format!("/v1/projects/{project}/scans/{scan}/findings.sarif")).await;
        let errors: Vec<String> = sarif_validator().iter_errors(&sarif).map(|e| format!("{e} at {}", e.instance_path())).collect();
        assert!(errors.is_empty(), "not SARIF 2.1.0: {errors:#?}");
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        let suppressed: Vec<&Value> = results.iter().filter(|r| r.get("suppressions").is_some()).collect();
        assert_eq!(suppressed.len(), 1);
        assert_eq!(suppressed[0]["ruleId"], "soc2-cc6.1");
        assert_eq!(suppressed[0]["suppressions"], json!([{
            "kind": "external", "status": "accepted",
            "justification": "Accepted risk (until 2099-01-01): Logs bucket: versioning is not needed"
        }]));

        // The next scan that still has it shows it triaged.
        app.push_json(&key, &sample_push("payments api", 71.0, "2026-11-21T10:00:00Z")).await;
        let one = get_json(&app, &key, &format!("{list}/{medium}")).await;
        assert_eq!((one["state"].as_str(), one["last_seen_at"].as_str()), (Some("triaged"), Some("2026-11-21T10:00:00Z")));

        // Another account, unknown and malformed ids: 404 alike; no key: 401.
        for path in [list.clone(), format!("{list}/{medium}"), format!("{list}/fnd_nope"), format!("{list}/..%2F"),
                     "/v1/projects/prj_aaaaaaaaaaaaaaaaaaaa/findings".into()] {
            let res = call(&app, reqwest::Method::GET, &other_key, &path, None).await;
            assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        }
        let res = call(&app, reqwest::Method::DELETE, &other_key, &triage, None).await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        let res = app.client.get(app.url(&list)).send().await.unwrap();
        assert_error(res, StatusCode::UNAUTHORIZED, "missing_api_key").await;

        // Undone: open again, and no suppression in the export.
        let res = call(&app, reqwest::Method::DELETE, &key, &triage, None).await;
        assert_eq!(res.status(), StatusCode::OK);
        let undone: Value = res.json().await.unwrap();
        assert_eq!((undone["state"].as_str(), &undone["triage"]), (Some("open"), &Value::Null));
        let sarif: Value = get_json(&app, &key, &format!("/v1/projects/{project}/scans/{scan}/findings.sarif")).await;
        assert!(sarif["runs"][0]["results"].as_array().unwrap().iter().all(|r| r.get("suppressions").is_none()));
        assert_eq!(app.count("finding_triage_events").await, 2);
        // Undone again, with nothing to undo: answered as it is, and no event (issue 44).
        let undone_events = "audit_events WHERE action = 'finding.triage_undone'";
        assert_eq!(app.count(undone_events).await, 1);
        let res = call(&app, reqwest::Method::DELETE, &key, &triage, None).await;
        assert_eq!(res.status(), StatusCode::OK);
        let again: Value = res.json().await.unwrap();
        assert_eq!((again["state"].as_str(), &again["triage"]), (Some("open"), &Value::Null));
        assert_eq!(app.count("finding_triage_events").await, 2);
        assert_eq!(app.count(undone_events).await, 1);
    }
}

tidemark_store::test_each_backend! {
    async fn a_gate_is_read_and_set_as_code(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &sample_push("api", 90.0, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let gate = format!("/v1/projects/{project}/gate");
        assert_eq!(get_json(&app, &key, &gate).await, json!({"min_score": null, "max_drop": null, "new_findings_at": null}));

        let res = call(&app, reqwest::Method::PUT, &key, &gate, Some(json!({"min_score": 80, "new_findings_at": "high"}))).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.json::<Value>().await.unwrap(), json!({"min_score": 80.0, "max_drop": null, "new_findings_at": "high"}));
        let verdict = app.push_json(&key, &sample_push("api", 70.0, "2026-11-21T10:00:00Z")).await;
        assert_eq!(verdict["gate"]["status"], "failed");

        for body in [json!({"min_score": 101}), json!({"min_scor": 1}), json!({"new_findings_at": "urgent"}), json!({"max_drop": -1})] {
            let res = call(&app, reqwest::Method::PUT, &key, &gate, Some(body)).await;
            assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        }
        assert_eq!(get_json(&app, &key, &gate).await["min_score"], 80.0);
        let res = call(&app, reqwest::Method::PUT, &other_key, &gate, Some(json!({}))).await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        let res = call(&app, reqwest::Method::GET, &other_key, &gate, None).await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;

        // The command line: set by label, read back, then removed.
        let config = tempfile::tempdir().unwrap();
        let e = env(&app.base_url, config.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], Utc::now());
        let r = tidemark(&e, &["gate", "set", "api", "--min-score", "75", "--max-drop", "5"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert_eq!(r.out.trim(), "Gate: score at least 75; a drop of at most 5 points.");
        let r = tidemark(&e, &["gate", "get", &project, "--json"]).await;
        assert_eq!(serde_json::from_str::<Value>(&r.out).unwrap(), json!({"min_score": 75.0, "max_drop": 5.0, "new_findings_at": null}));
        let r = tidemark(&e, &["gate", "set", "api"]).await;
        assert_eq!(r.out.trim(), "No gate: every push passes, whatever its score.");
        assert_eq!(get_json(&app, &key, &gate).await["min_score"], Value::Null);
        let r = tidemark(&e, &["gate", "get", "no-such-project"]).await;
        assert_eq!(r.status, 1, "{:?}", r.code);

        // Findings from the command line: listed, triaged, undone.
        let r = tidemark(&e, &["findings", "list", "api"]).await;
        assert_eq!(r.code, Ok(0));
        let lines: Vec<&str> = r.out.lines().collect();
        assert!(lines[0].starts_with("SEVERITY  STATE"), "{}", r.out);
        assert_eq!(lines.len(), 3, "{}", r.out);
        assert!(lines[1].starts_with("high      open"), "{}", r.out);
        let id = lines[1].split_whitespace().nth(4).unwrap().to_owned();
        let r = tidemark(&e, &["findings", "triage", "api", &id, "--state", "false_positive", "--reason", "Dev-only instance", "--expires", "2099-03-01"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert!(r.out.contains("False positive until 2099-03-01"), "{}", r.out);
        let r = tidemark(&e, &["findings", "list", "api", "--state", "triaged", "--json"]).await;
        let rows: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(rows[0]["id"], id.as_str());
        assert_eq!(rows[0]["triage"]["reason"], "Dev-only instance");
        let r = tidemark(&e, &["findings", "triage", "api", &id, "--undo"]).await;
        assert!(r.out.contains("open again"), "{}", r.out);
        let r = tidemark(&e, &["findings", "triage", "api", &id, "--state", "wont_fix", "--reason", " "]).await;
        assert_eq!(r.status, 1);
        assert!(r.code.unwrap_err().contains("reason"));
    }
}

tidemark_store::test_each_backend! {
    async fn the_finding_page_triages_for_its_own_account_and_by_role(backend) {
        use crate::common::browser::location;
        use tidemark_domain::access::Role;
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (stranger_license, _) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;
        let pushed = app.push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let page = get_json(&app, &key, &format!("/v1/projects/{project}/findings")).await;
        let id = page["findings"][0]["id"].as_str().unwrap().to_owned();
        let finding_page = format!("/projects/{project}/findings/{id}");
        let triage = format!("{finding_page}/triage");
        let set = |reason: &'static str, expires: &'static str| {
            [("action", "set"), ("state", "wont_fix"), ("reason", reason), ("expires", expires)]
        };

        // A member triages; then may not overrule that triage, nor undo it.
        let mut dev = app.signed_in(&provider, "dev@example.com").await;
        let res = dev.post_form(&triage, &set("Legacy instance", "")).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&res), format!("{finding_page}?triage=saved"));
        for form in [set("Another view", "").to_vec(), vec![("action", "undo")]] {
            let res = dev.post_form(&triage, &form).await;
            assert_eq!(location(&res), format!("{finding_page}?triage=forbidden"));
        }
        // Where the refusal lands answers as one: 403, the page saying why (issue 44).
        let refused = dev.get(&app.url(&format!("{finding_page}?triage=forbidden"))).await;
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert!(refused.text().await.unwrap().contains("only an admin can change or undo"));
        let shown = dev.get(&app.url(&finding_page)).await;
        assert_eq!(shown.status(), StatusCode::OK);
        let html = shown.text().await.unwrap();
        assert!(html.contains("Won&#x27;t fix") || html.contains("Won't fix"), "the page shows the triage");
        assert!(html.contains("An admin can change or undo this triage."));

        // The admin's bad inputs change nothing; the admin undoes it.
        let mut admin = app.signed_in(&provider, &license.email).await;
        for (form, code) in [(set("   ", ""), "reason"), (set("r", "2001-01-01"), "expiry")] {
            let res = admin.post_form(&triage, &form).await;
            assert_eq!(location(&res), format!("{finding_page}?triage={code}"));
            let page = admin.get(&app.url(&location(&res))).await;
            assert_eq!(page.status(), StatusCode::UNPROCESSABLE_ENTITY, "{code}");
        }
        let res = admin.post_form(&triage, &[("action", "retract")]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(app.count("finding_triage_events").await, 1);
        let res = admin.post_form(&triage, &[("action", "undo")]).await;
        assert_eq!(location(&res), format!("{finding_page}?triage=undone"));
        assert_eq!(app.count("finding_triage_events").await, 2);

        // Another account's admin finds neither the page nor the form; nobody signed in is refused.
        let mut stranger = app.signed_in(&provider, &stranger_license.email).await;
        assert_eq!(stranger.get(&app.url(&finding_page)).await.status(), StatusCode::NOT_FOUND);
        let res = stranger.post_form(&triage, &set("mine now", "")).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let res = app.client.post(app.url(&triage)).header("Origin", app.base_url.as_str())
            .form(&set("anyone", "")).send().await.unwrap();
        assert!(matches!(res.status(), StatusCode::UNAUTHORIZED | StatusCode::SEE_OTHER), "{}", res.status());
        assert_eq!(app.count("finding_triage_events").await, 2);
    }
}

tidemark_store::test_each_backend! {
    /// Issue 45: one triage for several findings, by `/v1`, the command line and the scan
    /// page's ticked rows: all or nothing, each finding its own history entry, and on the page
    /// the same rules as one at a time (a member sets aside, an admin replaces).
    async fn several_findings_are_triaged_at_once_by_the_api_the_cli_and_the_scan_page(backend) {
        use crate::common::browser::location;
        use tidemark_domain::access::Role;
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;
        let pushed = app.push_json(&key, &sample_push("api", 70.0, "2026-11-20T10:00:00Z")).await;
        let (project, scan) = (pushed["project_id"].as_str().unwrap().to_owned(), pushed["scan_id"].as_str().unwrap().to_owned());
        let page = get_json(&app, &key, &format!("/v1/projects/{project}/findings")).await;
        let (a, b) = (page["findings"][0]["id"].as_str().unwrap().to_owned(), page["findings"][1]["id"].as_str().unwrap().to_owned());
        let batch = format!("/v1/projects/{project}/findings/triage");
        let body = |ids: Value| json!({"finding_ids": ids, "state": "accepted_risk", "reason": "Sandbox account", "expires_at": "2099-01-01"});

        // Refused as a whole: an id that is not the project's (404 naming it), none, too many,
        // not ids, a bad reason or field; another account's key finds no project.
        let res = call(&app, reqwest::Method::POST, &key, &batch, Some(body(json!([a, "fnd_nosuchfinding", b])))).await;
        let message = assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        assert!(message.contains("fnd_nosuchfinding"), "{message}");
        let many: Vec<String> = (0..101).map(|i| format!("fnd_{i}")).collect();
        for (sent, why) in [
            (body(json!([])), "at least one"),
            (body(json!(many)), "at most 100"),
            (body(json!([a, "x"])), "not a finding id"),
            (json!({"finding_ids": [a], "state": "accepted_risk", "reason": " "}), "reason"),
            (json!({"finding_ids": [a], "state": "accepted_risk", "reason": "r", "note": 1}), "note"),
        ] {
            let res = call(&app, reqwest::Method::POST, &key, &batch, Some(sent)).await;
            let message = assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
            assert!(message.contains(why), "{why}: {message}");
        }
        let res = call(&app, reqwest::Method::POST, &other_key, &batch, Some(body(json!([a])))).await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        assert_eq!(app.count("finding_triage_events").await, 0);

        // Done: each once, in the order named, each with its own history entry.
        let res = call(&app, reqwest::Method::POST, &key, &batch, Some(body(json!([b, a, b])))).await;
        assert_eq!(res.status(), StatusCode::OK);
        let done: Value = res.json().await.unwrap();
        let ids: Vec<&str> = done["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids, vec![b.as_str(), a.as_str()]);
        assert!(done["findings"].as_array().unwrap().iter().all(|f| f["state"] == "triaged" && f["triage"]["reason"] == "Sandbox account"));
        assert_eq!(app.count("finding_triage_events").await, 2);

        // The command line: several ids undone, then triaged as one request.
        let config = tempfile::tempdir().unwrap();
        let e = env(&app.base_url, config.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], Utc::now());
        let r = tidemark(&e, &["findings", "triage", "api", &a, &b, "--undo"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert_eq!(r.out.matches("open again").count(), 2, "{}", r.out);
        let r = tidemark(&e, &["findings", "triage", "api", &a, &b, "--state", "wont_fix", "--reason", "Legacy", "--json"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        let rows: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(rows.as_array().unwrap().len(), 2);
        assert!(rows.as_array().unwrap().iter().all(|f| f["triage"]["state"] == "wont_fix"));
        let r = tidemark(&e, &["findings", "triage", "api", &a, "fnd_nosuchfinding", "--state", "wont_fix", "--reason", "x"]).await;
        assert_eq!(r.status, 1);
        assert_eq!(app.count("finding_triage_events").await, 6);
        let r = tidemark(&e, &["findings", "triage", "api", &a, &b, "--undo"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);

        // The scan page: each open finding has a box, and the form triages the ticked ones.
        let scan_page = format!("/projects/{project}/scans/{scan}");
        let form = format!("/projects/{project}/findings/triage");
        let mut dev = app.signed_in(&provider, "dev@example.com").await;
        let html = dev.get(&app.url(&format!("{scan_page}?view=all"))).await.text().await.unwrap();
        assert_eq!(html.matches(r#"name="finding""#).count(), 2, "a box per open finding");
        assert!(html.contains("data-select-all"), "select all on this page");
        let ticked = |reason: &'static str| {
            vec![("finding", a.clone()), ("finding", b.clone()), ("state", "accepted_risk".to_owned()),
                 ("reason", reason.to_owned()), ("expires", String::new()), ("scan_id", scan.clone()), ("view", "all".to_owned())]
        };
        let res = post_pairs(&mut dev, &form, ticked("Reviewed together")).await;
        assert_eq!(location(&res), format!("{scan_page}?view=all&triage=saved&count=2&skipped=0&state=accepted_risk"));
        let done = dev.get(&app.url(&location(&res))).await;
        assert_eq!(done.status(), StatusCode::OK);
        assert!(done.text().await.unwrap().contains("Triaged 2 findings"));
        assert_eq!(app.count("finding_triage_events").await, 10);
        // A member may not replace what holds: both skipped, the page answers 403.
        let res = post_pairs(&mut dev, &form, ticked("My view instead")).await;
        assert_eq!(location(&res), format!("{scan_page}?view=all&triage=forbidden&count=0&skipped=2"));
        assert_eq!(dev.get(&app.url(&location(&res))).await.status(), StatusCode::FORBIDDEN);
        // A blank reason and nothing ticked change nothing either.
        let res = post_pairs(&mut dev, &form, ticked(" ")).await;
        assert_eq!(location(&res), format!("{scan_page}?view=all&triage=reason"));
        let res = post_pairs(&mut dev, &form, vec![("state", "wont_fix".into()), ("reason", "x".into()), ("scan_id", scan.clone())]).await;
        assert_eq!(location(&res), format!("{scan_page}?view=all&triage=none"));
        assert_eq!(app.count("finding_triage_events").await, 10);
        // The admin replaces both.
        let mut admin = app.signed_in(&provider, &license.email).await;
        let res = post_pairs(&mut admin, &form, ticked("Admin decision")).await;
        assert_eq!(location(&res), format!("{scan_page}?view=all&triage=saved&count=2&skipped=0&state=accepted_risk"));
        assert_eq!(app.count("finding_triage_events").await, 12);
        // What the page then says is true of what was done: which state, and nothing about
        // the gate and new findings (none of these had to be new).
        let said = admin.get(&app.url(&location(&res))).await.text().await.unwrap();
        assert!(said.contains("Triaged 2 findings as accepted risk"), "{said}");
        assert!(!said.contains("no longer counts them as new"));
        // Each finding's life tells every triage of the batch, with who and why.
        let page = admin.get(&app.url(&format!("/projects/{project}/findings/{a}"))).await.text().await.unwrap();
        let triaged = page.matches(r#"data-kind="triaged""#).count();
        assert!(triaged >= 3, "{triaged} triage entries in the life: {page}");
        assert!(page.contains("Admin decision") && page.contains(&license.email), "{page}");
        // A finding of another project is no finding of this one: nothing changes.
        let res = post_pairs(&mut admin, &form, vec![("finding", "fnd_nosuchfinding".into()), ("state", "wont_fix".into()), ("reason", "x".into()), ("scan_id", scan.clone())]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_eq!(app.count("finding_triage_events").await, 12);
        // Another account's admin, naming this project's findings, changes nothing either.
        let (stranger, _) = app.with_key(Tier::Team).await;
        let mut stranger = app.signed_in(&provider, &stranger.email).await;
        let res = post_pairs(&mut stranger, &form, ticked("Mine now")).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_eq!(app.count("finding_triage_events").await, 12);
    }
}

/// A form whose fields repeat (`finding`), as a browser sends it.
async fn post_pairs(
    browser: &mut crate::common::browser::Browser,
    path: &str,
    pairs: Vec<(&'static str, String)>,
) -> reqwest::Response {
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    browser.post_form(path, &refs).await
}

/// Issue 44: a `/v1` 404 says what was not found; "No such endpoint" is only for paths the API
/// does not have.
#[tokio::test]
async fn a_404_names_what_was_not_found() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_license, key) = app.with_key(Tier::Team).await;
    let pushed = app
        .push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
        .await;
    let project = pushed["project_id"].as_str().unwrap().to_owned();
    let missing = |path: String| {
        let (app, key) = (&app, &key);
        async move {
            let res = call(app, reqwest::Method::GET, key, &path, None).await;
            let message = assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
            assert!(!message.contains("No such endpoint"), "{path}: {message}");
            message
        }
    };
    let base = format!("/v1/projects/{project}/findings");
    assert_eq!(
        missing(format!("{base}/fnd_nothere")).await,
        format!("No finding \"fnd_nothere\" in project \"{project}\".")
    );
    assert_eq!(
        missing(format!("{base}?branch=nope")).await,
        format!("Project \"{project}\" has no branch \"nope\".")
    );
    assert_eq!(
        missing("/v1/projects/no-such-label/findings".into()).await,
        "No project \"no-such-label\" in this account."
    );
    assert_eq!(
        missing("/v1/projects/prj_aaaaaaaaaaaaaaaaaaaa/gate".into()).await,
        "No project \"prj_aaaaaaaaaaaaaaaaaaaa\" in this account."
    );
    assert_eq!(
        missing(format!(
            "/v1/projects/{project}/scans/20990101-000000-x/findings.csv"
        ))
        .await,
        format!("No scan \"20990101-000000-x\" in project \"{project}\".")
    );
    let res = call(&app, reqwest::Method::GET, &key, "/v1/nothing/here", None).await;
    let message = assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
    assert_eq!(
        message,
        "No such endpoint. See /v1/openapi.json for the API."
    );
}

/// A push of `findings` (rule id, resource, severity), all failing, on the default branch.
fn push_of(label: &str, at: &str, findings: &[(String, String, &str)]) -> Value {
    let mut body = sample_push(label, 60.0, at);
    body["findings"] = findings
        .iter()
        .map(|(rule, resource, severity)| {
            json!({"rule_id": rule, "resource": resource, "status": "FAIL", "severity": severity,
                   "message": "m", "remediation": "r"})
        })
        .collect();
    body
}

tidemark_store::test_each_backend! {
    /// Issue 44: walking a project's findings page by page while pushes fix some of the first
    /// page and add more severe ones returns every finding open throughout exactly once: the
    /// cursor is a key, not a count of rows.
    async fn a_walk_over_pages_returns_each_finding_once_whatever_lands_between(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Team).await;
        let finding = |i: usize, severity: &'static str| (format!("rule-{i:04}"), format!("res-{i:04}"), severity);
        let first: Vec<_> = (0..300).map(|i| finding(i, ["high", "medium", "low"][i / 100])).collect();
        let pushed = app.push_json(&key, &push_of("walk", "2026-11-20T10:00:00Z", &first)).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let list = format!("/v1/projects/{project}/findings?state=open&limit=100");

        let mut seen: Vec<String> = Vec::new();
        let mut ids_by_rule = std::collections::HashMap::new();
        let page = get_json(&app, &key, &list).await;
        let mut cursor = page["next_cursor"].as_str().map(str::to_owned);
        for f in page["findings"].as_array().unwrap() {
            seen.push(f["rule_id"].as_str().unwrap().to_owned());
            ids_by_rule.insert(f["rule_id"].as_str().unwrap().to_owned(), f["id"].as_str().unwrap().to_owned());
        }
        assert_eq!(seen.len(), 100);
        // Between pages: a push fixes 30 of the first page (they are gone from it) and adds 20
        // criticals, which sort before everything already given; then another adds 20 highs.
        let mut second: Vec<_> = first.iter().skip(30).cloned().collect();
        second.extend((1000..1020).map(|i| finding(i, "critical")));
        app.push_json(&key, &push_of("walk", "2026-11-20T11:00:00Z", &second)).await;
        let mut pages = 1;
        while let Some(c) = cursor.take() {
            let page = get_json(&app, &key, &format!("{list}&cursor={c}")).await;
            let findings = page["findings"].as_array().unwrap();
            assert!(!findings.is_empty(), "a cursor led to an empty page");
            seen.extend(findings.iter().map(|f| f["rule_id"].as_str().unwrap().to_owned()));
            cursor = page["next_cursor"].as_str().map(str::to_owned);
            pages += 1;
            if pages == 2 {
                let mut third = second.clone();
                third.extend((2000..2020).map(|i| finding(i, "high")));
                app.push_json(&key, &push_of("walk", "2026-11-20T12:00:00Z", &third)).await;
            }
        }
        let unique: std::collections::HashSet<&String> = seen.iter().collect();
        assert_eq!(unique.len(), seen.len(), "{backend:?}: a finding was given twice");
        // Every finding open throughout (the 270 of the first push that no push fixed).
        for (rule, _, _) in first.iter().skip(30) {
            assert!(unique.contains(rule), "{backend:?}: {rule} was skipped");
        }
        // The first page's findings kept their ids; the walk ended on a full or partial page,
        // never an empty one.
        assert_eq!(ids_by_rule.len(), 100);
        assert!(pages >= 3, "{pages}");
    }
}
