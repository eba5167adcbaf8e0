//! Quality gates: what a project's admins require of every scan, and the verdict on one scan.
//!
//! The verdict is decided in the push's write transaction, against the scan before it in the
//! project's history, and stored with the scan: a later change to the gate does not rewrite
//! history, and a replayed push answers with the verdict it had.

use std::collections::HashSet;

use tidemark_wire::{Finding, GateResult, GateStatus, Severity};

/// A project's gate: at least one condition is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityGate {
    min_score: Option<f64>,
    max_drop: Option<f64>,
    new_findings_at: Option<Severity>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateError {
    MinScore,
    MaxDrop,
    Severity,
}

impl std::fmt::Display for GateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateError::MinScore => "the minimum score must be a number from 0 to 100",
            GateError::MaxDrop => "the maximum drop must be a number from 0 to 100",
            GateError::Severity => "the severity must be critical, high, medium or low",
        })
    }
}

impl std::error::Error for GateError {}

impl QualityGate {
    /// `Ok(None)` when no condition is set: the project has no gate.
    pub fn new(
        min_score: Option<f64>,
        max_drop: Option<f64>,
        new_findings_at: Option<Severity>,
    ) -> Result<Option<QualityGate>, GateError> {
        let in_range = |v: f64| v.is_finite() && (0.0..=100.0).contains(&v);
        if min_score.is_some_and(|v| !in_range(v)) {
            return Err(GateError::MinScore);
        }
        if max_drop.is_some_and(|v| !in_range(v)) {
            return Err(GateError::MaxDrop);
        }
        if min_score.is_none() && max_drop.is_none() && new_findings_at.is_none() {
            return Ok(None);
        }
        Ok(Some(QualityGate {
            min_score,
            max_drop,
            new_findings_at,
        }))
    }

    /// A gate as typed into a form: each field blank (no such condition) or a value.
    pub fn parse_form(
        min_score: &str,
        max_drop: &str,
        new_findings_at: &str,
    ) -> Result<Option<QualityGate>, GateError> {
        fn number(text: &str, error: GateError) -> Result<Option<f64>, GateError> {
            match text.trim() {
                "" => Ok(None),
                t => t.parse::<f64>().map(Some).map_err(|_| error),
            }
        }
        let severity = match new_findings_at.trim() {
            "" | "none" => None,
            t => Some(Severity::parse(t).ok_or(GateError::Severity)?),
        };
        QualityGate::new(
            number(min_score, GateError::MinScore)?,
            number(max_drop, GateError::MaxDrop)?,
            severity,
        )
    }

    pub fn min_score(&self) -> Option<f64> {
        self.min_score
    }

    pub fn max_drop(&self) -> Option<f64> {
        self.max_drop
    }

    pub fn new_findings_at(&self) -> Option<Severity> {
        self.new_findings_at
    }

    /// The conditions in a few words (the audit log's before and after).
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(min) = self.min_score {
            parts.push(format!("min score {min}"));
        }
        if let Some(drop) = self.max_drop {
            parts.push(format!("max drop {drop}"));
        }
        if let Some(severity) = self.new_findings_at {
            parts.push(format!("no new findings at {} or above", severity.as_str()));
        }
        parts.join("; ")
    }
}

/// The scan before the pushed one, as much of it as a gate compares with.
#[derive(Debug, Clone, Copy)]
pub struct Previous<'a> {
    pub score: f64,
    /// Its open findings by (rule id, resource); read only when the gate needs them.
    pub open: &'a HashSet<(String, String)>,
    /// The line's findings that someone triaged (and whose triage holds): never new.
    pub triaged: &'a HashSet<(String, String)>,
}

/// Scores and drops compare with this tolerance, so that `80.3 - 75.3` (4.999…) is a drop of 5.
const EPSILON: f64 = 1e-9;

