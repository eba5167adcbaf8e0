//! Branches and pull requests on both backends: each line has its own sequence, deltas and
//! replays; a pull request is judged against its base's latest scan; only the default branch
//! moves the project's line and raises its alarms.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use tidemark_domain::gate::QualityGate;
use tidemark_domain::git::BranchName;
use tidemark_domain::push::ValidPush;
use tidemark_domain::webhook::{EventSet, PayloadFormat};
use tidemark_store::branches::{list_lines, set_default_branch, DefaultBranchChange};
use tidemark_store::gates::set_project_gate;
use tidemark_store::pushes::{record_push, PushOutcome, StoredScan};
use tidemark_store::testing::{
    appended, audit, fresh, insert_pushing_account, push_context as ctx, push_together,
};
use tidemark_store::webhooks::{create_webhook, NewWebhook};
use tidemark_store::{on_db, Writer};
use tidemark_wire::{GateStatus, Severity};

/// A push of `score` at `second` with open findings on the given (rule, resource) pairs, on
/// the line `git` names (`Value::Null`: no git context).
fn push(second: i64, score: f64, open: &[(&str, &str)], git: Value) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let findings: Vec<_> = open
        .iter()
        .map(|(rule, resource)| {
            json!({"rule_id": rule, "resource": resource, "status": "FAIL",
                   "severity": "high", "message": "m", "remediation": "r"})
        })
        .collect();
    let mut body = json!({
        "project_label": "api", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": score, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": at,
    });
    if !git.is_null() {
        body["git"] = git;
    }
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

fn branch(name: &str) -> Value {
    json!({"branch": name, "commit": "0123456789abcdef0123456789abcdef01234567"})
}

fn pull_request(number: u64, head: &str, base: &str) -> Value {
    json!({"branch": head, "commit": "abcdef0",
           "pull_request": {"number": number, "base_branch": base, "title": "Tighten buckets",
                            "url": format!("https://github.com/acme/api/pull/{number}")}})
}

async fn stored(db: &Writer, p: ValidPush) -> StoredScan {
    appended(record_push(db, ctx(&acct("acct_a")), p).await.unwrap())
}

/// (line name, line_seq, score, score_delta) of every scan of the project, in arrival order.
async fn history(
    db: &Writer,
    project: &tidemark_store::ProjectId,
) -> Vec<(Option<String>, i64, f64, f64)> {
    on_db!(db, pool => {
        sqlx::query_as(
            "SELECT b.name, s.line_seq, s.score, s.score_delta FROM scans s \
             JOIN branches b ON b.id = s.branch_id WHERE s.project_id = $1 ORDER BY s.seq",
        )
        .bind(project)
        .fetch_all(pool)
        .await

    })
    .unwrap()
}

/// The project row's head, which the projects list, badges and alerts read.
async fn project_head(db: &Writer, project: &tidemark_store::ProjectId) -> (f64, f64) {
    on_db!(db, pool => {
        sqlx::query_as("SELECT last_score, last_delta FROM projects WHERE id = $1")
            .bind(project)
            .fetch_one(pool)
            .await

    })
    .unwrap()
}

