//! Housekeeping through the real server and binary (issue 36): the operator's dry run and
//! pass, a thinned scan's finding exports answering `410 scan_thinned` while its row stays
//! in the history, the dashboard saying why its findings are gone, and an account's own
//! policy, audited.
#![allow(clippy::unwrap_used)]

use reqwest::StatusCode;
use serde_json::Value;

use crate::common::{assert_error, sample_push, TestApp};
use tidemark_wire::Tier;

const DAY: i64 = 86_400_000;

async fn get(app: &TestApp, key: &str, path: &str) -> reqwest::Response {
    app.get_with_key(key, path).await
}

fn last_json(out: &str) -> Value {
    serde_json::from_str(out.lines().last().unwrap()).unwrap()
}

tidemark_store::test_each_backend! {
    async fn an_old_scans_findings_go_and_its_exports_answer_410(backend) {
        let (app, provider) = TestApp::spawn_with_oidc(backend).await;
        let (license, key) = app.with_key(Tier::Team).await;
        // Two scans on one day ten days ago (the later keeps its findings), and one now.
        let now = tidemark_domain::now_millis();
        let day = (now - 10 * DAY).div_euclid(DAY) * DAY;
        let mut scans = Vec::new();
        for (i, at) in [day + 3_600_000, day + 7_200_000, now - 60_000].into_iter().enumerate() {
            let body = sample_push("web", 70.0 + i as f64, &tidemark_domain::to_rfc3339(at));
            scans.push(app.push_json(&key, &body).await);
        }
        let project = scans[0]["project_id"].as_str().unwrap().to_owned();
        let path = |scan: &Value, ext: &str| {
            format!("/v1/projects/{project}/scans/{}/findings.{ext}", scan["scan_id"].as_str().unwrap())
        };
        let before = get(&app, &key, &path(&scans[1], "csv")).await.text().await.unwrap();

        let (ok, out, err) = app.command(&["housekeeping", "--dry-run", "--json"], &[]).await;
        assert!(ok, "{err}");
        let dry = last_json(&out);
        assert_eq!(dry["scans_to_thin"], 1, "{backend:?}: {dry}");
        assert_eq!(dry["lines"][0]["project_label"], "web");
        assert_eq!(get(&app, &key, &path(&scans[0], "csv")).await.status(), StatusCode::OK, "a dry run removes nothing");

        let (ok, out, err) = app.command(&["housekeeping", "--json"], &[]).await;
        assert!(ok, "{err}");
        assert_eq!(last_json(&out)["scans_thinned"], 1, "{out}");

        for ext in ["csv", "sarif"] {
            let msg = assert_error(get(&app, &key, &path(&scans[0], ext)).await, StatusCode::GONE, "scan_thinned").await;
            assert!(msg.contains("removed by housekeeping"), "{msg}");
        }
        // Another account's key finds nothing there: 404, not the 410 that would say it exists.
        let (_, other_key) = app.with_key(Tier::Team).await;
        assert_error(get(&app, &other_key, &path(&scans[0], "csv")).await, StatusCode::NOT_FOUND, "not_found").await;
        // What was kept reads as before, and the history keeps every scan.
        assert_eq!(get(&app, &key, &path(&scans[1], "csv")).await.text().await.unwrap(), before);
        let history = get(&app, &key, &format!("/v1/projects/{project}/history.csv")).await.text().await.unwrap();
        assert_eq!(history.lines().count(), 4, "a header and three scans: {history}");

        // The operator's project list says what the project takes, and how many scans lost
        // their findings.
        let (ok, out, err) = app.command(&["project", "list", "--account", &license.account_id, "--json"], &[]).await;
        assert!(ok, "{err}");
        let report = last_json(&out);
        let listed = &report["projects"][0];
        assert!(listed["stored_bytes"].as_i64().unwrap() > 1_000, "{listed}");
        assert_eq!(report["stored_bytes"], listed["stored_bytes"], "the account's total");
        assert_eq!(listed["scans_thinned"], 1);

        // The dashboard shows the scan, and says why its findings are gone.
        let mut admin = app.signed_in(&provider, &license.email).await;
        let page = admin
            .get(&app.url(&format!("/projects/{project}/scans/{}", scans[0]["scan_id"].as_str().unwrap())))
            .await;
        assert_eq!(page.status(), StatusCode::OK);
        let html = page.text().await.unwrap();
        assert!(html.contains("data-testid=\"findings-removed\""), "{backend:?}");
        assert!(html.contains("removed by housekeeping"));
        // Issue 44: no download links to files that answer 410.
        assert!(!html.contains("data-testid=\"scan-downloads\""), "{backend:?}");
        let storage = admin.get(&app.url("/settings/storage")).await.text().await.unwrap();
        assert!(storage.contains("data-testid=\"storage-row\""), "{backend:?}");
        assert!(storage.contains(r#"<td data-label="Findings removed">1 scan</td>"#), "{storage}");
        // Another account's member sees only their own account's storage.
        let (stranger, _) = app.with_key(Tier::Team).await;
        let mut stranger = app.signed_in(&provider, &stranger.email).await;
        let theirs = stranger.get(&app.url("/settings/storage")).await.text().await.unwrap();
        assert!(!theirs.contains(&project), "{backend:?}: another account's project listed");
        let csv = admin
            .get(&app.url(&format!("/projects/{project}/scans/{}/findings.csv", scans[0]["scan_id"].as_str().unwrap())))
            .await;
        // The same JSON body as /v1's.
        assert_error(csv, StatusCode::GONE, "scan_thinned").await;
    }
}

tidemark_store::test_each_backend! {
    async fn an_account_gets_its_own_policy_in_the_audit_log(backend) {
        let app = TestApp::spawn(backend).await;
        let (license, _) = app.with_key(Tier::Team).await;
        let account = license.account_id.as_str();
        let (ok, out, err) = app
            .command(&["housekeeping", "policy", "--account", account, "--set", "keep_all=3d", "--json"], &[])
            .await;
        assert!(ok, "{err}");
        let shown = last_json(&out);
        assert_eq!((shown["own"].as_bool(), shown["policy"]["keep_all"].as_str()), (Some(true), Some("3d")));
        // The audit log shows the ages as written, not in milliseconds (issue 44).
        let (ok, out, err) = app.command(&["audit", "list", "--account", account, "--json"], &[]).await;
        assert!(ok, "{err}");
        assert!(out.contains("keep_all=3d,weekly_after=30d,monthly_after=365d"), "{out}");
        assert_eq!(app.count("audit_events WHERE action = 'housekeeping.policy_set'").await, 1);
        // A bad setting is refused and changes nothing.
        let (ok, _, err) = app
            .command(&["housekeeping", "policy", "--account", account, "--set", "keep_all=soon"], &[])
            .await;
        assert!(!ok && err.contains("keep_all"), "{err}");
        // Issue 44: a valid policy whatever the order of its pairs, and hours read as written.
        let (ok, out, err) = app
            .command(&["housekeeping", "policy", "--account", account, "--set", "keep_all=45d",
                "--set", "weekly_after=90d", "--set", "pull_request_after=36h"], &[])
            .await;
        assert!(ok, "{err}");
        assert!(out.contains("every scan's findings for 45d, then one a day; one a week after 90d"), "{out}");
        assert!(out.contains("pull requests' after 36h quiet"), "{out}");
        let (ok, _, err) = app.command(&["housekeeping", "policy", "--account", "acct_nope"], &[]).await;
        assert!(!ok && err.contains("no account"), "{err}");
        let (ok, out, _) = app
            .command(&["housekeeping", "policy", "--account", account, "--reset", "--json"], &[])
            .await;
        assert!(ok);
        assert_eq!(last_json(&out)["own"], false);
        assert_eq!(app.count("audit_events WHERE action = 'housekeeping.policy_set'").await, 3);
    }
}

tidemark_store::test_each_backend! {
    async fn a_move_killed_half_way_carries_on_where_it_stopped(backend) {
        use tidemark_store::dashboard::{list_findings, FindingFilter, FindingRow};
        use tidemark_store::spans::moving::scans_as_rows;
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_HOUSEKEEPING", "off")]).await;
        tidemark_store::testing::insert_pushing_account(&app.db, "acct_move").await;
        // A history stored one row per finding, as before spans: 150 scans of 400 findings,
        // statuses changing from scan to scan.
        let mut project = tidemark_store::ProjectId::default();
        for n in 0..150_i64 {
            let findings: Vec<Value> = (0..400)
                .map(|i| serde_json::json!({"rule_id": format!("cis-{}", i % 40), "resource": format!("r{i}"),
                    "status": if (i + n) % 37 == 0 { "FAIL" } else { "PASS" }, "severity": "high",
                    "message": format!("check {}", i % 40), "remediation": "fix"}))
                .collect();
            let body = serde_json::json!({"project_label": "moved", "cloud": "aws",
                "cloud_account_id": "123456789012", "frameworks": ["cis"], "score": 70.0,
                "passed": 1, "failed": 1, "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
                "findings": findings, "state_source": "ci",
                "scanned_at": tidemark_domain::to_rfc3339(1_790_000_000_000 + n * 60_000)});
            let push = tidemark_domain::push::ValidPush::parse(body.to_string().as_bytes()).unwrap();
            let mut ctx = tidemark_store::testing::push_context("acct_move");
            ctx.now = 1_790_000_000_000 + n * 60_000;
            project = tidemark_store::testing::appended(
                tidemark_store::pushes::record_push(&app.db, ctx, push).await.unwrap(),
            )
            .project_id;
        }
        let reads = |seq: i64| {
            let (db, project) = (&app.db, project.clone());
            async move {
                list_findings(db.as_ref(), &project, seq, &FindingFilter::default(), 0, 1000).await.unwrap().0
            }
        };
        let strip = |rows: Vec<FindingRow>| rows.into_iter().map(|r| (r.rule_id, r.resource, r.status, r.message)).collect::<Vec<_>>();
        let mut before = Vec::new();
        for seq in 1..=150 {
            before.push(strip(reads(seq).await));
        }
        tidemark_store::testing::store_as_rows(&app.db).await;
        assert_eq!(scans_as_rows(app.db.as_ref()).await.unwrap(), 150);

        // Killed (SIGKILL) once it has moved some and not all.
        // Housekeeping off: the move only, no scan thinned.
        let off = [("TIDEMARK_HOUSEKEEPING", "off")];
        let mut child = app.command_child(&["housekeeping"], &off);
        let left = crate::common::wait_for_async(std::time::Duration::from_secs(60), || async {
            let left = scans_as_rows(app.db.as_ref()).await.unwrap();
            (left < 140).then_some(left)
        })
        .await
        .expect("the move goes on");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(left > 0, "{backend:?}: killed too late to show anything");
        let left = scans_as_rows(app.db.as_ref()).await.unwrap();
        assert!(left > 0 && left < 150, "{backend:?}: {left} left");
        // Every scan reads as before, moved or not.
        for seq in 1..=150 {
            let got = strip(reads(seq).await);
            assert!(got == before[seq as usize - 1], "{backend:?}: scan {seq} reads {} findings after the kill, not as before", got.len());
        }
        // Its lease holds for ten minutes: the next run is refused, naming the holder (the
        // killed process) and when the lease lapses, and saying what --force does.
        let (ok, _, err) = app.command(&["housekeeping"], &off).await;
        assert!(!ok, "{backend:?}: ran beside a lease holder");
        let killed = format!("pid {}, since ", child.id());
        assert!(err.contains("housekeeping is running elsewhere: operator ") && err.contains(&killed), "{err}");
        assert!(err.contains("holds the lease until ") && err.contains(" UTC (in 10 minutes)"), "{err}");
        assert!(err.contains("--force"), "{err}");
        // The operator knows it is dead: --force takes the lease over and finishes the move.
        let (ok, out, err) = app.command(&["housekeeping", "--force", "--json"], &off).await;
        assert!(ok, "{err}");
        let done = last_json(&out);
        assert_eq!(done["scans_thinned"], 0, "{done}");
        assert_eq!(done["scans_moved"].as_i64().unwrap(), left, "{done}");
        assert_eq!(scans_as_rows(app.db.as_ref()).await.unwrap(), 0);
        for seq in 1..=150 {
            let got = strip(reads(seq).await);
            assert!(got == before[seq as usize - 1], "{backend:?}: scan {seq} reads {} findings after the move, not as before", got.len());
        }
        assert_eq!(app.count("findings").await, 0);
    }
}

tidemark_store::test_each_backend! {
    /// Issue 47: scans stored before the push kept posture are judged by housekeeping, one
    /// transaction each; killed half-way, every scan is judged (as its push would have) or
    /// pending, and the next run finishes what is left.
    async fn a_posture_backfill_killed_half_way_carries_on(backend) {
        use tidemark_store::posture::backfill::scans_pending;
        use tidemark_store::testing::{dump_posture, forget_posture};
        let app = TestApp::spawn_with(backend, &[("TIDEMARK_HOUSEKEEPING", "off")]).await;
        tidemark_store::testing::insert_pushing_account(&app.db, "acct_post").await;
        for n in 0..150_i64 {
            let findings: Vec<Value> = (0..300)
                .map(|i| serde_json::json!({"rule_id": format!("cis-{}.{}", i % 6, i % 30), "resource": format!("r{i}"),
                    "status": if (i + n) % 29 == 0 { "FAIL" } else { "PASS" }, "severity": "high",
                    "message": "check", "remediation": "fix"}))
                .collect();
            let body = serde_json::json!({"project_label": "judged", "cloud": "aws",
                "cloud_account_id": "123456789012", "frameworks": ["cis"], "score": 70.0,
                "passed": 1, "failed": 1, "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
                "findings": findings, "state_source": "ci",
                "scanned_at": tidemark_domain::to_rfc3339(1_790_000_000_000 + n * 60_000)});
            let push = tidemark_domain::push::ValidPush::parse(body.to_string().as_bytes()).unwrap();
            let mut ctx = tidemark_store::testing::push_context("acct_post");
            ctx.now = 1_790_000_000_000 + n * 60_000;
            tidemark_store::testing::appended(
                tidemark_store::pushes::record_push(&app.db, ctx, push).await.unwrap(),
            );
        }
        let kept = dump_posture(app.db.as_ref()).await;
        assert_eq!(kept.len(), 150, "{backend:?}");
        assert!(kept.iter().any(|r| r.8 != "[]"), "{backend:?}: nothing drifted");
        forget_posture(&app.db).await;
        assert_eq!(app.metric("tidemark_scans_posture_pending").await, Some(150.0));
        let off = [("TIDEMARK_HOUSEKEEPING", "off")];
        let (ok, out, err) = app.command(&["housekeeping", "--dry-run"], &off).await;
        assert!(ok, "{err}");
        assert!(out.contains("would judge the posture of 150 scans stored before it was kept"), "{out}");

        let mut child = app.command_child(&["housekeeping"], &off);
        let left = crate::common::wait_for_async(std::time::Duration::from_secs(60), || async {
            let left = scans_pending(app.db.as_ref()).await.unwrap();
            (left < 140).then_some(left)
        })
        .await
        .expect("the backfill goes on");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(left > 0, "{backend:?}: killed too late to show anything");
        let left = scans_pending(app.db.as_ref()).await.unwrap();
        assert!(left > 0 && left < 150, "{backend:?}: {left} left");
        // Judged scans have exactly the rows their push wrote; pending ones none.
        let judged = dump_posture(app.db.as_ref()).await;
        assert_eq!(judged.len() as i64, 150 - left, "{backend:?}");
        assert!(judged.iter().all(|r| kept.contains(r)), "{backend:?}: a judged scan differs from its push");

        let (ok, out, err) = app.command(&["housekeeping", "--force", "--json"], &off).await;
        assert!(ok, "{err}");
        let done = last_json(&out);
        assert_eq!(done["posture_judged"].as_i64().unwrap(), left, "{done}");
        assert_eq!(scans_pending(app.db.as_ref()).await.unwrap(), 0);
        assert_eq!(dump_posture(app.db.as_ref()).await, kept, "{backend:?}");
    }
}

tidemark_store::test_each_backend! {
    /// The worker's thinning holds its lease line by line: a pass whose lease another replica
    /// holds stops before its first line; holding it, it thins what the policy says, and a
    /// second pass finds nothing more to do.
    async fn thinning_stops_where_another_replica_holds_the_lease(backend) {
        use server::workers::housekeeping::{thin, Thinned, LEASE};
        let app = TestApp::spawn(backend).await;
        let (_, key) = app.with_key(Tier::Team).await;
        let now = tidemark_domain::now_millis();
        let day = (now - 10 * DAY).div_euclid(DAY) * DAY;
        // Two scans one day ten days ago (the earlier one's findings go; its spans, the same
        // findings as the later one's, stay) and one now.
        for (i, at) in [day + 3_600_000, day + 7_200_000, now - 60_000].into_iter().enumerate() {
            let body = sample_push("web", 70.0 + i as f64, &tidemark_domain::to_rfc3339(at));
            app.push_json(&key, &body).await;
        }
        let policy = tidemark_domain::housekeeping::Policy::default();
        let pause = std::time::Duration::ZERO;
        let db = &app.db;
        assert!(tidemark_store::leases::acquire(db, LEASE, "other", now, 60_000).await.unwrap());
        let idle = thin(db, "me", now, &policy, pause).await.unwrap();
        assert_eq!(idle, Thinned::default(), "{backend:?}");
        tidemark_store::leases::release(db, LEASE, "other").await.unwrap();
        let done = thin(db, "me", now, &policy, pause).await.unwrap();
        assert_eq!((done.lines, done.scans_thinned), (1, 1), "{backend:?}: {done:?}");
        let again = thin(db, "me", now, &policy, pause).await.unwrap();
        assert_eq!((again.scans_thinned, again.spans_removed), (0, 0), "{backend:?}");
    }
}
