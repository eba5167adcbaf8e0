//! The push path below HTTP: `record_push` alone, from many concurrent tasks on a 2-worker
//! runtime, against a SQLite file with the server's settings. Separates the store's cost from
//! HTTP, JSON and hashing when the end-to-end figure (`scripts/bench.sh`) moves.
//!
//! Usage: push-store-bench [seconds] [concurrency] [findings-per-scan] [spread] [compare|branches]
//! With a spread, scans carry findings-per-scan + 0..spread findings, so push groups rarely
//! repeat a shape (the writer's statement cache stops helping).
//!
//! `compare` (issue 14's budget: within 10 %): in one run and one database, alternates
//! phases of pushes by plain accounts with phases by accounts whose project has a quality gate
//! (minimum score, maximum drop and no new findings at high or above, so each push also reads
//! the previous scan's open findings) and a webhook endpoint subscribed to every scan event
//! (so each push queues one to three deliveries), A B B A (a steady drift in the machine's
//! speed cancels), and prints each phase and the ratio of the totals.
//!
//! `branches` (issue 26): the same A B B A, between pushes without git context (the default
//! branch) and pull-request pushes, each compared with its base branch's latest scan (50 open
//! findings) inside the transaction.
//!
//! `posture` (issue 47: a push costs at most 10 % more): the same A B B A, between pushes whose
//! scan names only `custom:none` (a scan-named framework spelt like a custom one is ignored, so
//! nothing is judged or kept) and the same pushes naming the framework all their rules are in (each judged, its sections and drift against the previous scan kept
//! in a `scan_posture` row, with drift detection on), in one run and one database.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tidemark_store::AccountId;

use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_store::pushes::{record_push, PushContext, PushOutcome};
use tidemark_store::{Db, Writer};

const ACCOUNTS: usize = 200;

/// Drift detection on the pushes' licences (the posture mode measures its whole path).
static DRIFT_DETECTION: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    /// Plain against gate + webhook.
    Gates,
    /// The default branch against pull requests judged with their base.
    Branches,
    /// Scans naming no framework against scans whose posture is kept.
    Posture,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let secs: u64 = args.get(1).map_or(Ok(10), |s| s.parse())?;
    let concurrency: usize = args.get(2).map_or(Ok(16), |s| s.parse())?;
    let findings: usize = args.get(3).map_or(Ok(50), |s| s.parse())?;
    let spread: usize = args.get(4).map_or(Ok(1), |s| s.parse())?;
    let mode = match args.get(5).map(String::as_str) {
        Some("compare") => Mode::Gates,
        Some("branches") => Mode::Branches,
        Some("posture") => Mode::Posture,
        _ => Mode::Plain,
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(run(secs, concurrency, findings, spread.max(1), mode))
}

async fn run(
    secs: u64,
    concurrency: usize,
    findings: usize,
    spread: usize,
    mode: Mode,
) -> Result<(), Box<dyn std::error::Error>> {
    DRIFT_DETECTION.store(mode == Mode::Posture, Ordering::Relaxed);
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("tidemark.db").display());
    let db = Db::connect(&url, 16).await?;
    db.migrate().await?;
    // A benchmark is not cancelled half-way: it writes like the store's own tests.
    let db = Writer::for_tests(db);
    for a in 0..ACCOUNTS {
        tidemark_store::testing::insert_pushing_account(&db, &format!("acct{a}")).await;
    }
    if mode == Mode::Plain {
        let phase = phase(&db, "acct", 0, secs, concurrency, findings, spread).await?;
        println!("{}", phase.json());
        db.close().await;
        return Ok(());
    }
    let other = match mode {
        Mode::Branches => "pr",
        Mode::Posture => "bare",
        _ => "gated",
    };
    for a in 0..ACCOUNTS {
        match mode {
            Mode::Branches => with_main(&db, &AccountId::trusted(format!("pr{a}")), findings).await,
            Mode::Posture => {
                tidemark_store::testing::insert_pushing_account(&db, &format!("bare{a}")).await
            }
            _ => equip(&db, &AccountId::trusted(format!("gated{a}")), findings).await,
        }
    }
    let mut totals = [(0u64, 0.0f64); 2];
    // A B B A: a machine whose speed drifts steadily over the run (warming caches, a growing
    // database, a neighbour on the VM) favours neither side; A B A B favoured the second.
    for (round, slot) in [0, 1, 1, 0].into_iter().enumerate() {
        let prefix = if slot == 0 { "acct" } else { other };
        let p = phase(
            &db,
            prefix,
            round as u64,
            secs,
            concurrency,
            findings,
            spread,
        )
        .await?;
        let names = match mode {
            Mode::Branches => ["default branch", "pull request vs base"],
            Mode::Posture => ["posture kept", "no framework"],
            _ => ["plain", "gate+webhook"],
        };
        println!(
            "{{\"phase\": \"{}\", \"result\": {}}}",
            names[slot],
            p.json()
        );
        totals[slot].0 += p.scans;
        totals[slot].1 += p.elapsed;
    }
    let rate = |(n, s): (u64, f64)| n as f64 / s;
    if mode == Mode::Posture {
        println!(
            "{{\"posture_scans_per_second\": {:.1}, \"no_framework_scans_per_second\": {:.1}, \"cost\": {:.3}}}",
            rate(totals[0]),
            rate(totals[1]),
            rate(totals[1]) / rate(totals[0]) - 1.0
        );
        db.close().await;
        return Ok(());
    }
    if mode == Mode::Branches {
        println!(
            "{{\"default_branch_scans_per_second\": {:.1}, \"pull_request_scans_per_second\": {:.1}, \"ratio\": {:.3}}}",
            rate(totals[0]),
            rate(totals[1]),
            rate(totals[1]) / rate(totals[0])
        );
        db.close().await;
        return Ok(());
    }
    let deliveries = tidemark_store::webhooks::pending_count(db.db()).await?;
    println!(
        "{{\"plain_scans_per_second\": {:.1}, \"gated_scans_per_second\": {:.1}, \"ratio\": {:.3}, \"deliveries_queued\": {deliveries}}}",
        rate(totals[0]),
        rate(totals[1]),
        rate(totals[1]) / rate(totals[0])
    );
    db.close().await;
    Ok(())
}

