//! The push path's grouping: pushes that wait together are written together (SQLite's
//! committer), yet each still sees its account's state and fails or succeeds on its own.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use serde_json::json;
use tidemark_domain::push::ValidPush;
use tidemark_store::pushes::{record_push, PushOutcome, StoredScan};
use tidemark_store::testing::{
    appended, fresh, insert_pushing_account, push_context as ctx, push_together,
};
use tidemark_store::{Db, Writer};

fn push(label: &str, second: i64, score: f64) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": score, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": [{"rule_id": "cis-aws-2.0-1.1", "resource": "aws_s3_bucket.logs",
                      "status": "FAIL", "severity": "high", "message": "m", "remediation": "r"}],
        "state_source": "ci", "scanned_at": at,
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

/// Makes the database refuse to create a project for `account` (a trigger per dialect).
async fn refuse_projects_of(db: &Writer, account: &tidemark_store::AccountId) {
    let statements = match db.backend() {
        tidemark_store::Backend::Sqlite => vec![format!(
            "CREATE TRIGGER doomed BEFORE INSERT ON projects WHEN NEW.account_id = '{account}' \
             BEGIN SELECT RAISE(ABORT, 'doomed push'); END"
        )],
        tidemark_store::Backend::Postgres => vec![
            format!(
                "CREATE FUNCTION doomed() RETURNS trigger AS $$ BEGIN \
                 IF NEW.account_id = '{account}' THEN RAISE EXCEPTION 'doomed push'; END IF; \
                 RETURN NEW; END $$ LANGUAGE plpgsql"
            ),
            "CREATE TRIGGER doomed BEFORE INSERT ON projects FOR EACH ROW \
             EXECUTE FUNCTION doomed()"
                .to_owned(),
        ],
    };
    for sql in statements {
        tidemark_store::on_db_write!(db, pool => {
            sqlx::query(&sql).execute(pool).await.unwrap();
        });
    }
}

tidemark_store::test_each_backend! {
    async fn a_failing_push_does_not_fail_the_pushes_written_with_it(backend) {
        let t = fresh(backend).await;
        let mut pushes = Vec::new();
        for a in 0..6 {
            let account = format!("acct_{a}");
            insert_pushing_account(&t.db, &account).await;
            pushes.push((ctx(&account), push("api", a, 50.0 + a as f64)));
        }
        // An account whose project row the database refuses (a trigger), mid-group. It passes
        // every check the push itself makes: only the write fails.
        insert_pushing_account(&t.db, &acct("acct_doomed")).await;
        refuse_projects_of(&t.db, &acct("acct_doomed")).await;
        pushes.insert(3, (ctx(&acct("acct_doomed")), push("api", 9, 10.0)));

        let results = push_together(&t.db, pushes).await;
        if let Some(stats) = t.db.push_group_stats() {
            // Good pushes shared the failing group, were retried alone, and succeeded below.
            assert!(stats.retried_alone >= 2, "{stats:?}");
        }
        for (i, result) in results.into_iter().enumerate() {
            if i == 3 {
                let err = result.unwrap_err();
                assert!(err.contains("doomed push"), "{err}");
            } else {
                let scan = appended(result.unwrap());
                assert_eq!(scan.score_delta, 0.0, "{backend:?}");
            }
        }
        let (scans,): (i64,) = tidemark_store::on_db!(&t.db, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM scans").fetch_one(pool).await
        }).unwrap();
        assert_eq!(
            scans, 6,
            "{backend:?}: every good push stored once, the bad one not at all"
        );
    }
}

