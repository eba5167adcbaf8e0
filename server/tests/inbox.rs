//! The findings inbox, `GET /v1/findings` and `tidemark findings list --all-projects`, on both
//! databases: across the account's live projects (never another account's, never an archived
//! project's), each filter, bad input refused in words, and keyset paging that neither repeats
//! nor skips a finding while pushes come in.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use crate::cli_client::{env, tidemark};
use crate::common::{assert_error, TestApp};

use chrono::Utc;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

fn finding(rule: &str, resource: &str, status: &str, severity: &str) -> Value {
    json!({"rule_id": rule, "resource": resource, "status": status, "severity": severity,
           "message": format!("{rule} on {resource}"), "remediation": "Fix it"})
}

fn push_body(label: &str, cloud_account: &str, at: &str, findings: Vec<Value>) -> Value {
    json!({
        "project_label": label,
        "cloud": "aws",
        "cloud_account_id": cloud_account,
        "frameworks": ["cis-aws-2.0", "soc2"],
        "score": 70.0,
        "passed": 1,
        "failed": findings.len(),
        "severity_counts": {"critical": 0, "high": 0, "medium": 0, "low": 0},
        "findings": findings,
        "state_source": "ci",
        "scanned_at": at,
        "git": {"branch": "refs/heads/main"}
    })
}

async fn inbox(app: &TestApp, key: &str, query: &str) -> Value {
    let res = app.get_with_key(key, &format!("/v1/findings{query}")).await;
    assert_eq!(res.status(), StatusCode::OK, "{query}");
    res.json().await.unwrap()
}

