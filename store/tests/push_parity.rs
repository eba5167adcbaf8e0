//! SQLite's pushes planned before the writer's turn (`pushes::early`) write exactly what the
//! writer deciding every push writes: random histories (three accounts, branches and pull
//! requests on old bases, PASS and SKIP beside FAIL, thinned scans, replays, scans in one
//! second, a project cap, a tight write budget, drift) go through both paths, batch by batch,
//! with changes landing between the early decisions and the writer's turn (a gate, triage, an
//! archived project, a revoked key, a line's state token cleared as housekeeping does), and
//! every answer and every row the pushes write are compared.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, HashMap};

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use rusqlite::types::Value as SqlValue;
use serde_json::{json, Value};
use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_store::pushes::PushContext;
use tidemark_store::testing::{
    fresh, insert_pushing_account, push_context, push_together, push_together_after, TestDb,
};
use tidemark_store::Backend;

const ACCOUNTS: [&str; 3] = ["acct_a", "acct_b", "acct_c"];
const LABELS: [&str; 3] = ["api", "web", "infra"];
const RULES: usize = 10;
const BATCHES: usize = 24;
const NOW: i64 = 1_795_000_000_000;

/// The tables a push writes.
const TABLES: [&str; 13] = [
    "projects",
    "branches",
    "scans",
    "tracked_findings",
    "finding_spans",
    "finding_texts",
    "scan_posture",
    "account_posture",
    "account_days",
    "line_days",
    "project_usage",
    "mail_outbox",
    "webhook_deliveries",
];

fn context(account: &str, batch: usize) -> PushContext {
    let mut ctx = push_context(account);
    ctx.now = NOW + i64::try_from(batch).unwrap() * 4_000;
    match account {
        "acct_a" => ctx.drift_detection = true,
        "acct_b" => ctx.project_cap = Some(2),
        _ => ctx.write_limit = RollingLimit::per_minute(6),
    }
    ctx
}

/// A push as a scanner makes it: some rules not scanned this time, PASS and SKIP beside FAIL.
fn random_body(rng: &mut StdRng, second: i64) -> Value {
    let label = LABELS[rng.gen_range(0..LABELS.len())];
    let mut findings = Vec::new();
    let mut counts = BTreeMap::from([("critical", 0), ("high", 0), ("medium", 0), ("low", 0)]);
    let (mut passed, mut failed) = (0, 0);
    for rule in 0..RULES {
        if rng.gen_bool(0.3) {
            continue;
        }
        let status = match rng.gen_range(0..10) {
            0..=4 => "FAIL",
            5..=7 => "PASS",
            _ => "SKIP",
        };
        let severity = ["critical", "high", "medium", "low"][(rule + rng.gen_range(0..2)) % 4];
        match status {
            "FAIL" => {
                failed += 1;
                *counts.get_mut(severity).unwrap() += 1;
            }
            "PASS" => passed += 1,
            _ => {}
        }
        findings.push(json!({
            "rule_id": format!("cis-aws-2.0-{rule}"), "resource": format!("aws_s3_bucket.b{}", rule % 4),
            "status": status, "severity": severity, "message": "m", "remediation": "r",
        }));
    }
    let mut body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": f64::from(rng.gen_range(40..100u32)),
        "passed": passed, "failed": failed, "severity_counts": counts,
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000),
    });
    let commit = "0123456789abcdef0123456789abcdef01234567";
    body["git"] = match rng.gen_range(0..6) {
        0 => Value::Null,
        1 | 2 => json!({"branch": "main", "commit": commit}),
        3 => json!({"branch": "feature-x", "commit": commit}),
        n => json!({"branch": if n == 4 { "feature-x" } else { "fix-y" }, "commit": commit,
                    "pull_request": {"number": 7 + n, "base_branch": "main", "title": "t"}}),
    };
    if body["git"].is_null() {
        body.as_object_mut().unwrap().remove("git");
    }
    body
}

