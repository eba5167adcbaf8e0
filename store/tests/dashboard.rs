//! The dashboard's reads on every backend, always within one account.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_store::dashboard::{self, ArchiveOutcome, FindingFilter};
use tidemark_store::pushes::{record_push, PushContext, PushOutcome};
use tidemark_store::testing::{fresh, insert_license};
use tidemark_store::Writer;

async fn account(db: &Writer) -> tidemark_store::AccountId {
    let address = format!("{}@example.com", tidemark_domain::ids::new_user_id());
    insert_license(db, &address).await
}

fn finding(rule: &str, resource: &str, status: &str, severity: &str, message: &str) -> Value {
    json!({"rule_id": rule, "resource": resource, "status": status, "severity": severity,
           "message": message, "remediation": "fix it"})
}

/// Pushes a scan at `day` (days after 2026-01-01) and returns its scan id.
async fn push(
    db: &Writer,
    account: &tidemark_store::AccountId,
    label: &str,
    day: i64,
    score: f64,
    findings: Vec<Value>,
) -> tidemark_store::ScanId {
    let at = 1_767_225_600_000 + day * 86_400_000;
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0", "soc2"], "score": score, "passed": 10, "failed": findings.len(),
        "severity_counts": {"critical": 0, "high": findings.len(), "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(at),
    });
    let push = ValidPush::parse(body.to_string().as_bytes()).unwrap();
    let ctx = PushContext {
        account_id: account.to_owned(),
        key_id: tidemark_store::testing::push_key_id(account),
        project_cap: Some(2),
        write_limit: RollingLimit {
            limit: 10_000,
            window_ms: 60_000,
        },
        now: at,
        touch_key: false,
        raw_body_hash: None,
        pushed_by: None,
        custom_frameworks: false,
        drift_detection: false,
    };
    match record_push(db, ctx, push).await.unwrap() {
        PushOutcome::Appended(scan, _) => scan.scan_id,
        other => panic!("push refused: {other:?}"),
    }
}

tidemark_store::test_each_backend! {
    async fn projects_history_and_scans_stay_within_the_account(backend) {
        let t = fresh(backend).await;
        let db = &t.db;
        let mine = account(db).await;
        let theirs = account(db).await;
        for day in 0..25 {
            push(db, &mine, "web", day, 50.0 + day as f64, vec![]).await;
        }
        push(db, &mine, "api", 3, 70.0, vec![]).await;
        push(db, &theirs, "web", 1, 10.0, vec![]).await;

        let projects = dashboard::list_projects(db, &mine).await.unwrap();
        assert_eq!(
            projects
                .iter()
                .map(|p| p.label.as_str())
                .collect::<Vec<_>>(),
            ["api", "web"]
        );
        let web = &projects[1];
        assert_eq!(web.scan_count, 25);
        assert_eq!(web.last_score, Some(74.0));
        assert_eq!(web.last_delta, Some(1.0));
        assert_eq!(
            web.recent_scores.len(),
            dashboard::SPARKLINE_POINTS as usize,
            "{backend:?}"
        );
        assert_eq!(web.recent_scores.last(), Some(&74.0));
        assert_eq!(web.recent_scores[0], 55.0);

        let (all, total) = dashboard::project_history(db, &mine, &web.id, None, None, 500)
            .await
            .unwrap();
        assert_eq!(
            (all.len(), total),
            (25, 25),
            "{backend:?}: few scans come back whole"
        );
        assert!(all.windows(2).all(|w| w[0].scanned_at < w[1].scanned_at));
        assert_eq!(all[24].score, 74.0);
        let since = Some(all[20].scanned_at);
        let (recent, total) = dashboard::project_history(db, &mine, &web.id, None, since, 500)
            .await
            .unwrap();
        assert_eq!((recent.len(), total), (5, 5));
        // Reduced to 3 buckets: at most 4 scans each, and the extremes are among them.
        let (reduced, total) = dashboard::project_history(db, &mine, &web.id, None, None, 3)
            .await
            .unwrap();
        assert_eq!(total, 25);
        assert!((3..=12).contains(&reduced.len()), "{}", reduced.len());
        assert_eq!(reduced.first().unwrap().score, 50.0);
        assert_eq!(reduced.last().unwrap().score, 74.0);
        assert!(!reduced[0].scan_id.is_empty());

        let page = dashboard::list_scans(db, &mine, &web.id, None, 0, 10)
            .await
            .unwrap();
        assert_eq!(page.len(), 10);
        assert_eq!(page[0].seq, 25, "newest first");
        assert_eq!(page[0].frameworks, ["cis-aws-2.0", "soc2"]);

        // Another account's project id finds nothing anywhere.
        let their_web = dashboard::list_projects(db, &theirs)
            .await
            .unwrap()
            .remove(0);
        assert!(dashboard::find_project(db, &mine, &their_web.id)
            .await
            .unwrap()
            .is_none());
        let (none, total) = dashboard::project_history(db, &mine, &their_web.id, None, None, 500)
            .await
            .unwrap();
        assert!(none.is_empty() && total == 0);
        assert!(dashboard::list_scans(db, &mine, &their_web.id, None, 0, 10)
            .await
            .unwrap()
            .is_empty());
        let their_scan = their_web.last_scan_id.clone().unwrap();
        assert!(dashboard::find_scan(db, &mine, &their_web.id, &their_scan)
            .await
            .unwrap()
            .is_none());
        assert_eq!(
            dashboard::set_archived(db, &mine, &their_web.id, true, None, &tidemark_store::testing::audit())
                .await
                .unwrap(),
            ArchiveOutcome::NotFound
        );
    }
}

