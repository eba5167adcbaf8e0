//! A project's page: its score-history chart and its scans.

use leptos::prelude::*;

use crate::error::DashboardError;
#[cfg(feature = "ssr")]
use crate::model::LineChoice;
#[cfg(feature = "ssr")]
use crate::model::{ChartPoint, CHART_POINTS, HISTORY_BUCKETS, SCANS_PAGE_SIZE};
use crate::model::{GateSettings, ProjectChart, Range, ScansPage};

/// The project's lines, and the one `branch` or `pr` names (neither: the default branch);
/// "not found" when the project has no such line.
#[cfg(feature = "ssr")]
pub(crate) async fn chosen_line(
    store: &tidemark_services::Db,
    account: &tidemark_wire::ids::AccountId,
    project_id: &tidemark_wire::ids::ProjectId,
    choice: &LineChoice,
) -> Result<
    (
        tidemark_services::lines::Line,
        Vec<tidemark_services::lines::Line>,
    ),
    DashboardError,
> {
    use tidemark_services::lines::LineWanted;
    let wanted = match choice {
        LineChoice::Default => LineWanted::Default,
        LineChoice::Branch(name) => LineWanted::Branch(name.clone()),
        LineChoice::PullRequest(n) => LineWanted::PullRequest(*n),
    };
    tidemark_services::lines::choose(store, account, project_id, &wanted)
        .await
        .or_else(crate::error::refused)
}

#[server(endpoint = "project_chart")]
pub async fn load_project_chart(
    project_id: String,
    range: Range,
    #[server(default)] branch: Option<String>,
    #[server(default)] pr: Option<i64>,
    #[server(default)] full_scale: bool,
) -> Result<ProjectChart, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let db = db();
    let account = &viewer.account_id;
    let project = tidemark_services::projects::find(&db, account, &project_id)
        .await
        .or_else(crate::error::refused)?;
    let choice = LineChoice::from_query(branch, pr.map(|n| n.to_string()));
    let (line, lines) = chosen_line(&db, account, &project_id, &choice).await?;
    let since = tidemark_services::posture::since(range.days(), tidemark_domain::now_millis());
    // The database reduces the range to a few scans per time bucket; LTTB picks the rest.
    let (history, total) = tidemark_services::projects::history(
        &db,
        account,
        &project_id,
        &line.id,
        since,
        HISTORY_BUCKETS,
    )
    .await
    .or_else(crate::error::refused)?;
    let xs: Vec<f64> = history.iter().map(|p| p.scanned_at as f64).collect();
    let ys: Vec<f64> = history.iter().map(|p| p.score).collect();
    let kept = tidemark_domain::chart::lttb(&xs, &ys, CHART_POINTS);
    let points = kept
        .iter()
        .map(|&i| {
            let p = &history[i];
            ChartPoint {
                scan_id: p.scan_id.clone(),
                at: p.scanned_at,
                score: p.score,
                severities: p.severities,
                gate: p.gate.status,
                label: crate::chart::point_label(
                    &crate::time::format_time(p.scanned_at),
                    p.score,
                    p.score_delta,
                    &p.gate,
                ),
            }
        })
        .collect::<Vec<_>>();
    let gate = tidemark_services::projects::gate(&db, account, &project_id)
        .await
        .or_else(crate::error::refused)?;
    Ok(ProjectChart {
        project: card(project),
        range,
        scans_in_range: usize::try_from(total).unwrap_or(0),
        drawing: crate::chart::draw_history(
            &points,
            gate.as_ref()
                .and_then(tidemark_domain::gate::QualityGate::min_score),
            full_scale,
        ),
        full_scale,
        points,
        gate: gate.map(gate_settings),
        is_admin: viewer.is_admin,
        line: line_summary(line),
        branches: lines
            .iter()
            .filter(|l| l.pull_request.is_none())
            .cloned()
            .map(line_summary)
            .collect(),
        pulls: lines
            .into_iter()
            .filter(|l| l.pull_request.is_some())
            .map(line_summary)
            .collect(),
    })
}

/// Makes a branch the project's default (admins only): the projects list, badges and alerts
/// follow it from now on, and pushes without a branch go to it.
#[server(endpoint = "set_default_branch")]
pub async fn set_default_branch(
    project_id: String,
    branch: String,
) -> Result<String, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let project_id = parse_project_id(&project_id)?;
    let name = tidemark_domain::git::BranchName::parse("branch", &branch)
        .map_err(|e| DashboardError::Invalid(e.message))?;
    tidemark_services::projects::set_default_branch(
        &db(),
        &viewer.account_id,
        &project_id,
        &name,
        &viewer.audit(),
    )
    .await
    .or_else(crate::error::refused)?;
    back_to_form("set_default_branch");
    Ok(name.as_str().to_owned())
}

/// Sets the project's quality gate (admins only). Each field blank is no such condition; all
/// blank removes the gate. Scans already pushed keep their verdicts.
#[server(endpoint = "set_project_gate")]
pub async fn set_project_gate(
    project_id: String,
    min_score: String,
    max_drop: String,
    new_findings_at: String,
) -> Result<Option<GateSettings>, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_admin()?;
    let project_id = parse_project_id(&project_id)?;
    let gate =
        tidemark_domain::gate::QualityGate::parse_form(&min_score, &max_drop, &new_findings_at)
            .map_err(|e| {
                let mut text = e.to_string();
                if let Some(first) = text.get_mut(0..1) {
                    first.make_ascii_uppercase();
                }
                DashboardError::Invalid(format!("{text}."))
            })?;
    tidemark_services::projects::set_gate(
        &db(),
        &viewer.account_id,
        &project_id,
        gate,
        &viewer.audit(),
    )
    .await
    .or_else(crate::error::refused)?;
    back_to_form("set_project_gate");
    Ok(gate.map(gate_settings))
}

#[server(endpoint = "project_scans")]
pub async fn project_scans(
    project_id: String,
    page: i64,
    #[server(default)] branch: Option<String>,
    #[server(default)] pr: Option<i64>,
) -> Result<ScansPage, DashboardError> {
    use super::ssr::*;
    let viewer = crate::auth::require_viewer()?;
    let project_id = parse_project_id(&project_id)?;
    let page = page.max(0);
    let db = db();
    let choice = LineChoice::from_query(branch, pr.map(|n| n.to_string()));
    let (line, _) = chosen_line(&db, &viewer.account_id, &project_id, &choice).await?;
    let (rows, has_more) = tidemark_services::projects::scans_page(
        &db,
        &viewer.account_id,
        &project_id,
        &line.id,
        page,
        SCANS_PAGE_SIZE,
    )
    .await
    .or_else(crate::error::refused)?;
    Ok(ScansPage {
        scans: rows.into_iter().map(scan).collect(),
        page,
        has_more,
        total: line.scan_count,
    })
}