/// Changes made between the pushes' early decisions and the writer's turn.
fn random_meanwhile(rng: &mut StdRng, batch: usize) -> Vec<String> {
    let mut out = Vec::new();
    if rng.gen_bool(0.25) {
        let gate = if rng.gen_bool(0.5) {
            "gate_min_score = 60, gate_new_severity = 'high'"
        } else {
            "gate_min_score = NULL, gate_new_severity = NULL"
        };
        out.push(format!(
            "UPDATE projects SET {gate} WHERE account_id = 'acct_a' AND label = 'api'"
        ));
    }
    if rng.gen_bool(0.25) {
        let rule = rng.gen_range(0..RULES);
        let state = if rng.gen_bool(0.7) {
            "'accepted_risk', triage_reason = 'r', triaged_by = 't'"
        } else {
            "NULL"
        };
        out.push(format!(
            "UPDATE tracked_findings SET triage_state = {state}, triaged_at = {batch} \
             WHERE rule_id = 'cis-aws-2.0-{rule}' AND fixed_seq IS NULL"
        ));
    }
    if rng.gen_bool(0.2) {
        out.push("UPDATE branches SET live_token = NULL WHERE name = 'main'".to_owned());
    }
    if rng.gen_bool(0.1) {
        out.push(
            "UPDATE projects SET archived_at = CASE WHEN archived_at IS NULL THEN 1 END \
             WHERE account_id = 'acct_c' AND label = 'web'"
                .to_owned(),
        );
    }
    if rng.gen_bool(0.1) {
        out.push(
            "UPDATE api_keys SET revoked_at = CASE WHEN revoked_at IS NULL THEN 1 END \
             WHERE account_id = 'acct_b'"
                .to_owned(),
        );
    }
    out
}

/// One database's run: the answers, as debug text, batch by batch.
struct Run {
    t: TestDb,
    answers: Vec<String>,
}

async fn start(early: bool) -> Run {
    let t = fresh(Backend::Sqlite).await;
    t.db.db().set_push_early_decisions(early);
    for account in ACCOUNTS {
        insert_pushing_account(&t.db, account).await;
    }
    Run {
        t,
        answers: Vec::new(),
    }
}

async fn push_batch(run: &mut Run, batch: &[(usize, Value)], n: usize, meanwhile: &[String]) {
    let pushes = batch
        .iter()
        .map(|(a, body)| {
            let push = ValidPush::parse(body.to_string().as_bytes()).unwrap();
            (context(ACCOUNTS[*a], n), push)
        })
        .collect();
    for answer in push_together_after(&run.t.db, pushes, meanwhile).await {
        run.answers.push(format!("{answer:?}"));
    }
}

/// The database's random ids, each named by what it identifies.
fn canonical_names(conn: &rusqlite::Connection) -> Vec<(String, String)> {
    let mut names = Vec::new();
    let mut read = |sql: &str| {
        let mut stmt = conn.prepare(sql).unwrap();
        let rows = stmt
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .unwrap();
        names.extend(rows.map(Result::unwrap));
    };
    read("SELECT id, 'P(' || account_id || '/' || label || ')' FROM projects");
    let line = "p.account_id || '/' || p.label || '/' || COALESCE(b.ref_key, '-') || '/' \
                || COALESCE(b.pr_number, '-')";
    read(&format!(
        "SELECT b.id, 'B(' || {line} || ')' FROM branches b JOIN projects p ON p.id = b.project_id"
    ));
    read("SELECT live_token, 'TOKEN' FROM branches WHERE live_token IS NOT NULL");
    read(&format!(
        "SELECT f.id, 'F(' || {line} || '/' || f.rule_id || '/' || f.resource || ')' \
         FROM tracked_findings f JOIN branches b ON b.id = f.branch_id \
         JOIN projects p ON p.id = b.project_id"
    ));
    names
}

fn canonical(text: &str, names: &[(String, String)]) -> String {
    names
        .iter()
        .fold(text.to_owned(), |text, (id, name)| text.replace(id, name))
}

/// Every row of the tables a push writes, ids named by what they identify, sorted.
fn dump(run: &Run) -> (BTreeMap<String, Vec<String>>, Vec<String>) {
    let path = run.t.url.trim_start_matches("sqlite://");
    let path = path.split('?').next().unwrap();
    let conn = rusqlite::Connection::open(path).unwrap();
    let names = canonical_names(&conn);
    let mut tables = BTreeMap::new();
    for table in TABLES {
        let mut stmt = conn.prepare(&format!("SELECT * FROM {table}")).unwrap();
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |row| {
                let cells = (0..columns)
                    .map(|i| row.get::<_, SqlValue>(i))
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(format!("{cells:?}"))
            })
            .unwrap()
            .map(|row| canonical(&row.unwrap(), &names))
            .collect();
        rows.sort();
        tables.insert(table.to_owned(), rows);
    }
    let answers = run.answers.iter().map(|a| canonical(a, &names)).collect();
    (tables, answers)
}

