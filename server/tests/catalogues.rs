//! Framework catalogues on both databases: published from Prowler's compliance JSON by the
//! operator command and the admin API (admins only, refusals naming the field), mapped to
//! Tidemark rule ids, and used by the framework page (every requirement, those no scan
//! evaluated too, in the catalogue's sections) and by the compliance CSV (description and
//! section filled).
#![allow(clippy::unwrap_used)]

use crate::admin_api::Vendor;
use crate::common::browser::Browser;
use crate::common::TestApp;

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/prowler/cis_2.0_aws.json"
);

/// A scan of `cis-aws-2.0` and `soc2` as scanners push them: FAIL, PASS and SKIP findings,
/// one rule the catalogue does not list.
fn aws_push(label: &str) -> Value {
    let finding = |rule: &str, resource: &str, status: &str| {
        json!({"rule_id": rule, "resource": resource, "status": status, "severity": "high",
               "message": format!("{rule} on {resource}"), "remediation": "Fix it"})
    };
    json!({
        "project_label": label,
        "cloud": "aws",
        "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0", "soc2"],
        "score": 71.0,
        "passed": 3,
        "failed": 2,
        "severity_counts": {"critical": 0, "high": 2, "medium": 0, "low": 0},
        "findings": [
            finding("cis-aws-2.0-2.1.4", "aws_s3_bucket.public_assets", "FAIL"),
            finding("cis-aws-2.0-2.1.4", "aws_s3_bucket.logs", "PASS"),
            finding("cis-aws-2.0-1.10", "aws_iam_user.ci", "PASS"),
            finding("cis-aws-2.0-3.1", "aws_cloudtrail.main", "SKIP"),
            finding("cis-aws-2.0-9.9", "aws_vpc.main", "PASS"),
            finding("soc2-cc6.1", "aws_s3_bucket.logs", "FAIL"),
        ],
        "state_source": "ci",
        "scanned_at": "2026-11-20T10:00:00Z"
    })
}

/// The framework page's data, as the dashboard loads it.
async fn framework_page(admin: &mut Browser, project: &str, framework: &str) -> Value {
    let res = admin
        .post_form(
            "/api/framework_posture",
            &[("project_id", project), ("framework", framework)],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    res.json().await.unwrap()
}

tidemark_store::test_each_backend! {
    /// The operator publishes; the admin API replaces, lists and shows; other roles read; a
    /// bad document changes nothing and says which field.
    async fn catalogues_are_published_from_prowler_json(backend) {
        let app = TestApp::spawn(backend).await;
        let (ok, out, err) = app.command(&["catalogue", "import", FIXTURE], &[]).await;
        assert!(ok, "{backend:?}: {err}");
        assert!(out.contains("published cis-aws-2.0 (CIS 2.0 (AWS)): 8 requirements (1 manual) in 5 sections"), "{out}");
        let (ok, out, _) = app.command(&["catalogue", "list", "--json"], &[]).await;
        assert!(ok);
        let listed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(listed[0]["framework"], "cis-aws-2.0");
        assert!(listed[0]["published_by"].as_str().unwrap().starts_with("operator:"));

        let vendor = Vendor::set_up(&app).await;
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
        let res = vendor.call("sales", "PUT", "/catalogues/cis-aws-2.0", Some(doc.clone())).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{backend:?}: admins only");
        let res = vendor.call("admin", "PUT", "/catalogues/cis-aws-2.0", Some(doc.clone())).await;
        assert_eq!(res.status(), StatusCode::OK, "replaced");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["replaced"], true);
        assert_eq!(body["published_by"], "vendor:root");
        assert_eq!(body["requirement_list"].as_array().unwrap().len(), 8);
        let s3 = &body["requirement_list"][4];
        assert_eq!(s3["rule_id"], "cis-aws-2.0-2.1.4");
        assert_eq!(s3["section"], "2.1. Simple Storage Service (S3)");
        assert_eq!(s3["checks"], json!(["s3_bucket_level_public_access_block", "s3_account_level_public_access_blocks"]));
        assert_eq!(body["requirement_list"][0]["manual"], true);

        // Under another framework id: its rules are named after it.
        let res = vendor.call("admin", "PUT", "/catalogues/cis-aws", Some(doc.clone())).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["requirement_list"][0]["rule_id"], "cis-aws-1.1");

        // Bad documents: refused naming the field, nothing changed.
        let mut twice = doc.clone();
        twice["Requirements"][1]["Id"] = json!("1.1");
        let res = vendor.call("admin", "PUT", "/catalogues/cis-aws-2.0", Some(twice)).await;
        let message = crate::common::assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("Requirements[1].Id: \"1.1\" is given twice"), "{message}");
        let res = vendor.call("admin", "PUT", "/catalogues/Bad%20Id", Some(doc.clone())).await;
        crate::common::assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        let res = vendor.call("admin", "PUT", "/catalogues/x", Some(json!({"Framework": "X"}))).await;
        crate::common::assert_error(res, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;

        let res = vendor.call("read", "GET", "/catalogues", None).await;
        let listed: Value = res.json().await.unwrap();
        let frameworks: Vec<&str> = listed["catalogues"].as_array().unwrap().iter().map(|c| c["framework"].as_str().unwrap()).collect();
        assert_eq!(frameworks, ["cis-aws", "cis-aws-2.0"], "{backend:?}");
        let res = vendor.call("read", "GET", "/catalogues/cis-aws-2.0", None).await;
        let shown: Value = res.json().await.unwrap();
        assert_eq!(shown["requirements"], 8, "the bad documents changed nothing");
        assert!(shown.get("replaced").is_none());
        let res = vendor.call("read", "GET", "/catalogues/nope", None).await;
        crate::common::assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
        assert_eq!(app.count("audit_events WHERE action = 'catalogue.published'").await, 3);
    }
}

