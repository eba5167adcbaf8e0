//! SCIM provisioning: the account's bearer token, provisioned people and groups, and what
//! they mean for membership.
//!
//! A provisioned person is a view onto one `users` row (found by e-mail address) and, while
//! active, one `members` row. Every write recomputes the membership of the people it
//! touched with `domain::scim::provisioned_role` and applies it the way `access::change_member`
//! does (a removal ends the person's sessions in the account and drops their alert settings),
//! all in one account-locked transaction that is rolled back if the account would be left
//! without an admin.

use crate::AccountId;
use std::collections::{BTreeMap, BTreeSet};

use tidemark_domain::access::Role;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::ScimError;
use tidemark_domain::secrets::HashedApiKey;
use tidemark_domain::Millis;

use crate::audit::{record_in, Change};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

/// Why a provisioning change was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No such resource in this account.
    NotFound,
    /// The request itself is at fault (`uniqueness`, `invalidValue`, `mutability` …).
    Scim(ScimError),
    /// The change would leave the account without an admin.
    LastAdmin(String),
}

impl From<ScimError> for Refusal {
    fn from(e: ScimError) -> Self {
        Refusal::Scim(e)
    }
}

pub type Outcome<T> = Result<Result<T, Refusal>, StoreError>;

// ---------------------------------------------------------------------------------------
// Tokens

/// What Settings shows of an account's SCIM token.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct TokenInfo {
    pub prefix: String,
    pub created_at: Millis,
    pub last_used_at: Option<Millis>,
}

/// Stores a new token for the account, replacing (and so ending) the one it had.
pub async fn set_token(
    db: &Writer,
    account_id: &AccountId,
    hash: &HashedApiKey,
    prefix: &str,
    audit: &AuditContext,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let old: Option<(String,)> =
            sqlx::query_as("SELECT prefix FROM scim_tokens WHERE account_id = $1")
                .bind(account_id)
                .fetch_optional(&mut *tx)
                .await?;
        sqlx::query("DELETE FROM scim_tokens WHERE account_id = $1")
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO scim_tokens (account_id, token_hash, prefix, created_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(account_id)
        .bind(hash.as_str())
        .bind(prefix)
        .bind(audit.at)
        .execute(&mut *tx)
        .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimTokenCreated,
            target: prefix.to_owned(),
            before: old.map(|(p,)| p),
            after: Some(prefix.to_owned()),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await
    })?;
    Ok(())
}

/// Ends the account's token; false when it had none.
pub async fn revoke_token(
    db: &Writer,
    account_id: &AccountId,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let revoked = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let old: Option<(String,)> = sqlx::query_as(
            "DELETE FROM scim_tokens WHERE account_id = $1 RETURNING prefix",
        )
        .bind(account_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some((prefix,)) = &old {
            let change = Change {
                account_id: Some(account_id),
                action: Action::ScimTokenRevoked,
                target: prefix.clone(),
                before: Some(prefix.clone()),
                after: None,
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(old.is_some())
    })?;
    Ok(revoked)
}

pub async fn token_info(db: &Db, account_id: &AccountId) -> Result<Option<TokenInfo>, StoreError> {
    Ok(on_db!(db, pool => {
        sqlx::query_as(
            "SELECT prefix, created_at, last_used_at FROM scim_tokens WHERE account_id = $1",
        )
        .bind(account_id)
        .fetch_optional(pool)
        .await
    })?)
}

/// The account a token belongs to, with the token's prefix and when it was last noted used.
pub async fn find_token(
    db: &Db,
    hash: &HashedApiKey,
) -> Result<Option<(AccountId, TokenInfo)>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        account_id: AccountId,
        prefix: String,
        created_at: i64,
        last_used_at: Option<i64>,
    }
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT account_id, prefix, created_at, last_used_at FROM scim_tokens \
             WHERE token_hash = $1",
        )
        .bind(hash.as_str())
        .fetch_optional(pool)
        .await
    })?;
    Ok(row.map(|r| {
        (
            r.account_id,
            TokenInfo {
                prefix: r.prefix,
                created_at: r.created_at,
                last_used_at: r.last_used_at,
            },
        )
    }))
}

