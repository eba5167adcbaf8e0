//! Quality gates on both backends: evaluated in the push's transaction against the latest
//! scan, stored with the scan, answered again by a replay.
#![allow(clippy::unwrap_used)]

use serde_json::json;
use tidemark_domain::gate::QualityGate;
use tidemark_domain::push::ValidPush;
use tidemark_store::dashboard::{find_scan, list_scans};
use tidemark_store::gates::{project_gate, set_project_gate};
use tidemark_store::pushes::{record_push, PushOutcome};
use tidemark_store::testing::{
    appended, fresh, insert_pushing_account, push_context as ctx, push_together,
};
use tidemark_wire::{GateResult, GateStatus, Severity};

/// A push of `score` with FAIL findings given as (rule id, severity).
fn push(second: i64, score: f64, findings: &[(&str, &str)]) -> ValidPush {
    let at = tidemark_domain::to_rfc3339((1_795_000_000 + second) * 1000);
    let findings: Vec<_> = findings
        .iter()
        .map(|(rule, severity)| {
            json!({"rule_id": rule, "resource": "aws_s3_bucket.logs", "status": "FAIL",
                   "severity": severity, "message": "m", "remediation": "r"})
        })
        .collect();
    let body = json!({
        "project_label": "api", "cloud": "aws", "cloud_account_id": "123456789012",
        "frameworks": ["cis-aws-2.0"], "score": score, "passed": 1, "failed": 1,
        "severity_counts": {"critical": 0, "high": 1, "medium": 0, "low": 0},
        "findings": findings, "state_source": "ci", "scanned_at": at,
    });
    ValidPush::parse(body.to_string().as_bytes()).unwrap()
}

tidemark_store::test_each_backend! {
    async fn a_gate_judges_each_push_against_the_latest_scan_and_a_replay_repeats_the_verdict(backend) {
        let t = fresh(backend).await;
        insert_pushing_account(&t.db, &acct("acct_a")).await;
        insert_pushing_account(&t.db, &acct("acct_b")).await;

        let first = appended(record_push(&t.db, ctx(&acct("acct_a")), push(0, 90.0, &[("r-1", "high")])).await.unwrap());
        assert_eq!(first.gate, GateResult::none(), "no gate yet");
        let project = first.project_id.clone();

        let gate = QualityGate::new(Some(80.0), Some(5.0), Some(Severity::High)).unwrap().unwrap();
        assert!(!set_project_gate(&t.db, &acct("acct_b"), &project, Some(&gate), &tidemark_store::testing::audit()).await.unwrap(),
            "another account's project is not found");
        assert_eq!(project_gate(&t.db, &acct("acct_a"), &project).await.unwrap(), None);
        assert!(set_project_gate(&t.db, &acct("acct_a"), &project, Some(&gate), &tidemark_store::testing::audit()).await.unwrap());
        assert_eq!(project_gate(&t.db, &acct("acct_a"), &project).await.unwrap(), Some(gate));

        // r-1 was open before; r-2 is new but below the threshold; a drop of 4.
        let passed = appended(record_push(&t.db, ctx(&acct("acct_a")),
            push(1, 86.0, &[("r-1", "high"), ("r-2", "medium")])).await.unwrap());
        assert_eq!(passed.gate, GateResult { status: GateStatus::Passed, reasons: vec![] });

        // Below the minimum, a drop of 16, and a new critical finding.
        let failing = push(2, 70.0, &[("r-1", "high"), ("r-3", "critical")]);
        let failed = appended(record_push(&t.db, ctx(&acct("acct_a")), failing.clone()).await.unwrap());
        assert_eq!(failed.gate.status, GateStatus::Failed);
        assert_eq!(failed.gate.reasons, [
            "score 70 is below the gate's minimum of 80",
            "score dropped 16 points since the previous scan; the gate allows at most 5",
            "1 new open finding at high severity or above; the gate allows none",
        ]);

        // The gate is removed; a retry of the failed push still answers with its verdict.
        assert!(set_project_gate(&t.db, &acct("acct_a"), &project, None, &tidemark_store::testing::audit()).await.unwrap());
        match record_push(&t.db, ctx(&acct("acct_a")), failing).await.unwrap() {
            PushOutcome::Replayed(scan, _) => assert_eq!(scan.gate, failed.gate),
            other => panic!("expected a replay: {other:?}"),
        }
        let next = appended(record_push(&t.db, ctx(&acct("acct_a")), push(3, 10.0, &[])).await.unwrap());
        assert_eq!(next.gate, GateResult::none());

        // The history keeps each verdict.
        let scans = list_scans(&t.db, &acct("acct_a"), &project, None, 0, 10).await.unwrap();
        let verdicts: Vec<GateStatus> = scans.iter().map(|s| s.gate.status).collect();
        assert_eq!(verdicts, [GateStatus::None, GateStatus::Failed, GateStatus::Passed, GateStatus::None]);
        let (scan, _) = find_scan(&t.db, &acct("acct_a"), &project, &failed.scan_id).await.unwrap().unwrap();
        assert_eq!(scan.gate, failed.gate);
    }
}

tidemark_store::test_each_backend! {
    async fn gated_pushes_written_in_one_group_each_see_their_own_previous_findings(backend) {
        let t = fresh(backend).await;
        let gate = QualityGate::new(None, None, Some(Severity::High)).unwrap().unwrap();
        // Six accounts: even ones gated on new findings, odd ones not. Each first scan has
        // its own open finding r-<a>.
        for a in 0..6 {
            let account = tidemark_store::AccountId::trusted(format!("acct_{a}"));
            insert_pushing_account(&t.db, &account).await;
            let rule = format!("r-{a}");
            let first = appended(record_push(&t.db, ctx(&account), push(0, 90.0, &[(&rule, "high")])).await.unwrap());
            if a % 2 == 0 {
                assert!(set_project_gate(&t.db, &account, &first.project_id, Some(&gate),
                    &tidemark_store::testing::audit()).await.unwrap());
            }
        }
        // The second scans arrive together (one SQLite group): accounts 0 and 1 keep their own
        // finding; 2 and 3 add the finding that is old for account 0 (new for them); 4 and 5
        // add a new one of their own.
        let second = |a: usize| -> Vec<(String, &'static str)> {
            let own = format!("r-{a}");
            match a {
                0 | 1 => vec![(own, "high")],
                2 | 3 => vec![(own, "high"), ("r-0".to_owned(), "critical")],
                _ => vec![(own, "high"), (format!("r-new-{a}"), "high")],
            }
        };
        let pushes = (0..6)
            .map(|a| {
                let findings = second(a);
                let findings: Vec<(&str, &str)> = findings.iter().map(|(r, s)| (r.as_str(), *s)).collect();
                (ctx(&format!("acct_{a}")), push(1, 90.0, &findings))
            })
            .collect();
        let before = t.db.db().push_group_stats();
        let verdicts: Vec<GateStatus> = push_together(&t.db, pushes)
            .await
            .into_iter()
            .map(|r| appended(r.unwrap()).gate.status)
            .collect();
        assert_eq!(verdicts, [
            GateStatus::Passed, GateStatus::None,
            GateStatus::Failed, GateStatus::None,
            GateStatus::Failed, GateStatus::None,
        ]);
        if let (Some(before), Some(after)) = (before, t.db.db().push_group_stats()) {
            assert_eq!(after.groups - before.groups, 1, "the six shared one group: {before:?} {after:?}");
        }
    }
}

/// A test account's id (tests name theirs `acct_a`, `acct_b`).
fn acct(s: &str) -> tidemark_store::AccountId {
    tidemark_store::AccountId::trusted(s)
}
