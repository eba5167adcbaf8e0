//! The dashboard's compliance views on both databases (issue 47): a project's posture card,
//! a framework's page (heatmap, top failing requirements with their resources, triage and
//! drift, a custom framework's controls) and the projects page's rollup per framework and
//! per cloud account, worst first; another account's project and an unknown framework are
//! not found.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common::browser::Browser;
use crate::common::{sample_push, TestApp};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

fn at(days_ago: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::days(days_ago))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// `web`'s push with the instance rule's `status` (the bucket always fails).
fn web(status: &str, days_ago: i64) -> Value {
    let mut body = sample_push("web", 70.0, &at(days_ago));
    body["findings"][0]["status"] = json!(status);
    body
}

async fn page(app: &TestApp, browser: &mut Browser, path: String) -> (StatusCode, String) {
    let res = browser.get(&app.url(&path)).await;
    (res.status(), res.text().await.unwrap())
}

/// Where `needle` is in `page`, or a failure saying what the page was.
fn position(page: &str, needle: &str, what: &str) -> usize {
    page.find(needle)
        .unwrap_or_else(|| panic!("{what}: no {needle:?} in {page}"))
}

tidemark_store::test_each_backend! {
    async fn compliance_views_show_posture_per_framework_section_and_account(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Agency).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        app.push_json(&key, &web("FAIL", 3)).await;
        app.push_json(&key, &web("PASS", 2)).await;
        let latest = app.push_json(&key, &web("FAIL", 1)).await;
        let project = latest["project_id"].as_str().unwrap().to_owned();
        // Another project, in another cloud account, passing soc2.
        let mut api = sample_push("api", 90.0, &at(1));
        api["cloud"] = json!("aws");
        api["cloud_account_id"] = json!("111122223333");
        api["frameworks"] = json!(["soc2"]);
        api["findings"] = json!([api["findings"][1].clone()]);
        api["findings"][0]["status"] = json!("PASS");
        app.push_json(&key, &api).await;
        let theirs = app.push_json(&other_key, &web("FAIL", 1)).await;

        // The bucket set aside after the push: the project's views judge it now.
        let findings = app.get_with_key(&key, &format!("/v1/projects/{project}/findings")).await;
        let findings: Value = findings.json().await.unwrap();
        let bucket = findings["findings"].as_array().unwrap().iter()
            .find(|f| f["rule_id"] == "soc2-cc6.1").unwrap()["id"].as_str().unwrap().to_owned();
        let res = app.client
            .put(app.url(&format!("/v1/projects/{project}/findings/{bucket}/triage")))
            .header("X-API-Key", &key)
            .json(&json!({"state": "accepted_risk", "reason": "Logs bucket, versioning not needed"}))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let res = app.client
            .put(app.url("/v1/frameworks/baseline"))
            .header("X-API-Key", &key)
            .header("Content-Type", "application/yaml")
            .body("title: Company baseline\ncontrols:\n  - id: AC.1\n    title: Least privilege\n    rules: [cis-gcp-2.0-4.1]\n")
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");

        let mut browser = app.signed_in(&provider, &license.email).await;

        // The project page: a small multiple per framework, linked to its page, with drift.
        let (status, html) = page(&app, &mut browser, format!("/projects/{project}")).await;
        assert_eq!(status, StatusCode::OK);
        let card = &html[position(&html, "data-testid=\"posture-card\"", "project page")..];
        for needle in [
            &format!("href=\"/projects/{project}/frameworks/cis-gcp-2.0\"") as &str,
            &format!("href=\"/projects/{project}/frameworks/soc2\""),
            &format!("href=\"/projects/{project}/frameworks/custom:baseline\""),
            "Company baseline (custom)",
            "Drift: 1 requirement passed before and fails now",
            "0 passed · 1 failed · 0 triaged · 0 not evaluated",
            // soc2: the set-aside bucket counts apart, never as passed.
            "0 passed · 0 failed · 1 triaged · 0 not evaluated",
            "<svg",
            "data-testid=\"posture-table\"",
        ] {
            position(card, needle, "posture card");
        }
        assert!(card.contains("cis-gcp-2.0: 0% of requirements passing now; over the last 90d, 3 scans from 0% to 0%, lowest 0%, highest 100%."), "{card}");

        // cis: section 4 all failing, the instance its top failing requirement, drifted.
        let (status, html) = page(&app, &mut browser, format!("/projects/{project}/frameworks/cis-gcp-2.0")).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        position(&html, "<title>cis-gcp-2.0 · web · Tidemark</title>", "cis page");
        let heat = &html[position(&html, "data-testid=\"heatmap\"", "cis page")..];
        position(heat, "class=\"heat-4\"", "heatmap");
        position(heat, "href=\"#section-4\"", "heatmap");
        let top = &html[position(&html, "data-testid=\"top-failing\"", "cis page")..];
        position(top, "cis-gcp-2.0-4.1", "top failing");
        position(top, "google_compute_instance.web", "top failing");
        position(top, &format!("href=\"/projects/{project}/findings/"), "top failing");
        // Since when it fails, once a row: the requirement's column; its one finding failing
        // since the same time does not say it again.
        position(top, "<td data-label=\"Failing since\"><time", "top failing");
        let body = &top[position(top, "<tbody>", "top failing")..];
        let row = &body[..position(body, "</tr>", "top failing")];
        position(row, "google_compute_instance.web", "the first failing row");
        assert!(!row.contains(" · failing since "), "{row}");
        position(&html, "data-testid=\"framework-drift\"", "cis page");
        position(&html, "id=\"section-4\"", "cis page");

        // soc2: triaged, with who and why; nothing fails.
        let (status, html) = page(&app, &mut browser, format!("/projects/{project}/frameworks/soc2")).await;
        assert_eq!(status, StatusCode::OK);
        position(&html, "data-testid=\"top-failing-none\"", "soc2 page");
        position(&html, "class=\"req-status triaged\"", "soc2 page");
        position(&html, "accepted risk by api-key:", "soc2 page");
        position(&html, "Logs bucket, versioning not needed", "soc2 page");

        // The custom framework: its control, its title, the rule's resource behind it.
        let (status, html) = page(&app, &mut browser, format!("/projects/{project}/frameworks/custom:baseline")).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        position(&html, "<h1>Company baseline (custom)</h1>", "custom page");
        let top = &html[position(&html, "data-testid=\"top-failing\"", "custom page")..];
        position(top, "AC.1", "custom top failing");
        position(top, "Least privilege", "custom top failing");
        position(top, "google_compute_instance.web", "custom top failing");

        // The rollup: as pushed, worst first, per framework and per cloud account.
        let (status, html) = page(&app, &mut browser, "/projects".to_owned()).await;
        assert_eq!(status, StatusCode::OK);
        let frameworks = &html[position(&html, "data-testid=\"rollup-frameworks\"", "projects")..];
        let frameworks = &frameworks[..position(frameworks, "</table>", "rollup")];
        // Each scanned framework's row leads to its findings across the projects; a custom
        // framework's controls are not rules, so its name stays text.
        let order: Vec<usize> = [
            "<a href=\"/findings?framework=cis-gcp-2.0\">cis-gcp-2.0</a>",
            "<span>Company baseline (custom)</span>",
            "<a href=\"/findings?framework=soc2\">soc2</a>",
        ]
        .iter()
        .map(|f| position(frameworks, f, "frameworks rollup"))
        .collect::<Vec<_>>();
        // cis and the baseline fail all (0%, one failure each: by name), soc2 passes one of two.
        assert!(order[0] < order[2] && order[1] < order[2], "{frameworks}");
        position(frameworks, "50%", "frameworks rollup");
        let accounts = &html[position(&html, "data-testid=\"rollup-accounts\"", "projects")..];
        let accounts = &accounts[..position(accounts, "</table>", "rollup")];
        let gcp = position(accounts, "<a href=\"/findings?cloud_account=acme-prod-123\"><code>acme-prod-123</code></a>", "accounts rollup");
        let aws = position(accounts, "<code>111122223333</code>", "accounts rollup");
        assert!(gcp < aws, "the failing account first: {accounts}");

        // Not found: an unknown framework, another account's project.
        let (status, _) = page(&app, &mut browser, format!("/projects/{project}/frameworks/pci-dss-4.0")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let their_project = theirs["project_id"].as_str().unwrap();
        let (status, html) = page(&app, &mut browser, format!("/projects/{their_project}/frameworks/soc2")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(!html.contains("google_storage_bucket.logs"), "{html}");
    }
}
