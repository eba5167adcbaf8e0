//! A scan's compliance report (issue 47) as plain functions: every requirement of every
//! framework the scan named (and of the account's custom frameworks) judged from its findings
//! with the triage that holds, the failures behind each, and the same as a Prowler-shaped
//! compliance CSV.

use std::collections::{BTreeMap, HashMap};

use tidemark_wire::findings::TriageState;
use tidemark_wire::posture::PostureCounts;
use tidemark_wire::report::{
    ComplianceReport, ReportFinding, ReportFramework, ReportProject, ReportRequirement, ReportScan,
    ReportTriage, REPORT_KIND,
};
use tidemark_wire::FindingStatus;

use crate::frameworks::ValidFramework;
use crate::posture::{posture, requirements, section_of, split_rule, Judged, Requirement, Tally};

/// One finding of the scan.
#[derive(Debug, Clone)]
pub struct ReportInput {
    pub rule_id: String,
    pub resource: String,
    pub status: String,
    pub severity: String,
    pub message: String,
}

/// Triage states that set a finding aside (the rest, "won't fix", keep it failed).
/// Whether a triage sets its failure aside (accepted risk, false positive; not won't fix).
fn sets_aside(t: &ReportTriage) -> bool {
    TriageState::parse(&t.state).is_some_and(TriageState::sets_aside)
}

fn counts(t: Tally) -> PostureCounts {
    t.into()
}

/// The report of a scan: `frameworks` as it named them, `findings` as stored, `triage` the
/// triage that holds now by (rule id, resource), `customs` the account's custom frameworks.
pub fn build_report(
    project: ReportProject,
    scan: ReportScan,
    frameworks: &[String],
    findings: &[ReportInput],
    triage: &HashMap<(String, String), ReportTriage>,
    customs: &[ValidFramework],
    generated_at: String,
) -> ComplianceReport {
    let triage_of = |f: &ReportInput| triage.get(&(f.rule_id.clone(), f.resource.clone()));
    let judged = requirements(findings.iter().filter_map(|f| {
        let status = FindingStatus::parse(&f.status)?;
        Some(Judged {
            rule_id: &f.rule_id,
            status,
            triaged: status.is_open() && triage_of(f).is_some_and(sets_aside),
        })
    }));
    let mut failures: BTreeMap<&str, Vec<ReportFinding>> = BTreeMap::new();
    for f in findings {
        if FindingStatus::parse(&f.status).is_some_and(|s| s.is_open()) {
            failures.entry(&f.rule_id).or_default().push(ReportFinding {
                rule_id: f.rule_id.clone(),
                resource: f.resource.clone(),
                status: f.status.clone(),
                severity: f.severity.clone(),
                message: f.message.clone(),
                triage: triage_of(f).cloned(),
            });
        }
    }
    let scanned: Vec<String> = frameworks
        .iter()
        .filter(|f| !f.starts_with(crate::frameworks::POSTURE_PREFIX))
        .cloned()
        .collect();
    let named = dedupe(&scanned);
    let mut out: Vec<ReportFramework> = posture(&named, &judged)
        .into_iter()
        .map(|fw| {
            let requirements = judged
                .iter()
                .filter_map(|(rule, status)| {
                    let (at, number) = split_rule(rule, &named)?;
                    (named[at] == fw.framework).then(|| ReportRequirement {
                        id: (*rule).to_owned(),
                        section: section_of(number).to_owned(),
                        status: status.as_str().to_owned(),
                        title: None,
                        rules: Vec::new(),
                        failures: failures.get(rule).cloned().unwrap_or_default(),
                    })
                })
                .collect();
            ReportFramework {
                framework: fw.framework,
                counts: counts(fw.tally),
                requirements,
            }
        })
        .collect();
    for custom in customs {
        out.push(custom_framework(custom, &judged, &failures));
    }
    ComplianceReport {
        kind: REPORT_KIND.to_owned(),
        generated_at,
        project,
        scan,
        frameworks: out,
    }
}

fn dedupe(frameworks: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(frameworks.len());
    for f in frameworks {
        if !out.contains(f) {
            out.push(f.clone());
        }
    }
    out
}

