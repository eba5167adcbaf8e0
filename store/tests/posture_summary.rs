//! The account's compliance roll-up kept by the push (issue 70) says, on both backends, what
//! rolling up every active project's latest default-branch scan says: after pushes to default
//! and other branches, in several clouds, naming different frameworks (and none), after
//! archiving, unarchiving and another default branch, and as the migration builds it.
#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use tidemark_domain::posture::roll_up;
use tidemark_store::dashboard::{project_id_by_label, set_archived, ArchiveOutcome};
use tidemark_store::posture::read::account_rollup;
use tidemark_store::posture::summary::{account_posture, AccountPosture};
use tidemark_store::testing::{audit, fresh, insert_pushing_account, push_appended, push_context};
use tidemark_store::{on_db_write, AccountId, Writer};

const NOW: i64 = 1_800_000_000_000;

fn acct() -> AccountId {
    AccountId::trusted("acct_roll")
}

async fn push(db: &Writer, rng: &mut StdRng, n: i64, label: &str, branch: &str) {
    let mut frameworks: Vec<&str> = ["cis-aws-2.0", "soc2", "cis-gcp-2.0"]
        .into_iter()
        .filter(|_| rng.gen_bool(0.6))
        .collect();
    if frameworks.is_empty() {
        // Spelt like a custom framework the account lacks: the scan keeps no posture.
        frameworks.push("custom:none");
    }
    let statuses = ["PASS", "FAIL", "SKIP", "PASS"];
    let findings: Vec<Value> = (0..rng.gen_range(0..30))
        .map(|_| {
            let prefix = ["cis-aws-2.0", "soc2", "cis-gcp-2.0", "pci"][rng.gen_range(0..4)];
            json!({"rule_id": format!("{prefix}-{}.{}", rng.gen_range(1..4), rng.gen_range(1..5)),
                   "resource": format!("r{}", rng.gen_range(0..4)),
                   "status": statuses[rng.gen_range(0..4)], "severity": "high",
                   "message": "m", "remediation": "r"})
        })
        .collect();
    let (cloud, id) = [
        ("aws", "111122223333"),
        ("aws", "444455556666"),
        ("gcp", "acme-prod"),
    ][rng.gen_range(0..3)];
    let body = json!({
        "project_label": label, "cloud": cloud, "cloud_account_id": id,
        "frameworks": frameworks, "score": 70.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(NOW - 86_400_000 + n * 60_000),
        "git": {"branch": branch, "default_branch": "main"},
    });
    let mut ctx = push_context(&acct());
    ctx.now = NOW;
    push_appended(db, ctx, &body).await;
}

/// The roll-up of every project's latest scan, read project by project.
async fn summed(db: &Writer) -> AccountPosture {
    let rows = account_rollup(db.as_ref(), &acct()).await.unwrap();
    AccountPosture {
        frameworks: roll_up(
            rows.iter()
                .filter_map(|r| Some((r.framework.clone()?, r.label.clone(), r.tally))),
        ),
        cloud_accounts: roll_up(rows.iter().map(|r| {
            (
                (r.cloud.clone(), r.cloud_account_id.clone()),
                r.label.clone(),
                r.tally,
            )
        })),
    }
}

async fn check(db: &Writer, what: &str) {
    let kept = account_posture(db.as_ref(), &acct()).await.unwrap();
    let expected = summed(db).await;
    assert!(
        !expected.frameworks.is_empty(),
        "{what}: something to compare"
    );
    assert_eq!(kept, expected, "{what}");
}

