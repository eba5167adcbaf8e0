//! Cost at a large account's scale (issue 48): one account grown to N projects, each with a
//! default branch, 5 feature branches and 20 pull requests and a year of history, written
//! through the store's own push path (not HTTP); then, at each N, what the account costs:
//! database size, push p50/p99 (through HTTP), the pages people read (p50/p95, signed in as a
//! browser is), the `/v1` findings list, and a housekeeping pass.
//!
//! The workload, per project: one push a day on the default branch for 365 days; each feature
//! branch pushed once a week; each pull request pushed three times over five days, the 20 spread
//! over the year (685 pushes a year). Every scan has 2,000 findings, 1 % of which change status
//! from one default-branch push to the next; a branch differs from the default by a few. 1 % of
//! each project's findings are triaged.
//!
//! The account grows through the sizes given (each run adds projects to the same account), so
//! the cost of N = 1,000 is paid once:
//!
//!   cargo run --release -p tidemark-bench --bin scale-bench -- 10,100,1000 > scale.jsonl
//!   scripts/pg-throwaway.sh sh -c 'DATABASE_URL=$TIDEMARK_TEST_POSTGRES_URL \
//!     cargo run --release -p tidemark-bench --bin scale-bench -- 10,100,1000' > scale-pg.jsonl
//!
//! With `SCALE_DATA_DIR=DIR` the account lives in DIR (the SQLite file, and the calendar its
//! history was written by) and a later run carries on from it: a run stopped half-way (N =
//! 1,000 takes hours on 2 cores) resumes after each project's latest scan. On PostgreSQL the
//! database `DATABASE_URL` names keeps it.
//!
//! With `SCALE_GROW_ONLY=1` a run only grows the account (no server measured): the hours of
//! growth can run beside other work, and the measurement later on a quiet machine. Growing
//! may run under Debian's `eatmydata` (fsync returns at once: the same rows, written sooner);
//! the measuring run goes without it. Stop a growing run by killing it, never by pausing it.
//!
//! With `SCALE_PAGES_ONLY=1` a run of a grown account leaves out the two housekeeping passes
//! (three quarters of an hour at PostgreSQL's N = 1,000, once measured), so the pushes and
//! pages can be measured again on their own.
//!
//! Each size prints one JSON line (stdout) and a Markdown table (stderr, with progress);
//! `bench/scale/chart.py` turns the JSON lines of both databases into the table and SVG chart
//! of docs/benchmarks.md.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../server/tests/common/browser.rs"]
mod browser;
#[path = "scale/harness.rs"]
mod harness;
#[path = "../../server/tests/common/oidc.rs"]
mod oidc;
#[path = "scale/workload.rs"]
mod workload;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tidemark_store::{AccountId, Db, Writer};

/// Requests timed per page and size.
const RUNS: usize = 30;
/// Pushes timed through HTTP per size.
const TIMED_PUSHES: usize = 100;
/// Projects written at once (each project's own pushes stay in order).
const WRITERS: usize = 16;