fn custom_framework(
    custom: &ValidFramework,
    judged: &BTreeMap<&str, Requirement>,
    failures: &BTreeMap<&str, Vec<ReportFinding>>,
) -> ReportFramework {
    let name = custom.posture_name();
    let mut tally = Tally::default();
    let requirements = custom
        .judge_controls(judged)
        .map(|(c, status)| {
            tally.add(status);
            ReportRequirement {
                id: c.id.clone(),
                section: section_of(&c.id).to_owned(),
                status: status.as_str().to_owned(),
                title: Some(c.title.clone()),
                rules: c.rules.clone(),
                failures: c
                    .rules
                    .iter()
                    .flat_map(|r| failures.get(r.as_str()).cloned().unwrap_or_default())
                    .collect(),
            }
        })
        .collect();
    ReportFramework {
        framework: name,
        counts: counts(tally),
        requirements,
    }
}

/// Each scanned framework's requirements titled and sectioned as its published catalogue
/// says (the CSV's `REQUIREMENTS_DESCRIPTION` and `REQUIREMENTS_ATTRIBUTES_SECTION`); a
/// framework without one keeps the rule's own section and no title.
pub fn describe_with(report: &mut ComplianceReport, catalogues: &[crate::catalogue::Catalogue]) {
    for fw in &mut report.frameworks {
        let Some(catalogue) = catalogues.iter().find(|c| c.framework == fw.framework) else {
            continue;
        };
        let by_rule: HashMap<&str, &crate::catalogue::CatalogueRequirement> = catalogue
            .requirements
            .iter()
            .map(|r| (r.rule_id.as_str(), r))
            .collect();
        for r in &mut fw.requirements {
            if let Some(c) = by_rule.get(r.id.as_str()) {
                r.title = Some(c.title.clone());
                r.section = c.section.clone();
            }
        }
    }
}

/// The report as a compliance CSV in Prowler's shape (`;`-separated, one row per requirement
/// and resource: a passed or unevaluated requirement is one row without a resource).
pub fn report_csv(report: &ComplianceReport) -> String {
    let mut out = String::from(
        "PROVIDER;ACCOUNTID;ASSESSMENTDATE;FRAMEWORK;REQUIREMENTS_ID;\
         REQUIREMENTS_DESCRIPTION;REQUIREMENTS_ATTRIBUTES_SECTION;STATUS;STATUSEXTENDED;\
         RESOURCEID;CHECKID;MUTED;MUTED_REASON\n",
    );
    let s = &report.scan;
    for fw in &report.frameworks {
        for r in &fw.requirements {
            let status = match r.status.as_str() {
                "passed" => "PASS",
                "failed" => "FAIL",
                "triaged" => "MUTED",
                _ => "MANUAL",
            };
            let description = r.title.clone().unwrap_or_default();
            let mut row = |extended: &str, resource: &str, check: &str, muted: &str, why: &str| {
                let cells = [
                    s.cloud.as_str(),
                    s.cloud_account_id.as_str(),
                    s.scanned_at.as_str(),
                    fw.framework.as_str(),
                    r.id.as_str(),
                    description.as_str(),
                    r.section.as_str(),
                    status,
                    extended,
                    resource,
                    check,
                    muted,
                    why,
                ];
                let line: Vec<String> = cells.iter().map(|c| csv_cell(c)).collect();
                out.push_str(&line.join(";"));
                out.push('\n');
            };
            if r.failures.is_empty() {
                let check = if r.rules.is_empty() {
                    r.id.clone()
                } else {
                    r.rules.join(" ")
                };
                row("", "", &check, "False", "");
            }
            for f in &r.failures {
                // A won't-fix failure is a failure: not muted, its triage said in the text.
                let (extended, muted, why) = match &f.triage {
                    Some(t) if sets_aside(t) => (
                        f.message.clone(),
                        "True",
                        format!("{}: {} ({}, {})", t.state, t.reason, t.by, t.at),
                    ),
                    Some(t) => (
                        format!(
                            "{} (won't fix, by {} at {}: {})",
                            f.message, t.by, t.at, t.reason
                        ),
                        "False",
                        String::new(),
                    ),
                    None => (f.message.clone(), "False", String::new()),
                };
                row(&extended, &f.resource, &f.rule_id, muted, &why);
            }
        }
    }
    out
}

