//! Signed webhooks end to end, against a real HTTP receiver on loopback: signatures checked
//! with an HMAC computed here, retries after 500s with growing pauses, the delivery log,
//! Redeliver, test events, secret rotation, the Slack format, redirects not followed, the
//! private-address rule (through a real DNS server), admin-only access, and one delivery per
//! event with two replicas on one PostgreSQL.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::time::Duration;

use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::Value;
use sha2::Sha256;
use tidemark_domain::access::Role;
use tidemark_store::Backend;
use tidemark_wire::Tier;

use crate::common;
use common::browser::Browser;
use common::receiver::{Received, Receiver};
use common::{sample_push, TestApp};

/// Fast retries, and the receiver is on loopback.
const TEST_ENV: [(&str, &str); 2] = [
    ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
    ("TIDEMARK_WEBHOOK_RETRY_BASE_MS", "300"),
];

/// The receiver's check, written from the documented recipe rather than the server's code:
/// `v1` is hex HMAC-SHA256 of `"<t>.<body>"` under the secret, and `t` is recent.
fn signed_with(secret: &str, r: &Received) -> bool {
    let header = r.header("tidemark-signature");
    let parts: HashMap<&str, &str> = header
        .split(',')
        .filter_map(|p| p.split_once('='))
        .collect();
    let (Some(t), Some(v1)) = (parts.get("t"), parts.get("v1")) else {
        return false;
    };
    let t: i64 = t.parse().unwrap();
    let now = chrono::Utc::now().timestamp();
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(&r.body);
    hex::encode(mac.finalize().into_bytes()) == *v1 && (now - t).abs() < 300
}

async fn create(admin: &mut Browser, form: &[(&str, &str)]) -> (String, String) {
    let res = admin.post_form("/api/create_webhook", form).await;
    assert_eq!(res.status(), StatusCode::OK);
    let created: Value = res.json().await.unwrap();
    (
        created["webhook_id"].as_str().unwrap().to_owned(),
        created["secret"].as_str().unwrap().to_owned(),
    )
}

async fn view(admin: &mut Browser) -> Value {
    admin
        .post_form("/api/webhooks", &[])
        .await
        .json()
        .await
        .unwrap()
}

