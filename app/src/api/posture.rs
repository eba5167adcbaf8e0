//! The compliance views (issue 47): a line's posture card on the project page, a framework's
//! page, and the account's rollup on the projects page. Every drawing is made here, on the
//! server, so the views cost the browser no WASM.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::{FrameworkView, PostureRollup, ProjectPostureView, Range};

/// The posture card of a project's line (`branch`, `pr`; neither: the default branch): each
/// framework of its latest scan now, and its share passing over `range`.
#[server(endpoint = "project_posture")]
pub async fn load_project_posture(
    project_id: String,
    range: Range,
    #[server(default)] branch: Option<String>,
    #[server(default)] pr: Option<i64>,
) -> Result<ProjectPostureView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let db = db();
    let account = &viewer.account_id;
    let choice = crate::model::LineChoice::from_query(branch, pr.map(|n| n.to_string()));
    let (line, _) = super::project::chosen_line(&db, account, &project_id, &choice).await?;
    let now = tidemark_domain::now_millis();
    let since = tidemark_services::posture::since(range.days(), now);
    let posture = tidemark_services::posture::line_posture(
        &db,
        account,
        &project_id,
        &line.id,
        None,
        range.days(),
        now,
    )
    .await
    .or_else(crate::error::refused)?;
    let names = ssr::names(&db, account).await?;
    let Some(posture) = posture else {
        return Ok(ProjectPostureView::default());
    };
    let t0 = since.unwrap_or_else(|| {
        posture
            .frameworks
            .iter()
            .filter_map(|f| f.history.first().map(|r| r.scanned_at))
            .min()
            .unwrap_or(now)
    });
    Ok(ProjectPostureView {
        drift_detection: ssr::has_feature(&db, account, tidemark_wire::Feature::DriftDetection)
            .await?,
        frameworks: posture
            .frameworks
            .into_iter()
            .map(|f| ssr::trend(f, &names, range, t0, now))
            .collect(),
    })
}

/// A framework's page: its sections, every requirement with the findings behind it, for the
/// line's latest scan judged now.
#[server(endpoint = "framework_posture")]
pub async fn load_framework(
    project_id: String,
    framework: String,
    #[server(default)] branch: Option<String>,
    #[server(default)] pr: Option<i64>,
) -> Result<FrameworkView, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    if tidemark_domain::input::bounded_text("framework", &framework, 200).is_err() {
        return not_found();
    }
    let db = db();
    let account = &viewer.account_id;
    let project = tidemark_services::projects::find(&db, account, &project_id)
        .await
        .or_else(crate::error::refused)?;
    let choice = crate::model::LineChoice::from_query(branch, pr.map(|n| n.to_string()));
    let (line, _) = super::project::chosen_line(&db, account, &project_id, &choice).await?;
    let now = tidemark_domain::now_millis();
    let tidemark_services::posture::FrameworkDetail {
        now: detail,
        drifted,
        catalogue,
    } = tidemark_services::posture::framework_detail(
        &db,
        account,
        &project_id,
        &line.id,
        &framework,
        now,
    )
    .await
    .or_else(crate::error::refused)?;
    let drift_detection =
        ssr::has_feature(&db, account, tidemark_wire::Feature::DriftDetection).await?;
    let summary = line_summary(line);
    Ok(ssr::framework_view(
        ssr::FrameworkPage {
            project_id: project.id.to_string(),
            project_label: project.label,
            line_query: summary.choice().query(),
            line_label: summary.label(),
            framework,
            drifted,
            drift_detection,
        },
        detail,
        catalogue,
        now,
    ))
}

/// A requirement across the account: what the catalogue says of it, and every resource its
/// rule judged in each live project's latest default-branch scan, failing first.
#[server(endpoint = "requirement")]
pub async fn load_requirement(
    rule_id: String,
) -> Result<crate::model::RequirementPage, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    if tidemark_domain::input::bounded_text("rule_id", &rule_id, 255).is_err() {
        return not_found();
    }
    let across =
        tidemark_services::catalogues::requirement_across(&db(), &viewer.account_id, &rule_id)
            .await
            .or_else(crate::error::refused)?;
    if across.described.is_none() && across.resources.is_empty() {
        return not_found();
    }
    Ok(ssr::requirement_page(
        rule_id,
        across,
        tidemark_domain::now_millis(),
    ))
}

