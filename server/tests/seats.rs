//! Seats, on both databases: a licence with `max_machines` activates a new machine only while
//! a seat is free (ten activations at once on three seats: three succeed), a machine that
//! holds a seat activates again without a new one, and support releasing a seat revokes that
//! machine's keys at once and frees the seat.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{assert_error, sample_push, TestApp, TestLicense};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tidemark_wire::Tier;

async fn activate(
    app: &TestApp,
    license: &TestLicense,
    machine: &str,
    fingerprint: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .client
        .post(app.url("/v1/license/activate"))
        .header("X-License-Key-Hash", &license.hash)
        .json(&json!({ "machine": machine }));
    if let Some(fp) = fingerprint {
        req = req.header("X-Machine-Fingerprint", fp);
    }
    req.send().await.unwrap()
}

async fn vendor_token(app: &TestApp, role: &str) -> String {
    let (ok, out, err) = app
        .command(
            &[
                "vendor-token",
                "create",
                "--name",
                role,
                "--role",
                role,
                "--json",
            ],
            &[],
        )
        .await;
    assert!(ok, "{err}");
    serde_json::from_str::<Value>(&out).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

tidemark_store::test_each_backend! {
    async fn ten_activations_at_once_on_three_seats_take_three(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let (ok, _, err) = app.command(&["license", "update", "--id", &license.license_id, "--max-machines", "3"], &[]).await;
        assert!(ok, "{err}");
        let attempts = (0..10).map(|i| {
            let (app, license) = (&app, &license);
            async move { activate(app, license, &format!("runner-{i}"), Some(&format!("fp-{i}"))).await.status() }
        });
        let statuses = futures_util::future::join_all(attempts).await;
        let created = statuses.iter().filter(|s| **s == StatusCode::CREATED).count();
        let refused = statuses.iter().filter(|s| **s == StatusCode::FORBIDDEN).count();
        assert_eq!((created, refused), (3, 7), "{statuses:?}");
        assert_eq!(app.count_where("machines", &format!("license_id = '{}' AND released_at IS NULL", license.license_id)).await, 3);

        // The full licence says so, in the contract's shape.
        let message = assert_error(activate(&app, &license, "laptop", Some("fp-new")).await,
            StatusCode::FORBIDDEN, "seat_limit_reached").await;
        assert!(message.contains("3 seats are all held"), "{message}");
    }
}

tidemark_store::test_each_backend! {
    async fn a_machine_keeps_its_seat_and_support_frees_one(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let client = reqwest::Client::new();
        let admin = |path: &str| format!("{}{path}", app.url("/admin/v1"));
        let sales = vendor_token(&app, "sales").await;
        let support = vendor_token(&app, "support").await;
        let read = vendor_token(&app, "read").await;
        let set = client.patch(admin(&format!("/licenses/{}", license.license_id)))
            .bearer_auth(&sales).json(&json!({"max_machines": 2})).send().await.unwrap();
        assert_eq!(set.status(), StatusCode::OK);

        // Two machines: one by fingerprint, one by name only (a CI secret). Each activates
        // again (a new key, the same seat).
        let first = activate(&app, &license, "laptop", Some("fp-laptop")).await;
        assert_eq!(first.status(), StatusCode::CREATED);
        let laptop_key = first.json::<Value>().await.unwrap()["api_key"].as_str().unwrap().to_owned();
        assert_eq!(activate(&app, &license, "ci", None).await.status(), StatusCode::CREATED);
        assert_eq!(activate(&app, &license, "laptop (renamed)", Some("fp-laptop")).await.status(), StatusCode::CREATED);
        assert_eq!(activate(&app, &license, "ci", None).await.status(), StatusCode::CREATED);
        assert_error(activate(&app, &license, "desktop", Some("fp-desktop")).await,
            StatusCode::FORBIDDEN, "seat_limit_reached").await;

        let list: Value = client.get(admin(&format!("/licenses/{}/machines", license.license_id)))
            .bearer_auth(&read).send().await.unwrap().json().await.unwrap();
        assert_eq!((list["seats_used"].as_i64(), list["max_machines"].as_u64()), (Some(2), Some(2)));
        let machines = list["machines"].as_array().unwrap();
        let laptop = machines.iter().find(|m| m["fingerprint"] == "fp-laptop").unwrap();
        assert_eq!((laptop["name"].as_str(), laptop["live_keys"].as_i64()), (Some("laptop (renamed)"), Some(2)));
        assert!(machines.iter().any(|m| m["name"] == "ci" && m["fingerprint"].is_null()));

        // Only support and admin free seats.
        let release = |token: &str, id: &str| client
            .post(admin(&format!("/licenses/{}/machines/{id}/release", license.license_id)))
            .bearer_auth(token.to_owned()).send();
        let laptop_id = laptop["id"].as_str().unwrap();
        assert_error(release(&sales, laptop_id).await.unwrap(), StatusCode::FORBIDDEN, "insufficient_role").await;
        assert_eq!(app.push(&laptop_key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await.status(), StatusCode::CREATED);
        assert_eq!(release(&support, laptop_id).await.unwrap().status(), StatusCode::NO_CONTENT);
        assert_error(release(&support, laptop_id).await.unwrap(), StatusCode::NOT_FOUND, "not_found").await;
        // Its keys stop at once; its seat is free for another machine.
        assert_error(app.push(&laptop_key, &sample_push("web", 81.0, "2026-11-20T11:00:00Z")).await,
            StatusCode::UNAUTHORIZED, "invalid_api_key").await;
        assert_eq!(activate(&app, &license, "desktop", Some("fp-desktop")).await.status(), StatusCode::CREATED);
        let log = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery { limit: 50, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.action == "machine.released" && e.actor == "vendor:support"
            && e.after_summary.as_deref() == Some("released; 2 API keys revoked")));

        // Unlimited again: nothing is refused.
        let unlimited = client.patch(admin(&format!("/licenses/{}", license.license_id)))
            .bearer_auth(&sales).json(&json!({"max_machines": null})).send().await.unwrap();
        assert_eq!(unlimited.json::<Value>().await.unwrap()["max_machines"], Value::Null);
        assert_eq!(activate(&app, &license, "build-box", Some("fp-build")).await.status(), StatusCode::CREATED);
    }
}

#[tokio::test]
async fn the_client_says_a_full_licence_in_words() {
    use crate::cli_client::{env, tidemark};
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let license = app.create_license(Tier::Team).await;
    let (ok, _, err) = app
        .command(
            &[
                "license",
                "update",
                "--id",
                &license.license_id,
                "--max-machines",
                "1",
            ],
            &[],
        )
        .await;
    assert!(ok, "{err}");
    let run = |fingerprint: &'static str| {
        let config = tempfile::tempdir().unwrap();
        let (url, key) = (app.base_url.clone(), license.key.clone());
        async move {
            let e = env(
                &url,
                config.path(),
                &key,
                &[("TIDEMARK_MACHINE_FINGERPRINT", fingerprint)],
                chrono::Utc::now(),
            );
            tidemark(&e, &["activate", "--machine", "laptop"]).await
        }
    };
    assert_eq!(run("sha256:aaaa").await.code, Ok(0));
    assert_eq!(
        run("sha256:aaaa").await.code,
        Ok(0),
        "the same machine again"
    );
    let refused = run("sha256:bbbb").await;
    let said = refused.code.unwrap_err();
    assert!(
        said.contains("This license's 1 seat is all held by other machines")
            && said.contains("seat_limit_reached"),
        "{said}"
    );
    assert_ne!(refused.status, 0);
}