tidemark_store::test_each_backend! {
    /// With a catalogue, the framework page lists every requirement in its order and
    /// sections, "not evaluated" where the scan said nothing, and the scan's own extra rule;
    /// without one (soc2), what the scan reported, said so. The CSV fills the description and
    /// section.
    async fn a_framework_page_and_its_csv_read_the_catalogue(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &aws_push("payments")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let scan = pushed["scan_id"].as_str().unwrap().to_owned();
        let mut admin = app.signed_in(&provider, &license.email).await;
        let before = framework_page(&mut admin, &project, "cis-aws-2.0").await;
        assert!(before["catalogue"].is_null());
        let ids: Vec<&str> = before["requirements"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 4, "{backend:?}: only what the scan reported: {ids:?}");

        let (ok, _, err) = app.command(&["catalogue", "import", FIXTURE], &[]).await;
        assert!(ok, "{err}");
        let after = framework_page(&mut admin, &project, "cis-aws-2.0").await;
        assert_eq!(after["name"], "CIS 2.0 (AWS)");
        assert_eq!(after["catalogue"]["requirements"], 8);
        let reqs = after["requirements"].as_array().unwrap();
        let row = |id: &str| reqs.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id} in {reqs:#?}"));
        let ids: Vec<&str> = reqs.iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            ["cis-aws-2.0-1.1", "cis-aws-2.0-1.4", "cis-aws-2.0-1.10", "cis-aws-2.0-2.1.1", "cis-aws-2.0-2.1.4",
             "cis-aws-2.0-3.1", "cis-aws-2.0-4.1", "cis-aws-2.0-5.2", "cis-aws-2.0-9.9"],
            "{backend:?}: the catalogue's order, then the scan's own"
        );
        assert_eq!(row("cis-aws-2.0-2.1.4")["status"], "failed");
        assert_eq!(row("cis-aws-2.0-2.1.4")["title"], "Ensure that S3 Buckets are configured with 'Block public access (bucket settings)'");
        assert_eq!(row("cis-aws-2.0-2.1.4")["section"], "2.1. Simple Storage Service (S3)");
        assert!(row("cis-aws-2.0-2.1.4")["description"].as_str().unwrap().starts_with("Amazon S3 provides Block public access"));
        assert_eq!(row("cis-aws-2.0-2.1.4")["findings"].as_array().unwrap().len(), 1);
        assert_eq!(row("cis-aws-2.0-1.10")["status"], "passed");
        assert_eq!(row("cis-aws-2.0-3.1")["status"], "not_evaluated", "SKIP only");
        assert_eq!(row("cis-aws-2.0-5.2")["status"], "not_evaluated", "no finding at all");
        assert_eq!((row("cis-aws-2.0-1.1")["manual"].clone(), row("cis-aws-2.0-1.1")["status"].clone()), (json!(true), json!("not_evaluated")));
        assert_eq!(row("cis-aws-2.0-9.9")["section"], "9", "not in the catalogue: as the scan had it");
        let sections: Vec<&str> = after["sections"].as_array().unwrap().iter().map(|s| s["section"].as_str().unwrap()).collect();
        assert_eq!(sections, ["1. Identity and Access Management", "2.1. Simple Storage Service (S3)", "3. Logging", "4. Monitoring", "5. Networking", "9"]);
        assert_eq!(after["counts"]["passed"], 2);
        assert_eq!(after["counts"]["failed"], 1);
        assert_eq!(after["counts"]["not_evaluated"], 6);
        assert_eq!(after["counts"]["share_passing"], before["counts"]["share_passing"], "the share counts what was evaluated, as before");
        let soc2 = framework_page(&mut admin, &project, "soc2").await;
        assert!(soc2["catalogue"].is_null(), "no catalogue for soc2");

        let html = admin.get(&app.url(&format!("/projects/{project}/frameworks/cis-aws-2.0"))).await.text().await.unwrap();
        assert!(html.contains("All 8 requirements of the CIS 2.0 (AWS) catalogue; 6 not evaluated by this scan (1 of them manual"), "{backend:?}");
        assert!(html.contains("Ensure CloudTrail is enabled in all regions"));
        let html = admin.get(&app.url(&format!("/projects/{project}/frameworks/soc2"))).await.text().await.unwrap();
        assert!(html.contains("No catalogue is published for this framework"), "{backend:?}");

        let csv = app
            .get_with_key(&key, &format!("/v1/projects/{project}/scans/{scan}/report?format=csv"))
            .await
            .text()
            .await
            .unwrap();
        let failing = csv.lines().find(|l| l.contains(";cis-aws-2.0-2.1.4;") && l.contains("public_assets")).unwrap();
        assert!(
            failing.contains(";cis-aws-2.0-2.1.4;Ensure that S3 Buckets are configured with 'Block public access (bucket settings)';2.1. Simple Storage Service (S3);FAIL;"),
            "{failing}"
        );
        let soc2_row = csv.lines().find(|l| l.contains(";soc2-cc6.1;")).unwrap();
        assert!(soc2_row.contains(";soc2-cc6.1;;cc6;FAIL;"), "no catalogue: as before: {soc2_row}");
    }
}