#[tokio::main]
async fn main() {
    let sizes = harness::sizes();
    let temp = tempfile::tempdir().unwrap();
    let dir = harness::data_dir(&temp);
    let mut h = harness::Harness::start(&dir).await;
    let (writer, account) = (Writer::for_tests(h.state.db.clone()), h.account.clone());

    let clock = workload::Clock::kept_in(&dir);
    let mut built = tidemark_store::dashboard::list_projects(&h.state.db, &account)
        .await
        .unwrap()
        .len();
    for n in sizes {
        let started = Instant::now();
        // The last projects written may be part-written: they carry on after their latest scan.
        grow(
            &writer,
            &account,
            &clock,
            built.saturating_sub(WRITERS).min(n),
            n,
        )
        .await;
        let grown = started.elapsed();
        built = built.max(n);
        if std::env::var_os("SCALE_GROW_ONLY").is_some() {
            eprintln!("grown to N = {n} in {:.0} s", grown.as_secs_f64());
            continue;
        }
        if let Db::Postgres(pool) = &h.state.db {
            // What autovacuum does within a minute of a bulk load.
            sqlx::query("VACUUM ANALYZE").execute(pool).await.unwrap();
        }
        let mut figures = serde_json::Map::new();
        figures.insert("backend".into(), json!(h.backend));
        figures.insert("projects".into(), json!(n));
        figures.insert("grown_s".into(), json!(grown.as_secs_f64()));
        figures.insert("scans".into(), json!(n * workload::PUSHES_PER_PROJECT));
        if std::env::var_os("SCALE_PAGES_ONLY").is_none() {
            figures.insert(
                "housekeeping_s".into(),
                json!(housekeep(&writer).await.as_secs_f64()),
            );
            figures.insert(
                "housekeeping_again_s".into(),
                json!(housekeep(&writer).await.as_secs_f64()),
            );
        }
        figures.insert("db_bytes".into(), json!(db_size(&h.state.db, &dir).await));
        let pushes = time_pushes(&writer, &account, &h.base, &h.api_key, &clock, n).await;
        figures.insert("push_ms".into(), harness::percentiles(pushes));
        let target = Target::find(&h.state.db, &account, &clock).await;
        for (name, url, key) in target.pages(&h.base, &h.api_key).await {
            let times = h.time_page(&url, key.as_deref(), name, RUNS).await;
            figures.insert(name.into(), harness::percentiles(times));
        }
        let line = serde_json::Value::Object(figures);
        println!("{line}");
        eprintln!("{}", markdown(&line));
    }
    h.state.db.close().await;
}

/// Adds projects `from..to` to the account, `WRITERS` at a time, each project's year in order.
async fn grow(
    writer: &Writer,
    account: &AccountId,
    clock: &workload::Clock,
    from: usize,
    to: usize,
) {
    let next = Arc::new(AtomicUsize::new(from));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..WRITERS.min(to - from) {
        let writer = Writer::for_tests(writer.db().clone());
        let (account, clock) = (account.clone(), *clock);
        let (next, done) = (next.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let p = next.fetch_add(1, Ordering::Relaxed);
                if p >= to {
                    break;
                }
                workload::write_project(&writer, &account, &clock, p, &done).await;
            }
        }));
    }
    let progress = {
        let done = done.clone();
        tokio::spawn(async move {
            let total = (to - from) * workload::PUSHES_PER_PROJECT;
            loop {
                tokio::time::sleep(Duration::from_secs(30)).await;
                let d = done.load(Ordering::Relaxed);
                let secs = started.elapsed().as_secs_f64();
                eprintln!(
                    "  {d} of {total} pushes in {secs:.0} s ({:.0}/s, about {:.0} s left)",
                    d as f64 / secs,
                    (total - d) as f64 / (d.max(1) as f64 / secs)
                );
            }
        })
    };
    for task in tasks {
        task.await.unwrap();
    }
    progress.abort();
}

/// One housekeeping pass with the default policy (SonarQube's ages), timed.
async fn housekeep(writer: &Writer) -> Duration {
    let started = Instant::now();
    let policy = tidemark_domain::housekeeping::Policy::default();
    server::workers::housekeeping::run_pass(writer, "scale-bench", Some(&policy))
        .await
        .unwrap()
        .expect("the lease is free");
    started.elapsed()
}

async fn db_size(db: &Db, dir: &std::path::Path) -> u64 {
    match db {
        Db::Postgres(pool) => {
            let (bytes,): (i64,) = sqlx::query_as("SELECT pg_database_size(current_database())")
                .fetch_one(pool)
                .await
                .unwrap();
            bytes as u64
        }
        Db::Sqlite { .. } => std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("tidemark.db"))
            .map(|e| e.metadata().unwrap().len())
            .sum(),
    }
}

