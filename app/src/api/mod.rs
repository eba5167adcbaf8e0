//! The dashboard's server functions, grouped by the page that calls them. Each takes the
//! account from the signed-in viewer (`crate::auth`), never from the browser, so another
//! account's ids find nothing ("not found"); admin actions need an admin.

pub mod alerts;
pub mod audit;
pub mod badges;
pub mod findings;
pub mod frameworks;
pub mod inbox;
pub mod posture;
pub mod project;
pub mod projects;
pub mod provisioning;
pub mod publishers;
pub mod scan;
pub mod settings;
pub mod storage;
pub mod webhooks;

/// What the server functions share on the server: the database, store rows as page types,
/// and the two common failures.
#[cfg(feature = "ssr")]
mod ssr {
    use leptos::prelude::*;
    use tidemark_services::projects::{ProjectRow, ScanRow};
    use tidemark_services::scans::FindingRow;
    use tidemark_wire::ids::{FindingId, ProjectId, ScanId};

    use crate::error::DashboardError;
    use crate::model::{
        BaseSummary, FindingView, GateSettings, LineHeadSummary, LineSummary, ProjectCard,
        PullSummary, ScanSummary,
    };

    pub fn card(p: ProjectRow) -> ProjectCard {
        ProjectCard {
            archived: p.archived_at.is_some(),
            last_scanned_at: p.last_scanned_at.map(crate::time::format_time),
            stale_days: tidemark_domain::freshness::stale_days(
                p.last_scanned_at,
                tidemark_domain::now_millis(),
            ),
            id: p.id,
            label: p.label,
            scan_count: p.scan_count,
            last_score: p.last_score,
            last_delta: p.last_delta,
            last_scan_id: p.last_scan_id,
            sparkline_svg: crate::chart::draw_sparkline(&p.recent_scores, 120, 28),
            recent_scores: p.recent_scores,
        }
    }

    pub fn scan(s: ScanRow) -> ScanSummary {
        let commit_url = s
            .repository_url
            .as_deref()
            .zip(s.commit.as_deref())
            .map(|(repo, sha)| tidemark_domain::git::commit_url(repo, sha));
        ScanSummary {
            pushed_by: s.pushed_by,
            drifted: s.drifted,
            branch: s.branch,
            pull_request: s.pull_request,
            commit: s.commit,
            commit_url,
            base: s.base_branch.map(|branch| BaseSummary {
                branch,
                scan_id: s.base_scan_id,
                new_findings: s.base_new,
                fixed_findings: s.base_fixed,
                score_delta: s.base_score.map(|base| s.score - base),
            }),
            scanned_at: crate::time::format_time(s.scanned_at),
            scan_id: s.scan_id,
            score: s.score,
            score_delta: s.score_delta,
            passed: s.passed,
            failed: s.failed,
            severities: s.severities,
            cloud: s.cloud,
            cloud_account_id: s.cloud_account_id,
            frameworks: s.frameworks,
            state_source: s.state_source,
            finding_count: s.finding_count,
            gate: s.gate,
        }
    }

    pub fn line_summary(l: tidemark_services::lines::Line) -> LineSummary {
        LineSummary {
            name: l.name,
            is_default: l.is_default,
            pull_request: l.pull_request.map(|p| PullSummary {
                number: p.number,
                title: p.title,
                url: p.url,
                base_branch: p.base_branch,
            }),
            scan_count: l.scan_count,
            last_push: l.last_push_at.map(crate::time::format_time),
            head: l.head.map(|h| LineHeadSummary {
                compared: h.base_scan_id.is_some(),
                scan_id: h.scan_id,
                score: h.score,
                score_delta: h.score_delta,
                gate: h.gate.status,
                new_findings: h.base_new,
                fixed_findings: h.base_fixed,
                base_score_delta: h.base_score.map(|base| h.score - base),
            }),
        }
    }

    pub fn gate_settings(g: tidemark_domain::gate::QualityGate) -> GateSettings {
        GateSettings {
            min_score: g.min_score(),
            max_drop: g.max_drop(),
            new_findings_at: g.new_findings_at(),
        }
    }

