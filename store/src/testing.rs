//! Fresh, isolated databases for tests, on every backend the test run covers.
//!
//! SQLite: a new file in a temporary directory. PostgreSQL: a new schema in the database named
//! by `TIDEMARK_TEST_POSTGRES_URL` (the README's test command starts a throwaway server and sets
//! it). PostgreSQL is never skipped silently: without that variable the run fails, unless
//! `TIDEMARK_TEST_SKIP_POSTGRES=1` says on purpose that only SQLite is wanted.

use crate::{AccountId, ProjectId};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Backend, Db, Writer};

/// A database that exists only for one test. Dropping it removes a SQLite file; PostgreSQL
/// schemas are left to the throwaway server, which the test command deletes afterwards.
pub struct TestDb {
    /// Reads like a [`Db`]; tests write through it directly, since nothing cancels them.
    pub db: Writer,
    /// A `DATABASE_URL` that reaches this very database (for spawning a server on it).
    pub url: String,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// Another handle to write through, for tests that race writes in tasks of their own.
    pub fn writer(&self) -> Writer {
        Writer::for_tests(self.db.db().clone())
    }
}

/// The backends this test run must cover.
pub fn backends() -> Vec<Backend> {
    let skip_pg = std::env::var("TIDEMARK_TEST_SKIP_POSTGRES").is_ok_and(|v| v == "1");
    if skip_pg {
        return vec![Backend::Sqlite];
    }
    assert!(
        std::env::var("TIDEMARK_TEST_POSTGRES_URL").is_ok(),
        "TIDEMARK_TEST_POSTGRES_URL is not set: run the tests with `make test` (which starts a \
         throwaway PostgreSQL), point it at a PostgreSQL you own, or set \
         TIDEMARK_TEST_SKIP_POSTGRES=1 to test SQLite only on purpose"
    );
    vec![Backend::Sqlite, Backend::Postgres]
}

/// A fresh, migrated database on `backend`.
pub async fn fresh(backend: Backend) -> TestDb {
    let t = fresh_unmigrated(backend).await;
    t.db.migrate().await.expect("migrations apply");
    t
}

/// Applies the migrations up to and including `version` only: the schema an older release
/// left, for tests of what a migration does to existing data.
pub async fn migrate_until(db: &Writer, version: i64) {
    let migrator = sqlx::migrate::Migrator {
        migrations: std::borrow::Cow::Owned(
            crate::MIGRATOR
                .iter()
                .filter(|m| m.version <= version)
                .cloned()
                .collect(),
        ),
        ..sqlx::migrate::Migrator::DEFAULT
    };
    match db.db() {
        Db::Sqlite { writer, .. } => migrator.run(writer).await,
        Db::Postgres(pool) => migrator.run(pool).await,
    }
    .expect("older migrations apply");
}

/// A fresh database on `backend` with no schema at all.
pub async fn fresh_unmigrated(backend: Backend) -> TestDb {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("tidemark.db").display());
            let db = Db::connect(&url, 16).await.expect("open sqlite");
            TestDb {
                db: Writer::for_tests(db),
                url,
                _dir: Some(dir),
            }
        }
        Backend::Postgres => {
            let base = std::env::var("TIDEMARK_TEST_POSTGRES_URL")
                .expect("TIDEMARK_TEST_POSTGRES_URL names the test PostgreSQL");
            let schema = unique_name();
            let admin = Db::connect(&base, 1).await.expect("reach test postgres");
            if let Db::Postgres(pool) = &admin {
                sqlx::query(&format!("CREATE SCHEMA {schema}"))
                    .execute(pool)
                    .await
                    .expect("create schema");
            }
            admin.close().await;
            let sep = if base.contains('?') { '&' } else { '?' };
            let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
            let db = Db::connect(&url, 16).await.expect("open postgres schema");
            TestDb {
                db: Writer::for_tests(db),
                url,
                _dir: None,
            }
        }
    }
}

/// The database at `url` (a server or file the test set up itself), unmigrated.
pub async fn at_url(url: &str) -> TestDb {
    let db = Db::connect(url, 4).await.expect("open the test's database");
    TestDb {
        db: Writer::for_tests(db),
        url: url.to_owned(),
        _dir: None,
    }
}

/// A bare account row (no license), for tests of what hangs off an account.
pub async fn insert_account(db: &Writer, id: &str) {
    crate::on_db_write!(db, pool => {
        sqlx::query("INSERT INTO accounts (id, created_at) VALUES ($1, 0)")
            .bind(id)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
    })
    .expect("insert account");
}

fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!(
        "t_{}_{}_{}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The locks a push to a project takes on PostgreSQL (`$1` account, `$2` label), for tests that
/// hold them from outside to show who waits.
pub const PUSH_LOCKS: &str = crate::locks::PUSH;

/// PostgreSQL when this test run covers it; `None` when `TIDEMARK_TEST_SKIP_POSTGRES=1` says
/// on purpose that only SQLite is wanted (and a failure when neither is set).
pub fn postgres_backend() -> Option<Backend> {
    backends().into_iter().find(|b| *b == Backend::Postgres)
}

/// Declares a test once per database backend, as `NAME::sqlite` and `NAME::postgres`, so a
/// failure on one never hides the other's result:
///
/// ```text
/// tidemark_store::test_each_backend! {
///     /// What it shows.
///     async fn claims_are_exclusive(backend) {
///         let t = fresh(backend).await;
///         // ...
///     }
/// }
/// ```
#[macro_export]
macro_rules! test_each_backend {
    ($(#[$meta:meta])* async fn $name:ident($backend:ident) $body:block) => {
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test]
            async fn sqlite() {
                let $backend = $crate::Backend::Sqlite;
                $body
            }

            #[tokio::test]
            async fn postgres() {
                let Some($backend) = $crate::testing::postgres_backend() else {
                    return;
                };
                $body
            }
        }
    };
}

/// An account with a license (team tier, far expiry) whose e-mail is its first admin, as
/// `license create` makes one; returns the account id.
pub async fn insert_license(db: &Writer, email: &str) -> AccountId {
    let account_id = tidemark_domain::ids::new_account_id();
    insert_licensed_account(db, &account_id, email).await;
    account_id
}

/// A push by `account_id`'s key (see [`insert_pushing_account`]) under a generous write limit.
pub fn push_context(account_id: &(impl AsRef<str> + ?Sized)) -> crate::pushes::PushContext {
    let account_id = &AccountId::trusted(account_id.as_ref());
    crate::pushes::PushContext {
        account_id: account_id.to_owned(),
        key_id: push_key_id(account_id),
        project_cap: None,
        write_limit: tidemark_domain::rate::RollingLimit::per_minute(1_000),
        now: tidemark_domain::now_millis(),
        touch_key: false,
        raw_body_hash: None,
        pushed_by: None,
        custom_frameworks: false,
        drift_detection: false,
    }
}

/// A valid push for `label` with no findings, scanned `second` seconds after a fixed instant
/// (2026-11-18T09:46:40Z), with `score`.
pub fn plain_push(label: &str, second: i64, score: f64) -> tidemark_domain::push::ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let body = serde_json::json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": score, "passed": 3, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": [], "state_source": "ci", "scanned_at": at,
    });
    tidemark_domain::push::ValidPush::parse(body.to_string().as_bytes()).expect("a valid push")
}

/// An operator ("tests") making changes now: what store tests pass where a change is audited.
pub fn audit() -> tidemark_domain::audit::AuditContext {
    crate::audit::operator_context("tests", tidemark_domain::now_millis())
}

/// The scan a push appended; panics on any other outcome.
pub fn appended(outcome: crate::pushes::PushOutcome) -> crate::pushes::StoredScan {
    match outcome {
        crate::pushes::PushOutcome::Appended(scan, _) => scan,
        other => panic!("push not appended: {other:?}"),
    }
}

/// Pushes `body` (a push's JSON) with `ctx` and returns the scan it appended; panics on any
/// other outcome.
pub async fn push_appended(
    db: &Writer,
    ctx: crate::pushes::PushContext,
    body: &serde_json::Value,
) -> crate::pushes::StoredScan {
    let push = tidemark_domain::push::ValidPush::parse(body.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("a valid push: {e:?}"));
    let outcome = crate::pushes::record_push(db, ctx, push)
        .await
        .unwrap_or_else(|e| panic!("pushing: {e}"));
    appended(outcome)
}

/// The id of the API key [`insert_license`] and [`insert_pushing_account`] give an account:
/// pushes in the store tests name it (a push is refused unless its key is live).
pub fn push_key_id(account_id: &(impl AsRef<str> + ?Sized)) -> String {
    format!("key_{}", account_id.as_ref())
}

/// `account_id` with an active license and a live API key ([`push_key_id`]): an account that
/// can push.
pub async fn insert_pushing_account(db: &Writer, account_id: &(impl AsRef<str> + ?Sized)) {
    let account_id = &AccountId::trusted(account_id.as_ref());
    insert_licensed_account(db, account_id, &format!("{account_id}@example.com")).await;
}