/// `TIMED_PUSHES` default-branch pushes through `/v1/dashboard/push`, one at a time, over the
/// account's projects: each its project's next scan, 1 % changed from its latest.
async fn time_pushes(
    writer: &Writer,
    account: &AccountId,
    base: &str,
    api_key: &str,
    clock: &workload::Clock,
    n: usize,
) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let mut times = Vec::with_capacity(TIMED_PUSHES);
    for i in 0..TIMED_PUSHES {
        let p = (i * 7919) % n;
        let seed = (n.ilog10() as usize * TIMED_PUSHES + i) as u64;
        let body = workload::next_default_push(writer, account, p, seed, clock.now)
            .await
            .to_string();
        let started = Instant::now();
        let res = client
            .post(format!("{base}/v1/dashboard/push"))
            .header("X-API-Key", api_key)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let text = res.text().await.unwrap();
        times.push(started.elapsed());
        assert!(status.is_success(), "push: {status} {text}");
    }
    times
}

/// What the pages are measured on: the account's first project, its latest default-branch
/// scan and one of its tracked findings.
struct Target {
    project: String,
    scan: String,
    finding: String,
}

impl Target {
    async fn find(db: &Db, account: &AccountId, clock: &workload::Clock) -> Target {
        let (project, mut rows) = workload::tracked_of(db, account, 0, 1, clock.now).await;
        let row = tidemark_store::dashboard::find_project(db, account, &project)
            .await
            .unwrap()
            .expect("project 0");
        Target {
            project: project.to_string(),
            scan: row.last_scan_id.expect("a scan").to_string(),
            finding: rows.pop().expect("a tracked finding").id.to_string(),
        }
    }

    /// Each page's name, address and the API key it is read with (`None`: the signed-in
    /// browser). Page 50 of `/v1`'s findings list is reached by following 49 cursors first.
    async fn pages(
        &self,
        base: &str,
        api_key: &str,
    ) -> Vec<(&'static str, String, Option<String>)> {
        let p = &self.project;
        let findings = format!("{base}/v1/projects/{p}/findings?limit=20");
        let page_50 = cursor_page(&findings, api_key, 50).await;
        let key = Some(api_key.to_owned());
        vec![
            ("overview", format!("{base}/projects"), None),
            (
                "project_all",
                format!("{base}/projects/{p}?range=all"),
                None,
            ),
            (
                "project_90d",
                format!("{base}/projects/{p}?range=90d"),
                None,
            ),
            (
                "scan",
                format!("{base}/projects/{p}/scans/{}", self.scan),
                None,
            ),
            (
                "finding",
                format!("{base}/projects/{p}/findings/{}", self.finding),
                None,
            ),
            ("v1_findings", findings, key.clone()),
            ("v1_findings_page_50", page_50, key),
        ]
    }
}

/// The address of page `page` of a cursor-paged `/v1` list.
async fn cursor_page(first: &str, api_key: &str, page: usize) -> String {
    let client = reqwest::Client::new();
    let mut url = first.to_owned();
    for _ in 1..page {
        let body: serde_json::Value = client
            .get(&url)
            .header("X-API-Key", api_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let cursor = body["next_cursor"].as_str().expect("a next page");
        url = format!("{first}&cursor={cursor}");
    }
    url
}

fn markdown(line: &serde_json::Value) -> String {
    let mut out = format!(
        "| {} | N = {} | {:.0} MiB | housekeeping {:.1} s, again {:.1} s |\n",
        line["backend"],
        line["projects"],
        line["db_bytes"].as_f64().unwrap() / 1048576.0,
        line["housekeeping_s"].as_f64().unwrap_or(f64::NAN),
        line["housekeeping_again_s"].as_f64().unwrap_or(f64::NAN),
    );
    for (name, value) in line.as_object().unwrap() {
        if let Some(p50) = value.get("p50") {
            out.push_str(&format!(
                "| {name} | p50 {:.1} ms | p95 {:.1} ms | p99 {:.1} ms |\n",
                p50.as_f64().unwrap(),
                value["p95"].as_f64().unwrap(),
                value["p99"].as_f64().unwrap()
            ));
        }
    }
    out
}
