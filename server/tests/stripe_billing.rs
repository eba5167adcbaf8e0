//! Licences made by the checkout, on both databases: Stripe's events signed by the `stripe`
//! library's own test signer (`webhooks.generateTestHeaderString`) and shaped as Stripe's API
//! reference shows them. A paid checkout makes one licence of the tier its price buys, with a
//! seat per unit, and mails its key (to a real SMTP sink); a redelivery changes nothing; paid
//! invoices, changed and cancelled subscriptions keep it; a forged or stale signature is
//! `400` and changes nothing; a secret being rolled verifies under either; an unused type is
//! `200`. Stripe's API (a checkout's line items) cannot run here: a stand-in on loopback
//! answers that one read, shaped as Stripe documents it.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use axum::extract::Path;
use axum::http::HeaderMap;
use common::smtp::SmtpSink;
use common::{assert_error, TestApp};
use reqwest::StatusCode;
use serde_json::{json, Value};

const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/peers");
const API_KEY: &str = "rk_test_tidemark";

/// Stripe's `GET /v1/checkout/sessions/{id}/line_items`, for the sessions these tests pay.
async fn stripe_api() -> String {
    let app = axum::Router::new().route(
        "/v1/checkout/sessions/{id}/line_items",
        axum::routing::get(|Path(id): Path<String>, headers: HeaderMap| async move {
            if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {API_KEY}")) {
                return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({"error": {"type": "invalid_request_error"}})));
            }
            let (price, quantity) = match id.as_str() {
                "cs_test_team" => ("price_team_monthly", 3),
                _ => ("price_unknown", 1),
            };
            (axum::http::StatusCode::OK, axum::Json(json!({
                "object": "list", "has_more": false, "url": format!("/v1/checkout/sessions/{id}/line_items"),
                "data": [{"id": "li_1", "object": "item", "amount_total": 9000, "currency": "eur",
                          "description": "Tidemark", "quantity": quantity,
                          "price": {"id": price, "object": "price", "type": "recurring"}}]
            })))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// The `Stripe-Signature` Stripe would send for `payload` under `secrets` at `t`.
fn sign(payload: &str, secrets: &str, t: i64) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("payload.json");
    std::fs::write(&file, payload).unwrap();
    let out = std::process::Command::new("node")
        .arg(format!("{PEERS}/stripe-sign.mjs"))
        .arg(&file)
        .arg(secrets)
        .arg(t.to_string())
        .output()
        .expect("node (scripts/setup.sh installs it and the stripe package)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn now_secs() -> i64 {
    tidemark_domain::now_millis() / 1000
}

async fn deliver(app: &TestApp, event: &Value, secrets: &str, t: i64) -> reqwest::Response {
    let payload = serde_json::to_string_pretty(event).unwrap();
    app.client
        .post(app.url("/billing/stripe/events"))
        .header("Stripe-Signature", sign(&payload, secrets, t))
        .header("Content-Type", "application/json; charset=utf-8")
        .body(payload)
        .send()
        .await
        .unwrap()
}

fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({"id": id, "object": "event", "api_version": "2025-03-31.basil", "created": now_secs(),
           "livemode": false, "pending_webhooks": 1, "type": kind,
           "request": {"id": null, "idempotency_key": null}, "data": {"object": object}})
}

