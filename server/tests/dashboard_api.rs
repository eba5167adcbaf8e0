//! The dashboard's server functions: account scoping and roles, on both databases.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{backends, sample_push, TestApp};
use reqwest::StatusCode;
use tidemark_wire::Tier;

tidemark_store::test_each_backend! {
    async fn server_functions_refuse_another_accounts_ids(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (mine, my_key) = app.with_key(Tier::Team).await;
        let (theirs, their_key) = app.with_key(Tier::Team).await;
        let my_push = app
            .push_json(&my_key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
            .await;
        let their_push = app
            .push_json(
                &their_key,
                &sample_push("web", 60.0, "2026-11-20T10:00:00Z"),
            )
            .await;
        let (my_project, my_scan) = (
            my_push["project_id"].as_str().unwrap(),
            my_push["scan_id"].as_str().unwrap(),
        );
        let (their_project, their_scan) = (
            their_push["project_id"].as_str().unwrap(),
            their_push["scan_id"].as_str().unwrap(),
        );

        let mut browser = app.signed_in(&provider, &mine.email).await;
        let calls = |project: &str, scan: &str| {
            vec![
                (
                    "/api/project_chart",
                    vec![
                        ("project_id", project.to_owned()),
                        ("range", "All".to_owned()),
                    ],
                ),
                (
                    "/api/project_scans",
                    vec![("project_id", project.to_owned()), ("page", "0".to_owned())],
                ),
                (
                    "/api/scan",
                    vec![
                        ("project_id", project.to_owned()),
                        ("scan_id", scan.to_owned()),
                    ],
                ),
                (
                    "/api/scan_findings",
                    vec![
                        ("project_id", project.to_owned()),
                        ("scan_id", scan.to_owned()),
                        ("query[page]", "0".to_owned()),
                    ],
                ),
                (
                    "/api/scan_diff",
                    vec![
                        ("project_id", project.to_owned()),
                        ("scan_id", scan.to_owned()),
                    ],
                ),
                (
                    "/api/project_posture",
                    vec![
                        ("project_id", project.to_owned()),
                        ("range", "All".to_owned()),
                    ],
                ),
                (
                    "/api/framework_posture",
                    vec![
                        ("project_id", project.to_owned()),
                        ("framework", "soc2".to_owned()),
                    ],
                ),
            ]
        };
        for (path, form) in calls(my_project, my_scan) {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let res = browser.post_form(path, &form).await;
            assert_eq!(res.status(), StatusCode::OK, "{backend:?}: own {path}");
        }
        for (path, form) in calls(their_project, their_scan) {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let res = browser.post_form(path, &form).await;
            assert_eq!(
                res.status(),
                StatusCode::NOT_FOUND,
                "{backend:?}: their {path}"
            );
            let body = res.text().await.unwrap();
            assert!(!body.contains("60"), "nothing of theirs leaks: {body}");
        }
        let res = browser
            .post_form(
                "/api/set_archived",
                &[("project_id", their_project), ("archived", "true")],
            )
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let archived: Vec<(Option<i64>,)> = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT archived_at FROM projects WHERE id = $1")
                .bind(their_project)
                .fetch_all(pool)
                .await
        })
        .unwrap();
        assert_eq!(archived, vec![(None,)], "their project is untouched");

        // Their machine's seat: not found from my Settings, and still held.
        let activated = app
            .client
            .post(app.url("/v1/license/activate"))
            .header("X-License-Key-Hash", &theirs.hash)
            .json(&serde_json::json!({ "machine": "their-ci" }))
            .send()
            .await
            .unwrap();
        assert_eq!(activated.status(), StatusCode::CREATED);
        let (their_machine,): (String,) = tidemark_store::on_db!(&app.db, pool => {
            sqlx::query_as("SELECT id FROM machines WHERE name = 'their-ci'")
                .fetch_one(pool)
                .await
        })
        .unwrap();
        let res = browser
            .post_form("/api/release_machine", &[("machine_id", &their_machine)])
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            app.count_where("machines", "name = 'their-ci' AND released_at IS NULL")
                .await,
            1,
            "their seat is untouched"
        );

        // The compliance rollup counts only my project (theirs has the same label and cloud
        // account: counted, it would make two).
        let rollup = browser
            .post_form("/api/posture_rollup", &[])
            .await
            .text()
            .await
            .unwrap();
        assert!(
            rollup.contains("\"projects\":1") && !rollup.contains("\"projects\":2"),
            "{rollup}"
        );

        // The project list is only mine, and so are the projects page and its glance.
        let page = [("sort", "name"), ("q", ""), ("page", "1")];
        for endpoint in ["/api/projects", "/api/projects_page", "/api/projects_glance"] {
            let args: &[(&str, &str)] = if endpoint == "/api/projects" { &[] } else { &page };
            let list = browser.post_form(endpoint, args).await.text().await.unwrap();
            assert!(
                list.contains(my_project) && !list.contains(their_project),
                "{endpoint}: {list}"
            );
        }
    }
}