pub async fn note_token_used(
    db: &Writer,
    account_id: &AccountId,
    now: Millis,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query("UPDATE scim_tokens SET last_used_at = $2 WHERE account_id = $1")
            .bind(account_id)
            .bind(now)
            .execute(pool)
            .await
            .map(|_| ())
    })?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Reading people and groups

/// A provisioned person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimUser {
    pub id: String,
    /// `None` while the IdP has sent no e-mail address for the person.
    pub user_id: Option<String>,
    pub record: UserRecord,
    /// The membership's role (or the role it had before deactivation).
    pub role: Role,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub version: i64,
    /// `(group id, displayName)`, by name.
    pub groups: Vec<(String, String)>,
}

#[derive(sqlx::FromRow)]
struct UserRow {
    id: String,
    user_id: Option<String>,
    user_name: String,
    external_id: Option<String>,
    display_name: Option<String>,
    given_name: Option<String>,
    family_name: Option<String>,
    work_email: Option<String>,
    email_type: Option<String>,
    email_primary: Option<bool>,
    active: Option<bool>,
    role: String,
    created_at: i64,
    updated_at: i64,
    version: i64,
}

const USER_COLUMNS: &str = "id, user_id, user_name, external_id, display_name, given_name, \
     family_name, work_email, email_type, email_primary, active, role, created_at, updated_at, \
     version";

impl UserRow {
    fn into_user(self, groups: Vec<(String, String)>) -> Result<ScimUser, StoreError> {
        Ok(ScimUser {
            role: Role::parse(&self.role).ok_or(StoreError::Corrupt("scim_users.role"))?,
            record: UserRecord {
                user_name: self.user_name,
                external_id: self.external_id,
                display_name: self.display_name,
                given_name: self.given_name,
                family_name: self.family_name,
                work_email: self.work_email,
                email_type: self.email_type,
                email_primary: self.email_primary,
                active: self.active,
            },
            id: self.id,
            user_id: self.user_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: self.version,
            groups,
        })
    }
}

/// A provisioned group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScimGroup {
    pub id: String,
    pub record: GroupRecord,
    pub grants_admin: bool,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub version: i64,
    /// `(scim user id, userName)`, by userName.
    pub members: Vec<(String, String)>,
}

#[derive(sqlx::FromRow)]
struct GroupRow {
    id: String,
    display_name: String,
    external_id: Option<String>,
    grants_admin: bool,
    created_at: i64,
    updated_at: i64,
    version: i64,
}

const GROUP_COLUMNS: &str =
    "id, display_name, external_id, grants_admin, created_at, updated_at, version";

impl GroupRow {
    fn into_group(self, members: Vec<(String, String)>) -> ScimGroup {
        ScimGroup {
            id: self.id,
            record: GroupRecord {
                display_name: self.display_name,
                external_id: self.external_id,
            },
            grants_admin: self.grants_admin,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: self.version,
            members,
        }
    }
}

/// (group id, group name, scim user id, userName) for the account, or for one user or group.
const LINKS_SQL: &str = "SELECT g.id, g.display_name, u.id, u.user_name \
     FROM scim_group_members gm JOIN scim_groups g ON g.id = gm.group_id \
     JOIN scim_users u ON u.id = gm.scim_user_id WHERE g.account_id = $1";

type Link = (String, String, String, String);

async fn links(
    db: &Db,
    account_id: &AccountId,
    extra: &str,
    arg: &str,
) -> Result<Vec<Link>, StoreError> {
    let sql = format!("{LINKS_SQL}{extra}");
    Ok(on_db!(db, pool => {
        let q = sqlx::query_as(&sql).bind(account_id);
        let q = if extra.is_empty() { q } else { q.bind(arg) };
        q.fetch_all(pool).await
    })?)
}