/// A CSV cell: quoted when it holds the separator, a quote or a line break; a leading `=`,
/// `+`, `-` or `@` is prefixed with `'` so a spreadsheet shows it rather than running it.
fn csv_cell(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_owned()
    };
    if text.contains([';', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(rule: &str, resource: &str, status: &str) -> ReportInput {
        ReportInput {
            rule_id: rule.into(),
            resource: resource.into(),
            status: status.into(),
            severity: "high".into(),
            message: format!("{rule} on {resource}"),
        }
    }

    fn report(triage: &HashMap<(String, String), ReportTriage>) -> ComplianceReport {
        let scan = ReportScan {
            scan_id: "scn_1".into(),
            scanned_at: "2026-11-20T10:00:00Z".into(),
            received_at: "2026-11-20T10:00:01Z".into(),
            cloud: "aws".into(),
            cloud_account_id: "123".into(),
            score: 50.0,
            branch: Some("main".into()),
            pull_request: None,
            commit: None,
            pushed_by: None,
        };
        let project = ReportProject {
            id: "prj_1".into(),
            label: "api".into(),
        };
        let findings = [
            input("cis-1.1", "a", "PASS"),
            input("cis-1.2", "a", "FAIL"),
            input("cis-1.2", "b", "PASS"),
            input("cis-2.1", "c", "FAIL"),
            input("cis-3.1", "d", "SKIP"),
        ];
        build_report(
            project,
            scan,
            &["cis".into()],
            &findings,
            triage,
            &[],
            "2026-11-21T00:00:00Z".into(),
        )
    }

    #[test]
    fn every_requirement_is_listed_with_the_failures_behind_it() {
        let r = report(&HashMap::new());
        let cis = &r.frameworks[0];
        let statuses: Vec<(&str, &str)> = cis
            .requirements
            .iter()
            .map(|q| (q.id.as_str(), q.status.as_str()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("cis-1.1", "passed"),
                ("cis-1.2", "failed"),
                ("cis-2.1", "failed"),
                ("cis-3.1", "not_evaluated")
            ]
        );
        assert_eq!(cis.requirements[1].failures.len(), 1);
        assert_eq!(cis.requirements[1].failures[0].resource, "a");
        assert_eq!((cis.counts.passed, cis.counts.failed), (1, 2));
    }

    /// The triage of `cis-2.1` on `c` by ana, as a report's input has it.
    fn triaged_c(state: &str, reason: &str) -> HashMap<(String, String), ReportTriage> {
        HashMap::from([(
            ("cis-2.1".to_owned(), "c".to_owned()),
            ReportTriage {
                state: state.into(),
                reason: reason.into(),
                by: "ana@example.com".into(),
                at: "2026-11-20T11:00:00Z".into(),
                expires_at: None,
            },
        )])
    }

    #[test]
    fn a_set_aside_failure_is_triaged_and_says_who_and_why() {
        let r = report(&triaged_c("accepted_risk", "public by design"));
        let req = &r.frameworks[0].requirements[2];
        assert_eq!(req.status, "triaged");
        assert_eq!(
            req.failures[0].triage.as_ref().unwrap().by,
            "ana@example.com"
        );
        let csv = report_csv(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("PROVIDER;ACCOUNTID;ASSESSMENTDATE;FRAMEWORK"));
        assert!(lines.iter().any(|l| l.contains(
            ";cis-2.1;;2;MUTED;cis-2.1 on c;c;cis-2.1;True;accepted_risk: public by design"
        )));
        assert!(lines
            .iter()
            .any(|l| l.contains(";cis-1.1;;1;PASS;;;cis-1.1;False;")));
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_wont_fix_failure_is_failed_and_not_muted_in_the_csv() {
        let r = report(&triaged_c("wont_fix", "legacy bucket"));
        let req = &r.frameworks[0].requirements[2];
        assert_eq!(req.status, "failed");
        let csv = report_csv(&r);
        let row = csv
            .lines()
            .find(|l| l.contains(";cis-2.1;"))
            .expect("the failure's row");
        assert!(
            row.contains(";FAIL;cis-2.1 on c (won't fix, by ana@example.com at 2026-11-20T11:00:00Z: legacy bucket);c;cis-2.1;False;"),
            "{row}"
        );
        assert!(!csv.contains(";True;"), "nothing muted: {csv}");
    }

    #[test]
    fn cells_that_a_spreadsheet_would_run_or_split_are_defused() {
        assert_eq!(csv_cell("=cmd()"), "'=cmd()");
        assert_eq!(csv_cell("a;b"), "\"a;b\"");
        assert_eq!(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