tidemark_store::test_each_backend! {
    async fn a_seat_unseen_for_thirty_days_is_freed_and_its_keys_revoked(backend) {
        let app = TestApp::spawn(backend).await;
        let license = app.create_license(Tier::Team).await;
        let (ok, _, err) = app.command(&["license", "update", "--id", &license.license_id, "--max-machines", "2"], &[]).await;
        assert!(ok, "{err}");
        let key_of = |res: reqwest::Response| async move {
            assert_eq!(res.status(), StatusCode::CREATED);
            res.json::<Value>().await.unwrap()["api_key"].as_str().unwrap().to_owned()
        };
        let quiet = key_of(activate(&app, &license, "old-laptop", Some("fp-old")).await).await;
        let busy = key_of(activate(&app, &license, "ci", Some("fp-ci")).await).await;
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        // Twenty days on, CI pushes: its seat is seen then.
        sqlx_update(&app, &format!("UPDATE api_keys SET last_used_at = {} WHERE machine = 'ci'", now + 20 * day)).await;
        // The clock moved, not waited for: a pass as of 29 days frees nothing; as of 31 days,
        // the laptop only.
        assert!(server::workers::seats::free_unseen_seats(&app.db, 30, now + 29 * day).await.unwrap().is_empty());
        let freed = server::workers::seats::free_unseen_seats(&app.db, 30, now + 31 * day).await.unwrap();
        assert_eq!(freed.len(), 1);
        assert_error(app.push(&quiet, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await,
            StatusCode::UNAUTHORIZED, "invalid_api_key").await;
        assert_eq!(app.push(&busy, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await.status(), StatusCode::CREATED);
        // Its seat is free for a new machine; 0 days never frees one.
        assert_eq!(activate(&app, &license, "new-laptop", Some("fp-new")).await.status(), StatusCode::CREATED);
        assert!(server::workers::seats::free_unseen_seats(&app.db, 0, now + 400 * day).await.unwrap().is_empty());
        let log = tidemark_store::audit::list_audit(&app.db, &tidemark_store::audit::AuditQuery { limit: 50, ..Default::default() }).await.unwrap();
        assert!(log.iter().any(|e| e.action == "machine.released" && e.actor == "system:seat-release" && e.target == freed[0]));
    }
}

async fn sqlx_update(app: &TestApp, sql: &str) {
    use tidemark_store::on_db;
    on_db!(&app.db, pool => sqlx::query(sql).execute(pool).await.map(|_| ())).unwrap();
}

tidemark_store::test_each_backend! {
    async fn each_licence_has_its_own_release_term_and_validations_count_as_seen(backend) {
        let app = TestApp::spawn(backend).await;
        let admin = vendor_token(&app, "admin").await;
        let (short, never) = (app.create_license(Tier::Team).await, app.create_license(Tier::Team).await);
        let patch = |id: String, body: Value| {
            let (app, admin) = (&app, &admin);
            async move {
                app.client.patch(app.url(&format!("/admin/v1/licenses/{id}"))).bearer_auth(admin)
                    .json(&body).send().await.unwrap()
            }
        };
        let res = patch(short.license_id.clone(), json!({"seat_release_after_days": 5})).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.json::<Value>().await.unwrap()["seat_release_after_days"], 5);
        assert_eq!(patch(never.license_id.clone(), json!({"seat_release_after_days": 0})).await.status(), StatusCode::OK);
        for (license, machine) in [(&short, "quiet"), (&short, "validating"), (&never, "forgotten")] {
            assert_eq!(activate(&app, license, machine, Some(&format!("fp-{machine}"))).await.status(), StatusCode::CREATED);
        }
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        // Six days on, one machine validates (its fingerprint): that is a sighting, written by
        // the minute's flush, not on the validation's path.
        sqlx_update(&app, &format!("UPDATE machines SET last_seen_at = {}", now - 6 * day)).await;
        let res = app.client.post(app.url("/v1/license/validate"))
            .header("X-License-Key-Hash", &short.hash).header("X-Machine-Fingerprint", "fp-validating")
            .send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(server::workers::seats::flush_sightings(&app.db, &app.state.validator).await.unwrap(), 1);
        let freed = server::workers::seats::free_unseen_seats(&app.db, 30, now).await.unwrap();
        assert_eq!(freed.len(), 1, "the quiet machine of the 5-day licence only: {freed:?}");
        let machines: Value = app.client.get(app.url(&format!("/admin/v1/licenses/{}/machines", short.license_id)))
            .bearer_auth(&admin).send().await.unwrap().json().await.unwrap();
        let held: Vec<&str> = machines["machines"].as_array().unwrap().iter()
            .filter(|m| m["released_at"].is_null()).map(|m| m["name"].as_str().unwrap()).collect();
        assert_eq!(held, ["validating"]);
        // A year on, the licence whose seats are never freed by time still holds its one.
        server::workers::seats::free_unseen_seats(&app.db, 30, now + 365 * day).await.unwrap();
        assert_eq!(app.count_where("machines", &format!("license_id = '{}' AND released_at IS NULL", never.license_id)).await, 1);
        // A sales token may set the term; a support token may not.
        let res = app.client.patch(app.url(&format!("/admin/v1/licenses/{}", short.license_id)))
            .bearer_auth(vendor_token(&app, "support").await).json(&json!({"seat_release_after_days": 9})).send().await.unwrap();
        assert_error(res, StatusCode::FORBIDDEN, "insufficient_role").await;
    }
}

tidemark_store::test_each_backend! {
    async fn an_offline_file_holds_a_seat_until_it_expires(backend) {
        let app = TestApp::spawn(backend).await;
        let support = vendor_token(&app, "support").await;
        let license = app.create_license(Tier::Team).await;
        let (ok, _, err) = app.command(&["license", "update", "--id", &license.license_id, "--max-machines", "1"], &[]).await;
        assert!(ok, "{err}");
        let offline = |machine: &str| {
            let (app, support, id) = (&app, &support, license.license_id.clone());
            let body = json!({"days": 10, "machine": machine});
            async move {
                app.client.post(app.url(&format!("/admin/v1/licenses/{id}/offline-file"))).bearer_auth(support)
                    .json(&body).send().await.unwrap()
            }
        };
        assert_eq!(offline("sha256:airgapped").await.status(), StatusCode::OK);
        // The same machine's next file keeps its seat; another machine finds none.
        assert_eq!(offline("sha256:airgapped").await.status(), StatusCode::OK);
        let message = assert_error(offline("sha256:other").await, StatusCode::FORBIDDEN, "seat_limit_reached").await;
        assert!(message.contains("1 seat is all held"), "{message}");
        assert_error(activate(&app, &license, "laptop", Some("fp-laptop")).await, StatusCode::FORBIDDEN, "seat_limit_reached").await;
        // Nobody can release it before the file expires: a file cannot be revoked.
        let machines: Value = app.client.get(app.url(&format!("/admin/v1/licenses/{}/machines", license.license_id)))
            .bearer_auth(&support).send().await.unwrap().json().await.unwrap();
        let seat = &machines["machines"][0];
        assert_eq!(seat["fingerprint"], "sha256:airgapped");
        assert!(seat["offline_until"].is_string());
        let release = app.client.post(app.url(&format!("/admin/v1/licenses/{}/machines/{}/release",
            license.license_id, seat["id"].as_str().unwrap()))).bearer_auth(&support).send().await.unwrap();
        let message = assert_error(release, StatusCode::CONFLICT, "conflict").await;
        assert!(message.contains("offline licence file holds this seat"), "{message}");
        // Not freed for going unseen while the file runs; freed once it has expired.
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        assert!(server::workers::seats::free_unseen_seats(&app.db, 1, now + 9 * day).await.unwrap().is_empty());
        assert_eq!(server::workers::seats::free_unseen_seats(&app.db, 1, now + 11 * day).await.unwrap().len(), 1);
        assert_eq!(activate(&app, &license, "laptop", Some("fp-laptop")).await.status(), StatusCode::CREATED);
    }
}

tidemark_store::test_each_backend! {
    async fn a_new_licence_gets_its_tier_s_default_seats_unless_told(backend) {
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_DEFAULT_SEATS", "team=2")]).await;
        let admin = vendor_token(&app, "admin").await;
        let create = |body: Value| {
            let (app, admin) = (&app, &admin);
            async move {
                let res = app.client.post(app.url("/admin/v1/licenses")).bearer_auth(admin).json(&body).send().await.unwrap();
                assert_eq!(res.status(), StatusCode::CREATED);
                res.json::<Value>().await.unwrap()["license"]["max_machines"].clone()
            }
        };
        assert_eq!(create(json!({"email": "a@example.com", "tier": "team"})).await, json!(2));
        assert_eq!(create(json!({"email": "b@example.com", "tier": "team", "max_machines": 7})).await, json!(7));
        assert_eq!(create(json!({"email": "c@example.com", "tier": "agency"})).await, Value::Null, "a tier not named is unlimited");
        let (ok, out, err) = app.command(&["license", "create", "--email", "d@example.com", "--tier", "team", "--json"], &[("TIDEMARK_DEFAULT_SEATS", "team=2")]).await;
        assert!(ok, "{err}");
        let id = serde_json::from_str::<Value>(&out).unwrap()["license_id"].as_str().unwrap().to_owned();
        assert_eq!(app.count_where("licenses", &format!("id = '{id}' AND max_machines = 2")).await, 1, "the command too");
    }
}
