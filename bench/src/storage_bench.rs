//! Settings → Storage and `project list` at a large account's N (issue 70): one account grown
//! to N projects of six monthly default-branch scans of 2,000 findings each (through the
//! store's push path, 16 projects at a time), then at each N:
//!
//! - `measure_all_s`: measuring every project afresh, as the `project_usage` worker catches
//!   up after each of them was pushed to;
//! - `settings_storage`: `GET /settings/storage` as the signed-in owner reads it, p50/p95/p99;
//! - `project_list`: `tidemark-server project list --account … --json` run as an operator
//!   runs it (a process of its own, `TIDEMARK_SERVER_BIN`, else the release build);
//! - `overview`: `GET /projects` (the first page, the failing projects, the oldest criticals,
//!   the 90 days' chart and the compliance roll-up), p50/p95/p99.
//!
//! ```text
//! cargo build --release -p server -p tidemark-bench
//! target/release/storage-bench 10,100,1000 > storage.jsonl
//! scripts/pg-throwaway.sh sh -c 'DATABASE_URL=$TIDEMARK_TEST_POSTGRES_URL \
//!   target/release/storage-bench 10,100,1000' > storage-pg.jsonl
//! ```
//!
//! The account grows through the sizes given; `SCALE_DATA_DIR` keeps it between runs as the
//! scale bench's does (the two accounts differ: use a directory of each's own).

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
use tidemark_domain::time::DAY_MS;
use tidemark_store::pushes::{record_push, PushOutcome};
use tidemark_store::usage::{refresh_stale, Allowance};
use tidemark_store::{AccountId, Writer};

/// Page reads timed per size.
const RUNS: usize = 30;
/// `project list` runs timed per size.
const LIST_RUNS: usize = 10;
const WRITERS: usize = 16;
/// Scans per project, a month apart.
const SCANS: i64 = 6;

#[tokio::main]
async fn main() {
    let sizes = harness::sizes();
    let temp = tempfile::tempdir().unwrap();
    let dir = harness::data_dir(&temp);
    let server_bin = std::env::var("TIDEMARK_SERVER_BIN")
        .unwrap_or_else(|_| "target/release/tidemark-server".into());
    let mut h = harness::Harness::start(&dir).await;
    let writer = Writer::for_tests(h.state.db.clone());
    let account = h.account.clone();
    let clock = workload::Clock::kept_in(&dir);
    let mut built = tidemark_store::dashboard::list_projects(&h.state.db, &account)
        .await
        .unwrap()
        .len();
    for n in sizes {
        let started = Instant::now();
        grow(&writer, &account, clock.now, built, n).await;
        let grown = started.elapsed();
        built = built.max(n);
        if let tidemark_store::Db::Postgres(pool) = &h.state.db {
            sqlx::query("VACUUM ANALYZE").execute(pool).await.unwrap();
        }
        // Every project pushed to since its last measurement: the worker's catch-up.
        forget_all(&writer).await;
        let started = Instant::now();
        let everything = Allowance {
            projects: i64::MAX,
            time: Duration::from_secs(3_600),
            settle: Duration::ZERO,
        };
        let measured = refresh_stale(&writer, None, clock.now, everything)
            .await
            .unwrap();
        let measure_all = started.elapsed();
        assert_eq!(measured as usize, built, "every project measured");
        let url = format!("{}/settings/storage", h.base);
        let page = h.time_page(&url, None, "settings_storage", RUNS).await;
        let list = time_project_list(&server_bin, &h.env, &account);
        // The overview (the projects page, with its roll-up and glance) at the same N: flat
        // in N once the database chooses the page and the push keeps the roll-up.
        let url = format!("{}/projects", h.base);
        let overview = h.time_page(&url, None, "overview", RUNS).await;
        let line = json!({
            "backend": h.backend,
            "projects": n,
            "grown_s": grown.as_secs_f64(),
            "measure_all_s": measure_all.as_secs_f64(),
            "settings_storage": harness::percentiles(page),
            "project_list": harness::percentiles(list),
            "overview": harness::percentiles(overview),
        });
        println!("{line}");
        eprintln!(
            "| {} | N = {n} | measuring all {:.1} s | Settings → Storage p95 {:.1} ms | project list p95 {:.0} ms | overview p95 {:.1} ms |",
            h.backend,
            measure_all.as_secs_f64(),
            line["settings_storage"]["p95"].as_f64().unwrap(),
            line["project_list"]["p95"].as_f64().unwrap(),
            line["overview"]["p95"].as_f64().unwrap(),
        );
    }
    h.state.db.close().await;
}

/// Drops every measurement, so the next refresh measures every project.
async fn forget_all(writer: &Writer) {
    tidemark_store::on_db_write!(writer, pool => {
        sqlx::query("DELETE FROM project_usage").execute(pool).await.map(|_| ())
    })
    .unwrap();
}

/// Adds projects `from..to`, [`WRITERS`] at a time, each its [`SCANS`] scans in order.
async fn grow(writer: &Writer, account: &AccountId, now: i64, from: usize, to: usize) {
    let next = Arc::new(AtomicUsize::new(from));
    let mut tasks = Vec::new();
    for _ in 0..WRITERS.min(to.saturating_sub(from)) {
        let writer = Writer::for_tests(writer.db().clone());
        let (account, next) = (account.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let p = next.fetch_add(1, Ordering::Relaxed);
                if p >= to {
                    break;
                }
                for month in 0..SCANS {
                    let at = now - (SCANS - month) * 30 * DAY_MS;
                    let push = workload::default_scan(p, at, |i| {
                        (i * 7 + p + month as usize * 13).is_multiple_of(10)
                    });
                    let outcome = record_push(&writer, workload::context(&account, now), push)
                        .await
                        .expect("push");
                    assert!(matches!(outcome, PushOutcome::Appended(..)), "{outcome:?}");
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// `project list --json` as an operator runs it, [`LIST_RUNS`] times after one warm-up.
fn time_project_list(
    server_bin: &str,
    env: &std::collections::HashMap<String, String>,
    account: &AccountId,
) -> Vec<Duration> {
    let mut times = Vec::with_capacity(LIST_RUNS);
    for run in 0..=LIST_RUNS {
        let started = Instant::now();
        let out = std::process::Command::new(server_bin)
            .args(["project", "list", "--account", account.as_ref(), "--json"])
            .envs(env)
            .output()
            .expect("run tidemark-server");
        assert!(
            out.status.success(),
            "project list: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if run > 0 {
            times.push(started.elapsed());
        }
    }
    times
}