#[tokio::test]
async fn early_decisions_write_what_the_writer_would() {
    for seed in [70_u64, 71, 72] {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut early = start(true).await;
        let mut late = start(false).await;
        let mut last_body: HashMap<usize, Value> = HashMap::new();
        let mut second = 0;
        for n in 0..BATCHES {
            // Mostly a new second; sometimes the last one again (scan ids take a suffix).
            if rng.gen_bool(0.8) {
                second += rng.gen_range(1..40);
            }
            let mut batch = Vec::new();
            for a in 0..ACCOUNTS.len() {
                if rng.gen_bool(0.2) {
                    continue;
                }
                // A retry of the account's last push now and then: a replay if its line has
                // not moved.
                let body = match last_body.get(&a) {
                    Some(last) if rng.gen_bool(0.1) => last.clone(),
                    _ => random_body(&mut rng, second),
                };
                last_body.insert(a, body.clone());
                batch.push((a, body));
            }
            let meanwhile = random_meanwhile(&mut rng, n);
            push_batch(&mut early, &batch, n, &meanwhile).await;
            push_batch(&mut late, &batch, n, &meanwhile).await;
        }
        let (early_rows, early_answers) = dump(&early);
        let (late_rows, late_answers) = dump(&late);
        for (i, (e, l)) in early_answers.iter().zip(&late_answers).enumerate() {
            assert_eq!(e, l, "seed {seed}: answer {i}");
        }
        assert_eq!(early_answers.len(), late_answers.len());
        for table in TABLES {
            let (e, l) = (&early_rows[table], &late_rows[table]);
            let first = e.iter().zip(l).position(|(e, l)| e != l);
            assert!(
                first.is_none() && e.len() == l.len(),
                "seed {seed}: {table} differs ({} rows early, {} late), first at {first:?}:\n{:?}\n{:?}",
                e.len(),
                l.len(),
                first.map(|i| &e[i]),
                first.map(|i| &l[i]),
            );
        }
        let appended = early_answers
            .iter()
            .filter(|a| a.contains("Appended"))
            .count();
        assert!(appended > BATCHES, "seed {seed}: {appended} appended");
        for refusal in ["Replayed", "RateLimited", "ProjectLimitReached"] {
            assert!(
                early_answers.iter().any(|a| a.contains(refusal)),
                "seed {seed}: no {refusal} in the history"
            );
        }
        let (on, off) = (
            early.t.db.db().push_group_stats().unwrap(),
            late.t.db.db().push_group_stats().unwrap(),
        );
        // Both paths were taken: written as decided early, and decided again by the writer
        // after a change in between.
        assert!(on.decided_early > 0 && on.decided_again > 0, "{on:?}");
        assert_eq!((off.decided_early, off.decided_again), (0, 0), "{off:?}");
    }
}

/// A fresh SQLite database that plans pushes early, where `acct_a` can push. Another
/// account's push follows the accounts' creation, as on a server in use: the writer has had
/// its turn since the last other commit, so plans made from here on can be taken as made
/// (one made before the writer sees another connection's commit never is).
/// Returns the committer's counts from then on, to subtract.
async fn planning_early() -> (TestDb, tidemark_store::pushes::committer::GroupStats) {
    let t = fresh(Backend::Sqlite).await;
    t.db.db().set_push_early_decisions(true);
    insert_pushing_account(&t.db, "acct_a").await;
    insert_pushing_account(&t.db, "acct_other").await;
    let other = tidemark_store::testing::plain_push("elsewhere", 0, 50.0);
    let answers = push_together(&t.db, vec![(push_context("acct_other"), other)]).await;
    assert!(answers[0].is_ok(), "{answers:?}");
    let stats = t.db.db().push_group_stats().expect("SQLite");
    (t, stats)
}

