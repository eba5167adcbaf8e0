//! The console's licence actions: each role sees and may do what the admin API's role table
//! gives it, nothing changes before the confirmation page's Confirm, a confirmation works once
//! and only on the licence version it was shown for, and every change is in the audit log
//! under the person's name. On both databases.
#![allow(clippy::unwrap_used)]

use crate::common;
use crate::console::{app_with_console, count, page, staff_sign_in};

use common::browser::{location, Browser};
use common::oidc::{Script, ScriptedProvider};
use common::{TestApp, TestLicense};
use reqwest::StatusCode;
use serde_json::json;
use tidemark_domain::license::License;
use tidemark_domain::time::DAY_MS;
use tidemark_wire::{Feature, Tier};

async fn signed_in(app: &TestApp, provider: &ScriptedProvider, who: &str, group: &str) -> Browser {
    provider.script(Script::user(who));
    provider.set_groups(&format!("sub-{who}"), &[group]);
    let mut browser = Browser::new(&app.base_url);
    assert_eq!(
        staff_sign_in(&mut browser, "/console").await.status(),
        StatusCode::OK
    );
    browser
}

async fn licence(app: &TestApp, id: &str) -> License {
    tidemark_store::licenses::find_license(&app.db, id)
        .await
        .unwrap()
        .unwrap()
}

fn action_path(l: &TestLicense, kind: &str) -> String {
    format!("/console/licenses/{}/actions/{kind}", l.license_id)
}

/// The hidden single-use token of a confirmation page.
fn confirm_token(html: &str) -> String {
    let at = html.find("name=\"confirm\"").expect("a confirmation form");
    let rest = &html[at..];
    let value = rest.find("value=\"").unwrap() + 7;
    rest[value..].split('"').next().unwrap().to_owned()
}

/// Asks for `kind` with `form`; returns the confirmation page's HTML (nothing changed yet).
async fn ask(browser: &mut Browser, l: &TestLicense, kind: &str, form: &[(&str, &str)]) -> String {
    let res = browser.post_form(&action_path(l, kind), form).await;
    let status = res.status();
    let html = res.text().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{kind}: {html}");
    assert!(html.contains("data-testid=\"confirm-sentence\""), "{html}");
    html
}

/// Confirms what `html` asked, with the same values.
async fn confirm(
    browser: &mut Browser,
    l: &TestLicense,
    kind: &str,
    form: &[(&str, &str)],
    html: &str,
) -> reqwest::Response {
    let token = confirm_token(html);
    let mut fields = form.to_vec();
    fields.push(("confirm", &token));
    browser.post_form(&action_path(l, kind), &fields).await
}

/// Asks and confirms; expects the redirect back to the licence page.
async fn act(browser: &mut Browser, l: &TestLicense, kind: &str, form: &[(&str, &str)]) {
    let html = ask(browser, l, kind, form).await;
    let done = confirm(browser, l, kind, form, &html).await;
    assert_eq!(done.status(), StatusCode::SEE_OTHER, "{kind}");
    assert_eq!(
        location(&done),
        format!("/console/licenses/{}?done={kind}", l.license_id)
    );
}

async fn audited(app: &TestApp, who: &str, action: &str, l: &TestLicense) -> i64 {
    count(
        app,
        &format!(
            "SELECT COUNT(*) FROM audit_events WHERE actor = 'staff:{who}' \
             AND action = '{action}' AND target LIKE '%{}%'",
            l.license_id
        ),
    )
    .await
}

fn shows(html: &str, kind: &str) -> bool {
    html.contains(&format!("data-testid=\"action-{kind}\""))
}

