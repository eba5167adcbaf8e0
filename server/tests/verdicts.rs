//! Signed licence verdicts: validate and activate answer with a JWS that independent JOSE
//! implementations (npm `jose`, Python `cryptography`) verify with the published key set;
//! the key set is signed by its own keys; rotation announces before it signs; offline licence
//! files; two replicas sign with the same key. Both databases.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use tidemark_wire::Tier;

use crate::common::{self, assert_error, TestApp};

const PEERS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/peers");

async fn validate(app: &TestApp, hash: &str, machine: Option<&str>) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", hash);
    if let Some(m) = machine {
        req = req.header("X-Machine-Fingerprint", m);
    }
    req.send().await.unwrap()
}

async fn verdict_of(app: &TestApp, hash: &str, machine: Option<&str>) -> (Value, String) {
    let res = validate(app, hash, machine).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    let jws = body["verdict"].as_str().expect("a verdict").to_owned();
    (body, jws)
}

async fn key_set(app: &TestApp) -> Value {
    let res = app.get("/v1/keys").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["cache-control"], "public, max-age=300");
    res.json().await.unwrap()
}

fn header_of(jws: &str) -> Value {
    use base64::Engine as _;
    let head = jws.split('.').next().unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The payload as each independent verifier reads it, or its refusal.
fn verify_independently(keys: &Value, jws: &str) -> [Result<Value, String>; 2] {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys.json");
    std::fs::write(&path, keys.to_string()).unwrap();
    let run = |program: &str, script: &str| {
        let out = std::process::Command::new(program)
            .arg(format!("{PEERS}/{script}"))
            .arg(&path)
            .arg(jws)
            .output()
            .unwrap_or_else(|e| panic!("{program} {script}: {e} (run scripts/setup.sh)"));
        if out.status.success() {
            Ok(serde_json::from_slice(&out.stdout).unwrap())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    };
    [
        run("node", "verify-verdict.mjs"),
        run("python3", "verify_verdict.py"),
    ]
}

fn verified(keys: &Value, jws: &str) -> Value {
    let [jose, cryptography] = verify_independently(keys, jws);
    let (jose, cryptography) = (jose.unwrap(), cryptography.unwrap());
    assert_eq!(jose, cryptography);
    jose
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// Every signature of the key set verified with the key it names (in Rust, with
/// jsonwebtoken): the kids that signed, and the payload's key list.
fn key_set_signers(keys: &Value) -> Vec<String> {
    let mut signers = Vec::new();
    for sig in keys["signatures"].as_array().unwrap() {
        let jws = sig.as_str().unwrap();
        let header = header_of(jws);
        assert_eq!(header["typ"], "tidemark-keys+jwt");
        let kid = header["kid"].as_str().unwrap();
        let jwk = keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["kid"] == kid)
            .unwrap();
        let key =
            jsonwebtoken::DecodingKey::from_ed_components(jwk["x"].as_str().unwrap()).unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        let data = jsonwebtoken::decode::<Value>(jws, &key, &validation).unwrap();
        assert_eq!(
            data.claims["keys"], keys["keys"],
            "the signed list is the list"
        );
        signers.push(kid.to_owned());
    }
    signers
}

tidemark_store::test_each_backend! {
    async fn verdicts_verify_with_independent_jose_implementations(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let (body, jws) = verdict_of(&app, &license.hash, Some("sha256:machine-one")).await;
        let keys = key_set(&app).await;
        assert_eq!(keys["keys"].as_array().unwrap().len(), 1, "{keys}");
        let jwk = &keys["keys"][0];
        assert_eq!((jwk["kty"].as_str(), jwk["crv"].as_str(), jwk["alg"].as_str()), (Some("OKP"), Some("Ed25519"), Some("EdDSA")));
        assert!(jwk["signs_until"].is_null() && jwk["retires_at"].is_null(), "{jwk}");
        // The same document where key-set readers look.
        let well_known: Value = app.get("/.well-known/tidemark-keys.json").await.json().await.unwrap();
        assert_eq!(well_known["keys"], keys["keys"]);

        let header = header_of(&jws);
        assert_eq!(header["alg"], "EdDSA");
        assert_eq!(header["typ"], "tidemark-verdict+jwt");
        assert_eq!(header["kid"], jwk["kid"]);
        let claims = verified(&keys, &jws);
        assert_eq!(claims["iss"], app.base_url.as_str());
        assert_eq!(claims["aud"], "tidemark-scanner");
        // Names the licence by the hash of the hash: the verdict is no credential.
        assert_eq!(claims["sub"], format!("sha256:{}", sha256_hex(&license.hash)));
        assert!(!jws.contains(&license.hash));
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 7 * 86_400);
        assert_eq!(claims["valid"], true);
        assert_eq!(claims["status"], "active");
        assert_eq!(claims["tier"], body["tier"]);
        assert_eq!(claims["features"], body["features"]);
        assert_eq!(claims["expiry"], body["expiry"]);
        assert_eq!(claims["bundle_sha256"], body["bundle_checksum"]);
        assert_eq!(claims["machine"], "sha256:machine-one");
        assert!(claims["jti"].as_str().unwrap().starts_with("vrd_"));

        // One changed byte of the payload, or another key, and neither verifier accepts it.
        let mut parts: Vec<String> = jws.split('.').map(str::to_owned).collect();
        let mut payload = parts[1].clone().into_bytes();
        payload[10] = if payload[10] == b'A' { b'B' } else { b'A' };
        parts[1] = String::from_utf8(payload).unwrap();
        for refusal in verify_independently(&keys, &parts.join(".")) {
            assert!(refusal.is_err(), "a tampered verdict verified: {refusal:?}");
        }
        let mut foreign = keys.clone();
        foreign["keys"][0]["x"] = json!("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo");
        for refusal in verify_independently(&foreign, &jws) {
            assert!(refusal.is_err(), "verified with another key: {refusal:?}");
        }

        // Without a fingerprint the verdict binds no machine; a malformed one is refused.
        let (_, unbound) = verdict_of(&app, &license.hash, None).await;
        assert!(verified(&keys, &unbound).get("machine").is_none());
        let msg = assert_error(
            validate(&app, &license.hash, Some("two words")).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
        ).await;
        assert!(msg.contains("X-Machine-Fingerprint"), "{msg}");

        // Activation answers with a verdict too.
        let res = app.client.post(app.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &license.hash)
            .header("X-Machine-Fingerprint", "fp-2")
            .json(&json!({ "machine": "laptop" }))
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let activated: Value = res.json().await.unwrap();
        let claims = verified(&keys, activated["verdict"].as_str().unwrap());
        assert_eq!((claims["valid"].as_bool(), claims["machine"].as_str()), (Some(true), Some("fp-2")));

        // A suspended licence gets a signed "not valid".
        let (ok, _, err) = app.command(&["license", "suspend", "--id", &license.license_id], &[]).await;
        assert!(ok, "{err}");
        let suspended = wait_for_status(&app, &license.hash, "suspended").await;
        assert_eq!(suspended["valid"], false);
        assert_eq!(suspended["features"], json!([]));

        // The key set is signed by its key.
        assert_eq!(key_set_signers(&keys), [jwk["kid"].as_str().unwrap()]);
        // The private half is sealed in the database.
        let (sealed,): (String,) = sqlx_one(&app, "SELECT private_sealed FROM signing_keys").await;
        assert!(sealed.starts_with("v2:"), "sealed under the master key");
    }
}

/// The verified claims of a verdict once they say `status` (the validation cache may hold
/// the old state for its 2 s).
async fn wait_for_status(app: &TestApp, hash: &str, status: &str) -> Value {
    let keys = key_set(app).await;
    common::wait_for_async(std::time::Duration::from_secs(10), || async {
        let (_, jws) = verdict_of(app, hash, None).await;
        let claims = verified(&keys, &jws);
        (claims["status"] == status).then_some(claims)
    })
    .await
    .unwrap_or_else(|| panic!("the verdict never said {status}"))
}

async fn sqlx_one(app: &TestApp, sql: &str) -> (String,) {
    match app.db.db() {
        tidemark_store::Db::Sqlite { pool, .. } => {
            sqlx::query_as(sql).fetch_one(pool).await.unwrap()
        }
        tidemark_store::Db::Postgres(pool) => sqlx::query_as(sql).fetch_one(pool).await.unwrap(),
    }
}

async fn signing_key(app: &TestApp, args: &[&str]) -> Value {
    let mut all = vec!["--json", "signing-key"];
    all.extend_from_slice(args);
    let (ok, out, err) = app.command(&all, &[]).await;
    assert!(ok, "signing-key {args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_rotation_is_announced_before_it_signs(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let (_, before) = verdict_of(&app, &license.hash, None).await;
        let first = header_of(&before)["kid"].as_str().unwrap().to_owned();

        // Rotated with a two-hour overlap: published now, signing later.
        let rotated = signing_key(&app, &["rotate", "--overlap", "2h"]).await;
        let second = rotated["added"].as_str().unwrap().to_owned();
        assert_eq!(rotated["keys"][0]["stage"], "signing");
        assert_eq!(rotated["keys"][1]["stage"], "announced");
        app.state.signer.invalidate();
        let keys = key_set(&app).await;
        let kids: Vec<&str> = keys["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
        assert_eq!(kids, [first.as_str(), second.as_str()]);
        assert_eq!(keys["keys"][0]["signs_until"], keys["keys"][1]["signs_from"]);
        assert_eq!(
            keys["keys"][1]["signs_from"].as_i64().unwrap() - keys["keys"][1]["published_at"].as_i64().unwrap(),
            7200
        );
        // The old key still signs, and it vouches for its successor in the key set.
        let (_, during) = verdict_of(&app, &license.hash, None).await;
        assert_eq!(header_of(&during)["kid"], first.as_str());
        let mut signers = key_set_signers(&keys);
        signers.sort();
        let mut both = vec![first.clone(), second.clone()];
        both.sort();
        assert_eq!(signers, both);

        // The first key introduced the second in the chain, which stays when keys retire.
        let chain = keys["chain"].as_array().unwrap();
        assert_eq!(chain.len(), 1);
        let intro = chain[0].as_str().unwrap();
        assert_eq!(header_of(intro)["typ"], "tidemark-key-intro+jwt");
        assert_eq!(header_of(intro)["kid"], first.as_str());
        let introduced = verified(&keys, intro);
        assert_eq!(introduced["kid"], second.as_str());
        assert_eq!(introduced["x"], keys["keys"][1]["x"]);

        // A rotation at once (a compromised key) cannot jump the announced key's turn.
        let again = signing_key(&app, &["rotate", "--overlap", "0"]).await;
        assert_eq!(again["keys"][2]["signs_from"], again["keys"][1]["signs_from"]);

        // Everything that was signed still verifies with the published keys.
        verified(&keys, &before);
        let (ok, audit, _) = app.command(&["audit", "list", "--action", "signing_key.created"], &[]).await;
        assert!(ok);
        assert_eq!(audit.matches("signing_key.created").count(), 3, "{audit}");
    }
}

tidemark_store::test_each_backend! {
    async fn an_immediate_rotation_switches_and_old_verdicts_keep_verifying(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let (_, old) = verdict_of(&app, &license.hash, None).await;
        let first = header_of(&old)["kid"].as_str().unwrap().to_owned();
        let rotated = signing_key(&app, &["rotate", "--overlap", "0"]).await;
        let second = rotated["added"].as_str().unwrap().to_owned();
        assert_eq!(rotated["keys"][0]["stage"], "verifying");
        app.state.signer.invalidate();
        let (_, new) = verdict_of(&app, &license.hash, None).await;
        assert_eq!(header_of(&new)["kid"], second.as_str());
        let keys = key_set(&app).await;
        // The old key stays published for a verdict's lifetime after it stopped signing.
        let old_key = &keys["keys"][0];
        assert_eq!(old_key["kid"], first.as_str());
        assert_eq!(
            old_key["retires_at"].as_i64().unwrap() - old_key["signs_until"].as_i64().unwrap(),
            7 * 86_400
        );
        verified(&keys, &old);
        verified(&keys, &new);
        // Nothing retires before its time.
        let listed = signing_key(&app, &["list"]).await;
        assert_eq!(listed["retired"], json!([]));
        assert_eq!(listed["keys"].as_array().unwrap().len(), 2);
    }
}

tidemark_store::test_each_backend! {
    async fn retired_keys_are_destroyed_and_unpublished(backend) {
        use tidemark_store::signing_keys;
        let app = TestApp::spawn(backend).await;
        signing_key(&app, &["rotate", "--overlap", "0"]).await;
        let keys = signing_keys::list_keys(&app.db).await.unwrap();
        assert_eq!(keys.len(), 2);
        let schedule = signing_keys::schedule(&keys);
        let retires = schedule.retires_at(&keys[0].window).unwrap();
        let audit = tidemark_store::testing::audit();
        // A moment before: kept. At its time: deleted, private half and all, and audited.
        assert!(signing_keys::delete_retired(&app.db, retires - 1, &audit).await.unwrap().is_empty());
        let gone = signing_keys::delete_retired(&app.db, retires, &audit).await.unwrap();
        assert_eq!(gone, [keys[0].window.kid.clone()]);
        let left = signing_keys::list_keys(&app.db).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].window.kid, keys[1].window.kid);
        // The current key never retires, however late.
        assert!(signing_keys::delete_retired(&app.db, retires * 10, &audit).await.unwrap().is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn offline_license_files_are_signed_and_bounded(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Enterprise).await;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("licence.json");
        let out_s = out.to_str().unwrap();
        let (ok, _, err) = app.command(&[
            "license", "file", "--license", &license.license_id,
            "--machine", "sha256:air-gapped", "--days", "30", "--out", out_s,
        ], &[]).await;
        assert!(ok, "{err}");
        let file: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(file["format"], "tidemark-offline-licence");
        let jws = file["verdict"].as_str().unwrap();
        assert_eq!(header_of(jws)["typ"], "tidemark-offline-licence+jwt");
        let claims = verified(&file["keys"], jws);
        assert_eq!(claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(), 30 * 86_400);
        assert_eq!(claims["machine"], "sha256:air-gapped");
        assert_eq!(claims["sub"], format!("sha256:{}", sha256_hex(&license.hash)));
        assert_eq!(claims["valid"], true);
        assert_eq!(key_set_signers(&file["keys"]).len(), 1);
        // The file's key is the service's, and the issue is in the account's audit log.
        assert_eq!(file["keys"]["keys"], key_set(&app).await["keys"]);
        let (_, audit, _) = app.command(&["audit", "list", "--account", &license.account_id], &[]).await;
        assert!(audit.contains("license.offline_file_issued"), "{audit}");

        // Rotated away at once, the key stays published until the file expires.
        signing_key(&app, &["rotate", "--overlap", "0"]).await;
        app.state.signer.invalidate();
        let keys = key_set(&app).await;
        assert_eq!(keys["keys"][0]["retires_at"].as_i64(), claims["exp"].as_i64().map(|e| e.max(keys["keys"][0]["signs_until"].as_i64().unwrap() + 7 * 86_400)));
        assert!(keys["keys"][0]["retires_at"].as_i64().unwrap() >= claims["exp"].as_i64().unwrap());

        // Refused: no days, too many, past the licence, an existing file, a suspended licence.
        let refuse = |days: &'static str, file: &'static str| {
            let (app, id, dir) = (&app, license.license_id.clone(), dir.path().to_owned());
            async move {
                let path = dir.join(file);
                let (ok, _, err) = app.command(&[
                    "license", "file", "--license", &id, "--days", days, "--out", path.to_str().unwrap(),
                ], &[]).await;
                assert!(!ok, "{days} days");
                err
            }
        };
        assert!(refuse("0", "a.json").await.contains("1 to 400 days"));
        assert!(refuse("401", "b.json").await.contains("1 to 400 days"));
        assert!(refuse("399", "c.json").await.contains("before the file would"));
        assert!(refuse("30", "licence.json").await.contains("could not create"));
        let (ok, _, _) = app.command(&["license", "suspend", "--id", &license.license_id], &[]).await;
        assert!(ok);
        assert!(refuse("30", "d.json").await.contains("expired or suspended"));
    }
}

#[tokio::test]
async fn two_replicas_sign_with_the_same_key() {
    let Some(backend) = tidemark_store::testing::postgres_backend() else {
        return;
    };
    let one = TestApp::spawn(backend).await;
    let two = one.replica().await;
    let license = one.create_license(Tier::Team).await;
    let kid = |jws: &str| header_of(jws)["kid"].as_str().unwrap().to_owned();
    let (_, a) = verdict_of(&one, &license.hash, None).await;
    let (_, b) = verdict_of(&two, &license.hash, None).await;
    assert_eq!(kid(&a), kid(&b));
    // Each replica signs its own copy of the key set (at its own iat); the keys are one.
    assert_eq!(key_set(&one).await["keys"], key_set(&two).await["keys"]);
    let rotated = signing_key(&one, &["rotate", "--overlap", "0"]).await;
    one.state.signer.invalidate();
    two.state.signer.invalidate();
    let (_, a) = verdict_of(&one, &license.hash, None).await;
    let (_, b) = verdict_of(&two, &license.hash, None).await;
    assert_eq!(kid(&a), rotated["added"].as_str().unwrap());
    assert_eq!(kid(&b), kid(&a));
}

fn payload_of(jws: &str) -> Value {
    use base64::Engine as _;
    let payload = jws.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Within the validation cache's window a repeated question is answered with the kept
/// answer, verdict and all (nothing is signed again); a question about another licence or
/// from another machine never receives it.
#[tokio::test]
async fn kept_answers_are_given_only_to_the_same_question() {
    let app = TestApp::spawn_with(
        tidemark_store::Backend::Sqlite,
        &[("TIDEMARK_VALIDATION_CACHE_MS", "60000")],
    )
    .await;
    let first = app.create_license(Tier::Team).await;
    let second = app.create_license(Tier::Team).await;
    let (body, once) = verdict_of(&app, &first.hash, Some("laptop-1")).await;
    let (again_body, again) = verdict_of(&app, &first.hash, Some("laptop-1")).await;
    assert_eq!(once, again, "the same question within the window");
    assert_eq!(body, again_body);
    let machine = |jws: &str| payload_of(jws)["machine"].clone();
    let subject = |jws: &str| payload_of(jws)["sub"].clone();
    let (_, other_machine) = verdict_of(&app, &first.hash, Some("laptop-2")).await;
    let (_, no_machine) = verdict_of(&app, &first.hash, None).await;
    let (_, other_license) = verdict_of(&app, &second.hash, Some("laptop-1")).await;
    assert_eq!(machine(&once), json!("laptop-1"));
    assert_eq!(machine(&other_machine), json!("laptop-2"));
    assert_eq!(machine(&no_machine), Value::Null);
    assert_eq!(machine(&other_license), json!("laptop-1"));
    assert_eq!(subject(&once), subject(&other_machine));
    assert_ne!(subject(&once), subject(&other_license));
    let verdicts = [&once, &other_machine, &no_machine, &other_license];
    for (i, a) in verdicts.iter().enumerate() {
        for b in &verdicts[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // The kept answer is still a verdict the published keys verify.
    let keys = key_set(&app).await;
    assert_eq!(verified(&keys, &again)["machine"], json!("laptop-1"));
}
