//! Housekeeping on both backends (issue 36): over two months of pushes to a default branch and
//! a pull request, one pass thins exactly what the policy says, every scan it keeps reads as
//! before, the history keeps every scan's row, spans nothing needs go, and a pass stopped
//! half-way leaves a consistent database. Leases keep two replicas from cleaning at once.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use tidemark_domain::housekeeping::Policy;
use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{find_scan, list_findings, list_scans, FindingFilter, FindingRow};
use tidemark_store::housekeeping::{
    collect_spans, is_thinned, lines, plan_all, plan_line, thin_scans, SCANS_PER_BATCH,
};
use tidemark_store::pushes::{record_push, StoredScan};
use tidemark_store::testing::{appended, fresh, insert_pushing_account, push_context};
use tidemark_store::{leases, on_db, ProjectId, ScanId, Writer};

const DAY: i64 = 86_400_000;
/// 2027-01-15 08:00 UTC: "now" for the pass.
const NOW: i64 = 1_800_000_000_000;

fn push(at: i64, n: usize, score: f64, git: Value) -> ValidPush {
    let findings: Vec<Value> = (0..12)
        .map(|i| {
            json!({"rule_id": format!("cis-{i}"), "resource": "bucket",
                   "status": if i < n { "FAIL" } else { "PASS" }, "severity": "high",
                   "message": format!("check {i}"), "remediation": "fix it"})
        })
        .collect();
    let body = json!({
        "project_label": "api", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis"], "score": score, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(at), "git": git,
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

async fn pushed(db: &Writer, at: i64, p: ValidPush) -> StoredScan {
    let mut ctx = push_context(&acct("acct_a"));
    ctx.now = at;
    appended(record_push(db, ctx, p).await.unwrap())
}

async fn findings_of(db: &Writer, project: &ProjectId, scan_id: &ScanId) -> Vec<FindingRow> {
    let (scan, _) = find_scan(db.as_ref(), &acct("acct_a"), project, scan_id)
        .await
        .unwrap()
        .unwrap();
    list_findings(
        db.as_ref(),
        project,
        scan.seq,
        &FindingFilter::default(),
        0,
        1000,
    )
    .await
    .unwrap()
    .0
}

async fn count(db: &Writer, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    on_db!(db, pool => sqlx::query_scalar(&sql).fetch_one(pool).await).unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_pass_thins_old_detail_and_keeps_what_it_must(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let main = json!({"branch": "main", "default_branch": "main"});
        // Main: a scan every 12 hours for 60 days, the failing count wandering.
        let mut scans = Vec::new();
        for i in 0..120 {
            let at = NOW - 60 * DAY + i * DAY / 2;
            let n = (i as usize * 7) % 5;
            scans.push((at, pushed(&db, at, push(at, n, 70.0 + n as f64, main.clone())).await));
        }
        // A pull request pushed three times 40 days ago, compared with main then.
        let pr = json!({"branch": "feature", "default_branch": "main",
                        "pull_request": {"number": 7, "base_branch": "main"}});
        let mut pr_scans = Vec::new();
        for i in 0..3 {
            let at = NOW - 40 * DAY + i * 3_600_000;
            pr_scans.push(pushed(&db, at, push(at, i as usize, 60.0, pr.clone())).await);
        }
        let project = scans[0].1.project_id.clone();
        let mut before = Vec::new();
        for (_, s) in scans.iter() {
            before.push(findings_of(&db, &project, &s.scan_id).await);
        }
        let spans_before = count(&db, "finding_spans").await;

        // A dry run counts and changes nothing.
        let policy = Policy::default();
        let planned = plan_all(db.as_ref(), NOW, &policy).await.unwrap();
        let dry: u64 = planned.iter().map(|(_, seqs)| seqs.len() as u64).sum();
        assert!(dry > 0, "{planned:?}");
        assert_eq!(count(&db, "finding_spans").await, spans_before);

        // Stopped after its first batch (as if killed): every scan reads as before or is gone.
        let (line, seqs) = planned.iter().max_by_key(|(_, seqs)| seqs.len()).unwrap();
        thin_scans(&db, &line.account_id, &line.project_id, &seqs[..3]).await.unwrap();
        for ((_, s), expected) in scans.iter().zip(&before) {
            let (row, _) = find_scan(db.as_ref(), &acct("acct_a"), &project, &s.scan_id).await.unwrap().unwrap();
            if !is_thinned(db.as_ref(), &project, row.seq).await.unwrap() {
                assert_eq!(&findings_of(&db, &project, &s.scan_id).await, expected);
            }
        }

        // The rest, a line at a time as the server's worker does (its lease and pacing are
        // tested with it, in the server's tests).
        let (mut thinned_now, mut spans_removed) = (0, 0);
        for (line, seqs) in plan_all(db.as_ref(), NOW, &policy).await.unwrap() {
            for chunk in seqs.chunks(SCANS_PER_BATCH) {
                thinned_now += thin_scans(&db, &line.account_id, &line.project_id, chunk).await.unwrap();
            }
            spans_removed += collect_spans(&db, &line.account_id, &line).await.unwrap();
        }
        assert_eq!(thinned_now + 3, dry, "{backend:?}");
        assert!(spans_removed > 0, "{backend:?}");
        assert!(count(&db, "finding_spans").await < spans_before);

        let mut thinned = 0;
        let mut kept_by_day = std::collections::BTreeMap::<i64, usize>::new();
        for ((at, s), expected) in scans.iter().zip(&before) {
            let (row, _) = find_scan(db.as_ref(), &acct("acct_a"), &project, &s.scan_id).await.unwrap().unwrap();
            if is_thinned(db.as_ref(), &project, row.seq).await.unwrap() {
                thinned += 1;
                assert!(NOW - at >= DAY, "{backend:?}: a scan of the last day was thinned");
            } else {
                // Everything kept reads exactly as before.
                assert_eq!(&findings_of(&db, &project, &s.scan_id).await, expected, "{backend:?}");
                if (2 * DAY..29 * DAY).contains(&(NOW - at)) {
                    *kept_by_day.entry(at.div_euclid(DAY)).or_default() += 1;
                }
            }
        }
        assert!(thinned > 40, "{backend:?}: {thinned}");
        // Between a day and a month old, the latest scan of each day stays (and, one day, the
        // scan the pull request was compared with).
        assert!(kept_by_day.values().filter(|&&n| n > 1).count() <= 1, "{kept_by_day:?}");
        assert!(kept_by_day.len() >= 26, "{kept_by_day:?}");
        // Every scan's row stays: the score history does not thin.
        let rows = list_scans(db.as_ref(), &acct("acct_a"), &project, None, 0, 1000).await.unwrap();
        assert_eq!(rows.len(), 123);
        // The latest scan of the pull request stays (its next push is compared with it);
        // its earlier ones went with it quiet for 40 days. Main's latest stays.
        let pr_seq = |s: &StoredScan| {
            let s = s.scan_id.clone();
            let db = &db;
            let project = project.clone();
            async move { find_scan(db.as_ref(), &acct("acct_a"), &project, &s).await.unwrap().unwrap().0.seq }
        };
        assert!(is_thinned(db.as_ref(), &project, pr_seq(&pr_scans[0]).await).await.unwrap());
        assert!(!is_thinned(db.as_ref(), &project, pr_seq(&pr_scans[2]).await).await.unwrap());
        assert!(!is_thinned(db.as_ref(), &project, pr_seq(&scans[119].1).await).await.unwrap());
        // The scans the pull request was judged against stay.
        let (pr_row, _) = find_scan(db.as_ref(), &acct("acct_a"), &project, &pr_scans[0].scan_id).await.unwrap().unwrap();
        let base = pr_row.base_seq.unwrap();
        assert!(!is_thinned(db.as_ref(), &project, base).await.unwrap(), "{backend:?}");

        // A second pass finds nothing more to do.
        let again = plan_all(db.as_ref(), NOW, &policy).await.unwrap();
        assert!(again.iter().all(|(_, seqs)| seqs.is_empty()), "{backend:?}");
        for (line, _) in &again {
            assert_eq!(collect_spans(&db, &line.account_id, line).await.unwrap(), 0, "{backend:?}");
        }
        assert_eq!(lines(db.as_ref()).await.unwrap().len(), 2);
        let (left, _) = plan_line(db.as_ref(), &lines(db.as_ref()).await.unwrap()[0], NOW, &policy).await.unwrap();
        assert!(left.is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn one_replica_at_a_time_holds_the_lease(backend) {
        let t = fresh(backend).await;
        let db = &t.db;
        assert!(leases::acquire(db, "housekeeping", "a", 1_000, 60_000).await.unwrap());
        assert!(!leases::acquire(db, "housekeeping", "b", 2_000, 60_000).await.unwrap(), "{backend:?}");
        // The holder renews it; another takes it only once it lapses.
        assert!(leases::acquire(db, "housekeeping", "a", 30_000, 60_000).await.unwrap());
        assert!(!leases::acquire(db, "housekeeping", "b", 89_999, 60_000).await.unwrap());
        assert!(leases::acquire(db, "housekeeping", "b", 90_000, 60_000).await.unwrap());
        assert!(!leases::acquire(db, "housekeeping", "a", 90_001, 60_000).await.unwrap());
        let holder = |now| async move { leases::holder(db.as_ref(), "housekeeping", now).await.unwrap() };
        let held = holder(90_001).await.unwrap();
        assert_eq!((held.holder.as_str(), held.expires_at), ("b", 150_000), "{backend:?}");
        leases::release(db, "housekeeping", "a").await.unwrap();
        assert_eq!(holder(90_001).await.map(|h| h.holder).as_deref(), Some("b"));
        leases::release(db, "housekeeping", "b").await.unwrap();
        assert!(leases::acquire(db, "housekeeping", "a", 90_002, 60_000).await.unwrap());
        // Taken over (an operator's --force for a holder known dead): the new holder has it,
        // and the old one finds it gone at its next renewal.
        leases::take_over(db, "housekeeping", "c", 100_000, 60_000).await.unwrap();
        assert!(!leases::acquire(db, "housekeeping", "a", 100_001, 60_000).await.unwrap());
        assert_eq!(holder(100_001).await.map(|h| h.holder).as_deref(), Some("c"));
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}

/// Housekeeping's steps on PostgreSQL hold up a push to their own project only: with a push to
/// project `api` held open, a step on project `web` goes through at once, and a step on `api`
/// waits for that push to end (it used to take the account's lock and queue every push of a
/// large account behind it).
#[tokio::test]
async fn a_housekeeping_step_waits_only_for_its_own_project() {
    use std::time::Duration;
    use tidemark_store::housekeeping::HousekeptLine;
    use tidemark_store::testing::{plain_push, postgres_backend, PUSH_LOCKS};
    let Some(backend) = postgres_backend() else {
        return; // TIDEMARK_TEST_SKIP_POSTGRES=1: SQLite only, on purpose
    };
    let t = fresh(backend).await;
    let db = t.writer();
    insert_pushing_account(&db, "acct_a").await;
    for label in ["api", "web"] {
        let ctx = push_context(&acct("acct_a"));
        appended(
            record_push(&db, ctx, plain_push(label, 1, 80.0))
                .await
                .unwrap(),
        );
    }
    let all = lines(db.as_ref()).await.unwrap();
    let line = |label: &str| -> HousekeptLine {
        all.iter()
            .find(|l| l.project_label == label)
            .unwrap()
            .clone()
    };
    let tidemark_store::Db::Postgres(pool) = db.db() else {
        unreachable!("a PostgreSQL test database")
    };
    let mut held = pool.begin().await.unwrap();
    sqlx::query(PUSH_LOCKS)
        .bind("acct_a")
        .bind("api")
        .execute(&mut *held)
        .await
        .unwrap();

    let web = line("web");
    let account = acct("acct_a");
    tokio::time::timeout(Duration::from_secs(5), collect_spans(&db, &account, &web))
        .await
        .expect("a step on another project does not wait for the held push")
        .unwrap();
    let own = tokio::spawn({
        let (db, line) = (t.writer(), line("api"));
        async move { collect_spans(&db, &acct("acct_a"), &line).await }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !own.is_finished(),
        "a step on the held push's project waits for it"
    );
    held.rollback().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), own)
        .await
        .expect("and goes on once the push ends")
        .unwrap()
        .unwrap();
}