tidemark_store::test_each_backend! {
    /// 40 pushes at once, alternating between main and a feature branch: each line's
    /// sequence has no gap and each delta is against the line's own predecessor.
    async fn concurrent_pushes_to_two_branches_chain_per_branch(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let first = stored(&t.db, push(0, 50.0, &[], branch("main"))).await;
        let pushes = (1..=40)
            .map(|i| {
                let name = if i % 2 == 0 { "main" } else { "feature/x" };
                (ctx(&acct("acct_a")), push(i, 50.0 + i as f64, &[], branch(name)))
            })
            .collect();
        for result in push_together(&t.db, pushes).await {
            appended(result.unwrap());
        }
        let rows = history(&t.db, &first.project_id).await;
        assert_eq!(rows.len(), 41);
        for name in ["main", "feature/x"] {
            let line: Vec<_> = rows.iter().filter(|r| r.0.as_deref() == Some(name)).collect();
            let seqs: Vec<i64> = line.iter().map(|r| r.1).collect();
            assert_eq!(seqs, (1..=line.len() as i64).collect::<Vec<_>>(), "{backend:?} {name}");
            assert_eq!(line[0].3, 0.0, "a line's first scan has delta 0");
            for pair in line.windows(2) {
                assert_eq!(pair[1].3, pair[1].2 - pair[0].2, "{backend:?} {name}: {pair:?}");
            }
        }
        assert_eq!(rows.iter().filter(|r| r.0.as_deref() == Some("main")).count(), 21);
        // The project row follows main only.
        let last_main = rows.iter().rev().find(|r| r.0.as_deref() == Some("main")).unwrap();
        assert_eq!(project_head(&t.db, &first.project_id).await, (last_main.2, last_main.3));

        let lines = list_lines(&t.db, &acct("acct_a"), &first.project_id).await.unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].is_default && lines[0].name.as_deref() == Some("main"));
        assert_eq!((lines[0].scan_count, lines[1].scan_count), (21, 20));
        assert!(list_lines(&t.db, &acct("acct_b"), &first.project_id).await.unwrap().is_empty(),
            "another account sees no lines");
    }
}

tidemark_store::test_each_backend! {
    async fn a_replay_is_recognised_on_its_own_line_only(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let main = stored(&t.db, push(0, 80.0, &[], branch("main"))).await;
        let feature_push = push(1, 70.0, &[], branch("feature"));
        let feature = stored(&t.db, feature_push.clone()).await;
        assert_eq!(feature.branch.as_deref(), Some("feature"));
        assert_eq!(feature.score_delta, 0.0, "the branch's first scan");
        // Main moves on; the feature branch's latest scan is still a replay.
        stored(&t.db, push(2, 81.0, &[], branch("main"))).await;
        let again = record_push(&t.db, ctx(&acct("acct_a")), feature_push).await.unwrap();
        let PushOutcome::Replayed(replayed, _) = again else { panic!("{again:?}") };
        assert_eq!((replayed.scan_id.as_str(), replayed.branch.as_deref()), (feature.scan_id.as_str(), Some("feature")));
        // The same content on another branch is a scan of that branch, not a replay.
        let same_on_other = push(1, 70.0, &[], branch("other"));
        assert!(matches!(record_push(&t.db, ctx(&acct("acct_a")), same_on_other).await.unwrap(), PushOutcome::Appended(..)));
        assert_eq!(history(&t.db, &main.project_id).await.len(), 4);
    }
}