tidemark_store::test_each_backend! {
    /// A requirement's page: its resources across the account's projects, failing first, each
    /// open one with its finding; what the catalogue says of it; another account sees none of
    /// it.
    async fn a_requirement_lists_its_resources_across_projects(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Enterprise).await;
        let payments = app.push_json(&key, &aws_push("payments")).await;
        let mut billing = aws_push("billing");
        billing["findings"] = json!([
            {"rule_id": "cis-aws-2.0-2.1.4", "resource": "aws_s3_bucket.invoices", "status": "PASS",
             "severity": "high", "message": "Blocked", "remediation": "-"}
        ]);
        let billed = app.push_json(&key, &billing).await;
        assert!(billed["project_id"].is_string(), "{billed}");
        let mut admin = app.signed_in(&provider, &license.email).await;
        let res = admin.post_form("/api/requirement", &[("rule_id", "cis-aws-2.0-7.7")]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{backend:?}: no catalogue and no scan know it");

        let (ok, _, err) = app.command(&["catalogue", "import", FIXTURE], &[]).await;
        assert!(ok, "{err}");
        let res = admin.post_form("/api/requirement", &[("rule_id", "cis-aws-2.0-2.1.4")]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let page: Value = res.json().await.unwrap();
        assert_eq!(page["title"], "Ensure that S3 Buckets are configured with 'Block public access (bucket settings)'");
        assert_eq!(page["framework_name"], "CIS 2.0 (AWS)");
        assert_eq!(page["section"], "2.1. Simple Storage Service (S3)");
        assert_eq!((page["projects"].as_i64(), page["failing_projects"].as_i64()), (Some(2), Some(1)), "{page}");
        let rows: Vec<(&str, &str, &str)> = page["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["status"].as_str().unwrap(), r["project_label"].as_str().unwrap(), r["resource"].as_str().unwrap()))
            .collect();
        assert_eq!(
            rows,
            [
                ("failed", "payments", "aws_s3_bucket.public_assets"),
                ("passed", "billing", "aws_s3_bucket.invoices"),
                ("passed", "payments", "aws_s3_bucket.logs"),
            ],
            "{backend:?}: failing first"
        );
        let failing = &page["resources"][0];
        assert!(failing["finding_id"].as_str().unwrap().starts_with("fnd_"));
        assert_eq!(failing["project_id"], payments["project_id"]);
        assert!(page["resources"][1]["finding_id"].is_null());

        // A rule no scan judged, listed by the catalogue: the page says so.
        let res = admin.post_form("/api/requirement", &[("rule_id", "cis-aws-2.0-5.2")]).await;
        let manualish: Value = res.json().await.unwrap();
        assert_eq!(manualish["resources"], json!([]));
        assert_eq!(manualish["projects"], 0);

        let html = admin.get(&app.url("/requirements/cis-aws-2.0-2.1.4")).await.text().await.unwrap();
        assert!(html.contains("1 project of 2 fail it"), "{backend:?}");
        assert!(html.contains("aws_s3_bucket.public_assets") && html.contains("Amazon S3 provides Block public access"));
        let framework = admin
            .get(&app.url(&format!("/projects/{}/frameworks/cis-aws-2.0", payments["project_id"].as_str().unwrap())))
            .await
            .text()
            .await
            .unwrap();
        assert!(framework.contains(r#"href="/requirements/cis-aws-2.0-2.1.4""#), "the framework page links each requirement");

        // Another account: the catalogue, none of this account's resources.
        let (other, _) = app.with_key(Tier::Team).await;
        let mut stranger = app.signed_in(&provider, &other.email).await;
        let theirs: Value = stranger
            .post_form("/api/requirement", &[("rule_id", "cis-aws-2.0-2.1.4")])
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(theirs["resources"], json!([]), "{backend:?}");
    }
}