/// The delivery log's row for this event and endpoint, once it is no longer in flight.
async fn settled(admin: &mut Browser, event_id: &str, webhook_id: &str, state: &str) -> Value {
    for _ in 0..100 {
        let v = view(admin).await;
        let row = v["deliveries"].as_array().unwrap().iter().find(|d| {
            d["event_id"] == event_id && d["webhook_id"] == webhook_id && d["state"] == state
        });
        if let Some(row) = row {
            return row.clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "no {state} delivery of {event_id} to {webhook_id}: {}",
        view(admin).await
    );
}

tidemark_store::test_each_backend! {
    async fn deliveries_are_signed_retried_after_errors_logged_and_redelivered(backend) {
        let receiver = Receiver::start().await;
        let (app, provider) = TestApp::spawn_with_oidc_and(backend, &TEST_ENV).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let mut admin = app.signed_in(&provider, &license.email).await;

        let url = format!("{}/hooks/tidemark?token=s3cr3t", receiver.base);
        let (hook, secret) = create(&mut admin, &[
            ("url", &url), ("scan_pushed", "true"), ("gate_failed", "true"),
        ]).await;
        assert!(secret.starts_with("whsec_"));
        let slack_url = format!("{}/slack", receiver.base);
        let (slack, slack_secret) = create(&mut admin, &[
            ("url", &slack_url), ("format", "slack"), ("score_regressed", "true"),
        ]).await;
        let listed = view(&mut admin).await;
        let endpoints = listed["endpoints"].as_array().unwrap();
        assert_eq!(endpoints.len(), 2);
        assert_eq!(endpoints[0]["url"], format!("{}/…", receiver.base), "no path or query shown");
        assert_eq!(endpoints[0]["events"], serde_json::json!(["scan.pushed", "gate.failed"]));
        assert_eq!(endpoints[1]["format"], "slack");
        assert!(!listed.to_string().contains("s3cr3t") && !listed.to_string().contains(&secret));

        // Two failures, then success: three attempts of one event, each signed, with a
        // longer pause before the third than before the second.
        receiver.answer_next(&[500, 503]);
        let first = app.push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let got = receiver.wait_for(3).await;
        assert!(got.iter().all(|r| r.path == "/hooks/tidemark" && signed_with(&secret, r)));
        assert!(got.iter().all(|r| r.header("tidemark-event") == "scan.pushed"));
        assert!(got.iter().all(|r| r.header("content-type") == "application/json"));
        let event_id = got[0].json()["id"].as_str().unwrap().to_owned();
        assert!(got.iter().all(|r| r.json()["id"] == event_id.as_str()), "one event, retried");
        assert!(got[2].at - got[1].at > got[1].at - got[0].at, "back-off grows");
        let body = got[0].json();
        assert_eq!(body["type"], "scan.pushed");
        assert_eq!(body["account_id"], license.account_id.as_str());
        assert_eq!(body["project"]["label"], "web");
        assert_eq!(body["project"]["id"], first["project_id"]);
        assert_eq!(body["scan"]["scan_id"], first["scan_id"]);
        assert_eq!(body["scan"]["score"], 80.0);
        assert_eq!(body["scan"]["gate"]["status"], "none");
        assert_eq!(body["dashboard_url"], first["dashboard_url"]);
        assert!(!signed_with(&slack_secret, &got[0]), "each endpoint has its own secret");

        let row = settled(&mut admin, &event_id, &hook, "delivered").await;
        assert_eq!((row["attempts"].as_i64(), row["status_code"].as_i64()), (Some(3), Some(204)));
        assert!(row["latency_ms"].as_i64().is_some());

        // A regression: the Slack endpoint hears of it, in Slack's format.
        app.push_json(&key, &sample_push("web", 70.0, "2026-11-20T11:00:00Z")).await;
        let got = receiver.wait_for(5).await;
        let to_slack: Vec<&Received> = got.iter().filter(|r| r.path == "/slack").collect();
        assert_eq!(to_slack.len(), 1);
        assert!(signed_with(&slack_secret, to_slack[0]));
        let text = to_slack[0].json()["text"].as_str().unwrap().to_owned();
        assert!(text.contains("*web* regressed: score 70 (-10)"), "{text}");

        // Redeliver sends the same event again.
        let res = admin.post_form("/api/redeliver_webhook", &[("event_id", &event_id), ("webhook_id", &hook)]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let got = receiver.wait_for(6).await;
        assert_eq!(got[5].json()["id"], event_id.as_str());

        // A new secret signs from now on; the old one no longer does.
        let res = admin.post_form("/api/rotate_webhook_secret", &[("webhook_id", &hook)]).await;
        let rotated: Value = res.json().await.unwrap();
        let new_secret = rotated["secret"].as_str().unwrap().to_owned();
        assert_ne!(new_secret, secret);
        let res = admin.post_form("/api/send_test_webhook", &[("webhook_id", &hook)]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let got = receiver.wait_for(7).await;
        assert_eq!(got[6].json()["type"], "webhook.test");
        assert!(signed_with(&new_secret, &got[6]) && !signed_with(&secret, &got[6]));

        // A redirect is a failure, and is not followed.
        let redirect = format!("{}/redirect", receiver.base);
        let (moved, _) = create(&mut admin, &[("url", &redirect), ("keys_rotated", "true")]).await;
        admin.post_form("/api/send_test_webhook", &[("webhook_id", &moved)]).await;
        receiver.wait_for(8).await;
        let v = view(&mut admin).await;
        let row = v["deliveries"].as_array().unwrap().iter()
            .find(|d| d["webhook_id"] == moved.as_str() && d["status_code"] == 302)
            .cloned();
        let row = match row {
            Some(row) => row,
            None => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let v = view(&mut admin).await;
                v["deliveries"].as_array().unwrap().iter()
                    .find(|d| d["webhook_id"] == moved.as_str()).cloned().unwrap()
            }
        };
        assert_eq!(row["state"], "pending", "retried later: {row}");
        assert!(row["error"].as_str().unwrap().contains("redirects are not followed"));
        assert!(receiver.received().iter().all(|r| r.path != "/target"));

        // Deleting an endpoint stops its deliveries and removes its log.
        let res = admin.post_form("/api/delete_webhook", &[("webhook_id", &slack)]).await;
        assert_eq!(res.status(), StatusCode::OK);
        let v = view(&mut admin).await;
        assert_eq!(v["endpoints"].as_array().unwrap().len(), 2);
        assert!(v["deliveries"].as_array().unwrap().iter().all(|d| d["webhook_id"] != slack.as_str()));
    }
}

tidemark_store::test_each_backend! {
    async fn only_admins_manage_webhooks_and_only_their_accounts(backend) {
        let (app, provider) = TestApp::spawn_with_oidc_and(backend, &TEST_ENV).await;
        let (license, _) = app.with_key(Tier::Team).await;
        let (other, _) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;

        let mut theirs = app.signed_in(&provider, &other.email).await;
        let (their_hook, _) = create(&mut theirs, &[("url", "https://hooks.example.com/x"), ("scan_pushed", "true")]).await;

        let mut member = app.signed_in(&provider, "dev@example.com").await;
        assert_eq!(member.post_form("/api/webhooks", &[]).await.status(), StatusCode::FORBIDDEN);
        let res = member.post_form("/api/create_webhook", &[("url", "https://hooks.example.com/x"), ("scan_pushed", "true")]).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);

        let mut admin = app.signed_in(&provider, &license.email).await;
        for path in ["/api/delete_webhook", "/api/rotate_webhook_secret", "/api/send_test_webhook"] {
            let res = admin.post_form(path, &[("webhook_id", &their_hook)]).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}: another account's endpoint");
            let res = admin.post_form(path, &[("webhook_id", "whk_\u{0}nope")]).await;
            assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}: malformed id");
        }
        let res = admin.post_form("/api/redeliver_webhook", &[("event_id", "evt_aaaaaaaaaaaaaaaaaaaa"), ("webhook_id", &their_hook)]).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);

        for (form, message) in [
            (vec![("url", "ftp://example.com/"), ("scan_pushed", "true")], "http:// or https://"),
            (vec![("url", "https://example.com/")], "at least one event"),
            (vec![("url", "https://example.com/"), ("scan_pushed", "true"), ("format", "teams")], "unknown format"),
        ] {
            let res = admin.post_form("/api/create_webhook", &form).await;
            assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{form:?}");
            assert!(res.text().await.unwrap().contains(message), "{message}");
        }
        assert_eq!(view(&mut admin).await["endpoints"].as_array().unwrap().len(), 0, "nothing stored");
        assert_eq!(app.count("webhooks").await, 1, "only the other account's");
        // The stored row holds neither the URL nor the secret in usable form.
        let (url_sealed, secret_sealed): (String, String) = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT url_sealed, secret_sealed FROM webhooks").fetch_one(pool).await
        }).unwrap();
        assert!(!url_sealed.contains("hooks.example.com") && !secret_sealed.contains("whsec_"));
    }
}

