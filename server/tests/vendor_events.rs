//! Licence events to the vendor, on both databases: an endpoint added by an admin token hears
//! each licence's events (made, changed, suspended, resumed, a seat taken, the seats full, a
//! seat freed) signed, in the licence's order even when a delivery fails first, each as
//! `GET /admin/v1/events` lists it; the calendar raises `license.expiring` at the nearest of
//! 30/7/1 days and `license.expired` once; and a sender killed (`SIGKILL`) mid-delivery leaves
//! every event delivered after a restart, in order, a send cut off again under its own id
//! (and nothing a third time).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::admin_api::Vendor;
use crate::common;

use common::receiver::{Receiver, HOLD};
use common::{assert_error, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_domain::webhook::verify_signature;

const WEBHOOK_SETTINGS: [(&str, &str); 2] = [
    ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
    ("TIDEMARK_WEBHOOK_RETRY_BASE_MS", "300"),
];

async fn add_endpoint(vendor: &Vendor, url: &str, events: Option<Value>) -> String {
    let mut body = json!({ "url": url });
    if let Some(events) = events {
        body["events"] = events;
    }
    let res = vendor.call("admin", "POST", "/webhooks", Some(body)).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let made: Value = res.json().await.unwrap();
    let secret = made["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert!(
        !made["webhook"]["url"].as_str().unwrap().contains("/vendor"),
        "no path shown"
    );
    secret
}

async fn activate(app: &TestApp, hash: &str, machine: &str) -> reqwest::Response {
    app.client
        .post(app.url("/v1/license/activate"))
        .header("X-License-Key-Hash", hash)
        .header("X-Machine-Fingerprint", format!("fp-{machine}"))
        .json(&json!({ "machine": machine }))
        .send()
        .await
        .unwrap()
}

/// The types an endpoint received for `license_id`, in arrival order, counting only the
/// deliveries it acknowledged.
fn acknowledged(received: &[common::receiver::Received], license_id: &str) -> Vec<String> {
    received
        .iter()
        .map(|r| r.json())
        .filter(|b| b["license_id"] == license_id)
        .map(|b| b["type"].as_str().unwrap().to_owned())
        .collect()
}

tidemark_store::test_each_backend! {
    async fn a_licence_s_events_reach_the_vendor_signed_and_in_order(backend) {
        let app = TestApp::spawn_with(backend, &WEBHOOK_SETTINGS).await;
        let vendor = Vendor::set_up(&app).await;
        let receiver = Receiver::start().await;
        // Bad input changes nothing: an unknown event, an unknown field, a sales token.
        let bad = vendor.call("admin", "POST", "/webhooks", Some(json!({"url": format!("{}/x", receiver.base), "events": ["license.deleted"]}))).await;
        let message = assert_error(bad, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("license.deleted"), "{message}");
        let bad = vendor.call("admin", "POST", "/webhooks", Some(json!({"url": format!("{}/x", receiver.base), "format": "slack"}))).await;
        let message = assert_error(bad, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert!(message.contains("format"), "{message}");
        assert_error(vendor.call("sales", "POST", "/webhooks", Some(json!({"url": format!("{}/x", receiver.base)}))).await,
            StatusCode::FORBIDDEN, "insufficient_role").await;
        assert_eq!(app.count("vendor_webhooks").await, 0);

        let secret = add_endpoint(&vendor, &format!("{}/vendor", receiver.base), None).await;
        // The first delivery fails: the licence's later events wait behind its retry.
        receiver.answer_next(&[500]);
        let made = vendor.create("billing", json!({"email": "buyer@example.com", "tier": "team", "max_machines": 1})).await;
        let id = made["license"]["id"].as_str().unwrap().to_owned();
        let hash = tidemark_domain::secrets::sha256_hex(made["license_key"].as_str().unwrap().as_bytes());
        let lic = |rest: &str| format!("/licenses/{id}{rest}");
        assert_eq!(vendor.call("sales", "PATCH", &lic(""), Some(json!({"tier": "agency"}))).await.status(), StatusCode::OK);
        assert_eq!(vendor.call("support", "POST", &lic("/suspend"), Some(json!({"reason": "chargeback"}))).await.status(), StatusCode::OK);
        assert_eq!(vendor.call("billing", "POST", &lic("/resume"), Some(json!({"reason": "paid"}))).await.status(), StatusCode::OK);
        assert_eq!(activate(&app, &hash, "ci-1").await.status(), StatusCode::CREATED);
        assert_eq!(activate(&app, &hash, "ci-1").await.status(), StatusCode::CREATED, "the same machine takes no new seat");
        assert_error(activate(&app, &hash, "laptop").await, StatusCode::FORBIDDEN, "seat_limit_reached").await;
        assert_error(activate(&app, &hash, "laptop-2").await, StatusCode::FORBIDDEN, "seat_limit_reached").await;
        let machines: Value = vendor.call("support", "GET", &lic("/machines"), None).await.json().await.unwrap();
        let machine = machines["machines"][0]["id"].as_str().unwrap().to_owned();
        assert_eq!(vendor.call("support", "POST", &lic(&format!("/machines/{machine}/release")), None).await.status(), StatusCode::NO_CONTENT);

        let expected = ["license.created", "license.updated", "license.suspended", "license.resumed",
            "machine.activated", "seat_limit.reached", "machine.released"];
        // Seven events, the first twice (refused, then retried).
        receiver.wait_for(expected.len() + 1).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let received = receiver.received().into_iter().filter(|r| r.path == "/vendor").collect::<Vec<_>>();
        assert_eq!(received.len(), expected.len() + 1, "{:?}", acknowledged(&received, &id));
        let types = acknowledged(&received[1..], &id);
        assert_eq!(types, expected, "in the licence's order, after the retry");
        assert_eq!(received[0].json()["id"], received[1].json()["id"], "the retry is the same event");
        let mut last_seq = 0;
        for r in &received[1..] {
            let body = r.json();
            let now = tidemark_domain::now_millis() / 1000;
            verify_signature(r.header("tidemark-signature"), &secret, &r.body, now).unwrap();
            assert_eq!(r.header("tidemark-event-id"), body["id"].as_str().unwrap());
            assert_eq!(r.header("tidemark-event"), body["type"].as_str().unwrap());
            let seq = body["sequence"].as_i64().unwrap();
            assert!(seq > last_seq, "sequence grows: {seq} after {last_seq}");
            last_seq = seq;
        }
        let at = |n: usize| received[n + 1].json();
        assert_eq!(at(0)["data"]["license"]["tier"], "team", "the licence as it was");
        assert_eq!(at(1)["data"]["license"]["tier"], "agency");
        assert_eq!(at(2)["data"]["reason"], "chargeback");
        assert_eq!(at(2)["data"]["license"]["state"], "suspended");
        assert_eq!(at(4)["data"]["machine"]["fingerprint"], "fp-ci-1");
        assert_eq!((at(5)["data"]["seat_limit"].as_u64(), at(5)["data"]["machine"]["name"].as_str()), (Some(1), Some("laptop")),
            "one seat_limit.reached an hour, for the first refusal");
        assert_eq!(at(6)["data"]["machine"]["id"], machine.as_str());
        assert!(!received.iter().any(|r| String::from_utf8_lossy(&r.body).contains(made["license_key"].as_str().unwrap())), "never the key");

        // The event log is what the endpoint got, newest first, paged.
        let page: Value = vendor.call("read", "GET", &format!("/events?license_id={id}&limit=4"), None).await.json().await.unwrap();
        let listed: Vec<Value> = page["events"].as_array().unwrap().clone();
        assert_eq!(listed.len(), 4);
        assert_eq!(listed[0], at(6));
        let next = page["next_cursor"].as_str().unwrap();
        let rest: Value = vendor.call("read", "GET", &format!("/events?license_id={id}&limit=4&cursor={next}"), None).await.json().await.unwrap();
        assert_eq!(rest["events"].as_array().unwrap().len(), 3);
        assert_eq!(rest["events"][2], at(0));
        assert!(rest["next_cursor"].is_null());
        let only: Value = vendor.call("read", "GET", "/events?type=license.suspended", None).await.json().await.unwrap();
        assert_eq!(only["events"].as_array().unwrap().len(), 1);
        assert_error(vendor.call("read", "GET", "/events?cursor=bm90LWEtY3Vyc29y", None).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;
        assert_error(vendor.call("read", "GET", "/events?type=license.deleted", None).await, StatusCode::UNPROCESSABLE_ENTITY, "invalid_request").await;

        // The endpoint's counts; removing it stops its deliveries.
        let list: Value = vendor.call("admin", "GET", "/webhooks", None).await.json().await.unwrap();
        let hook = &list["webhooks"][0];
        assert_eq!((hook["pending"].as_i64(), hook["failed"].as_i64(), hook["events"].as_array().unwrap().len()), (Some(0), Some(0), 9));
        let hook_id = hook["id"].as_str().unwrap();
        assert_eq!(vendor.call("admin", "DELETE", &format!("/webhooks/{hook_id}"), None).await.status(), StatusCode::NO_CONTENT);
        assert_error(vendor.call("admin", "DELETE", &format!("/webhooks/{hook_id}"), None).await, StatusCode::NOT_FOUND, "not_found").await;
        vendor.call("sales", "PATCH", &lic(""), Some(json!({"tier": "team"}))).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(receiver.received().len(), expected.len() + 1, "nothing for a removed endpoint");
        let log = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery { limit: 1_000, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.actor == "vendor:root" && e.action == "vendor_webhook.deleted"));
    }
}

tidemark_store::test_each_backend! {
    async fn the_calendar_announces_an_expiry_at_the_nearest_threshold_once(backend) {
        let app = TestApp::spawn(backend).await;
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        let soon = app.create_license_with(tidemark_wire::Tier::Team, Some(now + 5 * day), None).await;
        let far = app.create_license_with(tidemark_wire::Tier::Team, Some(now + 90 * day), None).await;
        let raise = |at| server::workers::license_events::raise_calendar_events(&app.db, at);
        assert_eq!(raise(now).await.unwrap(), 1, "7 days (never 30 late)");
        assert_eq!(raise(now + 60_000).await.unwrap(), 0, "once");
        assert_eq!(raise(now + 4 * day + day / 2).await.unwrap(), 1, "1 day");
        assert_eq!(raise(now + 6 * day).await.unwrap(), 1, "expired");
        assert_eq!(raise(now + 6 * day + day).await.unwrap(), 0, "once");
        let events = |id: String| {
            let db = app.db.clone();
            async move {
                let filter = tidemark_store::license_events::EventFilter { license_id: Some(id), event: None };
                tidemark_store::license_events::page_events(&db, &filter, None, 50).await.unwrap()
                    .into_iter().map(|e| serde_json::from_str::<Value>(&e.body).unwrap()).collect::<Vec<_>>()
            }
        };
        let mut said = events(soon.license_id.clone()).await;
        // The calendar ran "at" a time before the licence's creation; the licence's order is its own.
        said.sort_by_key(|e| e["sequence"].as_i64());
        let said: Vec<(String, Value)> = said.into_iter()
            .map(|e| (e["type"].as_str().unwrap().to_owned(), e["data"]["days_left"].clone())).collect();
        assert_eq!(said, [("license.created".to_owned(), Value::Null), ("license.expiring".into(), json!(7)),
            ("license.expiring".into(), json!(1)), ("license.expired".into(), Value::Null)]);
        assert_eq!(events(far.license_id.clone()).await.len(), 1, "only its creation");
        // Extended, it is announced again for its new expiry.
        let (ok, _, err) = app.command(&["license", "extend", "--id", &soon.license_id, "--expires",
            &tidemark_domain::to_rfc3339(now + 10 * day)], &[]).await;
        assert!(ok, "{err}");
        assert_eq!(raise(now + 7 * day).await.unwrap(), 1);
        assert_eq!(events(soon.license_id.clone()).await[0]["data"]["days_left"], 7);
    }
}

tidemark_store::test_each_backend! {
    async fn a_sender_killed_mid_delivery_leaves_each_event_delivered_once(backend) {
        let mut app = TestApp::spawn_with(backend, &WEBHOOK_SETTINGS).await;
        let vendor = Vendor::set_up(&app).await;
        let receiver = Receiver::start().await;
        add_endpoint(&vendor, &format!("{}/vendor", receiver.base), Some(json!(["license.created", "license.updated"]))).await;
        // No sender runs while the events are raised.
        app.stop().await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            let made = app.create_license(tidemark_wire::Tier::Team).await;
            let (ok, _, err) = app.command(&["license", "update", "--id", &made.license_id, "--tier", "agency"], &[]).await;
            assert!(ok, "{err}");
            ids.push(made.license_id);
        }
        // The first send is held unanswered; the sender is killed while it waits.
        receiver.answer_next(&[HOLD]);
        let settings = [("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"), ("TIDEMARK_WEBHOOK_TIMEOUT_SECONDS", "2"),
            ("TIDEMARK_WEBHOOK_RETRY_BASE_MS", "300")];
        let serve = |port: u16| {
            let addr = format!("127.0.0.1:{port}");
            let mut extra = settings.to_vec();
            extra.push(("LEPTOS_SITE_ADDR", addr.leak()));
            app.command_child(&["serve"], &extra)
        };
        let mut first = serve(common::free_port());
        receiver.wait_for(1).await;
        first.kill().unwrap();
        first.wait().unwrap();
        let held = receiver.received()[0].json();
        // Another replica (or the same one restarted) sends the rest once the lease ends.
        let mut second = serve(common::free_port());
        receiver.wait_for(7).await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        second.kill().unwrap();
        second.wait().unwrap();
        let all: Vec<Value> = receiver.received().iter().map(|r| r.json()).collect();
        // The cut send comes again under its own id. So may a send that was answered in the
        // moment before the kill, before its answer was recorded: that is the receiver's
        // `Tidemark-Event-Id` check's job. Only sends in flight at the kill (at most one per
        // licence) come twice; nothing comes a third time.
        let twice: Vec<&Value> = all.iter().filter(|e| e["id"] == held["id"]).collect();
        assert_eq!(twice.len(), 2, "the cut one is sent again under its own id");
        let mut distinct: Vec<&str> = all.iter().map(|e| e["id"].as_str().unwrap()).collect();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), 6, "every event arrived");
        assert!(all.len() <= 6 + ids.len(), "only sends in flight at the kill repeat: {all:?}");
        for id in &ids {
            let mut heard: Vec<(String, String)> = all.iter().filter(|e| e["license_id"] == id.as_str())
                .map(|e| (e["id"].as_str().unwrap().to_owned(), e["type"].as_str().unwrap().to_owned())).collect();
            heard.dedup();
            let types: Vec<&str> = heard.iter().map(|(_, t)| t.as_str()).collect();
            assert_eq!(types, ["license.created", "license.updated"], "in order for {id}");
        }
        assert_eq!(app.count_where("vendor_deliveries", "state = 'delivered'").await, 6);
    }
}
