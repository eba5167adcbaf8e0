//! The data layer behaves the same on SQLite and PostgreSQL. Each test runs on every backend
//! of this test run (see `tidemark_store::testing::backends`).
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use tidemark_store::testing::{fresh, fresh_unmigrated, insert_account};
use tidemark_store::{on_db, Backend, BeginWrite as _, Db};

tidemark_store::test_each_backend! {
    async fn migrations_apply_once_and_readiness_follows_them(backend) {
        let t = fresh_unmigrated(backend).await;
        assert!(
            !t.db.is_ready().await.unwrap(),
            "{backend:?}: an empty database is not ready"
        );
        t.db.migrate().await.unwrap();
        assert!(
            t.db.is_ready().await.unwrap(),
            "{backend:?}: migrated is ready"
        );
        // A second run (another replica starting) changes nothing and does not fail.
        t.db.migrate().await.unwrap();
        let count: (i64,) = on_db!(&t.db, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM _sqlx_migrations").fetch_one(pool).await
        })
        .unwrap();
        assert_eq!(count.0, tidemark_store::MIGRATOR.iter().count() as i64);
    }
}

tidemark_store::test_each_backend! {
    async fn foreign_keys_are_enforced(backend) {
        let t = fresh(backend).await;
        let res = on_db!(&t.db, pool => {
            sqlx::query(
                "INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at) \
                 VALUES ('k', 'no-such-account', 'h', 'p', 'm', 0)",
            )
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        });
        assert!(
            res.is_err(),
            "{backend:?}: a dangling reference must be refused"
        );
    }
}

#[tokio::test]
async fn sqlite_runs_in_wal_mode_with_durable_settings() {
    let t = fresh(Backend::Sqlite).await;
    let Db::Sqlite { pool, .. } = t.db.db() else {
        unreachable!()
    };
    let mode: (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(mode.0, "wal");
    let sync: (i64,) = sqlx::query_as("PRAGMA synchronous")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(sync.0, 2, "synchronous=FULL");
    let fk: (i64,) = sqlx::query_as("PRAGMA foreign_keys")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(fk.0, 1);
    let busy: (i64,) = sqlx::query_as("PRAGMA busy_timeout")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!(busy.0 >= 5000, "busy_timeout is {} ms", busy.0);
}

tidemark_store::test_each_backend! {
    /// The portable pattern for a serialised read-modify-write: the first statement of the write
    /// transaction updates (and so locks) the row and returns its new value. Concurrent writers
    /// must queue, never fail and never lose an update.
    async fn concurrent_write_transactions_serialise_without_busy_errors(backend) {
        let t = fresh(backend).await;
        insert_account(&t.db, "acc").await;
        let mut tasks = Vec::new();
        for _ in 0..40 {
            let db = t.db.clone();
            tasks.push(tokio::spawn(async move {
                on_db!(&db, pool => {
                    let mut tx = pool.begin_write().await?;
                    let (n,): (i64,) = sqlx::query_as(
                        "UPDATE accounts SET write_guard = write_guard + 1 WHERE id = $1 \
                         RETURNING write_guard",
                    )
                    .bind("acc")
                    .fetch_one(&mut *tx)
                    .await?;
                    sqlx::query("INSERT INTO rate_events (bucket, at) VALUES ($1, $2)")
                        .bind("acc")
                        .bind(n)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok::<i64, sqlx::Error>(n)
                })
            }));
        }
        let mut seen = Vec::new();
        for task in tasks {
            seen.push(
                task.await
                    .unwrap()
                    .unwrap_or_else(|e| panic!("{backend:?}: {e}")),
            );
        }
        seen.sort_unstable();
        assert_eq!(seen, (1..=40).collect::<Vec<i64>>(), "{backend:?}");
    }
}

/// On SQLite a write transaction takes the write lock at BEGIN, so even a read-then-write
/// transaction cannot fail with SQLITE_BUSY when it upgrades, and cannot lose an update.
#[tokio::test]
async fn sqlite_write_transactions_that_read_first_do_not_fail_with_busy() {
    let t = fresh(Backend::Sqlite).await;
    insert_account(&t.db, "acc").await;
    let Db::Sqlite { pool, .. } = t.db.db() else {
        unreachable!()
    };
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let pool = pool.clone();
        tasks.push(tokio::spawn(async move {
            let mut tx = pool.begin_write().await?;
            let (n,): (i64,) = sqlx::query_as("SELECT write_guard FROM accounts WHERE id = 'acc'")
                .fetch_one(&mut *tx)
                .await?;
            tokio::task::yield_now().await;
            sqlx::query("UPDATE accounts SET write_guard = $1 WHERE id = 'acc'")
                .bind(n + 1)
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        }));
    }
    for task in tasks {
        task.await.unwrap().expect("no SQLITE_BUSY");
    }
    let (n,): (i64,) = sqlx::query_as("SELECT write_guard FROM accounts WHERE id = 'acc'")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(n, 40);
}