#[tokio::test]
async fn members_read_but_only_admins_change() {
    let backend = backends()[0];
    let (app, provider) = TestApp::spawn_with_oidc(backend).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let pushed = app
        .push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
        .await;
    let project = pushed["project_id"].as_str().unwrap();
    tidemark_store::access::add_member(
        &app.db,
        &license.account_id,
        &tidemark_domain::text::Email::parse("reader@example.com").unwrap(),
        tidemark_domain::access::Role::Member,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap()
    .unwrap();
    let mut member = app.signed_in(&provider, "reader@example.com").await;
    assert_eq!(
        member.post_form("/api/settings", &[]).await.status(),
        StatusCode::OK
    );
    for (path, form) in [
        ("/api/rotate_keys", vec![]),
        (
            "/api/set_archived",
            vec![("project_id", project), ("archived", "true")],
        ),
        (
            "/api/change_member",
            vec![("email", license.email.as_str()), ("action", "remove")],
        ),
        ("/api/issue_badge", vec![("project_id", project)]),
        (
            "/api/set_default_branch",
            vec![("project_id", project), ("branch", "main")],
        ),
        (
            "/api/set_project_gate",
            vec![
                ("project_id", project),
                ("min_score", "99"),
                ("max_drop", ""),
                ("new_findings_at", ""),
            ],
        ),
    ] {
        let res = member.post_form(path, &form).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
    }
    // The key still works: nothing was rotated.
    let res = app
        .push(&key, &sample_push("web", 81.0, "2026-11-20T11:00:00Z"))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);

    // The admin rotates: the old key fails at once, the new one pushes.
    let mut admin = app.signed_in(&provider, &license.email).await;
    let res = admin.post_form("/api/rotate_keys", &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["cache-control"],
        "no-store",
        "a new key is kept by no cache"
    );
    let new_key: String = serde_json::from_str(&res.text().await.unwrap()).unwrap();
    assert!(new_key.starts_with("svc_api_"));
    let res = app
        .push(&key, &sample_push("web", 82.0, "2026-11-20T12:00:00Z"))
        .await;
    common::assert_error(res, StatusCode::UNAUTHORIZED, "invalid_api_key").await;
    let res = app
        .push(&new_key, &sample_push("web", 82.0, "2026-11-20T12:00:00Z"))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
}