tidemark_store::test_each_backend! {
    /// The gate counts only what a pull request adds to its base; the score minimum applies.
    async fn a_pull_request_passes_with_pre_existing_findings_and_fails_on_an_added_one(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let main = stored(&t.db, push(0, 90.0, &[("r-1", "bucket.a"), ("r-2", "bucket.b")], branch("main"))).await;
        let gate = QualityGate::new(Some(60.0), None, Some(Severity::Low)).unwrap().unwrap();
        assert!(set_project_gate(&t.db, &acct("acct_a"), &main.project_id, Some(&gate), &audit()).await.unwrap());

        // The same open findings as main, one fixed: nothing added.
        let clean = stored(&t.db, push(1, 85.0, &[("r-1", "bucket.a")], pull_request(7, "feature", "main"))).await;
        assert_eq!(clean.gate.status, GateStatus::Passed, "{:?}", clean.gate.reasons);
        assert_eq!(clean.pull_request, Some(7));
        assert_eq!(clean.branch.as_deref(), Some("feature"));
        let base = clean.base.clone().unwrap();
        assert_eq!(base.scan_id.as_deref(), Some(main.scan_id.as_str()));
        assert_eq!((base.new_findings, base.fixed_findings, base.score_delta), (Some(0), Some(1), Some(-5.0)));

        // A later push to the same pull request adds one: it fails, and replaces the head.
        let added = stored(&t.db, push(2, 84.0, &[("r-1", "bucket.a"), ("r-9", "bucket.z")], pull_request(7, "feature", "main"))).await;
        assert_eq!(added.gate.status, GateStatus::Failed);
        assert_eq!(added.gate.reasons, ["1 new open finding at low severity or above; the gate allows none"]);
        assert_eq!(added.base.as_ref().unwrap().new_findings, Some(1));
        assert_eq!(added.score_delta, -1.0, "the delta is the pull request's own");

        // Below the minimum fails too, whatever the base.
        let low = stored(&t.db, push(3, 50.0, &[("r-1", "bucket.a")], pull_request(7, "feature", "main"))).await;
        assert_eq!(low.gate.reasons, ["score 50 is below the gate's minimum of 60"]);

        // A replay answers with the comparison it had.
        let replay = record_push(&t.db, ctx(&acct("acct_a")), push(3, 50.0, &[("r-1", "bucket.a")], pull_request(7, "feature", "main"))).await.unwrap();
        let PushOutcome::Replayed(replayed, _) = replay else { panic!("{replay:?}") };
        assert_eq!((replayed.base, replayed.pull_request, replayed.gate), (low.base.clone(), Some(7), low.gate.clone()));

        let lines = list_lines(&t.db, &acct("acct_a"), &main.project_id).await.unwrap();
        let pr = lines.iter().find(|l| l.pull_request.is_some()).unwrap();
        assert_eq!(pr.scan_count, 3);
        assert_eq!(pr.head.as_ref().unwrap().scan_id, low.scan_id);
        let info = pr.pull_request.as_ref().unwrap();
        assert_eq!((info.number, info.base_branch.as_deref(), info.title.as_deref()), (7, Some("main"), Some("Tighten buckets")));
        // Main's line was never touched.
        assert_eq!(project_head(&t.db, &main.project_id).await, (90.0, 0.0));
    }
}

tidemark_store::test_each_backend! {
    async fn a_pull_request_before_its_base_has_a_scan_is_judged_on_its_own(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        // The project's very first push is a pull request: main exists, empty, as the default.
        let pr = stored(&t.db, push(0, 70.0, &[("r-1", "a")], pull_request(3, "feature", "main"))).await;
        let base = pr.base.unwrap();
        assert_eq!((base.branch.as_str(), base.scan_id, base.new_findings), ("main", None, None));
        assert!(base.message.contains("main has no scan yet"), "{}", base.message);
        let lines = list_lines(&t.db, &acct("acct_a"), &pr.project_id).await.unwrap();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].is_default && lines[0].name.as_deref() == Some("main") && lines[0].head.is_none());

        // With a gate whose minimum it misses: only that applies.
        let gate = QualityGate::new(Some(75.0), Some(1.0), Some(Severity::Low)).unwrap().unwrap();
        set_project_gate(&t.db, &acct("acct_a"), &pr.project_id, Some(&gate), &audit()).await.unwrap();
        let again = stored(&t.db, push(1, 70.0, &[("r-1", "a"), ("r-2", "b")], pull_request(3, "feature", "main"))).await;
        assert_eq!(again.gate.reasons, ["score 70 is below the gate's minimum of 75"]);
        // Once main has a scan, the next push compares with it.
        stored(&t.db, push(2, 80.0, &[("r-1", "a")], branch("main"))).await;
        let compared = stored(&t.db, push(3, 80.0, &[("r-1", "a"), ("r-2", "b")], pull_request(3, "feature", "main"))).await;
        assert_eq!(compared.base.unwrap().new_findings, Some(1));
        assert_eq!(compared.gate.status, GateStatus::Failed);
    }
}

