//! Compliance posture: how a scan stands against each framework it covered.
//!
//! A rule id is a framework id, a dash and the rule's number (`cis-aws-2.0-1.4` is rule `1.4`
//! of `cis-aws-2.0`); a scan names the frameworks it scanned, so a rule belongs to the longest
//! of them its id starts with (then a dash). A rule of none of them is in no framework's
//! posture. A rule is one requirement, judged over all the resources the scan checked it on:
//!
//! - **failed**: some finding is open (FAIL, WARN or ERROR, as everywhere else in Tidemark) and
//!   not set aside by a triage that holds;
//! - **triaged**: it has open findings and a holding triage (accepted risk or false positive)
//!   sets aside every one of them. Counted apart, never as passed;
//! - **passed**: no open finding and at least one PASS;
//! - **not evaluated**: only SKIPs.
//!
//! The share passing is passed ÷ evaluated (passed + failed + triaged). A section is the rule
//! number up to its first dot (`1` of `1.4`, `cc6` of `cc6.1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tidemark_wire::FindingStatus;

/// What became of one requirement in one scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Requirement {
    Passed,
    Failed,
    Triaged,
    NotEvaluated,
}

impl Requirement {
    pub fn as_str(self) -> &'static str {
        match self {
            Requirement::Passed => "passed",
            Requirement::Failed => "failed",
            Requirement::Triaged => "triaged",
            Requirement::NotEvaluated => "not_evaluated",
        }
    }
}

/// Counts of requirements by what became of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub passed: u32,
    pub failed: u32,
    pub triaged: u32,
    pub not_evaluated: u32,
}

impl Tally {
    /// Counts one more requirement.
    pub fn add(&mut self, r: Requirement) {
        match r {
            Requirement::Passed => self.passed += 1,
            Requirement::Failed => self.failed += 1,
            Requirement::Triaged => self.triaged += 1,
            Requirement::NotEvaluated => self.not_evaluated += 1,
        }
    }

    /// Requirements the scan could judge (skipped ones are not).
    pub fn evaluated(&self) -> u32 {
        self.passed + self.failed + self.triaged
    }

    /// Passed ÷ evaluated, in [0, 1]; `None` when nothing was evaluated.
    pub fn share_passing(&self) -> Option<f64> {
        let evaluated = self.evaluated();
        (evaluated > 0).then(|| f64::from(self.passed) / f64::from(evaluated))
    }
}

/// One framework's posture in one scan: in total and per section (sections in rule order).
/// As `/v1` and reports show a tally: the counts and the share passing.
impl From<Tally> for tidemark_wire::posture::PostureCounts {
    fn from(t: Tally) -> Self {
        tidemark_wire::posture::PostureCounts {
            passed: t.passed,
            failed: t.failed,
            triaged: t.triaged,
            not_evaluated: t.not_evaluated,
            share_passing: t.share_passing(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameworkPosture {
    pub framework: String,
    pub tally: Tally,
    pub sections: Vec<(String, Tally)>,
}

/// One finding as posture sees it.
#[derive(Debug, Clone, Copy)]
pub struct Judged<'a> {
    pub rule_id: &'a str,
    pub status: FindingStatus,
    /// A triage that holds now sets it aside.
    pub triaged: bool,
}

/// The framework of `frameworks` that `rule_id` belongs to (the longest id it starts with,
/// followed by a dash and something), and the rule's number within it.
pub fn split_rule<'a>(rule_id: &'a str, frameworks: &[String]) -> Option<(usize, &'a str)> {
    frameworks
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let number = rule_id.strip_prefix(f.as_str())?.strip_prefix('-')?;
            (!number.is_empty()).then_some((i, f.len(), number))
        })
        .max_by_key(|&(_, len, _)| len)
        .map(|(i, _, number)| (i, number))
}

/// The section a rule number belongs to: its part before the first dot.
pub fn section_of(number: &str) -> &str {
    number
        .split_once('.')
        .map_or(number, |(section, _)| section)
}

