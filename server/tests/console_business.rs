//! The console's business page: figures from licences, seats and counted use, each table the
//! same as its CSV. On both databases.
#![allow(clippy::unwrap_used)]

use crate::common;
use crate::console::{app_with_console, count, page, staff_sign_in};

use common::browser::Browser;
use common::oidc::Script;
use common::{TestApp, TestLicense};
use reqwest::StatusCode;
use tidemark_domain::time::DAY_MS;
use tidemark_wire::Tier;

async fn validate(app: &TestApp, l: &TestLicense, fingerprint: &str, agent: &str) {
    let res = app
        .client
        .post(app.url("/v1/license/validate"))
        .header("X-License-Key-Hash", &l.hash)
        .header("X-Machine-Fingerprint", fingerprint)
        .header("User-Agent", agent)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

async fn activate(app: &TestApp, l: &TestLicense, fingerprint: &str) {
    let res = app
        .client
        .post(app.url("/v1/license/activate"))
        .header("X-License-Key-Hash", &l.hash)
        .header("X-Machine-Fingerprint", fingerprint)
        .json(&serde_json::json!({ "machine": fingerprint }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
}

tidemark_store::test_each_backend! {
    async fn the_business_page_counts_licences_seats_clients_and_use(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        let now = tidemark_domain::now_millis();
        let soon = app.create_license_with(Tier::Team, Some(now + 10 * DAY_MS), None).await;
        let team = app.create_license(Tier::Team).await;
        let agency = app.create_license(Tier::Agency).await;
        activate(&app, &team, "fp-team-1").await;
        activate(&app, &team, "fp-team-2").await;
        activate(&app, &agency, "fp-agency-1").await;
        validate(&app, &team, "fp-team-1", "tidemark-cli/2.1.0 (linux)").await;
        validate(&app, &team, "fp-team-2", "tidemark-cli/2.1.0").await;
        validate(&app, &agency, "fp-agency-1", "tidemark-cli/1.9.3").await;
        server::workers::seats::flush_sightings(&app.db, &app.state.validator).await.unwrap();

        provider.script(Script::user("eve@vendor.example"));
        provider.set_groups("sub-eve@vendor.example", &["everyone"]);
        let mut browser = Browser::new(&app.base_url);
        assert_eq!(staff_sign_in(&mut browser, "/console").await.status(), StatusCode::OK);
        let (status, html) = page(&mut browser, &app, "/console/business").await;
        assert_eq!(status, StatusCode::OK, "{html}");
        assert!(html.contains("3 licences in force now"), "{html}");
        // The one to act on, linked to its page.
        assert!(html.contains(&format!("href=\"/console/licenses/{}\"", soon.license_id)));
        assert!(!html.contains(&format!("href=\"/console/licenses/{}\"", team.license_id)));
        assert!(html.contains("tidemark-cli/2.1.0") && html.contains("tidemark-cli/1.9.3"));
        assert!(html.contains("2 held of no limit"), "team's seats in words: {html}");
        assert!(html.contains("no licence in force"), "enterprise has none: {html}");
        assert!(!html.contains("<script"), "no script");
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM audit_events WHERE action = 'console.read' AND target = 'business'").await,
            1
        );

        let csv = |slug: &'static str| {
            let url = app.url(&format!("/console/business/{slug}.csv"));
            let cookie = browser.cookie_header();
            let client = app.client.clone();
            async move {
                let res = client.get(url).header("Cookie", cookie).send().await.unwrap();
                assert_eq!(res.status(), StatusCode::OK, "{slug}");
                assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
                assert!(res.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
                res.text().await.unwrap()
            }
        };
        let seats = csv("seats").await;
        let lines: Vec<&str> = seats.lines().collect();
        assert_eq!(lines[0], "Tier,Licences in force,Seats held,Seat limit");
        assert!(lines.contains(&"team,2,2,no limit"), "{seats}");
        assert!(lines.contains(&"agency,1,1,no limit"), "{seats}");
        let clients = csv("clients").await;
        assert!(clients.contains("tidemark-cli/2.1.0,2"), "{clients}");
        assert!(clients.contains("tidemark-cli/1.9.3,1"), "{clients}");
        let days = csv("days").await;
        let today = app::time::date(now);
        assert!(days.lines().nth(1).unwrap().starts_with(&format!("{today},3,0,3")), "{days}");
        let expiring = csv("expiring").await;
        assert_eq!(expiring.lines().count(), 2, "{expiring}");
        assert!(expiring.contains(&soon.license_id));
        let in_force = csv("in-force").await;
        assert!(in_force.lines().last().unwrap().ends_with(",0,2,1,0,3"), "{in_force}");
        let flow = csv("flow").await;
        assert!(flow.lines().last().unwrap().ends_with(",3,0"), "{flow}");

        let missing = browser.get(&app.url("/console/business/secrets.csv")).await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        let anonymous = app.client.get(app.url("/console/business/seats.csv")).send().await.unwrap();
        assert_eq!(anonymous.status(), StatusCode::SEE_OTHER, "sent to sign in first");
    }
}
