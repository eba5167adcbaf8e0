//! What every provisioning write ends with: the `members` row each touched person should have,
//! applied and audited, and the refusal when the account would be left without an admin.

use crate::AccountId;
use tidemark_domain::access::Role;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::scim::{provisioned_role, AdminGroups};

use super::Refusal;
use crate::access::ENSURE_USER_SQL;
use crate::audit::Change;
use crate::stmt::Stmt;
use crate::tx::WriteTx;

const LAST_ADMIN: &str = "this change would leave the account without an admin; make someone \
     else an admin in Tidemark (or add them to the admins' group) first";

/// Brings the `members` row of the provisioned person `scim_user_id` in line with their
/// record and groups, auditing what changed. Whether an admin lost the role or the
/// membership.
pub(super) async fn sync_membership(
    tx: &mut WriteTx,
    account_id: &AccountId,
    scim_user_id: &str,
    audit: &AuditContext,
) -> Result<bool, sqlx::Error> {
    type Row = (Option<String>, Option<String>, Option<bool>, String);
    let (user_id, email, active, kept): Row = tx
        .fetch_one(
            Stmt::new(
                "SELECT s.user_id, u.email, s.active, s.role FROM scim_users s \
                 LEFT JOIN users u ON u.id = s.user_id WHERE s.id = $1",
            )
            .bind(scim_user_id),
        )
        .await?;
    // Nobody to sign in as: no membership to keep in line.
    let (Some(user_id), Some(email)) = (user_id, email) else {
        return Ok(false);
    };
    let (marked, in_marked): (i64, i64) = tx
        .fetch_one(
            Stmt::new(
                "SELECT COUNT(*), COALESCE(SUM(CASE WHEN EXISTS (SELECT 1 FROM \
                 scim_group_members gm WHERE gm.group_id = g.id AND gm.scim_user_id = $1) \
                 THEN 1 ELSE 0 END), 0) FROM scim_groups g \
                 WHERE g.account_id = $2 AND g.grants_admin",
            )
            .bind(scim_user_id)
            .bind(account_id),
        )
        .await?;
    let groups = match (marked, in_marked) {
        (0, _) => AdminGroups::NoneMarked,
        (_, 0) => AdminGroups::InNone,
        _ => AdminGroups::InOne,
    };
    let kept = Role::parse(&kept).unwrap_or(Role::Member);
    let desired = provisioned_role(active.unwrap_or(true), kept, groups);
    let current = member_role(tx, account_id, &user_id).await?;
    let action = apply_role(tx, account_id, &user_id, current, desired, audit.at).await?;
    if let Some(role) = desired {
        tx.execute(
            Stmt::new("UPDATE scim_users SET role = $1 WHERE id = $2")
                .bind(role.as_str())
                .bind(scim_user_id),
        )
        .await?;
    }
    if let Some(action) = action {
        let change = Change {
            account_id: Some(account_id),
            action,
            target: email,
            before: current.map(|r| r.as_str().to_owned()),
            after: desired.map(|r| r.as_str().to_owned()),
        };
        tx.audit(audit, change).await?;
    }
    Ok(current == Some(Role::Admin) && desired != Some(Role::Admin))
}

/// The role `user_id` has in the account, if a member.
pub(super) async fn member_role(
    tx: &mut WriteTx,
    account_id: &AccountId,
    user_id: &str,
) -> Result<Option<Role>, sqlx::Error> {
    let row: Option<(String,)> = tx
        .fetch_optional(
            Stmt::new("SELECT role FROM members WHERE account_id = $1 AND user_id = $2")
                .bind(account_id)
                .bind(user_id),
        )
        .await?;
    Ok(row.and_then(|(r,)| Role::parse(&r)))
}

/// Moves a membership from `current` to `desired` the way `access::change_member` does: a
/// removal also ends the person's sessions in the account and drops their alert settings.
async fn apply_role(
    tx: &mut WriteTx,
    account_id: &AccountId,
    user_id: &str,
    current: Option<Role>,
    desired: Option<Role>,
    now: tidemark_domain::Millis,
) -> Result<Option<Action>, sqlx::Error> {
    Ok(match (current, desired) {
        (None, None) => None,
        (Some(c), Some(d)) if c == d => None,
        (None, Some(d)) => {
            tx.execute(
                Stmt::new(
                    "INSERT INTO members (account_id, user_id, role, added_at) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(account_id)
                .bind(user_id)
                .bind(d.as_str())
                .bind(now),
            )
            .await?;
            Some(Action::MemberAdded)
        }
        (Some(_), Some(d)) => {
            tx.execute(
                Stmt::new("UPDATE members SET role = $1 WHERE account_id = $2 AND user_id = $3")
                    .bind(d.as_str())
                    .bind(account_id)
                    .bind(user_id),
            )
            .await?;
            Some(Action::MemberRoleChanged)
        }
        (Some(_), None) => {
            for sql in [
                "DELETE FROM members WHERE account_id = $1 AND user_id = $2",
                "DELETE FROM sessions WHERE account_id = $1 AND user_id = $2",
                "DELETE FROM alert_prefs WHERE account_id = $1 AND user_id = $2",
            ] {
                tx.execute(Stmt::new(sql).bind(account_id).bind(user_id))
                    .await?;
            }
            Some(Action::MemberRemoved)
        }
    })
}

/// Re-syncs every provisioned person of the account (after the set of admin groups changed).
pub(super) async fn sync_everyone(
    tx: &mut WriteTx,
    account_id: &AccountId,
    audit: &AuditContext,
) -> Result<bool, sqlx::Error> {
    let everyone: Vec<(String,)> = tx
        .fetch_all(Stmt::new("SELECT id FROM scim_users WHERE account_id = $1").bind(account_id))
        .await?;
    let mut lost_admin = false;
    for (id,) in everyone {
        lost_admin |= sync_membership(tx, account_id, &id, audit).await?;
    }
    Ok(lost_admin)
}

/// The last-admin refusal when an admin was lost and the account has none left (the caller
/// returns it, and the transaction, dropped, rolls back).
pub(super) async fn adminless(
    tx: &mut WriteTx,
    account_id: &AccountId,
    lost_admin: bool,
) -> Result<Option<Refusal>, sqlx::Error> {
    if !lost_admin {
        return Ok(None);
    }
    let (admins,): (i64,) = tx
        .fetch_one(
            Stmt::new("SELECT COUNT(*) FROM members WHERE account_id = $1 AND role = 'admin'")
                .bind(account_id),
        )
        .await?;
    Ok((admins == 0).then(|| Refusal::LastAdmin(LAST_ADMIN.to_owned())))
}

/// The user id for `email`, creating the user if new.
pub(super) async fn ensure_user(
    tx: &mut WriteTx,
    email: &str,
    now: tidemark_domain::Millis,
) -> Result<String, sqlx::Error> {
    tx.execute(
        Stmt::new(ENSURE_USER_SQL)
            .bind(tidemark_domain::ids::new_user_id())
            .bind(email)
            .bind(now),
    )
    .await?;
    let (id,): (String,) = tx
        .fetch_one(Stmt::new("SELECT id FROM users WHERE email = $1").bind(email))
        .await?;
    Ok(id)
}
