//! The projects page is chosen by the database (issue 70): on both backends, every page of
//! every order, with and without a name filter, is exactly the slice
//! `tidemark_domain::project_order` makes of the whole account, for projects shaped as users
//! make them: names differing only in case, non-ASCII names, equal scores, scans in the same
//! minute, archived projects and projects without a scan.
#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use serde_json::json;
use tidemark_domain::project_order::{compare, filter_needle, matches, OrderKeys, ProjectOrder};
use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{list_project_heads, project_page, project_page_rows, ProjectRow};
use tidemark_store::pushes::record_push;
use tidemark_store::testing::{appended, fresh, insert_pushing_account, push_context};
use tidemark_store::{on_db, on_db_write, AccountId, Writer};

const NOW: i64 = 1_800_000_000_000;

fn acct() -> AccountId {
    AccountId::trusted("acct_pages")
}

async fn push(db: &Writer, label: &str, score: f64, at: i64) {
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis"], "score": score, "passed": 1, "failed": 0,
        "severity_counts": {"critical": 0, "high": 0, "medium": 0, "low": 0},
        "findings": [], "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(at),
    });
    let mut ctx = push_context(&acct());
    ctx.now = NOW;
    let push = ValidPush::parse(body.to_string().as_bytes()).unwrap();
    appended(record_push(db, ctx, push).await.unwrap());
}

fn keys(r: &ProjectRow) -> OrderKeys<'_> {
    OrderKeys {
        label: &r.label,
        archived: r.archived_at.is_some(),
        last_score: r.last_score,
        last_delta: r.last_delta,
        last_scanned_at: r.last_scanned_at,
    }
}