tidemark_store::test_each_backend! {
    /// A history pushed without git context continues as the line of the first branch named,
    /// or of the default branch the CI names; an admin can then change the default.
    async fn the_default_branch_is_named_once_and_changed_by_an_admin(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let old = stored(&t.db, push(0, 60.0, &[], Value::Null)).await;
        assert_eq!(old.branch, None, "no name yet");
        stored(&t.db, push(1, 61.0, &[], Value::Null)).await;
        // A feature branch pushes first, but the CI says the repository's default is trunk.
        let feature = stored(&t.db, push(2, 40.0, &[], json!({"branch": "feature", "default_branch": "trunk"}))).await;
        assert_eq!(feature.score_delta, 0.0, "its own line");
        let trunk = stored(&t.db, push(3, 65.0, &[], branch("trunk"))).await;
        assert_eq!(trunk.score_delta, 4.0, "trunk continues the unnamed history (61 -> 65)");
        assert_eq!(trunk.branch.as_deref(), Some("trunk"));
        // A push without git context goes to the default, now called trunk.
        let plain = stored(&t.db, push(4, 66.0, &[], Value::Null)).await;
        assert_eq!((plain.branch.as_deref(), plain.score_delta), (Some("trunk"), 1.0));
        assert_eq!(project_head(&t.db, &old.project_id).await, (66.0, 1.0));

        let to = |n: &str| BranchName::parse("branch", n).unwrap();
        assert_eq!(set_default_branch(&t.db, &acct("acct_b"), &old.project_id, &to("feature"), &audit()).await.unwrap(), DefaultBranchChange::NoProject);
        assert_eq!(set_default_branch(&t.db, &acct("acct_a"), &old.project_id, &to("nope"), &audit()).await.unwrap(), DefaultBranchChange::NoBranch);
        assert_eq!(set_default_branch(&t.db, &acct("acct_a"), &old.project_id, &to("trunk"), &audit()).await.unwrap(), DefaultBranchChange::Unchanged);
        assert_eq!(set_default_branch(&t.db, &acct("acct_a"), &old.project_id, &to("feature"), &audit()).await.unwrap(), DefaultBranchChange::Changed);
        // The project row takes feature's head at once, and plain pushes go there now.
        assert_eq!(project_head(&t.db, &old.project_id).await, (40.0, 0.0));
        let plain = stored(&t.db, push(5, 45.0, &[], Value::Null)).await;
        assert_eq!((plain.branch.as_deref(), plain.score_delta), (Some("feature"), 5.0));
        let lines = list_lines(&t.db, &acct("acct_a"), &old.project_id).await.unwrap();
        assert_eq!(lines[0].name.as_deref(), Some("feature"));
        assert!(lines[0].is_default && !lines[1].is_default);
        let (audited,): (i64,) = on_db!(&t.db, pool => {
            sqlx::query_as("SELECT COUNT(*) FROM audit_events WHERE action = 'project.default_branch_changed' AND before_summary = 'trunk' AND after_summary = 'feature'")
                .fetch_one(pool).await
        }).unwrap();
        assert_eq!(audited, 1);
    }
}

tidemark_store::test_each_backend! {
    /// The project cap counts projects: any number of branches fits in a team's one project.
    async fn branches_never_count_against_the_project_cap(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let capped = || tidemark_store::pushes::PushContext { project_cap: Some(1), ..ctx(&acct("acct_a")) };
        for (i, name) in ["main", "a", "b", "c"].into_iter().enumerate() {
            let outcome = record_push(&t.db, capped(), push(i as i64, 50.0, &[], branch(name))).await.unwrap();
            assert!(matches!(outcome, PushOutcome::Appended(..)), "{outcome:?}");
        }
        let outcome = record_push(&t.db, capped(), push(9, 50.0, &[], pull_request(1, "a", "main"))).await.unwrap();
        assert!(matches!(outcome, PushOutcome::Appended(..)), "{outcome:?}");
    }
}

