//! The scale benchmark's account: what each project pushes, day by day, and the 1 % of its
//! findings that are triaged. Deterministic: project `p` always gets the same year.

use std::sync::atomic::{AtomicUsize, Ordering};

use rand::{rngs::StdRng, Rng as _, SeedableRng as _};
use tidemark_domain::push::ValidPush;
use tidemark_domain::rate::RollingLimit;
use tidemark_store::pushes::{record_push, PushContext, PushOutcome};
use tidemark_store::{AccountId, Writer};
use tidemark_wire::{
    Cloud, Finding, FindingStatus, GitContext, PullRequestRef, PushRequest, Severity,
    SeverityCounts, StateSource,
};

pub const DAYS: i64 = 365;
pub const FINDINGS: usize = 2_000;
/// Findings whose status changes from one default-branch push to the next (1 %).
const CHANGES: usize = FINDINGS / 100;
const FEATURE_BRANCHES: i64 = 5;
const PULL_REQUESTS: i64 = 20;
/// Days between pull requests' first pushes; each is pushed on days 1, 3 and 5 of its slot.
const PULL_REQUEST_SLOT: i64 = 18;
/// Findings triaged per project (1 %).
const TRIAGED: i64 = (FINDINGS / 100) as i64;
use tidemark_domain::time::{DAY_MS, HOUR_MS};
/// 365 default-branch pushes, 261 feature-branch pushes (each of 5 branches weekly), 60
/// pull-request pushes: what [`schedule`] makes.
pub const PUSHES_PER_PROJECT: usize = 686;

const FRAMEWORKS: [&str; 2] = ["cis-aws-2.0", "soc2"];
const SEVERITIES: [Severity; 4] = [
    Severity::Critical,
    Severity::High,
    Severity::Medium,
    Severity::Low,
];

/// The benchmark's "now": the history ends the day before.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: i64,
    first_day: i64,
}

impl Clock {
    /// The clock kept in `dir` (`clock`), or now's, kept there: a run that carries on an
    /// account's history writes it by the same calendar.
    pub fn kept_in(dir: &std::path::Path) -> Clock {
        let file = dir.join("clock");
        let now = std::fs::read_to_string(&file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or_else(|| {
                let now = tidemark_domain::now_millis();
                std::fs::write(&file, now.to_string()).expect("keep the clock");
                now
            });
        Clock {
            now,
            first_day: (now.div_euclid(DAY_MS) - DAYS) * DAY_MS,
        }
    }
}

pub fn label(p: usize) -> String {
    format!("service-{p:04}")
}

/// Where one push goes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Line {
    Default,
    Feature(i64),
    PullRequest(i64),
}

/// The pushes of `day` (0-based), in the order they are made.
fn schedule(day: i64) -> Vec<Line> {
    let mut lines = vec![Line::Default];
    if day % 7 < FEATURE_BRANCHES {
        lines.push(Line::Feature(day % 7));
    }
    let (slot, offset) = (day / PULL_REQUEST_SLOT, day % PULL_REQUEST_SLOT);
    if slot < PULL_REQUESTS && matches!(offset, 1 | 3 | 5) {
        lines.push(Line::PullRequest(slot + 1));
    }
    lines
}

