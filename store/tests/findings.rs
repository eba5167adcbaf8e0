//! Tracked findings on both backends: a finding's life across its branch's scans (new, still
//! there, fixed, reopened), kept apart per branch; triage with an expiry (time passed in, not
//! slept), its history and audit event, and the gate that no longer counts a triaged finding.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use tidemark_domain::findings::TriageChange;
use tidemark_domain::gate::QualityGate;
use tidemark_domain::push::ValidPush;
use tidemark_store::findings::{
    find_line, find_tracked, list_tracked, oldest_open, open_counts_by_project, set_triage,
    sightings, state_counts, triage_history, TrackedQuery, TrackedRow, TriageOutcome,
};
use tidemark_store::gates::set_project_gate;
use tidemark_store::pushes::{record_push, StoredScan};
use tidemark_store::testing::{appended, audit, fresh, insert_pushing_account, push_context};
use tidemark_store::{on_db, Writer};
use tidemark_wire::findings::{FindingState, TriageState};
use tidemark_wire::{GateStatus, Severity};

const DAY: i64 = 86_400_000;

/// A push at `second` whose findings are `(rule, resource, status)`, on branch `branch`.
fn push(second: i64, findings: &[(&str, &str, &str)], branch: &str) -> ValidPush {
    push_to("api", second, findings, branch)
}

/// The same, to the project labelled `label`.
fn push_to(label: &str, second: i64, findings: &[(&str, &str, &str)], branch: &str) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let findings: Vec<Value> = findings
        .iter()
        .map(|(rule, resource, status)| {
            json!({"rule_id": rule, "resource": resource, "status": status,
                   "severity": "high", "message": format!("{rule} on {resource}"),
                   "remediation": "r"})
        })
        .collect();
    let body = json!({
        "project_label": label, "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": 70.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": at,
        "git": {"branch": branch, "default_branch": "main",
                "commit": "0123456789abcdef0123456789abcdef01234567"},
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

async fn push_at(db: &Writer, now: i64, p: ValidPush) -> StoredScan {
    let mut ctx = push_context(&acct("acct_a"));
    ctx.now = now;
    appended(record_push(db, ctx, p).await.unwrap())
}

async fn tracked(
    db: &Writer,
    project: &tidemark_store::ProjectId,
    branch: Option<&str>,
    now: i64,
) -> Vec<TrackedRow> {
    let line = find_line(db.as_ref(), &acct("acct_a"), project, branch)
        .await
        .unwrap()
        .unwrap();
    let query = TrackedQuery {
        limit: 100,
        ..TrackedQuery::default()
    };
    list_tracked(db.as_ref(), &line.id, &query, now)
        .await
        .unwrap()
}

fn by_rule<'a>(rows: &'a [TrackedRow], rule: &str) -> &'a TrackedRow {
    rows.iter().find(|r| r.rule_id == rule).unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_finding_is_followed_across_its_branch_scans(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let now = tidemark_domain::now_millis();
        let s1 = push_at(&db, now, push(1, &[("r1", "a", "FAIL"), ("r2", "a", "WARN"), ("r3", "a", "PASS")], "main")).await;
        let project = s1.project_id.clone();
        // r2 is gone, r1 listed twice: one identity.
        let s2 = push_at(&db, now, push(2, &[("r1", "a", "FAIL"), ("r1", "a", "ERROR")], "main")).await;
        // r2 is back, r1 passes (fixed).
        let s3 = push_at(&db, now, push(3, &[("r1", "a", "PASS"), ("r2", "a", "FAIL")], "main")).await;
        // A feature branch has its own r1, first seen there.
        let f1 = push_at(&db, now, push(4, &[("r1", "a", "FAIL")], "feature/x")).await;

        let main = tracked(&db, &project, None, now).await;
        assert_eq!(main.len(), 2, "PASS findings are not tracked: {main:?}");
        let r1 = by_rule(&main, "r1");
        assert_eq!((r1.first_scan_id.as_str(), r1.last_scan_id.as_str()), (s1.scan_id.as_str(), s2.scan_id.as_str()));
        assert_eq!(r1.fixed_scan_id.as_deref(), Some(s3.scan_id.as_str()));
        assert_eq!((r1.reopened_count, r1.state(now)), (0, FindingState::Fixed));
        let r2 = by_rule(&main, "r2");
        assert_eq!(r2.first_scan_id, s1.scan_id);
        assert_eq!(r2.last_scan_id, s3.scan_id);
        assert_eq!((r2.fixed_seq, r2.reopened_count, r2.state(now)), (None, 1, FindingState::Open));
        assert_eq!(r2.first_seen_at, (1_795_000_000 + 1) * 1000);
        assert_eq!(r2.reopened_at, Some((1_795_000_000 + 3) * 1000));

        let feature = tracked(&db, &project, Some("feature/x"), now).await;
        assert_eq!(feature.len(), 1);
        assert_eq!(feature[0].first_scan_id, f1.scan_id);
        assert_ne!(feature[0].id, r1.id, "one identity per branch");
        assert_eq!(feature[0].branch.as_deref(), Some("feature/x"));

        let line = find_line(db.as_ref(), &acct("acct_a"), &project, Some("main")).await.unwrap().unwrap();
        let counts = state_counts(db.as_ref(), &line.id, now).await.unwrap();
        assert_eq!((counts.open, counts.triaged, counts.fixed), (1, 0, 1));
        let fixed_only = TrackedQuery { state: Some(FindingState::Fixed), limit: 10, ..TrackedQuery::default() };
        let fixed = list_tracked(db.as_ref(), &line.id, &fixed_only, now).await.unwrap();
        assert_eq!(fixed.iter().map(|r| r.rule_id.as_str()).collect::<Vec<_>>(), ["r1"]);

        // r2's timeline: in 1 and 3, absent from 2; newest first.
        let seen = sightings(db.as_ref(), r2, 10).await.unwrap();
        let statuses: Vec<_> = seen.iter().map(|s| (s.scan_id.as_str(), s.status.as_deref())).collect();
        assert_eq!(statuses, [(s3.scan_id.as_str(), Some("FAIL")), (s2.scan_id.as_str(), None), (s1.scan_id.as_str(), Some("WARN"))]);

        // The account overview: open findings of the default branch only, by severity.
        let open = open_counts_by_project(db.as_ref(), &acct("acct_a"), std::slice::from_ref(&project), now).await.unwrap();
        assert_eq!(open.get(&project), Some(&[0, 1, 0, 0]));
        assert!(open_counts_by_project(db.as_ref(), &acct("acct_a"), &[], now).await.unwrap().is_empty());
        let oldest = oldest_open(db.as_ref(), &acct("acct_a"), Severity::High, now, 5).await.unwrap();
        assert_eq!(oldest.iter().map(|f| (f.label.as_str(), f.row.rule_id.as_str())).collect::<Vec<_>>(), [("api", "r2")]);
        assert!(oldest_open(db.as_ref(), &acct("acct_a"), Severity::Critical, now, 5).await.unwrap().is_empty());
        assert!(open_counts_by_project(db.as_ref(), &acct("acct_b"), std::slice::from_ref(&project), now).await.unwrap().is_empty());

        // Another account sees nothing of it.
        assert!(find_tracked(db.as_ref(), &acct("acct_b"), &project, &r2.id).await.unwrap().is_none());
        assert!(find_line(db.as_ref(), &acct("acct_b"), &project, None).await.unwrap().is_none());
    }
}

