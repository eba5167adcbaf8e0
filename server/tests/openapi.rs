//! The OpenAPI document is generated from the handlers; a snapshot makes every change to the
//! public contract visible in review, and each documented path really answers.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use common::TestApp;
use serde_json::Value;

#[tokio::test]
async fn the_openapi_document_is_served_and_matches_the_snapshot() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let res = app.get("/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "OpenAPI 3.1"
    );
    insta::assert_json_snapshot!("openapi", doc);
}

#[tokio::test]
async fn every_documented_operation_is_routed() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let doc = serde_json::to_value(server::api::openapi()).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 20);
    for (path, ops) in paths {
        let concrete = path
            .replace("{bundle_id}", "bnd_x")
            .replace("{project_id}", "prj_x")
            .replace("{scan_id}", "scn_x")
            .replace("{finding_id}", "fnd_x")
            .replace("{framework_id}", "acme");
        for method in ops.as_object().unwrap().keys() {
            let req = app
                .client
                .request(method.to_uppercase().parse().unwrap(), app.url(&concrete));
            let res = req.send().await.unwrap();
            let body: Value = res.json().await.unwrap_or(Value::Null);
            assert_ne!(
                body["error"], "not_found",
                "{method} {path} is documented but not routed"
            );
            assert_ne!(body["error"], "method_not_allowed", "{method} {path}");
        }
        // Every documented error response uses the shared error schema.
        for op in ops.as_object().unwrap().values() {
            for (status, resp) in op["responses"].as_object().unwrap() {
                if status.starts_with('4') {
                    let schema = &resp["content"]["application/json"]["schema"]["$ref"];
                    assert_eq!(schema, "#/components/schemas/ErrorBody", "{path} {status}");
                }
            }
        }
    }
}

#[tokio::test]
async fn the_admin_document_is_served_routed_and_matches_its_snapshot() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let res = app.get("/admin/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    let doc: Value = res.json().await.unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(doc, serde_json::to_value(server::admin::openapi()).unwrap());
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 21);
    for (path, ops) in paths {
        let concrete = path
            .replace("{license_id}", "lcn_x")
            .replace("{token_id}", "vtk_x")
            .replace("{account_id}", "acct_x")
            .replace("{machine_id}", "mch_x")
            .replace("{webhook_id}", "vwh_x")
            .replace("{framework}", "cis-aws-2.0");
        for (method, op) in ops.as_object().unwrap() {
            let res = app
                .client
                .request(method.to_uppercase().parse().unwrap(), app.url(&concrete))
                .send()
                .await
                .unwrap();
            // Routed: refused for want of a token, not for want of a route.
            assert_eq!(res.status(), 401, "{method} {path}");
            assert_eq!(op["security"][0]["vendor_token"], serde_json::json!([]));
            for (status, resp) in op["responses"].as_object().unwrap() {
                if status.starts_with('4') {
                    let schema = &resp["content"]["application/json"]["schema"]["$ref"];
                    assert_eq!(schema, "#/components/schemas/ErrorBody", "{path} {status}");
                }
            }
        }
    }
    insta::assert_json_snapshot!("admin_openapi", doc);
}
