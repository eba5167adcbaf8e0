//! Master-key rotation as an operator does it: the servers restart with the new key and the
//! old one as `TIDEMARK_MASTER_KEY_PREVIOUS`, `rotate-master-key` re-encrypts every stored
//! secret, and the previous key goes. Webhook URLs and secrets, license keys and sessions
//! must come through; a session not seen during the rotation ends with the old key.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::Value;
use tidemark_services::crypto::key_id;
use tidemark_services::crypto::MasterKey;
use tidemark_store::sealed::{sealed_after, SealedColumn};
use tidemark_wire::Tier;

use crate::common;
use common::browser::Browser;
use common::receiver::Receiver;
use common::{sample_push, TestApp};

const TEST_ENV: [(&str, &str); 2] = [
    ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
    ("TIDEMARK_WEBHOOK_RETRY_BASE_MS", "300"),
];

/// Every stored ciphertext, by column.
async fn sealed(app: &TestApp) -> Vec<(&'static str, String, String)> {
    let mut all = Vec::new();
    for column in SealedColumn::ALL {
        for (key, value) in sealed_after(app.db.db(), column, "", 10_000).await.unwrap() {
            all.push((column.name(), key, value));
        }
    }
    all
}

/// The same browser pointed at a restarted server (which listens on another port).
fn carried_to(app: &TestApp, browser: &Browser) -> Browser {
    let mut moved = Browser::new(&app.base_url);
    moved.jar = browser.jar.clone();
    moved
}

async fn signed_in(browser: &mut Browser) -> bool {
    let url = format!("{}/projects", browser.origin);
    match browser.get(&url).await.status() {
        StatusCode::OK => true,
        StatusCode::SEE_OTHER => false,
        other => panic!("/projects answered {other}"),
    }
}

/// `v1` of `tidemark-signature` is hex HMAC-SHA256 of `"<t>.<body>"` under the secret.
fn signed_with(secret: &str, r: &common::receiver::Received) -> bool {
    use hmac::Mac as _;
    let header = r.header("tidemark-signature");
    let parts: std::collections::HashMap<&str, &str> = header
        .split(',')
        .filter_map(|p| p.split_once('='))
        .collect();
    let (Some(t), Some(v1)) = (parts.get("t"), parts.get("v1")) else {
        return false;
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(&r.body);
    hex::encode(mac.finalize().into_bytes()) == *v1
}

fn new_key() -> String {
    base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>())
}

fn id_of(base64_key: &str) -> String {
    key_id(&MasterKey::parse_base64(base64_key).unwrap())
}

tidemark_store::test_each_backend! {
    async fn a_rotation_keeps_every_secret_and_active_sessions_and_drops_the_old_key(backend) {
        let receiver = Receiver::start().await;
        let (app, provider) = TestApp::spawn_with_oidc_and(backend, &TEST_ENV).await;
        let (license, api_key) = app.with_key(Tier::Team).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let url = format!("{}/hooks/rotation?token=s3cr3t", receiver.base);
        let res = admin
            .post_form("/api/create_webhook", &[("url", &url), ("scan_pushed", "true")])
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        let created: Value = res.json().await.unwrap();
        let secret = created["secret"].as_str().unwrap().to_owned();
        // A second browser whose session is not used while the rotation is under way.
        let idle = app.signed_in(&provider, &license.email).await;

        let old = app.setting("TIDEMARK_MASTER_KEY").unwrap().to_owned();
        let before = sealed(&app).await;
        assert!(before.len() >= 3, "license key, webhook URL and secret: {before:?}");
        assert!(before.iter().all(|(_, _, v)| v.starts_with(&format!("v2:{}:", id_of(&old)))));

        // 1. Every server restarts with the new key, the old one decrypting only.
        let new = new_key();
        let app = app
            .restart(&[
                ("TIDEMARK_MASTER_KEY", new.as_str()),
                ("TIDEMARK_MASTER_KEY_PREVIOUS", old.as_str()),
            ])
            .await;
        let mut admin = carried_to(&app, &admin);
        let cookie_before = admin.jar["__Host-tidemark_session"].clone();
        assert!(signed_in(&mut admin).await, "a session made under the old key goes on");
        assert_ne!(
            admin.jar["__Host-tidemark_session"], cookie_before,
            "and its cookie is set again under the new key"
        );
        app.push_json(&api_key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        let got = receiver.wait_for(1).await;
        assert_eq!(got[0].path, "/hooks/rotation", "the old-sealed URL still opens");

        // 2. The operator re-encrypts what is stored; running it again finds nothing to do.
        let (ok, out, err) = app.command(&["rotate-master-key", "--json"], &[]).await;
        assert!(ok, "{err}");
        let report: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(report["key_id"], id_of(&new));
        assert_eq!(report["unreadable"], 0);
        assert!(report["resealed"].as_u64().unwrap() >= 3, "{report}");
        let by_column = |name: &str| {
            report["columns"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["column"] == name)
                .cloned()
                .unwrap()
        };
        assert_eq!(by_column("licenses.key_ciphertext")["resealed"], 1);
        assert_eq!(by_column("webhooks.url_sealed")["resealed"], 1);
        assert_eq!(by_column("webhooks.secret_sealed")["resealed"], 1);
        assert!(!out.contains(&license.key) && !err.contains(&license.key));
        let after = sealed(&app).await;
        assert_eq!(after.len(), before.len());
        assert!(after.iter().all(|(_, _, v)| v.starts_with(&format!("v2:{}:", id_of(&new)))));
        let (ok, out, _) = app.command(&["rotate-master-key", "--json"], &[]).await;
        let again: Value = serde_json::from_str(&out).unwrap();
        assert!(ok);
        assert_eq!((again["resealed"].as_u64(), again["unreadable"].as_u64()), (Some(0), Some(0)));

        // 3. The previous key goes.
        let app = app.restart(&[("TIDEMARK_MASTER_KEY_PREVIOUS", "")]).await;
        let mut admin = carried_to(&app, &admin);
        assert!(signed_in(&mut admin).await, "a session seen during the rotation goes on");
        let mut idle = carried_to(&app, &idle);
        assert!(!signed_in(&mut idle).await, "one not seen since needs the old key: signs in again");
        app.push_json(&api_key, &sample_push("web", 81.0, "2026-11-20T11:00:00Z")).await;
        let got = receiver.wait_for(2).await;
        assert_eq!(got[1].json()["scan"]["score"], 81.0);
        assert_eq!(got[1].path, "/hooks/rotation");
        assert!(signed_with(&secret, &got[1]), "signed with the secret sealed before the rotation");
        let license_row = after.iter().find(|(c, _, _)| *c == "licenses.key_ciphertext").unwrap();
        assert_eq!(app.state.license_keys.open(&license_row.2).unwrap(), license.key.as_bytes());

        // A rotation with a key that opens nothing changes nothing and says so.
        let stranger = new_key();
        let (ok, out, err) = app
            .command(&["rotate-master-key", "--json"], &[("TIDEMARK_MASTER_KEY", stranger.as_str())])
            .await;
        assert!(!ok, "{out}");
        let refused: Value = serde_json::from_str(&out).unwrap();
        assert!(refused["unreadable"].as_u64().unwrap() >= 3, "{refused}");
        assert!(err.contains("could not be opened"), "{err}");
        assert_eq!(sealed(&app).await, after, "nothing was rewritten");
    }
}
