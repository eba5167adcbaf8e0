//! Posture kept by the push, on both backends: tallies per framework and section, a triage
//! moving a requirement from failed to triaged, drift against the line's previous scan, another
//! account seeing nothing; and for random scans, the stored tallies equal a count over the
//! scan's findings as the store gives them back.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use tidemark_domain::findings::TriageChange;
use tidemark_domain::posture::Tally;
use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{find_scan, list_findings, FindingFilter};
use tidemark_store::findings::{find_line, list_tracked, set_triage, TrackedQuery};
use tidemark_store::posture::{current_posture, posture_history, PostureRow};
use tidemark_store::pushes::{record_push, StoredScan};
use tidemark_store::testing::{appended, audit, fresh, insert_pushing_account, push_context};
use tidemark_store::{AccountId, ProjectId, Writer};
use tidemark_wire::findings::TriageState;

const FRAMEWORKS: [&str; 2] = ["cis-aws-2.0", "soc2"];

fn push(second: i64, frameworks: &[&str], findings: &[(String, String, &str)]) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let findings: Vec<Value> = findings
        .iter()
        .map(|(rule, resource, status)| {
            json!({"rule_id": rule, "resource": resource, "status": status, "severity": "high",
                   "message": "m", "remediation": "r"})
        })
        .collect();
    let body = json!({
        "project_label": "api", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": frameworks, "score": 70.0, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": at,
        "git": {"branch": "main", "default_branch": "main"},
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

fn owned(findings: &[(&str, &str, &'static str)]) -> Vec<(String, String, &'static str)> {
    findings
        .iter()
        .map(|(r, res, s)| ((*r).to_owned(), (*res).to_owned(), *s))
        .collect()
}

async fn pushed(db: &Writer, account: &AccountId, p: ValidPush) -> StoredScan {
    appended(record_push(db, push_context(account), p).await.unwrap())
}

async fn history(db: &Writer, account: &AccountId, project: &ProjectId) -> Vec<PostureRow> {
    let line = find_line(db.as_ref(), account, project, None)
        .await
        .unwrap()
        .unwrap();
    posture_history(db.as_ref(), account, project, &line.id, None, None)
        .await
        .unwrap()
}

fn tally(passed: u32, failed: u32, triaged: u32, not_evaluated: u32) -> Tally {
    Tally {
        passed,
        failed,
        triaged,
        not_evaluated,
    }
}

tidemark_store::test_each_backend! {
    async fn the_push_keeps_each_frameworks_posture_and_its_drift(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        let account = AccountId::trusted("acct_a");
        insert_pushing_account(&db, &account).await;
        let first = [
            ("cis-aws-2.0-1.1", "bucket-a", "PASS"),
            ("cis-aws-2.0-1.1", "bucket-b", "FAIL"),
            ("cis-aws-2.0-1.2", "bucket-a", "PASS"),
            ("cis-aws-2.0-2.1", "bucket-a", "SKIP"),
            ("cis-aws-2.0-3.1", "bucket-c", "FAIL"),
            ("soc2-cc6.1", "role-x", "PASS"),
            ("pci-4.0-2.2", "vm", "FAIL"), // a framework the scan did not name
        ];
        let s1 = pushed(&db, &account, push(1, &FRAMEWORKS, &owned(&first))).await;
        let project = s1.project_id.clone();
        let rows = history(&db, &account, &project).await;
        assert_eq!(rows.len(), 2, "{backend:?}: {rows:?}");
        let (cis, soc2) = (&rows[0], &rows[1]);
        assert_eq!((cis.framework.as_str(), soc2.framework.as_str()), ("cis-aws-2.0", "soc2"));
        assert_eq!(cis.scan_id, s1.scan_id);
        assert_eq!(cis.tally(), tally(1, 2, 0, 1));
        assert_eq!(cis.tally().share_passing(), Some(1.0 / 3.0));
        assert_eq!(
            cis.sections(),
            [
                ("1".to_owned(), tally(1, 1, 0, 0)),
                ("2".to_owned(), tally(0, 0, 0, 1)),
                ("3".to_owned(), tally(0, 1, 0, 0)),
            ]
        );
        assert_eq!(soc2.tally(), tally(1, 0, 0, 0));
        assert!(cis.drifted().is_empty());

        // bucket-b set aside as an accepted risk: 1.1 is triaged in the next scan, not passed;
        // bucket-c marked "won't fix": 3.1 still fails.
        let line = find_line(db.as_ref(), &account, &project, None).await.unwrap().unwrap();
        let now = tidemark_domain::now_millis();
        let open = list_tracked(db.as_ref(), &line.id, &TrackedQuery { limit: 50, ..TrackedQuery::default() }, now)
            .await
            .unwrap();
        let failing = open.iter().find(|f| f.resource == "bucket-b").unwrap();
        let change = TriageChange {
            state: TriageState::AcceptedRisk,
            reason: "Logs bucket, public by design".into(),
            expires_at: Some(now + 30 * 86_400_000),
        };
        set_triage(&db, &account, &project, &failing.id, Some(&change), &audit()).await.unwrap();
        let living = open.iter().find(|f| f.resource == "bucket-c").unwrap();
        let wont = TriageChange { state: TriageState::WontFix, ..change.clone() };
        set_triage(&db, &account, &project, &living.id, Some(&wont), &audit()).await.unwrap();
        // The latest scan reads with triage as it is now: set aside at once, failing again once
        // the triage lapses; and "won't fix" keeps it failing.
        let current = |at: i64| {
            let (db, account, project, line) = (db.clone(), account.clone(), project.clone(), line.id.clone());
            async move {
                current_posture(db.as_ref(), &account, &project, &line, at, &[]).await.unwrap().unwrap()
            }
        };
        let before_push = current(now).await;
        assert_eq!(before_push.scan_id, s1.scan_id);
        assert_eq!(before_push.frameworks[0].tally, tally(1, 1, 1, 1), "{backend:?}");
        assert_eq!(current(now + 31 * 86_400_000).await.frameworks[0].tally, tally(1, 2, 0, 1));
        assert!(current_posture(db.as_ref(), &AccountId::trusted("acct_b"), &project, &line.id, now, &[])
            .await
            .unwrap()
            .is_none());
        pushed(&db, &account, push(2, &FRAMEWORKS, &owned(&first))).await;
        let rows = history(&db, &account, &project).await;
        assert_eq!(rows[2].tally(), tally(1, 1, 1, 1), "{backend:?}");

        // 1.2 passed and now fails: drift; cc7.2 fails without having passed before: no drift.
        let mut third = first.to_vec();
        third[2] = ("cis-aws-2.0-1.2", "bucket-a", "FAIL");
        third.push(("soc2-cc7.2", "role-y", "FAIL"));
        let s3 = pushed(&db, &account, push(3, &FRAMEWORKS, &owned(&third))).await;
        let rows = history(&db, &account, &project).await;
        let latest: Vec<&PostureRow> = rows.iter().filter(|r| r.scan_id == s3.scan_id).collect();
        assert_eq!(latest[0].drifted(), ["cis-aws-2.0-1.2"], "{backend:?}");
        assert!(latest[1].drifted().is_empty());
        assert_eq!(latest[0].tally(), tally(0, 2, 1, 1));

        // One framework, or a range of time, reads only that.
        let only = posture_history(db.as_ref(), &account, &project, &line.id, Some("soc2"), None)
            .await
            .unwrap();
        assert_eq!(only.len(), 3);
        assert!(only.iter().all(|r| r.framework == "soc2"));
        let since = posture_history(
            db.as_ref(), &account, &project, &line.id, None, Some((1_795_000_000 + 3) * 1000),
        )
        .await
        .unwrap();
        assert_eq!(since.len(), 2);

        // Another account reads nothing of it.
        let other = AccountId::trusted("acct_b");
        insert_pushing_account(&db, &other).await;
        assert!(posture_history(db.as_ref(), &other, &project, &line.id, None, None)
            .await
            .unwrap()
            .is_empty());
    }
}

/// The framework a rule belongs to, counted the long way: the longest named id it starts
/// with, then a dash.
fn framework_of<'a>(rule: &str, frameworks: &[&'a str]) -> Option<&'a str> {
    frameworks
        .iter()
        .filter(|f| {
            rule.len() > f.len() + 1 && rule.starts_with(*f) && rule[f.len()..].starts_with('-')
        })
        .max_by_key(|f| f.len())
        .copied()
}

tidemark_store::test_each_backend! {
    async fn stored_tallies_equal_a_count_over_each_random_scans_findings(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        let account = AccountId::trusted("acct_a");
        insert_pushing_account(&db, &account).await;
        // A framework named twice (as a push may) counts once.
        let frameworks = ["cis-aws", "cis-aws-2.0", "soc2", "soc2"];
        let statuses = ["PASS", "FAIL", "WARN", "SKIP", "ERROR"];
        let mut rng = rand::rngs::StdRng::seed_from_u64(47);
        for n in 0..12_i64 {
            let findings: Vec<(String, String, &str)> = (0..rng.gen_range(1..60))
                .map(|_| {
                    let prefix = ["cis-aws", "cis-aws-2.0", "soc2", "pci"][rng.gen_range(0..4)];
                    let rule = format!("{prefix}-{}.{}", rng.gen_range(1..4), rng.gen_range(1..4));
                    let resource = format!("r{}", rng.gen_range(0..5));
                    (rule, resource, statuses[rng.gen_range(0..5)])
                })
                .collect();
            let stored = pushed(&db, &account, push(n, &frameworks, &findings)).await;
            let (scan, _) = find_scan(db.as_ref(), &account, &stored.project_id, &stored.scan_id)
                .await
                .unwrap()
                .unwrap();
            let (rows, _) = list_findings(db.as_ref(), &stored.project_id, scan.seq,
                &FindingFilter::default(), 0, 10_000).await.unwrap();
            // Per framework, per rule: (any open, any pass).
            let mut by_rule: BTreeMap<(&str, String), (bool, bool)> = BTreeMap::new();
            for f in &rows {
                if let Some(framework) = framework_of(&f.rule_id, &frameworks) {
                    let e = by_rule.entry((framework, f.rule_id.clone())).or_default();
                    e.0 |= matches!(f.status.as_str(), "FAIL" | "WARN" | "ERROR");
                    e.1 |= f.status == "PASS";
                }
            }
            let posture = history(&db, &account, &stored.project_id).await;
            for framework in frameworks {
                let mut expected = Tally::default();
                for ((_, _), (open, pass)) in by_rule.iter().filter(|((f, _), _)| *f == framework) {
                    match (open, pass) {
                        (true, _) => expected.failed += 1,
                        (false, true) => expected.passed += 1,
                        (false, false) => expected.not_evaluated += 1,
                    }
                }
                let row = posture
                    .iter()
                    .find(|r| r.scan_seq == scan.seq && r.framework == framework)
                    .unwrap();
                assert_eq!(row.tally(), expected, "{backend:?}: scan {n}, {framework}");
            }
        }
    }
}

tidemark_store::test_each_backend! {
    /// Scans stored before the push kept posture are judged by the backfill as their push
    /// would have judged them: the same rows, with the triage that held when each arrived
    /// (set, changed, undone or lapsed between pushes) and drift against the previous scan.
    async fn the_backfill_judges_old_scans_as_their_push_did(backend) {
        use tidemark_store::posture::backfill::{backfill_all, backfill_batch, scans_pending};
        use tidemark_store::testing::{dump_posture, forget_posture};
        let t = fresh(backend).await;
        let db = t.writer();
        let account = AccountId::trusted("acct_a");
        insert_pushing_account(&db, &account).await;
        let frameworks = ["cis-aws-2.0", "soc2"];
        let states = [TriageState::AcceptedRisk, TriageState::FalsePositive, TriageState::WontFix];
        let tick = || tokio::time::sleep(std::time::Duration::from_millis(3));
        let mut rng = rand::rngs::StdRng::seed_from_u64(4747);
        let mut project = ProjectId::default();
        for n in 0..10_i64 {
            let findings: Vec<(String, String, &str)> = (0..rng.gen_range(5..40))
                .map(|_| {
                    let prefix = frameworks[rng.gen_range(0..2)];
                    let rule = format!("{prefix}-{}.{}", rng.gen_range(1..3), rng.gen_range(1..4));
                    (rule, format!("r{}", rng.gen_range(0..4)), ["PASS", "FAIL", "SKIP"][rng.gen_range(0..3)])
                })
                .collect();
            project = pushed(&db, &account, push(n, &frameworks, &findings)).await.project_id;
            tick().await;
            // Between pushes: a few open findings triaged, changed or undone; some triage
            // lapsing before the next push.
            let line = find_line(db.as_ref(), &account, &project, None).await.unwrap().unwrap();
            let now = tidemark_domain::now_millis();
            let mut open = list_tracked(db.as_ref(), &line.id, &TrackedQuery { limit: 200, ..TrackedQuery::default() }, now)
                .await
                .unwrap();
            // In a fixed order: the list's own follows the findings' random ids, and the seeded
            // choices below must fall on the same findings every run.
            open.sort_by(|a, b| (&a.rule_id, &a.resource).cmp(&(&b.rule_id, &b.resource)));
            for f in &open {
                if !rng.gen_bool(0.3) {
                    continue;
                }
                let state = states[rng.gen_range(0..3)];
                let expires_at = rng.gen_bool(0.3).then_some(now + 2);
                let change = rng.gen_bool(0.8).then(|| TriageChange {
                    state,
                    reason: "reviewed".into(),
                    expires_at,
                });
                set_triage(&db, &account, &project, &f.id, change.as_ref(), &audit()).await.unwrap();
            }
            tick().await;
        }
        let kept = dump_posture(db.as_ref()).await;
        assert!(kept.iter().any(|r| r.5 > 0), "{backend:?}: no scan had a triaged requirement");
        assert!(kept.iter().any(|r| r.8 != "[]"), "{backend:?}: no scan drifted");
        assert_eq!(scans_pending(db.as_ref()).await.unwrap(), 0, "pushes of this release are judged");

        forget_posture(&db).await;
        assert_eq!(scans_pending(db.as_ref()).await.unwrap(), 10);
        // One batch judges that many and leaves the rest pending.
        let first = backfill_batch(&db, 4).await.unwrap();
        assert_eq!((first.judged, first.nothing_to_judge), (4, 0), "{backend:?}");
        assert_eq!(scans_pending(db.as_ref()).await.unwrap(), 6);
        let rest = backfill_all(&db, 4).await.unwrap();
        assert_eq!(rest.judged, 6);
        assert_eq!(dump_posture(db.as_ref()).await, kept, "{backend:?}: the backfill judged differently");

        // A scan whose findings are gone has nothing to judge; a second run finds nothing.
        forget_posture(&db).await;
        tidemark_store::testing::mark_thinned(&db, &project, 10).await;
        let again = backfill_all(&db, 50).await.unwrap();
        assert_eq!((again.judged, again.nothing_to_judge), (9, 1), "{backend:?}");
        let without_last: Vec<_> = kept.iter().filter(|r| r.1 != 10).cloned().collect();
        assert_eq!(dump_posture(db.as_ref()).await, without_last);
        assert_eq!(backfill_all(&db, 50).await.unwrap().scans(), 0);
    }
}

tidemark_store::test_each_backend! {
    /// The posture a page shows now (the head scan's findings read a row per rule and status,
    /// a row per resource only for rules with a finding set aside) equals the push's own
    /// judgement of every finding, when nothing changed between: random scans, findings
    /// listed twice, and random set-asides before each push.
    async fn the_posture_read_now_equals_the_pushs_judgement_of_every_finding(backend) {
        let t = fresh(backend).await;
        let db = t.writer();
        let account = AccountId::trusted("acct_a");
        insert_pushing_account(&db, &account).await;
        let statuses = ["PASS", "FAIL", "WARN", "SKIP", "ERROR"];
        let mut rng = rand::rngs::StdRng::seed_from_u64(4848);
        let mut project = ProjectId::default();
        let mut set_aside_seen = 0;
        for n in 0..12_i64 {
            let mut findings: Vec<(String, String, &str)> = (0..rng.gen_range(5..80))
                .map(|_| {
                    let prefix = FRAMEWORKS[rng.gen_range(0..2)];
                    let rule = format!("{prefix}-{}.{}", rng.gen_range(1..3), rng.gen_range(1..5));
                    (rule, format!("r{}", rng.gen_range(0..4)), statuses[rng.gen_range(0..5)])
                })
                .collect();
            let twice = findings[0].clone();
            findings.push(twice);
            // Findings set aside now are judged so by the push that follows.
            if n > 0 {
                let line = find_line(db.as_ref(), &account, &project, None).await.unwrap().unwrap();
                let now = tidemark_domain::now_millis();
                let mut open = list_tracked(db.as_ref(), &line.id, &TrackedQuery { limit: 500, ..TrackedQuery::default() }, now)
                    .await
                    .unwrap();
                open.sort_by(|a, b| (&a.rule_id, &a.resource).cmp(&(&b.rule_id, &b.resource)));
                for f in &open {
                    if rng.gen_bool(0.25) {
                        let state = [TriageState::AcceptedRisk, TriageState::FalsePositive][rng.gen_range(0..2)];
                        let change = TriageChange { state, reason: "reviewed".into(), expires_at: None };
                        set_triage(&db, &account, &project, &f.id, Some(&change), &audit()).await.unwrap();
                    }
                }
            }
            let stored = pushed(&db, &account, push(n, &FRAMEWORKS, &findings)).await;
            project = stored.project_id.clone();
            let line = find_line(db.as_ref(), &account, &project, None).await.unwrap().unwrap();
            let now = tidemark_domain::now_millis();
            let read = current_posture(db.as_ref(), &account, &project, &line.id, now, &[])
                .await
                .unwrap()
                .unwrap();
            assert_eq!(read.scan_id, stored.scan_id);
            let kept = history(&db, &account, &project).await;
            for framework in read.frameworks {
                let row = kept
                    .iter()
                    .find(|r| r.scan_id == stored.scan_id && r.framework == framework.framework)
                    .unwrap();
                set_aside_seen += framework.tally.triaged;
                assert_eq!(framework.tally, row.tally(), "{backend:?}: scan {n}, {}", framework.framework);
                assert_eq!(framework.sections, row.sections(), "{backend:?}: scan {n}, {}", framework.framework);
            }
        }
        assert!(set_aside_seen > 0, "{backend:?}: no requirement was set aside");
    }
}
