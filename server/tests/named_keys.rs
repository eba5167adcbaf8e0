//! Named API keys end to end, on both databases: an admin makes a key in Settings with a
//! name and an expiry (shown once, the other keys keep working), the audit log names it, a
//! key past its expiry is refused as a revoked one is saying when, and the week before, the
//! account's admins (not its members, nor an admin who turned it off) get one mail through a
//! real SMTP server naming it.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use crate::common;

use common::smtp::SmtpSink;
use common::{sample_push, wait_for_async, TestApp};
use reqwest::StatusCode;
use tidemark_domain::access::Role;
use tidemark_domain::time::DAY_MS;
use tidemark_wire::Tier;

fn shown_key(html: &str) -> Option<String> {
    html.split(r#"data-testid="new-key" id="new-key">"#)
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map(str::to_owned)
}

async fn exec(app: &TestApp, sql: &str) {
    tidemark_store::on_db!(&app.db, pool => {
        sqlx::query(sql).execute(pool).await.map(|_| ())
    })
    .unwrap();
}

tidemark_store::test_each_backend! {
    /// Made in Settings, shown once, beside the other keys; named in the audit log; refused
    /// past its expiry with the time it expired.
    async fn a_named_key_is_shown_once_works_beside_the_others_and_expires(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, first) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;
        let mut admin = app.signed_in(&provider, &license.email).await;

        // Bad input: refused in words, nothing made.
        for (form, says) in [
            (vec![("name", "   ")], "name must not be empty"),
            (vec![("name", "CI"), ("expires_in_days", "0")], "from 1 to 366"),
            (vec![("name", "CI"), ("expires_in_days", "400")], "from 1 to 366"),
            (vec![("name", "CI"), ("expires_in_days", "soon")], "from 1 to 366"),
        ] {
            let res = admin.post_form("/api/create_key", &form).await;
            assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY, "{backend:?} {form:?}");
            let text = res.text().await.unwrap();
            assert!(text.contains(says), "{text}");
        }
        let long = "x".repeat(65);
        let res = admin.post_form("/api/create_key", &[("name", long.as_str())]).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(app.count("api_keys").await, 1, "{backend:?}: nothing was made");

        // A member may not make one.
        let mut dev = app.signed_in(&provider, "dev@example.com").await;
        let res = dev.post_form("/api/create_key", &[("name", "mine")]).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);

        // The plain form: a redirect, and the key on the page it names, once.
        let once = tidemark_domain::handover::new_token();
        let res = admin
            .submit_page_form(
                "/api/create_key",
                "/settings/keys",
                &[("name", "GitHub Actions"), ("expires_in_days", "30"), ("once", &once)],
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let to = common::browser::location(&res);
        let html = admin.get(&app.url(&to)).await.text().await.unwrap();
        let key = shown_key(&html).expect("the new key is on the page");
        assert!(html.contains("the other keys keep working"), "{html}");
        assert!(html.contains("GitHub Actions"), "listed by name");
        let again = admin.get(&app.url(&to)).await.text().await.unwrap();
        assert!(shown_key(&again).is_none(), "{backend:?}: shown once");

        // Both keys push: New key revoked nothing.
        let pushed = app.push_json(&first, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let res = app.push(&key, &sample_push("web", 80.0, "2026-11-20T11:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{backend:?}");
        let expires: i64 = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_scalar("SELECT expires_at FROM api_keys WHERE machine = 'GitHub Actions'")
                .fetch_one(pool).await
        })
        .unwrap();
        let now = tidemark_domain::now_millis();
        assert!((expires - (now + 30 * DAY_MS)).abs() < 60_000, "{backend:?}: 30 days");

        // The audit log names it, with its expiry.
        let (target, after): (String, String) = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT target, after_summary FROM audit_events WHERE action = 'key.created'")
                .fetch_one(pool).await
        })
        .unwrap();
        assert!(target.contains("GitHub Actions") && target.starts_with("svc_api_"), "{target}");
        assert!(after.starts_with("active until "), "{after}");

        // Past its expiry: refused as a revoked key is, saying when; listed as expired.
        exec(&app, "UPDATE api_keys SET expires_at = 1000 WHERE machine = 'GitHub Actions'").await;
        let message = common::assert_error(
            app.push(&key, &sample_push("web", 81.0, "2026-11-20T12:00:00Z")).await,
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
        )
        .await;
        assert!(message.contains("expired at 1970-01-01T00:00:01Z"), "{message}");
        let res = app.get_with_key(&key, &format!("/v1/projects/{project}/history.csv")).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{backend:?}: every /v1 call");
        assert!(!message.contains(&key), "never the key itself");
        let page = admin.get(&app.url("/settings/keys")).await.text().await.unwrap();
        assert!(page.contains(r#"data-expired="true""#), "{backend:?}: marked expired");
        let res = app.push(&first, &sample_push("web", 82.0, "2026-11-20T13:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED, "the other key is untouched");
    }
}

tidemark_store::test_each_backend! {
    /// The week before: one mail to each admin who kept the warning, naming the key.
    async fn admins_are_warned_once_a_week_before_a_key_expires(backend) {
        let sink = SmtpSink::start_anywhere();
        let (app, provider) =
            TestApp::spawn_with_oidc_and(backend, &[("TIDEMARK_SMTP_URL", &sink.url())]).await;
        let (license, _) = app.with_key(Tier::Team).await;
        app.add_member(&license.account_id, "dev@example.com", Role::Member).await;
        app.add_member(&license.account_id, "quiet@example.com", Role::Admin).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let mut quiet = app.signed_in(&provider, "quiet@example.com").await;
        let res = quiet.post_form("/api/save_alerts", &[("gate_failed", "true")]).await;
        assert_eq!(res.status(), StatusCode::OK, "the warning unticked");
        for (name, days) in [("nightly", "7"), ("release", "90"), ("forever", "")] {
            let res = admin
                .post_form("/api/create_key", &[("name", name), ("expires_in_days", days)])
                .await;
            assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
        }
        // "nightly" is inside the week (by the seconds since it was made); "release" and
        // "forever" are not.
        let now = tidemark_domain::now_millis();
        let queued = server::workers::key_expiry::warn_expiring_keys(&app.db, now).await.unwrap();
        assert_eq!(queued, 1, "{backend:?}: one admin asked for it (the other turned it off)");
        assert_eq!(
            server::workers::key_expiry::warn_expiring_keys(&app.db, now + 1).await.unwrap(),
            0,
            "warned of once"
        );
        let got = wait_for_async(Duration::from_secs(30), || {
            let m = sink.messages();
            async move { (!m.is_empty()).then_some(m) }
        })
        .await
        .unwrap_or_else(|| panic!("no mail: {}", sink.output()));
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        assert_eq!(sink.messages().len(), 1, "{backend:?}: {got:#?}");
        let mail = &got[0];
        assert_eq!(mail.to, license.email);
        assert!(mail.subject.contains("\"nightly\" expires"), "{}", mail.subject);
        assert!(mail.text.contains("nightly (svc_api_"), "{}", mail.text);
        assert!(!mail.text.contains("release") && !mail.text.contains("forever"), "{}", mail.text);
        assert!(mail.text.contains("/settings/keys"), "{}", mail.text);
    }
}