/// The account's posture across its projects' latest default-branch scans: per framework and
/// per cloud account, worst first.
#[server(endpoint = "posture_rollup")]
pub async fn load_rollup() -> Result<PostureRollup, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let db = db();
    let kept = tidemark_services::posture::account_posture(&db, &viewer.account_id)
        .await
        .or_else(crate::error::refused)?;
    let names = ssr::names(&db, &viewer.account_id).await?;
    Ok(ssr::rollup(kept, &names))
}

#[cfg(feature = "ssr")]
mod ssr {
    use std::collections::BTreeMap;

    use tidemark_domain::catalogue::Catalogue;
    use tidemark_domain::posture::Tally;
    use tidemark_services::posture::{AccountPosture, FrameworkLine, FrameworkNow, OpenFinding};
    use tidemark_wire::ids::AccountId;

    use crate::error::DashboardError;
    use crate::model::{
        percent, CatalogueNote, FrameworkTrend, FrameworkView, PostureRollup, Range,
        RequirementFinding, RequirementView, RollupLine, SectionView,
    };

    /// Custom frameworks' titles by posture name (`custom:<id>`).
    pub async fn names(
        db: &tidemark_services::Db,
        account: &AccountId,
    ) -> Result<BTreeMap<String, String>, DashboardError> {
        tidemark_services::posture::framework_names(db, account)
            .await
            .or_else(crate::error::refused)
    }

    pub async fn has_feature(
        db: &tidemark_services::Db,
        account: &AccountId,
        feature: tidemark_wire::Feature,
    ) -> Result<bool, DashboardError> {
        tidemark_services::posture::has_feature(db, account, feature)
            .await
            .or_else(crate::error::refused)
    }

    fn name_of(framework: &str, names: &BTreeMap<String, String>) -> String {
        names
            .get(framework)
            .cloned()
            .unwrap_or_else(|| framework.to_owned())
    }

    /// One framework's small multiple: its trend drawn, and what a reader takes from it.
    pub fn trend(
        f: FrameworkLine,
        names: &BTreeMap<String, String>,
        range: Range,
        t0: i64,
        now: i64,
    ) -> FrameworkTrend {
        let points: Vec<(i64, f64)> = f
            .history
            .iter()
            .filter_map(|r| Some((r.scanned_at, r.tally().share_passing()?)))
            .collect();
        let shares = points.iter().map(|p| p.1);
        let low = shares.clone().reduce(f64::min);
        let high = shares.reduce(f64::max);
        let first = points.first().map(|p| p.1);
        let name = name_of(&f.framework, names);
        let now_share = f.tally.share_passing();
        let over = crate::model::over_range(range);
        let summary = if points.is_empty() {
            format!(
                "{name}: {} of requirements passing now; no scan {over} has posture yet.",
                percent(now_share),
            )
        } else {
            format!(
                "{name}: {} of requirements passing now; {over}, {} from {} to {}, lowest {}, highest {}.",
                percent(now_share),
                if points.len() == 1 { "1 scan".to_owned() } else { format!("{} scans", points.len()) },
                percent(first),
                percent(points.last().map(|p| p.1)),
                percent(low),
                percent(high),
            )
        };
        FrameworkTrend {
            svg: crate::chart::draw_share_trend(&points, t0, now),
            summary,
            name,
            counts: f.tally.into(),
            drifted: f.drifted,
            scans: points.len(),
            first,
            low,
            high,
            framework: f.framework,
        }
    }

    /// The page's frame: which project, line and framework.
    pub struct FrameworkPage {
        pub project_id: String,
        pub project_label: String,
        pub line_query: String,
        pub line_label: String,
        pub framework: String,
        pub drifted: Vec<String>,
        pub drift_detection: bool,
    }

    fn triage_text(f: &OpenFinding, now: i64) -> Option<String> {
        Some(crate::api::ssr::triage_sentence(
            f.triage_state.as_deref()?,
            f.triaged_by.as_deref(),
            f.triage_expires_at,
            f.triage_reason.as_deref(),
            now,
        ))
    }

