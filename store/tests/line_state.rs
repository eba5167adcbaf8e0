//! A push that skips reading its line's state because this replica keeps it (issue 70,
//! `pushes::line_state`) writes exactly the rows a push that reads it writes: two accounts
//! receive the same random history (default line and a branch; PASS, FAIL and SKIP; severities
//! that change; findings that go and come back; duplicates), one always read afresh, the other
//! with copies kept, gone stale (another replica pushed meanwhile), cleared by another
//! writer, or left behind by a push of a replica of the previous release (which moves the line
//! but not its token). Every kept copy is checked against the database after each push (PostgreSQL keeps
//! them; on SQLite the same history checks the rows only).
#![allow(clippy::unwrap_used)]

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use tidemark_domain::git::{branch_ref_key, BranchName};
use tidemark_store::pushes::line_state::testing::{copy, forget, kept_is_true, put_back};
use tidemark_store::testing::{fresh, insert_pushing_account, push_appended, push_context};
use tidemark_store::{on_db, on_db_write, Backend, Writer};

const NOW: i64 = 1_800_000_000_000;
const READ_AFRESH: &str = "acct_afresh";
const KEPT: &str = "acct_kept";

/// One step of the history: which project and line, and the findings.
struct Step {
    label: &'static str,
    branch: &'static str,
    findings: Vec<Value>,
    /// What happens to the kept account's copy around the push.
    twist: Twist,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Twist {
    None,
    /// Another replica pushes this one: this replica's copy is older than the line.
    StaleCopy,
    /// This replica has no copy.
    Forgotten,
    /// Another writer cleared the line's token.
    Cleared,
    /// A replica of the previous release pushed: the line moved, its token did not.
    OldRelease,
}

fn history(rng: &mut StdRng) -> Vec<Step> {
    let statuses = ["PASS", "FAIL", "SKIP", "FAIL"];
    let severities = ["high", "low", "critical"];
    (0..48)
        .map(|_| {
            let findings = (0..rng.gen_range(0..40))
                .map(|_| {
                    json!({"rule_id": format!("cis-aws-2.0-{}.{}", rng.gen_range(1..4), rng.gen_range(1..6)),
                           "resource": format!("r{}", rng.gen_range(0..4)),
                           "status": statuses[rng.gen_range(0..4)],
                           "severity": severities[rng.gen_range(0..3)],
                           "message": format!("m{}", rng.gen_range(0..2)), "remediation": "r"})
                })
                .collect();
            Step {
                label: ["api", "web"][rng.gen_range(0..2)],
                branch: if rng.gen_bool(0.3) { "feature" } else { "main" },
                findings,
                twist: [
                    Twist::None,
                    Twist::None,
                    Twist::None,
                    Twist::None,
                    Twist::StaleCopy,
                    Twist::Forgotten,
                    Twist::Cleared,
                    Twist::OldRelease,
                ][rng.gen_range(0..8)],
            }
        })
        .collect()
}

/// The key a push names its line by (the default line too: the first push names it "main").
fn line_key(branch: &str) -> String {
    branch_ref_key(&BranchName::parse("branch", branch).unwrap())
}

async fn push(db: &Writer, account: &str, n: i64, step: &Step) {
    let body = json!({
        "project_label": step.label, "cloud": "aws", "cloud_account_id": "111122223333",
        "frameworks": ["cis-aws-2.0"], "score": 70.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": step.findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(NOW - 86_400_000 + n * 60_000),
        "git": {"branch": step.branch, "default_branch": "main"},
    });
    let mut ctx = push_context(account);
    ctx.now = NOW;
    ctx.drift_detection = true;
    push_appended(db, ctx, &body).await;
}

type SpanRow = (
    String,
    String,
    i64,
    i64,
    i64,
    String,
    String,
    String,
    String,
    String,
);
type TrackedRow = (
    String,
    String,
    String,
    String,
    String,
    i64,
    i64,
    Option<i64>,
    i64,
);
type ScanRow = (String, i64, f64, Option<String>, Option<String>);

/// Every span, tracked finding and scan of the account, by project label and line key.
async fn rows(db: &Writer, account: &str) -> (Vec<SpanRow>, Vec<TrackedRow>, Vec<ScanRow>) {
    on_db!(db.as_ref(), pool => {
        async {
            let spans = sqlx::query_as(
                "SELECT p.label, b.ref_key, sp.position, sp.from_seq, sp.to_seq, sp.rule_id, \
                 sp.resource, sp.status, sp.severity, sp.text_hash \
                 FROM finding_spans sp JOIN branches b ON b.id = sp.branch_id \
                 JOIN projects p ON p.id = b.project_id WHERE p.account_id = $1 \
                 ORDER BY 1, 2, 3, 4",
            )
            .bind(account)
            .fetch_all(pool)
            .await?;
            let tracked = sqlx::query_as(
                "SELECT p.label, b.ref_key, t.rule_id, t.resource, t.severity, t.first_seq, \
                 t.last_seq, t.fixed_seq, t.reopened_count \
                 FROM tracked_findings t JOIN branches b ON b.id = t.branch_id \
                 JOIN projects p ON p.id = b.project_id WHERE p.account_id = $1 \
                 ORDER BY 1, 2, 3, 4",
            )
            .bind(account)
            .fetch_all(pool)
            .await?;
            let scans = sqlx::query_as(
                "SELECT p.label, s.seq, s.score_delta, s.drifted, s.gate_status FROM scans s \
                 JOIN projects p ON p.id = s.project_id WHERE p.account_id = $1 ORDER BY 1, 2",
            )
            .bind(account)
            .fetch_all(pool)
            .await?;
            Ok::<_, sqlx::Error>((spans, tracked, scans))
        }
        .await
    })
    .unwrap()
}

tidemark_store::test_each_backend! {
    /// Kept, stale, forgotten or cleared, the kept account's rows are the read-afresh one's.
    async fn a_push_on_a_kept_line_state_writes_what_a_push_reading_it_writes(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, READ_AFRESH).await;
        insert_pushing_account(&db, KEPT).await;
        let steps = history(&mut StdRng::seed_from_u64(70));
        let keeps = backend == Backend::Postgres;
        let mut used_kept = 0;
        let mut went_stale = 0;
        for (n, step) in (0_i64..).zip(&steps) {
            let key = line_key(step.branch);
            forget(READ_AFRESH, step.label, &key);
            push(&db, READ_AFRESH, n, step).await;

            if keeps && kept_is_true(db.as_ref(), KEPT, step.label, &key).await.unwrap() == Some(true) {
                used_kept += 1;
            }
            let mut stale_back = false;
            match step.twist {
                Twist::None => push(&db, KEPT, n, step).await,
                Twist::StaleCopy => {
                    let stale = copy(KEPT, step.label, &key);
                    forget(KEPT, step.label, &key);
                    push(&db, KEPT, n, step).await;
                    if let Some(stale) = stale {
                        put_back(stale);
                        stale_back = true;
                        went_stale += 1;
                    }
                }
                Twist::OldRelease => {
                    let stale = copy(KEPT, step.label, &key);
                    forget(KEPT, step.label, &key);
                    push(&db, KEPT, n, step).await;
                    if let Some(stale) = stale {
                        // The line as an older replica leaves it: moved on, the token as it was.
                        on_db_write!(&db, pool => {
                            sqlx::query(
                                "UPDATE branches SET live_token = $1 WHERE account_id = $2 \
                                 AND ref_key = $3 AND project_id = \
                                 (SELECT id FROM projects WHERE account_id = $4 AND label = $5)",
                            )
                            .bind(stale.token())
                            .bind(KEPT)
                            .bind(&key)
                            .bind(KEPT)
                            .bind(step.label)
                            .execute(pool)
                            .await
                            .unwrap();
                        });
                        put_back(stale);
                        stale_back = true;
                        went_stale += 1;
                    }
                }
                Twist::Forgotten => {
                    forget(KEPT, step.label, &key);
                    push(&db, KEPT, n, step).await;
                }
                Twist::Cleared => {
                    on_db_write!(&db, pool => {
                        sqlx::query(
                            "UPDATE branches SET live_token = NULL WHERE account_id = $1",
                        )
                        .bind(KEPT)
                        .execute(pool)
                        .await
                        .unwrap();
                    });
                    push(&db, KEPT, n, step).await;
                }
            }
            let kept = kept_is_true(db.as_ref(), KEPT, step.label, &key).await.unwrap();
            match (keeps, stale_back) {
                // A stale copy is back in place: the line's token is not its own.
                (true, true) => assert_eq!(kept, None, "step {n}: a stale copy matches"),
                (true, false) => assert_eq!(kept, Some(true), "step {n} ({:?})", step.twist),
                (false, _) => assert_eq!(kept, None, "SQLite keeps nothing"),
            }
        }
        if keeps {
            assert!(used_kept > 10 && went_stale > 2, "kept {used_kept}, stale {went_stale}");
        }
        let (afresh, kept) = (rows(&db, READ_AFRESH).await, rows(&db, KEPT).await);
        assert!(afresh.0.len() > 100 && afresh.1.len() > 20, "a history to compare");
        assert_eq!(afresh.0, kept.0, "spans");
        assert_eq!(afresh.1, kept.1, "tracked findings");
        assert_eq!(afresh.2, kept.2, "scans");
    }
}