async fn license_row(app: &TestApp) -> (String, String, Option<i64>, i64) {
    tidemark_store::on_db!(&app.db, pool => {
        sqlx::query_as("SELECT id, tier, max_machines, expires_at FROM licenses").fetch_one(pool).await
    })
    .unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_paid_checkout_makes_a_licence_that_stripe_s_events_keep(backend) {
        let sink = SmtpSink::start_anywhere();
        let api = stripe_api().await;
        let smtp = sink.url();
        let app = TestApp::spawn_with(backend, &[
            ("TIDEMARK_STRIPE_WEBHOOK_SECRET", "whsec_old_secret,whsec_new_secret"),
            ("TIDEMARK_STRIPE_API_KEY", API_KEY),
            ("TIDEMARK_STRIPE_PRICES", "price_team_monthly=team,price_agency_monthly=agency"),
            ("TIDEMARK_STRIPE_API_BASE", &api),
            ("TIDEMARK_SMTP_URL", &smtp),
        ]).await;
        let day = 86_400_000;
        let checkout = event("evt_checkout_1", "checkout.session.completed", json!({
            "id": "cs_test_team", "object": "checkout.session", "mode": "subscription",
            "payment_status": "paid", "status": "complete", "customer": "cus_1",
            "subscription": "sub_1", "customer_details": {"email": "Buyer@Example.com", "name": "Buyer"},
            "amount_total": 9000, "currency": "eur", "metadata": {}}));

        // Forged, stale, or no signature: 400, and nothing happens.
        let forged = deliver(&app, &checkout, "whsec_forged", now_secs()).await;
        let message = assert_error(forged, StatusCode::BAD_REQUEST, "invalid_signature").await;
        assert!(message.contains("TIDEMARK_STRIPE_WEBHOOK_SECRET") && !message.contains("whsec_old"), "{message}");
        assert_error(deliver(&app, &checkout, "whsec_old_secret", now_secs() - 600).await, StatusCode::BAD_REQUEST, "invalid_signature").await;
        let bare = app.client.post(app.url("/billing/stripe/events")).body(checkout.to_string()).send().await.unwrap();
        assert_error(bare, StatusCode::BAD_REQUEST, "invalid_signature").await;
        assert_eq!((app.count("licenses").await, app.count("stripe_events").await), (0, 0));

        // The checkout makes one licence: the tier its price buys, a seat per unit, mailed.
        let res = deliver(&app, &checkout, "whsec_old_secret", now_secs()).await;
        assert_eq!(res.status(), StatusCode::OK);
        let said: Value = res.json().await.unwrap();
        assert_eq!(said["replayed"], false);
        let (license_id, tier, seats, expires) = license_row(&app).await;
        assert!(said["outcome"].as_str().unwrap().contains(&license_id), "{said}");
        assert_eq!((tier.as_str(), seats), ("team", Some(3)));
        let now = tidemark_domain::now_millis();
        assert!((expires - (now + 7 * day)).abs() < 60_000, "runs for the grace until its first invoice");
        let mut mails = Vec::new();
        for _ in 0..100 {
            mails = sink.messages();
            if !mails.is_empty() { break; }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(mails.len(), 1, "the key is mailed");
        assert!(mails[0].to.to_lowercase().contains("buyer@example.com"), "{:?}", mails[0].to);
        assert!(mails[0].text.contains("lic_"), "the mail holds the key");

        // Stripe redelivers: the same answer, nothing new.
        let again = deliver(&app, &checkout, "whsec_new_secret", now_secs()).await;
        assert_eq!(again.status(), StatusCode::OK);
        assert_eq!(again.json::<Value>().await.unwrap()["replayed"], true);
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!((app.count("licenses").await, sink.messages().len()), (1, 1));

        // Paid (the 2025 invoice shape), signed while the secret rolls (two v1 values).
        let period_end = now_secs() + 30 * 86_400;
        let paid = event("evt_paid_1", "invoice.paid", json!({
            "id": "in_1", "object": "invoice", "status": "paid", "customer": "cus_1",
            "parent": {"type": "subscription_details", "subscription_details": {"subscription": "sub_1"}},
            "period_start": now_secs(), "period_end": now_secs(),
            "lines": {"object": "list", "data": [{"id": "il_1", "object": "line_item",
                      "period": {"start": now_secs(), "end": period_end}}]}}));
        assert_eq!(deliver(&app, &paid, "whsec_old_secret,whsec_new_secret", now_secs()).await.status(), StatusCode::OK);
        let (_, _, _, expires) = license_row(&app).await;
        assert_eq!(expires, period_end * 1000 + 7 * day, "the period's end plus the grace");

        // More seats on a higher tier.
        let upgraded = event("evt_updated_1", "customer.subscription.updated", json!({
            "id": "sub_1", "object": "subscription", "status": "active", "customer": "cus_1",
            "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "quantity": 5,
                      "current_period_end": period_end, "price": {"id": "price_agency_monthly", "object": "price"}}]}}));
        assert_eq!(deliver(&app, &upgraded, "whsec_new_secret", now_secs()).await.status(), StatusCode::OK);
        let (_, tier, seats, _) = license_row(&app).await;
        assert_eq!((tier.as_str(), seats), ("agency", Some(5)));

        // Cancelled: it expires at the period's end.
        let cancelled = event("evt_deleted_1", "customer.subscription.deleted", json!({
            "id": "sub_1", "object": "subscription", "status": "canceled", "customer": "cus_1",
            "ended_at": now_secs(),
            "items": {"object": "list", "data": [{"id": "si_1", "object": "subscription_item", "quantity": 5,
                      "current_period_end": period_end, "price": {"id": "price_agency_monthly", "object": "price"}}]}}));
        assert_eq!(deliver(&app, &cancelled, "whsec_new_secret", now_secs()).await.status(), StatusCode::OK);
        assert_eq!(license_row(&app).await.3, period_end * 1000);

        // A type Tidemark does not use: 200, ignored. An invoice of an unknown subscription:
        // 409, so Stripe retries once its checkout has come.
        let refund = event("evt_refund_1", "charge.refunded", json!({"id": "ch_1", "object": "charge"}));
        let res = deliver(&app, &refund, "whsec_new_secret", now_secs()).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.json::<Value>().await.unwrap()["outcome"].as_str().unwrap().contains("not used"));
        let early = event("evt_paid_2", "invoice.paid", json!({"id": "in_2", "object": "invoice",
            "subscription": "sub_unknown", "period_end": period_end, "lines": {"data": []}}));
        assert_error(deliver(&app, &early, "whsec_new_secret", now_secs()).await, StatusCode::CONFLICT, "conflict").await;
        assert_eq!(app.count_where("stripe_events", "id = 'evt_paid_2'").await, 0, "not recorded: the retry applies it");

        // The licence's story: made and changed by Stripe, told to the vendor as events.
        let log = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery { limit: 100, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.actor == "system:stripe" && e.action == "license.created" && e.target == license_id));
        let events = tidemark_store::license_events::page_events(&app.db,
            &tidemark_store::license_events::EventFilter { license_id: Some(license_id.clone()), event: None }, None, 50).await.unwrap();
        assert_eq!(events.len(), 4, "created, and three updates");
    }
}

tidemark_store::test_each_backend! {
    async fn without_stripe_set_up_the_endpoint_is_not_there(backend) {
        let app = TestApp::spawn(backend).await;
        let res = app.client.post(app.url("/billing/stripe/events")).body("{}").send().await.unwrap();
        assert_error(res, StatusCode::NOT_FOUND, "not_found").await;
    }
}
