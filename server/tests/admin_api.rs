//! The vendor's admin API (`/admin/v1`) on both databases: the first admin token from the
//! operator's command, a token per role and what each may do (every allowed call works, every
//! other is `403 insufficient_role`), idempotent creation, `If-Match`, entitlement overrides
//! reaching validation at once, keyset pages, bad input refused without a change, the audit
//! log under the token's name.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use crate::common;

use common::{assert_error, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_store::audit::{list_audit, AuditQuery};

/// The vendor's systems: one token per role, and a client that sends them.
pub(crate) struct Vendor {
    pub client: reqwest::Client,
    pub base: String,
    pub tokens: HashMap<&'static str, String>,
}

impl Vendor {
    /// The first admin token from `vendor-token create`, then one token per other role made
    /// by it over the API.
    pub async fn set_up(app: &TestApp) -> Vendor {
        let (ok, out, err) = app
            .command(
                &[
                    "vendor-token",
                    "create",
                    "--name",
                    "root",
                    "--role",
                    "admin",
                    "--json",
                ],
                &[],
            )
            .await;
        assert!(ok, "{err}");
        let made: Value = serde_json::from_str(&out).unwrap();
        let root = made["token"].as_str().unwrap().to_owned();
        assert!(root.starts_with("tmk_vendor_"));
        assert!(!err.contains(&root), "the token stays off stderr");
        let mut vendor = Vendor {
            client: reqwest::Client::new(),
            base: app.url("/admin/v1"),
            tokens: HashMap::from([("admin", root)]),
        };
        for role in ["sales", "support", "billing", "read"] {
            let res = vendor
                .call(
                    "admin",
                    "POST",
                    "/tokens",
                    Some(json!({"name": format!("{role}-desk"), "role": role})),
                )
                .await;
            assert_eq!(res.status(), StatusCode::CREATED);
            let made: Value = res.json().await.unwrap();
            assert_eq!(made["role"], role);
            assert_eq!(made["created_by"], "vendor:root");
            vendor
                .tokens
                .insert(role, made["token"].as_str().unwrap().to_owned());
        }
        vendor
    }

    pub async fn call(
        &self,
        role: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Response {
        self.send(role, method, path, body, &[]).await
    }

    async fn send(
        &self,
        role: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.tokens[role]);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        req.send().await.unwrap()
    }

    pub async fn create(&self, role: &str, body: Value) -> Value {
        let res = self.call(role, "POST", "/licenses", Some(body)).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        res.json().await.unwrap()
    }
}

fn days_from_now(days: i64) -> String {
    tidemark_domain::to_rfc3339(tidemark_domain::now_millis() + days * 86_400_000)
}

tidemark_store::test_each_backend! {
    async fn each_role_may_do_what_its_table_says_and_nothing_else(backend) {
        let app = TestApp::spawn(backend).await;
        let vendor = Vendor::set_up(&app).await;
        let made = vendor.create("admin", json!({"email": "buyer@example.com", "tier": "team"})).await;
        let id = made["license"]["id"].as_str().unwrap().to_owned();
        let lic = |rest: &str| format!("/licenses/{id}{rest}");
        let expires = made["license"]["expires_at"].as_str().unwrap().to_owned();
        let at = |days: i64| tidemark_domain::to_rfc3339(
            tidemark_domain::time::parse_rfc3339("t", &expires).unwrap() + days * 86_400_000);

        // (operation, method, path, body, roles that may)
        type Case = (&'static str, &'static str, String, Option<Value>, &'static [&'static str]);
        let cases: Vec<Case> = vec![
            ("list", "GET", "/licenses".into(), None, &["admin", "sales", "support", "billing", "read"]),
            ("show", "GET", lic(""), None, &["admin", "sales", "support", "billing", "read"]),
            ("create", "POST", "/licenses".into(), Some(json!({"email": "x@example.com", "tier": "team"})), &["admin", "sales", "billing"]),
            ("create with overrides", "POST", "/licenses".into(), Some(json!({"email": "y@example.com", "tier": "team", "features_added": ["custom_frameworks"]})), &["admin", "sales"]),
            ("change tier", "PATCH", lic(""), Some(json!({"tier": "agency"})), &["admin", "sales", "billing"]),
            ("change overrides", "PATCH", lic(""), Some(json!({"features_removed": ["drift_detection"]})), &["admin", "sales"]),
            ("change cap", "PATCH", lic(""), Some(json!({"max_projects": 3})), &["admin", "sales"]),
            ("extend 10 days", "PATCH", lic(""), Some(json!({"expires_at": at(10)})), &["admin", "sales", "support", "billing"]),
            ("extend 90 days", "PATCH", lic(""), Some(json!({"expires_at": at(90)})), &["admin", "sales", "billing"]),
            ("suspend", "POST", lic("/suspend"), Some(json!({"reason": "chargeback"})), &["admin", "support", "billing"]),
            ("resume", "POST", lic("/resume"), Some(json!({"reason": "paid"})), &["admin", "support", "billing"]),
            ("resend", "POST", lic("/resend"), None, &["admin", "support"]),
            ("offline file", "POST", lic("/offline-file"), Some(json!({"days": 5})), &["admin", "support"]),
            ("list tokens", "GET", "/tokens".into(), None, &["admin"]),
            ("accounts", "GET", "/accounts".into(), None, &["admin", "sales", "support", "billing", "read"]),
            ("an account", "GET", format!("/accounts/{}", made["license"]["account_id"].as_str().unwrap()), None, &["admin", "sales", "support", "billing", "read"]),
            ("audit", "GET", "/audit?limit=5".into(), None, &["admin", "sales", "support", "billing", "read"]),
            ("signing keys", "GET", "/signing-keys".into(), None, &["admin", "sales", "support", "billing", "read"]),
            ("rotate the signing key", "POST", "/signing-keys/rotate".into(), Some(json!({"overlap": "48h"})), &["admin"]),
            ("make a token", "POST", "/tokens".into(), Some(json!({"name": "x", "role": "read"})), &["admin"]),
            ("licence events", "GET", format!("/events?license_id={id}"), None, &["admin", "sales", "support", "billing", "read"]),
            ("list vendor webhooks", "GET", "/webhooks".into(), None, &["admin"]),
            ("add a vendor webhook", "POST", "/webhooks".into(), Some(json!({"url": "https://hooks.example.com/tidemark", "events": ["license.expiring"]})), &["admin"]),
        ];
        for (name, method, path, body, allowed) in &cases {
            for role in ["admin", "sales", "support", "billing", "read"] {
                // Each allowed call starts from the same licence, so a change is a change.
                let reset = json!({"tier": "team", "expires_at": expires, "max_projects": null,
                                   "features_added": [], "features_removed": []});
                assert_eq!(vendor.call("admin", "PATCH", &lic(""), Some(reset)).await.status(), StatusCode::OK);
                let _ = vendor.call("admin", "POST", &lic("/resume"), Some(json!({"reason": "reset"}))).await;
                if *name == "resume" {
                    vendor.call("admin", "POST", &lic("/suspend"), Some(json!({"reason": "set up"}))).await;
                }
                let res = vendor.call(role, method, path, body.clone()).await;
                if allowed.contains(&role) {
                    assert!(res.status().is_success(), "{role} {name}: {}", res.status());
                    if *name == "make a token" {
                        let made: Value = res.json().await.unwrap();
                        vendor.call("admin", "DELETE", &format!("/tokens/{}", made["id"].as_str().unwrap()), None).await;
                    } else if *name == "add a vendor webhook" {
                        let made: Value = res.json().await.unwrap();
                        let gone = vendor.call("admin", "DELETE", &format!("/webhooks/{}", made["webhook"]["id"].as_str().unwrap()), None).await;
                        assert_eq!(gone.status(), StatusCode::NO_CONTENT);
                    }
                } else {
                    let message = assert_error(res, StatusCode::FORBIDDEN, "insufficient_role").await;
                    assert!(message.contains(&format!("has the {role} role")), "{message}");
                    assert!(allowed.iter().all(|r| message.contains(r)), "names who may: {message}");
                }
            }
        }
        // Nothing a refused call asked for happened: the licence is as the last reset left it.
        let now: Value = vendor.call("read", "GET", &lic(""), None).await.json().await.unwrap();
        assert_eq!((now["tier"].as_str(), now["state"].as_str()), (Some("team"), Some("active")));

        // No token, a malformed one, another scheme's, a revoked one: 401 with a challenge.
        let bare = vendor.client.get(format!("{}/licenses", vendor.base)).send().await.unwrap();
        assert_eq!(bare.headers()["www-authenticate"], "Bearer realm=\"tidemark-admin\"");
        assert_error(bare, StatusCode::UNAUTHORIZED, "invalid_token").await;
        for bad in ["tmk_vendor_", "tmk_scim_abc", "svc_api_abcdef"] {
            let res = vendor.client.get(format!("{}/licenses", vendor.base)).bearer_auth(bad).send().await.unwrap();
            assert_error(res, StatusCode::UNAUTHORIZED, "invalid_token").await;
        }
        let tokens: Value = vendor.call("admin", "GET", "/tokens", None).await.json().await.unwrap();
        let read_id = tokens["tokens"].as_array().unwrap().iter()
            .find(|t| t["name"] == "read-desk").unwrap()["id"].as_str().unwrap().to_owned();
        assert!(tokens.to_string().find("tmk_vendor_").is_some_and(|_| !tokens.to_string().contains(&vendor.tokens["read"])), "never a token in a list");
        assert_eq!(vendor.call("admin", "DELETE", &format!("/tokens/{read_id}"), None).await.status(), StatusCode::NO_CONTENT);
        assert_error(vendor.call("read", "GET", "/licenses", None).await, StatusCode::UNAUTHORIZED, "invalid_token").await;
        // Tokens are kept as hashes only.
        assert_eq!(app.count("vendor_tokens WHERE token_hash LIKE 'tmk_vendor_%'").await, 0);

        let forged = vendor.send("admin", "GET", "/licenses?limit=1", None, &[("x-tidemark-admin-call", "GET /forged")]).await;
        assert_eq!(forged.status(), StatusCode::OK);
        // Every change is in the audit log under the token's name.
        let log = list_audit(&app.db, &AuditQuery { limit: 1_000, ..Default::default() }).await.unwrap();
        let by = |actor: &str, action: &str| log.iter().any(|e| e.actor == actor && e.action == action && e.target == id);
        assert!(by("vendor:billing-desk", "license.suspended"), "billing suspended it");
        assert!(by("vendor:support-desk", "license.resent"));
        assert!(by("vendor:sales-desk", "license.updated"));
        // Reads too, with what was asked; a client cannot name the call itself.
        assert!(log.iter().any(|e| e.actor == "vendor:read-desk" && e.action == "admin.read"
            && e.target == format!("/admin/v1/licenses/{id}") && e.account_id.is_none()), "a read is audited");
        assert!(log.iter().any(|e| e.action == "admin.read" && e.target == "/admin/v1/audit?limit=5"));
        assert!(log.iter().any(|e| e.actor == "vendor:root" && e.target == "/admin/v1/licenses?limit=1"));
        assert!(!log.iter().any(|e| e.target == "/forged"), "the call is named by the server");
        assert!(log.iter().any(|e| e.actor == "vendor:root" && e.action == "vendor_token.revoked" && e.target == read_id));
        assert!(log.iter().any(|e| e.actor == "vendor:support-desk" && e.action == "license.suspended"
            && e.after_summary.as_deref() == Some("suspended (chargeback)")), "with its reason");
    }
}