#[tokio::test]
async fn private_addresses_are_refused_unless_the_operator_allows_them() {
    let receiver = Receiver::start().await;
    let port = receiver.base.rsplit(':').next().unwrap().to_owned();
    let mut dns = common::dns::DnsServer::start().await;
    dns.publish_a("hooks.internal.example", &["127.0.0.1"]);
    let resolver = [("TIDEMARK_DNS_RESOLVER", dns.addr.as_str())];
    let (app, provider) = TestApp::spawn_with_oidc_and(Backend::Sqlite, &resolver).await;
    let (license, _) = app.with_key(Tier::Team).await;
    let mut admin = app.signed_in(&provider, &license.email).await;

    for url in [
        receiver.base.clone(),
        format!("http://localhost:{port}/"),
        "http://169.254.169.254/latest".into(),
    ] {
        let res = admin
            .post_form(
                "/api/create_webhook",
                &[("url", &url), ("scan_pushed", "true")],
            )
            .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{url}");
        assert!(res.text().await.unwrap().contains("private"));
    }
    // A name is checked where it matters, when it is resolved for a delivery.
    let named = format!("http://hooks.internal.example:{port}/named");
    let (hook, _) = create(&mut admin, &[("url", &named), ("scan_pushed", "true")]).await;
    admin
        .post_form("/api/send_test_webhook", &[("webhook_id", &hook)])
        .await;
    let mut row = Value::Null;
    for _ in 0..100 {
        let v = view(&mut admin).await;
        row = v["deliveries"][0].clone();
        if !row["error"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let error = row["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("resolves to a loopback, private or link-local address"),
        "{row}"
    );
    assert_eq!(row["status_code"], Value::Null);
    assert!(receiver.received().is_empty());

    // With the operator's leave the same name is delivered to, through the same resolver.
    let allowed = [resolver[0], ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1")];
    let (app, provider) = TestApp::spawn_with_oidc_and(Backend::Sqlite, &allowed).await;
    let (license, _) = app.with_key(Tier::Team).await;
    let mut admin = app.signed_in(&provider, &license.email).await;
    let (hook, secret) = create(&mut admin, &[("url", &named), ("scan_pushed", "true")]).await;
    admin
        .post_form("/api/send_test_webhook", &[("webhook_id", &hook)])
        .await;
    let got = receiver.wait_for(1).await;
    assert_eq!(got[0].path, "/named");
    assert!(signed_with(&secret, &got[0]));
}

#[tokio::test]
async fn two_replicas_deliver_each_event_once() {
    let Some(backend) = common::backends()
        .into_iter()
        .find(|b| *b == Backend::Postgres)
    else {
        return;
    };
    let receiver = Receiver::start().await;
    let (first, provider) = TestApp::spawn_with_oidc_and(backend, &TEST_ENV).await;
    let second = first.replica().await;
    let (license, key) = first.with_key(Tier::Team).await;
    let mut admin = first.signed_in(&provider, &license.email).await;
    let url = format!("{}/hook", receiver.base);
    let (_hook, secret) = create(&mut admin, &[("url", &url), ("scan_pushed", "true")]).await;

    // Both replicas take pushes, and both senders poll the one outbox.
    const PUSHES: usize = 30;
    let mut scans = Vec::new();
    for i in 0..PUSHES {
        let replica = if i % 2 == 0 { &first } else { &second };
        let at = format!("2026-11-20T10:{:02}:00Z", i);
        let pushed = replica
            .push_json(&key, &sample_push("web", 50.0 + i as f64, &at))
            .await;
        scans.push(pushed["scan_id"].as_str().unwrap().to_owned());
    }
    let got = receiver.wait_for(PUSHES).await;
    // Give a duplicate time to show up, if there were one.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let got_all = receiver.received();
    assert_eq!(got_all.len(), got.len().max(PUSHES), "no duplicates");
    let mut seen: Vec<String> = got_all
        .iter()
        .inspect(|r| assert!(signed_with(&secret, r)))
        .map(|r| r.json()["scan"]["scan_id"].as_str().unwrap().to_owned())
        .collect();
    seen.sort();
    scans.sort();
    assert_eq!(seen, scans, "each scan's event exactly once");
}
