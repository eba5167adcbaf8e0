//! A scan's compliance report through `/v1` and `tidemark report verify`, on both databases:
//! the printable page, the Prowler-shaped CSV, and the signed JSON checked by an independent
//! verifier (Python's `cryptography`) and by the CLI, and refused after one changed byte.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::cli_client::{env, tidemark};
use crate::common::{assert_error, sample_push, TestApp};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/peers");

/// The Python verifier's answer: the report's text, or why it refused.
fn python_verifies(keys: &std::path::Path, report: &std::path::Path) -> Result<String, String> {
    let out = std::process::Command::new("python3")
        .arg(format!("{PEERS}/verify_report.py"))
        .arg(keys)
        .arg(report)
        .output()
        .expect("python3 (run scripts/setup.sh)");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

tidemark_store::test_each_backend! {
    async fn a_scans_report_prints_exports_and_verifies(backend) {
        let app = TestApp::spawn(backend).await;
        let (_license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let mut body = sample_push("payments api", 70.0, "2026-11-20T10:00:00Z");
        body["git"] = json!({"branch": "main", "default_branch": "main", "commit": "0123456789abcdef0123456789abcdef01234567"});
        let scan = app.push_json(&key, &body).await;
        let (project, scan_id) = (scan["project_id"].as_str().unwrap(), scan["scan_id"].as_str().unwrap());
        let findings: Value = app.get_with_key(&key, &format!("/v1/projects/{project}/findings")).await.json().await.unwrap();
        let triage = |rule: &'static str, state: &'static str, reason: &'static str| {
            let id = findings["findings"].as_array().unwrap().iter()
                .find(|f| f["rule_id"] == rule).unwrap()["id"].as_str().unwrap().to_owned();
            let (app, key) = (&app, &key);
            async move {
                let res = app.client.put(app.url(&format!("/v1/projects/{project}/findings/{id}/triage")))
                    .header("X-API-Key", key)
                    .json(&json!({"state": state, "reason": reason}))
                    .send().await.unwrap();
                assert_eq!(res.status(), StatusCode::OK);
            }
        };
        // The logs bucket set aside as an accepted risk; the instance kept as it is (won't
        // fix), which keeps its requirement failed.
        triage("soc2-cc6.1", "accepted_risk", "Logs bucket, versioning not needed").await;
        triage("cis-gcp-2.0-4.1", "wont_fix", "Legacy instance, retired in Q1").await;
        let path = format!("/v1/projects/{project}/scans/{scan_id}/report");

        // The page: provenance, each requirement, the failure and its triage.
        let res = app.get_with_key(&key, &path).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
        let html = res.text().await.unwrap();
        assert!(html.contains("Compliance report: payments api"), "{html}");
        assert!(html.contains("0123456789abcdef0123456789abcdef01234567"), "the commit");
        assert!(html.contains("<code>cis-gcp-2.0-4.1</code>") && html.contains("class=\"failed\""), "{html}");
        assert!(html.contains("accepted risk</em> by api-key:"), "{html}");
        assert!(html.contains("Logs bucket, versioning not needed"));
        assert!(html.contains("@media print"));
        // Who pushed it, in words an auditor reads (as the scan page says it), not JSON.
        let key_prefix = &key[..12];
        assert!(html.contains(&format!("<dt>Pushed by</dt><dd>API key {key_prefix}… (")), "{html}");
        assert!(!html.contains("&quot;kind&quot;") && !html.contains("{\"kind\""), "{html}");

        // The CSV.
        let csv = app.get_with_key(&key, &format!("{path}?format=csv")).await.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("PROVIDER;ACCOUNTID;ASSESSMENTDATE;FRAMEWORK;REQUIREMENTS_ID"), "{csv}");
        // Won't fix: still a failure, never muted; the triage said in its text.
        let instance_row = lines.iter().find(|l| l.contains(";cis-gcp-2.0-4.1;")).unwrap();
        assert!(instance_row.starts_with("gcp;acme-prod-123;2026-11-20T10:00:00Z;cis-gcp-2.0;cis-gcp-2.0-4.1;;4;FAIL;"), "{csv}");
        assert!(instance_row.contains(": Legacy instance, retired in Q1)") && instance_row.contains("(won't fix, by ") && instance_row.ends_with(";False;"), "{csv}");
        assert!(lines.iter().any(|l| l.contains(";soc2-cc6.1;;cc6;MUTED;") && l.contains(";True;accepted_risk: Logs bucket")), "{csv}");

        // The signed JSON, verified by Python's cryptography against /v1/keys, and by the CLI
        // (offline, with the key set saved).
        let signed: Value = app.get_with_key(&key, &format!("{path}?format=json")).await.json().await.unwrap();
        let report: Value = serde_json::from_str(signed["report"].as_str().unwrap()).unwrap();
        assert_eq!(report["kind"], "tidemark.compliance_report.v1");
        assert_eq!(report["scan"]["branch"], "main");
        let soc2 = report["frameworks"].as_array().unwrap().iter().find(|f| f["framework"] == "soc2").unwrap();
        assert_eq!(soc2["requirements"][0]["status"], "triaged");
        assert_eq!(soc2["counts"]["triaged"], 1);
        let dir = tempfile::tempdir().unwrap();
        let keys: Value = app.get("/v1/keys").await.json().await.unwrap();
        let keys_file = dir.path().join("keys.json");
        std::fs::write(&keys_file, keys.to_string()).unwrap();
        let good = dir.path().join("report.json");
        std::fs::write(&good, serde_json::to_string_pretty(&signed).unwrap()).unwrap();
        assert_eq!(python_verifies(&keys_file, &good).unwrap(), signed["report"].as_str().unwrap(), "{backend:?}");
        let e = env(&app.base_url, dir.path(), "unused", &[("TIDEMARK_API_KEY", key.as_str())], chrono::Utc::now());
        let r = tidemark(&e, &["report", "verify", good.to_str().unwrap(), "--keys", keys_file.to_str().unwrap()]).await;
        assert_eq!(r.code, Ok(0), "{}", r.out);
        assert!(r.out.starts_with("Verified: signed by "), "{}", r.out);
        assert!(r.out.contains("soc2") && r.out.contains("1 triaged"), "{}", r.out);
        let r = tidemark(&e, &["report", "verify", good.to_str().unwrap()]).await;
        assert_eq!(r.code, Ok(0), "against the keys fetched from the service: {}", r.out);

        // One changed byte in the report (a failure reads as a pass), or in the signature:
        // both verifiers refuse.
        let text = std::fs::read_to_string(&good).unwrap();
        let at = text.find("\\\"failed\\\"").expect("a failed status in the report");
        let mut bytes = text.into_bytes();
        bytes[at + 2] = b'F';
        let tampered = dir.path().join("tampered.json");
        std::fs::write(&tampered, &bytes).unwrap();
        let refused = python_verifies(&keys_file, &tampered).unwrap_err();
        assert!(refused.contains("the report was changed"), "{refused}");
        let r = tidemark(&e, &["report", "verify", tampered.to_str().unwrap(), "--keys", keys_file.to_str().unwrap()]).await;
        assert_ne!(r.code, Ok(0), "{}", r.out);
        // The signature's first character: every bit of it counts (the last one's low bits
        // are padding, which a lenient base64 decoder ignores).
        let mut sig = signed.clone();
        let s = sig["signature"].as_str().unwrap().to_owned();
        let at = s.rfind('.').unwrap() + 1;
        let flipped = if s.as_bytes()[at] == b'A' { 'B' } else { 'A' };
        sig["signature"] = json!(format!("{}{flipped}{}", &s[..at], &s[at + 1..]));
        let forged = dir.path().join("forged.json");
        std::fs::write(&forged, sig.to_string()).unwrap();
        assert!(python_verifies(&keys_file, &forged).is_err());
        let r = tidemark(&e, &["report", "verify", forged.to_str().unwrap(), "--keys", keys_file.to_str().unwrap()]).await;
        assert_ne!(r.code, Ok(0), "{}", r.out);

        // Refusals.
        assert_error(app.get_with_key(&key, &format!("{path}?format=pdf")).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert_error(app.get_with_key(&other_key, &path).await, StatusCode::NOT_FOUND, "not_found").await;
        assert_error(app.get_with_key(&key, &format!("/v1/projects/{project}/scans/scn_nope/report")).await, StatusCode::NOT_FOUND, "not_found").await;
    }
}