async fn insert_licensed_account(db: &Writer, account_id: &AccountId, email: &str) {
    let account_id = account_id.to_owned();
    crate::licenses::create_license(
        db,
        &crate::licenses::NewLicense {
            account_id: account_id.clone(),
            license_id: tidemark_domain::ids::new_license_id(),
            email: email.to_owned(),
            tier: tidemark_wire::Tier::Team,
            lookup: tidemark_domain::secrets::LicenseKey::generate()
                .client_hash()
                .lookup(),
            key_ciphertext: "sealed".into(),
            expires_at: i64::MAX / 2,
            max_projects: None,
            max_machines: None,
            features_added: Vec::new(),
            features_removed: Vec::new(),
            now: 1,
        },
        None,
        &audit(),
    )
    .await
    .expect("insert license");
    crate::licenses::insert_api_key(
        db,
        &crate::licenses::NewApiKey {
            id: push_key_id(&account_id),
            account_id: account_id.clone(),
            hash: tidemark_domain::secrets::ApiKey::generate().hash(),
            prefix: "svc_api_test".into(),
            machine: "test".into(),
            now: 1,
        },
    )
    .await
    .expect("insert API key");
}

/// Queues every push while the writer connection is busy, so that on SQLite they reach the
/// committer together and form one group; then lets them through. Answers in input order.
pub async fn push_together(
    db: &Writer,
    pushes: Vec<(crate::pushes::PushContext, tidemark_domain::push::ValidPush)>,
) -> Vec<Result<crate::pushes::PushOutcome, String>> {
    push_together_after(db, pushes, &[]).await
}

/// [`push_together`], and on SQLite `meanwhile` runs on the held writer connection once every
/// push has been planned and queued, before any is written: changes that land between a
/// push's early decision and the writer's turn (`pushes::early`). On PostgreSQL it runs first.
pub async fn push_together_after(
    db: &Writer,
    pushes: Vec<(crate::pushes::PushContext, tidemark_domain::push::ValidPush)>,
    meanwhile: &[String],
) -> Vec<Result<crate::pushes::PushOutcome, String>> {
    if let Db::Postgres(pool) = db.db() {
        for sql in meanwhile {
            sqlx::query(sql).execute(pool).await.expect("meanwhile");
        }
    }
    let mut held = match db.db() {
        Db::Sqlite { writer, .. } => Some(writer.acquire().await.expect("hold the writer")),
        Db::Postgres(_) => None,
    };
    let before = db.db().push_group_stats();
    let count = pushes.len() as u64;
    let tasks: Vec<_> = pushes
        .into_iter()
        .map(|(ctx, push)| {
            let db = Writer::for_tests(db.db().clone());
            tokio::spawn(async move {
                crate::pushes::record_push(&db, ctx, push)
                    .await
                    .map_err(|e| e.to_string())
            })
        })
        .collect();
    // Until every push is in the committer's queue (SQLite: each is planned on a snapshot
    // first, `pushes::early`); PostgreSQL has no queue, and its pushes are let go after a
    // pause. The assertions do not depend on it, only how many pushes share a group does.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    match before {
        Some(before) => {
            while std::time::Instant::now() < deadline {
                let stats = db.db().push_group_stats().expect("SQLite");
                if stats.in_flight >= before.in_flight + count && stats.deciding == 0 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        }
        None => tokio::time::sleep(std::time::Duration::from_millis(300)).await,
    }
    if let Some(conn) = held.as_mut() {
        for sql in meanwhile {
            sqlx::query(sql)
                .execute(&mut **conn)
                .await
                .expect("meanwhile");
        }
    }
    drop(held);
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("push task"));
    }
    out
}

/// Stores every scan as a release before spans did (issue 36): one row per finding in
/// `findings`, numbered in the scanner's order, and no spans or texts. For tests of what an
/// upgraded database holds.
pub async fn store_as_rows(db: &Writer) {
    copy_to_rows(db, None).await;
    let result: Result<(), sqlx::Error> = crate::on_db_write!(db, pool => {
        async {
            sqlx::query("DELETE FROM finding_spans").execute(pool).await?;
            sqlx::query("DELETE FROM finding_texts").execute(pool).await?;
            sqlx::query("UPDATE branches SET live_token = NULL").execute(pool).await?;
            Ok(())
        }
        .await
    });
    result.unwrap_or_else(|e| panic!("storing scans as rows: {e}"));
}

/// Stores one scan as rows the way a replica of the previous release writes it during a
/// rolling upgrade, between scans stored as spans: its rows in `findings`, while the spans
/// around it stay as they are.
pub async fn store_scan_as_rows(db: &Writer, project_id: &(impl AsRef<str> + ?Sized), seq: i64) {
    let project_id = &ProjectId::trusted(project_id.as_ref());
    copy_to_rows(db, Some((project_id, seq))).await;
}

