//! Reading a year of posture (issue 47: under 50 ms). A project's default branch with a scan a
//! day for 365 days, each naming two frameworks (300 rules in 12 sections, a fifth failing,
//! changing from day to day so drift is kept too), beside four more projects like it, stored
//! by the real push path; then the read `/v1/projects/{p}/posture?range=365d` and the project
//! page make (`store::posture::read::line_posture`: the latest scan judged now from its
//! findings, and 730 stored rows), timed over many runs. Prints a Markdown table.
//!
//!   cargo run --release -p tidemark-bench --bin posture-bench
//!   scripts/pg-throwaway.sh sh -c \
//!     'DATABASE_URL=$TIDEMARK_TEST_POSTGRES_URL cargo run --release -p tidemark-bench --bin posture-bench'

use std::time::{Duration, Instant};

use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_store::pushes::{record_push, PushContext, PushOutcome};
use tidemark_store::{AccountId, Db, Writer};

const DAYS: i64 = 365;
const PROJECTS: usize = 5;
const RULES: usize = 150;
const RUNS: usize = 200;
use tidemark_domain::time::DAY_MS;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| format!("sqlite://{}", dir.path().join("tidemark.db").display()));
    let backend = if url.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let db = Db::connect(&url, 8).await?;
    db.migrate().await?;
    let writer = Writer::for_tests(db.clone());
    let account = AccountId::trusted("bench");
    tidemark_store::testing::insert_pushing_account(&writer, &account).await;
    let now = tidemark_domain::now_millis();
    let seeded = Instant::now();
    let mut project = None;
    for p in 0..PROJECTS {
        for day in 0..DAYS {
            let at = now - (DAYS - day) * DAY_MS;
            let outcome = record_push(&writer, context(&account, now), scan(p, day, at)).await?;
            match outcome {
                PushOutcome::Appended(stored, _) if p == 0 => project = Some(stored.project_id),
                PushOutcome::Appended(..) => {}
                other => return Err(format!("not stored: {other:?}").into()),
            }
        }
    }
    let project = project.ok_or("no project")?;
    if let Db::Postgres(pool) = &db {
        sqlx::query("VACUUM ANALYZE").execute(pool).await?;
    }
    eprintln!(
        "seeded {} scans of {} findings in {:.1?}",
        PROJECTS as i64 * DAYS,
        RULES * 2,
        seeded.elapsed()
    );
    let line = tidemark_store::findings::find_line(&db, &account, &project, None)
        .await?
        .ok_or("no line")?;
    let since = Some(now - DAYS * DAY_MS);
    let mut times: Vec<Duration> = Vec::with_capacity(RUNS);
    let mut rows = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let posture = tidemark_store::posture::read::line_posture(
            &db, &account, &project, &line.id, None, since, now,
        )
        .await?
        .ok_or("no posture")?;
        times.push(started.elapsed());
        rows = posture.frameworks.iter().map(|f| f.history.len()).sum();
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let pct = |p: f64| ms(times[((times.len() - 1) as f64 * p) as usize]);
    println!("| backend | scans read | p50 | p95 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| {backend} | {rows} posture rows + the latest scan's {} findings | {:.2} ms | {:.2} ms | {:.2} ms |",
        RULES * 2,
        pct(0.5),
        pct(0.95),
        ms(times[times.len() - 1])
    );
    db.close().await;
    Ok(())
}

fn context(account: &AccountId, now: i64) -> PushContext {
    PushContext {
        key_id: tidemark_store::testing::push_key_id(account),
        account_id: account.to_owned(),
        project_cap: None,
        write_limit: RollingLimit::per_minute(100_000_000),
        now,
        touch_key: false,
        raw_body_hash: None,
        pushed_by: None,
        custom_frameworks: false,
        drift_detection: true,
    }
}

/// Project `p`'s scan of `day`: every rule of both frameworks checked once, about a fifth
/// failing, which ones moving from day to day.
fn scan(p: usize, day: i64, at: i64) -> ValidPush {
    let findings: Vec<serde_json::Value> = ["cis-aws-2.0", "soc2"]
        .iter()
        .flat_map(|framework| {
            (0..RULES).map(move |i| {
                let failing = (i as i64 * 7 + day * 3) % 5 == 0;
                serde_json::json!({
                    "rule_id": format!("{framework}-{}.{}", i % 12 + 1, i),
                    "resource": format!("aws_s3_bucket.b{i}"),
                    "status": if failing { "FAIL" } else { "PASS" },
                    "severity": "medium",
                    "message": "Bucket policy allows plain HTTP",
                    "remediation": "Deny requests where aws:SecureTransport is false",
                })
            })
        })
        .collect();
    let failed = findings.iter().filter(|f| f["status"] == "FAIL").count();
    let scanned_at = chrono::DateTime::from_timestamp_millis(at)
        .expect("in range")
        .to_rfc3339();
    let json = serde_json::json!({"project_label": format!("project-{p}"), "cloud": "aws",
        "cloud_account_id": "111122223333", "frameworks": ["cis-aws-2.0", "soc2"],
        "score": 80.0, "passed": findings.len() - failed, "failed": failed,
        "severity_counts": {"critical": 0, "high": 0, "medium": failed, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": scanned_at});
    ValidPush::parse(json.to_string().as_bytes()).expect("a valid push")
}
