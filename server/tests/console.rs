//! The vendor's console: staff sign in through their own (scripted) OpenID Connect provider,
//! hold the roles their groups map to for as long as the provider keeps them in those groups,
//! and find customers with one search box; a customer's session never opens it, nor a staff
//! session a customer's dashboard. On both databases. (The browser suite signs in through
//! npm's `oidc-provider`, a real provider, as each role.)
#![allow(clippy::unwrap_used)]

use crate::common;

use common::browser::{location, Browser};
use common::oidc::{Script, ScriptedProvider};
use common::TestApp;
use reqwest::StatusCode;
use serde_json::json;
use tidemark_wire::Tier;

const ROLES: &str = "vendor-admins=admin,helpdesk=support,sellers=sales,everyone=read";

/// An app whose customers sign in with one provider and whose staff sign in with another.
pub(crate) async fn app_with_console(
    backend: tidemark_store::Backend,
) -> (TestApp, ScriptedProvider, ScriptedProvider) {
    let customers = ScriptedProvider::start().await;
    let staff = ScriptedProvider::start().await;
    let mut env = customers.env();
    env.extend(staff.console_env(ROLES));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    (TestApp::spawn_with(backend, &env).await, customers, staff)
}

/// The staff round trip from the sign-in button; returns the callback's response.
pub(crate) async fn staff_sign_in(browser: &mut Browser, next: &str) -> reqwest::Response {
    let start = browser
        .post_form("/console/sign-in", &[("next", next)])
        .await;
    assert_eq!(start.status(), StatusCode::SEE_OTHER, "sign-in start");
    let to_provider = location(&start);
    for required in [
        "code_challenge_method=S256",
        "state=",
        "nonce=",
        "scope=openid",
    ] {
        assert!(
            to_provider.contains(required),
            "{required} in {to_provider}"
        );
    }
    assert!(
        to_provider.contains("groups"),
        "the groups scope is asked for: {to_provider}"
    );
    let from_provider = browser.get(&to_provider).await;
    let callback = location(&from_provider);
    assert!(callback.contains("/console/auth/callback?"), "{callback}");
    browser.get(&callback).await
}

pub(crate) async fn page(browser: &mut Browser, app: &TestApp, path: &str) -> (StatusCode, String) {
    let res = browser.get(&app.url(path)).await;
    let status = res.status();
    if status == StatusCode::OK {
        assert_eq!(
            res.headers()["content-security-policy"].to_str().unwrap(),
            "default-src 'none'; style-src 'self'; img-src 'self' data:; \
             frame-ancestors 'none'; base-uri 'none'",
            "a console page runs no script"
        );
        assert_eq!(res.headers()["cache-control"], "no-store");
    }
    (status, res.text().await.unwrap())
}

pub(crate) async fn count(app: &TestApp, sql: &str) -> i64 {
    let (n,): (i64,) = tidemark_store::on_db!(&app.db, pool => {
        sqlx::query_as(sql).fetch_one(pool).await
    })
    .unwrap();
    n
}

