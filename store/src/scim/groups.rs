//! Provisioning groups: create, change, delete, and marking the group whose members are the
//! account's admins; every write re-syncs the membership of the people it touched.

use crate::AccountId;
use std::collections::BTreeSet;

use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::{ScimError, ScimType};

use super::membership::{adminless, sync_everyone, sync_membership};
use super::{GroupRow, Outcome, Refusal, GROUP_COLUMNS};
use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::WriteTx;
use crate::Writer;

async fn ids(tx: &mut WriteTx, stmt: Stmt) -> Result<BTreeSet<String>, sqlx::Error> {
    let rows: Vec<(String,)> = tx.fetch_all(stmt).await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// Writes `group_id`'s member set (`members`, scim user ids), refusing ids that are not
/// people of this account, then re-syncs everyone whose membership of it changed. Whether an
/// admin was lost.
async fn write_members(
    tx: &mut WriteTx,
    account_id: &AccountId,
    group_id: &str,
    members: &BTreeSet<String>,
    audit: &AuditContext,
) -> Result<Result<bool, Refusal>, sqlx::Error> {
    let known = ids(
        tx,
        Stmt::new("SELECT id FROM scim_users WHERE account_id = $1").bind(account_id),
    )
    .await?;
    if let Some(unknown) = members.iter().find(|m| !known.contains(*m)) {
        return Ok(Err(Refusal::Scim(ScimError::new(
            ScimType::InvalidValue,
            format!("member {unknown:?} is not a provisioned user of this account"),
        ))));
    }
    let current = ids(
        tx,
        Stmt::new("SELECT scim_user_id FROM scim_group_members WHERE group_id = $1").bind(group_id),
    )
    .await?;
    for gone in current.difference(members) {
        tx.execute(
            Stmt::new("DELETE FROM scim_group_members WHERE group_id = $1 AND scim_user_id = $2")
                .bind(group_id)
                .bind(gone),
        )
        .await?;
    }
    for new in members.difference(&current) {
        tx.execute(
            Stmt::new("INSERT INTO scim_group_members (group_id, scim_user_id) VALUES ($1, $2)")
                .bind(group_id)
                .bind(new),
        )
        .await?;
    }
    let mut lost_admin = false;
    for touched in current.symmetric_difference(members) {
        lost_admin |= sync_membership(tx, account_id, touched, audit).await?;
    }
    Ok(Ok(lost_admin))
}

/// A `uniqueness` refusal when another group of the account has `record`'s name.
async fn group_conflict(
    tx: &mut WriteTx,
    account_id: &AccountId,
    except: &str,
    record: &GroupRecord,
) -> Result<Option<Refusal>, sqlx::Error> {
    let taken: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT id FROM scim_groups WHERE account_id = $1 AND id <> $2 \
                 AND display_name_key = $3",
            )
            .bind(account_id)
            .bind(except)
            .bind(record.display_name_key()),
        )
        .await?;
    Ok(taken.map(|_| {
        Refusal::Scim(ScimError::new(
            ScimType::Uniqueness,
            format!("a group named {:?} exists", record.display_name),
        ))
    }))
}

