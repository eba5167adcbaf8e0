//! Settings' storage section: what each project's data takes, and how long scans keep their
//! findings (the housekeeping policy that applies to the account). Server-rendered only.

use leptos::prelude::*;

use crate::error::DashboardError;
use crate::model::StorageView;

/// The installation's housekeeping policy, as the server was configured (`None`: off).
#[cfg(feature = "ssr")]
#[derive(Debug, Clone, Copy)]
pub struct Housekeeping(pub Option<tidemark_domain::housekeeping::Policy>);

#[server(endpoint = "storage")]
pub async fn load_storage() -> Result<StorageView, DashboardError> {
    use super::ssr::*;
    use crate::model::StorageRow;
    let viewer = crate::auth::require_viewer()?;
    let account = &viewer.account_id;
    let db = db();
    let storage = tidemark_services::account::storage(&db, account)
        .await
        .or_else(crate::error::refused)?;
    let (rows, own) = (storage.projects, storage.own_policy);
    let installation = use_context::<Housekeeping>().and_then(|h| h.0);
    let policy = own.or(installation).map(|p| {
        // In the unit the operator most likely wrote: "36 hours", never "a day".
        let days = |ms: i64| tidemark_domain::retention::Age::from_millis(ms).in_words();
        vec![
            format!("Every scan keeps its findings for {}.", days(p.keep_all)),
            format!(
                "Then the latest scan of each day; of each week after {}; of each month after {}.",
                days(p.weekly_after),
                days(p.monthly_after)
            ),
            format!(
                "A pull request's scans lose theirs {} after its last push, another branch's after {} (never the default branch's).",
                days(p.pull_request_after),
                days(p.inactive_branch_after)
            ),
            "A line's latest scan, a scan something was compared against, a scan where the gate's verdict changed and one the audit log or a triage refers to always keep theirs. Every scan's score, counts and gate result stay in the history.".to_owned(),
        ]
    });
    let total = rows.iter().filter_map(|r| r.bytes).sum();
    let measured_at = rows.iter().filter_map(|r| r.measured_at).min();
    let now = tidemark_domain::now_millis();
    Ok(StorageView {
        total: tidemark_domain::text::bytes(total),
        measured: measured_at.map(|at| crate::time::ago(at, now)),
        own_policy: own.is_some(),
        policy,
        projects: rows
            .into_iter()
            .map(|r| StorageRow {
                project_id: r.project_id,
                label: r.label,
                scans: r.scans,
                scans_thinned: r.scans_thinned,
                size: r
                    .bytes
                    .map_or("measuring…".to_owned(), tidemark_domain::text::bytes),
            })
            .collect(),
    })
}
