//! `/scim/v2/Users`: people the identity provider provisions. Deactivating or deleting one
//! ends their membership (and sessions) in this account at once.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tidemark_domain::scim::patch::user_patch;
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::Meta;
use tidemark_store::scim::{self as store, ScimUser};

use super::{
    body_json, list_query, provision, resource_response, ListQuery, ScimClient, ScimFailure,
};
use crate::state::AppState;

fn render(client: &ScimClient, user: &ScimUser) -> Value {
    let meta = Meta {
        base_url: client.base_url.clone(),
        created: user.created_at,
        last_modified: user.updated_at,
        version: user.version,
    };
    user.record.to_resource(&user.id, &user.groups, &meta)
}

async fn answer(
    state: &AppState,
    client: &ScimClient,
    id: &str,
    status: StatusCode,
    query: &ListQuery,
) -> Result<Response, ScimFailure> {
    let user = store::find_user(&state.db, &client.account_id, id)
        .await?
        .ok_or_else(|| ScimFailure::not_found("no such user"))?;
    Ok(resource_response(status, render(client, &user), query))
}

/// Every provisioned person of the account, as SCIM resources.
pub(super) async fn resources(
    state: &AppState,
    client: &ScimClient,
) -> Result<Vec<Value>, ScimFailure> {
    let users = store::list_users(&state.db, &client.account_id).await?;
    Ok(users.iter().map(|u| render(client, u)).collect())
}

pub(super) async fn show(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ScimFailure> {
    answer(&state, &client, &id, StatusCode::OK, &list_query(&uri)?).await
}

pub(super) async fn create(
    State(state): State<AppState>,
    client: ScimClient,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let record = UserRecord::from_resource(&body_json(&body)?)?;
    let id = provision(&state, &client, move |db, account, audit| async move {
        store::create_user(&db, &account, &record, &audit).await
    })
    .await?;
    answer(&state, &client, &id, StatusCode::CREATED, &query).await
}

pub(super) async fn replace(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let record = UserRecord::from_resource(&body_json(&body)?)?;
    let target = id.clone();
    provision(&state, &client, move |db, account, audit| async move {
        store::update_user(&db, &account, &target, |_| Ok(record.clone()), &audit).await
    })
    .await?;
    answer(&state, &client, &id, StatusCode::OK, &query).await
}

pub(super) async fn patch(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let patch = user_patch(&body_json(&body)?)?;
    if !patch.ignored.is_empty() {
        tracing::debug!(ignored = ?patch.ignored, "SCIM PATCH named attributes Tidemark does not keep");
    }
    let target = id.clone();
    provision(&state, &client, move |db, account, audit| async move {
        let apply = |mut record: UserRecord| {
            record.apply(&target, &patch.changes)?;
            Ok(record)
        };
        store::update_user(&db, &account, &target, apply, &audit).await
    })
    .await?;
    answer(&state, &client, &id, StatusCode::OK, &query).await
}

pub(super) async fn delete(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
) -> Result<Response, ScimFailure> {
    provision(&state, &client, move |db, account, audit| async move {
        store::delete_user(&db, &account, &id, &audit).await
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