tidemark_store::test_each_backend! {
    async fn staff_sign_in_with_their_groups_and_lose_the_console_with_them(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        let ann = "ann@vendor.example";
        provider.script(Script::user(ann));
        provider.set_groups(&format!("sub-{ann}"), &["helpdesk", "unrelated"]);
        let mut browser = Browser::new(&app.base_url);

        // Not signed in: to the sign-in page, remembering where it was going.
        let before = browser.get(&app.url("/console?q=x%40y.example")).await;
        assert_eq!(before.status(), StatusCode::SEE_OTHER);
        assert_eq!(location(&before), "/console/sign-in?next=/console%3Fq%3Dx%2540y.example");
        let (status, html) = page(&mut browser, &app, "/console/sign-in").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("Sign in with the staff identity provider"), "{html}");

        let done = staff_sign_in(&mut browser, "/console?q=x%40y.example").await;
        assert_eq!(done.status(), StatusCode::OK);
        let cookie = done
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .find(|c| c.starts_with("__Host-tidemark_console="))
            .expect("the console's own cookie");
        for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(attribute), "{attribute} in {cookie}");
        }
        assert!(!cookie.to_ascii_lowercase().contains("domain="), "{cookie}");
        assert!(!browser.jar.contains_key("__Host-tidemark_session"), "no customer session");
        let body = done.text().await.unwrap();
        assert!(body.contains("url=/console?q=x%40y.example"), "{body}");

        let (status, html) = page(&mut browser, &app, "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains(ann) && html.contains("support"), "the header names her and her role: {html}");
        assert!(!html.contains("<script"), "no script on a console page");

        // Stored: the id as a hash, the provider's token sealed, never usable.
        let cookie_value = browser.jar["__Host-tidemark_console"].clone();
        let rows: Vec<(String, Option<String>, String)> = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id_hash, user_id, data FROM staff_sessions").fetch_all(pool).await
        })
        .unwrap();
        assert_eq!(rows.len(), 1);
        let (id_hash, user_id, data) = &rows[0];
        assert!(!id_hash.contains(&cookie_value) && !cookie_value.contains(id_hash.as_str()));
        assert_eq!(user_id.as_deref(), Some("sub-ann@vendor.example"));
        assert!(!data.contains("\"at-"), "the access token is sealed: {data}");
        assert_eq!(count(&app, "SELECT COUNT(*) FROM sessions").await, 0, "not a customer session");

        // The audit log names her.
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM audit_events WHERE action = 'console.signed_in' \
                         AND actor = 'staff:ann@vendor.example' AND after_summary = 'support'").await,
            1
        );

        // Her console cookie opens no customer's dashboard.
        let dashboard = browser.get(&app.url("/projects")).await;
        assert_eq!(dashboard.status(), StatusCode::SEE_OTHER);
        assert!(location(&dashboard).starts_with("/signin"), "{}", location(&dashboard));

        // A change from another site is refused.
        let cross = browser
            .post_form_from("/console/sign-out", &[], Some("https://evil.example"))
            .await;
        assert_eq!(cross.status(), StatusCode::FORBIDDEN);

        // Out of every mapped group at the provider: the next request ends the session.
        provider.set_groups("sub-ann@vendor.example", &["unrelated"]);
        let (status, html) = page(&mut browser, &app, "/console").await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(html.contains("Your console access has ended"), "{html}");
        assert_eq!(count(&app, "SELECT COUNT(*) FROM staff_sessions").await, 0, "ended on every replica");
        let again = browser.get(&app.url("/console")).await;
        assert_eq!(again.status(), StatusCode::SEE_OTHER);

        // Back in a group, she signs in again; signed out at the provider, she is out here too.
        provider.set_groups("sub-ann@vendor.example", &["everyone"]);
        assert_eq!(staff_sign_in(&mut browser, "/console").await.status(), StatusCode::OK);
        let (status, html) = page(&mut browser, &app, "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("read"), "{html}");
        provider.revoke_tokens();
        let (status, _) = page(&mut browser, &app, "/console").await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Signing out deletes the record.
        provider.set_groups("sub-ann@vendor.example", &["vendor-admins"]);
        assert_eq!(staff_sign_in(&mut browser, "/console").await.status(), StatusCode::OK);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM staff_sessions").await, 1);
        let out = browser.post_form("/console/sign-out", &[]).await;
        assert_eq!(out.status(), StatusCode::SEE_OTHER);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM staff_sessions").await, 0);
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM audit_events WHERE action = 'console.signed_out'").await,
            1
        );
    }
}

tidemark_store::test_each_backend! {
    async fn someone_in_no_staff_group_and_a_customer_never_get_in(backend) {
        let (app, customers, provider) = app_with_console(backend).await;
        let bob = "bob@vendor.example";
        provider.script(Script::user(bob));
        provider.set_groups(&format!("sub-{bob}"), &["Vendor-Admins", "helpdesk-team"]);
        let mut browser = Browser::new(&app.base_url);
        let refused = staff_sign_in(&mut browser, "/console").await;
        assert_eq!(refused.status(), StatusCode::FORBIDDEN, "group names match exactly");
        let html = refused.text().await.unwrap();
        assert!(html.contains("You are in no group that opens the console"), "{html}");
        assert!(!browser.jar.contains_key("__Host-tidemark_console"));
        assert_eq!(count(&app, "SELECT COUNT(*) FROM staff_sessions").await, 0);
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM audit_events WHERE action = 'console.refused' \
                         AND actor = 'staff:bob@vendor.example'").await,
            1
        );

        // A signed-in customer's session is no staff session.
        let license = app.create_license(Tier::Team).await;
        customers.script(Script::user(&license.email));
        let mut customer = Browser::new(&app.base_url);
        assert_eq!(customer.sign_in_with_oidc(&license.email).await.status(), StatusCode::OK);
        assert!(customer.jar.contains_key("__Host-tidemark_session"));
        let console = customer.get(&app.url("/console")).await;
        assert_eq!(console.status(), StatusCode::SEE_OTHER);
        assert!(location(&console).starts_with("/console/sign-in"));
        // Even the customer's session value sent under the console's name opens nothing.
        let value = customer.jar["__Host-tidemark_session"].clone();
        customer.jar.insert("__Host-tidemark_console".into(), value);
        let forged = customer.get(&app.url("/console")).await;
        assert_eq!(forged.status(), StatusCode::SEE_OTHER);

        // A callback nobody started is refused, and changes nothing.
        let stray = customer
            .get(&app.url("/console/auth/callback?code=x&state=y"))
            .await;
        assert_eq!(stray.status(), StatusCode::BAD_REQUEST);
        assert_eq!(count(&app, "SELECT COUNT(*) FROM staff_sessions").await, 0);
    }
}