/// The event names of every queued webhook delivery, sorted.
async fn queued(db: &Writer) -> Vec<String> {
    let rows: Vec<(String,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT event FROM webhook_deliveries")
            .fetch_all(pool)
            .await

    })
    .unwrap();
    let mut names: Vec<String> = rows.into_iter().map(|r| r.0).collect();
    names.sort();
    names
}

tidemark_store::test_each_backend! {
    /// Only the default branch raises gate.failed and score.regressed (and alert mail); a
    /// pull request raises pull_request.gate_failed; a feature branch only scan.pushed.
    async fn only_the_default_branch_alarms(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let main = stored(&t.db, push(0, 90.0, &[], branch("main"))).await;
        let gate = QualityGate::new(Some(80.0), None, None).unwrap().unwrap();
        set_project_gate(&t.db, &acct("acct_a"), &main.project_id, Some(&gate), &audit()).await.unwrap();
        let events = EventSet::parse(["scan.pushed", "gate.failed", "score.regressed", "pull_request.gate_failed"]).unwrap();
        let hook = NewWebhook {
            id: tidemark_domain::ids::new_webhook_id(),
            account_id: acct("acct_a"),
            project_id: None,
            url_sealed: "sealed".into(),
            url_display: "https://hooks.example.com/…".into(),
            format: PayloadFormat::Tidemark,
            events,
            secret_sealed: "sealed".into(),
            now: 1,
        };
        create_webhook(&t.db, &hook, &audit()).await.unwrap();
        let failing_branch = stored(&t.db, push(1, 10.0, &[], branch("feature"))).await;
        assert_eq!(failing_branch.gate.status, GateStatus::Failed, "a branch still gets its verdict");
        assert_eq!(queued(&t.db).await, ["scan.pushed"]);
        stored(&t.db, push(2, 10.0, &[], pull_request(5, "feature", "main"))).await;
        assert_eq!(queued(&t.db).await, ["pull_request.gate_failed", "scan.pushed", "scan.pushed"]);
        stored(&t.db, push(3, 10.0, &[], branch("main"))).await;
        assert_eq!(
            queued(&t.db).await,
            ["gate.failed", "pull_request.gate_failed", "scan.pushed", "scan.pushed", "scan.pushed", "score.regressed"]
        );
    }
}

