//! Dashboard render times on big data: a project with 100,000 scans and a scan with 50,000
//! findings, served by the real release server (in-process; a SQLite file, or the PostgreSQL
//! database `DATABASE_URL` names), signed in through the scripted OpenID provider of the
//! server's tests. Prints a Markdown table.
//!
//!   cargo run --release -p tidemark-bench --bin dashboard-bench
//!   PG_DURABLE=1 scripts/pg-throwaway.sh sh -c \
//!     'DATABASE_URL=$TIDEMARK_TEST_POSTGRES_URL cargo run --release -p tidemark-bench --bin dashboard-bench'

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../server/tests/common/browser.rs"]
mod browser;
#[path = "../../server/tests/common/oidc.rs"]
mod oidc;

use std::time::{Duration, Instant};

use sqlx::QueryBuilder;
use tidemark_store::Db;

const SCANS: i64 = 100_000;
const FINDINGS: i64 = 50_000;
const RUNS: usize = 30;

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let provider = oidc::ScriptedProvider::start().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let mut env: std::collections::HashMap<String, String> = provider
        .env()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    env.insert("TIDEMARK_DATA_DIR".into(), dir.path().display().to_string());
    env.insert("TIDEMARK_BASE_URL".into(), base.clone());
    env.insert("LEPTOS_SITE_ADDR".into(), addr.to_string());
    env.insert("RUST_LOG".into(), "warn".into());
    if let Ok(url) = std::env::var("DATABASE_URL") {
        env.insert("DATABASE_URL".into(), url);
    }
    let config = server::config::Config::from_lookup(|k| env.get(k).cloned()).unwrap();
    let state = server::build_state(config).await.unwrap();
    let email = "bench@example.com";
    let license = tidemark_services::licensing::create(
        &tidemark_store::Writer::for_tests(state.db.clone()),
        &state.license_keys,
        tidemark_services::licensing::LicenseRequest {
            email: tidemark_domain::text::Email::parse(email).unwrap(),
            tier: tidemark_wire::Tier::Enterprise,
            expires_at: None,
            max_projects: None,
            max_machines: None,
            features_added: Vec::new(),
            features_removed: Vec::new(),
        },
        &tidemark_store::testing::audit(),
    )
    .await
    .unwrap();
    let seeded = Instant::now();
    let (project, last_scan) = seed(&state.db, &license.account_id).await;
    // Seeded one row per finding, as releases before spans stored scans; moved to spans as
    // housekeeping moves them, so the pages read the layout pushes write.
    let moved = tidemark_store::spans::moving::move_all(
        &tidemark_store::Writer::for_tests(state.db.clone()),
        5_000,
    )
    .await
    .unwrap();
    assert_eq!(moved.left, 0, "{moved:?}");
    if let Db::Postgres(pool) = &state.db {
        // What autovacuum does within a minute of a bulk load: planner statistics, and the
        // visibility map that index-only scans need.
        sqlx::query("VACUUM ANALYZE").execute(pool).await.unwrap();
    }
    eprintln!(
        "seeded {SCANS} scans and {FINDINGS} findings in {:.1?}",
        seeded.elapsed()
    );
    let serving = state.clone();
    tokio::spawn(async move { server::serve(serving, listener).await.unwrap() });

    provider.script(oidc::Script::user(email));
    let mut b = browser::Browser::new(&base);
    assert_eq!(b.sign_in_with_oidc(email).await.status(), 200);

    let by_link = page_500_by_link(&mut b, &base, project.as_ref(), &last_scan).await;
    let pages = [
        (
            "project page, range all (100,000 scans)",
            format!("/projects/{project}?range=all"),
        ),
        ("project page, 90 days", format!("/projects/{project}")),
        ("projects list", "/projects".to_owned()),
        (
            "scan page, first page (50,000 findings)",
            format!("/projects/{project}/scans/{last_scan}"),
        ),
        (
            "scan page, filtered (severity + text search)",
            format!("/projects/{project}/scans/{last_scan}?severity=high&q=bucket-12"),
        ),
        (
            "scan page, page 500",
            format!("/projects/{project}/scans/{last_scan}?page=500"),
        ),
        (
            "scan page, page 500 by its link (keyset)",
            format!("/projects/{project}/scans/{last_scan}{by_link}"),
        ),
    ];
    println!("| page (full server-rendered HTML) | p50 | p95 | max | size |");
    println!("|---|---|---|---|---|");
    for (name, path) in pages {
        let url = format!("{base}{path}");
        let body = b.get(&url).await.text().await.unwrap(); // warm-up
        assert!(body.contains("</html>"), "{name}: complete page");
        let mut times = Vec::with_capacity(RUNS);
        for _ in 0..RUNS {
            let t = Instant::now();
            let res = b.get(&url).await;
            assert_eq!(res.status(), 200, "{name}");
            let _ = res.bytes().await.unwrap();
            times.push(t.elapsed());
        }
        times.sort();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {name} | {} | {} | {} | {} KiB |",
            ms(times[RUNS / 2]),
            ms(times[RUNS * 95 / 100]),
            ms(times[RUNS - 1]),
            body.len() / 1024
        );
    }
}