tidemark_store::test_each_backend! {
    async fn support_extends_briefly_suspends_and_frees_seats_confirmed_once(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        let ann = "ann@vendor.example";
        let l = app.create_license(Tier::Team).await;
        let key = app.activate(&l, "ci-runner").await;
        let mut browser = signed_in(&app, &provider, ann, "helpdesk").await;

        let (_, html) = page(&mut browser, &app, &format!("/console/licenses/{}", l.license_id)).await;
        for kind in ["extend", "suspend", "resend", "release-seat", "offline-file"] {
            assert!(shows(&html, kind), "support sees {kind}");
        }
        for kind in ["expiry", "tier", "seats", "features", "max-projects", "resume"] {
            assert!(!shows(&html, kind), "support does not see {kind}");
        }

        // Asked: a page says what will change, and nothing has yet.
        let before = licence(&app, &l.license_id).await;
        let form = [("days", "14")];
        let html = ask(&mut browser, &l, "extend", &form).await;
        assert!(html.contains("by 14 days"), "{html}");
        assert_eq!(licence(&app, &l.license_id).await, before, "nothing changed before Confirm");

        let done = confirm(&mut browser, &l, "extend", &form, &html).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER);
        let after = licence(&app, &l.license_id).await;
        assert_eq!(after.expires_at, before.expires_at + 14 * DAY_MS);
        assert_eq!(audited(&app, ann, "license.extended", &l).await, 1);
        let (_, landed) = page(&mut browser, &app, &location(&done)).await;
        assert!(landed.contains("The expiry is moved."), "{landed}");

        // The same Confirm again (a reload, a second click) changes nothing.
        let again = confirm(&mut browser, &l, "extend", &form, &html).await;
        assert_eq!(again.status(), StatusCode::CONFLICT);
        assert!(again.text().await.unwrap().contains("used already"));
        assert_eq!(licence(&app, &l.license_id).await.expires_at, after.expires_at);

        // Beyond 30 days is not support's; nor is the tier.
        let far = browser.post_form(&action_path(&l, "extend"), &[("days", "45")]).await;
        assert_eq!(far.status(), StatusCode::FORBIDDEN);
        assert!(far.text().await.unwrap().contains("This needs the admin or sales role"));
        let tier = browser.post_form(&action_path(&l, "tier"), &[("tier", "agency")]).await;
        assert_eq!(tier.status(), StatusCode::FORBIDDEN);

        // Two confirmations shown for one version: the second is refused once the first
        // has changed the licence.
        let first = ask(&mut browser, &l, "extend", &[("days", "7")]).await;
        let second = ask(&mut browser, &l, "extend", &[("days", "7")]).await;
        let done = confirm(&mut browser, &l, "extend", &[("days", "7")], &first).await;
        assert_eq!(done.status(), StatusCode::SEE_OTHER);
        let stale = confirm(&mut browser, &l, "extend", &[("days", "7")], &second).await;
        assert_eq!(stale.status(), StatusCode::CONFLICT);
        assert!(stale.text().await.unwrap().contains("changed after you looked"));
        assert_eq!(
            licence(&app, &l.license_id).await.expires_at,
            after.expires_at + 7 * DAY_MS,
            "extended once, not twice"
        );

        // From another site: refused before anything is read.
        let forged = browser
            .post_form_from(&action_path(&l, "extend"), &[("days", "3")], Some("https://evil.example"))
            .await;
        assert_eq!(forged.status(), StatusCode::FORBIDDEN);

        // Suspend with a reason: validation says so at once, the reason is kept.
        act(&mut browser, &l, "suspend", &[("reason", "chargeback 2291")]).await;
        let valid = app
            .client
            .post(app.url("/v1/license/validate"))
            .header("X-License-Key-Hash", &l.hash)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(valid.json::<serde_json::Value>().await.unwrap()["valid"], false);
        assert_eq!(
            count(
                &app,
                &format!(
                    "SELECT COUNT(*) FROM audit_events WHERE actor = 'staff:{ann}' \
                     AND action = 'license.suspended' AND after_summary LIKE '%chargeback 2291%'"
                )
            )
            .await,
            1
        );
        let no_reason = browser.post_form(&action_path(&l, "resume"), &[("reason", " ")]).await;
        assert_eq!(no_reason.status(), StatusCode::UNPROCESSABLE_ENTITY);
        act(&mut browser, &l, "resume", &[("reason", "paid")]).await;
        assert!(licence(&app, &l.license_id).await.suspended_at.is_none());

        // Free the machine's seat: its key stops working.
        let (machine,): (String,) = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id FROM machines WHERE license_id = $1")
                .bind(&l.license_id)
                .fetch_one(pool)
                .await
        })
        .unwrap();
        act(&mut browser, &l, "release-seat", &[("machine_id", &machine)]).await;
        assert_eq!(
            count(
                &app,
                &format!(
                    "SELECT COUNT(*) FROM audit_events WHERE actor = 'staff:{ann}' \
                     AND action = 'machine.released' AND target = '{machine}'"
                )
            )
            .await,
            1
        );
        let pushed = app
            .push(&key, &common::sample_push("api", 80.0, "2026-12-01T10:00:00Z"))
            .await;
        assert_eq!(pushed.status(), StatusCode::UNAUTHORIZED, "the freed seat's key is revoked");

        // Resend queues the mail; an offline file downloads, signed.
        let queued = count(&app, "SELECT COUNT(*) FROM mail_outbox").await;
        act(&mut browser, &l, "resend", &[]).await;
        assert_eq!(count(&app, "SELECT COUNT(*) FROM mail_outbox").await, queued + 1);
        assert_eq!(audited(&app, ann, "license.resent", &l).await, 1);

        let form = [("days", "10"), ("machine", "fp-airgapped-01")];
        let html = ask(&mut browser, &l, "offline-file", &form).await;
        let file = confirm(&mut browser, &l, "offline-file", &form, &html).await;
        assert_eq!(file.status(), StatusCode::OK);
        assert!(file.headers()["content-disposition"].to_str().unwrap().starts_with("attachment"));
        let file: serde_json::Value = file.json().await.unwrap();
        assert!(file["verdict"].as_str().is_some_and(|v| v.split('.').count() == 3), "{file}");
        assert_eq!(
            count(
                &app,
                &format!(
                    "SELECT COUNT(*) FROM audit_events WHERE actor = 'staff:{ann}' \
                     AND action = 'license.offline_file_issued'"
                )
            )
            .await,
            1
        );
    }
}