/// The gate's verdict on a scan with `score` and `findings`.
///
/// A project's first scan has nothing to compare with: only the minimum score applies to it.
/// New findings are the diff's: open (FAIL, WARN, ERROR) now, at or above the gate's severity,
/// not open for the same rule and resource in the previous scan, and not triaged.
pub fn evaluate(
    gate: Option<&QualityGate>,
    score: f64,
    findings: &[Finding],
    previous: Option<Previous<'_>>,
) -> GateResult {
    let Some(gate) = gate else {
        return GateResult::none();
    };
    let mut reasons = Vec::new();
    if let Some(min) = gate.min_score {
        if score < min - EPSILON {
            reasons.push(format!(
                "score {} is below the gate's minimum of {}",
                number(score),
                number(min)
            ));
        }
    }
    if let Some(previous) = previous {
        if let Some(max) = gate.max_drop {
            let drop = previous.score - score;
            if drop > max + EPSILON {
                reasons.push(format!(
                    "score dropped {} points since the previous scan; the gate allows at most {}",
                    number(drop),
                    number(max)
                ));
            }
        }
        if let Some(threshold) = gate.new_findings_at {
            let new = count_new_open(findings, previous.open, previous.triaged, threshold);
            if new > 0 {
                let noun = if new == 1 { "finding" } else { "findings" };
                reasons.push(format!(
                    "{new} new open {noun} at {} severity or above; the gate allows none",
                    threshold.as_str()
                ));
            }
        }
    }
    GateResult {
        status: if reasons.is_empty() {
            GateStatus::Passed
        } else {
            GateStatus::Failed
        },
        reasons,
    }
}

/// Whether evaluating `gate` needs the previous scan's open findings.
pub fn needs_previous_findings(gate: Option<&QualityGate>) -> bool {
    gate.is_some_and(|g| g.new_findings_at.is_some())
}

/// Open findings at or above `threshold` whose (rule id, resource) was neither open before nor
/// triaged. A finding listed twice in one push counts once.
pub fn count_new_open(
    findings: &[Finding],
    previous_open: &HashSet<(String, String)>,
    triaged: &HashSet<(String, String)>,
    threshold: Severity,
) -> u64 {
    let mut seen = HashSet::new();
    findings
        .iter()
        .filter(|f| f.status.is_open() && f.severity.at_or_above(threshold))
        .filter(|f| seen.insert((f.rule_id.as_str(), f.resource.as_str())))
        .filter(|f| {
            let key = (f.rule_id.clone(), f.resource.clone());
            !previous_open.contains(&key) && !triaged.contains(&key)
        })
        .count() as u64
}

