//! Branches and pull requests over HTTP: the push body's `git` object, its validation, and
//! what the answer says about the line and the base. The rules themselves are tested on both
//! databases in `store/tests/branches.rs`.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use common::{assert_error, sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

fn with_git(mut body: Value, git: Value) -> Value {
    body["git"] = git;
    body
}

tidemark_store::test_each_backend! {
    async fn a_pull_request_push_answers_with_its_line_and_its_base(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;

        // An old client: no git object, and the answer's new fields are there, null.
        let plain = app.push_json(&key, &sample_push("api", 80.0, "2026-11-22T10:00:00Z")).await;
        assert_eq!((&plain["branch"], &plain["pull_request"], &plain["base"]), (&Value::Null, &Value::Null, &Value::Null));

        let main = app
            .push_json(&key, &with_git(sample_push("api", 82.0, "2026-11-22T11:00:00Z"),
                json!({"branch": "refs/heads/main", "commit": "9FCEB02D0AE598E95DC970B74767F19372D61AF8"})))
            .await;
        assert_eq!(main["branch"], "main", "refs/heads/ is removed");
        assert_eq!(main["score_delta"], 2.0, "main continues the history pushed without a branch");

        let mut pr_body = sample_push("api", 79.0, "2026-11-22T12:00:00Z");
        pr_body["findings"][0]["resource"] = json!("google_compute_instance.api");
        let pr = app
            .push_json(&key, &with_git(pr_body, json!({
                "branch": "feature/tls", "commit": "abc1234",
                "pull_request": {"number": 42, "base_branch": "main", "title": "Enforce TLS",
                                 "url": "https://github.com/acme/api/pull/42"}})))
            .await;
        assert_eq!(pr["branch"], "feature/tls");
        assert_eq!(pr["pull_request"], 42);
        assert_eq!(pr["score_delta"], 0.0, "the pull request's first scan");
        assert_eq!(
            pr["base"],
            json!({"branch": "main", "scan_id": main["scan_id"], "score": 82.0, "score_delta": -3.0,
                   "new_findings": 1, "fixed_findings": 1,
                   "message": "1 new finding and 1 fixed compared with main"})
        );
        assert_eq!(app.count("scans").await, 3);
        assert_eq!(app.count("branches").await, 2);
    }
}