/// An account whose project "bench" has a quality gate and a webhook endpoint for every scan
/// event (one push first, so the project exists).
async fn equip(db: &Writer, account: &AccountId, findings: usize) {
    tidemark_store::testing::insert_pushing_account(db, account).await;
    let ctx = context(account);
    // Before any phase's scans in time, and distinct from all of them.
    let first = match record_push(db, ctx, body(0, findings))
        .await
        .expect("first push")
    {
        PushOutcome::Appended(scan, _) => scan,
        other => panic!("{other:?}"),
    };
    let gate = tidemark_domain::gate::QualityGate::new(
        Some(50.0),
        Some(10.0),
        std::env::var("BENCH_NO_FINDINGS_GATE")
            .is_err()
            .then_some(tidemark_wire::Severity::High),
    )
    .expect("valid")
    .expect("a gate");
    let audit = tidemark_store::testing::audit();
    tidemark_store::gates::set_project_gate(db, account, &first.project_id, Some(&gate), &audit)
        .await
        .expect("gate set");
    let hook = tidemark_store::webhooks::NewWebhook {
        id: tidemark_domain::ids::new_webhook_id(),
        account_id: account.to_owned(),
        project_id: None,
        url_sealed: "sealed".into(),
        url_display: "https://hooks.example.com".into(),
        format: tidemark_domain::webhook::PayloadFormat::Tidemark,
        events: if std::env::var("BENCH_ONE_EVENT").is_ok() {
            tidemark_domain::webhook::EventSet::parse(["scan.pushed"])
        } else {
            tidemark_domain::webhook::EventSet::parse([
                "scan.pushed",
                "gate.failed",
                "score.regressed",
            ])
        }
        .expect("events"),
        secret_sealed: "sealed".into(),
        now: 1,
    };
    if std::env::var("BENCH_NO_WEBHOOK").is_err() {
        tidemark_store::webhooks::create_webhook(db, &hook, &audit)
            .await
            .expect("endpoint added");
    }
}

/// An account whose project "bench" has a scan of `main` with `findings` open findings: the
/// base its pull requests are compared with.
async fn with_main(db: &Writer, account: &AccountId, findings: usize) {
    tidemark_store::testing::insert_pushing_account(db, account).await;
    let git = serde_json::json!({"branch": "main"});
    record_push(db, context(account), body_on(0, findings, Some(git)))
        .await
        .expect("main's scan");
}

fn context(account: &AccountId) -> PushContext {
    PushContext {
        key_id: tidemark_store::testing::push_key_id(account),
        account_id: account.to_owned(),
        project_cap: None,
        write_limit: RollingLimit::per_minute(100_000_000),
        now: tidemark_domain::now_millis(),
        touch_key: false,
        raw_body_hash: None,
        pushed_by: None,
        custom_frameworks: false,
        drift_detection: DRIFT_DETECTION.load(Ordering::Relaxed),
    }
}

