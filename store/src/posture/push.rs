//! A pushed scan's posture, judged before the push queues for the writer.
//!
//! On SQLite one task writes every push (`pushes::committer`), so whatever it computes is
//! taken from every push's time. A scan's requirements, its frameworks' tallies and sections
//! depend on the push alone, unless the line has findings set aside by triage: those are
//! judged by the caller, in parallel with the writer, and the writer adds only what needs the
//! line's head (drift against the previous scan, the account's custom frameworks) or judges
//! again when a finding of the scan is set aside.

use std::collections::HashSet;

use tidemark_domain::frameworks::{ValidFramework, POSTURE_PREFIX};
use tidemark_domain::posture::{posture, split_rule, Requirement};
use tidemark_wire::{Finding, PushRequest};

use super::{
    custom_rows, drifted_json, judge_pushed, previous_requirements, push_rows, PostureRowOut,
};
use crate::spans::LiveSpan;

/// What a push's posture is with nothing set aside. Held while the push waits for the writer,
/// so it keeps what the writer needs and no more (the requirements of a custom framework's
/// controls are judged again there: few accounts have one).
#[derive(Debug, Default)]
pub(crate) struct PushPosture {
    /// The rows of the frameworks the scan named, sections written out, no drift yet.
    rows: Vec<PostureRowOut>,
    /// Each failing rule that belongs to a named framework, in rule order, and its row.
    failing: Vec<(String, usize)>,
}

impl PushPosture {
    /// Judges a scan naming `frameworks` with `findings`, as if nothing were set aside.
    pub(crate) fn prepare(frameworks: &[String], findings: &[Finding]) -> Self {
        let named: Vec<String> = frameworks
            .iter()
            .filter(|f| !f.starts_with(POSTURE_PREFIX))
            .cloned()
            .collect();
        // A scan naming no framework has no rows: its rules need no judging here.
        if named.is_empty() {
            return PushPosture::default();
        }
        let now = judge_pushed(findings, None);
        let rows: Vec<PostureRowOut> = posture(&named, &now)
            .into_iter()
            .map(|p| PostureRowOut::new(p, Vec::new()).with_sections_written())
            .collect();
        let failing = now
            .iter()
            .filter(|(_, &r)| r == Requirement::Failed)
            .filter_map(|(rule, _)| {
                let (i, _) = split_rule(rule, &named)?;
                let row = rows
                    .iter()
                    .position(|row| row.posture.framework == named[i])?;
                Some(((*rule).to_owned(), row))
            })
            .collect();
        PushPosture { rows, failing }
    }

    /// The rows to store for the scan (`frameworks`, `findings`: the push) on a line whose
    /// set-aside findings are `set_aside` and whose latest scan has the spans `previous`,
    /// with the account's custom frameworks `customs`: the same rows
    /// [`super::push_rows`] makes.
    pub(crate) fn rows(
        &self,
        frameworks: &[String],
        findings: &[Finding],
        set_aside: Option<&HashSet<(String, String)>>,
        previous: &[LiveSpan],
        customs: &[ValidFramework],
    ) -> Vec<PostureRowOut> {
        let set_aside = set_aside.filter(|t| !t.is_empty());
        if set_aside.is_some_and(|t| sets_aside_one_of(t, findings)) {
            return push_rows(frameworks, findings, set_aside, previous, customs);
        }
        let mut rows = self.rows.clone();
        if self.failing.is_empty() && customs.is_empty() {
            return rows;
        }
        let previous = previous_requirements(previous);
        for (rule, row) in &self.failing {
            if previous.get(rule.as_str()) == Some(&Requirement::Passed) {
                rows[*row].drifted.push(rule.clone());
            }
        }
        if !customs.is_empty() {
            let now = judge_pushed(findings, None);
            rows.extend(custom_rows(customs, &now, &previous));
        }
        rows
    }
}

/// What a push's judgement needs of the line's head: its findings set aside now, its latest
/// scan's spans, and the account's custom frameworks.
pub(crate) type HeadFacts<'a> = (
    Option<&'a HashSet<(String, String)>>,
    &'a [LiveSpan],
    &'a [ValidFramework],
);

