//! `/scim/v2/Groups`: groups the identity provider pushes. Membership of a group an admin
//! marked in Settings gives the admin role.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::patch::group_patch;
use tidemark_domain::scim::Meta;
use tidemark_store::scim::{self as store, ScimGroup};

use super::{
    body_json, list_query, provision, resource_response, ListQuery, ScimClient, ScimFailure,
};
use crate::state::AppState;

fn render(client: &ScimClient, group: &ScimGroup) -> Value {
    let meta = Meta {
        base_url: client.base_url.clone(),
        created: group.created_at,
        last_modified: group.updated_at,
        version: group.version,
    };
    group
        .record
        .to_resource(&group.id, Some(group.members.as_slice()), &meta)
}

async fn answer(
    state: &AppState,
    client: &ScimClient,
    id: &str,
    status: StatusCode,
    query: &ListQuery,
) -> Result<Response, ScimFailure> {
    let group = store::find_group(&state.db, &client.account_id, id)
        .await?
        .ok_or_else(|| ScimFailure::not_found("no such group"))?;
    Ok(resource_response(status, render(client, &group), query))
}

/// Every provisioned group of the account, as SCIM resources with their members (read even
/// when an answer leaves them out: a filter may name them).
pub(super) async fn resources(
    state: &AppState,
    client: &ScimClient,
) -> Result<Vec<Value>, ScimFailure> {
    let groups = store::list_groups(&state.db, &client.account_id, true).await?;
    Ok(groups.iter().map(|g| render(client, g)).collect())
}

pub(super) async fn show(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    answer(&state, &client, &id, StatusCode::OK, &query).await
}

pub(super) async fn create(
    State(state): State<AppState>,
    client: ScimClient,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let (record, members) = GroupRecord::from_resource(&body_json(&body)?)?;
    let members: BTreeSet<String> = members.into_iter().collect();
    let id = provision(&state, &client, move |db, account, audit| async move {
        store::create_group(&db, &account, &record, &members, &audit).await
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
    let (record, members) = GroupRecord::from_resource(&body_json(&body)?)?;
    let members: BTreeSet<String> = members.into_iter().collect();
    let target = id.clone();
    provision(&state, &client, move |db, account, audit| async move {
        let replace = |_, _| Ok((record.clone(), members.clone()));
        store::update_group(&db, &account, &target, replace, &audit).await
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
    let patch = group_patch(&body_json(&body)?)?;
    let target = id.clone();
    provision(&state, &client, move |db, account, audit| async move {
        let apply = |mut record: GroupRecord, mut members: BTreeSet<String>| {
            record.apply(&target, &mut members, &patch.changes)?;
            Ok((record, members))
        };
        store::update_group(&db, &account, &target, apply, &audit).await
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
        store::delete_group(&db, &account, &id, &audit).await
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