struct Phase {
    scans: u64,
    elapsed: f64,
    p50_ms: f64,
    p99_ms: f64,
    mean_group: f64,
}

impl Phase {
    fn json(&self) -> String {
        format!(
            "{{\"scans\": {}, \"scans_per_second\": {:.1}, \"p50_ms\": {:.2}, \"p99_ms\": {:.2}, \"mean_group\": {:.2}, \"peak_rss_kb\": {}}}",
            self.scans,
            self.scans as f64 / self.elapsed,
            self.p50_ms,
            self.p99_ms,
            self.mean_group,
            peak_rss_kb()
        )
    }
}

/// `secs` of pushes by `concurrency` tasks, spread over the accounts `<prefix>0..`.
async fn phase(
    db: &Writer,
    prefix: &'static str,
    round: u64,
    secs: u64,
    concurrency: usize,
    findings: usize,
    spread: usize,
) -> Result<Phase, Box<dyn std::error::Error>> {
    let before = db.push_group_stats().expect("SQLite has a committer");

    let stop = Arc::new(AtomicBool::new(false));
    let stored = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (db, stop, stored) = (
            Writer::for_tests(db.db().clone()),
            stop.clone(),
            stored.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let at = worker as u64 * 10_000_000 + round * 1_000_000 + n;
                let size = findings + n as usize * 7 % spread;
                // Pull requests of 20 numbers per account, each judged against main.
                let push = if prefix == "pr" {
                    let git = serde_json::json!({"branch": format!("feature-{}", n % 20),
                        "pull_request": {"number": 1 + n % 20, "base_branch": "main"}});
                    body_on(at, size, Some(git))
                } else if prefix == "bare" {
                    body_framing(at, size, &["custom:none"])
                } else {
                    body(at, size)
                };
                let account =
                    AccountId::trusted(format!("{prefix}{}", (worker + n as usize) % ACCOUNTS));
                let ctx = context(&account);
                let started = Instant::now();
                let outcome = record_push(&db, ctx, push).await.expect("push stored");
                latencies.push(started.elapsed());
                assert!(matches!(outcome, PushOutcome::Appended(..)), "{outcome:?}");
                stored.fetch_add(1, Ordering::Relaxed);
            }
            latencies
        }));
    }
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await?);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() - 1) as f64 * p) as usize].as_secs_f64() * 1e3;
    let stats = db.push_group_stats().expect("SQLite has a committer");
    let (pushes, groups) = (stats.pushes - before.pushes, stats.groups - before.groups);
    Ok(Phase {
        scans: stored.load(Ordering::Relaxed),
        elapsed,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        mean_group: pushes as f64 / groups.max(1) as f64,
    })
}

fn body(n: u64, findings: usize) -> ValidPush {
    body_on(n, findings, None)
}

/// A scan naming `frameworks` instead (its rules are all `cis-gcp-2.0`'s).
fn body_framing(n: u64, findings: usize, frameworks: &[&str]) -> ValidPush {
    let mut push = body_json(n, findings, None);
    push["frameworks"] = serde_json::json!(frameworks);
    ValidPush::parse(push.to_string().as_bytes()).expect("a valid push")
}

/// A scan of `findings` open findings; with `git`, on the line it names.
fn body_on(n: u64, findings: usize, git: Option<serde_json::Value>) -> ValidPush {
    ValidPush::parse(body_json(n, findings, git).to_string().as_bytes()).expect("a valid push")
}

fn body_json(n: u64, findings: usize, git: Option<serde_json::Value>) -> serde_json::Value {
    let finding = |i: usize| {
        serde_json::json!({"rule_id": format!("cis-gcp-2.0-{i}"),
            "resource": format!("google_compute_instance.web_{i}"), "status": "FAIL",
            "severity": "high", "message": "Instance uses the default service account",
            "remediation": "Attach a dedicated service account with least privilege"})
    };
    let scanned_at = chrono::DateTime::from_timestamp(1_700_000_000 + n as i64, 0)
        .expect("in range")
        .to_rfc3339();
    let mut json = serde_json::json!({"project_label": "bench", "cloud": "gcp",
        "cloud_account_id": "acme-prod", "frameworks": ["cis-gcp-2.0"], "score": (n * 7 % 100) as f64,
        "passed": 100, "failed": findings, "severity_counts": {"critical": 1, "high": 2, "medium": 3, "low": 4},
        "findings": (0..findings).map(finding).collect::<Vec<_>>(), "state_source": "ci",
        "scanned_at": scanned_at});
    if let Some(git) = git {
        json["git"] = git;
    }
    json
}

/// `VmHWM` of this process, in KiB (0 where /proc is not available).
fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