tidemark_store::test_each_backend! {
    async fn a_scan_whose_findings_housekeeping_removed_is_unknown_not_a_fix(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let now = tidemark_domain::now_millis();
        // Six scans, each with the failing check beside passing and skipped ones, as a scanner
        // sends them; housekeeping then removes the findings of the second, third and fifth.
        let findings = [("r1", "a", "FAIL"), ("r2", "a", "PASS"), ("r3", "a", "SKIP")];
        let mut scans = Vec::new();
        for second in 1..=6 {
            scans.push(push_at(&db, now, push(second, &findings, "main")).await);
        }
        let project = scans[0].project_id.clone();
        let mut seqs = Vec::new();
        for s in [&scans[1], &scans[2], &scans[4]] {
            let (row, _) = tidemark_store::dashboard::find_scan(db.as_ref(), &acct("acct_a"), &project, &s.scan_id)
                .await.unwrap().unwrap();
            seqs.push(row.seq);
        }
        let thinned = tidemark_store::housekeeping::thin_scans(&db, &acct("acct_a"), &project, &seqs).await.unwrap();
        assert_eq!(thinned, 3);

        let r1 = tracked(&db, &project, None, now).await;
        let r1 = by_rule(&r1, "r1");
        let seen = sightings(db.as_ref(), r1, 10).await.unwrap();
        let kept: Vec<_> = seen.iter().map(|s| (s.scan_id.as_str(), s.findings_kept, s.status.as_deref())).collect();
        assert_eq!(kept, [
            (scans[5].scan_id.as_str(), true, Some("FAIL")),
            (scans[4].scan_id.as_str(), false, None),
            (scans[3].scan_id.as_str(), true, Some("FAIL")),
            (scans[2].scan_id.as_str(), false, None),
            (scans[1].scan_id.as_str(), false, None),
            (scans[0].scan_id.as_str(), true, Some("FAIL")),
        ], "{backend:?}");
        // Never fixed: the tracked row says so, and so must every scan its life is read from.
        assert_eq!((r1.fixed_seq, r1.reopened_count), (None, 0));
    }
}

