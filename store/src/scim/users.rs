//! Provisioning people: create, change (PUT or PATCH), delete, each in one account-locked
//! transaction that also keeps the person's membership in line.

use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::{ScimError, ScimType};
use tidemark_domain::text::Email;

use super::membership::{adminless, ensure_user, member_role, sync_membership};
use super::{Outcome, Refusal, UserRow, USER_COLUMNS};
use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::WriteTx;
use crate::Writer;

fn summary(record: &UserRecord) -> String {
    let state = if record.is_active() {
        "active"
    } else {
        "inactive"
    };
    format!("{} ({state})", record.user_name)
}

/// How the audit log names a provisioned person: their address, else their userName.
fn target(address: &Option<Email>, record: &UserRecord) -> String {
    address
        .as_ref()
        .map_or_else(|| record.user_name.clone(), |a| a.as_str().to_owned())
}

/// A `uniqueness` refusal when another provisioned person of the account has `record`'s
/// userName (case-insensitively) or signs in as `user_id`.
async fn user_conflict(
    tx: &mut WriteTx,
    account_id: &AccountId,
    except: &str,
    record: &UserRecord,
    user_id: &Option<String>,
) -> Result<Option<Refusal>, sqlx::Error> {
    let taken: Option<(String, String)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT user_name_key, user_id FROM scim_users WHERE account_id = $1 AND id <> $2 \
                 AND (user_name_key = $3 OR user_id = $4) LIMIT 1",
            )
            .bind(account_id)
            .bind(except)
            .bind(record.user_name_key())
            .bind(user_id),
        )
        .await?;
    Ok(taken.map(|(key, _)| {
        let detail = if key == record.user_name_key() {
            format!("userName {:?} is taken", record.user_name)
        } else {
            "another provisioned person signs in with this e-mail address".to_owned()
        };
        Refusal::Scim(ScimError::new(ScimType::Uniqueness, detail))
    }))
}

/// The Tidemark user a record signs in as (made if new), or a refusal of its address.
async fn signs_in_as(
    tx: &mut WriteTx,
    record: &UserRecord,
    now: tidemark_domain::Millis,
) -> Result<Result<(Option<Email>, Option<String>), Refusal>, sqlx::Error> {
    let address = match record.address() {
        Ok(a) => a,
        Err(e) => return Ok(Err(e.into())),
    };
    let user_id = match &address {
        Some(address) => Some(ensure_user(tx, address.as_str(), now).await?),
        None => None,
    };
    Ok(Ok((address, user_id)))
}