#[tokio::test]
async fn an_unsupported_url_is_refused_clearly() {
    let err = Db::connect("mysql://localhost/x", 1).await.unwrap_err();
    assert!(err.to_string().contains("sqlite://"), "{err}");
}

tidemark_store::test_each_backend! {
    /// Old rate data and delivered mail are pruned; bans in force and undelivered mail are kept.
    async fn pruning_keeps_what_still_matters(backend) {
        use tidemark_store::{outbox, rate};
        let t = fresh(backend).await;
        let limit = tidemark_domain::rate::RollingLimit::per_minute(1);
        rate::hit_with_ban(&t.db, "old", &limit, 1_000, 1_000)
            .await
            .unwrap();
        rate::hit_with_ban(&t.db, "banned", &limit, 900_000, 5_000)
            .await
            .unwrap();
        rate::hit_with_ban(&t.db, "banned", &limit, 900_000, 5_001)
            .await
            .unwrap();
        // Three event rows and two bucket rows; all events and the unbanned bucket are old.
        assert_eq!(rate::prune_rate_data(&t.db, 10_000).await.unwrap(), 3);
        assert_eq!(
            rate::ban_remaining(&t.db, "banned", 10_000).await.unwrap(),
            Some(896),
            "{backend:?}: a ban in force survives pruning (895.001 s left, rounded up)"
        );

        outbox::enqueue_mail(&t.db, "m1", "license_resend", "a@example.com", 0)
            .await
            .unwrap();
        outbox::enqueue_mail(&t.db, "m2", "license_resend", "b@example.com", 0)
            .await
            .unwrap();
        outbox::mark_sent(&t.db, "m1", 100, outbox::Finished::Delivered)
            .await
            .unwrap();
        assert_eq!(
            outbox::prune_sent(&t.db, 50).await.unwrap(),
            0,
            "too recent"
        );
        assert_eq!(outbox::prune_sent(&t.db, 101).await.unwrap(), 1);
        assert_eq!(
            outbox::pending_count(&t.db).await.unwrap(),
            1,
            "{backend:?}: undelivered mail stays"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn a_detached_write_finishes_after_its_caller_has_gone(backend) {
        use std::time::Duration;
        let t = fresh(backend).await;
        let caller = t.db.detached(|db| async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            insert_account(&db, &acct("acct_written_late")).await;
            Ok(())
        });
        // The caller (a request whose client hung up) is dropped long before the write runs.
        assert!(tokio::time::timeout(Duration::from_millis(20), caller)
            .await
            .is_err());
        let mut found = 0;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let (n,): (i64,) = on_db!(&t.db, pool => {
                sqlx::query_as("SELECT COUNT(*) FROM accounts WHERE id = 'acct_written_late'")
                    .fetch_one(pool)
                    .await
            })
            .unwrap();
            found = n;
            if found == 1 {
                break;
            }
        }
        assert_eq!(
            found, 1,
            "{backend:?}: the write was cut short with its caller"
        );
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}

#[tokio::test]
async fn postgres_connections_do_not_compile_queries() {
    if !tidemark_store::testing::backends().contains(&Backend::Postgres) {
        return; // TIDEMARK_TEST_SKIP_POSTGRES=1: SQLite only, on purpose
    }
    let t = fresh(Backend::Postgres).await;
    let Db::Postgres(pool) = t.db.db() else {
        unreachable!("a PostgreSQL test database")
    };
    // Every connection of the pool, with the URL's own options kept beside it (the test's
    // schema is chosen by one).
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut conn = pool.acquire().await.unwrap();
        let (jit, path): (String, String) =
            sqlx::query_as("SELECT current_setting('jit'), current_setting('search_path')")
                .fetch_one(&mut *conn)
                .await
                .unwrap();
        assert_eq!(jit, "off");
        assert!(
            path.starts_with("t_"),
            "the URL's search_path is kept: {path}"
        );
        held.push(conn);
    }
}