tidemark_store::test_each_backend! {
    async fn bad_git_context_is_refused_by_field_and_changes_nothing(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let pr = |extra: Value| {
            let mut pr = json!({"number": 1, "base_branch": "main"});
            for (k, v) in extra.as_object().unwrap() {
                pr[k] = v.clone();
            }
            json!({"branch": "feature", "pull_request": pr})
        };
        let cases = [
            (json!({"branch": ""}), "git.branch"),
            (json!({"branch": "refs/heads/"}), "git.branch"),
            (json!({"branch": "a\u{1b}[31mred"}), "git.branch"),
            (json!({"branch": "x".repeat(256)}), "git.branch"),
            (json!({"default_branch": "tab\there"}), "git.default_branch"),
            (json!({"commit": "not-a-sha"}), "git.commit"),
            (json!({"repository_url": "javascript:alert(1)"}), "git.repository_url"),
            (json!({"branch": 7}), "git.branch"),
            (pr(json!({"number": 0})), "git.pull_request.number"),
            (pr(json!({"number": -3})), "git.pull_request.number"),
            (pr(json!({"base_branch": ""})), "git.pull_request.base_branch"),
            (pr(json!({"title": "x".repeat(513)})), "git.pull_request.title"),
            (pr(json!({"url": "ftp://example.com/pr/1"})), "git.pull_request.url"),
            (json!({"pull_request": {"base_branch": "main"}}), "git.pull_request: missing field `number`"),
        ];
        for (git, field) in cases {
            let body = with_git(sample_push("api", 80.0, "2026-11-22T10:00:00Z"), git.clone());
            let message = assert_error(app.push(&key, &body).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
            assert!(message.contains(field), "{git}: {message}");
        }
        assert_eq!(app.count("scans").await, 0, "{backend:?}");
        assert_eq!(app.count("projects").await, 0);
    }
}

/// A server function called as the dashboard's forms call it.
async fn call(
    browser: &mut common::browser::Browser,
    path: &str,
    form: Vec<(&str, String)>,
) -> reqwest::Response {
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    browser.post_form(path, &pairs).await
}

tidemark_store::test_each_backend! {
    /// The project page's server functions by line: the default branch unless `branch` or
    /// `pr` names another, each with its own chart and scans; admins choose the default;
    /// another account's project and an unknown line are "not found".
    async fn the_dashboard_shows_one_line_at_a_time(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (stranger, _) = app.with_key(Tier::Team).await;
        let main = app.push_json(&key, &with_git(sample_push("web", 80.0, "2026-11-20T10:00:00Z"), json!({"branch": "main", "commit": "abcdef0123", "repository_url": "https://github.com/acme/web"}))).await;
        app.push_json(&key, &with_git(sample_push("web", 40.0, "2026-11-20T11:00:00Z"), json!({"branch": "wip"}))).await;
        app.push_json(&key, &with_git(sample_push("web", 79.0, "2026-11-20T12:00:00Z"),
            json!({"branch": "wip", "pull_request": {"number": 9, "base_branch": "main", "title": "WIP"}}))).await;
        let project = main["project_id"].as_str().unwrap();

        let mut admin = app.signed_in(&provider, &license.email).await;
        let chart = |branch: Option<&str>, pr: Option<&str>| {
            let mut form: Vec<(&str, String)> = vec![("project_id", project.to_owned()), ("range", "All".to_owned())];
            if let Some(b) = branch { form.push(("branch", b.to_owned())); }
            if let Some(p) = pr { form.push(("pr", p.to_owned())); }
            form
        };
        let res = call(&mut admin, "/api/project_chart", chart(None, None)).await;
        assert_eq!(res.status(), StatusCode::OK);
        let default: Value = res.json().await.unwrap();
        assert_eq!(default["line"]["name"], "main");
        assert_eq!(default["line"]["is_default"], true);
        assert_eq!(default["scans_in_range"], 1);
        assert_eq!(default["branches"].as_array().unwrap().len(), 2);
        assert_eq!(default["pulls"][0]["pull_request"]["number"], 9);
        assert_eq!(default["pulls"][0]["head"]["new_findings"], 0);
        assert_eq!(default["project"]["last_score"], 80.0, "the project's line is main");

        let wip: Value = call(&mut admin, "/api/project_chart", chart(Some("wip"), None)).await.json().await.unwrap();
        assert_eq!((wip["line"]["name"].as_str(), wip["scans_in_range"].as_i64()), (Some("wip"), Some(1)));
        assert_eq!(wip["points"][0]["score"], 40.0);
        let pr: Value = call(&mut admin, "/api/project_chart", chart(None, Some("9"))).await.json().await.unwrap();
        assert_eq!(pr["points"][0]["score"], 79.0);
        for missing in [chart(Some("nope"), None), chart(None, Some("10"))] {
            assert_eq!(call(&mut admin, "/api/project_chart", missing).await.status(), StatusCode::NOT_FOUND);
        }

        let scans: Value = call(&mut admin, "/api/project_scans",
            vec![("project_id", project.to_owned()), ("page", "0".to_owned())]).await.json().await.unwrap();
        let only = &scans["scans"][0];
        assert_eq!(scans["scans"].as_array().unwrap().len(), 1, "main's scans only");
        assert_eq!((only["branch"].as_str(), only["commit"].as_str()), (Some("main"), Some("abcdef0123")));
        assert_eq!(only["commit_url"], "https://github.com/acme/web/commit/abcdef0123");

        // The scan page of the pull request's scan compares with main's scan by default.
        let pr_scan = pr["points"][0]["scan_id"].as_str().unwrap().to_owned();
        let diff: Value = call(&mut admin, "/api/scan_diff",
            vec![("project_id", project.to_owned()), ("scan_id", pr_scan)]).await.json().await.unwrap();
        assert_eq!(diff["pr_base"], json!(["main", main["scan_id"]]));
        assert_eq!((diff["new_count"].as_i64(), diff["fixed_count"].as_i64()), (Some(0), Some(0)));

        let res = call(&mut admin, "/api/set_default_branch",
            vec![("project_id", project.to_owned()), ("branch", "wip".to_owned())]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let moved: Value = call(&mut admin, "/api/project_chart", chart(None, None)).await.json().await.unwrap();
        assert_eq!((moved["line"]["name"].as_str(), moved["project"]["last_score"].as_f64()), (Some("wip"), Some(40.0)));
        let res = call(&mut admin, "/api/set_default_branch",
            vec![("project_id", project.to_owned()), ("branch", "gone".to_owned())]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

        let mut other = app.signed_in(&provider, &stranger.email).await;
        assert_eq!(call(&mut other, "/api/project_chart", chart(Some("wip"), None)).await.status(), StatusCode::NOT_FOUND);
        assert_eq!(call(&mut other, "/api/set_default_branch",
            vec![("project_id", project.to_owned()), ("branch", "main".to_owned())]).await.status(), StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn the_history_csv_names_each_scans_branch_pull_request_and_commit() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let first = app
        .push_json(&key, &sample_push("api", 74.1, "2026-11-22T10:00:00Z"))
        .await;
    app.push_json(
        &key,
        &with_git(
            sample_push("api", 71.3, "2026-11-22T11:00:00Z"),
            json!({"branch": "=cmd", "commit": "ABCDEF0"}),
        ),
    )
    .await;
    app.push_json(
        &key,
        &with_git(
            sample_push("api", 82.0, "2026-11-22T12:00:00Z"),
            json!({"branch": "feature", "pull_request": {"number": 5, "base_branch": "main"}}),
        ),
    )
    .await;
    let project = first["project_id"].as_str().unwrap();
    let res = app
        .client
        .get(app.url(&format!("/v1/projects/{project}/history.csv")))
        .header("X-API-Key", &key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let text = res.text().await.unwrap();
    let rows: Vec<Vec<String>> = csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(|r| r.unwrap().iter().map(str::to_owned).collect())
        .collect();
    let tail = |r: &Vec<String>| r[13..16].to_vec();
    assert!(text.starts_with("scanned_at,scan_id,score,score_delta,passed,failed,critical,high,medium,low,gate_status,gate_reasons,received_at,branch,pull_request,commit,pushed_by,ci_run_url\n"));
    // Pushed with an API key: its prefix and machine, and no CI run.
    assert!(rows[0][16].starts_with("API key svc_api_"), "{:?}", rows[0]);
    assert_eq!(rows[0][17], "");
    // The delta with the decimals the scores have (74.1 to 71.3), not the float's 17 digits.
    assert_eq!(rows[1][2..4], ["71.3".to_owned(), "-2.8".to_owned()]);
    // The first branch named ("=cmd") names the history pushed without one; a cell that a
    // spreadsheet would run as a formula is quoted.
    assert_eq!(tail(&rows[0]), ["'=cmd", "", ""]);
    assert_eq!(tail(&rows[1]), ["'=cmd", "", "abcdef0"]);
    assert_eq!(tail(&rows[2]), ["feature", "5", ""]);
}

#[tokio::test]
async fn a_badge_shows_the_default_branch_or_the_branch_it_names() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let main = app
        .push_json(
            &key,
            &with_git(
                sample_push("api", 91.5, "2026-11-22T10:00:00Z"),
                json!({"branch": "main"}),
            ),
        )
        .await;
    app.push_json(
        &key,
        &with_git(
            sample_push("api", 42.0, "2026-11-22T11:00:00Z"),
            json!({"branch": "feature/x"}),
        ),
    )
    .await;
    let token = tidemark_domain::badge::BadgeToken::generate();
    let project = main["project_id"].as_str().unwrap();
    assert!(tidemark_store::badges::issue_badge(
        &app.db,
        &license.account_id,
        &tidemark_wire::ids::ProjectId::trusted(project),
        &token,
        &tidemark_store::testing::audit()
    )
    .await
    .unwrap());
    let badge = |query: &str| {
        let url = app.url(&format!("/badge/{}.svg{query}", token.as_str()));
        let client = app.client.clone();
        async move {
            let res = client.get(url).send().await.unwrap();
            (res.status(), res.text().await.unwrap())
        }
    };
    let (status, svg) = badge("").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        svg.contains("91.5") && !svg.contains("42"),
        "the default branch: {svg}"
    );
    let (_, svg) = badge("?branch=feature%2Fx").await;
    assert!(svg.contains("42"), "the named branch: {svg}");
    let (status, svg) = badge("?branch=nope").await;
    assert_eq!(status, StatusCode::OK);
    assert!(svg.contains("no scans"), "{svg}");
    let (status, _) = badge("?branch=%01").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a name that cannot exist");
}

#[tokio::test]
async fn a_sarif_export_names_the_repository_commit_and_branch() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let (_, key) = app.with_key(Tier::Team).await;
    let pushed = app.push_json(&key, &with_git(sample_push("api", 80.0, "2026-11-22T10:00:00Z"),
        json!({"branch": "main", "commit": "9fceb02d0ae598e95dc970b74767f19372d61af8", "repository_url": "https://github.com/acme/api"}))).await;
    let plain = app
        .push_json(&key, &sample_push("api", 81.0, "2026-11-22T11:00:00Z"))
        .await;
    let sarif = |p: &Value| {
        let url = app.url(&format!(
            "/v1/projects/{}/scans/{}/findings.sarif",
            p["project_id"].as_str().unwrap(),
            p["scan_id"].as_str().unwrap()
        ));
        let (client, key) = (app.client.clone(), key.clone());
        async move {
            client
                .get(url)
                .header("X-API-Key", key)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let log = sarif(&pushed).await;
    assert!(
        crate::exports::sarif_validator().is_valid(&log),
        "valid SARIF 2.1.0"
    );
    assert_eq!(
        log["runs"][0]["versionControlProvenance"],
        json!([{"repositoryUri": "https://github.com/acme/api", "revisionId": "9fceb02d0ae598e95dc970b74767f19372d61af8", "branch": "main"}])
    );
    // A push that said nothing of its commit: the branch's repository is known, the commit not.
    let log = sarif(&plain).await;
    assert!(crate::exports::sarif_validator().is_valid(&log));
    assert_eq!(
        log["runs"][0]["versionControlProvenance"],
        json!([{"repositoryUri": "https://github.com/acme/api", "branch": "main"}])
    );
}