tidemark_store::test_each_backend! {
    async fn findings_filter_page_and_diff(backend) {
        let t = fresh(backend).await;
        let db = &t.db;
        let acct = account(db).await;
        push(
            db,
            &acct,
            "infra",
            0,
            80.0,
            vec![
                finding(
                    "cis-aws-2.0-1.1",
                    "bucket.a",
                    "FAIL",
                    "high",
                    "Public 50% read",
                ),
                finding(
                    "cis-aws-2.0-1.2",
                    "bucket.b",
                    "FAIL",
                    "low",
                    "No versioning",
                ),
                finding("soc2-cc6.1", "role.admin", "WARN", "medium", "Wide role"),
            ],
        )
        .await;
        let scan = push(
            db,
            &acct,
            "infra",
            1,
            75.0,
            vec![
                finding(
                    "cis-aws-2.0-1.1",
                    "bucket.a",
                    "FAIL",
                    "high",
                    "Public 50% read",
                ),
                finding(
                    "cis-aws-2.0-3.4",
                    "vpc.main",
                    "FAIL",
                    "critical",
                    "Flow logs off",
                ),
                finding("soc2-cc6.1", "role.admin", "PASS", "medium", "Wide role"),
                finding("soc2-cc7.2", "trail.main", "ERROR", "high", "Check failed"),
            ],
        )
        .await;
        let project = dashboard::list_projects(db, &acct).await.unwrap().remove(0);
        let (found, previous) = dashboard::find_scan(db, &acct, &project.id, &scan)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.seq, 2);
        assert_eq!(previous.unwrap().seq, 1);

        let all = FindingFilter::default();
        let (rows, total) = dashboard::list_findings(db, &project.id, 2, &all, 0, 2)
            .await
            .unwrap();
        assert_eq!((rows.len(), total), (2, 4), "{backend:?}");
        assert_eq!(rows[0].rule_id, "cis-aws-2.0-1.1", "scanner order");
        let (rows, _) = dashboard::list_findings(db, &project.id, 2, &all, 2, 2)
            .await
            .unwrap();
        assert_eq!(rows[1].rule_id, "soc2-cc7.2");
        // Past the last page: no rows, and still the total.
        let (rows, total) = dashboard::list_findings(db, &project.id, 2, &all, 10, 2)
            .await
            .unwrap();
        assert_eq!((rows.len(), total), (0, 4), "{backend:?}");

        // Sorted by a column: most severe first by default in the dashboard, ties broken by
        // status (failing first), rule and resource; every order is stable across pages.
        use tidemark_store::dashboard::{FindingSort, SortDirection};
        let sorted = [
            (FindingSort::Severity, SortDirection::Ascending, ["cis-aws-2.0-3.4", "cis-aws-2.0-1.1", "soc2-cc7.2", "soc2-cc6.1"]),
            (FindingSort::Severity, SortDirection::Descending, ["soc2-cc6.1", "cis-aws-2.0-1.1", "soc2-cc7.2", "cis-aws-2.0-3.4"]),
            (FindingSort::Status, SortDirection::Ascending, ["cis-aws-2.0-3.4", "cis-aws-2.0-1.1", "soc2-cc7.2", "soc2-cc6.1"]),
            (FindingSort::Rule, SortDirection::Descending, ["soc2-cc7.2", "soc2-cc6.1", "cis-aws-2.0-3.4", "cis-aws-2.0-1.1"]),
            (FindingSort::Resource, SortDirection::Ascending, ["cis-aws-2.0-1.1", "soc2-cc6.1", "soc2-cc7.2", "cis-aws-2.0-3.4"]),
            (FindingSort::Scanner, SortDirection::Ascending, ["cis-aws-2.0-1.1", "cis-aws-2.0-3.4", "soc2-cc6.1", "soc2-cc7.2"]),
        ];
        for (sort, direction, expected) in sorted {
            let filter = FindingFilter { sort, direction, ..all.clone() };
            let (first, _) = dashboard::list_findings(db, &project.id, 2, &filter, 0, 2).await.unwrap();
            let (second, _) = dashboard::list_findings(db, &project.id, 2, &filter, 2, 2).await.unwrap();
            let got: Vec<&str> = first.iter().chain(&second).map(|r| r.rule_id.as_str()).collect();
            assert_eq!(got, expected, "{backend:?}: {sort:?} {direction:?}");
        }

        let cases: [(FindingFilter, &[&str]); 6] = [
            (
                FindingFilter {
                    severity: Some("high".into()),
                    ..all.clone()
                },
                &["cis-aws-2.0-1.1", "soc2-cc7.2"],
            ),
            (
                FindingFilter {
                    status: Some("FAIL".into()),
                    ..all.clone()
                },
                &["cis-aws-2.0-1.1", "cis-aws-2.0-3.4"],
            ),
            (
                FindingFilter {
                    framework: Some("soc2".into()),
                    ..all.clone()
                },
                &["soc2-cc6.1", "soc2-cc7.2"],
            ),
            (
                FindingFilter {
                    text: Some("VPC".into()),
                    ..all.clone()
                },
                &["cis-aws-2.0-3.4"],
            ),
            // LIKE wildcards in the search text are literal.
            (
                FindingFilter {
                    text: Some("50%".into()),
                    ..all.clone()
                },
                &["cis-aws-2.0-1.1"],
            ),
            (
                FindingFilter {
                    text: Some("_".into()),
                    ..all.clone()
                },
                &[],
            ),
        ];
        for (filter, expected) in cases {
            let (rows, total) = dashboard::list_findings(db, &project.id, 2, &filter, 0, 50)
                .await
                .unwrap();
            let got: Vec<&str> = rows.iter().map(|r| r.rule_id.as_str()).collect();
            assert_eq!(got, expected, "{backend:?}: {filter:?}");
            assert_eq!(total, expected.len() as i64);
        }

        // What each framework choice of the filter holds, as its filter reads it.
        let mut by_framework = dashboard::framework_counts(
            db,
            &project.id,
            2,
            &["cis-aws-2.0".to_owned(), "soc2".to_owned(), "pci".to_owned()],
        )
        .await
        .unwrap();
        by_framework.sort();
        let expected = [
            ("cis-aws-2.0", "critical", "FAIL", 1),
            ("cis-aws-2.0", "high", "FAIL", 1),
            ("soc2", "high", "ERROR", 1),
            ("soc2", "medium", "PASS", 1),
        ]
        .map(|(f, sev, st, n)| (f.to_owned(), sev.to_owned(), st.to_owned(), n));
        assert_eq!(by_framework, expected, "{backend:?}");
        assert!(dashboard::framework_counts(db, &project.id, 2, &[]).await.unwrap().is_empty());

        let diff = dashboard::diff_scans(db, &project.id, 2, 1, 100)
            .await
            .unwrap();
        let rules = |v: &[tidemark_store::dashboard::FindingRow]| {
            v.iter().map(|f| f.rule_id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            rules(&diff.new),
            ["cis-aws-2.0-3.4", "soc2-cc7.2"],
            "{backend:?}"
        );
        assert_eq!(rules(&diff.fixed), ["cis-aws-2.0-1.2", "soc2-cc6.1"]);
        assert_eq!(
            (diff.new_count, diff.fixed_count, diff.unchanged_count),
            (2, 2, 1)
        );
    }
}