tidemark_store::test_each_backend! {
    async fn pushes_of_one_account_written_together_still_chain(backend) {
        let t = fresh(backend).await;
        let mut pushes = Vec::new();
        for a in 0..3 {
            insert_pushing_account(&t.db, &format!("acct_{a}")).await;
        }
        // Three accounts, four pushes each, interleaved; all in the same second, so the
        // scan ids also need their suffixes.
        for n in 0..4 {
            for a in 0..3 {
                pushes.push((
                    ctx(&format!("acct_{a}")),
                    push("web", 0, 10.0 * (n + 1) as f64 + a as f64),
                ));
            }
        }
        let results = push_together(&t.db, pushes).await;
        let scans: Vec<StoredScan> = results.into_iter().map(|r| appended(r.unwrap())).collect();
        let base = "20261118-110640-web";
        for a in 0..3 {
            let mine: Vec<&StoredScan> = scans.iter().skip(a).step_by(3).collect();
            assert!(mine.iter().all(|s| s.project_id == mine[0].project_id));
            // The history as stored: ids without gaps, each delta against its predecessor.
            let history: Vec<(String, f64, f64)> = tidemark_store::on_db!(&t.db, pool => {
                sqlx::query_as(
                    "SELECT scan_id, score, score_delta FROM scans WHERE project_id = $1 ORDER BY seq",
                )
                .bind(&mine[0].project_id)
                .fetch_all(pool)
                .await

            }).unwrap();
            let ids: Vec<&str> = history.iter().map(|h| h.0.as_str()).collect();
            let expected = [
                base.to_owned(),
                format!("{base}-2"),
                format!("{base}-3"),
                format!("{base}-4"),
            ];
            assert_eq!(ids, expected, "{backend:?}");
            for pair in history.windows(2) {
                assert_eq!(pair[1].2, pair[1].1 - pair[0].1, "{backend:?}: {history:?}");
            }
            assert_eq!(history[0].2, 0.0);
            // Pushes in flight together are written in some order (SQLite plans each before
            // it joins the queue), and each is answered with the scan it made.
            for scan in &mine {
                let stored = history.iter().find(|h| h.0 == scan.scan_id.as_str());
                assert_eq!(stored.map(|h| h.2), Some(scan.score_delta), "account {a}: {history:?}");
            }
        }
        if let Some(stats) = t.db.push_group_stats() {
            // Twelve pushes from three accounts: a group never holds two of one account
            // (it would read a head the other is about to move), so at least four groups,
            // and none failed into retries.
            assert_eq!(stats.retried_alone, 0, "{stats:?}");
            assert_eq!(stats.pushes, 12, "{stats:?}");
            assert!((4..12).contains(&stats.groups), "{stats:?}");
            // The size histogram accounts for every group and every push, none larger than
            // the three accounts, and nothing is left in flight once all are answered.
            let formed: u64 = stats.formed.iter().sum();
            let pushes: u64 = (1..).zip(stats.formed).map(|(n, groups)| n * groups).sum();
            assert_eq!((formed, pushes), (stats.groups, 12), "{stats:?}");
            assert!(stats.formed[3..].iter().all(|&g| g == 0), "{stats:?}");
            assert_eq!(stats.in_flight, 0, "{stats:?}");
        }
    }
}

tidemark_store::test_each_backend! {
    /// A push authenticated before Rotate Key or a suspension, but written after it, is
    /// refused: the key and the license are read again inside the write transaction (on
    /// SQLite within the committer's group, on PostgreSQL under the account's row lock).
    async fn rotation_and_suspension_between_authentication_and_write_refuse_the_push(backend) {
        use tidemark_store::licenses::{find_license_for_account, rotate_api_keys, update_license, LicenseEdit, NewApiKey, UpdateOutcome};
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_r")).await;
        // Authenticated a moment ago: the request holds a context naming the live key.
        let authenticated = ctx(&acct("acct_r"));
        // Then an admin rotates.
        rotate_api_keys(
            &t.db,
            &NewApiKey {
                id: "key_new".into(),
                account_id: acct("acct_r"),
                hash: tidemark_domain::secrets::ApiKey::generate().hash(),
                prefix: "svc_api_new".into(),
                machine: "ci".into(),
                now: 2,
            },
            &tidemark_store::testing::audit(),
        )
        .await
        .unwrap();
        let mut with_new_key = ctx(&acct("acct_r"));
        with_new_key.key_id = "key_new".into();
        // Written together (one committer group on SQLite), each judged on its own.
        let outcomes = push_together(
            &t.db,
            vec![
                (authenticated.clone(), push("web", 1, 50.0)),
                (with_new_key.clone(), push("web", 2, 60.0)),
            ],
        )
        .await;
        assert_eq!(outcomes[0], Ok(PushOutcome::KeyRevoked), "{backend:?}");
        assert!(matches!(outcomes[1], Ok(PushOutcome::Appended(..))), "{outcomes:?}");
        // Not even a replay of an earlier scan gets through with the revoked key.
        assert_eq!(
            record_push(&t.db, authenticated, push("web", 2, 60.0)).await.unwrap(),
            PushOutcome::KeyRevoked
        );
        // Then the operator suspends the license.
        let license = find_license_for_account(&t.db, &acct("acct_r")).await.unwrap().unwrap();
        let suspend = LicenseEdit { suspended: Some((true, None)), ..LicenseEdit::default() };
        let done = update_license(&t.db, &license.id, None, &suspend, &tidemark_store::testing::audit()).await.unwrap();
        assert!(matches!(done, UpdateOutcome::Updated(l) if l.suspended_at.is_some()));
        assert_eq!(
            record_push(&t.db, with_new_key, push("web", 3, 70.0)).await.unwrap(),
            PushOutcome::LicenseInactive,
            "{backend:?}"
        );
        let scans: (i64,) = tidemark_store::on_db!(&t.db, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM scans").fetch_one(pool).await
        })
        .unwrap();
        assert_eq!(scans.0, 1, "only the push with the live key and license was written");
    }
}