/// Scores as people write them: at most two decimals, no trailing zeros.
fn number(v: f64) -> String {
    let text = format!("{v:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_wire::FindingStatus;

    fn finding(rule: &str, resource: &str, status: FindingStatus, severity: Severity) -> Finding {
        Finding {
            rule_id: rule.into(),
            resource: resource.into(),
            status,
            severity,
            message: "m".into(),
            remediation: "r".into(),
        }
    }

    fn gate(min: Option<f64>, drop: Option<f64>, sev: Option<Severity>) -> QualityGate {
        QualityGate::new(min, drop, sev).unwrap().unwrap()
    }

    #[test]
    fn no_condition_is_no_gate_and_the_verdict_is_none() {
        assert_eq!(QualityGate::new(None, None, None), Ok(None));
        let verdict = evaluate(None, 10.0, &[], None);
        assert_eq!(verdict, GateResult::none());
    }

    #[test]
    fn thresholds_outside_0_to_100_are_refused() {
        for bad in [-0.1, 100.5, f64::NAN, f64::INFINITY] {
            assert_eq!(
                QualityGate::new(Some(bad), None, None),
                Err(GateError::MinScore)
            );
            assert_eq!(
                QualityGate::new(None, Some(bad), None),
                Err(GateError::MaxDrop)
            );
        }
        assert!(QualityGate::new(Some(0.0), Some(100.0), None).is_ok());
    }

    #[test]
    fn a_form_reads_blank_as_no_condition_and_refuses_what_is_not_a_value() {
        assert_eq!(QualityGate::parse_form(" ", "", "none"), Ok(None));
        assert_eq!(
            QualityGate::parse_form("80", " 2.5 ", "high"),
            Ok(Some(gate(Some(80.0), Some(2.5), Some(Severity::High))))
        );
        assert_eq!(
            QualityGate::parse_form("eighty", "", ""),
            Err(GateError::MinScore)
        );
        assert_eq!(
            QualityGate::parse_form("", "NaN", ""),
            Err(GateError::MaxDrop)
        );
        assert_eq!(
            QualityGate::parse_form("", "", "HIGH"),
            Err(GateError::Severity)
        );
        assert_eq!(
            QualityGate::parse_form("101", "", ""),
            Err(GateError::MinScore)
        );
    }

    #[test]
    fn a_score_below_the_minimum_fails_and_says_by_how_much() {
        let g = gate(Some(80.0), None, None);
        let verdict = evaluate(Some(&g), 71.5, &[], None);
        assert_eq!(verdict.status, GateStatus::Failed);
        assert_eq!(
            verdict.reasons,
            ["score 71.5 is below the gate's minimum of 80"]
        );
        assert_eq!(
            evaluate(Some(&g), 80.0, &[], None).status,
            GateStatus::Passed
        );
    }

    #[test]
    fn a_drop_larger_than_allowed_fails_and_an_equal_drop_passes() {
        let g = gate(None, Some(5.0), None);
        let none = HashSet::new();
        let prev = |score| {
            Some(Previous {
                score,
                open: &none,
                triaged: &none,
            })
        };
        // 80.3 - 75.3 is 4.999… in binary floating point: still a drop of exactly 5.
        assert_eq!(
            evaluate(Some(&g), 75.3, &[], prev(80.3)).status,
            GateStatus::Passed
        );
        let failed = evaluate(Some(&g), 74.0, &[], prev(80.25));
        assert_eq!(
            failed.reasons,
            ["score dropped 6.25 points since the previous scan; the gate allows at most 5"]
        );
        // A rise is never a drop.
        assert_eq!(
            evaluate(Some(&g), 99.0, &[], prev(10.0)).status,
            GateStatus::Passed
        );
    }

    #[test]
    fn a_first_scan_is_judged_by_the_minimum_score_only() {
        let g = gate(None, Some(0.0), Some(Severity::Low));
        let findings = [finding("r1", "a", FindingStatus::Fail, Severity::Critical)];
        assert_eq!(
            evaluate(Some(&g), 1.0, &findings, None).status,
            GateStatus::Passed
        );
    }

    #[test]
    fn new_open_findings_at_or_above_the_threshold_fail_the_gate() {
        let g = gate(None, None, Some(Severity::High));
        let before: HashSet<(String, String)> = [("r1".to_string(), "a".to_string())].into();
        let nothing_triaged = HashSet::new();
        let prev = Some(Previous {
            score: 50.0,
            open: &before,
            triaged: &nothing_triaged,
        });
        let findings = [
            // Open before: not new.
            finding("r1", "a", FindingStatus::Fail, Severity::Critical),
            // New, but below the threshold.
            finding("r2", "a", FindingStatus::Fail, Severity::Medium),
            // New but not open.
            finding("r3", "a", FindingStatus::Pass, Severity::Critical),
            finding("r4", "a", FindingStatus::Skip, Severity::Critical),
        ];
        assert_eq!(
            evaluate(Some(&g), 50.0, &findings, prev).status,
            GateStatus::Passed
        );
        let mut worse = findings.to_vec();
        worse.push(finding("r5", "a", FindingStatus::Warn, Severity::High));
        worse.push(finding("r6", "b", FindingStatus::Error, Severity::Critical));
        // Listed twice, counted once.
        worse.push(finding("r6", "b", FindingStatus::Fail, Severity::Critical));
        let verdict = evaluate(Some(&g), 50.0, &worse, prev);
        assert_eq!(
            verdict.reasons,
            ["2 new open findings at high severity or above; the gate allows none"]
        );
        // Triaged (accepted, false positive, won't fix): not new, whatever the previous scan.
        let triaged: HashSet<(String, String)> = [("r6".to_string(), "b".to_string())].into();
        let verdict = evaluate(
            Some(&g),
            50.0,
            &worse,
            Some(Previous {
                score: 50.0,
                open: &before,
                triaged: &triaged,
            }),
        );
        assert_eq!(
            verdict.reasons,
            ["1 new open finding at high severity or above; the gate allows none"]
        );
    }

    #[test]
    fn every_failed_condition_is_a_reason_in_a_fixed_order() {
        let g = gate(Some(90.0), Some(1.0), Some(Severity::Low));
        let before = HashSet::new();
        let findings = [finding("r1", "a", FindingStatus::Fail, Severity::Low)];
        let verdict = evaluate(
            Some(&g),
            50.0,
            &findings,
            Some(Previous {
                score: 60.0,
                open: &before,
                triaged: &before,
            }),
        );
        assert_eq!(verdict.status, GateStatus::Failed);
        assert_eq!(verdict.reasons.len(), 3);
        assert!(verdict.reasons[0].starts_with("score 50 is below"));
        assert!(verdict.reasons[1].starts_with("score dropped 10 points"));
        assert_eq!(
            verdict.reasons[2],
            "1 new open finding at low severity or above; the gate allows none"
        );
    }
}
