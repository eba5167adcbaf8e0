//! What projects take, measured off the request path (issue 70) on both backends: readers get
//! the last measurement; a push, housekeeping's thinning and a measurement's age make a
//! project stale, and only stale projects are measured again, within the caller's allowance.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::json;
use tidemark_domain::push::ValidPush;
use tidemark_store::housekeeping::thin_scans;
use tidemark_store::pushes::{record_push, StoredScan};
use tidemark_store::testing::{appended, fresh, insert_pushing_account, push_context};
use tidemark_store::usage::{project_bytes, refresh_stale, stale_projects, Allowance};
use tidemark_store::{on_db, AccountId, ProjectId, Writer};

const DAY: i64 = 86_400_000;
const NOW: i64 = 1_800_000_000_000;
const ALL: Allowance = Allowance {
    projects: 100,
    time: Duration::from_secs(60),
    settle: Duration::ZERO,
};

fn acct() -> AccountId {
    AccountId::trusted("acct_u")
}

async fn push(db: &Writer, label: &str, at: i64, failing: usize) -> StoredScan {
    let findings: Vec<_> = (0..20)
        .map(|i| {
            json!({"rule_id": format!("cis-{i}"), "resource": format!("bucket-{label}"),
                   "status": if i < failing { "FAIL" } else if i % 7 == 0 { "SKIP" } else { "PASS" },
                   "severity": "high", "message": format!("check {i} of {label}"), "remediation": "fix it"})
        })
        .collect();
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis"], "score": 80.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(at),
        "git": {"branch": "main", "default_branch": "main"},
    });
    let mut ctx = push_context(&acct());
    ctx.now = at;
    let push = ValidPush::parse(body.to_string().as_bytes()).unwrap();
    appended(record_push(db, ctx, push).await.unwrap())
}

async fn bytes_of(db: &Writer, project: &ProjectId) -> Option<i64> {
    let rows = project_bytes(db, &acct()).await.unwrap();
    rows.into_iter()
        .find(|r| r.project_id == *project)
        .unwrap()
        .bytes
}

tidemark_store::test_each_backend! {
    /// Measured once, read as measured; stale again only when something moved.
    async fn projects_are_measured_when_stale_and_read_as_measured(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct()).await;
        let web = push(&db, "web", NOW - 3 * DAY, 4).await.project_id;
        let api = push(&db, "api", NOW - 3 * DAY, 2).await.project_id;
        push(&db, "web", NOW - 2 * DAY, 5).await;

        // Nothing measured yet: the projects are listed, without a size.
        let listed = project_bytes(&db, &acct()).await.unwrap();
        assert_eq!(listed.len(), 2, "{backend:?}");
        assert!(listed.iter().all(|r| r.bytes.is_none() && r.measured_at.is_none()));
        assert_eq!(listed.iter().find(|r| r.project_id == web).unwrap().scans, 2);
        assert_eq!(stale_projects(&db, Some(&acct()), NOW, Duration::ZERO, 10).await.unwrap().len(), 2);
        assert_eq!(stale_projects(&db, Some(&AccountId::trusted("acct_other")), NOW, Duration::ZERO, 10).await.unwrap().len(), 0);

        // The allowance bounds the work; the rest waits for the next call.
        let one = Allowance { projects: 1, ..ALL };
        assert_eq!(refresh_stale(&db, Some(&acct()), NOW, one).await.unwrap(), 1);
        assert_eq!(refresh_stale(&db, None, NOW, ALL).await.unwrap(), 1, "{backend:?}");
        assert_eq!(refresh_stale(&db, None, NOW, ALL).await.unwrap(), 0, "nothing moved");
        let web_bytes = bytes_of(&db, &web).await.unwrap();
        let api_bytes = bytes_of(&db, &api).await.unwrap();
        assert!(web_bytes > api_bytes && api_bytes > 1_000, "{backend:?}: {web_bytes} {api_bytes}");
        let listed = project_bytes(&db, &acct()).await.unwrap();
        assert_eq!(listed[0].project_id, web, "largest first");
        assert_eq!(listed[0].measured_at, Some(NOW));

        // Every tracked finding is reached through its project's lines (the index the
        // measurement uses), none missed.
        let (direct, by_line): (i64, i64) = on_db!(&db, pool => sqlx::query_as(
            "SELECT (SELECT COUNT(*) FROM tracked_findings WHERE project_id = $1), \
             (SELECT COUNT(*) FROM tracked_findings tf JOIN branches b ON b.id = tf.branch_id \
              WHERE b.project_id = $2)")
            .bind(&web).bind(&web).fetch_one(pool).await).unwrap();
        assert!(direct > 0);
        assert_eq!(direct, by_line, "{backend:?}");

        // A push makes its project stale, and only it; measuring again finds it grown.
        let third = push(&db, "web", NOW - DAY, 9).await;
        assert_eq!(stale_projects(&db, None, NOW, Duration::ZERO, 10).await.unwrap(), vec![web.clone()]);
        assert_eq!(bytes_of(&db, &web).await, Some(web_bytes), "read as last measured");
        // The worker waits until the measurement has settled: not a second after it, five
        // minutes after it yes.
        let settled = Allowance { settle: Duration::from_secs(300), ..ALL };
        assert_eq!(stale_projects(&db, None, NOW + 1_000, settled.settle, 10).await.unwrap().len(), 0, "{backend:?}");
        assert_eq!(refresh_stale(&db, None, NOW + 1_000, settled).await.unwrap(), 0);
        assert_eq!(stale_projects(&db, None, NOW + 300_000, settled.settle, 10).await.unwrap(), vec![web.clone()]);
        refresh_stale(&db, None, NOW, ALL).await.unwrap();
        let grown = bytes_of(&db, &web).await.unwrap();
        assert!(grown > web_bytes, "{backend:?}: {grown} <= {web_bytes}");

        // Housekeeping's thinning makes it stale too; the measurement then says so.
        let seqs: Vec<i64> = on_db!(&db, pool => sqlx::query_scalar(
            "SELECT seq FROM scans WHERE project_id = $1 AND scan_id <> $2 ORDER BY seq")
            .bind(&web).bind(&third.scan_id).fetch_all(pool).await).unwrap();
        assert_eq!(thin_scans(&db, &acct(), &web, &seqs).await.unwrap(), 2);
        assert_eq!(stale_projects(&db, None, NOW, Duration::ZERO, 10).await.unwrap(), vec![web.clone()]);
        refresh_stale(&db, None, NOW, ALL).await.unwrap();
        let listed = project_bytes(&db, &acct()).await.unwrap();
        let web_row = listed.iter().find(|r| r.project_id == web).unwrap();
        assert_eq!(web_row.scans_thinned, 2, "{backend:?}");
        assert_eq!(web_row.scans, 3);

        // A measurement a day old is taken again even if nothing said it moved.
        assert!(stale_projects(&db, None, NOW + DAY - 1, Duration::ZERO, 10).await.unwrap().is_empty());
        assert_eq!(stale_projects(&db, None, NOW + DAY + 1, Duration::ZERO, 10).await.unwrap().len(), 2);
    }
}
