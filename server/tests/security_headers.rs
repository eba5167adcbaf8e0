//! Security headers: pages carry a Content-Security-Policy whose script nonce matches every
//! inline script they contain; everything else allows nothing; secrets are never cached.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::TestApp;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use serde_json::json;
use tidemark_store::Backend;
use tidemark_wire::Tier;

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("{name} is missing"))
        .to_str()
        .unwrap()
}

fn assert_common(headers: &HeaderMap, what: &str) {
    assert_eq!(
        header(headers, "x-content-type-options"),
        "nosniff",
        "{what}"
    );
    assert_eq!(header(headers, "x-frame-options"), "DENY", "{what}");
    assert_eq!(header(headers, "referrer-policy"), "same-origin", "{what}");
    assert!(
        header(headers, "permissions-policy").contains("camera=()"),
        "{what}"
    );
    assert!(
        header(headers, "content-security-policy").contains("frame-ancestors 'none'"),
        "{what}"
    );
}

/// The nonce a page's policy names.
fn nonce_of(policy: &str) -> String {
    let start = policy.find("'nonce-").expect("a script nonce") + "'nonce-".len();
    let len = policy[start..].find('\'').unwrap();
    policy[start..start + len].to_owned()
}

#[tokio::test]
async fn pages_allow_only_their_own_nonced_scripts() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let mut nonces = Vec::new();
    for path in ["/signin", "/", "/no-such-page"] {
        let res = app.get(path).await;
        let headers = res.headers().clone();
        let html = res.text().await.unwrap();
        assert_common(&headers, path);
        let policy = header(&headers, "content-security-policy");
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert!(
            policy.contains("script-src 'self' 'nonce-"),
            "{path}: {policy}"
        );
        assert!(policy.contains("'wasm-unsafe-eval'"), "{path}: {policy}");
        assert!(policy.contains("style-src 'self';"), "{path}: {policy}");
        let nonce = nonce_of(policy);
        // Every inline script carries this response's nonce, or the browser would refuse it.
        let scripts = html.matches("<script").count();
        assert!(scripts > 0, "{path} hydrates with a script");
        assert_eq!(
            html.matches(&format!("nonce=\"{nonce}\"")).count(),
            scripts,
            "{path}: {html}"
        );
        assert!(
            !html.contains(" style=\""),
            "{path}: no inline style attributes"
        );
        if path != "/no-such-page" {
            assert_eq!(header(&headers, "cache-control"), "no-store", "{path}");
        }
        nonces.push(nonce);
    }
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "a fresh nonce for every response");
    assert!(nonces.iter().all(|n| n.len() >= 16));
    // Development: no HSTS (the base URL is plain http).
    assert!(app
        .get("/healthz")
        .await
        .headers()
        .get("strict-transport-security")
        .is_none());
}

#[tokio::test]
async fn the_api_allows_nothing_and_secrets_are_not_cached() {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let license = app.create_license(Tier::Team).await;
    let res = app
        .client
        .post(app.url("/v1/license/activate"))
        .header("X-License-Key-Hash", &license.hash)
        .json(&json!({ "machine": "ci" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_common(res.headers(), "activate");
    assert_eq!(
        header(res.headers(), "content-security-policy"),
        "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"
    );
    assert_eq!(header(res.headers(), "cache-control"), "no-store");
    for path in ["/v1/no-such-route", "/v1/openapi.json"] {
        let res = app.get(path).await;
        assert_common(res.headers(), path);
        assert_eq!(header(res.headers(), "cache-control"), "no-store", "{path}");
    }
}

#[tokio::test]
async fn production_on_https_pins_https() {
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        &[
            ("TIDEMARK_ENV", "production"),
            ("TIDEMARK_BASE_URL", "https://tidemark.example"),
        ],
    )
    .await;
    for path in ["/healthz", "/signin", "/v1/openapi.json"] {
        let res = app.get(path).await;
        assert_eq!(
            header(res.headers(), "strict-transport-security"),
            "max-age=31536000",
            "{path}"
        );
    }
}