/// (project label, rule, resource) of a page's findings, in order.
fn keys(page: &Value) -> Vec<(String, String, String)> {
    page["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["project_label"].as_str().unwrap().to_owned(),
                f["rule_id"].as_str().unwrap().to_owned(),
                f["resource"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn exec(app: &TestApp, sql: &str) {
    tidemark_store::on_db!(&app.db, pool => {
        sqlx::query(sql).execute(pool).await.map(|_| ())
    })
    .unwrap();
}

tidemark_store::test_each_backend! {
    /// Every filter over three projects, a feature branch and an archived project.
    async fn the_inbox_lists_the_accounts_findings_with_every_filter(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Enterprise).await;
        let (_, stranger) = app.with_key(Tier::Enterprise).await;
        app.push_json(&stranger, &push_body("web", "111", "2026-11-20T09:00:00Z",
            vec![finding("cis-aws-2.0-1.4", "theirs", "FAIL", "critical")])).await;
        let web = app.push_json(&key, &push_body("web", "111111111111", "2026-11-20T10:00:00Z", vec![
            finding("cis-aws-2.0-2.1.4", "bucket.public", "FAIL", "high"),
            finding("cis-aws-2.0-2.1.4", "bucket.logs", "PASS", "high"),
            finding("soc2-cc6.1", "bucket.logs", "FAIL", "medium"),
            finding("cis-aws-2.0-3.1", "trail.main", "SKIP", "low"),
        ])).await;
        let api = app.push_json(&key, &push_body("api", "222222222222", "2026-11-20T11:00:00Z", vec![
            finding("cis-aws-2.0-1.4", "root", "FAIL", "critical"),
            finding("cis-aws-2.0-5.2", "sg.ssh", "WARN", "low"),
        ])).await;
        let legacy = app.push_json(&key, &push_body("legacy", "222222222222", "2026-11-20T12:00:00Z", vec![
            finding("cis-aws-2.0-1.4", "old-root", "FAIL", "critical"),
        ])).await;
        let mut feature = push_body("web", "111111111111", "2026-11-21T10:00:00Z", vec![
            finding("cis-aws-2.0-4.1", "alarm.unauthorized", "FAIL", "medium"),
        ]);
        feature["git"] = json!({"branch": "refs/heads/feature/alarms"});
        app.push_json(&key, &feature).await;
        // The legacy project archived: out of the inbox.
        exec(&app, &format!("UPDATE projects SET archived_at = 1 WHERE id = '{}'", legacy["project_id"].as_str().unwrap())).await;

        let all = inbox(&app, &key, "").await;
        let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(keys(&all), [
            s("api", "cis-aws-2.0-1.4", "root"),
            s("web", "cis-aws-2.0-2.1.4", "bucket.public"),
            s("web", "soc2-cc6.1", "bucket.logs"),
            s("api", "cis-aws-2.0-5.2", "sg.ssh"),
        ], "{backend:?}: most severe first, default branches, open, this account's live projects");
        assert_eq!(all["findings"][0]["project_id"], api["project_id"]);
        assert!(all["findings"][0]["id"].as_str().unwrap().starts_with("fnd_"));
        assert_eq!(all["findings"][0]["state"], "open");
        assert_eq!(all["next_cursor"], Value::Null);

        let (app_ref, key_ref) = (&app, &key);
        let only = move |q: &'static str| async move { keys(&inbox(app_ref, key_ref, q).await) };
        assert_eq!(only("?project=web").await.len(), 2);
        assert_eq!(only("?framework=soc2").await, [s("web", "soc2-cc6.1", "bucket.logs")]);
        assert_eq!(only("?framework=cis-aws-2.0&severity=low").await, [s("api", "cis-aws-2.0-5.2", "sg.ssh")]);
        assert_eq!(only("?rule_id=cis-aws-2.0-1.4").await, [s("api", "cis-aws-2.0-1.4", "root")]);
        assert_eq!(only("?cloud_account=111111111111").await.len(), 2);
        assert_eq!(only("?branch=feature/alarms").await, [s("web", "cis-aws-2.0-4.1", "alarm.unauthorized")]);
        assert_eq!(only("?branch=*").await.len(), 5, "every line");
        let _ = web;

        // Triage: set aside, then a lapsed one; the age filter.
        let root = all["findings"][0]["id"].as_str().unwrap().to_owned();
        let api_id = api["project_id"].as_str().unwrap();
        let res = app.client
            .put(app.url(&format!("/v1/projects/{api_id}/findings/{root}/triage")))
            .header("X-API-Key", &key)
            .json(&json!({"state": "accepted_risk", "reason": "Break-glass account, audited monthly"}))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(only("?triage=accepted_risk").await, [s("api", "cis-aws-2.0-1.4", "root")]);
        assert_eq!(only("?state=triaged").await, [s("api", "cis-aws-2.0-1.4", "root")]);
        assert_eq!(only("?state=open").await.len(), 3);
        assert_eq!(only("?triage=none").await.len(), 3);
        exec(&app, &format!("UPDATE tracked_findings SET triage_expires_at = 1000 WHERE id = '{root}'")).await;
        assert_eq!(only("?triage=lapsed").await, [s("api", "cis-aws-2.0-1.4", "root")], "{backend:?}");
        assert!(only("?triage=accepted_risk").await.is_empty(), "a lapsed triage no longer holds");
        exec(&app, "UPDATE tracked_findings SET first_seen_at = 1000 WHERE resource = 'sg.ssh'").await;
        assert_eq!(only("?older_than_days=30").await, [s("api", "cis-aws-2.0-5.2", "sg.ssh")]);

        // Fixed: the next push of web without its soc2 failure.
        app.push_json(&key, &push_body("web", "111111111111", "2026-11-22T10:00:00Z", vec![
            finding("cis-aws-2.0-2.1.4", "bucket.public", "FAIL", "high"),
        ])).await;
        assert_eq!(only("?state=fixed").await, [s("web", "soc2-cc6.1", "bucket.logs")]);

        // Bad input: refused in words, naming what is allowed.
        for (q, says) in [
            ("?limit=0", "limit"), ("?limit=501", "limit"), ("?severity=urgent", "severity"),
            ("?triage=maybe", "triage"), ("?state=gone", "state"), ("?older_than_days=0", "older_than_days"),
            ("?cursor=not-ours", "cursor"), ("?colour=red", "colour"), ("?branch=%01", "branch"),
        ] {
            let res = app.get_with_key(&key, &format!("/v1/findings{q}")).await;
            let message = assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
            assert!(message.contains(says), "{q}: {message}");
        }
        let res = app.get_with_key(&key, "/v1/findings?project=nope").await;
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        let res = app.get("/v1/findings").await;
        assert_error(res, StatusCode::UNAUTHORIZED, "missing_api_key").await;

        // The command: the same rows, the project a column.
        let config = tempfile::tempdir().unwrap();
        let e = env(&app.base_url, config.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], Utc::now());
        let r = tidemark(&e, &["findings", "list", "--all-projects", "--json"]).await;
        assert_eq!(r.status, 0, "{:?} {}", r.code, r.out);
        let listed: Value = serde_json::from_str(&r.out).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 3, "{backend:?}: {listed}");
        let r = tidemark(&e, &["findings", "list", "--all-projects", "--framework", "cis-aws-2.0"]).await;
        assert_eq!(r.status, 0, "{:?}", r.code);
        assert!(r.out.starts_with("PROJECT"), "{}", r.out);
        assert!(r.out.contains("api ") && r.out.contains("bucket.public") && !r.out.contains("soc2"), "{}", r.out);
    }
}