    pub fn framework_view(
        page: FrameworkPage,
        detail: FrameworkNow,
        catalogue: Option<Catalogue>,
        now: i64,
    ) -> FrameworkView {
        // Drift names a rule, or a custom framework's control as posture names it.
        let posture_name = |id: &str| match detail.title {
            Some(_) => format!("{}-{id}", page.framework),
            None => id.to_owned(),
        };
        let reported: Vec<RequirementView> = detail
            .requirements
            .iter()
            .map(|r| RequirementView {
                drifted: page.drifted.contains(&posture_name(&r.id)),
                id: r.id.clone(),
                number: r.number.clone(),
                section: r.section.clone(),
                title: r.title.clone(),
                description: None,
                manual: false,
                status: r.status.as_str().to_owned(),
                failing_since: r.failing_since().map(crate::time::format_time),
                findings: r
                    .open
                    .iter()
                    .map(|f| RequirementFinding {
                        finding_id: f.id.clone(),
                        rule_id: f.rule_id.clone(),
                        resource: f.resource.clone(),
                        severity: f.severity.clone(),
                        failing_since: crate::time::format_time(f.failing_since()),
                        triage: triage_text(f, now),
                    })
                    .collect(),
            })
            .collect();
        let catalogue_note = catalogue.as_ref().map(|c| CatalogueNote {
            name: c.name.clone(),
            requirements: c.requirements.len(),
            manual: c.manual(),
        });
        let requirements = match catalogue {
            Some(c) => with_catalogue(reported, c),
            None => reported,
        };
        // Sections in the catalogue's order; without one, by name.
        let mut sections: Vec<(String, Tally)> = Vec::new();
        let mut total = Tally::default();
        for r in &requirements {
            let status = requirement_status(&r.status);
            match sections.iter_mut().find(|(s, _)| *s == r.section) {
                Some((_, t)) => t.add(status),
                None => {
                    let mut t = Tally::default();
                    t.add(status);
                    sections.push((r.section.clone(), t));
                }
            }
            total.add(status);
        }
        if catalogue_note.is_none() {
            sections.sort_by(|a, b| a.0.cmp(&b.0));
        }
        FrameworkView {
            name: match (&detail.title, &catalogue_note) {
                (Some(t), _) => format!("{t} (custom)"),
                (None, Some(c)) => c.name.clone(),
                (None, None) => page.framework.clone(),
            },
            custom: detail.title.is_some(),
            catalogue: catalogue_note,
            project_id: page.project_id,
            project_label: page.project_label,
            line_query: page.line_query,
            line_label: page.line_label,
            framework: page.framework,
            scan_id: detail.scan_id.to_string(),
            scanned_at: crate::time::format_time(detail.scanned_at),
            counts: total.into(),
            sections: sections
                .into_iter()
                .map(|(section, t)| SectionView {
                    section,
                    failing: (t.evaluated() > 0)
                        .then(|| f64::from(t.failed) / f64::from(t.evaluated())),
                    counts: t.into(),
                })
                .collect(),
            requirements,
            drift_detection: page.drift_detection,
        }
    }

    fn requirement_status(status: &str) -> tidemark_domain::posture::Requirement {
        use tidemark_domain::posture::Requirement;
        match status {
            "passed" => Requirement::Passed,
            "failed" => Requirement::Failed,
            "triaged" => Requirement::Triaged,
            _ => Requirement::NotEvaluated,
        }
    }

    /// Every requirement of the catalogue in its order, as the scan judged it or "not
    /// evaluated", with the catalogue's title, description and section; then the requirements
    /// the scan reported that the catalogue does not list, as they were.
    fn with_catalogue(
        reported: Vec<RequirementView>,
        catalogue: Catalogue,
    ) -> Vec<RequirementView> {
        let mut by_rule: BTreeMap<String, RequirementView> =
            reported.into_iter().map(|r| (r.id.clone(), r)).collect();
        let mut out = Vec::with_capacity(catalogue.requirements.len() + by_rule.len());
        for c in catalogue.requirements {
            let base = by_rule
                .remove(&c.rule_id)
                .unwrap_or_else(|| RequirementView {
                    id: c.rule_id.clone(),
                    number: c.number.clone(),
                    section: String::new(),
                    title: None,
                    description: None,
                    manual: false,
                    status: "not_evaluated".to_owned(),
                    failing_since: None,
                    drifted: false,
                    findings: Vec::new(),
                });
            out.push(RequirementView {
                section: c.section,
                title: Some(c.title),
                description: c.description,
                manual: c.manual,
                ..base
            });
        }
        out.extend(by_rule.into_values());
        out
    }