tidemark_store::test_each_backend! {
    async fn one_search_box_finds_a_customer_every_way_support_is_told(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        provider.script(Script::user("cy@vendor.example"));
        provider.set_groups("sub-cy@vendor.example", &["everyone"]);
        let acme = app.create_license(Tier::Team).await;
        let other = app.create_license(Tier::Agency).await;
        let key = app.activate(&acme, "ci-runner").await;
        let fingerprinted = app
            .client
            .post(app.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &other.hash)
            .header("X-Machine-Fingerprint", "fp-7d865e959b2466918c9863afca942d0f")
            .json(&json!({ "machine": "build-01" }))
            .send()
            .await
            .unwrap();
        assert_eq!(fingerprinted.status(), StatusCode::CREATED);

        let mut browser = Browser::new(&app.base_url);
        assert_eq!(staff_sign_in(&mut browser, "/console").await.status(), StatusCode::OK);
        let search = |q: &str| format!("/console?q={}", app::links::query_value(q));
        let found = |html: &str, license: &common::TestLicense| html.contains(&license.license_id);

        for (q, how) in [
            (acme.email.to_uppercase(), "licence e-mail"),
            (acme.license_id.clone(), "licence id"),
            (acme.account_id.to_string(), "account id"),
            (key.chars().take(12).collect::<String>(), "API key"),
        ] {
            let (status, html) = page(&mut browser, &app, &search(&q)).await;
            assert_eq!(status, StatusCode::OK, "{q}");
            assert!(found(&html, &acme) && !found(&html, &other), "{q}: {html}");
            assert!(html.contains(how), "{q} is found by {how}");
        }
        let (_, html) = page(&mut browser, &app, &search("fp-7d865e959b2466918c9863afca942d0f")).await;
        assert!(found(&html, &other) && !found(&html, &acme) && html.contains("machine"), "{html}");

        // A whole key pasted by mistake is searched, and shown back, by its prefix only.
        let (status, html) = page(&mut browser, &app, &search(&key)).await;
        assert_eq!(status, StatusCode::OK);
        assert!(found(&html, &acme));
        assert!(!html.contains(&key), "the whole key is not on the page");
        let audit: Vec<(String,)> = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT target FROM audit_events WHERE action = 'console.read'").fetch_all(pool).await
        })
        .unwrap();
        assert!(audit.iter().all(|(t,)| !t.contains(&key)), "nor in the audit log");
        assert!(audit.iter().any(|(t,)| t.starts_with("search: ")), "{audit:?}");

        // A domain finds every licence at it (both test licences share the test domain).
        let domain = format!("@{}", acme.email.split('@').nth(1).unwrap());
        let (_, html) = page(&mut browser, &app, &search(&domain)).await;
        assert!(found(&html, &acme) && found(&html, &other), "{html}");

        // Nothing, and nonsense.
        let (status, html) = page(&mut browser, &app, &search("nobody@nowhere.example")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("No licence found"), "{html}");
        let refused = browser.get(&app.url(&search("svc_api_"))).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
        assert!(refused.text().await.unwrap().contains("svc_api_ and the characters after it"));
        let long = browser.get(&app.url(&search(&"a".repeat(400)))).await;
        assert_eq!(long.status(), StatusCode::BAD_REQUEST);
    }
}