pub async fn create_group(
    db: &Writer,
    account_id: &AccountId,
    record: &GroupRecord,
    members: &BTreeSet<String>,
    audit: &AuditContext,
) -> Outcome<String> {
    let id = tidemark_domain::ids::new_scim_group_id();
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    if let Some(refusal) = group_conflict(&mut tx, account_id, "", record).await? {
        return Ok(Err(refusal));
    }
    tx.execute(
        Stmt::new(
            "INSERT INTO scim_groups (id, account_id, display_name, display_name_key, \
             external_id, grants_admin, created_at, updated_at, version) \
             VALUES ($1, $2, $3, $4, $5, FALSE, $6, $7, 1)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(&record.display_name)
        .bind(record.display_name_key())
        .bind(&record.external_id)
        .bind(audit.at)
        .bind(audit.at),
    )
    .await?;
    if let Err(refusal) = write_members(&mut tx, account_id, &id, members, audit).await? {
        return Ok(Err(refusal));
    }
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimGroupCreated,
        target: record.display_name.clone(),
        before: None,
        after: Some(format!("{} members", members.len())),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(Ok(id))
}

/// Replaces a group's record and members with what `change` makes of them.
pub async fn update_group(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    change: impl Fn(GroupRecord, BTreeSet<String>) -> Result<(GroupRecord, BTreeSet<String>), ScimError>,
    audit: &AuditContext,
) -> Outcome<()> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM scim_groups WHERE account_id = $1 AND id = $2");
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let row: Option<GroupRow> = tx
        .fetch_optional(Stmt::new(sql).bind(account_id).bind(id))
        .await?;
    let Some(row) = row else {
        return Ok(Err(Refusal::NotFound));
    };
    let before_members = ids(
        &mut tx,
        Stmt::new("SELECT scim_user_id FROM scim_group_members WHERE group_id = $1").bind(id),
    )
    .await?;
    let before = row.into_group(Vec::new()).record;
    let (after, after_members) = match change(before.clone(), before_members.clone()) {
        Ok(next) => next,
        Err(e) => return Ok(Err(e.into())),
    };
    if after == before && after_members == before_members {
        return Ok(Ok(()));
    }
    if let Some(refusal) = group_conflict(&mut tx, account_id, id, &after).await? {
        return Ok(Err(refusal));
    }
    tx.execute(
        Stmt::new(
            "UPDATE scim_groups SET display_name = $1, display_name_key = $2, external_id = $3, \
             updated_at = $4, version = version + 1 WHERE id = $5",
        )
        .bind(&after.display_name)
        .bind(after.display_name_key())
        .bind(&after.external_id)
        .bind(audit.at)
        .bind(id),
    )
    .await?;
    let lost_admin = match write_members(&mut tx, account_id, id, &after_members, audit).await? {
        Ok(lost) => lost,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimGroupChanged,
        target: after.display_name.clone(),
        before: Some(format!("{} members", before_members.len())),
        after: Some(format!("{} members", after_members.len())),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(Ok(()))
}

pub async fn delete_group(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    audit: &AuditContext,
) -> Outcome<()> {
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let row: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new("SELECT display_name FROM scim_groups WHERE account_id = $1 AND id = $2")
                .bind(account_id)
                .bind(id),
        )
        .await?;
    let Some((name,)) = row else {
        return Ok(Err(Refusal::NotFound));
    };
    let empty = BTreeSet::new();
    let lost_admin = match write_members(&mut tx, account_id, id, &empty, audit).await? {
        Ok(lost) => lost,
        Err(refusal) => return Ok(Err(refusal)),
    };
    tx.execute(Stmt::new("DELETE FROM scim_groups WHERE id = $1").bind(id))
        .await?;
    // The last admin group gone: roles are no longer the groups' to decide.
    let lost_admin = lost_admin | sync_everyone(&mut tx, account_id, audit).await?;
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimGroupDeleted,
        target: name,
        before: None,
        after: None,
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(Ok(()))
}

/// Marks (or unmarks) a group as the one whose members are the account's admins, and
/// applies what that means to every provisioned person at once.
pub async fn set_group_admin(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    grants_admin: bool,
    audit: &AuditContext,
) -> Outcome<()> {
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let row: Option<(String, bool)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT display_name, grants_admin FROM scim_groups \
                 WHERE account_id = $1 AND id = $2",
            )
            .bind(account_id)
            .bind(id),
        )
        .await?;
    let Some((name, was)) = row else {
        return Ok(Err(Refusal::NotFound));
    };
    if was == grants_admin {
        return Ok(Ok(()));
    }
    tx.execute(
        Stmt::new("UPDATE scim_groups SET grants_admin = $1 WHERE id = $2")
            .bind(grants_admin)
            .bind(id),
    )
    .await?;
    let lost_admin = sync_everyone(&mut tx, account_id, audit).await?;
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    let label = |on: bool| if on { "gives admin" } else { "gives member" }.to_owned();
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimGroupAdminSet,
        target: name,
        before: Some(label(was)),
        after: Some(label(grants_admin)),
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(Ok(()))
}