tidemark_store::test_each_backend! {
    /// Pages of two while four projects push new findings between the reads: no finding that
    /// was listed at the start is repeated or skipped, and the pages stay in order.
    async fn paging_neither_repeats_nor_skips_while_pushes_come_in(backend) {
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Enterprise).await;
        let labels = ["p1", "p2", "p3", "p4"];
        for (i, label) in labels.iter().enumerate() {
            let findings = (0..3)
                .map(|j| finding(&format!("cis-aws-2.0-{i}.{j}"), &format!("{label}.r{j}"), "FAIL", ["high", "medium", "low"][j]))
                .collect();
            app.push_json(&key, &push_body(label, "333", &format!("2026-11-20T1{i}:00:00Z"), findings)).await;
        }
        let before: HashSet<_> = keys(&inbox(&app, &key, "?limit=500").await).into_iter().collect();
        assert_eq!(before.len(), 12);

        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut round = 0;
        loop {
            let q = match &cursor {
                Some(c) => format!("?limit=2&cursor={c}"),
                None => "?limit=2".to_owned(),
            };
            let page = inbox(&app, &key, &q).await;
            seen.extend(keys(&page));
            // Between pages, every project pushes again, concurrently: its findings stay
            // (same first sight) and one new critical one each (which sorts before the
            // cursor, so this listing does not show it).
            round += 1;
            let pushes = labels.iter().enumerate().map(|(i, label)| {
                let mut findings: Vec<Value> = (0..3)
                    .map(|j| finding(&format!("cis-aws-2.0-{i}.{j}"), &format!("{label}.r{j}"), "FAIL", ["high", "medium", "low"][j]))
                    .collect();
                findings.push(finding("cis-aws-2.0-9.9", &format!("{label}.new{round}"), "FAIL", "critical"));
                let body = push_body(label, "333", &format!("2026-11-2{}T1{i}:00:00Z", 1 + round.min(8)), findings);
                let (app, key) = (&app, &key);
                async move { app.push(key, &body).await.status() }
            });
            for status in futures_util::future::join_all(pushes).await {
                assert_eq!(status, StatusCode::CREATED);
            }
            cursor = page["next_cursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
            assert!(round < 20, "paging ends");
        }
        let unique: HashSet<_> = seen.iter().cloned().collect();
        assert_eq!(unique.len(), seen.len(), "{backend:?}: no finding twice: {seen:?}");
        assert!(before.is_subset(&unique), "{backend:?}: none skipped: {:?}", before.difference(&unique).collect::<Vec<_>>());
        let newer: Vec<_> = unique.difference(&before).collect();
        assert!(newer.iter().all(|k| k.2.contains(".new")), "only new pushes' findings beyond: {newer:?}");
    }
}