tidemark_store::test_each_backend! {
    /// Histories stored before branches existed become their projects' default lines: the
    /// next push without git context continues them, and the first branch named names them.
    async fn the_migration_makes_every_existing_history_a_default_line(backend) {
        let t = tidemark_store::testing::fresh_unmigrated(backend).await;
        // The last migration before branches, and a history as that release wrote it.
        tidemark_store::testing::migrate_until(&t.db, 20261127000001).await;
        tidemark_store::on_db_write!(&t.db, pool => {
            // The account, its licence and key as that release wrote them (today's writers
            // name columns later migrations added).
            let key_id = tidemark_store::testing::push_key_id("acct_a");
            for (sql, args) in [
                ("INSERT INTO accounts (id, created_at) VALUES ($1, 1)", vec!["acct_a".to_owned()]),
                ("INSERT INTO licenses (id, account_id, email, tier, lookup_hash, key_ciphertext, \
                  expires_at, created_at) VALUES ('lcn_old', $1, 'old@example.com', 'team', 'l', \
                  'sealed', 4611686018427387903, 1)", vec!["acct_a".to_owned()]),
                ("INSERT INTO api_keys (id, account_id, key_hash, prefix, machine, created_at) \
                  VALUES ($1, 'acct_a', 'h', 'svc_api_x', 'm', 1)", vec![key_id]),
            ] {
                let mut q = sqlx::query(sql);
                for a in args {
                    q = q.bind(a);
                }
                q.execute(pool).await.unwrap();
            }
            sqlx::query(
                "INSERT INTO projects (id, account_id, label, created_at, scan_count, last_score, \
                 last_delta, last_scan_id, last_body_hash) \
                 VALUES ('prj_old', 'acct_a', 'api', 1, 2, 70.0, 5.0, 's2', 'h2')",
            )
            .execute(pool)
            .await
            .unwrap();
            for (seq, score, delta) in [(1, 65.0, 0.0), (2, 70.0, 5.0)] {
                sqlx::query(
                    "INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, \
                     passed, failed, sev_critical, sev_high, sev_medium, sev_low, cloud, \
                     cloud_account_id, frameworks, state_source, scanned_at, received_at, \
                     finding_count, body_hash) VALUES ('prj_old', $1, $2, 'acct_a', $3, $4, \
                     0, 0, 0, 0, 0, 0, 'aws', '1', '[]', 'ci', 1, $5, 0, $6)",
                )
                .bind(seq)
                .bind(format!("s{seq}"))
                .bind(score)
                .bind(delta)
                .bind(seq * 1000)
                .bind(format!("h{seq}"))
                .execute(pool)
                .await
                .unwrap();
            }
        });
        t.db.migrate().await.unwrap();

        let lines = list_lines(&t.db, &acct("acct_a"), &tidemark_store::ProjectId::trusted("prj_old")).await.unwrap();
        assert_eq!(lines.len(), 1);
        let line = &lines[0];
        assert!(line.is_default && line.name.is_none());
        assert_eq!((line.scan_count, line.last_push_at), (2, Some(2000)));
        assert_eq!(line.head.as_ref().unwrap().scan_id, "s2");

        let next = stored(&t.db, push(0, 72.0, &[], branch("main"))).await;
        assert_eq!((next.project_id.as_str(), next.score_delta), ("prj_old", 2.0));
        let rows = history(&t.db, &tidemark_store::ProjectId::trusted("prj_old")).await;
        assert_eq!(
            rows,
            [
                (Some("main".to_owned()), 1, 65.0, 0.0),
                (Some("main".to_owned()), 2, 70.0, 5.0),
                (Some("main".to_owned()), 3, 72.0, 2.0),
            ]
        );
    }
}

tidemark_store::test_each_backend! {
    /// The dashboard reads one line at a time: its chart, its scans, a scan's predecessor on
    /// its line; the projects list (count, sparkline, head) shows the default branch only.
    async fn the_dashboard_reads_each_line_on_its_own(backend) {
        use tidemark_store::dashboard::{find_project, find_scan, list_scans, project_history};
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let m1 = stored(&t.db, push(0, 80.0, &[], branch("main"))).await;
        let f1 = stored(&t.db, push(1, 20.0, &[], branch("feature"))).await;
        let m2 = stored(&t.db, push(2, 82.0, &[], branch("main"))).await;
        let f2 = stored(&t.db, push(3, 25.0, &[], branch("feature"))).await;
        let project = m1.project_id.clone();
        let lines = list_lines(&t.db, &acct("acct_a"), &project).await.unwrap();
        let (main, feature) = (&lines[0].id, &lines[1].id);

        let card = find_project(&t.db, &acct("acct_a"), &project).await.unwrap().unwrap();
        assert_eq!((card.scan_count, card.recent_scores.clone()), (2, vec![80.0, 82.0]));
        assert_eq!((card.last_score, card.last_scan_id.as_deref()), (Some(82.0), Some(m2.scan_id.as_str())));

        let (points, total) = project_history(&t.db, &acct("acct_a"), &project, Some(feature), None, 500).await.unwrap();
        assert_eq!(total, 2);
        assert_eq!(points.iter().map(|p| p.score).collect::<Vec<_>>(), [20.0, 25.0]);
        let (_, all) = project_history(&t.db, &acct("acct_a"), &project, None, None, 500).await.unwrap();
        assert_eq!(all, 4);
        let (none, _) = project_history(&t.db, &acct("acct_b"), &project, Some(main), None, 500).await.unwrap();
        assert!(none.is_empty(), "another account reads nothing");

        let page = list_scans(&t.db, &acct("acct_a"), &project, Some(main), 0, 10).await.unwrap();
        assert_eq!(page.iter().map(|s| s.scan_id.as_str()).collect::<Vec<_>>(), [m2.scan_id.as_str(), m1.scan_id.as_str()]);
        assert_eq!((page[0].branch.as_deref(), page[0].line_seq), (Some("main"), Some(2)));
        assert_eq!(page[0].commit.as_deref(), Some("0123456789abcdef0123456789abcdef01234567"));
        assert!(list_scans(&t.db, &acct("acct_b"), &project, Some(main), 0, 10).await.unwrap().is_empty());

        let (scan, previous) = find_scan(&t.db, &acct("acct_a"), &project, &f2.scan_id).await.unwrap().unwrap();
        assert_eq!(scan.branch.as_deref(), Some("feature"));
        assert_eq!(previous.unwrap().scan_id, f1.scan_id, "the previous scan on its own line");
    }
}