#[tokio::test]
async fn without_a_staff_provider_there_is_no_console() {
    let app = TestApp::spawn(tidemark_store::Backend::Sqlite).await;
    let res = app.client.get(app.url("/console")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = app
        .client
        .get(app.url("/console/sign-in"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

tidemark_store::test_each_backend! {
    async fn a_licence_page_shows_seats_access_and_use_never_the_customers_findings(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        provider.script(Script::user("dee@vendor.example"));
        provider.set_groups("sub-dee@vendor.example", &["everyone"]);
        let license = app.create_license(Tier::Team).await;
        let fingerprinted = app
            .client
            .post(app.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &license.hash)
            .header("X-Machine-Fingerprint", "fp-c3ab8ff13720e8ad9047dd39466b3c89")
            .json(&json!({ "machine": "laptop-dee" }))
            .send()
            .await
            .unwrap();
        assert_eq!(fingerprinted.status(), StatusCode::CREATED);
        let key = fingerprinted.json::<serde_json::Value>().await.unwrap()["api_key"]
            .as_str()
            .unwrap()
            .to_owned();
        let pushed = app
            .push(&key, &common::sample_push("payments-api", 81.5, "2026-12-01T10:00:00Z"))
            .await;
        assert_eq!(pushed.status(), StatusCode::CREATED);

        // Two runs of the scanner on that machine (the second answered from the cache), and
        // one with no User-Agent: three validations, one client.
        for agent in [Some("tidemark-cli/1.7.0 (linux; x86_64)"), Some("tidemark-cli/1.7.0"), None] {
            let mut req = app
                .client
                .post(app.url("/v1/license/validate"))
                .header("X-License-Key-Hash", &license.hash)
                .header("X-Machine-Fingerprint", "fp-c3ab8ff13720e8ad9047dd39466b3c89");
            if let Some(agent) = agent {
                req = req.header("User-Agent", agent);
            }
            assert_eq!(req.send().await.unwrap().status(), StatusCode::OK);
        }
        server::workers::seats::flush_sightings(&app.db, &app.state.validator).await.unwrap();

        let mut browser = Browser::new(&app.base_url);
        assert_eq!(staff_sign_in(&mut browser, "/console").await.status(), StatusCode::OK);
        let path = format!("/console/licenses/{}", license.license_id);
        let (status, html) = page(&mut browser, &app, &path).await;
        assert_eq!(status, StatusCode::OK, "{html}");
        for shown in [
            license.email.as_str(),
            "team",
            "active",
            "laptop-dee",
            "fp-c3ab8ff13720e8ad9047dd39466b3c89",
            "holds a seat",
            "payments-api",
            "admin",
            "tidemark-cli/1.7.0",
        ] {
            assert!(html.contains(shown), "{shown} on the licence page");
        }
        // Today's use, in the table beside the chart: 3 validations and 1 push.
        let today = app::time::date(tidemark_domain::now_millis());
        let row = format!(
            "<td data-label=\"Day\">{today}</td><td data-label=\"Validations\" class=\"num\">3</td>\
             <td data-label=\"Pushes\" class=\"num\">1</td>"
        );
        assert!(html.contains(&row), "{row} in {html}");
        assert!(html.contains("The one day with any use"), "{html}");
        // Counts and names, never what the scans found.
        for hidden in [
            "google_compute_instance.web",
            "Instance uses the default service account",
            "cis-gcp-2.0-4.1",
            "81.5",
            &key,
        ] {
            assert!(!html.contains(hidden), "{hidden} is the customer's own");
        }
        let views = count(
            &app,
            &format!(
                "SELECT COUNT(*) FROM audit_events WHERE action = 'console.read' \
                 AND target = 'licence {}' AND actor = 'staff:dee@vendor.example'",
                license.license_id
            ),
        )
        .await;
        assert_eq!(views, 1, "the look is in the vendor's log");

        let (status, _) = page(&mut browser, &app, "/console/licenses/lcn_NOSUCHLICENCE").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

tidemark_store::test_each_backend! {
    async fn a_console_sign_in_cannot_be_finished_at_the_dashboards_callback(backend) {
        // One provider for both (a setup the docs warn against): only the attempt's own
        // payload keeps a console round trip from ending in a customer's session.
        let provider = ScriptedProvider::start().await;
        let mut env = provider.env();
        env.extend(provider.console_env(ROLES));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let app = TestApp::spawn_with(backend, &env).await;
        let license = app.create_license(Tier::Team).await;
        provider.script(Script::user(&license.email));
        let mut browser = Browser::new(&app.base_url);
        let start = browser.post_form("/console/sign-in", &[("next", "/console")]).await;
        let answer = location(&browser.get(&location(&start)).await);
        let query = answer.split_once('?').unwrap().1.to_owned();
        let taken = browser.get(&app.url(&format!("/auth/oidc/callback?{query}"))).await;
        assert_ne!(taken.status(), StatusCode::OK, "the dashboard refuses a console attempt");
        assert!(!browser.jar.contains_key("__Host-tidemark_session"));
        assert_eq!(count(&app, "SELECT COUNT(*) FROM sessions").await, 0);
    }
}
