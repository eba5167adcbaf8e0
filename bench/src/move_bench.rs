//! Moving a database stored one row per finding (releases before issue 36) to spans, online.
//!
//! Seeds a SQLite file of about SIZE MiB in the old layout: one project's main branch, scans of
//! 5,000 findings over 250 rules (100-character messages, 150-character remediation), 50
//! statuses changing from scan to scan, pushed through the store and then stored as rows the way
//! earlier releases stored them. Then moves it with `move_batch` (as housekeeping does) while
//! pushes go on, from other accounts and to the moving project itself, and reports the time
//! taken, the pushes answered and refused, and the file's size before and after. Checks that no
//! push was lost and that sampled scans read the same before and after.
//!
//! Usage: move-bench [size-mib] [dir]   (default 1024 MiB, in a temporary directory)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tidemark_store::{AccountId, ProjectId};

use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{list_findings, FindingFilter};
use tidemark_store::pushes::{record_push, PushOutcome};
use tidemark_store::spans::moving::{move_batch, scans_as_rows};
use tidemark_store::{Db, Writer};

const FINDINGS: usize = 5_000;
const PUSHERS: usize = 8;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let size_mib: u64 = args.get(1).map_or(Ok(1024), |s| s.parse())?;
    let dir = match args.get(2) {
        Some(d) => std::path::PathBuf::from(d),
        None => tempfile::tempdir()?.keep(),
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(size_mib, dir))
}

