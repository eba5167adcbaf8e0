//! The demo's three months of pushes, as plain data: each project's checks on each of its
//! resources, passing, failing or skipped as a real account's would be. Most checks pass; a
//! few fail for a while and get fixed; now and then one breaks again (drift); a pull request
//! or two is scanned against an older base. Deterministic (a fixed seed), so the demo reads the
//! same on every machine.

use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use tidemark_domain::time::{DAY_MS as DAY, HOUR_MS, MINUTE_MS};
use tidemark_domain::to_rfc3339;

use super::catalogue::{Check, CIS_AWS, CIS_GCP, SOC2_AWS, SOC2_GCP};

/// A check's result on one resource in one scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    Skip,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }
}

/// A story the demo tells for sure: `rule` on `resource` is `status` from scan `from` on
/// (until a later story of the same pair).
struct Story {
    rule: &'static str,
    resource: &'static str,
    from: usize,
    status: Status,
}

const fn story(rule: &'static str, resource: &'static str, from: usize, status: Status) -> Story {
    Story {
        rule,
        resource,
        from,
        status,
    }
}

/// What a branch changed: a check on a resource, and its result there.
type Change = (&'static str, &'static str, Status);

/// A pull request scanned against the default branch as it stood at scan `base`.
struct PullRequest {
    number: u64,
    branch: &'static str,
    title: &'static str,
    base: usize,
    /// Pushes after the base scan: hours after it, and what the branch changed.
    pushes: &'static [(i64, &'static [Change])],
}