    pub fn finding(f: FindingRow) -> FindingView {
        FindingView {
            rule_id: f.rule_id,
            resource: f.resource,
            status: f.status,
            severity: f.severity,
            message: f.message,
            remediation: f.remediation,
            tracked: None,
        }
    }

    pub fn db() -> tidemark_services::Db {
        expect_context::<tidemark_services::Db>()
    }

    /// A server function posted by a plain form (no WASM on the page: the browser asks for
    /// HTML) goes back to the page it came from with `done=<endpoint>`, so that the page says
    /// it was saved; a failure goes back with the error (`server_fn`'s form redirects). Only
    /// the referring page's path and query are kept: the answer never leaves this site.
    pub fn back_to_form(endpoint: &str) {
        let Some(parts) = use_context::<http::request::Parts>() else {
            return;
        };
        let accepts_html = parts
            .headers
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
        let referer = parts
            .headers
            .get(http::header::REFERER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<http::Uri>().ok());
        if let (true, Some(referer)) = (accepts_html, referer) {
            leptos_axum::redirect(&done_url(
                referer.path(),
                referer.query().unwrap_or(""),
                endpoint,
            ));
        }
    }

    /// The page at `path?query` with `done=<endpoint>` in place of any earlier outcome.
    pub fn done_url(path: &str, query: &str, endpoint: &str) -> String {
        let mut pairs = tidemark_domain::form_seal::without_outcome(query);
        let done = format!("done={endpoint}");
        pairs.push(&done);
        let path = if path.starts_with('/') { path } else { "/" };
        format!("{path}?{}", pairs.join("&"))
    }

    /// A triage as the dashboard says it: "accepted risk by ana@… until 2027-01-01: reason"
    /// (a lapsed one says when it lapsed; won't fix, that it still fails).
    pub fn triage_sentence(
        state: &str,
        by: Option<&str>,
        expires_at: Option<i64>,
        reason: Option<&str>,
        now: i64,
    ) -> String {
        let state = match state {
            "accepted_risk" => "accepted risk",
            "false_positive" => "false positive",
            "wont_fix" => "won't fix (still failing)",
            other => other,
        };
        let until = match expires_at {
            Some(at) if at <= now => format!(", lapsed {}", crate::time::date(at)),
            Some(at) => format!(" until {}", crate::time::date(at)),
            None => String::new(),
        };
        let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
        format!("{state} by {}{until}{reason}", by.unwrap_or_default())
    }

    pub fn not_found<T>() -> Result<T, DashboardError> {
        Err(DashboardError::NotFound)
    }

    /// Ids from the URL that cannot exist are "not found" before any query: the database
    /// never sees a NUL byte or a megabyte of text from a path.
    pub fn parse_project_id(s: &str) -> Result<ProjectId, DashboardError> {
        ProjectId::parse(s).map_or_else(not_found, Ok)
    }

    /// A scan id from the URL, "not found" when it cannot be one (see [`parse_project_id`]).
    pub fn parse_scan_id(s: &str) -> Result<ScanId, DashboardError> {
        ScanId::parse(s).map_or_else(not_found, Ok)
    }

    /// A finding id from the URL, "not found" when it cannot be one (see [`parse_project_id`]).
    pub fn parse_finding_id(s: &str) -> Result<FindingId, DashboardError> {
        FindingId::parse(s).map_or_else(not_found, Ok)
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::ssr::done_url;

    #[test]
    fn a_saved_form_goes_back_to_its_page_saying_so() {
        assert_eq!(
            done_url("/projects/p", "range=7d&branch=dev", "set_project_gate"),
            "/projects/p?range=7d&branch=dev&done=set_project_gate"
        );
        // An earlier outcome, failed or saved, gives way to this one.
        assert_eq!(
            done_url(
                "/projects/p",
                "__path=%2Fapi%2Fx&__err=abc&__sig=00&done=x&range=all",
                "y"
            ),
            "/projects/p?range=all&done=y"
        );
        assert_eq!(done_url("/projects/p", "", "y"), "/projects/p?done=y");
        assert_eq!(done_url("", "", "y"), "/?done=y");
    }
}
