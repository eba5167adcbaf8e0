//! `/admin/v1/licenses/{id}/machines…`: a licence's seats, and support freeing one (the
//! machine's API keys stop working at once).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use tidemark_domain::to_rfc3339;
use tidemark_domain::vendor::Permission;
use tidemark_services::seats::{self, MachineRow};
use tidemark_services::{licensing, ServiceError};
use tidemark_wire::admin::{AdminMachine, MachineList};
use tidemark_wire::ErrorBody;

use super::caller::caller;
use crate::http::error::ApiError;
use crate::state::AppState;

fn view(m: &MachineRow) -> AdminMachine {
    AdminMachine {
        id: m.id.clone(),
        name: m.name.clone(),
        fingerprint: m.machine_key.strip_prefix("fp:").map(str::to_owned),
        activated_at: to_rfc3339(m.activated_at),
        last_seen_at: to_rfc3339(m.last_seen_at),
        released_at: m.released_at.map(to_rfc3339),
        live_keys: m.live_keys,
        offline_until: m.offline_until.map(to_rfc3339),
    }
}

/// A licence's machines
///
/// Seats held first (newest activation first), then released ones.
#[utoipa::path(
    get,
    path = "/admin/v1/licenses/{license_id}/machines",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(("license_id" = String, Path, description = "`lcn_…`")),
    responses(
        (status = 200, description = "The machines", body = MachineList),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn list_machines(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(license_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<MachineList>, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::Read])?;
    let missing = |err| match err {
        ServiceError::NotFound => ApiError::Missing(format!("No licence {license_id:?}.")),
        other => other.into(),
    };
    let license = licensing::find(&state.db, &license_id)
        .await
        .map_err(missing)?;
    let machines = seats::list(&state.db, &license_id).await.map_err(missing)?;
    Ok(Json(MachineList {
        seats_used: machines.iter().filter(|m| m.released_at.is_none()).count() as i64,
        max_machines: license.max_machines,
        machines: machines.iter().map(view).collect(),
    }))
}

/// Release a seat
///
/// Frees the machine's seat and revokes its API keys at once (on every replica: keys are
/// never cached); the machine may activate again while a seat is free.
#[utoipa::path(
    post,
    path = "/admin/v1/licenses/{license_id}/machines/{machine_id}/release",
    tag = "licenses",
    security(("vendor_token" = [])),
    params(
        ("license_id" = String, Path, description = "`lcn_…`"),
        ("machine_id" = String, Path, description = "`mch_…`"),
    ),
    responses(
        (status = 204, description = "Released"),
        (status = 401, description = "`invalid_token`", body = ErrorBody),
        (status = 403, description = "`insufficient_role`", body = ErrorBody),
        (status = 404, description = "`not_found`: no such licence, or it holds no such live seat", body = ErrorBody),
        (status = 409, description = "`conflict`: an offline licence file holds the seat until it expires", body = ErrorBody),
        (status = 429, description = "`rate_limit_exceeded`", body = ErrorBody),
    )
)]
pub async fn release_machine(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((license_id, machine_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let who = caller(&state, &headers, peer).await?;
    who.require(&[Permission::ReleaseSeat])?;
    seats::release(&state.db, &license_id, &machine_id, &who.audit)
        .await
        .map_err(|err| match err {
            ServiceError::NotFound => ApiError::Missing(format!(
                "Licence {license_id:?} holds no live seat {machine_id:?}."
            )),
            ServiceError::Conflict(text) => ApiError::Conflict(text),
            other => other.into(),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
