//! A database dump alone must not let anyone validate, activate, push or log in: after
//! activation, pushes and a resend, the dump holds no raw license key, no license-key hash as
//! clients send it, and no raw API key.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use crate::common;

use base64::Engine as _;
use common::{sample_push, TestApp};
use reqwest::StatusCode;
use serde_json::json;
use tidemark_store::{Backend, Db};
use tidemark_wire::Tier;

/// Every byte of the database as an attacker with a copy would see it.
async fn dump(app: &TestApp) -> String {
    match (app.db.db(), app.backend) {
        (Db::Sqlite { pool, .. }, Backend::Sqlite) => {
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(pool)
                .await
                .unwrap();
            let path = app.test_db.url.trim_start_matches("sqlite://");
            let mut bytes = std::fs::read(path).unwrap();
            if let Ok(wal) = std::fs::read(format!("{path}-wal")) {
                bytes.extend(wal);
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        (Db::Postgres(_), Backend::Postgres) => {
            let (base, schema) = app
                .test_db
                .url
                .split_once("?options=-c%20search_path%3D")
                .unwrap();
            let out = std::process::Command::new("pg_dump")
                .args(["--data-only", "--schema", schema, base])
                .output()
                .expect("pg_dump (Debian postgresql-client)");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
        _ => unreachable!(),
    }
}

tidemark_store::test_each_backend! {
    async fn a_database_dump_holds_no_usable_credential(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let api_key = app.activate(&license, "ci").await;
        for score in [50.0, 60.0] {
            let res = app
                .push(
                    &api_key,
                    &sample_push("api", score, &format!("2026-11-22T10:00:{score:02}Z")),
                )
                .await;
            assert_eq!(res.status(), StatusCode::CREATED);
        }
        let res = app
            .client
            .post(app.url("/v1/license/resend"))
            .json(&json!({"email": license.email}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);

        let text = dump(&app).await;
        // The dump is real: it holds the data we wrote.
        assert!(
            text.contains(license.account_id.as_str()),
            "{backend:?}: dump misses the account"
        );
        assert!(text.contains("google_compute_instance.web"));
        // The verdict-signing key (made on first use) in every spelling it could be stored in.
        let signing = tidemark_store::signing_keys::list_keys(&app.db).await.unwrap();
        assert_eq!(signing.len(), 1, "activation signed with the first key");
        let pkcs8 = app
            .state
            .signer
            .secrets()
            .open(&signing[0].private_sealed)
            .unwrap();
        let seed = &pkcs8[16..48];
        let spellings = [
            base64::engine::general_purpose::STANDARD.encode(&pkcs8),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&pkcs8),
            hex::encode(&pkcs8),
            base64::engine::general_purpose::STANDARD.encode(seed),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(seed),
            hex::encode(seed),
        ];
        for spelling in &spellings {
            assert!(
                !text.contains(spelling.as_str()),
                "{backend:?}: the dump contains the signing key's private half"
            );
        }
        for (what, secret) in [
            ("raw license key", license.key.as_str()),
            ("license-key hash as sent by clients", license.hash.as_str()),
            ("raw API key", api_key.as_str()),
        ] {
            assert!(
                !text.contains(secret),
                "{backend:?}: the dump contains the {what}"
            );
        }
        // The stored forms cannot be replayed as credentials.
        let res = app
            .client
            .post(app.url("/v1/license/validate"))
            .header(
                "X-License-Key-Hash",
                tidemark_domain::secrets::sha256_hex(license.hash.as_bytes()),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::NOT_FOUND,
            "the stored look-up hash is not a credential"
        );
    }
}