tidemark_store::test_each_backend! {
    async fn sales_changes_what_was_sold_and_read_only_reads(backend) {
        let (app, _customers, provider) = app_with_console(backend).await;
        let bo = "bo@vendor.example";
        let l = app.create_license(Tier::Team).await;
        let mut browser = signed_in(&app, &provider, bo, "sellers").await;
        let (_, html) = page(&mut browser, &app, &format!("/console/licenses/{}", l.license_id)).await;
        for kind in ["extend", "expiry", "tier", "seats", "features", "max-projects"] {
            assert!(shows(&html, kind), "sales sees {kind}");
        }
        for kind in ["suspend", "resend", "release-seat", "offline-file"] {
            assert!(!shows(&html, kind), "sales does not see {kind}");
        }

        act(&mut browser, &l, "tier", &[("tier", "agency")]).await;
        act(&mut browser, &l, "seats", &[("max_machines", "12"), ("release_after_days", "0")]).await;
        act(&mut browser, &l, "max-projects", &[("max_projects", "40")]).await;
        act(
            &mut browser,
            &l,
            "features",
            &[("feature", "hosted_dashboard"), ("feature", "custom_frameworks"), ("feature", "priority_support")],
        )
        .await;
        act(&mut browser, &l, "expiry", &[("date", "2031-06-30")]).await;
        let now = licence(&app, &l.license_id).await;
        assert_eq!(now.tier, Tier::Agency);
        assert_eq!(now.max_machines, Some(12));
        assert_eq!(now.seat_release_after_days, Some(0));
        assert_eq!(now.max_projects, Some(40));
        assert_eq!(now.features_added, vec![Feature::PrioritySupport]);
        assert_eq!(now.features_removed, vec![Feature::DriftDetection]);
        assert_eq!(app::time::date(now.expires_at), "2031-06-30");
        assert!(audited(&app, bo, "license.updated", &l).await >= 4);

        // What changes nothing is said so, and changes nothing.
        let same = browser.post_form(&action_path(&l, "tier"), &[("tier", "agency")]).await;
        assert_eq!(same.status(), StatusCode::CONFLICT);
        let suspend = browser.post_form(&action_path(&l, "suspend"), &[("reason", "x")]).await;
        assert_eq!(suspend.status(), StatusCode::FORBIDDEN);
        let nonsense = browser.post_form(&action_path(&l, "seats"), &[("max_machines", "-1")]).await;
        assert_eq!(nonsense.status(), StatusCode::UNPROCESSABLE_ENTITY);
        let unknown = browser.post_form(&action_path(&l, "delete"), &[]).await;
        assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
        let missing = browser
            .post_form("/console/licenses/lcn_NOSUCH/actions/tier", &[("tier", "team")])
            .await;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);

        // Read: the page, no forms, and a refusal for a hand-made post.
        let cy = "cy@vendor.example";
        let mut reader = signed_in(&app, &provider, cy, "everyone").await;
        let (_, html) = page(&mut reader, &app, &format!("/console/licenses/{}", l.license_id)).await;
        assert!(html.contains("data-testid=\"no-actions\""), "{html}");
        let refused = reader.post_form(&action_path(&l, "extend"), &[("days", "1")]).await;
        assert_eq!(refused.status(), StatusCode::FORBIDDEN);
        assert_eq!(licence(&app, &l.license_id).await, now, "nothing changed by read or refusals");
    }
}

tidemark_store::test_each_backend! {
    async fn a_customers_session_cannot_act_in_the_console(backend) {
        let (app, customers, _staff) = app_with_console(backend).await;
        let l = app.create_license(Tier::Team).await;
        customers.script(Script::user(&l.email));
        let mut browser = Browser::new(&app.base_url);
        let signed_in = browser.sign_in_with_oidc(&l.email).await;
        assert!(signed_in.status().is_success() || signed_in.status().is_redirection());
        assert!(browser.jar.contains_key("__Host-tidemark_session"), "a customer's session");
        let before = licence(&app, &l.license_id).await;
        for (kind, form) in [("extend", vec![("days", "14")]), ("tier", vec![("tier", "enterprise")])] {
            let refused = browser.post_form(&action_path(&l, kind), &form).await;
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{kind}");
        }
        let csv = browser.get(&app.url("/console/business/seats.csv")).await;
        assert_eq!(csv.status(), StatusCode::SEE_OTHER, "to the staff sign-in");
        assert_eq!(licence(&app, &l.license_id).await, before, "nothing changed");
    }
}