/// Each rule's requirement, from every finding of a scan.
pub fn requirements<'a>(
    findings: impl IntoIterator<Item = Judged<'a>>,
) -> BTreeMap<&'a str, Requirement> {
    // Per rule: (any open not triaged, any open, any pass).
    let mut seen: BTreeMap<&str, (bool, bool, bool)> = BTreeMap::new();
    for f in findings {
        let entry = seen.entry(f.rule_id).or_default();
        if f.status.is_open() {
            entry.1 = true;
            entry.0 |= !f.triaged;
        }
        entry.2 |= f.status == FindingStatus::Pass;
    }
    seen.into_iter()
        .map(|(rule, (untriaged, open, pass))| {
            let r = match (untriaged, open, pass) {
                (true, _, _) => Requirement::Failed,
                (false, true, _) => Requirement::Triaged,
                (false, false, true) => Requirement::Passed,
                (false, false, false) => Requirement::NotEvaluated,
            };
            (rule, r)
        })
        .collect()
}

/// The posture of each framework the scan named, in the order first named (a framework none
/// of whose rules was in the scan has an empty tally; one named twice counts once).
pub fn posture(
    frameworks: &[String],
    requirements: &BTreeMap<&str, Requirement>,
) -> Vec<FrameworkPosture> {
    let mut distinct: Vec<String> = Vec::with_capacity(frameworks.len());
    for f in frameworks {
        if !distinct.contains(f) {
            distinct.push(f.clone());
        }
    }
    let frameworks = &distinct[..];
    let mut out: Vec<(Tally, BTreeMap<&str, Tally>)> = vec![Default::default(); frameworks.len()];
    for (rule, &r) in requirements {
        if let Some((i, number)) = split_rule(rule, frameworks) {
            out[i].0.add(r);
            out[i].1.entry(section_of(number)).or_default().add(r);
        }
    }
    frameworks
        .iter()
        .zip(out)
        .map(|(framework, (tally, sections))| FrameworkPosture {
            framework: framework.clone(),
            tally,
            sections: sections
                .into_iter()
                .map(|(s, t)| (s.to_owned(), t))
                .collect(),
        })
        .collect()
}

/// Drift: the requirements that passed in the line's previous scan and failed in this one
/// (a triaged failure is set aside, so it is no drift), in rule order.
pub fn drifted<'a>(
    previous: &BTreeMap<&str, Requirement>,
    now: &BTreeMap<&'a str, Requirement>,
) -> Vec<&'a str> {
    now.iter()
        .filter(|(rule, &r)| {
            r == Requirement::Failed && previous.get(*rule) == Some(&Requirement::Passed)
        })
        .map(|(rule, _)| *rule)
        .collect()
}

/// Tallies rolled up by `K` (a framework, a cloud account) across projects: the sum of the
/// requirements of each project's latest scan, and how many projects gave some.
#[derive(Debug, Clone, PartialEq)]
pub struct Rolled<K> {
    pub key: K,
    pub tally: Tally,
    pub projects: usize,
}

impl Tally {
    fn plus(self, other: Tally) -> Tally {
        Tally {
            passed: self.passed + other.passed,
            failed: self.failed + other.failed,
            triaged: self.triaged + other.triaged,
            not_evaluated: self.not_evaluated + other.not_evaluated,
        }
    }
}

/// Rolls `(key, project, tally)` up by key, worst first: the lowest share passing, then the
/// most failed; keys with nothing evaluated last. A project counts once per key however many
/// tallies it gives it.
pub fn roll_up<K: Ord + Clone>(
    items: impl IntoIterator<Item = (K, String, Tally)>,
) -> Vec<Rolled<K>> {
    let mut by_key: BTreeMap<K, (Tally, std::collections::BTreeSet<String>)> = BTreeMap::new();
    for (key, project, tally) in items {
        let entry = by_key.entry(key).or_default();
        entry.0 = entry.0.plus(tally);
        entry.1.insert(project);
    }
    let mut rolled: Vec<Rolled<K>> = by_key
        .into_iter()
        .map(|(key, (tally, projects))| Rolled {
            key,
            tally,
            projects: projects.len(),
        })
        .collect();
    worst_first(&mut rolled);
    rolled
}