/// SQLite only: PostgreSQL has no committer (each push takes its account's row lock, so
/// accounts never wait for one another there).
#[tokio::test]
async fn one_accounts_flood_delays_another_account_by_about_one_group() {
    let t = fresh(tidemark_store::Backend::Sqlite).await;
    insert_pushing_account(&t.db, &acct("acct_flood")).await;
    insert_pushing_account(&t.db, &acct("acct_quiet")).await;
    let held = match t.db.db() {
        Db::Sqlite { writer, .. } => writer.acquire().await.unwrap(),
        Db::Postgres(_) => unreachable!("a SQLite database"),
    };
    let submit = |account: &tidemark_store::AccountId, second: i64| {
        let db = Writer::for_tests(t.db.db().clone());
        let (ctx, push) = (ctx(account), push("api", second, 50.0));
        tokio::spawn(async move { record_push(&db, ctx, push).await.unwrap() })
    };
    // Forty pushes of one account wait before the other account's one push arrives.
    let flood: Vec<_> = (0..40).map(|n| submit(&acct("acct_flood"), n)).collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let quiet = submit(&acct("acct_quiet"), 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(held);
    appended(quiet.await.unwrap());
    for f in flood {
        appended(f.await.unwrap());
    }
    // Rows are stored in commit order: count the flood's scans committed before the quiet
    // account's. A first-come queue would put all forty first.
    let (before,): (i64,) = tidemark_store::on_db!(&t.db, pool => {
        sqlx::query_as(
            "SELECT COUNT(*) FROM scans WHERE account_id = 'acct_flood' AND rowid < \
             (SELECT rowid FROM scans WHERE account_id = 'acct_quiet')",
        )
        .fetch_one(pool)
        .await

    })
    .unwrap();
    assert!(
        before <= 2,
        "{before} of the flood's pushes were written first"
    );
}

/// SQLite only: the committer writes through a connection of its own
/// (`pushes::sqlite_writer`). Closing the database closes it too, so nothing of the process
/// holds the file afterwards (a restore may put another file in its place), and a push
/// then is refused as the database being away, not written to the file left behind.
#[tokio::test]
async fn closing_the_database_closes_the_push_writers_own_connection() {
    let t = fresh(tidemark_store::Backend::Sqlite).await;
    let file = std::fs::canonicalize(t.url.trim_start_matches("sqlite://")).unwrap();
    insert_pushing_account(&t.db, &acct("acct_a")).await;
    appended(
        record_push(&t.db, ctx(&acct("acct_a")), push("api", 1, 50.0))
            .await
            .unwrap(),
    );
    assert!(open_handles(&file) >= 2, "the pools' and the writer's");

    t.db.db().close().await;
    // sqlx's connection threads close their files just after they answer the pool; the
    // writer's own connection is closed before `close` returns. Either way none stays open.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while open_handles(&file) > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        open_handles(&file),
        0,
        "every connection to {file:?} is closed"
    );
    let refused = record_push(&t.db, ctx(&acct("acct_a")), push("api", 2, 60.0))
        .await
        .unwrap_err();
    assert_eq!(
        refused.fault(),
        Some(tidemark_store::Fault::Unavailable),
        "{refused}"
    );
    assert_eq!(open_handles(&file), 0, "the refused push opened nothing");
}

/// How many of this process's open files are `file`.
fn open_handles(file: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter(|target| target == file)
        .count()
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