tidemark_store::test_each_backend! {
    async fn archiving_frees_a_slot_and_unarchiving_needs_one(backend) {
        let t = fresh(backend).await;
        let db = &t.db;
        let acct = account(db).await;
        push(db, &acct, "one", 0, 80.0, vec![]).await;
        push(db, &acct, "two", 0, 80.0, vec![]).await;
        let projects = dashboard::list_projects(db, &acct).await.unwrap();
        let one = projects
            .iter()
            .find(|p| p.label == "one")
            .unwrap()
            .id
            .clone();
        assert_eq!(
            dashboard::set_archived(db, &acct, &one, true, Some(2), &tidemark_store::audit::operator_context("tests", 10))
                .await
                .unwrap(),
            ArchiveOutcome::Done
        );
        let listed = dashboard::list_projects(db, &acct).await.unwrap();
        assert_eq!(
            listed.last().unwrap().label,
            "one",
            "archived projects come last"
        );
        assert_eq!(listed.last().unwrap().archived_at, Some(10));
        push(db, &acct, "three", 1, 80.0, vec![]).await; // the freed slot
        assert_eq!(
            dashboard::set_archived(db, &acct, &one, false, Some(2), &tidemark_store::testing::audit())
                .await
                .unwrap(),
            ArchiveOutcome::NoFreeSlot { cap: 2 },
            "{backend:?}"
        );
        assert_eq!(
            dashboard::set_archived(db, &acct, &one, false, None, &tidemark_store::testing::audit())
                .await
                .unwrap(),
            ArchiveOutcome::Done
        );
        // Its history stayed readable throughout.
        assert_eq!(
            dashboard::project_history(db, &acct, &one, None, None, 500)
                .await
                .unwrap()
                .1,
            1
        );
    }
}

