//! One large account's pushes through HTTP on PostgreSQL (issue 70): `WRITERS` CI jobs of one
//! account, each pushing its own project's default branch back to back (2,000 findings, 1 %
//! of them changing from one push to the next), against one `tidemark-server` replica or two
//! sharing the database (each project's pushes to one of them, as the documented proxy routes
//! by the project header, or each push to the next in turn).
//!
//!   scripts/pg-throwaway.sh sh -c 'DATABASE_URL=$TIDEMARK_TEST_POSTGRES_URL \
//!     target/release/replicas-bench target/release/tidemark-server [BEFORE_BIN] [rounds] [secs]'
//!
//! Phases alternate A B B A per round (a machine that speeds up or slows down during the run
//! counts against neither): A = one replica, B = two, each project's pushes to one of them;
//! then two replicas taking the pushes in turn. With `BEFORE_BIN` (a build from before a
//! change, on the same schema) each round first runs it alone with one replica, so today's
//! figure and the change's are measured in one sitting. Each phase prints one JSON line
//! (stdout): replicas, pushes a second, the pushes' p50/p99 as their jobs waited for them, and
//! the machine's CPU a push (the servers', this load generator's, and the rest: PostgreSQL's)
//! with the share the cores sat idle, which says whether a phase ran out of cores or waited.
//! Needs `target/site` (cargo leptos build --release) for the servers to start.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use sha2::{Digest as _, Sha256};

/// CI jobs of the account pushing at once, each to its own project.
const WRITERS: usize = 16;
const FINDINGS: usize = 2_000;
/// Findings whose status flips from one push of a project to the next.
const CHANGES: usize = 20;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: replicas-bench SERVER_BIN [BEFORE_BIN] [rounds] [secs]");
    let before = args.get(2).filter(|a| a.parse::<u32>().is_err()).cloned();
    let rest: Vec<u64> = args[2..].iter().filter_map(|a| a.parse().ok()).collect();
    let rounds = rest.first().copied().unwrap_or(2);
    let secs = rest.get(1).copied().unwrap_or(30);
    let db = std::env::var("DATABASE_URL").expect("DATABASE_URL (PostgreSQL)");
    let master = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(rand::random::<[u8; 32]>())
    };

    let servers = [
        Server::start(bin, &db, &master),
        Server::start(bin, &db, &master),
    ];
    let old = before.as_ref().map(|b| Server::start(b, &db, &master));
    for s in servers.iter().chain(old.iter()) {
        s.ready().await;
    }
    let key = api_key(bin, &db, &master, &servers[0].url).await;
    let writers: Vec<Writer> = (0..WRITERS).map(Writer::new).collect();
    let writers = Arc::new(tokio::sync::Mutex::new(writers));
    // Each project's first push (and a warm cache) before anything is timed.
    let first = std::slice::from_ref(&servers[0].url);
    let pids: Vec<u32> = servers
        .iter()
        .chain(old.iter())
        .map(|s| s.child.id())
        .collect();
    run_phase(&writers, first, Route::InTurn, &key, 10, &pids).await;
    for _ in 0..rounds {
        if let Some(old) = &old {
            let urls = std::slice::from_ref(&old.url);
            let measured = run_phase(&writers, urls, Route::InTurn, &key, secs, &pids).await;
            report("before, 1 replica", 1, measured, secs);
        }
        // A B B A, A one replica and B two with each project's pushes sent to one of them (as
        // the documented proxy routes by X-Tidemark-Project); then two in turn, as a proxy that
        // knows nothing of projects would, which a kept line state matches half the time.
        for (replicas, route) in [
            (1, Route::ByProject),
            (2, Route::ByProject),
            (2, Route::ByProject),
            (1, Route::ByProject),
            (2, Route::InTurn),
        ] {
            let urls: Vec<String> = servers[..replicas].iter().map(|s| s.url.clone()).collect();
            let label = match (replicas, route) {
                (1, _) => "1 replica",
                (_, Route::ByProject) => "2 replicas, by project",
                (_, Route::InTurn) => "2 replicas, in turn",
            };
            report(
                label,
                replicas,
                run_phase(&writers, &urls, route, &key, secs, &pids).await,
                secs,
            );
        }
    }
    // The servers stop when dropped, here or on a panic.
}