impl PushPosture {
    /// The pushed scan's rows, and what drifted as the scan keeps it (only for a licence with
    /// drift detection: `drift_detection`).
    pub(crate) fn judge(
        &self,
        push: &PushRequest,
        (set_aside, previous, customs): HeadFacts<'_>,
        drift_detection: bool,
    ) -> (Vec<PostureRowOut>, Option<String>) {
        let rows = self.rows(
            &push.frameworks,
            &push.findings,
            set_aside,
            previous,
            customs,
        );
        let drifted = drift_detection.then(|| drifted_json(&rows)).flatten();
        (rows, drifted)
    }
}

/// Whether one of the scan's open findings is among those set aside.
fn sets_aside_one_of(set_aside: &HashSet<(String, String)>, findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| f.status.is_open() && set_aside.contains(&(f.rule_id.clone(), f.resource.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::FindingStatus;

    fn finding(rule: &str, resource: &str, status: FindingStatus) -> Finding {
        Finding {
            rule_id: rule.to_owned(),
            resource: resource.to_owned(),
            status,
            severity: tidemark_wire::Severity::High,
            message: String::new(),
            remediation: String::new(),
        }
    }

    fn spans_of(findings: &[Finding]) -> Vec<LiveSpan> {
        findings
            .iter()
            .zip(0..)
            .map(|(f, position)| LiveSpan::for_tests(position, &f.rule_id, &f.resource, f.status))
            .collect()
    }

    /// Judged before the writer or by it, a push's rows are the same, whatever is set aside,
    /// drifted or custom.
    #[test]
    fn prepared_rows_are_the_rows_the_writer_would_judge() {
        use FindingStatus::{Fail, Pass};
        let frameworks: Vec<String> = ["cis-aws-1.4", "soc2", "cis-aws-1.4", "custom:x"]
            .map(str::to_owned)
            .to_vec();
        let before = [
            finding("cis-aws-1.4-1.1", "a", Pass),
            finding("cis-aws-1.4-2.1", "b", Pass),
            finding("soc2-cc6", "c", Pass),
            finding("cis-aws-1.4-3.1", "d", Fail),
        ];
        let now = [
            finding("cis-aws-1.4-1.1", "a", Fail),
            finding("cis-aws-1.4-2.1", "b", Fail),
            finding("cis-aws-1.4-2.1", "b2", Pass),
            finding("soc2-cc6", "c", Fail),
            finding("cis-aws-1.4-3.1", "d", Pass),
            finding("other-9", "e", Fail),
        ];
        let custom = ValidFramework::from_stored(
            &serde_json::json!({
                "id": "x", "title": "X",
                "controls": [{"id": "c1", "title": "C1", "rules": ["cis-aws-1.4-1.1", "soc2-cc6"]}],
            })
            .to_string(),
        )
        .expect("a custom framework");
        let customs = [custom];
        let unnamed = vec!["custom:x".to_owned()];
        let aside_other: HashSet<(String, String)> =
            [("cis-aws-1.4-9.9".to_owned(), "z".to_owned())].into();
        let aside_one: HashSet<(String, String)> =
            [("cis-aws-1.4-2.1".to_owned(), "b".to_owned())].into();
        for (frameworks, previous) in [&frameworks, &unnamed]
            .into_iter()
            .flat_map(|f| [(f, Vec::new()), (f, spans_of(&before))])
        {
            let prepared = PushPosture::prepare(frameworks, &now);
            for customs in [&[][..], &customs[..]] {
                for set_aside in [None, Some(&aside_other), Some(&aside_one)] {
                    let want = push_rows(frameworks, &now, set_aside, &previous, customs);
                    let got = prepared.rows(frameworks, &now, set_aside, &previous, customs);
                    let strip = |rows: Vec<PostureRowOut>| {
                        rows.into_iter()
                            .map(|r| (r.posture, r.drifted))
                            .collect::<Vec<_>>()
                    };
                    assert_eq!(strip(got), strip(want), "{set_aside:?} {}", previous.len());
                }
            }
        }
        let prepared = PushPosture::prepare(&frameworks, &now);
        let drifted = prepared.rows(&frameworks, &now, None, &spans_of(&before), &[]);
        assert_eq!(
            drifted[0].drifted,
            ["cis-aws-1.4-1.1", "cis-aws-1.4-2.1"],
            "both passed before"
        );
        assert_eq!(drifted[1].drifted, ["soc2-cc6"]);
    }
}
