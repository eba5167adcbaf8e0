//! `GET /v1/findings`: the account's findings inbox, across its live projects, with the
//! filters and keyset paging of the dashboard's `/findings`.

use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde::Deserialize;
use tidemark_domain::findings::FindingsCursor;
use tidemark_domain::now_millis;
use tidemark_domain::time::DAY_MS;
use tidemark_services::findings;
use tidemark_services::ServiceError;
use tidemark_store::findings::inbox::{InboxQuery, Lines, TriageFilter};
use tidemark_wire::findings::{FindingState, InboxFinding, InboxPage, TriageState};
use tidemark_wire::{ErrorBody, Severity};

use super::extract::{authenticate, ensure_dashboard_license};
use crate::http::error::ApiError;
use crate::state::AppState;

const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 500;
const MAX_AGE_DAYS: i64 = 3_650;

/// A triage filter as the query names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TriageParam {
    /// Never triaged, or undone.
    None,
    AcceptedRisk,
    FalsePositive,
    WontFix,
    /// Its expiry has passed: open again.
    Lapsed,
}

/// The query of the inbox.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InboxParams {
    /// A project's id or label; default: every live project.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    project: Option<String>,
    /// A branch name, `pr:<number>`, or `*` for every branch and pull request; default: each
    /// project's default branch.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    branch: Option<String>,
    /// A framework id (`cis-aws-2.0`): its rules.
    #[param(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    framework: Option<String>,
    /// One rule (requirement) id.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    rule_id: Option<String>,
    /// The cloud account of the branch's latest scan.
    #[param(
        min_length = 1,
        max_length = 255,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
    )]
    cloud_account: Option<String>,
    severity: Option<Severity>,
    /// Default: open and triaged (not fixed).
    state: Option<FindingState>,
    #[param(inline)]
    triage: Option<TriageParam>,
    /// Only findings first seen at least this many days ago.
    #[param(minimum = 1, maximum = 3650)]
    older_than_days: Option<i64>,
    /// The previous page's `next_cursor`, as given (opaque).
    #[param(pattern = "^[A-Za-z0-9_-]{1,128}$")]
    cursor: Option<String>,
    /// Default 100.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::InvalidRequest(message.into())
}

/// A text filter that a push could have written (no control characters, bounded).
fn text(field: &str, value: Option<String>, max: usize) -> Result<Option<String>, ApiError> {
    match value {
        None => Ok(None),
        Some(v) => {
            tidemark_domain::input::bounded_text(field, &v, max).map_err(|e| invalid(e.message))?;
            Ok(Some(v))
        }
    }
}

impl InboxParams {
    fn parse(uri: &Uri) -> Result<InboxParams, ApiError> {
        axum::extract::Query::<InboxParams>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| {
                invalid(format!(
                    "the query is not one this endpoint reads ({e}): state is open, triaged or \
                     fixed; severity critical, high, medium or low; triage none, accepted_risk, \
                     false_positive, wont_fix or lapsed; older_than_days 1-3650; limit 1-500"
                ))
            })
    }

    /// The store's query (the project still named as given).
    fn query(self, now: i64) -> Result<(Option<String>, InboxQuery), ApiError> {
        let limit = match self.limit {
            None => DEFAULT_LIMIT,
            Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
            Some(_) => {
                return Err(invalid(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}"
                )))
            }
        };
        let seen_before = match self.older_than_days {
            None => None,
            Some(d) if (1..=MAX_AGE_DAYS).contains(&d) => Some(now - d * DAY_MS),
            Some(_) => {
                return Err(invalid(format!(
                    "older_than_days must be from 1 to {MAX_AGE_DAYS}"
                )))
            }
        };
        let after = match self.cursor.as_deref() {
            None => None,
            Some(c) => Some(FindingsCursor::parse(c).ok_or_else(|| {
                invalid("cursor must be a next_cursor this API returned, as it was given")
            })?),
        };
        let lines = match text("branch", self.branch, 255)? {
            None => Lines::Default,
            Some(b) if b == "*" => Lines::All,
            Some(b) => Lines::Named(b),
        };
        let triage = self.triage.map(|t| match t {
            TriageParam::None => TriageFilter::None,
            TriageParam::AcceptedRisk => TriageFilter::State(TriageState::AcceptedRisk),
            TriageParam::FalsePositive => TriageFilter::State(TriageState::FalsePositive),
            TriageParam::WontFix => TriageFilter::State(TriageState::WontFix),
            TriageParam::Lapsed => TriageFilter::Lapsed,
        });
        Ok((
            text("project", self.project, 255)?,
            InboxQuery {
                project: None,
                lines,
                framework: text("framework", self.framework, 200)?,
                rule_id: text("rule_id", self.rule_id, 255)?,
                cloud_account: text("cloud_account", self.cloud_account, 255)?,
                severity: self.severity,
                state: self.state,
                triage,
                seen_before,
                after,
                limit,
            },
        ))
    }
}

/// The account's findings inbox
///
/// Tracked findings across the account's live projects (archived ones are left out): by
/// default the open and triaged findings of each project's default branch. Filters combine
/// (all must hold). Most severe first, then oldest first, then by id; `next_cursor` goes on
/// right after the page's last finding however many pushes came in between, so no finding
/// is listed twice or skipped by paging. A keyless CI push token whose publisher names
/// projects must name one of them in `project`.
#[utoipa::path(
    get,
    path = "/v1/findings",
    tag = "findings",
    security(("api_key" = []), ("ci_push_token" = [])),
    params(InboxParams),
    responses(
        (status = 200, description = "A page of the inbox", body = InboxPage),
        (status = 401, description = crate::api::API_KEY_REFUSED, body = ErrorBody),
        (status = 403, description = "`insufficient_tier`, `license_inactive`, or `project_not_allowed` (a push token limited to some projects, without one of them in `project`)", body = ErrorBody),
        (status = 404, description = "`not_found`: no such project in the key's account", body = ErrorBody),
        (status = 422, description = "`invalid_request`: an unknown parameter or value, a limit outside 1–500, an age outside 1–3650 days, or a cursor this API did not give", body = ErrorBody),
    )
)]
pub async fn list_account_findings(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<InboxPage>, ApiError> {
    let now = now_millis();
    let (project, mut query) = InboxParams::parse(&uri)?.query(now)?;
    let owner = authenticate(&state.db, &headers).await?;
    ensure_dashboard_license(&owner.license)?;
    match project {
        Some(named) => {
            let id = tidemark_services::projects::named_by(&state.db, &owner, &named)
                .await
                .map_err(|err| match err {
                    ServiceError::NotFound => ApiError::no_project(&named),
                    other => other.into(),
                })?;
            query.project = Some(id);
        }
        None if owner.limited_to_projects() => {
            return Err(ApiError::ProjectNotAllowed(
                "This push token may read only its trusted publisher's projects: name one in \
                 `project`."
                    .into(),
            ))
        }
        None => {}
    }
    let (rows, next_cursor) =
        findings::inbox(&state.db, &owner.license.account_id, &query, now).await?;
    Ok(Json(InboxPage {
        findings: rows
            .into_iter()
            .map(|r| InboxFinding {
                project_id: r.finding.project_id.to_string(),
                project_label: r.project_label,
                finding: r.finding.to_wire(now),
            })
            .collect(),
        next_cursor,
    }))
}