tidemark_store::test_each_backend! {
    async fn the_oldest_open_findings_are_active_default_lines_oldest_across_projects(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let now = (1_795_000_000 + 100) * 1000;
        let fail = |rule| [(rule, "res", "FAIL")];
        // A feature branch begins before its project's default line: its finding is older
        // than any, but the overview reads default lines only.
        push_at(&db, now, push_to("late", 0, &fail("feature-only"), "feature/x")).await;
        push_at(&db, now, push_to("late", 5, &fail("late-main"), "main")).await;
        push_at(&db, now, push_to("old", 1, &fail("old-main"), "main")).await;
        // Fixed since: not open.
        push_at(&db, now, push_to("fixed", 0, &fail("gone"), "main")).await;
        push_at(&db, now, push_to("fixed", 3, &[], "main")).await;
        // Archived: not on the overview.
        let shelved = push_at(&db, now, push_to("shelved", 2, &fail("shelved-main"), "main")).await;
        tidemark_store::dashboard::set_archived(&db, &acct("acct_a"), &shelved.project_id, true, None, &audit())
            .await
            .unwrap();

        let rules = |limit| {
            let db = db.clone();
            async move {
                oldest_open(db.as_ref(), &acct("acct_a"), Severity::High, now, limit)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|f| (f.label, f.row.rule_id))
                    .collect::<Vec<_>>()
            }
        };
        let pair = |label: &str, rule: &str| (label.to_owned(), rule.to_owned());
        assert_eq!(rules(5).await, [pair("old", "old-main"), pair("late", "late-main")]);
        assert_eq!(rules(1).await, [pair("old", "old-main")]);
        assert!(oldest_open(db.as_ref(), &acct("acct_b"), Severity::High, now, 5).await.unwrap().is_empty());
    }
}

tidemark_store::test_each_backend! {
    async fn a_triage_holds_until_it_expires_and_the_gate_respects_it(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let now = tidemark_domain::now_millis();
        let s1 = push_at(&db, now, push(1, &[("r1", "a", "FAIL")], "main")).await;
        let project = s1.project_id.clone();
        let gate = QualityGate::new(None, None, Some(Severity::High)).unwrap().unwrap();
        assert!(set_project_gate(&db, &acct("acct_a"), &project, Some(&gate), &audit()).await.unwrap());
        // r1 fixed, then triaged: triage belongs to the identity, whatever its state.
        push_at(&db, now, push(2, &[], "main")).await;
        let r1 = tracked(&db, &project, None, now).await.remove(0);
        let change = TriageChange {
            state: TriageState::AcceptedRisk,
            reason: "Public by design".into(),
            expires_at: Some(now + 7 * DAY),
        };
        let done = set_triage(&db, &acct("acct_a"), &project, &r1.id, Some(&change), &audit()).await.unwrap();
        let TriageOutcome::Done(row) = done else { panic!("{done:?}") };
        assert_eq!(row.triage_state(), Some(TriageState::AcceptedRisk));
        // Another account's attempt changes nothing.
        assert_eq!(
            set_triage(&db, &acct("acct_b"), &project, &r1.id, None, &audit()).await.unwrap(),
            TriageOutcome::NotFound
        );

        // r1 returns alongside a new r2: only r2 counts as new, and r1 shows triaged.
        let s3 = push_at(&db, now, push(3, &[("r1", "a", "FAIL"), ("r2", "a", "FAIL")], "main")).await;
        assert_eq!(s3.gate.status, GateStatus::Failed);
        assert_eq!(s3.gate.reasons, ["1 new open finding at high severity or above; the gate allows none"]);
        let rows = tracked(&db, &project, None, now).await;
        assert_eq!(by_rule(&rows, "r1").state(now), FindingState::Triaged);
        assert_eq!(by_rule(&rows, "r1").reopened_count, 1);
        assert_eq!(by_rule(&rows, "r2").state(now), FindingState::Open);
        // The projects page counts r2 only, while the triage holds.
        let open = |at| {
            let db = db.clone();
            let project = project.clone();
            async move {
                open_counts_by_project(db.as_ref(), &acct("acct_a"), std::slice::from_ref(&project), at)
                    .await
                    .unwrap()
                    .remove(&project)
            }
        };
        assert_eq!(open(now).await, Some([0, 1, 0, 0]));

        // A week and a day later the triage has lapsed: open again, and new again to the gate.
        let later = now + 8 * DAY;
        assert_eq!(open(later).await, Some([0, 2, 0, 0]), "a lapsed triage counts as open");
        assert_eq!(by_rule(&tracked(&db, &project, None, later).await, "r1").state(later), FindingState::Open);
        push_at(&db, later, push(4, &[], "main")).await;
        let s5 = push_at(&db, later, push(5, &[("r1", "a", "FAIL")], "main")).await;
        assert_eq!(s5.gate.reasons, ["1 new open finding at high severity or above; the gate allows none"]);

        // Undone: the history has both changes, the audit log each one.
        let undone = set_triage(&db, &acct("acct_a"), &project, &r1.id, None, &audit()).await.unwrap();
        let TriageOutcome::Done(row) = undone else { panic!("{undone:?}") };
        assert_eq!(row.triage_state, None);
        let history = triage_history(db.as_ref(), &r1.id).await.unwrap();
        let states: Vec<_> = history.iter().map(|e| (e.state.as_deref(), e.actor.as_str())).collect();
        assert_eq!(states, [(Some("accepted_risk"), "operator:tests"), (None, "operator:tests")]);
        let audited: Vec<(String, String, Option<String>)> = on_db!(&db, pool => {
            sqlx::query_as(
                "SELECT action, target, after_summary FROM audit_events \
                 WHERE account_id = 'acct_a' AND action LIKE 'finding.%' ORDER BY id",
            )
            .fetch_all(pool)
            .await
        })
        .unwrap();
        assert_eq!(audited.len(), 2);
        assert_eq!(audited[0].0, "finding.triaged");
        assert_eq!(audited[0].1, "api: r1 on a");
        assert!(audited[0].2.as_deref().unwrap().starts_with("Accepted risk until "), "{audited:?}");
        assert_eq!((audited[1].0.as_str(), audited[1].2.as_deref()), ("finding.triage_undone", None));
    }
}