/// Writes project `p`'s year through the store's push path, then triages 1 % of its default
/// branch's findings. Adds each push to `done`.
pub async fn write_project(
    writer: &Writer,
    account: &AccountId,
    clock: &Clock,
    p: usize,
    done: &AtomicUsize,
) {
    let (written, triaged) = written_before(writer, account, p).await;
    let mut rng = StdRng::seed_from_u64(p as u64);
    let mut failing: Vec<bool> = (0..FINDINGS)
        .map(|i| (i * 7 + p).is_multiple_of(10))
        .collect();
    for day in 0..DAYS {
        for _ in 0..CHANGES {
            let i = rng.gen_range(0..FINDINGS);
            failing[i] = !failing[i];
        }
        for line in schedule(day) {
            let push = scan(p, line, &failing, clock.first_day + day * DAY_MS);
            // A project's pushes are in time order: what a stopped run wrote is skipped.
            if written.is_some_and(|at| push.scanned_at().timestamp_millis() <= at) {
                done.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let outcome = record_push(writer, context(account, clock.now), push)
                .await
                .expect("push");
            assert!(
                matches!(outcome, PushOutcome::Appended(..)),
                "not stored: {outcome:?}"
            );
            done.fetch_add(1, Ordering::Relaxed);
        }
    }
    if !triaged {
        triage(writer, account, clock, p).await;
    }
}

/// The time of project `p`'s latest scan, if it has one, and whether its findings are
/// triaged (the last thing its year does).
async fn written_before(writer: &Writer, account: &AccountId, p: usize) -> (Option<i64>, bool) {
    let db = writer.db();
    let Some(project) = tidemark_store::dashboard::project_id_by_label(db, account, &label(p))
        .await
        .unwrap()
    else {
        return (None, false);
    };
    let (latest, triaged): (Option<i64>, i64) = tidemark_store::on_db!(db, pool => {
        sqlx::query_as(
            "SELECT (SELECT MAX(scanned_at) FROM scans WHERE project_id = $1), \
             (SELECT COUNT(*) FROM tracked_findings WHERE project_id = $2 \
              AND triage_state IS NOT NULL)",
        )
        .bind(&project)
        .bind(&project)
        .fetch_one(pool)
        .await
    })
    .unwrap();
    (latest, triaged > 0)
}

/// Project `p`'s id and the first `limit` tracked findings of its default line.
pub async fn tracked_of(
    db: &tidemark_store::Db,
    account: &AccountId,
    p: usize,
    limit: i64,
    now: i64,
) -> (
    tidemark_store::ProjectId,
    Vec<tidemark_store::findings::TrackedRow>,
) {
    let project = tidemark_store::dashboard::project_id_by_label(db, account, &label(p))
        .await
        .unwrap()
        .expect("the project");
    let line = tidemark_store::findings::find_line(db, account, &project, None)
        .await
        .unwrap()
        .expect("its default line");
    let query = tidemark_store::findings::TrackedQuery {
        state: None,
        severity: None,
        after: None,
        limit,
    };
    let rows = tidemark_store::findings::list_tracked(db, &line.id, &query, now)
        .await
        .unwrap();
    (project, rows)
}

async fn triage(writer: &Writer, account: &AccountId, clock: &Clock, p: usize) {
    let (project, rows) = tracked_of(writer.db(), account, p, TRIAGED, clock.now).await;
    let ids: Vec<_> = rows.into_iter().map(|f| f.id).collect();
    let change = tidemark_domain::findings::TriageChange {
        state: tidemark_wire::findings::TriageState::AcceptedRisk,
        reason: "Compensating control: the bucket is behind a VPC endpoint".into(),
        expires_at: None,
    };
    tidemark_store::findings::set_triage_many(
        writer,
        account,
        &project,
        &ids,
        Some(&change),
        &tidemark_store::testing::audit(),
        |_| true,
    )
    .await
    .unwrap();
}

pub fn context(account: &AccountId, now: i64) -> PushContext {
    PushContext {
        key_id: tidemark_store::testing::push_key_id(account),
        account_id: account.to_owned(),
        project_cap: None,
        // Every generated scan is received at the same `now`, so any window would hold them
        // all and each push's count of the window would read the whole account (a push took
        // 40 ms at 340,000 scans). An empty window counts nothing; the server's own windows
        // are real minutes, which these scans fall outside of.
        write_limit: RollingLimit {
            limit: u32::MAX,
            window_ms: 0,
        },
        now,
        touch_key: false,
        raw_body_hash: None,
        pushed_by: None,
        custom_frameworks: false,
        drift_detection: true,
    }
}

/// Project `p`'s scan of `line` with the default branch failing as `failing` says: a branch
/// differs from it in a few findings of its own.
fn scan(p: usize, line: Line, failing: &[bool], at: i64) -> ValidPush {
    let (branch, own, pull_request, hour) = match line {
        Line::Default => ("main".to_owned(), 0, None, 0),
        Line::Feature(b) => (format!("feature/{b}"), (b as usize + 1) * 131, None, 2),
        Line::PullRequest(n) => (
            format!("fix/{n}"),
            n as usize * 57,
            Some(PullRequestRef {
                number: n as u64,
                base_branch: "main".into(),
                title: Some(format!("Fix {n}")),
                url: None,
            }),
            4,
        ),
    };
    let differs = |i: usize| own > 0 && (i + FINDINGS - own % FINDINGS) % FINDINGS < 10;
    let status = |i: usize| failing[i] != differs(i);
    request(p, branch, pull_request, at + (10 + hour) * HOUR_MS, status)
}

/// Project `p`'s next default-branch push: its default line's latest scan as stored (its
/// unfixed findings read back) with `CHANGES` findings (1 %) flipped, as each day of the
/// year flipped them, a minute after the project's latest scan. `seed` picks the flips.
/// (Timed pushes used to fail a fixed tenth of the findings chosen by their number: each
/// project's first changed about a fifth of its findings, and at N = 10 the nine after it
/// on the same project changed none, which made the push look cheaper at N = 10.)
pub async fn next_default_push(
    writer: &Writer,
    account: &AccountId,
    p: usize,
    seed: u64,
    now: i64,
) -> serde_json::Value {
    let (latest, _) = written_before(writer, account, p).await;
    let (_, rows) = tracked_of(writer.db(), account, p, FINDINGS as i64 * 4, now).await;
    let mut failing = vec![false; FINDINGS];
    for row in rows.iter().filter(|r| r.fixed_seq.is_none()) {
        let index = row
            .resource
            .rsplit_once("-r")
            .and_then(|(_, i)| i.parse::<usize>().ok());
        if let Some(i) = index.filter(|i| *i < FINDINGS) {
            failing[i] = true;
        }
    }
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..CHANGES {
        let i = rng.gen_range(0..FINDINGS);
        failing[i] = !failing[i];
    }
    let at = latest.unwrap_or(now) + 60_000;
    let push = request(p, "main".into(), None, at, |i| failing[i]);
    serde_json::to_value(push.request()).unwrap()
}

/// Project `p`'s default-branch scan at `at` (2,000 findings), failing those `failing` says.
pub fn default_scan(p: usize, at: i64, failing: impl Fn(usize) -> bool) -> ValidPush {
    request(p, "main".into(), None, at, failing)
}

fn request(
    p: usize,
    branch: String,
    pull_request: Option<PullRequestRef>,
    at: i64,
    failing: impl Fn(usize) -> bool,
) -> ValidPush {
    let mut counts = SeverityCounts {
        critical: 0,
        high: 0,
        medium: 0,
        low: 0,
    };
    let findings: Vec<Finding> = (0..FINDINGS)
        .map(|i| {
            let severity = SEVERITIES[i % 4];
            let fail = failing(i);
            if fail {
                match severity {
                    Severity::Critical => counts.critical += 1,
                    Severity::High => counts.high += 1,
                    Severity::Medium => counts.medium += 1,
                    Severity::Low => counts.low += 1,
                }
            }
            Finding {
                rule_id: format!("{}-{}.{}", FRAMEWORKS[i % 2], i % 12 + 1, i % 150),
                resource: format!("aws_s3_bucket.p{p}-r{i}"),
                status: if fail {
                    FindingStatus::Fail
                } else {
                    FindingStatus::Pass
                },
                severity,
                message: "Bucket policy allows plain HTTP".into(),
                remediation: "Deny requests where aws:SecureTransport is false".into(),
            }
        })
        .collect();
    let failed = counts.critical + counts.high + counts.medium + counts.low;
    let request = PushRequest {
        project_label: label(p),
        cloud: Cloud::Aws,
        cloud_account_id: "111122223333".into(),
        frameworks: FRAMEWORKS.iter().map(|f| (*f).to_owned()).collect(),
        score: 100.0 * (FINDINGS as u64 - failed) as f64 / FINDINGS as f64,
        passed: FINDINGS as u64 - failed,
        failed,
        severity_counts: counts,
        findings,
        state_source: StateSource::Ci,
        scanned_at: chrono::DateTime::from_timestamp_millis(at)
            .expect("in range")
            .to_rfc3339(),
        git: Some(GitContext {
            branch: Some(branch),
            default_branch: Some("main".into()),
            commit: None,
            repository_url: None,
            pull_request,
        }),
    };
    ValidPush::from_request(request).expect("a valid push")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_year_is_the_pushes_the_docs_count() {
        let pushes: usize = (0..DAYS).map(|d| schedule(d).len()).sum();
        assert_eq!(pushes, PUSHES_PER_PROJECT);
    }
}
