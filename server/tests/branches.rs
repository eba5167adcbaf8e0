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