/// Ten pushes of `acct_a` under `limit` a minute and `cap`: the i-th to `label(i)`, scored
/// `score(i)`, scanned i seconds in.
fn ten_pushes(
    limit: u32,
    cap: Option<u64>,
    label: impl Fn(i64) -> String,
    score: impl Fn(i64) -> f64,
) -> Vec<(PushContext, ValidPush)> {
    (0..10)
        .map(|i| {
            let mut ctx = push_context("acct_a");
            ctx.write_limit = RollingLimit::per_minute(limit);
            ctx.project_cap = cap;
            let push = tidemark_store::testing::plain_push(&label(i), i, score(i));
            (ctx, push)
        })
        .collect()
}

/// Ten pushes to one line in flight together, all planned on the same snapshot: the writer
/// takes the first as planned and decides the others again, so the history chains exactly,
/// and a write budget of 5 appends exactly 5.
#[tokio::test]
async fn pushes_to_one_line_planned_on_one_snapshot_still_chain() {
    let (t, before) = planning_early().await;
    let pushes = ten_pushes(5, None, |_| "api".to_owned(), |i| 10.0 * i as f64);
    let answers = push_together(&t.db, pushes).await;
    let appended = answers
        .iter()
        .filter(|a| matches!(a, Ok(tidemark_store::pushes::PushOutcome::Appended(..))))
        .count();
    let limited = answers
        .iter()
        .filter(|a| {
            matches!(
                a,
                Ok(tidemark_store::pushes::PushOutcome::RateLimited { .. })
            )
        })
        .count();
    assert_eq!((appended, limited), (5, 5), "{answers:?}");
    let history: Vec<(f64, f64)> = tidemark_store::on_db!(&t.db, pool => {
        sqlx::query_as("SELECT score, score_delta FROM scans WHERE account_id = 'acct_a' ORDER BY seq")
            .fetch_all(pool)
            .await
    })
    .unwrap();
    assert_eq!(history.len(), 5);
    assert_eq!(history[0].1, 0.0);
    for pair in history.windows(2) {
        assert_eq!(pair[1].1, pair[1].0 - pair[0].0, "{history:?}");
    }
    let stats = t.db.db().push_group_stats().unwrap();
    assert!(
        stats.decided_early - before.decided_early >= 1
            && stats.decided_again - before.decided_again >= 4,
        "{stats:?}"
    );
}

/// Ten pushes of one account to ten new projects, all planned on one snapshot that shows no
/// write and no project yet: nothing a plan read changes under the others, so each is
/// confirmed in the writer's turn, where the budget and the cap are counted afresh.
#[tokio::test]
async fn the_budget_and_the_cap_are_confirmed_in_the_writers_turn() {
    for (limit, cap, expected) in [(5, None, (5, 5, 0)), (1_000, Some(3), (3, 0, 7))] {
        let (t, before) = planning_early().await;
        let pushes = ten_pushes(limit, cap, |i| format!("svc-{i}"), |_| 50.0);
        let answers = push_together(&t.db, pushes).await;
        let count = |f: fn(&tidemark_store::pushes::PushOutcome) -> bool| {
            answers.iter().filter(|a| a.as_ref().is_ok_and(f)).count()
        };
        use tidemark_store::pushes::PushOutcome as O;
        let got = (
            count(|o| matches!(o, O::Appended(..))),
            count(|o| matches!(o, O::RateLimited { .. })),
            count(|o| matches!(o, O::ProjectLimitReached { .. })),
        );
        assert_eq!(got, expected, "{answers:?}");
        let stats = t.db.db().push_group_stats().unwrap();
        assert_eq!(
            (
                stats.decided_early - before.decided_early,
                stats.decided_again - before.decided_again
            ),
            (10, 0),
            "{stats:?}"
        );
        // The answers' budgets count down as the writes were made.
        let mut remaining: Vec<u32> = answers
            .iter()
            .filter_map(|a| match a {
                Ok(O::Appended(_, rate)) => Some(rate.remaining),
                _ => None,
            })
            .collect();
        remaining.sort_unstable();
        let appended = u32::try_from(expected.0).unwrap();
        let want: Vec<u32> = (0..appended).map(|i| limit - appended + i).collect();
        assert_eq!(remaining, want, "{answers:?}");
    }
}