tidemark_store::test_each_backend! {
    async fn billing_retries_make_one_licence_and_changes_respect_if_match(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_VALIDATION_CACHE_MS", "0")]).await;
        let vendor = Vendor::set_up(&app).await;
        let body = json!({"email": "Shop@Example.com", "tier": "team", "expires_at": days_from_now(30)});
        let order = [("idempotency-key", "cs_test_a1b2c3")];
        let first = vendor.send("billing", "POST", "/licenses", Some(body.clone()), &order).await;
        assert_eq!(first.status(), StatusCode::CREATED);
        assert!(first.headers().get("idempotent-replayed").is_none());
        let first: Value = first.json().await.unwrap();
        let again = vendor.send("billing", "POST", "/licenses", Some(body.clone()), &order).await;
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        let again: Value = again.json().await.unwrap();
        assert_eq!(again["license"]["id"], first["license"]["id"]);
        assert_eq!(again["license_key"], first["license_key"], "the retry answers the key again");
        let other = json!({"email": "shop@example.com", "tier": "agency"});
        let message = assert_error(vendor.send("billing", "POST", "/licenses", Some(other), &order).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("Idempotency-Key"), "{message}");
        assert_eq!(app.count("licenses").await, 1);
        // Another token's key of the same name is its own.
        let sales = vendor.send("sales", "POST", "/licenses", Some(body), &order).await;
        assert!(sales.headers().get("idempotent-replayed").is_none());
        assert_eq!(app.count("licenses").await, 2);

        // The key validates; its features follow the overrides at once.
        let key = first["license_key"].as_str().unwrap();
        let hash = tidemark_domain::secrets::sha256_hex(key.as_bytes());
        let validate = || async {
            let res = app.client.post(app.url("/v1/license/validate"))
                .header("X-License-Key-Hash", &hash).send().await.unwrap();
            res.json::<Value>().await.unwrap()
        };
        assert_eq!(validate().await["features"], json!(["hosted_dashboard", "drift_detection"]));
        let id = first["license"]["id"].as_str().unwrap();
        let path = format!("/licenses/{id}");
        let read = vendor.call("read", "GET", &path, None).await;
        let etag = read.headers()["etag"].to_str().unwrap().to_owned();
        assert_eq!(etag, format!("\"{id}.1\""));
        let change = json!({"features_added": ["custom_frameworks"], "features_removed": ["drift_detection"]});
        let changed = vendor.send("sales", "PATCH", &path, Some(change.clone()), &[("if-match", &etag)]).await;
        assert_eq!(changed.status(), StatusCode::OK);
        assert_eq!(changed.headers()["etag"].to_str().unwrap(), format!("\"{id}.2\""));
        let changed: Value = changed.json().await.unwrap();
        assert_eq!(changed["features"], json!(["hosted_dashboard", "custom_frameworks"]));
        assert_eq!(validate().await["features"], json!(["hosted_dashboard", "custom_frameworks"]));
        // The old ETag is stale: 412, nothing changes.
        let stale = vendor.send("sales", "PATCH", &path, Some(json!({"tier": "enterprise"})), &[("if-match", &etag)]).await;
        assert_error(stale, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
        let bogus = vendor.send("sales", "PATCH", &path, Some(json!({"tier": "enterprise"})), &[("if-match", "\"lcn_other.2\"")]).await;
        assert_error(bogus, StatusCode::PRECONDITION_FAILED, "precondition_failed").await;
        let now: Value = vendor.call("read", "GET", &path, None).await.json().await.unwrap();
        assert_eq!((now["tier"].as_str(), now["version"].as_i64()), (Some("team"), Some(2)));
        // A feature both added and removed is refused whole.
        let both = json!({"features_removed": ["custom_frameworks"], "tier": "agency"});
        let message = assert_error(vendor.call("sales", "PATCH", &path, Some(both)).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("custom_frameworks"), "{message}");
        // Suspended: validation says so.
        vendor.call("support", "POST", &format!("{path}/suspend"), Some(json!({"reason": "fraud check"}))).await;
        assert_eq!(validate().await["valid"], false);
        // A cap of null takes the tier's again.
        let capped: Value = vendor.call("sales", "PATCH", &path, Some(json!({"max_projects": 7}))).await.json().await.unwrap();
        assert_eq!((capped["max_projects"].as_u64(), capped["project_cap"].as_u64()), (Some(7), Some(7)));
        let uncapped: Value = vendor.call("sales", "PATCH", &path, Some(json!({"max_projects": null}))).await.json().await.unwrap();
        assert_eq!((uncapped["max_projects"].as_u64(), uncapped["project_cap"].as_u64()), (None, Some(1)));
    }
}

tidemark_store::test_each_backend! {
    async fn lists_page_by_cursor_and_bad_input_changes_nothing(backend) {
        let app = TestApp::spawn(backend).await;
        let vendor = Vendor::set_up(&app).await;
        for i in 0..5 {
            let tier = if i == 3 { "enterprise" } else { "team" };
            vendor.create("sales", json!({"email": format!("c{i}@example.com"), "tier": tier})).await;
        }
        let mut seen = Vec::new();
        let mut path = "/licenses?limit=2".to_owned();
        loop {
            let page: Value = vendor.call("read", "GET", &path, None).await.json().await.unwrap();
            seen.extend(page["licenses"].as_array().unwrap().iter().map(|l| l["email"].as_str().unwrap().to_owned()));
            match page["next_cursor"].as_str() {
                Some(cursor) => path = format!("/licenses?limit=2&cursor={cursor}"),
                None => break,
            }
        }
        assert_eq!(seen, (0..5).map(|i| format!("c{i}@example.com")).collect::<Vec<_>>());
        let enterprise: Value = vendor.call("read", "GET", "/licenses?tier=enterprise&state=active", None).await.json().await.unwrap();
        assert_eq!(enterprise["licenses"].as_array().unwrap().len(), 1);
        let by_mail: Value = vendor.call("read", "GET", "/licenses?email=C2@EXAMPLE.COM", None).await.json().await.unwrap();
        assert_eq!(by_mail["licenses"][0]["email"], "c2@example.com");

        for (query, needle) in [
            ("cursor=bm90LWEtY3Vyc29y", "cursor"),
            ("limit=0", "limit"),
            ("tier=gold", "tier"),
            ("colour=blue", "colour"),
            ("expires_before=soon", "expires_before"),
        ] {
            let message = assert_error(vendor.call("read", "GET", &format!("/licenses?{query}"), None).await,
                StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
            assert!(message.contains(needle), "{query}: {message}");
        }
        let before = app.count("licenses").await;
        let message = assert_error(vendor.call("sales", "POST", "/licenses",
            Some(json!({"email": "z@example.com", "tier": "team", "seats": 3}))).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("seats"), "names the unknown field: {message}");
        for body in [
            json!({"email": "not an address", "tier": "team"}),
            json!({"email": "z@example.com", "tier": "gold"}),
            json!({"email": "z@example.com", "tier": "team", "expires_at": "2020-01-01T00:00:00Z"}),
            json!({"email": "z@example.com", "tier": "team", "features_added": ["x-ray"]}),
        ] {
            assert_error(vendor.call("sales", "POST", "/licenses", Some(body)).await,
                StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        }
        let huge = json!({"email": "z@example.com", "tier": "team", "pad": "x".repeat(70_000)});
        assert_error(vendor.call("sales", "POST", "/licenses", Some(huge)).await,
            StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large").await;
        let not_json = vendor.client.post(format!("{}/licenses", vendor.base))
            .bearer_auth(&vendor.tokens["sales"]).header("content-type", "application/json")
            .body("{").send().await.unwrap();
        assert_error(not_json, StatusCode::BAD_REQUEST, "invalid_json").await;
        assert_eq!(app.count("licenses").await, before, "nothing was made");
        assert_error(vendor.call("read", "GET", "/licenses/lcn_nothing", None).await,
            StatusCode::NOT_FOUND, "not_found").await;
        assert_error(vendor.call("read", "GET", "/nowhere", None).await, StatusCode::NOT_FOUND, "not_found").await;
        assert_error(vendor.call("read", "PUT", "/licenses", None).await,
            StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed").await;
        let doc: Value = app.get("/admin/v1/openapi.json").await.json().await.unwrap();
        assert_eq!(doc["info"]["title"], "Tidemark admin API");
        assert!(doc["paths"]["/admin/v1/licenses/{license_id}"]["patch"].is_object());
    }
}

tidemark_store::test_each_backend! {
    async fn the_operator_sets_overrides_on_the_same_path(backend) {
        let app = TestApp::spawn(backend).await;
        let (ok, out, err) = app.command(&["license", "create", "--email", "ops@example.com", "--tier", "team",
            "--features-removed", "drift_detection", "--json"], &[]).await;
        assert!(ok, "{err}");
        let made: Value = serde_json::from_str(&out).unwrap();
        let id = made["license_id"].as_str().unwrap().to_owned();
        let (ok, out, err) = app.command(&["license", "update", "--id", &id, "--features-added",
            "custom_frameworks,priority_support", "--max-projects", "4", "--json"], &[]).await;
        assert!(ok, "{err}");
        let shown: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(shown["features"], json!(["hosted_dashboard", "custom_frameworks", "priority_support"]));
        assert_eq!(shown["max_projects"], 4);
        let (ok, _, err) = app.command(&["license", "update", "--id", &id, "--features-added", "x-ray"], &[]).await;
        assert!(!ok && err.contains("unknown feature \"x-ray\""), "{err}");
        let (ok, _, err) = app.command(&["license", "update", "--id", &id, "--features-added", "drift_detection"], &[]).await;
        assert!(!ok && err.contains("both added and removed"), "{err}");
        let (ok, _, err) = app.command(&["license", "update", "--id", &id], &[]).await;
        assert!(!ok && err.contains("nothing to change"), "{err}");
        let log = list_audit(&app.db, &AuditQuery { limit: 100, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.action == "license.updated" && e.target == id && e.actor.starts_with("operator:")
            && e.after_summary.as_deref() == Some("tier team, features +custom_frameworks +priority_support -drift_detection, at most 4 projects")));
    }
}

tidemark_store::test_each_backend! {
    async fn accounts_the_audit_log_bundles_and_signing_keys_answer_as_their_commands_do(backend) {
        let app = TestApp::spawn(backend).await;
        let vendor = Vendor::set_up(&app).await;
        let mut accounts = Vec::new();
        for i in 0..3 {
            let made = vendor.create("sales", json!({"email": format!("a{i}@example.com"), "tier": "agency"})).await;
            accounts.push(made["license"]["account_id"].as_str().unwrap().to_owned());
        }
        // Accounts, paged: each once, oldest first, with its licence and counts.
        let mut seen = Vec::new();
        let mut path = "/accounts?limit=2".to_owned();
        loop {
            let page: Value = vendor.call("read", "GET", &path, None).await.json().await.unwrap();
            for a in page["accounts"].as_array().unwrap() {
                assert_eq!(a["tier"], "agency");
                assert_eq!((a["members"].as_i64(), a["projects"].as_i64()), (Some(1), Some(0)));
                seen.push(a["id"].as_str().unwrap().to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(c) => path = format!("/accounts?limit=2&cursor={c}"),
                None => break,
            }
        }
        assert_eq!(seen, accounts);
        let one: Value = vendor.call("support", "GET", &format!("/accounts/{}", accounts[1]), None).await.json().await.unwrap();
        assert_eq!(one["email"], "a1@example.com");
        assert_error(vendor.call("support", "GET", "/accounts/acct_nothing", None).await, StatusCode::NOT_FOUND, "not_found").await;
        // A licence cursor is no account cursor.
        let licences: Value = vendor.call("read", "GET", "/licenses?limit=1", None).await.json().await.unwrap();
        let cursor = licences["next_cursor"].as_str().unwrap();
        assert_error(vendor.call("read", "GET", &format!("/accounts?cursor={cursor}"), None).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;

        // The audit log, newest first, paged, filtered by actor and action.
        let page: Value = vendor.call("read", "GET", "/audit?actor=vendor:sales-desk&action=license.created&limit=2", None)
            .await.json().await.unwrap();
        let first: Vec<&str> = page["events"].as_array().unwrap().iter().map(|e| e["target"].as_str().unwrap()).collect();
        assert_eq!(first.len(), 2);
        let cursor = page["next_cursor"].as_str().unwrap();
        let rest: Value = vendor.call("read", "GET", &format!("/audit?actor=vendor:sales-desk&action=license.created&limit=2&cursor={cursor}"), None)
            .await.json().await.unwrap();
        assert_eq!(rest["events"].as_array().unwrap().len(), 1);
        assert!(rest["next_cursor"].is_null());
        assert_error(vendor.call("read", "GET", "/audit?action=license.stolen", None).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;

        // A bundle, admin only, served to valid licences with its checksum.
        let bytes = b"profiles v2".to_vec();
        let publish = |role: &'static str| {
            let body = bytes.clone();
            let client = vendor.client.clone();
            let url = format!("{}/bundles?name=profiles-v2.tar", vendor.base);
            let token = vendor.tokens[role].clone();
            async move {
                client.post(url).bearer_auth(token).header("content-type", "application/octet-stream")
                    .body(body).send().await.unwrap()
            }
        };
        assert_error(publish("sales").await, StatusCode::FORBIDDEN, "insufficient_role").await;
        let res = publish("admin").await;
        assert_eq!(res.status(), StatusCode::CREATED);
        let bundle: Value = res.json().await.unwrap();
        assert_eq!(bundle["bundle_checksum"], format!("sha256:{}", tidemark_domain::secrets::sha256_hex(&bytes)));
        let json_body = vendor.call("admin", "POST", "/bundles", Some(json!({}))).await;
        assert_error(json_body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type").await;

        // Signing keys: rotating adds an announced key, as `signing-key rotate` does.
        let before: Value = vendor.call("read", "GET", "/signing-keys", None).await.json().await.unwrap();
        let rotated: Value = vendor.call("admin", "POST", "/signing-keys/rotate", Some(json!({"overlap": "48h"})))
            .await.json().await.unwrap();
        assert_eq!(rotated["keys"].as_array().unwrap().len(), before["keys"].as_array().unwrap().len() + 1);
        let added = rotated["added"].as_str().unwrap();
        assert!(rotated["keys"].as_array().unwrap().iter().any(|k| k["kid"] == added && k["stage"] == "announced"));
        assert_error(vendor.call("admin", "POST", "/signing-keys/rotate", Some(json!({"overlap": "soon"}))).await,
            StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        let (ok, out, err) = app.command(&["signing-key", "list", "--json"], &[]).await;
        assert!(ok, "{err}");
        let listed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(listed["keys"], rotated["keys"], "the command and the API read one schedule");
        let log = list_audit(&app.db, &AuditQuery { limit: 100, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.actor == "vendor:root" && e.action == "signing_key.created"));
        assert!(log.iter().any(|e| e.actor == "vendor:root" && e.action == "bundle.published"));
    }
}
