//! The operator's view of what a server holds, and `--json`'s promise on every command:
//! exactly one compact JSON document on standard output, the text for people on standard
//! error, and a JSON error document with exit status 1 on failure.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use reqwest::StatusCode;
use serde_json::Value;
use tidemark_wire::Tier;

use crate::common;
use common::{sample_push, TestApp};

/// Runs `args` with `--json` and returns (succeeded, the one document, stderr).
async fn json(app: &TestApp, args: &[&str], extra: &[(&str, &str)]) -> (bool, Value, String) {
    let mut all = args.to_vec();
    all.push("--json");
    let (ok, out, err) = app.command(&all, extra).await;
    assert_eq!(
        out.lines().count(),
        1,
        "{args:?}: one line on stdout, got {out:?} ({err})"
    );
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
    (ok, doc, err)
}

tidemark_store::test_each_backend! {
    async fn operators_list_accounts_projects_scans_and_keys_and_revoke_a_key(backend) {
        let app = TestApp::spawn(backend).await;
        let (license, api_key) = app.with_key(Tier::Agency).await;
        let other = app.create_license(Tier::Enterprise).await;
        for (label, score, at) in [
            ("api", 70.0, "2026-11-20T10:00:00Z"),
            ("api", 75.0, "2026-11-21T10:00:00Z"),
            ("web", 90.0, "2026-11-21T11:00:00Z"),
        ] {
            let res = app.push(&api_key, &sample_push(label, score, at)).await;
            let status = res.status();
            assert_eq!(status, StatusCode::CREATED, "{}", res.text().await.unwrap());
        }
        let account = license.account_id.as_str();

        let (ok, doc, _) = json(&app, &["account", "list"], &[]).await;
        assert!(ok);
        let accounts = doc["accounts"].as_array().unwrap();
        assert_eq!(accounts.len(), 2);
        let mine = accounts.iter().find(|a| a["account_id"] == account).unwrap();
        assert_eq!(
            (&mine["projects"], &mine["scans"], &mine["active_keys"], &mine["members"]),
            (&Value::from(2), &Value::from(3), &Value::from(1), &Value::from(1))
        );
        assert_eq!(mine["tier"], "agency");

        let (ok, doc, _) = json(&app, &["project", "list", "--account", account], &[]).await;
        assert!(ok);
        let projects = doc["projects"].as_array().unwrap();
        let labels: Vec<&str> = projects.iter().map(|p| p["label"].as_str().unwrap()).collect();
        assert_eq!(labels, ["api", "web"]);
        assert_eq!(projects[0]["scan_count"], 2);
        assert_eq!(projects[0]["last_score"], 75.0);
        let api = projects[0]["project_id"].as_str().unwrap().to_owned();

        let (ok, doc, _) = json(&app, &["scan", "list", "--project", &api, "--limit", "1"], &[]).await;
        assert!(ok);
        let scans = doc["scans"].as_array().unwrap();
        assert_eq!(scans.len(), 1, "the limit holds");
        assert_eq!(scans[0]["score"], 75.0, "newest first");
        assert_eq!(scans[0]["scanned_at"], "2026-11-21T10:00:00Z");
        assert_eq!(doc["account_id"], account);

        // Filters on license list combine.
        let count = |doc: &Value| doc["licenses"].as_array().unwrap().len();
        let (_, doc, _) = json(&app, &["license", "list"], &[]).await;
        assert_eq!(count(&doc), 2);
        let (_, doc, _) = json(&app, &["license", "list", "--tier", "enterprise"], &[]).await;
        assert_eq!((count(&doc), doc["licenses"][0]["license_id"].as_str()), (1, Some(other.license_id.as_str())));
        let upper = license.email.to_uppercase();
        let (_, doc, _) = json(&app, &["license", "list", "--email", &upper, "--state", "active"], &[]).await;
        assert_eq!(count(&doc), 1);
        let (_, doc, _) = json(&app, &["license", "list", "--state", "suspended"], &[]).await;
        assert_eq!(count(&doc), 0);

        let (ok, shown, _) = json(&app, &["license", "show", "--id", &license.license_id], &[]).await;
        assert!(ok);
        assert_eq!(shown["license"]["email"], license.email.as_str());
        assert_eq!(shown["projects"].as_array().unwrap().len(), 2);
        assert_eq!(shown["members"].as_array().unwrap().len(), 1);
        let keys = shown["keys"].as_array().unwrap();
        assert_eq!(keys.len(), 1);
        assert!(!shown.to_string().contains(&api_key) && !shown.to_string().contains(&license.key));
        let key_id = keys[0]["key_id"].as_str().unwrap().to_owned();

        let (ok, doc, _) = json(&app, &["key", "list", "--account", account], &[]).await;
        assert!(ok);
        assert_eq!(doc["keys"][0]["key_id"], key_id.as_str());
        assert!(api_key.starts_with(doc["keys"][0]["prefix"].as_str().unwrap()));

        let (ok, doc, err) = json(&app, &["key", "revoke", "--id", &key_id], &[]).await;
        assert!(ok, "{err}");
        assert_eq!(doc["revoked"], true);
        assert!(err.contains("revoked"), "the sentence for people is on stderr: {err}");
        let res = app.push(&api_key, &sample_push("api", 76.0, "2026-11-22T10:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "refused at once");
        let (_, doc, _) = json(&app, &["audit", "list", "--account", account, "--action", "key.revoked"], &[]).await;
        assert_eq!(doc["events"].as_array().unwrap().len(), 1, "{doc}");

        // Failures: one error document, exit status 1, nothing changed.
        for args in [
            &["key", "revoke", "--id", key_id.as_str()][..],
            &["key", "revoke", "--id", "key_nope"],
            &["scan", "list", "--project", "prj_nope"],
            &["project", "list", "--account", "acct_nope"],
            &["license", "show", "--id", "lcn_nope"],
        ] {
            let (ok, doc, _) = json(&app, args, &[]).await;
            assert!(!ok, "{args:?}");
            let message = doc["error"]["message"].as_str().unwrap_or_else(|| panic!("{doc}"));
            assert!(message.contains("no ") || message.contains("already"), "{args:?}: {message}");
        }
        assert_eq!(app.count("api_keys").await, 1);
    }
}

tidemark_store::test_each_backend! {
    async fn config_check_reports_the_effective_configuration_and_what_answers(backend) {
        let (app, _provider) = TestApp::spawn_with_oidc(backend).await;
        let smtp = common::smtp::SmtpSink::start_anywhere();
        let issuer = app.setting("TIDEMARK_OIDC_ISSUER").unwrap().to_owned();
        let oidc = [
            ("TIDEMARK_OIDC_ISSUER", issuer.as_str()),
            ("TIDEMARK_OIDC_CLIENT_ID", app.setting("TIDEMARK_OIDC_CLIENT_ID").unwrap()),
            ("TIDEMARK_OIDC_CLIENT_SECRET", app.setting("TIDEMARK_OIDC_CLIENT_SECRET").unwrap()),
        ];
        let smtp_url = smtp.url();
        let mut env = oidc.to_vec();
        env.push(("TIDEMARK_SMTP_URL", smtp_url.as_str()));
        let (ok, doc, err) = json(&app, &["config", "check"], &env).await;
        assert!(ok, "{doc} {err}");
        assert_eq!(doc["ok"], true);
        let check = |doc: &Value, name: &str| {
            doc["checks"].as_array().unwrap().iter().find(|c| c["check"] == name).cloned().unwrap()
        };
        for name in ["configuration", "database", "migrations", "smtp", "oidc"] {
            assert_eq!(check(&doc, name)["ok"], true, "{name}: {doc}");
        }
        let setting = |doc: &Value, name: &str| {
            doc["configuration"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned().unwrap()
        };
        let master = app.setting("TIDEMARK_MASTER_KEY").unwrap();
        assert!(!doc.to_string().contains(master), "never the master key");
        assert!(!doc.to_string().contains(app.setting("TIDEMARK_OIDC_CLIENT_SECRET").unwrap()));
        assert!(setting(&doc, "TIDEMARK_MASTER_KEY")["value"].as_str().unwrap().starts_with("key "));
        assert_eq!(setting(&doc, "TIDEMARK_MASTER_KEY")["source"], "environment");
        assert_eq!(setting(&doc, "TIDEMARK_WRITES_PER_MINUTE")["source"], "default");

        // Down peers and a password in the database URL: failed checks, nothing secret shown.
        let closed = format!("http://127.0.0.1:{}", common::free_port());
        let smtp_closed = format!("smtp://mailer:m41lpw@127.0.0.1:{}", common::free_port());
        let db_closed = format!("postgres://tidemark:hunter2@127.0.0.1:{}/tidemark", common::free_port());
        let (ok, doc, err) = json(&app, &["config", "check"], &[
            ("DATABASE_URL", db_closed.as_str()),
            ("TIDEMARK_SMTP_URL", smtp_closed.as_str()),
            ("TIDEMARK_OIDC_ISSUER", closed.as_str()),
            oidc[1],
            oidc[2],
        ]).await;
        assert!(!ok && err.contains("check(s) failed"), "{err}");
        assert_eq!(doc["ok"], false);
        for name in ["database", "smtp", "oidc"] {
            assert_eq!(check(&doc, name)["ok"], false, "{name}: {doc}");
        }
        let text = format!("{doc}{err}");
        assert!(!text.contains("hunter2") && !text.contains("m41lpw"), "{text}");
        assert!(setting(&doc, "DATABASE_URL")["value"].as_str().unwrap().contains("127.0.0.1"));

        // A configuration that does not load is reported the same way.
        let (ok, doc, _) = json(&app, &["config", "check"], &[("TIDEMARK_MIGRATE", "sometimes")]).await;
        assert!(!ok);
        assert_eq!(check(&doc, "configuration")["ok"], false);
        assert!(check(&doc, "configuration")["detail"].as_str().unwrap().contains("TIDEMARK_MIGRATE"));
    }
}
