//! The seven things SCIM does with a resource (list, show, create, replace, patch, delete,
//! and render), written once over [`Resource`]; `users.rs` and `groups.rs` say only what
//! differs: how a body parses, how a stored row renders, which store functions write it.

use std::future::Future;
use tidemark_wire::ids::AccountId;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tidemark_domain::audit::AuditContext;
use tidemark_store::scim::Outcome;
use tidemark_store::{Db, StoreError, Writer};

use super::{
    body_json, list_query, provision, resource_response, ListQuery, ScimClient, ScimFailure,
};
use crate::state::AppState;

/// A replacement (PUT) or a patch (PATCH) of a stored resource.
pub(super) enum Change<R: Resource> {
    Replace(R::Record),
    Patch(R::Patch),
}

pub(super) trait Resource: Sized + Send + 'static {
    /// How a not-found answer names it: "no such user".
    const NOUN: &'static str;
    /// What a POST or PUT body parses into.
    type Record: Send + Sync + 'static;
    /// What a PATCH body parses into.
    type Patch: Send + Sync + 'static;
    /// A stored resource, as the store reads it.
    type Stored: Send;

    fn parse(body: &Value) -> Result<Self::Record, ScimFailure>;
    fn parse_patch(body: &Value) -> Result<Self::Patch, ScimFailure>;
    fn render(client: &ScimClient, stored: &Self::Stored) -> Value;

    fn find(
        db: &Db,
        account_id: &AccountId,
        id: &str,
    ) -> impl Future<Output = Result<Option<Self::Stored>, StoreError>> + Send;
    /// Every resource of the account, with what a filter may name.
    fn list(
        db: &Db,
        account_id: &AccountId,
    ) -> impl Future<Output = Result<Vec<Self::Stored>, StoreError>> + Send;

    fn create(
        db: Writer,
        account_id: AccountId,
        record: Self::Record,
        audit: AuditContext,
    ) -> impl Future<Output = Outcome<String>> + Send + 'static;
    fn update(
        db: Writer,
        account_id: AccountId,
        id: String,
        change: Change<Self>,
        audit: AuditContext,
    ) -> impl Future<Output = Outcome<()>> + Send + 'static;
    fn delete(
        db: Writer,
        account_id: AccountId,
        id: String,
        audit: AuditContext,
    ) -> impl Future<Output = Outcome<()>> + Send + 'static;
}

async fn answer<R: Resource>(
    state: &AppState,
    client: &ScimClient,
    id: &str,
    status: StatusCode,
    query: &ListQuery,
) -> Result<Response, ScimFailure> {
    let stored = R::find(&state.db, &client.account_id, id)
        .await?
        .ok_or_else(|| ScimFailure::not_found(format!("no such {}", R::NOUN)))?;
    Ok(resource_response(status, R::render(client, &stored), query))
}

/// Every resource of the account, as SCIM JSON.
pub(super) async fn resources<R: Resource>(
    state: &AppState,
    client: &ScimClient,
) -> Result<Vec<Value>, ScimFailure> {
    let all = R::list(&state.db, &client.account_id).await?;
    Ok(all.iter().map(|r| R::render(client, r)).collect())
}

pub(super) async fn show<R: Resource>(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
) -> Result<Response, ScimFailure> {
    answer::<R>(&state, &client, &id, StatusCode::OK, &list_query(&uri)?).await
}

pub(super) async fn create<R: Resource>(
    State(state): State<AppState>,
    client: ScimClient,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let record = R::parse(&body_json(&body)?)?;
    let id = provision(&state, &client, move |db, account, audit| {
        R::create(db, account, record, audit)
    })
    .await?;
    answer::<R>(&state, &client, &id, StatusCode::CREATED, &query).await
}

async fn update<R: Resource>(
    state: &AppState,
    client: &ScimClient,
    id: String,
    query: ListQuery,
    change: Change<R>,
) -> Result<Response, ScimFailure> {
    let target = id.clone();
    provision(state, client, move |db, account, audit| {
        R::update(db, account, target, change, audit)
    })
    .await?;
    answer::<R>(state, client, &id, StatusCode::OK, &query).await
}

pub(super) async fn replace<R: Resource>(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let record = R::parse(&body_json(&body)?)?;
    update::<R>(&state, &client, id, query, Change::Replace(record)).await
}

pub(super) async fn patch<R: Resource>(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
    uri: Uri,
    body: Bytes,
) -> Result<Response, ScimFailure> {
    let query = list_query(&uri)?;
    let patch = R::parse_patch(&body_json(&body)?)?;
    update::<R>(&state, &client, id, query, Change::Patch(patch)).await
}

pub(super) async fn delete<R: Resource>(
    State(state): State<AppState>,
    client: ScimClient,
    Path(id): Path<String>,
) -> Result<Response, ScimFailure> {
    provision(&state, &client, move |db, account, audit| {
        R::delete(db, account, id, audit)
    })
    .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