/// The migration's backfill statement: what a database upgraded with scans already in it
/// runs once.
fn backfill_sql() -> String {
    let sql = include_str!("../../migrations/20261203000001_tracked_findings.sql");
    let code: Vec<&str> = sql
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect();
    code.join("\n")
        .split(';')
        .find(|stmt| {
            stmt.trim_start()
                .starts_with("INSERT INTO tracked_findings")
        })
        .unwrap()
        .to_owned()
}

tidemark_store::test_each_backend! {
    async fn the_upgrade_tracks_the_findings_of_scans_already_stored(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        insert_pushing_account(&db, &acct("acct_a")).await;
        let now = tidemark_domain::now_millis();
        let s1 = push_at(&db, now, push(1, &[("r1", "a", "FAIL"), ("r2", "a", "FAIL")], "main")).await;
        let s2 = push_at(&db, now, push(2, &[("r1", "a", "FAIL")], "main")).await;
        push_at(&db, now, push(3, &[("r2", "a", "FAIL")], "feature/x")).await;
        let project = s1.project_id.clone();
        // Rows of one severity and age list by id, which differs (random, then numbered).
        let by_rule_id = |mut rows: Vec<TrackedRow>| {
            rows.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
            rows
        };
        let live = by_rule_id(tracked(&db, &project, None, now).await);
        // As before the upgrade: findings as rows, no tracked rows. Then the backfill.
        tidemark_store::testing::store_as_rows(&db).await;
        let sql = backfill_sql();
        on_db!(&db, pool => {
            sqlx::query("DELETE FROM tracked_findings").execute(pool).await.unwrap();
            sqlx::raw_sql(&sql).execute(pool).await.map(|_| ())
        })
        .unwrap();
        let upgraded = by_rule_id(tracked(&db, &project, None, now).await);
        assert_eq!(upgraded.len(), 2);
        for (a, b) in live.iter().zip(&upgraded) {
            assert!(b.id.starts_with("fnd_m"), "{}", b.id);
            assert_eq!(
                (&a.rule_id, &a.first_scan_id, &a.last_scan_id, &a.fixed_scan_id, &a.severity),
                (&b.rule_id, &b.first_scan_id, &b.last_scan_id, &b.fixed_scan_id, &b.severity)
            );
        }
        assert_eq!(by_rule(&upgraded, "r2").fixed_scan_id.as_deref(), Some(s2.scan_id.as_str()));
        assert_eq!(tracked(&db, &project, Some("feature/x"), now).await.len(), 1);
        // Pushes after the upgrade move the backfilled rows on.
        let s4 = push_at(&db, now, push(4, &[("r2", "a", "FAIL")], "main")).await;
        let after = tracked(&db, &project, None, now).await;
        let r2 = by_rule(&after, "r2");
        assert_eq!((r2.last_scan_id.as_str(), r2.reopened_count), (s4.scan_id.as_str(), 1));
        assert!(r2.id.starts_with("fnd_m"));
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