/// A push of `label` on `branch` at `at` with these severity counts (and as many high
/// findings), the main branch being the default.
async fn push_counts(
    db: &Writer,
    account: &tidemark_store::AccountId,
    label: &str,
    branch: &str,
    at: i64,
    counts: [u64; 4],
) {
    let findings: Vec<Value> = (0..counts[1])
        .map(|i| finding(&format!("r{i}"), "bucket", "FAIL", "high", "m"))
        .collect();
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": 50.0, "passed": 1, "failed": counts[1],
        "severity_counts": {"critical": counts[0], "high": counts[1], "medium": counts[2], "low": counts[3]},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(at),
        "git": {"branch": branch, "default_branch": "main"},
    });
    let push = ValidPush::parse(body.to_string().as_bytes()).unwrap();
    let mut ctx = tidemark_store::testing::push_context(account);
    ctx.write_limit = RollingLimit::per_minute(100_000);
    match record_push(db, ctx, push).await.unwrap() {
        PushOutcome::Appended(..) => {}
        other => panic!("push refused: {other:?}"),
    }
}

tidemark_store::test_each_backend! {
    /// The overview's roll-up, kept by each push, says what summing every default-branch scan
    /// says, day by day: with scans arriving out of time order, several a day, on other
    /// branches too, and after archiving, unarchiving and another default branch.
    async fn the_overview_roll_up_matches_every_scan_summed(backend) {
        use tidemark_domain::overview::daily_severity;
        let t = fresh(backend).await;
        let db = &t.db;
        let account = account(db).await;
        let now = tidemark_domain::now_millis();
        let day = 86_400_000;
        let days = 50;
        let check = |what: &'static str| {
            let account = account.clone();
            async move {
                let kept = tidemark_store::rollups::open_by_day(db.db(), &account, days, now)
                    .await
                    .unwrap();
                let scans = tidemark_store::testing::default_line_counts(db.db(), &account, 0)
                    .await
                    .unwrap();
                let summed = daily_severity(&scans, days, now);
                assert_eq!(kept, summed, "{backend:?}, {what}");
                assert!(summed.iter().any(|(_, c)| c.iter().sum::<i64>() > 0), "{what}: something to compare");
            }
        };
        // A fixed pseudo-random walk: which project, branch, time and counts.
        let mut x: u64 = 0x9e37_79b9;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for i in 0..80_i64 {
            let label = ["api", "web", "etl"][next(3) as usize];
            let branch = if next(4) == 0 { "feature" } else { "main" };
            // Up to 60 days back (some before the window), each push its own minute.
            let at = now - (next(60) as i64 + 1) * day + i * 60_000;
            let counts = [next(3), next(9), next(5), next(4)];
            push_counts(db, &account, label, branch, at, counts).await;
        }
        check("after the pushes").await;

        let web = dashboard::project_id_by_label(db.db(), &account, "web").await.unwrap().unwrap();
        let archived = dashboard::set_archived(db, &account, &web, true, None, &tidemark_store::testing::audit())
            .await
            .unwrap();
        assert_eq!(archived, ArchiveOutcome::Done);
        check("with web archived").await;
        dashboard::set_archived(db, &account, &web, false, None, &tidemark_store::testing::audit())
            .await
            .unwrap();
        check("with web back").await;

        let api = dashboard::project_id_by_label(db.db(), &account, "api").await.unwrap().unwrap();
        let feature = tidemark_domain::git::BranchName::parse("branch", "feature").unwrap();
        tidemark_store::branches::set_default_branch(db, &account, &api, &feature, &tidemark_store::testing::audit())
            .await
            .unwrap();
        check("with api's default branch changed").await;
        for i in 0..20_i64 {
            let at = now - (next(10) as i64 + 1) * day + (100 + i) * 60_000;
            let branch = ["main", "feature"][next(2) as usize];
            push_counts(db, &account, "api", branch, at, [next(3), next(9), next(5), next(4)]).await;
        }
        check("after more pushes").await;
        // PostgreSQL's pushes left their changes beside the kept rows: folded, they say the same.
        tidemark_store::rollup_folds::fold_account(db, &account).await.unwrap();
        check("with the changes folded").await;
        for i in 0..10_i64 {
            let at = now - (next(10) as i64 + 1) * day + (200 + i) * 60_000;
            push_counts(db, &account, "web", "main", at, [next(3), next(9), next(5), next(4)]).await;
        }
        check("with changes after a fold").await;

        // What the migration builds from the scans already stored says the same.
        let migration = include_str!("../../migrations/20261207000001_overview_rollups.sql");
        let backfill: Vec<String> = migration
            .split(';')
            .map(|s| s.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n"))
            .filter(|s| s.trim_start().starts_with("INSERT"))
            .collect();
        assert_eq!(backfill.len(), 2, "{backfill:?}");
        tidemark_store::on_db!(db.db(), pool => {
            sqlx::query("DELETE FROM line_days").execute(pool).await.unwrap();
            sqlx::query("DELETE FROM account_days").execute(pool).await.unwrap();
            sqlx::query("DELETE FROM account_day_changes").execute(pool).await.unwrap();
            for sql in &backfill {
                sqlx::query(sql).execute(pool).await.unwrap();
            }
            Ok::<_, sqlx::Error>(())
        })
        .unwrap();
        check("backfilled by the migration").await;
    }
}