tidemark_store::test_each_backend! {
    /// 120 projects: every page of every order and filter matches the rule's slice.
    async fn every_page_is_the_slice_the_order_rule_makes(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct()).await;
        let mut rng = StdRng::seed_from_u64(70);
        let stems = ["api", "API", "Api", "web", "Ärger", "ärger", "db-1", "db-10", "db_2", "Zeta", "ßig"];
        let mut labels = Vec::new();
        for i in 0..114 {
            let stem = stems[i % stems.len()];
            let label = if i < stems.len() { stem.to_owned() } else { format!("{stem}-{}", rng.gen_range(0..40)) };
            if labels.contains(&label) {
                continue;
            }
            labels.push(label.clone());
            // Few distinct scores and minutes: many ties for the name to break.
            let minute = rng.gen_range(0..5) * 60_000 + rng.gen_range(0..59_000);
            push(&db, &label, f64::from(rng.gen_range(0..4) * 25), NOW - 3_600_000 + minute).await;
            if rng.gen_bool(0.4) {
                push(&db, &label, f64::from(rng.gen_range(0..4) * 25), NOW - 600_000 + minute).await;
            }
        }
        // Archived ones, and projects made by an older release that have no scan yet.
        on_db_write!(&db, pool => {
            sqlx::query("UPDATE projects SET archived_at = $1 WHERE label LIKE '%-1%'")
                .bind(NOW).execute(pool).await.unwrap();
            for (n, label) in ["unscanned", "Unscanned-2", "ärger-new"].iter().enumerate() {
                sqlx::query("INSERT INTO projects (id, account_id, label, created_at) VALUES ($1, $2, $3, $4)")
                    .bind(format!("prj_unscanned{n}")).bind(acct().as_str()).bind(*label).bind(NOW)
                    .execute(pool).await.unwrap();
            }
        });
        let all = list_project_heads(&db, &acct()).await.unwrap();
        assert!(all.len() > 100, "{}", all.len());
        assert!(all.iter().any(|r| r.archived_at.is_some()));

        // The row keeps the default line's latest scan time as the line's head says it.
        let heads: Vec<(String, Option<i64>, Option<i64>)> = on_db!(&db, pool => sqlx::query_as(
            "SELECT p.label, p.last_scanned_at, s.scanned_at FROM projects p \
             LEFT JOIN branches d ON d.id = p.default_branch_id \
             LEFT JOIN scans s ON s.project_id = p.id AND s.seq = d.head_seq")
            .fetch_all(pool).await).unwrap();
        for (label, kept, head) in &heads {
            assert_eq!(kept, head, "{backend:?}: {label}");
        }

        // The migration's key for the projects stored before it is the push's key.
        let migration = include_str!("../../migrations/20261213000001_project_order.sql");
        let backfill = migration
            .split(';')
            .find(|s| s.contains("SET name_key"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect::<Vec<_>>()
            .join("\n");
        let keys_before: Vec<(String, Option<String>)> = on_db!(&db, pool => sqlx::query_as(
            "SELECT label, name_key FROM projects ORDER BY id").fetch_all(pool).await).unwrap();
        on_db_write!(&db, pool => {
            sqlx::query(&backfill).execute(pool).await.unwrap();
        });
        let keys_after: Vec<(String, Option<String>)> = on_db!(&db, pool => sqlx::query_as(
            "SELECT label, name_key FROM projects ORDER BY id").fetch_all(pool).await).unwrap();
        for ((label, pushed), (_, migrated)) in keys_before.iter().zip(&keys_after) {
            let rule = tidemark_domain::project_order::name_key(label);
            assert_eq!(migrated.as_deref(), Some(rule.as_str()), "{backend:?}: {label}");
            if let Some(pushed) = pushed {
                assert_eq!(pushed, &rule);
            }
        }
        // Back to rows as an older release leaves them, for the pages below.
        on_db_write!(&db, pool => {
            sqlx::query("UPDATE projects SET name_key = NULL WHERE id LIKE 'prj_unscanned%'")
                .execute(pool).await.unwrap();
        });

        let orders = [ProjectOrder::Name, ProjectOrder::Score, ProjectOrder::Change, ProjectOrder::LastScan];
        for order in orders {
            for filter in ["", "api", " ÄRGER", "db-1", "nothing-matches"] {
                let needle = filter_needle(filter);
                let mut expected: Vec<&ProjectRow> = all.iter().filter(|r| matches(&r.label, &needle)).collect();
                expected.sort_by(|a, b| compare(order, &keys(a), &keys(b)));
                let expected: Vec<&str> = expected.iter().map(|r| r.label.as_str()).collect();
                let first = project_page(&db, &acct(), order, &needle, 1).await.unwrap();
                assert_eq!(first.matching as usize, expected.len(), "{backend:?} {order:?} {filter:?}");
                assert_eq!(first.total as usize, all.len());
                assert_eq!(first.active as usize, all.iter().filter(|r| r.archived_at.is_none()).count());
                let mut got = Vec::new();
                for page in 1..=first.pages {
                    let chosen = project_page(&db, &acct(), order, &needle, page).await.unwrap();
                    assert_eq!(chosen.page, page);
                    // The glance's rows are the same page's.
                    let bare = project_page_rows(&db, &acct(), order, &needle, page).await.unwrap();
                    let ids = |rows: &[ProjectRow]| rows.iter().map(|r| r.id.clone()).collect::<Vec<_>>();
                    assert_eq!(ids(&bare), ids(&chosen.rows), "{backend:?} {order:?} {filter:?} page {page}");
                    got.extend(chosen.rows.into_iter().map(|r| r.label));
                }
                assert_eq!(got, expected, "{backend:?} {order:?} {filter:?}");
                // Past the end is the last page; the page's rows carry their sparklines.
                let past = project_page(&db, &acct(), order, &needle, 999).await.unwrap();
                assert_eq!(past.page, first.pages);
                if needle.is_empty() {
                    assert!(first.rows.iter().filter(|r| r.scan_count > 0).all(|r| !r.recent_scores.is_empty()));
                }
            }
        }
    }
}

tidemark_store::test_each_backend! {
    /// The overview names the first failing projects by name and counts the rest; archived
    /// ones are not counted.
    async fn failing_projects_are_named_up_to_the_limit_and_counted(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct()).await;
        for i in 0..15 {
            push(&db, &format!("svc-{i:02}"), 50.0, NOW - 60_000).await;
        }
        on_db_write!(&db, pool => {
            sqlx::query("UPDATE projects SET last_gate_status = 'failed', \
                         last_gate_reasons = '[\"score 50 is below 80\"]' WHERE label < 'svc-13'")
                .execute(pool).await.unwrap();
            sqlx::query("UPDATE projects SET archived_at = $1 WHERE label = 'svc-00'")
                .bind(NOW).execute(pool).await.unwrap();
        });
        let (named, total) = tidemark_store::dashboard::failing_projects(&db, &acct(), 10).await.unwrap();
        assert_eq!(total, 12, "{backend:?}: svc-01 … svc-12");
        let labels: Vec<&str> = named.iter().map(|(_, l, _)| l.as_str()).collect();
        assert_eq!(labels, (1..=10).map(|i| format!("svc-{i:02}")).collect::<Vec<_>>());
        assert_eq!(named[0].2, ["score 50 is below 80"]);
    }
}
