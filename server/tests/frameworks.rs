//! Custom frameworks through `/v1` and `tidemark frameworks` on both databases: set from YAML
//! or JSON, judged at once against the latest scans and by every later push, refused without
//! the tier or in a wrong shape, audited, listed, and removed with their posture.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::cli_client::{env, tidemark};
use crate::common::{assert_error, sample_push, TestApp};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

const ACME: &str = r"title: Acme baseline
controls:
  - id: EN.1
    title: Compute runs as a dedicated identity
    rules: [cis-gcp-2.0-4.1]
  - id: EN.2
    title: Logs are kept and versioned
    rules: [soc2-cc6.1, cis-gcp-2.0-4.1]
  - id: AU.1
    title: Audit logging on
    rules: [cis-gcp-2.0-2.1]
";

async fn put(app: &TestApp, key: &str, id: &str, body: &str, media: &str) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/v1/frameworks/{id}")))
        .header("X-API-Key", key)
        .header("Content-Type", media)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

fn scan(web: &str, logs: &str, at: &str) -> Value {
    let mut body = sample_push("payments api", 70.0, at);
    body["findings"][0]["status"] = json!(web);
    body["findings"][1]["status"] = json!(logs);
    body
}

fn framework<'a>(posture: &'a Value, name: &str) -> Option<&'a Value> {
    posture["frameworks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["framework"] == name)
}