tidemark_store::test_each_backend! {
    /// The dashboard's `/findings`: the page with its filters, the sticky bar's triage across
    /// projects (a member skips what is set aside), the CSV of the view, and saved views per
    /// person.
    async fn the_dashboard_inbox_filters_triages_across_projects_and_saves_views(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Enterprise).await;
        app.add_member(&license.account_id, "dev@example.com", tidemark_domain::access::Role::Member).await;
        app.push_json(&key, &push_body("web", "111", "2026-11-20T10:00:00Z", vec![
            finding("cis-aws-2.0-2.1.4", "bucket.public", "FAIL", "high"),
            finding("soc2-cc6.1", "bucket.logs", "FAIL", "medium"),
        ])).await;
        app.push_json(&key, &push_body("api", "222", "2026-11-20T11:00:00Z", vec![
            finding("cis-aws-2.0-1.4", "root", "FAIL", "critical"),
        ])).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let page = admin.get(&app.url("/findings?framework=cis-aws-2.0")).await;
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.text().await.unwrap();
        assert!(html.contains("bucket.public") && html.contains("root") && !html.contains("bucket.logs"), "{backend:?}");
        assert!(html.contains(r#"href="/findings.csv?framework=cis-aws-2.0""#));
        let bad = admin.get(&app.url("/findings?severity=urgent")).await;
        assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(bad.text().await.unwrap().contains("severity is critical, high, medium or low"));

        let all = inbox(&app, &key, "").await;
        let ids: Vec<String> = all["findings"].as_array().unwrap().iter().map(|f| f["id"].as_str().unwrap().to_owned()).collect();
        assert_eq!(ids.len(), 3);
        // A member sets aside the critical and the high, in two projects, in one go.
        let mut dev = app.signed_in(&provider, "dev@example.com").await;
        let form = [
            ("finding", ids[0].as_str()), ("finding", ids[1].as_str()),
            ("state", "accepted_risk"), ("reason", "Compensating control in place"),
            ("back", "/findings?framework=cis-aws-2.0"),
        ];
        let res = dev.post_form("/findings/triage", &form).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend:?}");
        let to = crate::common::browser::location(&res);
        assert_eq!(to, "/findings?framework=cis-aws-2.0&triaged=saved&count=2&skipped=0");
        // The page it goes back to keeps its filters and says what happened.
        let back = dev.get(&app.url(&to)).await;
        assert_eq!(back.status(), StatusCode::OK, "{backend:?}");
        assert!(back.text().await.unwrap().contains("2 findings set aside."));
        assert_eq!(app.count("tracked_findings WHERE triage_state = 'accepted_risk'").await, 2);
        assert_eq!(app.count("audit_events WHERE action = 'finding.triaged'").await, 2, "{backend:?}: each audited");
        // Again as the member: set aside already, so skipped and said so.
        let res = dev.post_form("/findings/triage", &form).await;
        assert_eq!(crate::common::browser::location(&res), "/findings?framework=cis-aws-2.0&triaged=forbidden&count=0&skipped=2");
        // Nothing ticked, a missing reason, a foreign id, a back address elsewhere.
        let res = dev.post_form("/findings/triage", &[("state", "wont_fix"), ("reason", "x"), ("back", "https://evil.example/")]).await;
        assert_eq!(crate::common::browser::location(&res), "/findings?triaged=none");
        let res = dev.post_form("/findings/triage", &[("finding", ids[2].as_str()), ("state", "wont_fix"), ("reason", " ")]).await;
        assert!(crate::common::browser::location(&res).ends_with("triaged=reason"));
        let res = dev.post_form("/findings/triage", &[("finding", "fnd_aaaaaaaaaaaaaaaaaaaa"), ("state", "wont_fix"), ("reason", "x")]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_eq!(app.count("tracked_findings WHERE triage_state IS NOT NULL").await, 2, "nothing else changed");
        let html = admin.get(&app.url("/findings?triage=accepted_risk")).await.text().await.unwrap();
        assert!(html.contains("accepted risk by dev@example.com: Compensating control in place"), "{backend:?}");

        // The CSV of a view.
        let res = admin.get(&app.url("/findings.csv?triage=accepted_risk")).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/csv"));
        let csv = res.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("project,branch,rule_id,resource,severity,state"), "{csv}");
        assert_eq!(lines.len(), 3, "{csv}");
        assert!(lines[1].starts_with("api,") && lines[1].contains(",root,critical,triaged,"), "{csv}");
        assert!(csv.contains("Compensating control in place,dev@example.com"), "{csv}");
        let res = admin.get(&app.url("/findings.csv?older_than_days=0")).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);

        // Saved views: per person.
        let res = admin.post_form("/api/save_view", &[("name", "Critical on prod"), ("query", "severity=critical&project=api")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let res = admin.post_form("/api/save_view", &[("name", "  "), ("query", "severity=critical")]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let html = admin.get(&app.url("/findings")).await.text().await.unwrap();
        assert!(html.contains(r#"href="/findings?severity=critical&amp;project=api">Critical on prod</a>"#), "{backend:?}");
        let theirs = dev.get(&app.url("/findings")).await.text().await.unwrap();
        assert!(!theirs.contains(">Critical on prod</a>"), "another member's views are their own");
        let view_id: String = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_scalar("SELECT id FROM saved_views").fetch_one(pool).await
        })
        .unwrap();
        let res = dev.post_form("/api/delete_view", &[("view_id", view_id.as_str())]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "not theirs to remove");
        let res = admin.post_form("/api/delete_view", &[("view_id", view_id.as_str())]).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(app.count("saved_views").await, 0);
    }
}

tidemark_store::test_each_backend! {
    /// A finding's life says each triage in words (who set it aside as what, until when), each
    /// undo, and each lapse (an expiry that passed with nothing in between).
    async fn a_findings_life_says_each_triage_undo_and_lapse(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &push_body("web", "111", "2026-11-20T10:00:00Z", vec![
            finding("cis-aws-2.0-2.1.4", "bucket.public", "FAIL", "high"),
        ])).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let id = inbox(&app, &key, "").await["findings"][0]["id"].as_str().unwrap().to_owned();
        let triage = app.url(&format!("/v1/projects/{project}/findings/{id}/triage"));
        let res = app.client.put(&triage).header("X-API-Key", &key)
            .json(&json!({"state": "wont_fix", "reason": "Public by design: the website", "expires_at": "2099-01-01"}))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        // Its expiry passed (the clock moved on): it lapsed, open again.
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        exec(&app, &format!("UPDATE finding_triage_events SET at = {}, expires_at = {} WHERE finding_id = '{id}'", now - 10 * day, now - 5 * day)).await;
        exec(&app, &format!("UPDATE tracked_findings SET triage_expires_at = {} WHERE id = '{id}'", now - 5 * day)).await;
        let res = app.client.put(&triage).header("X-API-Key", &key)
            .json(&json!({"state": "accepted_risk", "reason": "Signed off by the CISO"}))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let res = app.client.delete(&triage).header("X-API-Key", &key).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);

        let mut admin = app.signed_in(&provider, &license.email).await;
        let html = admin.get(&app.url(&format!("/projects/{project}/findings/{id}"))).await.text().await.unwrap();
        let prefix = &key[..12];
        let set = html.find(&format!("Set aside as won&#x27;t fix by api-key:{prefix}")).or_else(|| html.find(&format!("Set aside as won't fix by api-key:{prefix}")));
        let lapsed = html.find("lapsed: open again");
        let again = html.find(&format!("Set aside as accepted risk by api-key:{prefix}"));
        let undone = html.find(&format!("Undone by api-key:{prefix}: open again"));
        assert!(set.is_some() && lapsed.is_some() && again.is_some() && undone.is_some(), "{backend:?}: {html}");
        assert!(set < lapsed && lapsed < again && again < undone, "in time order");
        assert!(html.contains("Triage lapsed"));
    }
}