/// The key on the page a form's redirect names, between its `new-key` test id and the tag.
fn shown_key(html: &str) -> Option<String> {
    html.split(r#"data-testid="new-key" id="new-key">"#)
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map(str::to_owned)
}

tidemark_store::test_each_backend! {
    /// Settings load no WASM: Rotate Key and a new webhook endpoint are plain forms, answered
    /// by a redirect (post/redirect/get) to their section, which shows the secret once; a
    /// reload of that page shows it no more and rotates nothing, and the same form sent twice
    /// (a double click) acts once.
    async fn a_secret_made_by_a_plain_form_is_shown_once_and_a_reload_repeats_nothing(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let page = "/settings/keys?done=revoke_key";
        let once = tidemark_domain::handover::new_token();
        let res = admin.submit_page_form("/api/rotate_keys", page, &[("once", &once)]).await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER, "{backend:?}: a redirect a reload cannot repeat");
        let to = common::browser::location(&res);
        assert_eq!(to, format!("/settings/keys?shown={once}"), "the earlier outcome is dropped");
        assert!(!res.text().await.unwrap().contains("svc_api_"), "never in the redirect");
        // Sent again (a double click, or a reload of the form's answer): the same redirect,
        // and no second rotation.
        let twice = admin.submit_page_form("/api/rotate_keys", page, &[("once", &once)]).await;
        assert_eq!((twice.status(), common::browser::location(&twice)), (StatusCode::SEE_OTHER, to.clone()));
        assert_eq!(app.count("audit_events WHERE action = 'keys.rotated'").await, 1, "{backend:?}");
        assert_eq!(app.count("api_keys WHERE revoked_at IS NULL").await, 1, "{backend:?}");

        // Another member of the account, and an admin of another account, given the page's
        // address: neither gets the key, and it still waits for the one who made it.
        tidemark_store::access::add_member(
            &app.db,
            &license.account_id,
            &tidemark_domain::text::Email::parse("reader@example.com").unwrap(),
            tidemark_domain::access::Role::Admin,
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap()
        .unwrap();
        let (stranger, _) = app.with_key(Tier::Team).await;
        let mut others_saw = Vec::new();
        for email in ["reader@example.com", stranger.email.as_str()] {
            let mut other = app.signed_in(&provider, email).await;
            let page = other.get(&app.url(&to)).await.text().await.unwrap();
            assert!(shown_key(&page).is_none(), "{backend:?}: {email} saw it");
            others_saw.push(page);
        }
        assert_eq!(app.count("secret_handovers").await, 1, "{backend:?}");

        let res = admin.get(&app.url(&to)).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["cache-control"], "no-store");
        let html = res.text().await.unwrap();
        let shown = shown_key(&html).expect("the new key is on the page");
        assert!(shown.starts_with("svc_api_"), "{shown}");
        assert!(others_saw.iter().all(|page| !page.contains(&shown)), "{backend:?}");
        assert!(html.contains(r#"data-testid="keys""#), "the keys section around it");
        common::assert_error(app.push(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await,
            StatusCode::UNAUTHORIZED, "invalid_api_key").await;
        let res = app.push(&shown, &sample_push("web", 80.0, "2026-11-20T10:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        // The page loaded again: the key is not shown, it says why, and the key still works.
        let again = admin.get(&app.url(&to)).await.text().await.unwrap();
        assert!(!again.contains(&shown) && shown_key(&again).is_none(), "shown once");
        assert!(again.contains(r#"data-testid="shown-already""#), "{again}");
        assert_eq!(app.count("audit_events WHERE action = 'keys.rotated'").await, 1);
        let res = app.push(&shown, &sample_push("web", 81.0, "2026-11-20T11:00:00Z")).await;
        assert_eq!(res.status(), StatusCode::CREATED);
        assert_eq!(app.count("secret_handovers").await, 0, "taken, so gone");

        // A webhook's signing secret, on the webhooks section with the endpoint it signs for.
        let once = tidemark_domain::handover::new_token();
        let res = admin
            .submit_page_form(
                "/api/create_webhook",
                "/settings/webhooks",
                &[("url", "https://hooks.example.com/t"), ("scan_pushed", "true"), ("once", &once)],
            )
            .await;
        assert_eq!(res.status(), StatusCode::SEE_OTHER);
        let to = common::browser::location(&res);
        let html = admin.get(&app.url(&to)).await.text().await.unwrap();
        let secret = html
            .split(r#"data-testid="webhook-secret">"#)
            .nth(1)
            .and_then(|rest| rest.split('<').next())
            .expect("the secret is on the page");
        assert!(secret.starts_with("whsec_"), "{secret}");
        assert!(html.contains("https://hooks.example.com/"), "{html}");
        let again = admin.get(&app.url(&to)).await.text().await.unwrap();
        assert!(!again.contains(secret), "shown once");
        assert_eq!(app.count("webhooks").await, 1);

        // Refused: back to the page with why, and no secret anywhere; nothing is held for it.
        let res = admin
            .submit_page_form("/api/create_webhook", "/settings/webhooks", &[("url", "ftp://x")])
            .await;
        assert_eq!(res.status(), StatusCode::FOUND);
        let refused = common::browser::location(&res);
        assert!(refused.contains("__err="), "{refused}");
        let page = admin.get(&refused).await;
        assert_eq!(page.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(!page.text().await.unwrap().contains("whsec_"));
        assert_eq!(app.count("secret_handovers").await, 0, "{backend:?}");
    }
}

/// Two sendings of one Rotate Key form at the same moment (a double click that reached two
/// replicas' worth of concurrency) rotate once.
#[tokio::test]
async fn the_same_form_sent_twice_at_once_rotates_once() {
    let (app, provider) = TestApp::spawn_with_oidc(tidemark_store::Backend::Sqlite).await;
    let (license, _key) = app.with_key(Tier::Team).await;
    let admin = app.signed_in(&provider, &license.email).await;
    let once = tidemark_domain::handover::new_token();
    let sends = (0..4).map(|_| {
        let mut browser = common::browser::Browser::new(&app.base_url);
        browser.jar = admin.jar.clone();
        let once = once.clone();
        async move {
            let res = browser
                .submit_page_form("/api/rotate_keys", "/settings/keys", &[("once", &once)])
                .await;
            (res.status(), common::browser::location(&res))
        }
    });
    let answers = futures_util::future::join_all(sends).await;
    for answer in &answers {
        assert_eq!(
            answer,
            &(
                StatusCode::SEE_OTHER,
                format!("/settings/keys?shown={once}")
            )
        );
    }
    assert_eq!(
        app.count("audit_events WHERE action = 'keys.rotated'")
            .await,
        1
    );
    assert_eq!(app.count("api_keys WHERE revoked_at IS NULL").await, 1);
}

tidemark_store::test_each_backend! {
    async fn enterprise_admins_configure_sso_from_settings(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let idp = common::saml::SamlIdp::start(&app.base_url).await;
        let metadata = idp.metadata().await;
        let enterprise = app.create_license(Tier::Enterprise).await;
        let team = app.create_license(Tier::Team).await;

        let mut admin = app.signed_in(&provider, &enterprise.email).await;
        let form = [
            ("domain", "Corp.Example"),
            ("metadata_xml", metadata.as_str()),
            ("enforce", "true"),
        ];
        let res = admin.post_form("/api/configure_sso", &form).await;
        assert_eq!(res.status(), StatusCode::OK, "{backend:?}");
        let body = res.text().await.unwrap();
        assert!(
            body.contains("\"domain\":\"corp.example\"") && body.contains("\"enforce\":true"),
            "{body}"
        );
        // Made from Settings, a claim waits for its DNS record.
        assert!(body.contains("\"state\":\"Pending\""), "{body}");
        let settings = admin
            .post_form("/api/settings", &[])
            .await
            .text()
            .await
            .unwrap();
        assert!(settings.contains("corp.example"), "{settings}");

        let bad = [("domain", "other.example"), ("metadata_xml", "<nonsense/>")];
        let res = admin.post_form("/api/configure_sso", &bad).await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(res.text().await.unwrap().contains("IdP metadata refused"));

        // Not an enterprise plan: a clear refusal, nothing stored.
        let mut team_admin = app.signed_in(&provider, &team.email).await;
        let res = team_admin
            .post_form(
                "/api/configure_sso",
                &[
                    ("domain", "team.example"),
                    ("metadata_xml", metadata.as_str()),
                ],
            )
            .await;
        assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
        assert!(res.text().await.unwrap().contains("enterprise"));
        // Nor may another account remove this one's domain: it is not in that account.
        let res = team_admin
            .post_form("/api/remove_sso", &[("domain", "corp.example")])
            .await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_eq!(tidemark_services::sso::list(&app.db, None).await.unwrap().len(), 1);

        let res = admin
            .post_form("/api/remove_sso", &[("domain", "corp.example")])
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(tidemark_services::sso::list(&app.db, None)
            .await
            .unwrap()
            .is_empty());
    }
}

/// A server function, its form, and the status it must answer.
type EdgeCase<'a> = (&'a str, Vec<(&'a str, &'a str)>, StatusCode);

tidemark_store::test_each_backend! {
    /// Page numbers, ids and filters at their edges are answered the same on both databases:
    /// a page past the end or an id that cannot exist is 404, odd filter text is harmless,
    /// never an overflow or a 5xx.
    async fn dashboard_inputs_at_their_edges_are_answered_not_failed(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (mine, key) = app.with_key(Tier::Team).await;
        let pushed = app
            .push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
            .await;
        let project = pushed["project_id"].as_str().unwrap();
        let scan = pushed["scan_id"].as_str().unwrap();
        let mut browser = app.signed_in(&provider, &mine.email).await;
        let max = i64::MAX.to_string();
        let nul_project = format!("{project}\u{0}");
        let long = "x".repeat(100_000);
        let cases: Vec<EdgeCase> = vec![
            ("/api/project_scans", vec![("project_id", project), ("page", &max)], StatusCode::NOT_FOUND),
            ("/api/project_scans", vec![("project_id", project), ("page", "1")], StatusCode::NOT_FOUND),
            ("/api/project_scans", vec![("project_id", project), ("page", "-3")], StatusCode::OK),
            ("/api/project_scans", vec![("project_id", &nul_project), ("page", "0")], StatusCode::NOT_FOUND),
            ("/api/project_scans", vec![("project_id", &long), ("page", "0")], StatusCode::NOT_FOUND),
            (
                "/api/scan_findings",
                vec![("project_id", project), ("scan_id", scan), ("query[page]", &max)],
                StatusCode::NOT_FOUND,
            ),
            (
                "/api/scan_findings",
                vec![("project_id", project), ("scan_id", "x\u{0}"), ("query[page]", "0")],
                StatusCode::NOT_FOUND,
            ),
            (
                "/api/scan_findings",
                vec![
                    ("project_id", project),
                    ("scan_id", scan),
                    ("query[page]", "0"),
                    ("query[text]", "bucket\u{0}\u{1b}"),
                    ("query[severity]", "high\u{0}"),
                    ("query[framework]", &long),
                ],
                StatusCode::OK,
            ),
            ("/api/scan", vec![("project_id", project), ("scan_id", &long)], StatusCode::NOT_FOUND),
            (
                "/api/set_archived",
                vec![("project_id", &nul_project), ("archived", "true")],
                StatusCode::NOT_FOUND,
            ),
        ];
        for (path, form, status) in cases {
            let res = browser.post_form(path, &form).await;
            let got = res.status();
            let body = res.text().await.unwrap();
            let shown: Vec<String> = form.iter().map(|(k, v)| format!("{k}={:.40}", v.escape_debug())).collect();
            assert_eq!(got, status, "{backend:?} {path} {shown:?}: {body:.200}");
        }
    }
}

tidemark_store::test_each_backend! {
    /// Any two scans of a project compare: the chosen base instead of the previous scan.
    async fn a_scan_compares_with_any_scan_of_its_project(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        let (_other, other_key) = app.with_key(Tier::Team).await;
        let finding = |rule: &str| serde_json::json!({
            "rule_id": rule, "resource": "r", "status": "FAIL", "severity": "high",
            "message": "m", "remediation": "x"});
        let mut pushes = Vec::new();
        for (i, rules) in [vec!["a-1", "a-2"], vec!["a-2", "a-3"], vec!["a-3", "a-4"]].into_iter().enumerate() {
            let mut body = sample_push("web", 80.0 + i as f64, &format!("2026-11-2{i}T10:00:00Z"));
            body["findings"] = rules.iter().map(|r| finding(r)).collect();
            pushes.push(app.push_json(&key, &body).await);
        }
        // A scan id only the other account has (scan ids are unique per project only).
        let theirs = app.push_json(&other_key, &sample_push("web", 1.0, "2026-11-25T10:00:00Z")).await;
        let project = pushes[0]["project_id"].as_str().unwrap();
        let scan = |i: usize| pushes[i]["scan_id"].as_str().unwrap();
        let mut admin = app.signed_in(&provider, &license.email).await;
        fn diff<'a>(project: &'a str, scan: &'a str, base: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
            let mut form = vec![("project_id", project), ("scan_id", scan)];
            if let Some(b) = base {
                form.push(("base", b));
            }
            form
        }
        let diff = |base| diff(project, scan(2), base);
        let previous: serde_json::Value = admin.post_form("/api/scan_diff", &diff(None)).await.json().await.unwrap();
        assert_eq!((previous["new_count"].as_i64(), previous["fixed_count"].as_i64()), (Some(1), Some(1)));
        assert_eq!(previous["base_scan_id"], serde_json::Value::Null);
        assert_eq!(previous["choices"], serde_json::json!([scan(1), scan(0)]));
        let first: serde_json::Value = admin.post_form("/api/scan_diff", &diff(Some(scan(0)))).await.json().await.unwrap();
        assert_eq!((first["new_count"].as_i64(), first["fixed_count"].as_i64(), first["unchanged_count"].as_i64()), (Some(2), Some(2), Some(0)), "{backend:?}: {first}");
        assert_eq!(first["base_scan_id"], scan(0));
        let names: Vec<&str> = first["new"].as_array().unwrap().iter().map(|f| f["rule_id"].as_str().unwrap()).collect();
        assert_eq!(names, ["a-3", "a-4"]);
        // Another account's scan, or one that does not exist, is no base.
        let res = admin.post_form("/api/scan_diff", &diff(Some(theirs["scan_id"].as_str().unwrap()))).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        let res = admin.post_form("/api/scan_diff", &diff(Some("20260101-000000-nope"))).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
}

tidemark_store::test_each_backend! {
    async fn a_project_without_a_scan_for_a_week_is_tagged_stale(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Enterprise).await;
        let day = 86_400_000;
        let at = |days_ago: i64| tidemark_domain::to_rfc3339(tidemark_domain::now_millis() - days_ago * day - 60_000);
        app.push_json(&key, &sample_push("quiet", 80.0, &at(10))).await;
        app.push_json(&key, &sample_push("busy", 80.0, &at(1))).await;
        let mut admin = app.signed_in(&provider, &license.email).await;
        let list: serde_json::Value = admin.post_form("/api/projects", &[]).await.json().await.unwrap();
        let stale = |label: &str| {
            list["projects"].as_array().unwrap().iter().find(|p| p["label"] == label).unwrap_or_else(|| panic!("{label} in {list}"))["stale_days"].clone()
        };
        assert_eq!(stale("quiet"), serde_json::json!(10), "{list}");
        assert_eq!(stale("busy"), serde_json::Value::Null);
        let page = admin.get(&app.url("/projects")).await.text().await.unwrap();
        assert!(page.contains("stale: no scan for 10 days"), "the projects page tags it");
        assert_eq!(page.matches("data-testid=\"stale\"").count(), 1);
    }
}

/// The scan page's pager links carry the finding next to the page they lead to (a keyset),
/// and those pages are the pages of the same number; a link whose finding is not in the
/// scan falls back to the page's number.
#[tokio::test]
async fn the_scan_pages_links_start_next_to_a_finding() {
    let (app, provider) = TestApp::spawn_with_oidc(tidemark_store::Backend::Sqlite).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let mut body = sample_push("web", 70.0, "2026-11-20T10:00:00Z");
    body["findings"] = (0..120)
        .map(|i| {
            let (status, severity) = (
                ["FAIL", "WARN", "PASS"][i % 3],
                ["critical", "high", "medium", "low"][i % 4],
            );
            serde_json::json!({
                "rule_id": format!("cis-{}", i % 7), "resource": format!("r-{i:03}"),
                "status": status, "severity": severity, "message": "m", "remediation": "x"})
        })
        .collect();
    let pushed = app.push_json(&key, &body).await;
    let scan = format!(
        "/projects/{}/scans/{}",
        pushed["project_id"].as_str().unwrap(),
        pushed["scan_id"].as_str().unwrap()
    );
    let mut admin = app.signed_in(&provider, &license.email).await;
    let mut get = async |query: String| {
        let page = admin.get(&app.url(&format!("{scan}{query}"))).await;
        assert_eq!(page.status(), StatusCode::OK, "{query}");
        page.text().await.unwrap()
    };
    // The resources shown, in order, and the pager's links.
    let resources = |page: &str| {
        let mut seen: Vec<String> = Vec::new();
        for (at, _) in page.match_indices(">r-") {
            let name = page[at + 1..at + 6].to_owned();
            if !seen.contains(&name) {
                seen.push(name);
            }
        }
        seen
    };
    let link = |page: &str, rel: &str| {
        let at = page.find(&format!("rel=\"{rel}\"")).expect(rel);
        let start = page[..at].rfind("href=\"").unwrap() + 6;
        page[start..at]
            .split('"')
            .next()
            .unwrap()
            .replace("&amp;", "&")
    };
    let sorted = "?view=all&sort=rule&dir=desc";
    let first = get(sorted.to_owned()).await;
    assert_eq!(resources(&first).len(), 50);
    let next = link(&first, "next");
    assert!(next.contains("page=1") && next.contains("after="), "{next}");
    let second = get(next).await;
    assert!(second.contains("Page 2 of 3"));
    let by_number = get(format!("{sorted}&page=1")).await;
    assert_eq!(resources(&second), resources(&by_number));
    let third = get(link(&second, "next")).await;
    assert_eq!(
        resources(&third),
        resources(&get(format!("{sorted}&page=2")).await)
    );
    assert_eq!(resources(&third).len(), 20);
    let back = link(&third, "prev");
    assert!(
        back.contains("page=1") && back.contains("before="),
        "{back}"
    );
    assert_eq!(resources(&get(back).await), resources(&by_number));
    let all: Vec<String> = [&first, &second, &third]
        .iter()
        .flat_map(|p| resources(p))
        .collect();
    let mut unique = all.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 120, "every finding once");
    // A finding the scan does not have: the page by its number.
    let made_up = get(format!("{sorted}&page=1&after=99999")).await;
    assert_eq!(resources(&made_up), resources(&by_number));
}

/// The projects page shows 50 projects a page, in the order and with the filter the URL
/// asks for, with links between pages that keep both; the glance (gate, open findings) is
/// the page's projects'.
#[tokio::test]
async fn the_projects_page_is_paged_in_the_order_asked() {
    let (app, provider) = TestApp::spawn_with_oidc(tidemark_store::Backend::Sqlite).await;
    let (license, key) = app.with_key(Tier::Enterprise).await;
    for i in 0..55 {
        let push = sample_push(&format!("svc-{i:02}"), f64::from(i), "2026-11-20T10:00:00Z");
        app.push_json(&key, &push).await;
    }
    let mut admin = app.signed_in(&provider, &license.email).await;
    let rows = |page: &str| page.matches("data-testid=\"project-row\"").count();
    let first = admin.get(&app.url("/projects")).await.text().await.unwrap();
    assert_eq!(rows(&first), 50);
    assert!(first.contains("1–50 of 55 · page 1 of 2"), "{first}");
    assert!(first.contains("href=\"/projects?page=2\""));
    assert!(first.contains(">svc-00<") && !first.contains(">svc-54<"));
    let second = admin
        .get(&app.url("/projects?page=2"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(rows(&second), 5);
    assert!(second.contains("51–55 of 55 · page 2 of 2") && second.contains(">svc-54<"));
    // Lowest score first: svc-00 (score 0) leads page 1, so page 2 holds the highest five.
    let by_score = admin
        .get(&app.url("/projects?sort=score&page=2"))
        .await
        .text()
        .await
        .unwrap();
    assert!(by_score.contains(">svc-50<") && !by_score.contains(">svc-00<"));
    assert!(
        by_score.contains("href=\"/projects?sort=score\""),
        "the previous page keeps the order"
    );
    // A filter pages what matches, and a page past the end is the last.
    let filtered = admin
        .get(&app.url("/projects?q=svc-5&page=9"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(rows(&filtered), 5);
    assert!(
        !filtered.contains("projects-pager"),
        "one page needs no pager"
    );
    // The glance answers for the page asked.
    let glance: serde_json::Value = admin
        .post_form(
            "/api/projects_glance",
            &[("sort", "name"), ("q", ""), ("page", "2")],
        )
        .await
        .json()
        .await
        .unwrap();
    let ids: Vec<&serde_json::Value> = glance["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p[0])
        .collect();
    assert_eq!(ids.len(), 5, "{glance}");
}

/// Pages that refuse answer with the status they mean, around the same friendly page: a
/// member on the admins' audit log `403`, another account's project and an unknown scan `404`.
#[tokio::test]
async fn refused_pages_answer_with_their_status() {
    // A site root with one plain file, as the release's `dashboard.js`.
    let site = tempfile::tempdir().unwrap();
    std::fs::write(site.path().join("dashboard.js"), "// the site's script\n").unwrap();
    let root = site.path().display().to_string();
    let (app, provider) = TestApp::spawn_with_oidc_and(
        tidemark_store::Backend::Sqlite,
        &[("LEPTOS_SITE_ROOT", root.as_str())],
    )
    .await;
    let (license, key) = app.with_key(Tier::Team).await;
    let (_, their_key) = app.with_key(Tier::Team).await;
    let mine = app
        .push_json(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
        .await;
    let theirs = app
        .push_json(
            &their_key,
            &sample_push("web", 60.0, "2026-11-20T10:00:00Z"),
        )
        .await;
    tidemark_store::access::add_member(
        &app.db,
        &license.account_id,
        &tidemark_domain::text::Email::parse("reader@example.com").unwrap(),
        tidemark_domain::access::Role::Member,
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap()
    .unwrap();
    let mut member = app.signed_in(&provider, "reader@example.com").await;
    let project =
        |p: &serde_json::Value| format!("/projects/{}", p["project_id"].as_str().unwrap());
    for (path, status, says) in [
        (
            "/settings/audit".to_owned(),
            StatusCode::FORBIDDEN,
            "Only an admin",
        ),
        (project(&theirs), StatusCode::NOT_FOUND, "Not found"),
        (
            format!("{}/scans/20990101-000000-web", project(&mine)),
            StatusCode::NOT_FOUND,
            "Not found",
        ),
        (
            format!("{}?branch=no-such-branch", project(&mine)),
            StatusCode::NOT_FOUND,
            "Not found",
        ),
        (project(&mine), StatusCode::OK, "web"),
        ("/settings".to_owned(), StatusCode::OK, "API keys"),
        // Settings has a page per section; the admins' ones refuse members.
        (
            "/settings/members".to_owned(),
            StatusCode::OK,
            "reader@example.com",
        ),
        (
            "/settings/webhooks".to_owned(),
            StatusCode::FORBIDDEN,
            "Only an admin",
        ),
        (
            "/settings/publishers".to_owned(),
            StatusCode::FORBIDDEN,
            "Only an admin",
        ),
        (
            "/settings/no-such-section".to_owned(),
            StatusCode::NOT_FOUND,
            "Page not found",
        ),
        // An address no route has: the same page, for the same viewer.
        (
            "/no/such/page".to_owned(),
            StatusCode::NOT_FOUND,
            "Page not found",
        ),
    ] {
        let res = member.get(&app.url(&path)).await;
        assert_eq!(res.status(), status, "{path}");
        let page = res.text().await.unwrap();
        assert!(page.contains(says), "{path}: {page}");
        assert!(page.contains("<html"), "{path}: the whole friendly page");
        // Signed in, the header says so on every page, the 404 included.
        assert!(
            page.contains(r#"data-testid="signed-in-as""#),
            "{path}: {page}"
        );
    }
    // Signed out, the 404 offers to sign in; a file of the site is served as it is, with no
    // session read or written for it.
    let mut stranger = common::browser::Browser::new(&app.base_url);
    let page = stranger
        .get(&app.url("/no/such/page"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(r#"href="/signin""#) && !page.contains("signed-in-as"),
        "{page}"
    );
    let res = member.get(&app.url("/dashboard.js")).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers().get("set-cookie").is_none());
    assert_eq!(res.text().await.unwrap(), "// the site's script\n");
}

/// Several servers in one process (these tests, the benchmarks, a restart in place): one
/// starting must not stop another's pages from loading. Listing the app's routes switches
/// resource loading off process-wide while it runs; it happened at every start, and a page
/// rendered in that moment never finished (CI saw `/settings/keys` hang for its whole
/// time-out). Pages of one server are rendered without pause while others start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_load_while_other_servers_start_in_the_same_process() {
    let (app, provider) = TestApp::spawn_with_oidc(tidemark_store::Backend::Sqlite).await;
    let (license, key) = app.with_key(Tier::Team).await;
    let res = app
        .push(&key, &sample_push("web", 80.0, "2026-11-20T10:00:00Z"))
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let admin = app.signed_in(&provider, &license.email).await;
    let cookie = admin.cookie_header();
    let starting = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let readers: Vec<_> = (0..4)
        .map(|i| {
            let (starting, cookie) = (starting.clone(), cookie.clone());
            let url = app.url(["/projects", "/settings/keys"][i % 2]);
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut pages = 0;
                while starting.load(std::sync::atomic::Ordering::Relaxed) {
                    let page = tokio::time::timeout(std::time::Duration::from_secs(15), async {
                        let res = client.get(&url).header("cookie", &cookie).send().await?;
                        let status = res.status();
                        res.text().await.map(|body| (status, body))
                    })
                    .await
                    .unwrap_or_else(|_| panic!("{url} did not finish within 15 s"))
                    .expect("the page");
                    assert_eq!(page.0, StatusCode::OK, "{url}");
                    assert!(page.1.contains("</html>"), "{url}: the whole page");
                    pages += 1;
                }
                pages
            })
        })
        .collect();
    for _ in 0..20 {
        drop(TestApp::spawn(tidemark_store::Backend::Sqlite).await);
    }
    starting.store(false, std::sync::atomic::Ordering::Relaxed);
    let mut pages = 0;
    for reader in readers {
        pages += reader.await.expect("a reader");
    }
    assert!(pages >= 20, "pages rendered meanwhile: {pages}");
}