tidemark_store::test_each_backend! {
    async fn a_custom_framework_is_judged_like_a_scanned_one(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Agency).await;
        let now = chrono::Utc::now();
        let at = |hours_ago: i64| (now - chrono::Duration::hours(hours_ago)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
        // Before the framework: the web instance passes, the logs bucket fails.
        let first = app.push_json(&key, &scan("PASS", "FAIL", &at(3))).await;
        let project = first["project_id"].as_str().unwrap().to_owned();
        let posture_path = format!("/v1/projects/{project}/posture");

        let res = put(&app, &key, "acme", ACME, "application/yaml").await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
        let set: Value = res.json().await.unwrap();
        assert_eq!(set["created"], true);
        assert_eq!(set["judged_scans"], 1, "the latest scan of the one branch");
        assert_eq!(set["framework"]["posture_name"], "custom:acme");
        assert_eq!(set["framework"]["controls"].as_array().unwrap().len(), 3);
        assert!(set["framework"]["updated_by"].as_str().unwrap().starts_with("api-key:"));

        // At once, without a push: EN.1 passed, EN.2 failed (one of its rules failed), AU.1
        // not evaluated (its rule was not checked). Sections by control id.
        let posture = app.get_with_key(&key, &posture_path).await.json::<Value>().await.unwrap();
        let acme = framework(&posture, "custom:acme").expect("custom framework in the posture");
        assert_eq!(acme["current"]["scan_id"], first["scan_id"]);
        assert_eq!((acme["current"]["passed"].as_i64(), acme["current"]["failed"].as_i64(), acme["current"]["not_evaluated"].as_i64()), (Some(1), Some(1), Some(1)), "{backend:?}: {acme}");
        let sections: Vec<&str> = acme["sections"].as_array().unwrap().iter().map(|s| s["section"].as_str().unwrap()).collect();
        assert_eq!(sections, ["AU", "EN"]);
        assert_eq!(acme["history"].as_array().unwrap().len(), 1, "the latest scan was judged and kept");

        // The next push is judged by it too; EN.1 passed and now fails: drift, by control.
        let second = app.push_json(&key, &scan("FAIL", "PASS", &at(2))).await;
        let posture = app.get_with_key(&key, &posture_path).await.json::<Value>().await.unwrap();
        let acme = framework(&posture, "custom:acme").unwrap();
        assert_eq!(acme["current"]["scan_id"], second["scan_id"]);
        assert_eq!(acme["current"]["failed"], 2, "{backend:?}: {acme}");
        assert_eq!(acme["current"]["drifted"], json!(["custom:acme-EN.1"]));
        assert_eq!(acme["history"].as_array().unwrap().len(), 2);
        let only = app.get_with_key(&key, &format!("{posture_path}?framework=custom:acme")).await.json::<Value>().await.unwrap();
        assert_eq!(only["frameworks"].as_array().unwrap().len(), 1);

        // Replaced from JSON: 200, not created; the audit log has both.
        let json_doc = json!({"id": "acme", "title": "Acme baseline v2", "controls": [
            {"id": "EN.2", "title": "Logs are kept", "rules": ["soc2-cc6.1"]}]}).to_string();
        let res = put(&app, &key, "acme", &json_doc, "application/json").await;
        assert_eq!(res.status(), StatusCode::OK);
        let set: Value = res.json().await.unwrap();
        assert_eq!((set["created"].as_bool(), set["framework"]["title"].as_str()), (Some(false), Some("Acme baseline v2")));
        let posture = app.get_with_key(&key, &posture_path).await.json::<Value>().await.unwrap();
        assert_eq!(framework(&posture, "custom:acme").unwrap()["current"]["passed"], 1, "re-judged at once");
        assert_eq!(app.count("audit_events WHERE action = 'framework.set'").await, 2);

        // Refusals: every one changes nothing.
        let unknown = ACME.replace("title: Acme baseline", "title: Acme baseline\nowner: sec");
        let msg = assert_error(put(&app, &key, "acme", &unknown, "application/yaml").await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(msg.contains("unknown field `owner`"), "{msg}");
        let msg = assert_error(put(&app, &key, "other", &json_doc, "application/json").await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(msg.contains("the path \"other\""), "{msg}");
        assert_error(put(&app, &key, "Bad_Id", ACME, "application/yaml").await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert_error(put(&app, &key, "acme", "title: [", "application/yaml").await, StatusCode::BAD_REQUEST, "invalid_json").await;
        assert_error(put(&app, &key, "acme", ACME, "text/plain").await, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;
        let huge = format!("title: x\ndescription: \"{}\"\ncontrols: []\n", "a".repeat(300 * 1024));
        assert_error(put(&app, &key, "acme", &huge, "application/yaml").await, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
        assert_eq!(app.count("audit_events WHERE action = 'framework.set'").await, 2);

        // A licence without custom frameworks: 403 naming the tier needed and its own.
        let (_team, team_key) = app.with_key(Tier::Team).await;
        let msg = assert_error(put(&app, &team_key, "acme", ACME, "application/yaml").await, StatusCode::FORBIDDEN, "insufficient_tier").await;
        assert!(msg.contains("Custom frameworks require the Agency tier or above") && msg.contains("team tier"), "{msg}");
        // Another account sees none of this account's.
        let listed = app.get_with_key(&team_key, "/v1/frameworks").await.json::<Value>().await.unwrap();
        assert_eq!(listed["frameworks"], json!([]));
        assert_error(app.get_with_key(&team_key, "/v1/frameworks/acme").await, StatusCode::NOT_FOUND, "not_found").await;

        // From the command line: set from a file, list, show.
        let config = tempfile::tempdir().unwrap();
        let file = config.path().join("baseline.yaml");
        std::fs::write(&file, format!("id: baseline\n{ACME}")).unwrap();
        let e = env(&app.base_url, config.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], chrono::Utc::now());
        let r = tidemark(&e, &["frameworks", "set", file.to_str().unwrap()]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert!(r.out.starts_with("Created baseline (Acme baseline, 3 controls); posture names it custom:baseline"), "{}", r.out);
        let r = tidemark(&e, &["frameworks", "list"]).await;
        let ids: Vec<&str> = r.out.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
        assert_eq!(ids, ["acme", "baseline"], "{}", r.out);
        let r = tidemark(&e, &["frameworks", "show", "baseline"]).await;
        let shown: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(shown["controls"][0]["id"], "EN.1");
        let unnamed = config.path().join("unnamed.json");
        std::fs::write(&unnamed, r#"{"title": "t", "controls": [{"id": "a", "title": "t", "rules": ["r"]}]}"#).unwrap();
        let r = tidemark(&e, &["frameworks", "set", unnamed.to_str().unwrap()]).await;
        assert_ne!(r.code, Ok(0), "{}", r.out);

        // Removed: its posture goes with it; a second removal is not found.
        let r = tidemark(&e, &["frameworks", "delete", "acme"]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        let posture = app.get_with_key(&key, &posture_path).await.json::<Value>().await.unwrap();
        assert!(framework(&posture, "custom:acme").is_none(), "{posture}");
        assert!(framework(&posture, "custom:baseline").is_some());
        assert_eq!(app.count("scan_posture WHERE framework = 'custom:acme'").await, 0);
        assert_eq!(app.count("audit_events WHERE action = 'framework.deleted'").await, 1);
        let res = app.client.delete(app.url("/v1/frameworks/acme")).header("X-API-Key", &key).send().await.unwrap();
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
    }
}

tidemark_store::test_each_backend! {
    /// Settings → Frameworks: an admin uploads a YAML or JSON document (the id from the
    /// document, or typed), refused with the API's messages naming the field; the page and
    /// `/v1` list the same framework; a member reads it and may not change it; a licence
    /// without the feature is refused naming the tier that has it; removing is audited.
    async fn settings_upload_and_remove_match_the_api(backend) {
        use tidemark_domain::access::Role;
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Agency).await;
        app.add_member(&license.account_id, "reader@example.com", Role::Member).await;
        let mut admin = app.signed_in(&provider, &license.email).await;

        for (form, says) in [
            (vec![("document", ACME)], "id: the document has no `id`"),
            (vec![("document", "title: [unclosed"), ("framework_id", "acme")], "not valid YAML"),
            (vec![("document", "{\"title\":\"x\",\"controls\":[]}"), ("framework_id", "acme"), ("file_name", "x.json")], "controls"),
            (vec![("document", ACME), ("framework_id", "Not An Id")], "framework id"),
            (vec![("document", "id: acme\ntitle: x\ncontrols:\n  - {id: A.1, title: t, rules: []}\n")], "controls[0].rules"),
        ] {
            let res = admin.post_form("/api/upload_framework", &form).await;
            assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend:?} {form:?}");
            let text = res.text().await.unwrap();
            assert!(text.contains(says), "{form:?}: {text}");
        }
        assert_eq!(app.count("custom_frameworks").await, 0, "{backend:?}: nothing was set");

        let res = admin
            .post_form("/api/upload_framework", &[("document", ACME), ("framework_id", "acme")])
            .await;
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
        let listed: Value = app.get_with_key(&key, "/v1/frameworks").await.json().await.unwrap();
        assert_eq!(listed["frameworks"][0]["id"], "acme", "{listed}");
        assert_eq!(listed["frameworks"][0]["updated_by"], license.email.as_str());

        let mut reader = app.signed_in(&provider, "reader@example.com").await;
        let page: Value = reader.post_form("/api/frameworks", &[]).await.json().await.unwrap();
        assert_eq!(page["is_admin"], false);
        assert_eq!(page["available"], true);
        assert_eq!(page["frameworks"][0]["controls"].as_array().unwrap().len(), 3, "{page}");
        assert_eq!(page["frameworks"][0]["controls"][1]["rules"], json!(["soc2-cc6.1", "cis-gcp-2.0-4.1"]));
        let res = reader.post_form("/api/remove_framework", &[("framework_id", "acme")]).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        let res = reader.post_form("/api/upload_framework", &[("document", ACME), ("framework_id", "b")]).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);

        // The settings page itself, drawn on the server.
        let html = admin.get(&app.url("/settings/frameworks")).await.text().await.unwrap();
        assert!(html.contains("Acme baseline") && html.contains("cis-gcp-2.0-2.1"), "{backend:?}");
        assert!(html.contains(r#"data-testid="upload-framework""#));

        let res = admin.post_form("/api/remove_framework", &[("framework_id", "nope")]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let res = admin.post_form("/api/remove_framework", &[("framework_id", "acme")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(app.count("custom_frameworks").await, 0);
        assert_eq!(
            app.count("audit_events WHERE action IN ('framework.set', 'framework.deleted')").await,
            2,
            "{backend:?}"
        );

        // A team licence: the page says which tier has it, and an upload is refused so.
        let (team, _) = app.with_key(Tier::Team).await;
        let mut team_admin = app.signed_in(&provider, &team.email).await;
        let page: Value = team_admin.post_form("/api/frameworks", &[]).await.json().await.unwrap();
        assert_eq!((page["available"].clone(), page["needed_tier"].clone()), (json!(false), json!("agency")));
        let res = team_admin
            .post_form("/api/upload_framework", &[("document", ACME), ("framework_id", "acme")])
            .await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        let text = res.text().await.unwrap();
        assert!(text.contains("require the agency tier or above; this license is on the team tier"), "{text}");
        let html = team_admin.get(&app.url("/settings/frameworks")).await.text().await.unwrap();
        assert!(html.contains("part of the agency tier and above") && !html.contains("upload-framework"));
    }
}
