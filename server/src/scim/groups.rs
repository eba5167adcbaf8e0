//! `/scim/v2/Groups`: groups the identity provider pushes. Membership of a group an admin
//! marked in Settings gives the admin role.

use std::collections::BTreeSet;
use std::future::Future;
use tidemark_wire::ids::AccountId;

use serde_json::Value;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::patch::{group_patch, GroupChange, Patch};
use tidemark_domain::scim::Meta;
use tidemark_store::scim::{self as store, Outcome, ScimGroup};
use tidemark_store::{Db, StoreError, Writer};

use super::resource::{Change, Resource};
use super::{ScimClient, ScimFailure};

pub(super) struct Groups;

impl Resource for Groups {
    const NOUN: &'static str = "group";
    /// The group and its members' ids.
    type Record = (GroupRecord, BTreeSet<String>);
    type Patch = Patch<GroupChange>;
    type Stored = ScimGroup;

    fn parse(body: &Value) -> Result<Self::Record, ScimFailure> {
        let (record, members) = GroupRecord::from_resource(body)?;
        Ok((record, members.into_iter().collect()))
    }

    fn parse_patch(body: &Value) -> Result<Self::Patch, ScimFailure> {
        Ok(group_patch(body)?)
    }

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

    fn find(
        db: &Db,
        account_id: &AccountId,
        id: &str,
    ) -> impl Future<Output = Result<Option<ScimGroup>, StoreError>> + Send {
        store::find_group(db, account_id, id)
    }

    /// With their members (read even when an answer leaves them out: a filter may name them).
    fn list(
        db: &Db,
        account_id: &AccountId,
    ) -> impl Future<Output = Result<Vec<ScimGroup>, StoreError>> + Send {
        store::list_groups(db, account_id, true)
    }

    async fn create(
        db: Writer,
        account_id: AccountId,
        (record, members): Self::Record,
        audit: AuditContext,
    ) -> Outcome<String> {
        store::create_group(&db, &account_id, &record, &members, &audit).await
    }

    async fn update(
        db: Writer,
        account_id: AccountId,
        id: String,
        change: Change<Self>,
        audit: AuditContext,
    ) -> Outcome<()> {
        let apply = |mut record: GroupRecord, mut members: BTreeSet<String>| match &change {
            Change::Replace(next) => Ok(next.clone()),
            Change::Patch(patch) => {
                record.apply(&id, &mut members, &patch.changes)?;
                Ok((record, members))
            }
        };
        store::update_group(&db, &account_id, &id, apply, &audit).await
    }

    async fn delete(
        db: Writer,
        account_id: AccountId,
        id: String,
        audit: AuditContext,
    ) -> Outcome<()> {
        store::delete_group(&db, &account_id, &id, &audit).await
    }
}