/// Worst first: the lowest share passing, then the most failed; keys with nothing evaluated
/// last. Stable: equal ones keep their order (by key, as rolled up or as stored).
pub fn worst_first<K>(rolled: &mut [Rolled<K>]) {
    rolled.sort_by(|a, b| {
        let share = |r: &Rolled<K>| r.tally.share_passing().unwrap_or(f64::INFINITY);
        share(a)
            .total_cmp(&share(b))
            .then(b.tally.failed.cmp(&a.tally.failed))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn judged(rule_id: &str, status: FindingStatus, triaged: bool) -> Judged<'_> {
        Judged {
            rule_id,
            status,
            triaged,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_rule_belongs_to_the_longest_framework_it_starts_with() {
        let frameworks = names(&["cis-aws", "cis-aws-2.0", "soc2"]);
        assert_eq!(split_rule("cis-aws-2.0-1.4", &frameworks), Some((1, "1.4")));
        assert_eq!(split_rule("cis-aws-3.1", &frameworks), Some((0, "3.1")));
        assert_eq!(split_rule("soc2-cc6.1", &frameworks), Some((2, "cc6.1")));
        // A dash must follow, and a number after it.
        assert_eq!(split_rule("soc2x-1", &frameworks), None);
        assert_eq!(split_rule("soc2-", &frameworks), None);
        assert_eq!(split_rule("pci-4.0-2.2", &frameworks), None);
        assert_eq!(section_of("1.4"), "1");
        assert_eq!(section_of("cc6.1"), "cc6");
        assert_eq!(section_of("7"), "7");
    }

    #[test]
    fn a_requirement_is_judged_over_all_its_resources() {
        use FindingStatus::*;
        let findings = [
            judged("f-1.1", Pass, false),
            judged("f-1.1", Fail, false), // one failing resource fails it
            judged("f-1.2", Pass, false),
            judged("f-1.2", Skip, false),
            judged("f-2.1", Fail, true),
            judged("f-2.1", Warn, true), // every open one triaged
            judged("f-2.2", Fail, true),
            judged("f-2.2", Error, false), // one open not triaged
            judged("f-3.1", Skip, false),
        ];
        let r = requirements(findings);
        assert_eq!(r["f-1.1"], Requirement::Failed);
        assert_eq!(r["f-1.2"], Requirement::Passed);
        assert_eq!(r["f-2.1"], Requirement::Triaged);
        assert_eq!(r["f-2.2"], Requirement::Failed);
        assert_eq!(r["f-3.1"], Requirement::NotEvaluated);

        let p = posture(&names(&["f", "g", "f"]), &r);
        assert_eq!(p.len(), 2, "a framework named twice counts once");
        let f = &p[0];
        assert_eq!(
            f.tally,
            Tally {
                passed: 1,
                failed: 2,
                triaged: 1,
                not_evaluated: 1
            }
        );
        assert_eq!(f.tally.evaluated(), 4);
        assert_eq!(f.tally.share_passing(), Some(0.25));
        let sections: Vec<_> = f
            .sections
            .iter()
            .map(|(s, t)| (s.as_str(), t.failed))
            .collect();
        assert_eq!(sections, [("1", 1), ("2", 1), ("3", 0)]);
        assert_eq!(p[1].tally, Tally::default());
        assert_eq!(p[1].tally.share_passing(), None);
    }

    #[test]
    fn drift_is_passed_then_failed_and_a_triage_sets_it_aside() {
        use FindingStatus::*;
        let before = requirements([
            judged("f-1", Pass, false),
            judged("f-2", Pass, false),
            judged("f-3", Fail, false),
            judged("f-4", Skip, false),
        ]);
        let now = requirements([
            judged("f-1", Fail, false),
            judged("f-2", Fail, true),
            judged("f-3", Fail, false),
            judged("f-4", Fail, false),
            judged("f-5", Fail, false),
        ]);
        assert_eq!(drifted(&before, &now), ["f-1"]);
        assert!(drifted(&BTreeMap::new(), &now).is_empty());
    }

    fn status() -> impl Strategy<Value = FindingStatus> {
        prop_oneof![
            Just(FindingStatus::Pass),
            Just(FindingStatus::Fail),
            Just(FindingStatus::Warn),
            Just(FindingStatus::Skip),
            Just(FindingStatus::Error),
        ]
    }

    proptest! {
        /// The tallies add up to a count over the findings themselves, by framework and by
        /// section, however the findings fall.
        #[test]
        fn tallies_equal_a_count_over_the_findings(
            raw in proptest::collection::vec(
                (0..3usize, 0..4usize, 0..3usize, status(), any::<bool>()), 0..80),
        ) {
            let frameworks = names(&["a", "a-b", "c"]);
            let rules: Vec<String> = raw
                .iter()
                .map(|(f, s, n, _, _)| format!("{}-{s}.{n}", ["a", "a-b", "c"][*f]))
                .collect();
            let findings: Vec<Judged> = raw
                .iter()
                .zip(&rules)
                .map(|((_, _, _, st, t), rule)| judged(rule, *st, *t))
                .collect();
            let reqs = requirements(findings.iter().copied());
            let p = posture(&frameworks, &reqs);
            for (i, framework) in frameworks.iter().enumerate() {
                // Brute force: each distinct rule of this framework, judged by hand.
                let mut mine: Vec<&str> = rules
                    .iter()
                    .map(String::as_str)
                    .filter(|r| split_rule(r, &frameworks).map(|(j, _)| j) == Some(i))
                    .collect();
                mine.sort();
                mine.dedup();
                let mut expected = Tally::default();
                for rule in &mine {
                    let of_rule: Vec<_> = findings.iter().filter(|f| f.rule_id == *rule).collect();
                    let open_untriaged = of_rule.iter().any(|f| f.status.is_open() && !f.triaged);
                    let open = of_rule.iter().any(|f| f.status.is_open());
                    let pass = of_rule.iter().any(|f| f.status == FindingStatus::Pass);
                    expected.add(if open_untriaged {
                        Requirement::Failed
                    } else if open {
                        Requirement::Triaged
                    } else if pass {
                        Requirement::Passed
                    } else {
                        Requirement::NotEvaluated
                    });
                }
                prop_assert_eq!(&p[i].framework, framework);
                prop_assert_eq!(p[i].tally, expected);
                let mut summed = Tally::default();
                for (_, t) in &p[i].sections {
                    summed.passed += t.passed;
                    summed.failed += t.failed;
                    summed.triaged += t.triaged;
                    summed.not_evaluated += t.not_evaluated;
                }
                prop_assert_eq!(summed, expected);
            }
        }
    }
    fn t(passed: u32, failed: u32, triaged: u32, not_evaluated: u32) -> Tally {
        Tally {
            passed,
            failed,
            triaged,
            not_evaluated,
        }
    }

    #[test]
    fn a_roll_up_sums_by_key_counts_each_project_once_and_puts_the_worst_first() {
        let rolled = roll_up([
            ("soc2", "web".to_owned(), t(8, 2, 0, 1)),
            ("cis", "web".to_owned(), t(1, 3, 0, 0)),
            ("cis", "api".to_owned(), t(4, 0, 1, 0)),
            ("cis", "api".to_owned(), t(1, 1, 0, 0)),
            ("iso", "web".to_owned(), t(0, 0, 0, 5)),
            ("pci", "api".to_owned(), t(8, 2, 0, 0)),
        ]);
        let keys: Vec<&str> = rolled.iter().map(|r| r.key).collect();
        // cis 6/11, then soc2 and pci tie at 8/10 (pci failed as many: key order), iso last.
        assert_eq!(keys, ["cis", "pci", "soc2", "iso"]);
        assert_eq!(rolled[0].tally, t(6, 4, 1, 0));
        assert_eq!(rolled[0].projects, 2);
        assert_eq!(rolled[3].tally.share_passing(), None);
    }

    #[test]
    fn at_equal_shares_more_failures_come_first() {
        let rolled = roll_up([
            ("a", "p".to_owned(), t(1, 1, 0, 0)),
            ("b", "p".to_owned(), t(5, 5, 0, 0)),
        ]);
        assert_eq!(rolled[0].key, "b");
    }
}