struct Project {
    label: &'static str,
    cloud: &'static str,
    account: &'static str,
    frameworks: [&'static str; 2],
    checks: [&'static [Check]; 2],
    /// The chance a check starts out failing, and per scan that a failure is fixed or a
    /// passing check breaks.
    failing: f64,
    fix: f64,
    breaks: f64,
    stories: &'static [Story],
    pulls: &'static [PullRequest],
}

use Status::{Fail, Pass};

const PROJECTS: [Project; 3] = [
    Project {
        label: "acme/payments-api",
        cloud: "aws",
        account: "123456789012",
        frameworks: ["cis-aws-2.0", "soc2"],
        checks: [CIS_AWS, SOC2_AWS],
        failing: 0.22,
        fix: 0.05,
        breaks: 0.012,
        stories: &[
            // Public by design (static assets behind CloudFront): triaged as an accepted risk.
            story("cis-aws-2.0-2.1.4", "aws_s3_bucket.assets", 0, Fail),
            // The root key, found on day one and removed a month later.
            story("cis-aws-2.0-1.4", "aws_iam_root_access_key.root", 0, Fail),
            story("cis-aws-2.0-1.4", "aws_iam_root_access_key.root", 16, Pass),
            // SSH opened to the world on the bastion last week: drift, fixed by pull request #42.
            story("cis-aws-2.0-5.2", "aws_security_group.bastion", 0, Pass),
            story("cis-aws-2.0-5.2", "aws_security_group.bastion", 41, Fail),
            // A logs key kept without rotation until it is retired: won't fix.
            story("cis-aws-2.0-3.7", "aws_kms_key.logs", 0, Fail),
        ],
        pulls: &[PullRequest {
            number: 42,
            branch: "fix/bastion-ssh",
            title: "Restrict bastion SSH to the VPN range",
            base: 41,
            pushes: &[
                (
                    5,
                    &[
                        ("cis-aws-2.0-5.2", "aws_security_group.bastion", Pass),
                        ("cis-aws-2.0-2.2.1", "aws_ebs_volume.bastion", Fail),
                    ],
                ),
                (
                    29,
                    &[
                        ("cis-aws-2.0-5.2", "aws_security_group.bastion", Pass),
                        ("cis-aws-2.0-2.2.1", "aws_ebs_volume.bastion", Pass),
                    ],
                ),
            ],
        }],
    },
    Project {
        label: "acme/web-frontend",
        cloud: "aws",
        account: "210987654321",
        frameworks: ["cis-aws-2.0", "soc2"],
        checks: [CIS_AWS, SOC2_AWS],
        failing: 0.12,
        fix: 0.06,
        breaks: 0.008,
        stories: &[
            // Fixed, then back a month later when someone re-created the volume.
            story("cis-aws-2.0-2.2.1", "aws_ebs_volume.app", 0, Fail),
            story("cis-aws-2.0-2.2.1", "aws_ebs_volume.app", 18, Pass),
            story("cis-aws-2.0-2.2.1", "aws_ebs_volume.app", 33, Fail),
            // Denied at the organisation's level (an SCP), which the scanner cannot see.
            story("cis-aws-2.0-2.1.1", "aws_s3_bucket_policy.logs", 0, Fail),
        ],
        pulls: &[PullRequest {
            number: 57,
            branch: "feature/assets-bucket",
            title: "Serve images from a second assets bucket",
            base: 38,
            pushes: &[(30, &[("cis-aws-2.0-2.1.4", "aws_s3_bucket.assets", Fail)])],
        }],
    },
    Project {
        label: "acme/data-platform",
        cloud: "gcp",
        account: "acme-data-prod",
        frameworks: ["cis-gcp-2.0", "soc2"],
        checks: [CIS_GCP, SOC2_GCP],
        failing: 0.3,
        fix: 0.05,
        breaks: 0.015,
        stories: &[
            // A bucket readable by anyone for seven weeks, then closed.
            story("cis-gcp-2.0-5.1", "google_storage_bucket.exports", 0, Fail),
            story("cis-gcp-2.0-5.1", "google_storage_bucket.exports", 24, Pass),
            story(
                "cis-gcp-2.0-3.6",
                "google_compute_firewall.default_allow_ssh",
                0,
                Fail,
            ),
        ],
        pulls: &[],
    },
];

/// Scans of each project's default branch, one every two days.
pub const SCANS: usize = 45;

/// One push of the demo, in the order they are made.
pub struct DemoPush {
    pub project: usize,
    /// The scan's number on its project's default branch (a pull request's: its base's).
    pub index: usize,
    pub at: i64,
    /// From a laptop (`state_source: local`) rather than CI.
    pub local: bool,
    pub body: Value,
}

/// Every push of the demo up to `now`, oldest first.
pub fn pushes(now: i64) -> Vec<DemoPush> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut out = Vec::new();
    for (n, p) in PROJECTS.iter().enumerate() {
        let history = history(p, &mut rng);
        // The latest scan a few hours ago, the first three months before it.
        let times: Vec<i64> = (0..SCANS)
            .map(|i| now - (SCANS as i64 - 1 - i as i64) * 2 * DAY - rng.gen_range(3..9) * HOUR_MS)
            .collect();
        for (i, statuses) in history.iter().enumerate() {
            let local = i % 7 == 3;
            let git = json!({
                "branch": "main", "default_branch": "main", "commit": commit(&mut rng),
                "repository_url": repository(p),
            });
            let body = scan_body(p, statuses, times[i], local, git);
            out.push(DemoPush {
                project: n,
                index: i,
                at: times[i],
                local,
                body,
            });
        }
        for pr in p.pulls {
            for (hours, changes) in pr.pushes {
                let mut statuses = history[pr.base].clone();
                for (rule, resource, status) in changes.iter() {
                    if let Some(s) = statuses
                        .iter_mut()
                        .find(|s| s.0 == *rule && s.1 == *resource)
                    {
                        s.3 = *status;
                    }
                }
                let at = (times[pr.base] + hours * HOUR_MS).min(now - MINUTE_MS);
                let git = json!({
                    "branch": pr.branch, "default_branch": "main", "commit": commit(&mut rng),
                    "repository_url": repository(p),
                    "pull_request": {
                        "number": pr.number, "base_branch": "main", "title": pr.title,
                        "url": format!("{}/pull/{}", repository(p), pr.number),
                    },
                });
                let body = scan_body(p, &statuses, at, false, git);
                out.push(DemoPush {
                    project: n,
                    index: pr.base,
                    at,
                    local: false,
                    body,
                });
            }
        }
    }
    out.sort_by_key(|p| p.at);
    out
}

fn repository(p: &Project) -> String {
    format!("https://github.com/{}", p.label)
}

fn commit(rng: &mut rand::rngs::StdRng) -> String {
    format!(
        "{:016x}{:016x}{:08x}",
        rng.gen::<u64>(),
        rng.gen::<u64>(),
        rng.gen::<u32>()
    )
}

/// A check on a resource in a scan: rule, resource, the check, its status.
type Result1 = (&'static str, &'static str, &'static Check, Status);

/// Each default-branch scan's results: every check on every resource it looks at.
fn history(p: &Project, rng: &mut rand::rngs::StdRng) -> Vec<Vec<Result1>> {
    let pairs: Vec<(&'static Check, &'static str)> = p
        .checks
        .iter()
        .flat_map(|checks| checks.iter())
        .flat_map(|c| c.resources.iter().map(move |r| (c, *r)))
        .collect();
    // Where a pair starts; a few checks do not apply to a resource and are skipped throughout.
    let mut now: Vec<Status> = pairs
        .iter()
        .map(|(c, _)| {
            if c.manual || rng.gen_bool(0.04) {
                Status::Skip
            } else if rng.gen_bool(p.failing) {
                Fail
            } else {
                Pass
            }
        })
        .collect();
    (0..SCANS)
        .map(|i| {
            for (k, (c, resource)) in pairs.iter().enumerate() {
                now[k] = match now[k] {
                    Fail if i > 0 && rng.gen_bool(p.fix) => Pass,
                    Pass if i > 0 && rng.gen_bool(p.breaks) => Fail,
                    s => s,
                };
                let told = p
                    .stories
                    .iter()
                    .rev()
                    .find(|s| s.rule == c.rule && s.resource == *resource && s.from <= i);
                if let Some(s) = told {
                    now[k] = s.status;
                }
            }
            pairs
                .iter()
                .zip(&now)
                .map(|((c, r), s)| (c.rule, *r, *c, *s))
                .collect()
        })
        .collect()
}

/// A push body as the scanner would send it: every result, the counts and score from them.
fn scan_body(p: &Project, results: &[Result1], at: i64, local: bool, git: Value) -> Value {
    let findings: Vec<Value> = results
        .iter()
        .map(|(rule, resource, check, status)| {
            let (message, remediation) = match status {
                Fail => (check.message.to_owned(), check.remediation.to_owned()),
                Pass => (
                    format!("Passed: {}", check.message.to_lowercase()),
                    String::new(),
                ),
                Status::Skip if check.manual => {
                    (format!("Manual check: {}", check.message), String::new())
                }
                Status::Skip => ("Not applicable to this resource".to_owned(), String::new()),
            };
            json!({
                "rule_id": rule, "resource": resource, "status": status.as_str(),
                "severity": check.severity, "message": message, "remediation": remediation,
            })
        })
        .collect();
    let count = |s: Status| results.iter().filter(|r| r.3 == s).count();
    let (passed, failed) = (count(Pass), count(Fail));
    let severity = |sev: &str| {
        results
            .iter()
            .filter(|r| r.3 == Fail && r.2.severity == sev)
            .count()
    };
    let score = if passed + failed == 0 {
        100.0
    } else {
        (passed as f64 * 1000.0 / (passed + failed) as f64).round() / 10.0
    };
    json!({
        "project_label": p.label,
        "cloud": p.cloud,
        "cloud_account_id": p.account,
        "frameworks": p.frameworks,
        "score": score,
        "passed": passed,
        "failed": failed,
        "severity_counts": {
            "critical": severity("critical"), "high": severity("high"),
            "medium": severity("medium"), "low": severity("low"),
        },
        "findings": findings,
        "state_source": if local { "local" } else { "ci" },
        "scanned_at": to_rfc3339(at),
        "git": git,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const NOW: i64 = 1_796_000_000_000;

    #[test]
    fn every_scan_reads_like_a_real_scanners_and_parses() {
        let pushes = pushes(NOW);
        assert_eq!(pushes.len(), 3 * SCANS + 3);
        assert!(
            pushes.windows(2).all(|w| w[0].at <= w[1].at),
            "oldest first"
        );
        assert!(pushes.iter().all(|p| p.at < NOW));
        for p in &pushes {
            let findings = p.body["findings"].as_array().unwrap();
            let statuses: HashSet<&str> = findings
                .iter()
                .map(|f| f["status"].as_str().unwrap())
                .collect();
            assert!(
                statuses.contains("PASS") && statuses.contains("SKIP"),
                "{statuses:?}"
            );
            let passed = findings.iter().filter(|f| f["status"] == "PASS").count();
            let failed = findings.iter().filter(|f| f["status"] == "FAIL").count();
            assert_eq!(
                (p.body["passed"].as_u64(), p.body["failed"].as_u64()),
                (Some(passed as u64), Some(failed as u64))
            );
            let score = p.body["score"].as_f64().unwrap();
            assert!((40.0..=100.0).contains(&score), "{score}");
            let ids: HashSet<_> = findings
                .iter()
                .map(|f| (f["rule_id"].to_string(), f["resource"].to_string()))
                .collect();
            assert_eq!(
                ids.len(),
                findings.len(),
                "one result per check and resource"
            );
            tidemark_domain::push::ValidPush::parse(p.body.to_string().as_bytes()).unwrap();
        }
    }

    #[test]
    fn the_demo_has_fixes_drift_clouds_and_pull_requests() {
        let pushes = pushes(NOW);
        let clouds: HashSet<&str> = pushes
            .iter()
            .map(|p| p.body["cloud_account_id"].as_str().unwrap())
            .collect();
        assert_eq!(clouds.len(), 3);
        let frameworks: HashSet<String> = pushes
            .iter()
            .flat_map(|p| {
                p.body["frameworks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.to_string())
            })
            .collect();
        assert_eq!(frameworks.len(), 3);
        let pulls = pushes
            .iter()
            .filter(|p| p.body["git"]["pull_request"].is_object())
            .count();
        assert_eq!(pulls, 3);
        assert!(pushes.iter().any(|p| p.local) && pushes.iter().any(|p| !p.local));
        // The bastion's SSH rule: passing, then failing in the last scans (drift).
        let bastion = |p: &DemoPush| {
            p.body["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| {
                    f["rule_id"] == "cis-aws-2.0-5.2"
                        && f["resource"] == "aws_security_group.bastion"
                })
                .map(|f| f["status"].as_str().unwrap().to_owned())
        };
        let main_payments: Vec<_> = pushes
            .iter()
            .filter(|p| p.project == 0 && p.body["git"]["branch"] == "main")
            .collect();
        assert_eq!(bastion(main_payments[40]).as_deref(), Some("PASS"));
        assert_eq!(bastion(main_payments[44]).as_deref(), Some("FAIL"));
        // Scores move: not one flat line.
        let scores: HashSet<String> = main_payments
            .iter()
            .map(|p| p.body["score"].to_string())
            .collect();
        assert!(scores.len() > 5, "{scores:?}");
    }
}