fn groups_by_user(links: Vec<Link>) -> BTreeMap<String, Vec<(String, String)>> {
    let mut by_user: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (gid, gname, uid, _) in links {
        by_user.entry(uid).or_default().push((gid, gname));
    }
    for groups in by_user.values_mut() {
        groups.sort_by(|a, b| a.1.cmp(&b.1));
    }
    by_user
}

fn users_by_group(links: Vec<Link>) -> BTreeMap<String, Vec<(String, String)>> {
    let mut by_group: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (gid, _, uid, uname) in links {
        by_group.entry(gid).or_default().push((uid, uname));
    }
    for members in by_group.values_mut() {
        members.sort_by(|a, b| a.1.cmp(&b.1));
    }
    by_group
}

/// Every provisioned person of the account, oldest first.
pub async fn list_users(db: &Db, account_id: &AccountId) -> Result<Vec<ScimUser>, StoreError> {
    let sql = format!(
        "SELECT {USER_COLUMNS} FROM scim_users WHERE account_id = $1 ORDER BY created_at, id"
    );
    let rows: Vec<UserRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    let mut groups = groups_by_user(links(db, account_id, "", "").await?);
    rows.into_iter()
        .map(|r| {
            let g = groups.remove(&r.id).unwrap_or_default();
            r.into_user(g)
        })
        .collect()
}

pub async fn find_user(
    db: &Db,
    account_id: &AccountId,
    id: &str,
) -> Result<Option<ScimUser>, StoreError> {
    let sql = format!("SELECT {USER_COLUMNS} FROM scim_users WHERE account_id = $1 AND id = $2");
    let row: Option<UserRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).bind(id).fetch_optional(pool).await
    })?;
    let Some(row) = row else { return Ok(None) };
    let mut groups = groups_by_user(links(db, account_id, " AND u.id = $2", id).await?);
    let g = groups.remove(&row.id).unwrap_or_default();
    row.into_user(g).map(Some)
}

/// Every provisioned group of the account, by name; members only when asked for.
pub async fn list_groups(
    db: &Db,
    account_id: &AccountId,
    with_members: bool,
) -> Result<Vec<ScimGroup>, StoreError> {
    let sql = format!(
        "SELECT {GROUP_COLUMNS} FROM scim_groups WHERE account_id = $1 \
         ORDER BY display_name_key, id"
    );
    let rows: Vec<GroupRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    let mut members = if with_members {
        users_by_group(links(db, account_id, "", "").await?)
    } else {
        BTreeMap::new()
    };
    Ok(rows
        .into_iter()
        .map(|r| {
            let m = members.remove(&r.id).unwrap_or_default();
            r.into_group(m)
        })
        .collect())
}

pub async fn find_group(
    db: &Db,
    account_id: &AccountId,
    id: &str,
) -> Result<Option<ScimGroup>, StoreError> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM scim_groups WHERE account_id = $1 AND id = $2");
    let row: Option<GroupRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).bind(id).fetch_optional(pool).await
    })?;
    let Some(row) = row else { return Ok(None) };
    let mut members = users_by_group(links(db, account_id, " AND g.id = $2", id).await?);
    let m = members.remove(&row.id).unwrap_or_default();
    Ok(Some(row.into_group(m)))
}

/// The user ids of the account's members that SCIM manages (active or not), for Settings.
pub async fn managed_user_ids(
    db: &Db,
    account_id: &AccountId,
) -> Result<BTreeSet<String>, StoreError> {
    let rows: Vec<(String,)> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT user_id FROM scim_users WHERE account_id = $1 AND user_id IS NOT NULL",
        )
            .bind(account_id)
            .fetch_all(pool)
            .await
    })?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

// ---------------------------------------------------------------------------------------
// Writing

mod groups;
mod membership;
mod users;

pub use groups::{create_group, delete_group, set_group_admin, update_group};
pub use users::{create_user, delete_user, update_user};
