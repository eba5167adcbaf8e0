//! Status badges: made and revoked by admins in Settings, served without a session, with an
//! ETag, on both databases.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::Value;
use tidemark_wire::Tier;

tidemark_store::test_each_backend! {
    async fn a_badge_shows_the_latest_score_until_its_token_is_replaced_or_revoked(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let pushed = app.push_json(&key, &sample_push("web", 82.46, "2026-11-20T10:00:00Z")).await;
        let project = pushed["project_id"].as_str().unwrap().to_owned();
        let theirs = app.push_json(&other_key, &sample_push("web", 10.0, "2026-11-20T10:00:00Z")).await;

        let mut admin = app.signed_in(&provider, &license.email).await;
        let res = admin
            .post_form("/api/issue_badge", &[("project_id", theirs["project_id"].as_str().unwrap())])
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "another account's project");
        let issue = admin.post_form("/api/issue_badge", &[("project_id", project.as_str())]).await;
        assert_eq!(issue.status(), StatusCode::OK);
        let list: Value = admin.post_form("/api/badges", &[]).await.json().await.unwrap();
        assert_eq!(list["rows"].as_array().unwrap().len(), 1, "only this account's projects: {list}");
        let image = list["rows"][0]["image"].as_str().unwrap().to_owned();
        let markdown = list["rows"][0]["markdown"].as_str().unwrap();
        assert_eq!(
            markdown,
            format!("[![Tidemark: web]({base}{image})]({base}/projects/{project})", base = app.base_url)
        );

        // No session: a plain client.
        let client = reqwest::Client::new();
        let res = client.get(app.url(&image)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["content-type"], "image/svg+xml; charset=utf-8");
        assert_eq!(res.headers()["cache-control"], "no-cache");
        assert!(res.headers().get("set-cookie").is_none(), "a badge never starts a session");
        let etag = res.headers()["etag"].to_str().unwrap().to_owned();
        let svg = res.text().await.unwrap();
        assert!(svg.contains("aria-label=\"tidemark: 82.5\""), "{svg}");
        let again = client.get(app.url(&image)).header("if-none-match", &etag).send().await.unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

        // A new scan changes the picture, and so its ETag.
        app.push_json(&key, &sample_push("web", 55.0, "2026-11-20T11:00:00Z")).await;
        let res = client.get(app.url(&image)).header("if-none-match", &etag).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.text().await.unwrap().contains("tidemark: 55.0"));

        // A new link stops the old one; revoking stops the new one.
        admin.post_form("/api/issue_badge", &[("project_id", project.as_str())]).await;
        let list: Value = admin.post_form("/api/badges", &[]).await.json().await.unwrap();
        let newer = list["rows"][0]["image"].as_str().unwrap().to_owned();
        assert_ne!(newer, image);
        let old = client.get(app.url(&image)).send().await.unwrap();
        assert_eq!(old.status(), StatusCode::NOT_FOUND);
        assert!(old.text().await.unwrap().contains("unknown badge"));
        assert_eq!(client.get(app.url(&newer)).send().await.unwrap().status(), StatusCode::OK);
        let revoke = admin.post_form("/api/revoke_badge", &[("project_id", project.as_str())]).await;
        assert_eq!(revoke.status(), StatusCode::OK);
        assert_eq!(client.get(app.url(&newer)).send().await.unwrap().status(), StatusCode::NOT_FOUND);
        for bad in ["/badge/nothing.svg", "/badge/bdg_%00.svg", "/badge/..%2f..%2fetc.svg"] {
            assert_eq!(client.get(app.url(bad)).send().await.unwrap().status(), StatusCode::NOT_FOUND, "{bad}");
        }
    }
}