/// Provisions a person. Someone the account already has as a member is taken over with
/// their role.
pub async fn create_user(
    db: &Writer,
    account_id: &AccountId,
    record: &UserRecord,
    audit: &AuditContext,
) -> Outcome<String> {
    if let Err(e) = record.address() {
        return Ok(Err(e.into()));
    }
    let id = tidemark_domain::ids::new_scim_user_id();
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let (address, user_id) = match signs_in_as(&mut tx, record, audit.at).await? {
        Ok(found) => found,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if let Some(refusal) = user_conflict(&mut tx, account_id, "", record, &user_id).await? {
        return Ok(Err(refusal));
    }
    let role = match &user_id {
        Some(user_id) => member_role(&mut tx, account_id, user_id).await?,
        None => None,
    }
    .unwrap_or(tidemark_domain::access::Role::Member);
    tx.execute(
        Stmt::new(
            "INSERT INTO scim_users (id, account_id, user_id, user_name, user_name_key, \
             external_id, display_name, given_name, family_name, work_email, email_type, \
             email_primary, active, role, created_at, updated_at, version) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, 1)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(&user_id)
        .bind(&record.user_name)
        .bind(record.user_name_key())
        .bind(&record.external_id)
        .bind(&record.display_name)
        .bind(&record.given_name)
        .bind(&record.family_name)
        .bind(&record.work_email)
        .bind(&record.email_type)
        .bind(record.email_primary)
        .bind(record.active)
        .bind(role.as_str())
        .bind(audit.at)
        .bind(audit.at),
    )
    .await?;
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimUserProvisioned,
        target: target(&address, record),
        before: None,
        after: Some(summary(record)),
    };
    tx.audit(audit, change).await?;
    // Taking over the last admin as a deactivated person would remove them.
    let lost_admin = sync_membership(&mut tx, account_id, &id, audit).await?;
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    tx.commit().await?;
    Ok(Ok(id))
}

/// Replaces a person's record with what `change` makes of it (a PUT's body, or a PATCH
/// applied to the current record), in one transaction.
pub async fn update_user(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    change: impl Fn(UserRecord) -> Result<UserRecord, ScimError>,
    audit: &AuditContext,
) -> Outcome<()> {
    let sql = format!("SELECT {USER_COLUMNS} FROM scim_users WHERE account_id = $1 AND id = $2");
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let row: Option<UserRow> = tx
        .fetch_optional(Stmt::new(sql).bind(account_id).bind(id))
        .await?;
    let Some(row) = row else {
        return Ok(Err(Refusal::NotFound));
    };
    let old_user_id = row.user_id.clone();
    let before = row.into_user(Vec::new())?.record;
    let after = match change(before.clone()) {
        Ok(after) => after,
        Err(e) => return Ok(Err(e.into())),
    };
    if after == before {
        return Ok(Ok(()));
    }
    let (address, user_id) = match signs_in_as(&mut tx, &after, audit.at).await? {
        Ok(found) => found,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if let Some(refusal) = user_conflict(&mut tx, account_id, id, &after, &user_id).await? {
        return Ok(Err(refusal));
    }
    let mut lost_admin = false;
    if user_id != old_user_id {
        // A new address is another Tidemark user: the old one's membership ends first.
        tx.execute(Stmt::new("UPDATE scim_users SET active = FALSE WHERE id = $1").bind(id))
            .await?;
        lost_admin |= sync_membership(&mut tx, account_id, id, audit).await?;
    }
    tx.execute(
        Stmt::new(
            "UPDATE scim_users SET user_id = $1, user_name = $2, user_name_key = $3, \
             external_id = $4, display_name = $5, given_name = $6, family_name = $7, \
             work_email = $8, email_type = $9, email_primary = $10, active = $11, \
             updated_at = $12, version = version + 1 WHERE id = $13",
        )
        .bind(&user_id)
        .bind(&after.user_name)
        .bind(after.user_name_key())
        .bind(&after.external_id)
        .bind(&after.display_name)
        .bind(&after.given_name)
        .bind(&after.family_name)
        .bind(&after.work_email)
        .bind(&after.email_type)
        .bind(after.email_primary)
        .bind(after.active)
        .bind(audit.at)
        .bind(id),
    )
    .await?;
    let action = match (before.is_active(), after.is_active()) {
        (true, false) => Action::ScimUserDeactivated,
        (false, true) => Action::ScimUserReactivated,
        _ => Action::ScimUserChanged,
    };
    let change = Change {
        account_id: Some(account_id),
        action,
        target: target(&address, &after),
        before: Some(summary(&before)),
        after: Some(summary(&after)),
    };
    tx.audit(audit, change).await?;
    lost_admin |= sync_membership(&mut tx, account_id, id, audit).await?;
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    tx.commit().await?;
    Ok(Ok(()))
}

/// Deletes a provisioned person: their membership ends; the user (and memberships in other
/// accounts) stay.
pub async fn delete_user(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    audit: &AuditContext,
) -> Outcome<()> {
    let mut tx = WriteTx::begin_account(db, account_id).await?;
    let row: Option<(String, Option<String>)> = tx
        .fetch_optional(
            Stmt::new(
                "SELECT s.user_name, u.email FROM scim_users s \
                 LEFT JOIN users u ON u.id = s.user_id WHERE s.account_id = $1 AND s.id = $2",
            )
            .bind(account_id)
            .bind(id),
        )
        .await?;
    let Some((user_name, email)) = row else {
        return Ok(Err(Refusal::NotFound));
    };
    tx.execute(Stmt::new("UPDATE scim_users SET active = FALSE WHERE id = $1").bind(id))
        .await?;
    let lost_admin = sync_membership(&mut tx, account_id, id, audit).await?;
    if let Some(refusal) = adminless(&mut tx, account_id, lost_admin).await? {
        return Ok(Err(refusal));
    }
    for sql in [
        "DELETE FROM scim_group_members WHERE scim_user_id = $1",
        "DELETE FROM scim_users WHERE id = $1",
    ] {
        tx.execute(Stmt::new(sql).bind(id)).await?;
    }
    let change = Change {
        account_id: Some(account_id),
        action: Action::ScimUserDeleted,
        target: email.unwrap_or_else(|| user_name.clone()),
        before: Some(user_name),
        after: None,
    };
    tx.audit(audit, change).await?;
    tx.commit().await?;
    Ok(Ok(()))
}