/// `?page=500` of the scan as its pager link reaches it: after the last finding of
/// `?page=499`.
async fn page_500_by_link(
    b: &mut browser::Browser,
    base: &str,
    project: &str,
    scan: &str,
) -> String {
    let before_it = b
        .get(&format!(
            "{base}/projects/{project}/scans/{scan}?view=all&page=499"
        ))
        .await
        .text()
        .await
        .unwrap();
    let at = before_it.find("rel=\"next\"").expect("a next page");
    let start = before_it[..at].rfind("href=\"").unwrap() + 6;
    let link = before_it[start..at]
        .split('"')
        .next()
        .unwrap()
        .replace("&amp;", "&");
    assert!(link.contains("after="), "{link}");
    link
}

/// One project with `SCANS` scans over two years; the last scan has `FINDINGS` findings.
async fn seed(db: &Db, account: &str) -> (tidemark_wire::ids::ProjectId, String) {
    let writer = tidemark_store::Writer::for_tests(db.clone());
    // The body is compiled once per backend, with its concrete sqlx types.
    tidemark_store::on_db_write!(&writer, pool => {
    let project = tidemark_domain::ids::new_project_id();
    let now = tidemark_domain::now_millis();
    let step = 2 * 365 * tidemark_domain::time::DAY_MS / SCANS;
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("INSERT INTO projects (id, account_id, label, created_at) VALUES ($1, $2, 'big/history', $3)")
        .bind(&project)
        .bind(account)
        .bind(now)
        .execute(&mut *tx)
        .await
        .unwrap();
    let score = |i: i64| 60.0 + 30.0 * ((i as f64) / 5000.0).sin() + ((i * 7919) % 10) as f64 * 0.3;
    for chunk in (1..=SCANS).collect::<Vec<_>>().chunks(400) {
        let mut q = QueryBuilder::new(
            "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, \
             failed, sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, \
             frameworks, state_source, scanned_at, received_at, finding_count, body_hash) ",
        );
        q.push_values(chunk, |mut row, &i| {
            let at = now - (SCANS - i) * step;
            row.push_bind(&project)
                .push_bind(i)
                .push_bind(format!("scan-{i:06}"))
                .push_bind(account)
                .push_bind(score(i))
                .push_bind(score(i) - score(i - 1))
                .push_bind(150_i64)
                .push_bind(10_i64)
                .push_bind(i % 3)
                .push_bind(i % 5)
                .push_bind(i % 7)
                .push_bind(i % 4)
                .push_bind("aws")
                .push_bind("123456789012")
                .push_bind("[\"cis-aws-2.0\",\"soc2\"]")
                .push_bind("ci")
                .push_bind(at)
                .push_bind(at)
                .push_bind(if i >= SCANS - 1 { FINDINGS } else { 0 })
                .push_bind("h");
        });
        q.build().execute(&mut *tx).await.unwrap();
    }
    let severities = ["critical", "high", "medium", "low"];
    // The last two scans have the findings (the one before differs by a few statuses), so the
    // scan page's diff compares two scans of 50,000 findings.
    for (scan, flip) in [(SCANS - 1, 7), (SCANS, 0)] {
    for chunk in (0..FINDINGS).collect::<Vec<_>>().chunks(3000) {
        let mut q = QueryBuilder::new(
            "INSERT INTO findings (project_id, scan_seq, ordinal, rule_id, resource, status, \
             severity, message, remediation) ",
        );
        q.push_values(chunk, |mut row, &n| {
            let framework = if n % 2 == 0 { "cis-aws-2.0" } else { "soc2" };
            // Every `flip`-th finding of the earlier scan has the other status.
            let pass = (n % 10 == 0) != (flip > 0 && n % flip == 0);
            row.push_bind(&project)
                .push_bind(scan)
                .push_bind(n)
                .push_bind(format!("{framework}-{}.{}", n % 9, n % 13))
                .push_bind(format!("aws_s3_bucket.bucket-{n}"))
                .push_bind(if pass { "PASS" } else { "FAIL" })
                .push_bind(severities[(n % 4) as usize])
                .push_bind("Bucket allows public read access")
                .push_bind("Block public access on the bucket");
        });
        q.build().execute(&mut *tx).await.unwrap();
    }
    }
    let last = format!("scan-{SCANS:06}");
    // The project's default line, as the branches migration makes one for older histories:
    // the page shows a line, and a project without one is not found.
    let line = format!("br_{project}");
    sqlx::query(
        "INSERT INTO branches (id, account_id, project_id, scan_count, head_seq, created_at, last_push_at) \
         VALUES ($1, $2, $3, $4, $4, $5, $5)",
    )
    .bind(&line)
    .bind(account)
    .bind(&project)
    .bind(SCANS)
    .bind(now)
    .execute(&mut *tx)
    .await
    .unwrap();
    sqlx::query("UPDATE scans SET branch_id = $1, line_seq = seq WHERE project_id = $2")
        .bind(&line)
        .bind(&project)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("UPDATE projects SET default_branch_id = $1 WHERE id = $2")
        .bind(&line)
        .bind(&project)
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE projects SET scan_count = $1, last_score = $2, last_delta = 0, last_scan_id = $3 WHERE id = $4",
    )
    .bind(SCANS)
    .bind(score(SCANS))
    .bind(&last)
    .bind(&project)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    (project, last)
    })
}