async fn copy_to_rows(db: &Writer, only: Option<(&str, i64)>) {
    let (project, seq) = only.unwrap_or(("", 0));
    let sql = format!(
        "INSERT INTO findings (project_id, scan_seq, ordinal, rule_id, resource, status, \
         severity, message, remediation) \
         SELECT sc.project_id, sc.seq, \
         ROW_NUMBER() OVER (PARTITION BY sc.project_id, sc.seq ORDER BY sp.position) - 1, \
         sp.rule_id, sp.resource, sp.status, sp.severity, tx.message, tx.remediation \
         FROM scans sc JOIN finding_spans sp ON sp.branch_id = sc.branch_id \
         AND sp.to_seq > sc.seq AND sp.from_seq <= sc.seq \
         JOIN finding_texts tx ON tx.project_id = sc.project_id AND tx.hash = sp.text_hash \
         WHERE sc.findings_stored = '{}' AND ($1 = '' OR (sc.project_id = $2 AND sc.seq = $3))",
        crate::spans::STORED_AS_SPANS
    );
    let result: Result<(), sqlx::Error> = crate::on_db_write!(db, pool => {
        async {
            sqlx::query(&sql).bind(project).bind(project).bind(seq).execute(pool).await?;
            sqlx::query(
                "UPDATE scans SET findings_stored = NULL \
                 WHERE $1 = '' OR (project_id = $2 AND seq = $3)",
            )
            .bind(project)
            .bind(project)
            .bind(seq)
            .execute(pool)
            .await?;
            Ok(())
        }
        .await
    });
    result.unwrap_or_else(|e| panic!("storing scans as rows: {e}"));
}

/// Forgets every scan's posture, as if every scan had been stored before the push kept it
/// (issue 47): no `scan_posture` rows, every scan pending for the backfill.
pub async fn forget_posture(db: &Writer) {
    let result: Result<(), sqlx::Error> = crate::on_db_write!(db, pool => {
        async {
            sqlx::query("DELETE FROM scan_posture").execute(pool).await?;
            sqlx::query("UPDATE scans SET posture_pending = 1").execute(pool).await?;
            Ok(())
        }
        .await
    });
    result.unwrap_or_else(|e| panic!("forgetting posture: {e}"));
}

/// Every stored posture row, as text, in a fixed order: (project, scan, framework, passed,
/// failed, triaged, not evaluated, sections, drifted).
pub type PostureDump = Vec<(String, i64, String, i64, i64, i64, i64, String, String)>;

pub async fn dump_posture(db: &Db) -> PostureDump {
    let rows: Result<PostureDump, sqlx::Error> = crate::on_db!(db, pool => {
        sqlx::query_as(
            "SELECT project_id, scan_seq, framework, passed, failed, triaged, not_evaluated, \
             sections, drifted FROM scan_posture ORDER BY project_id, scan_seq, framework",
        )
        .fetch_all(pool)
        .await
    });
    rows.unwrap_or_else(|e| panic!("reading posture: {e}"))
}

/// Marks the project's scan `seq` as thinned (its findings read as gone).
pub async fn mark_thinned(db: &Writer, project_id: &(impl AsRef<str> + ?Sized), seq: i64) {
    let project_id = project_id.as_ref();
    let result: Result<(), sqlx::Error> = crate::on_db_write!(db, pool => {
        sqlx::query("UPDATE scans SET findings_stored = $1 WHERE project_id = $2 AND seq = $3")
            .bind(crate::spans::THINNED)
            .bind(project_id)
            .bind(seq)
            .execute(pool)
            .await
            .map(|_| ())
    });
    result.unwrap_or_else(|e| panic!("thinning: {e}"));
}

/// The severity counts of every scan of the account's active projects' default branches since
/// `since`: what the tests sum (`domain::overview::daily_severity`) to hold the overview's
/// roll-up (`rollups`) to.
pub async fn default_line_counts(
    db: &Db,
    account_id: &AccountId,
    since: tidemark_domain::Millis,
) -> Result<Vec<tidemark_domain::overview::ScanCounts>, crate::StoreError> {
    let rows: Vec<(String, i64, i64, i64, i64, i64)> = crate::on_db!(db, pool => {
        sqlx::query_as(
            "SELECT s.project_id, s.scanned_at, s.sev_critical, s.sev_high, s.sev_medium, \
             s.sev_low FROM projects p JOIN scans s ON s.branch_id = p.default_branch_id \
             WHERE p.account_id = $1 AND p.archived_at IS NULL AND s.scanned_at >= $2",
        )
        .bind(account_id)
        .bind(since)
        .fetch_all(pool)
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(
            |(project, at, c, h, m, l)| tidemark_domain::overview::ScanCounts {
                project,
                at,
                counts: [c, h, m, l],
            },
        )
        .collect())
}