    pub fn requirement_page(
        rule_id: String,
        across: tidemark_services::catalogues::RequirementAcross,
        now: i64,
    ) -> crate::model::RequirementPage {
        use crate::model::{RequirementPage, RequirementResourceView};
        let mut resources: Vec<RequirementResourceView> = across
            .resources
            .into_iter()
            .map(|r| {
                let open_status = matches!(r.status.as_str(), "FAIL" | "WARN" | "ERROR");
                let set_aside = r.open.as_ref().is_some_and(|f| {
                    matches!(
                        f.triage_state.as_deref(),
                        Some("accepted_risk" | "false_positive")
                    ) && f.triage_expires_at.is_none_or(|at| at > now)
                });
                let status = match (open_status, set_aside, r.status.as_str()) {
                    (true, true, _) => "triaged",
                    (true, false, _) => "failed",
                    (false, _, "PASS") => "passed",
                    _ => "not_evaluated",
                };
                RequirementResourceView {
                    project_id: r.project_id.to_string(),
                    project_label: r.project_label,
                    resource: r.resource,
                    status: status.to_owned(),
                    severity: r.severity,
                    message: r.message,
                    finding_id: r.open.as_ref().map(|f| f.id.clone()),
                    failing_since: r
                        .open
                        .as_ref()
                        .map(|f| crate::time::format_time(f.failing_since())),
                    triage: r.open.as_ref().and_then(|f| triage_text(f, now)),
                }
            })
            .collect();
        let rank = |s: &str| match s {
            "failed" => 0,
            "triaged" => 1,
            "passed" => 2,
            _ => 3,
        };
        resources.sort_by(|a, b| {
            rank(&a.status)
                .cmp(&rank(&b.status))
                .then_with(|| a.project_label.cmp(&b.project_label))
                .then_with(|| a.resource.cmp(&b.resource))
        });
        let mut projects: Vec<&str> = resources.iter().map(|r| r.project_id.as_str()).collect();
        projects.sort_unstable();
        projects.dedup();
        let mut failing: Vec<&str> = resources
            .iter()
            .filter(|r| r.status == "failed")
            .map(|r| r.project_id.as_str())
            .collect();
        failing.sort_unstable();
        failing.dedup();
        let (projects, failing_projects) = (projects.len(), failing.len());
        let (framework, framework_name, described) = match across.described {
            Some((f, n, r)) => (Some(f), Some(n), Some(r)),
            None => (None, None, None),
        };
        RequirementPage {
            rule_id,
            framework,
            framework_name,
            title: described.as_ref().map(|r| r.title.clone()),
            description: described.as_ref().and_then(|r| r.description.clone()),
            section: described.as_ref().map(|r| r.section.clone()),
            manual: described.as_ref().is_some_and(|r| r.manual),
            resources,
            projects,
            failing_projects,
        }
    }

    pub fn rollup(kept: AccountPosture, names: &BTreeMap<String, String>) -> PostureRollup {
        let AccountPosture {
            frameworks,
            cloud_accounts: accounts,
        } = kept;
        PostureRollup {
            frameworks: frameworks
                .into_iter()
                .map(|f| RollupLine {
                    name: name_of(&f.key, names),
                    key: f.key.clone(),
                    cloud: None,
                    projects: f.projects,
                    counts: f.tally.into(),
                })
                .collect(),
            accounts: accounts
                .into_iter()
                .map(|a| RollupLine {
                    key: a.key.1.clone(),
                    name: a.key.1,
                    cloud: Some(a.key.0),
                    projects: a.projects,
                    counts: a.tally.into(),
                })
                .collect(),
        }
    }
}