fn text(n: usize, seed: usize) -> String {
    let words = [
        "public", "bucket", "access", "policy", "allows", "read", "write", "logging",
    ];
    let mut out = String::new();
    let mut i = seed;
    while out.len() < n {
        out.push_str(words[i % words.len()]);
        out.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    out.truncate(n);
    out
}

fn big_push(n: usize, flipped: &[bool]) -> ValidPush {
    let findings: Vec<serde_json::Value> = (0..FINDINGS)
        .map(|i| {
            let rule = format!("cis-aws-2.0-{}.{}", (i % 250) / 10, i % 10);
            let severity = ["critical", "high", "medium", "low"][i % 4];
            serde_json::json!({
                "rule_id": rule, "resource": format!("aws_s3_bucket.storage_{i:05}"),
                "status": if flipped[i] { "FAIL" } else { "PASS" },
                "severity": severity,
                "message": text(100, i % 250), "remediation": text(150, 1000 + i % 250),
            })
        })
        .collect();
    let at = tidemark_domain::to_rfc3339(1_790_000_000_000 + n as i64 * 60_000);
    let body = serde_json::json!({
        "project_label": "history", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": 60.0 + (n % 30) as f64, "passed": 10, "failed": 5,
        "severity_counts": {"critical": 1, "high": 1, "medium": 1, "low": 2},
        "findings": findings, "state_source": "ci", "scanned_at": at,
        "git": {"branch": "main", "default_branch": "main"},
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn small_push(label: &str, n: u64) -> ValidPush {
    let findings: Vec<serde_json::Value> = (0..50)
        .map(|i| serde_json::json!({"rule_id": format!("cis-{i}"), "resource": format!("r{}", (i + n) % 60),
            "status": "FAIL", "severity": "high", "message": "m", "remediation": "r"}))
        .collect();
    let body = serde_json::json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis"], "score": 70.0, "passed": 1, "failed": 50,
        "severity_counts": {"critical": 0, "high": 50, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci",
        "scanned_at": tidemark_domain::to_rfc3339(1_800_000_000_000 + n as i64 * 1000),
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e:?}"))
}

fn file_mib(path: &std::path::Path) -> f64 {
    let size = |p: &std::path::Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let wal = path.with_extension("db-wal");
    (size(path) + size(&wal)) as f64 / 1_048_576.0
}

/// Pushes `scans` scans of [`FINDINGS`] findings, 50 of them flipping each time; the
/// project's id and the last scan's flips.
async fn seed(
    db: &Writer,
    scans: usize,
) -> Result<(ProjectId, Vec<bool>), Box<dyn std::error::Error>> {
    let mut flipped = vec![false; FINDINGS];
    let mut rng_state = 36_usize;
    let mut project = ProjectId::default();
    for n in 0..scans {
        for _ in 0..50 {
            rng_state = rng_state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let i = (rng_state >> 17) % FINDINGS;
            flipped[i] = !flipped[i];
        }
        let mut ctx = tidemark_store::testing::push_context("acct_history");
        ctx.now = 1_790_000_000_000 + n as i64 * 60_000;
        ctx.write_limit.limit = 1_000_000;
        if let PushOutcome::Appended(s, _) = record_push(db, ctx, big_push(n, &flipped)).await? {
            project = s.project_id;
        }
    }
    Ok((project, flipped))
}

/// Every scan moved, no push lost (`expected` scans stored), the sampled scans read as before.
async fn check_moved(
    db: &Writer,
    project: &ProjectId,
    samples: &[i64],
    before: &[Vec<tidemark_store::dashboard::FindingRow>],
    expected: u64,
) -> Result<i64, Box<dyn std::error::Error>> {
    let left = scans_as_rows(db.as_ref()).await?;
    let stored: i64 = tidemark_store::on_db!(db.as_ref(), pool => {
        sqlx::query_scalar("SELECT COUNT(*) FROM scans").fetch_one(pool).await
    })?;
    assert_eq!(left, 0, "every scan moved");
    assert_eq!(stored as u64, expected, "no push lost");
    for (&seq, expected) in samples.iter().zip(before) {
        let (got, _) = list_findings(
            db.as_ref(),
            project,
            seq,
            &FindingFilter::default(),
            0,
            10_000,
        )
        .await?;
        let strip = |rows: &[tidemark_store::dashboard::FindingRow]| {
            rows.iter()
                .map(|r| {
                    (
                        r.rule_id.clone(),
                        r.resource.clone(),
                        r.status.clone(),
                        r.message.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(&got), strip(expected), "scan {seq} reads the same");
    }
    Ok(stored)
}

/// Accounts pushing small scans until `stop`; each task answers its slowest push.
async fn spawn_pushers(
    db: &Writer,
    stop: &Arc<AtomicBool>,
    answered: &Arc<AtomicU64>,
    refused: &Arc<AtomicU64>,
) -> Vec<tokio::task::JoinHandle<Duration>> {
    let mut pushers = Vec::new();
    for p in 0..PUSHERS {
        let account = format!("acct_push{p}");
        tidemark_store::testing::insert_pushing_account(db, &account).await;
        let (db, stop, answered, refused) = (
            Writer::for_tests(db.db().clone()),
            stop.clone(),
            answered.clone(),
            refused.clone(),
        );
        pushers.push(tokio::spawn(async move {
            let mut n = 0_u64;
            let mut slowest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let mut ctx = tidemark_store::testing::push_context(&account);
                ctx.now = 1_800_000_000_000 + n as i64 * 1000;
                ctx.write_limit.limit = 1_000_000;
                let t = Instant::now();
                match record_push(&db, ctx, small_push("live", n)).await {
                    Ok(PushOutcome::Appended(..)) => answered.fetch_add(1, Ordering::Relaxed),
                    _ => refused.fetch_add(1, Ordering::Relaxed),
                };
                slowest = slowest.max(t.elapsed());
            }
            slowest
        }));
    }
    pushers
}

/// The findings of the sampled scans, as the dashboard lists them.
async fn read_samples(
    db: &Writer,
    project: &ProjectId,
    samples: &[i64],
) -> Result<Vec<Vec<tidemark_store::dashboard::FindingRow>>, Box<dyn std::error::Error>> {
    let mut read = Vec::new();
    for &seq in samples {
        let filter = FindingFilter::default();
        read.push(
            list_findings(db.as_ref(), project, seq, &filter, 0, 10_000)
                .await?
                .0,
        );
    }
    Ok(read)
}

async fn run(size_mib: u64, dir: std::path::PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    let path = dir.join("tidemark.db");
    let url = format!("sqlite://{}", path.display());
    let db = Db::connect(&url, 16).await?;
    db.migrate().await?;
    let db = Writer::for_tests(db);
    tidemark_store::testing::insert_pushing_account(&db, "acct_history").await;

    // Each scan takes about 2 MiB as rows.
    let scans = (size_mib as usize / 2).max(2);
    println!(
        "== seeding {scans} scans of {FINDINGS} findings ({size_mib} MiB target) in {}",
        dir.display()
    );
    let started = Instant::now();
    let (project, flipped) = seed(&db, scans).await?;
    tidemark_store::testing::store_as_rows(&db).await;
    tidemark_store::on_db_write!(&db, pool => {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.map(|_| ())
    })?;
    println!(
        "seeded in {:.1?}: {:.0} MiB, {} scans stored as rows",
        started.elapsed(),
        file_mib(&path),
        scans_as_rows(db.as_ref()).await?
    );
    // Scans to read again after the move.
    let samples: Vec<i64> = [1, scans as i64 / 3, scans as i64 / 2, scans as i64].to_vec();
    let before = read_samples(&db, &project, &samples).await?;

    // Pushes while the move runs: other accounts' small ones, and the moving project's own.
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicU64::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    let mut latencies = Vec::new();
    let pushers = spawn_pushers(&db, &stop, &answered, &refused).await;
    let own_pushes = {
        let (db, stop) = (Writer::for_tests(db.db().clone()), stop.clone());
        let mut flipped = flipped.clone();
        tokio::spawn(async move {
            let mut n = scans;
            let mut ok = 0_u64;
            while !stop.load(Ordering::Relaxed) {
                flipped[n % FINDINGS] = !flipped[n % FINDINGS];
                let mut ctx = tidemark_store::testing::push_context("acct_history");
                ctx.now = 1_790_000_000_000 + n as i64 * 60_000;
                ctx.write_limit.limit = 1_000_000;
                if matches!(
                    record_push(&db, ctx, big_push(n, &flipped)).await,
                    Ok(PushOutcome::Appended(..))
                ) {
                    ok += 1;
                }
                n += 1;
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            ok
        })
    };

    println!("== moving to spans, {PUSHERS} accounts pushing meanwhile and the project itself every 0.5 s");
    let started = Instant::now();
    let mut cursor = None;
    let mut batches = 0_u64;
    let mut slowest_batch = Duration::ZERO;
    loop {
        let t = Instant::now();
        let batch = move_batch(&db, &cursor, 2_000).await?;
        slowest_batch = slowest_batch.max(t.elapsed());
        batches += 1;
        if batch.cursor.is_none() {
            break;
        }
        cursor = batch.cursor;
        // As housekeeping pauses between its transactions.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    for p in pushers {
        latencies.push(p.await?);
    }
    let own = own_pushes.await?;
    let (ok, no) = (
        answered.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed),
    );
    println!(
        "moved in {took:.1?} ({batches} batches of short transactions, the longest batch {slowest_batch:.1?}); \
         {ok} small pushes answered ({:.0}/s), {no} refused, the slowest {:.1?}; {own} pushes of the moving project",
        ok as f64 / took.as_secs_f64(),
        latencies.iter().max().copied().unwrap_or_default()
    );
    let stored = check_moved(&db, &project, &samples, &before, scans as u64 + ok + own).await?;
    tidemark_store::on_db_write!(&db, pool => {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(pool).await.map(|_| ())
    })?;
    let used = tidemark_store::gauges::database_bytes(db.as_ref()).await? as f64 / 1_048_576.0;
    print_moved_size(&db).await?;
    println!(
        "no push lost ({stored} scans); sampled scans read the same; file {:.0} MiB, of which {used:.0} MiB in use (the rest is free pages SQLite reuses; VACUUM returns them)",
        file_mib(&path)
    );
    Ok(())
}

/// What the moved project takes now, as Settings → Storage would say once measured.
async fn print_moved_size(db: &Writer) -> Result<(), Box<dyn std::error::Error>> {
    let history = AccountId::trusted("acct_history");
    let everything = tidemark_store::usage::Allowance {
        projects: 10,
        time: Duration::from_secs(600),
        settle: Duration::ZERO,
    };
    let now = tidemark_domain::now_millis();
    tidemark_store::usage::refresh_stale(db, Some(&history), now, everything).await?;
    let moved = tidemark_store::usage::project_bytes(db.as_ref(), &history).await?;
    println!(
        "the moved project now takes about {:.0} MiB (estimate, {} scans)",
        moved.iter().filter_map(|p| p.bytes).sum::<i64>() as f64 / 1_048_576.0,
        moved.iter().map(|p| p.scans).sum::<i64>()
    );
    Ok(())
}
