//! `/admin/v1/catalogues…`: framework catalogues published as Prowler's compliance JSON, on
//! the use case `catalogue import|list` calls. Publishing is for admins; every role reads.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use tidemark_domain::catalogue::{Catalogue, MAX_BYTES};
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::Permission;
use tidemark_services::catalogues::{self, CatalogueSummary};
use tidemark_services::ServiceError;
use tidemark_wire::admin::{
    CatalogueDetail, CatalogueInfo, CatalogueList, CatalogueRequirementInfo, ProwlerCatalogue,
};
use tidemark_wire::ErrorBody;

use super::caller::caller;
use crate::http::body::{json_error, read_body, require_json};
use crate::http::error::ApiError;
use crate::state::AppState;

#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(
    dead_code,
    reason = "documents the path; handlers read it with `Path<String>`"
)]
struct FrameworkPath {
    /// Tidemark's framework id (`cis-aws-2.0`): 1 to 64 of a-z, 0-9, '.', '_' and '-',
    /// starting with a letter or digit.
    #[param(
        min_length = 1,
        max_length = 64,
        pattern = "^[a-z0-9][a-z0-9._-]{0,63}$"
    )]
    framework: String,
}

fn info(s: &CatalogueSummary) -> CatalogueInfo {
    CatalogueInfo {
        framework: s.framework.clone(),
        name: s.name.clone(),
        version: s.version.clone(),
        provider: s.provider.clone(),
        requirements: s.requirements,
        published_at: to_rfc3339(s.published_at),
        published_by: s.published_by.clone(),
    }
}

fn detail(s: &CatalogueSummary, c: Catalogue, replaced: Option<bool>) -> CatalogueDetail {
    CatalogueDetail {
        catalogue: info(s),
        description: c.description,
        requirement_list: c
            .requirements
            .into_iter()
            .map(|r| CatalogueRequirementInfo {
                id: r.number,
                rule_id: r.rule_id,
                title: r.title,
                description: r.description,
                section: r.section,
                profile: r.profile,
                manual: r.manual,
                checks: r.checks,
            })
            .collect(),
        replaced,
    }
}

fn no_catalogue(framework: &str) -> ApiError {
    ApiError::Missing(format!(
        "No catalogue is published for the framework {framework:?}. GET /admin/v1/catalogues \
         lists them."
    ))
}

/// Publish a framework catalogue
///
/// The body is Prowler's compliance-framework JSON as Prowler publishes it (`Framework`,
/// `Version`, `Provider`, `Requirements[]` with `Id`, `Name`, `Description`,
/// `Attributes[].Section`, `Attributes[].AssessmentStatus`, `Checks[]`; other keys are
/// ignored), at most 8 MiB. It becomes the catalogue of the framework in the path, replacing
/// the one before: each requirement `Id` is the rule `<framework>-<Id>`. The dashboard's
/// framework pages list every requirement from then on. Admin only; in the audit log as
/// `catalogue.published`.
#[utoipa::path(
    put,
    path = "/admin/v1/catalogues/{framework}",
    tag = "catalogues",
    security(("vendor_token" = [])),
    params(FrameworkPath),
    request_body(content = ProwlerCatalogue, content_type = "application/json", description = "Prowler's compliance-framework JSON"),
    responses(
        (status = 200, description = "Replaced the catalogue before", body = CatalogueDetail),
        (status = 201, description = "Published", body = CatalogueDetail),
        (status = 400, description = "`invalid_json`", body = ErrorBody),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`: admin only", body = ErrorBody),
        (status = 413, description = "`payload_too_large`: over 8 MiB", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: not application/json", body = ErrorBody),
        (status = 422, description = "`invalid_request`, naming the field (`Requirements[3].Id: \"1.1\" is given twice`)", body = ErrorBody),
    )
)]
pub async fn publish_catalogue(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(framework): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<CatalogueDetail>), ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Administer])?;
    require_json(&headers)?;
    let bytes = read_body(body, MAX_BYTES).await?;
    let catalogue = Catalogue::parse_prowler(&bytes, Some(&framework)).map_err(json_error)?;
    let published = catalogues::publish(&state.db, catalogue, &who.audit).await?;
    let (summary, catalogue) = catalogues::show(&state.db, &published.summary.framework).await?;
    let status = if published.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        Json(detail(&summary, catalogue, Some(published.replaced))),
    ))
}

/// The published catalogues
#[utoipa::path(
    get,
    path = "/admin/v1/catalogues",
    tag = "catalogues",
    security(("vendor_token" = [])),
    responses(
        (status = 200, description = "By framework", body = CatalogueList),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_catalogues(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<CatalogueList>, ApiError> {
    caller(&state, &headers, peer)
        .await?
        .require(&[Permission::Read])?;
    let listed = catalogues::list(&state.db).await?;
    Ok(Json(CatalogueList {
        catalogues: listed.iter().map(info).collect(),
    }))
}

/// A framework's catalogue
#[utoipa::path(
    get,
    path = "/admin/v1/catalogues/{framework}",
    tag = "catalogues",
    security(("vendor_token" = [])),
    params(FrameworkPath),
    responses(
        (status = 200, description = "Every requirement, in the published order", body = CatalogueDetail),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 404, description = "`not_found`: none published for that framework", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn get_catalogue(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(framework): Path<String>,
    headers: HeaderMap,
) -> Result<Json<CatalogueDetail>, ApiError> {
    caller(&state, &headers, peer)
        .await?
        .require(&[Permission::Read])?;
    match catalogues::show(&state.db, &framework).await {
        Ok((summary, catalogue)) => Ok(Json(detail(&summary, catalogue, None))),
        Err(ServiceError::NotFound) => Err(no_catalogue(&framework)),
        Err(other) => Err(other.into()),
    }
}