tidemark_store::test_each_backend! {
    /// Quiet branches and pull requests go with their scans and findings; the default
    /// branch stays however old; a dry run removes nothing.
    async fn pruning_removes_quiet_lines_but_never_the_default(backend) {
        use tidemark_store::branches::prune_lines;
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        let day = 86_400_000;
        let now = tidemark_domain::now_millis();
        let at = |days_ago: i64| tidemark_store::pushes::PushContext { now: now - days_ago * day, ..ctx(&acct("acct_a")) };
        let push_at = |days_ago: i64, p: ValidPush| {
            let db = &t.db;
            async move { appended(record_push(db, at(days_ago), p).await.unwrap()) }
        };
        let main = push_at(200, push(0, 80.0, &[("r", "a")], branch("main"))).await;
        push_at(100, push(1, 70.0, &[("r", "a"), ("r", "b")], branch("old-feature"))).await;
        push_at(95, push(2, 75.0, &[("r", "a")], pull_request(3, "old-feature", "main"))).await;
        push_at(1, push(3, 78.0, &[("r", "a")], branch("fresh"))).await;
        let cutoff = now - 90 * day;

        let dry = prune_lines(&t.db, cutoff, true, &audit()).await.unwrap();
        let names = |lines: &[tidemark_store::branches::PrunedLine]| {
            let mut v: Vec<String> = lines.iter().map(|l| match l.pull_request {
                Some(n) => format!("#{n}"),
                None => l.branch.clone().unwrap_or_default(),
            }).collect();
            v.sort();
            v
        };
        assert_eq!(names(&dry), ["#3", "old-feature"]);
        assert_eq!(list_lines(&t.db, &acct("acct_a"), &main.project_id).await.unwrap().len(), 4, "a dry run removes nothing");

        let pruned = prune_lines(&t.db, cutoff, false, &audit()).await.unwrap();
        assert_eq!(names(&pruned), ["#3", "old-feature"]);
        let left: Vec<Option<String>> = list_lines(&t.db, &acct("acct_a"), &main.project_id).await.unwrap()
            .into_iter().map(|l| l.name).collect();
        assert_eq!(left, [Some("main".to_owned()), Some("fresh".to_owned())]);
        let counts: (i64, i64, i64) = on_db!(&t.db, pool => {
            sqlx::query_as(
                "SELECT (SELECT COUNT(*) FROM scans), (SELECT COUNT(*) FROM finding_spans), \
                 (SELECT COUNT(*) FROM audit_events WHERE action = 'branch.pruned')",
            )
            .fetch_one(pool).await
        }).unwrap();
        assert_eq!(counts, (2, 2, 2), "{backend:?}: main's and fresh's scans and findings stay");
        assert!(prune_lines(&t.db, cutoff, false, &audit()).await.unwrap().is_empty(), "nothing twice");
        // Pushing to a pruned branch starts it again.
        let again = stored(&t.db, push(9, 60.0, &[], branch("old-feature"))).await;
        assert_eq!(again.score_delta, 0.0);
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