fn report(label: &str, replicas: usize, measured: Measured, secs: u64) {
    let Measured { mut times, cpu } = measured;
    let n = times.len();
    assert!(n > 0, "{label}: no push answered");
    let rate = n as f64 / secs as f64;
    times.sort();
    let at = |q: f64| times[((n.max(1) - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    let p = serde_json::json!({"p50": at(0.5), "p99": at(0.99)});
    let per_push = |ms: f64| ms / n as f64;
    let cpu_json = serde_json::json!({
        "idle_pct": cpu.idle_pct(),
        "ms_per_push": {"all": per_push(cpu.busy_ms), "servers": per_push(cpu.servers_ms),
                        "load_generator": per_push(cpu.bench_ms),
                        "postgres_and_rest": per_push(cpu.rest_ms())},
    });
    println!(
        "{}",
        serde_json::json!({"phase": label, "replicas": replicas, "pushes": n,
                            "pushes_per_s": rate, "latency_ms": p, "cpu": cpu_json})
    );
    eprintln!(
        "{label:>22}: {rate:6.1} pushes/s, p50 {:.1} ms, p99 {:.1} ms; CPU {:.1} ms a push \
         (servers {:.1}, PostgreSQL and the rest {:.1}, load {:.1}), {:.0} % idle",
        p["p50"].as_f64().unwrap(),
        p["p99"].as_f64().unwrap(),
        per_push(cpu.busy_ms),
        per_push(cpu.servers_ms),
        per_push(cpu.rest_ms()),
        per_push(cpu.bench_ms),
        cpu.idle_pct(),
    );
}

/// Which replica a push goes to.
#[derive(Clone, Copy)]
enum Route {
    /// The next in turn, whatever the project.
    InTurn,
    /// The one its project's label hashes to, as nginx's `hash` on the project header does
    /// (so the split of 16 projects over two replicas is as uneven as a hash makes it).
    ByProject,
}

/// Every writer pushes back to back for `secs`, each push to the replica `route` says; the
/// time each push took, for those answered before the phase ended.
async fn run_phase(
    writers: &Arc<tokio::sync::Mutex<Vec<Writer>>>,
    urls: &[String],
    route: Route,
    key: &str,
    secs: u64,
    pids: &[u32],
) -> Measured {
    let client = reqwest::Client::new();
    let clock = CpuClock::read(pids);
    let turn = Arc::new(AtomicUsize::new(0));
    let end = Instant::now() + Duration::from_secs(secs);
    let taken: Vec<Writer> = std::mem::take(&mut *writers.lock().await);
    let tasks: Vec<_> = taken
        .into_iter()
        .map(|mut w| {
            let (client, urls, key, turn) =
                (client.clone(), urls.to_vec(), key.to_owned(), turn.clone());
            tokio::spawn(async move {
                let mut times = Vec::new();
                while Instant::now() < end {
                    let url = match route {
                        Route::InTurn => &urls[turn.fetch_add(1, Ordering::Relaxed) % urls.len()],
                        Route::ByProject => {
                            &urls[usize::from(Sha256::digest(&w.label)[0]) % urls.len()]
                        }
                    };
                    let body = w.next_body();
                    let started = Instant::now();
                    let res = client
                        .post(format!("{url}/v1/dashboard/push"))
                        .header("X-API-Key", &key)
                        .header("Content-Type", "application/json")
                        .body(body)
                        .send()
                        .await
                        .expect("the replica answers");
                    let status = res.status();
                    let text = res.text().await.unwrap_or_default();
                    assert_eq!(status, reqwest::StatusCode::CREATED, "{text}");
                    if Instant::now() <= end {
                        times.push(started.elapsed());
                    }
                }
                (w, times)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut back = Vec::new();
    for t in tasks {
        let (w, times) = t.await.unwrap();
        back.push(w);
        all.extend(times);
    }
    *writers.lock().await = back;
    Measured {
        times: all,
        cpu: clock.since(pids),
    }
}

/// A phase's push times and what the machine's cores did meanwhile.
struct Measured {
    times: Vec<Duration>,
    cpu: CpuSpent,
}

/// Where the machine's CPU time went during a phase, in milliseconds of one core.
struct CpuSpent {
    busy_ms: f64,
    idle_ms: f64,
    servers_ms: f64,
    bench_ms: f64,
}

impl CpuSpent {
    /// PostgreSQL's processes, and whatever else ran (the kernel's share of the network).
    fn rest_ms(&self) -> f64 {
        (self.busy_ms - self.servers_ms - self.bench_ms).max(0.0)
    }

    fn idle_pct(&self) -> f64 {
        100.0 * self.idle_ms / (self.busy_ms + self.idle_ms).max(1.0)
    }
}

/// CPU time counters from `/proc`: the machine's busy and idle time (`/proc/stat`), the
/// servers' and this process's own (`/proc/PID/stat`), in clock ticks.
struct CpuClock {
    busy: u64,
    idle: u64,
    servers: u64,
    bench: u64,
}

/// Linux's `USER_HZ`, the unit of `/proc`'s CPU times: 100 on every architecture it runs on.
const TICKS_PER_S: f64 = 100.0;

impl CpuClock {
    fn read(pids: &[u32]) -> CpuClock {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .filter_map(|t| t.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
        let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
        let busy = ticks.iter().take(8).sum::<u64>() - idle;
        CpuClock {
            busy,
            idle,
            servers: pids.iter().map(|p| process_ticks(&p.to_string())).sum(),
            bench: process_ticks("self"),
        }
    }

    fn since(&self, pids: &[u32]) -> CpuSpent {
        let now = CpuClock::read(pids);
        let ms = |a: u64, b: u64| a.saturating_sub(b) as f64 * 1e3 / TICKS_PER_S;
        CpuSpent {
            busy_ms: ms(now.busy, self.busy),
            idle_ms: ms(now.idle, self.idle),
            servers_ms: ms(now.servers, self.servers),
            bench_ms: ms(now.bench, self.bench),
        }
    }
}

/// A process's user and system time (`/proc/PID/stat` fields 14 and 15, counted after the
/// parenthesised name, which may hold spaces).
fn process_ticks(pid: &str) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum()
}

/// One CI job: its project's findings as JSON, pass and fail, so that a body is assembled
/// by copying (the load generator shares the servers' two cores).
struct Writer {
    pass: Vec<String>,
    fail: Vec<String>,
    failing: Vec<bool>,
    rng: StdRng,
    label: String,
    at: i64,
}

impl Writer {
    fn new(w: usize) -> Writer {
        let finding = |i: usize, status: &str, severity: &str| {
            format!(
                r#"{{"rule_id":"cis-aws-2.0-{}.{}","resource":"aws_s3_bucket.w{w}-r{i}","status":"{status}","severity":"{severity}","message":"Bucket policy allows plain HTTP","remediation":"Deny requests where aws:SecureTransport is false"}}"#,
                i % 12 + 1,
                i % 150
            )
        };
        let severities = ["critical", "high", "medium", "low"];
        let mut rng = StdRng::seed_from_u64(w as u64);
        Writer {
            pass: (0..FINDINGS)
                .map(|i| finding(i, "PASS", severities[i % 4]))
                .collect(),
            fail: (0..FINDINGS)
                .map(|i| finding(i, "FAIL", severities[i % 4]))
                .collect(),
            failing: (0..FINDINGS).map(|_| rng.gen_bool(0.1)).collect(),
            rng,
            label: format!("svc-{w:02}"),
            at: 1_790_000_000_000,
        }
    }

    fn next_body(&mut self) -> String {
        for _ in 0..CHANGES {
            let i = self.rng.gen_range(0..FINDINGS);
            self.failing[i] = !self.failing[i];
        }
        self.at += 60_000;
        let mut counts = [0u64; 4];
        let mut findings = String::with_capacity(FINDINGS * 230);
        for i in 0..FINDINGS {
            if i > 0 {
                findings.push(',');
            }
            if self.failing[i] {
                counts[i % 4] += 1;
                findings.push_str(&self.fail[i]);
            } else {
                findings.push_str(&self.pass[i]);
            }
        }
        let failed: u64 = counts.iter().sum();
        let passed = FINDINGS as u64 - failed;
        let at = chrono::DateTime::from_timestamp_millis(self.at)
            .unwrap()
            .to_rfc3339();
        format!(
            r#"{{"project_label":"{}","cloud":"aws","cloud_account_id":"111122223333","frameworks":["cis-aws-2.0"],"score":{:.2},"passed":{passed},"failed":{failed},"severity_counts":{{"critical":{},"high":{},"medium":{},"low":{}}},"findings":[{findings}],"state_source":"ci","scanned_at":"{at}","git":{{"branch":"main","default_branch":"main"}}}}"#,
            self.label,
            100.0 * passed as f64 / FINDINGS as f64,
            counts[0],
            counts[1],
            counts[2],
            counts[3],
        )
    }
}

/// A `tidemark-server serve` process on the shared database.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(bin: &str, db: &str, master: &str) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let data = tempfile::tempdir().unwrap().keep();
        let status = Command::new(bin)
            .arg("migrate")
            .env("DATABASE_URL", db)
            .env("TIDEMARK_MASTER_KEY", master)
            .env("TIDEMARK_DATA_DIR", &data)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{bin} migrate");
        let child = Command::new(bin)
            .arg("serve")
            .env("DATABASE_URL", db)
            .env("TIDEMARK_MASTER_KEY", master)
            .env("TIDEMARK_DATA_DIR", &data)
            .env("LEPTOS_SITE_ROOT", "target/site")
            .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
            .env("TIDEMARK_BASE_URL", &url)
            .env("TIDEMARK_WRITES_PER_MINUTE", "100000000")
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Server { child, url }
    }

    async fn ready(&self) {
        for _ in 0..600 {
            if reqwest::get(format!("{}/readyz", self.url))
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} did not become ready", self.url);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An enterprise licence made by the operator command, activated: its API key.
async fn api_key(bin: &str, db: &str, master: &str, url: &str) -> String {
    let out = Command::new(bin)
        .args([
            "license",
            "create",
            "--email",
            "ci@bench.example",
            "--tier",
            "enterprise",
            "--json",
        ])
        .env("DATABASE_URL", db)
        .env("TIDEMARK_MASTER_KEY", master)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = made["license_key"].as_str().unwrap();
    let hash = hex::encode(Sha256::digest(key.as_bytes()));
    let res: serde_json::Value = reqwest::Client::new()
        .post(format!("{url}/v1/license/activate"))
        .header("X-License-Key-Hash", hash)
        .json(&serde_json::json!({"machine": "ci-runner"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    res["api_key"].as_str().unwrap().to_owned()
}