tidemark_store::test_each_backend! {
    /// The kept roll-up equals the one summed project by project, after every kind of change.
    async fn the_kept_roll_up_equals_every_projects_latest_scan_rolled_up(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct()).await;
        let mut rng = StdRng::seed_from_u64(70);
        for n in 0..60 {
            let label = ["api", "web", "etl", "billing"][rng.gen_range(0..4)];
            let branch = if rng.gen_bool(0.25) { "feature" } else { "main" };
            push(&db, &mut rng, n, label, branch).await;
        }
        check(&db, &format!("{backend:?}: after the pushes")).await;

        let web = project_id_by_label(db.as_ref(), &acct(), "web").await.unwrap().unwrap();
        assert_eq!(set_archived(&db, &acct(), &web, true, None, &audit()).await.unwrap(), ArchiveOutcome::Done);
        check(&db, &format!("{backend:?}: web archived")).await;
        set_archived(&db, &acct(), &web, false, None, &audit()).await.unwrap();
        check(&db, &format!("{backend:?}: web back")).await;

        let api = project_id_by_label(db.as_ref(), &acct(), "api").await.unwrap().unwrap();
        let feature = tidemark_domain::git::BranchName::parse("branch", "feature").unwrap();
        tidemark_store::branches::set_default_branch(&db, &acct(), &api, &feature, &audit()).await.unwrap();
        check(&db, &format!("{backend:?}: api's default branch changed")).await;
        for n in 60..80 {
            let branch = ["main", "feature"][rng.gen_range(0..2)];
            push(&db, &mut rng, n, "api", branch).await;
        }
        check(&db, &format!("{backend:?}: more pushes")).await;
        // PostgreSQL's pushes left their changes beside the kept rows: folded, they say the same.
        tidemark_store::rollup_folds::fold_account(&db, &acct()).await.unwrap();
        check(&db, &format!("{backend:?}: changes folded")).await;
        for n in 80..90 {
            push(&db, &mut rng, n, "etl", "main").await;
        }
        check(&db, &format!("{backend:?}: changes after a fold")).await;

        // What the migration builds from the scans already stored says the same.
        let migration = include_str!("../../migrations/20261213000002_account_posture.sql");
        let backfill: Vec<String> = migration
            .split(';')
            .map(|s| s.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n"))
            .filter(|s| s.trim_start().starts_with("INSERT"))
            .collect();
        assert_eq!(backfill.len(), 2, "{backfill:?}");
        on_db_write!(&db, pool => {
            sqlx::query("DELETE FROM account_posture").execute(pool).await.unwrap();
            sqlx::query("DELETE FROM account_posture_changes").execute(pool).await.unwrap();
            for sql in &backfill {
                sqlx::query(sql).execute(pool).await.unwrap();
            }
        });
        check(&db, &format!("{backend:?}: built by the migration")).await;
    }
}

tidemark_store::test_each_backend! {
    /// One account's pushes to eight projects at once, with folds beside them (PostgreSQL
    /// writes them side by side, each adding its change as rows of its own): the kept roll-ups
    /// still say what every project's latest scan says, before and after a last fold.
    async fn concurrent_pushes_and_folds_keep_the_roll_ups_exact(backend) {
        use tidemark_domain::overview::daily_severity;
        use tidemark_store::rollup_folds::fold_account;
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct()).await;
        let tasks: Vec<_> = (0..8_i64)
            .map(|p| {
                let db = t.writer();
                tokio::spawn(async move {
                    let mut rng = StdRng::seed_from_u64(p as u64);
                    for n in 0..6 {
                        push(&db, &mut rng, p * 10 + n, &format!("p{p}"), "main").await;
                        if n % 3 == 2 {
                            fold_account(&db, &acct()).await.unwrap();
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let days = |what: String| {
            let db = t.writer();
            async move {
                let kept = tidemark_store::rollups::open_by_day(db.as_ref(), &acct(), 3, NOW).await.unwrap();
                let scans = tidemark_store::testing::default_line_counts(db.as_ref(), &acct(), 0).await.unwrap();
                let summed = daily_severity(&scans, 3, NOW);
                assert!(summed.iter().any(|(_, c)| c[1] > 0), "{what}: something to compare");
                assert_eq!(kept, summed, "{what}");
            }
        };
        check(&db, &format!("{backend:?}: concurrent pushes and folds")).await;
        days(format!("{backend:?}: days after concurrent pushes and folds")).await;
        fold_account(&db, &acct()).await.unwrap();
        check(&db, &format!("{backend:?}: folded")).await;
        days(format!("{backend:?}: days folded")).await;
        let left: i64 = tidemark_store::on_db!(db.as_ref(), pool => {
            sqlx::query_scalar(
                "SELECT (SELECT COUNT(*) FROM account_posture_changes) \
                 + (SELECT COUNT(*) FROM account_day_changes)",
            )
            .fetch_one(pool)
            .await
        })
        .unwrap();
        assert_eq!(left, 0, "{backend:?}: a fold leaves no change behind");
    }
}
