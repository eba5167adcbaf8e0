//! `/scim/v2/Users`: people the identity provider provisions. Deactivating or deleting one
//! ends their membership (and sessions) in this account at once.

use std::future::Future;
use tidemark_wire::ids::AccountId;

use serde_json::Value;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::scim::patch::{user_patch, Patch, UserChange};
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::Meta;
use tidemark_store::scim::{self as store, Outcome, ScimUser};
use tidemark_store::{Db, StoreError, Writer};

use super::resource::{Change, Resource};
use super::{ScimClient, ScimFailure};

pub(super) struct Users;

impl Resource for Users {
    const NOUN: &'static str = "user";
    type Record = UserRecord;
    type Patch = Patch<UserChange>;
    type Stored = ScimUser;

    fn parse(body: &Value) -> Result<UserRecord, ScimFailure> {
        Ok(UserRecord::from_resource(body)?)
    }

    fn parse_patch(body: &Value) -> Result<Self::Patch, ScimFailure> {
        let patch = user_patch(body)?;
        if !patch.ignored.is_empty() {
            tracing::debug!(ignored = ?patch.ignored, "SCIM PATCH named attributes Tidemark does not keep");
        }
        Ok(patch)
    }

    fn render(client: &ScimClient, user: &ScimUser) -> Value {
        let meta = Meta {
            base_url: client.base_url.clone(),
            created: user.created_at,
            last_modified: user.updated_at,
            version: user.version,
        };
        user.record.to_resource(&user.id, &user.groups, &meta)
    }

    fn find(
        db: &Db,
        account_id: &AccountId,
        id: &str,
    ) -> impl Future<Output = Result<Option<ScimUser>, StoreError>> + Send {
        store::find_user(db, account_id, id)
    }

    fn list(
        db: &Db,
        account_id: &AccountId,
    ) -> impl Future<Output = Result<Vec<ScimUser>, StoreError>> + Send {
        store::list_users(db, account_id)
    }

    async fn create(
        db: Writer,
        account_id: AccountId,
        record: UserRecord,
        audit: AuditContext,
    ) -> Outcome<String> {
        store::create_user(&db, &account_id, &record, &audit).await
    }

    async fn update(
        db: Writer,
        account_id: AccountId,
        id: String,
        change: Change<Self>,
        audit: AuditContext,
    ) -> Outcome<()> {
        let apply = |mut record: UserRecord| match &change {
            Change::Replace(next) => Ok(next.clone()),
            Change::Patch(patch) => {
                record.apply(&id, &patch.changes)?;
                Ok(record)
            }
        };
        store::update_user(&db, &account_id, &id, apply, &audit).await
    }

    async fn delete(
        db: Writer,
        account_id: AccountId,
        id: String,
        audit: AuditContext,
    ) -> Outcome<()> {
        store::delete_user(&db, &account_id, &id, &audit).await
    }
}
