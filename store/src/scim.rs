//! SCIM provisioning: the account's bearer token, provisioned people and groups, and what
//! they mean for membership.
//!
//! A provisioned person is a view onto one `users` row (found by e-mail address) and, while
//! active, one `members` row. Every write recomputes the membership of the people it
//! touched with `domain::scim::provisioned_role` and applies it the way `access::change_member`
//! does (a removal ends the person's sessions in the account and drops their alert settings),
//! all in one account-locked transaction that is rolled back if the account would be left
//! without an admin.

use std::collections::{BTreeMap, BTreeSet};

use tidemark_domain::access::Role;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::scim::group::GroupRecord;
use tidemark_domain::scim::user::UserRecord;
use tidemark_domain::scim::{provisioned_role, AdminGroups, ScimError, ScimType};
use tidemark_domain::secrets::HashedApiKey;
use tidemark_domain::Millis;

use crate::access::ENSURE_USER_SQL;
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
    account_id: &str,
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
    account_id: &str,
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

pub async fn token_info(db: &Db, account_id: &str) -> Result<Option<TokenInfo>, StoreError> {
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
) -> Result<Option<(String, TokenInfo)>, StoreError> {
    #[derive(sqlx::FromRow)]
    struct Row {
        account_id: String,
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

pub async fn note_token_used(db: &Writer, account_id: &str, now: Millis) -> Result<(), StoreError> {
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

async fn links(db: &Db, account_id: &str, extra: &str, arg: &str) -> Result<Vec<Link>, StoreError> {
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
pub async fn list_users(db: &Db, account_id: &str) -> Result<Vec<ScimUser>, StoreError> {
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
    account_id: &str,
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
    account_id: &str,
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
    account_id: &str,
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
pub async fn managed_user_ids(db: &Db, account_id: &str) -> Result<BTreeSet<String>, StoreError> {
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
// Writing: the membership that follows from a provisioned person

/// Brings the `members` row of the provisioned person `$scim_user_id` in line with their
/// record and groups, in transaction `$tx`, auditing what changed. Evaluates to
/// `Result<bool, sqlx::Error>`: whether an admin lost the role or the membership.
macro_rules! sync_membership {
    ($tx:expr, $account_id:expr, $scim_user_id:expr, $audit:expr) => {{
        async {
            type Row = (Option<String>, Option<String>, Option<bool>, String);
            let (user_id, email, active, kept): Row = sqlx::query_as(
                "SELECT s.user_id, u.email, s.active, s.role FROM scim_users s \
                 LEFT JOIN users u ON u.id = s.user_id WHERE s.id = $1",
            )
            .bind($scim_user_id)
            .fetch_one(&mut *$tx)
            .await?;
            // Nobody to sign in as: no membership to keep in line.
            let (Some(user_id), Some(email)) = (user_id, email) else {
                return Ok(false);
            };
            let active = active.unwrap_or(true);
            let (marked, in_marked): (i64, i64) = sqlx::query_as(
                "SELECT COUNT(*), COALESCE(SUM(CASE WHEN EXISTS (SELECT 1 FROM \
                 scim_group_members gm WHERE gm.group_id = g.id AND gm.scim_user_id = $2) \
                 THEN 1 ELSE 0 END), 0) FROM scim_groups g \
                 WHERE g.account_id = $1 AND g.grants_admin",
            )
            .bind($account_id)
            .bind($scim_user_id)
            .fetch_one(&mut *$tx)
            .await?;
            let groups = match (marked, in_marked) {
                (0, _) => AdminGroups::NoneMarked,
                (_, 0) => AdminGroups::InNone,
                _ => AdminGroups::InOne,
            };
            let kept = Role::parse(&kept).unwrap_or(Role::Member);
            let desired = provisioned_role(active, kept, groups);
            let current: Option<(String,)> =
                sqlx::query_as("SELECT role FROM members WHERE account_id = $1 AND user_id = $2")
                    .bind($account_id)
                    .bind(&user_id)
                    .fetch_optional(&mut *$tx)
                    .await?;
            let current = current.and_then(|(r,)| Role::parse(&r));
            let action = match (current, desired) {
                (None, None) => None,
                (Some(c), Some(d)) if c == d => None,
                (None, Some(d)) => {
                    sqlx::query(
                        "INSERT INTO members (account_id, user_id, role, added_at) \
                         VALUES ($1, $2, $3, $4)",
                    )
                    .bind($account_id)
                    .bind(&user_id)
                    .bind(d.as_str())
                    .bind($audit.at)
                    .execute(&mut *$tx)
                    .await?;
                    Some(Action::MemberAdded)
                }
                (Some(_), Some(d)) => {
                    sqlx::query(
                        "UPDATE members SET role = $3 WHERE account_id = $1 AND user_id = $2",
                    )
                    .bind($account_id)
                    .bind(&user_id)
                    .bind(d.as_str())
                    .execute(&mut *$tx)
                    .await?;
                    Some(Action::MemberRoleChanged)
                }
                (Some(_), None) => {
                    for sql in [
                        "DELETE FROM members WHERE account_id = $1 AND user_id = $2",
                        "DELETE FROM sessions WHERE account_id = $1 AND user_id = $2",
                        "DELETE FROM alert_prefs WHERE account_id = $1 AND user_id = $2",
                    ] {
                        sqlx::query(sql)
                            .bind($account_id)
                            .bind(&user_id)
                            .execute(&mut *$tx)
                            .await?;
                    }
                    Some(Action::MemberRemoved)
                }
            };
            if let Some(role) = desired {
                sqlx::query("UPDATE scim_users SET role = $2 WHERE id = $1")
                    .bind($scim_user_id)
                    .bind(role.as_str())
                    .execute(&mut *$tx)
                    .await?;
            }
            if let Some(action) = action {
                let change = Change {
                    account_id: Some($account_id),
                    action,
                    target: email,
                    before: current.map(|r| r.as_str().to_owned()),
                    after: desired.map(|r| r.as_str().to_owned()),
                };
                record_in!(&mut *$tx, $audit, change)?;
            }
            Ok::<bool, sqlx::Error>(current == Some(Role::Admin) && desired != Some(Role::Admin))
        }
        .await
    }};
}

/// Whether the account still has an admin, in transaction `$tx`.
macro_rules! has_admin {
    ($tx:expr, $account_id:expr) => {{
        let (admins,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM members WHERE account_id = $1 AND role = 'admin'")
                .bind($account_id)
                .fetch_one(&mut *$tx)
                .await?;
        admins > 0
    }};
}

/// Returns the last-admin refusal (the transaction, dropped, rolls back) when an admin was
/// lost and the account has none left.
macro_rules! refuse_if_adminless {
    ($tx:expr, $account_id:expr, $lost_admin:expr) => {
        if $lost_admin && !has_admin!($tx, $account_id) {
            return Ok(Err(Refusal::LastAdmin(LAST_ADMIN.to_owned())));
        }
    };
}

const LAST_ADMIN: &str = "this change would leave the account without an admin; make someone \
     else an admin in Tidemark (or add them to the admins' group) first";

/// The user id for `email`, creating the user if new.
macro_rules! ensure_user {
    ($tx:expr, $email:expr, $now:expr) => {{
        sqlx::query(ENSURE_USER_SQL)
            .bind(tidemark_domain::ids::new_user_id())
            .bind($email)
            .bind($now)
            .execute(&mut *$tx)
            .await?;
        let (id,): (String,) = sqlx::query_as("SELECT id FROM users WHERE email = $1")
            .bind($email)
            .fetch_one(&mut *$tx)
            .await?;
        id
    }};
}

/// A `uniqueness` refusal when another provisioned person of the account has `$user_name`
/// (case-insensitively) or signs in as `$user_id`.
macro_rules! user_conflict {
    ($tx:expr, $account_id:expr, $except:expr, $record:expr, $user_id:expr) => {{
        let taken: Option<(String, String)> = sqlx::query_as(
            "SELECT user_name_key, user_id FROM scim_users WHERE account_id = $1 AND id <> $2 \
             AND (user_name_key = $3 OR user_id = $4) LIMIT 1",
        )
        .bind($account_id)
        .bind($except)
        .bind($record.user_name_key())
        .bind($user_id)
        .fetch_optional(&mut *$tx)
        .await?;
        taken.map(|(key, _)| {
            let detail = if key == $record.user_name_key() {
                format!("userName {:?} is taken", $record.user_name)
            } else {
                "another provisioned person signs in with this e-mail address".to_owned()
            };
            Refusal::Scim(ScimError::new(ScimType::Uniqueness, detail))
        })
    }};
}

fn summary(record: &UserRecord) -> String {
    format!(
        "{} ({})",
        record.user_name,
        if record.is_active() {
            "active"
        } else {
            "inactive"
        }
    )
}

/// How the audit log names a provisioned person: their address, else their userName.
fn target(address: &Option<tidemark_domain::text::Email>, record: &UserRecord) -> String {
    address
        .as_ref()
        .map_or_else(|| record.user_name.clone(), |a| a.as_str().to_owned())
}

/// Provisions a person. Someone the account already has as a member is taken over with
/// their role.
pub async fn create_user(
    db: &Writer,
    account_id: &str,
    record: &UserRecord,
    audit: &AuditContext,
) -> Outcome<String> {
    let address = match record.address() {
        Ok(a) => a,
        Err(e) => return Ok(Err(e.into())),
    };
    let id = tidemark_domain::ids::new_scim_user_id();
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let user_id = match &address {
            Some(address) => Some(ensure_user!(tx, address.as_str(), audit.at)),
            None => None,
        };
        if let Some(refusal) = user_conflict!(tx, account_id, "", record, &user_id) {
            return Ok(Err(refusal));
        }
        let existing: Option<(String,)> =
            sqlx::query_as("SELECT role FROM members WHERE account_id = $1 AND user_id = $2")
                .bind(account_id)
                .bind(&user_id)
                .fetch_optional(&mut *tx)
                .await?;
        let role = existing
            .and_then(|(r,)| Role::parse(&r))
            .unwrap_or(Role::Member);
        sqlx::query(
            "INSERT INTO scim_users (id, account_id, user_id, user_name, user_name_key, \
             external_id, display_name, given_name, family_name, work_email, email_type, \
             email_primary, active, role, created_at, updated_at, version) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, 1)",
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
        .execute(&mut *tx)
        .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimUserProvisioned,
            target: target(&address, record),
            before: None,
            after: Some(summary(record)),
        };
        record_in!(&mut *tx, audit, change)?;
        // Taking over the last admin as a deactivated person would remove them.
        let lost_admin = sync_membership!(tx, account_id, &id, audit)?;
        refuse_if_adminless!(tx, account_id, lost_admin);
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(id))
    })?;
    Ok(outcome)
}

/// Replaces a person's record with what `change` makes of it (a PUT's body, or a PATCH
/// applied to the current record), in one transaction.
pub async fn update_user(
    db: &Writer,
    account_id: &str,
    id: &str,
    change: impl Fn(UserRecord) -> Result<UserRecord, ScimError>,
    audit: &AuditContext,
) -> Outcome<()> {
    let sql = format!("SELECT {USER_COLUMNS} FROM scim_users WHERE account_id = $1 AND id = $2");
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<UserRow> = sqlx::query_as(&sql)
            .bind(account_id)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(Err(Refusal::NotFound));
        };
        let old_user_id = row.user_id.clone();
        let before = match row.into_user(Vec::new()) {
            Ok(user) => user.record,
            Err(e) => return Err(e),
        };
        let after = match change(before.clone()) {
            Ok(after) => after,
            Err(e) => return Ok(Err(e.into())),
        };
        if after == before {
            return Ok(Ok(()));
        }
        let address = match after.address() {
            Ok(a) => a,
            Err(e) => return Ok(Err(e.into())),
        };
        let user_id = match &address {
            Some(address) => Some(ensure_user!(tx, address.as_str(), audit.at)),
            None => None,
        };
        if let Some(refusal) = user_conflict!(tx, account_id, id, &after, &user_id) {
            return Ok(Err(refusal));
        }
        let mut lost_admin = false;
        if user_id != old_user_id {
            // A new address is another Tidemark user: the old one's membership ends first.
            sqlx::query("UPDATE scim_users SET active = FALSE WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            lost_admin |= sync_membership!(tx, account_id, id, audit)?;
        }
        sqlx::query(
            "UPDATE scim_users SET user_id = $2, user_name = $3, user_name_key = $4, \
             external_id = $5, display_name = $6, given_name = $7, family_name = $8, \
             work_email = $9, email_type = $10, email_primary = $11, active = $12, \
             updated_at = $13, version = version + 1 WHERE id = $1",
        )
        .bind(id)
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
        .execute(&mut *tx)
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
        record_in!(&mut *tx, audit, change)?;
        lost_admin |= sync_membership!(tx, account_id, id, audit)?;
        refuse_if_adminless!(tx, account_id, lost_admin);
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}

/// Deletes a provisioned person: their membership ends; the user (and memberships in other
/// accounts) stay.
pub async fn delete_user(
    db: &Writer,
    account_id: &str,
    id: &str,
    audit: &AuditContext,
) -> Outcome<()> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT s.user_name, u.email FROM scim_users s LEFT JOIN users u ON u.id = s.user_id \
             WHERE s.account_id = $1 AND s.id = $2",
        )
        .bind(account_id)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((user_name, email)) = row else {
            return Ok(Err(Refusal::NotFound));
        };
        sqlx::query("UPDATE scim_users SET active = FALSE WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let lost_admin = sync_membership!(tx, account_id, id, audit)?;
        refuse_if_adminless!(tx, account_id, lost_admin);
        sqlx::query("DELETE FROM scim_group_members WHERE scim_user_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM scim_users WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimUserDeleted,
            target: email.unwrap_or_else(|| user_name.clone()),
            before: Some(user_name),
            after: None,
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}

// ---------------------------------------------------------------------------------------
// Writing groups

/// Writes `$group_id`'s member set (`$members`, scim user ids), refusing ids that are not
/// people of this account, then re-syncs everyone whose membership of it changed.
/// Evaluates to `Result<Result<bool, Refusal>, sqlx::Error>` (whether an admin was lost).
macro_rules! write_members {
    ($tx:expr, $account_id:expr, $group_id:expr, $members:expr, $audit:expr) => {{
        async {
            let members: &BTreeSet<String> = $members;
            let known: Vec<(String,)> =
                sqlx::query_as("SELECT id FROM scim_users WHERE account_id = $1")
                    .bind($account_id)
                    .fetch_all(&mut *$tx)
                    .await?;
            let known: BTreeSet<String> = known.into_iter().map(|(id,)| id).collect();
            if let Some(unknown) = members.iter().find(|m| !known.contains(*m)) {
                return Ok(Err(Refusal::Scim(ScimError::new(
                    ScimType::InvalidValue,
                    format!("member {unknown:?} is not a provisioned user of this account"),
                ))));
            }
            let current: Vec<(String,)> =
                sqlx::query_as("SELECT scim_user_id FROM scim_group_members WHERE group_id = $1")
                    .bind($group_id)
                    .fetch_all(&mut *$tx)
                    .await?;
            let current: BTreeSet<String> = current.into_iter().map(|(id,)| id).collect();
            for gone in current.difference(members) {
                sqlx::query(
                    "DELETE FROM scim_group_members WHERE group_id = $1 AND scim_user_id = $2",
                )
                .bind($group_id)
                .bind(gone)
                .execute(&mut *$tx)
                .await?;
            }
            for new in members.difference(&current) {
                sqlx::query(
                    "INSERT INTO scim_group_members (group_id, scim_user_id) VALUES ($1, $2)",
                )
                .bind($group_id)
                .bind(new)
                .execute(&mut *$tx)
                .await?;
            }
            let mut lost_admin = false;
            for touched in current.symmetric_difference(members) {
                lost_admin |= sync_membership!($tx, $account_id, touched, $audit)?;
            }
            Ok::<_, sqlx::Error>(Ok(lost_admin))
        }
        .await
    }};
}

/// Re-syncs every provisioned person of the account (after the set of admin groups changed).
macro_rules! sync_everyone {
    ($tx:expr, $account_id:expr, $audit:expr) => {{
        let everyone: Vec<(String,)> =
            sqlx::query_as("SELECT id FROM scim_users WHERE account_id = $1")
                .bind($account_id)
                .fetch_all(&mut *$tx)
                .await?;
        let mut lost_admin = false;
        for (id,) in everyone {
            lost_admin |= sync_membership!($tx, $account_id, &id, $audit)?;
        }
        lost_admin
    }};
}

/// A `uniqueness` refusal when another group of the account has `$record`'s name.
macro_rules! group_conflict {
    ($tx:expr, $account_id:expr, $except:expr, $record:expr) => {{
        let taken: Option<(String,)> = sqlx::query_as(
            "SELECT id FROM scim_groups WHERE account_id = $1 AND id <> $2 \
             AND display_name_key = $3",
        )
        .bind($account_id)
        .bind($except)
        .bind($record.display_name_key())
        .fetch_optional(&mut *$tx)
        .await?;
        taken.map(|_| {
            Refusal::Scim(ScimError::new(
                ScimType::Uniqueness,
                format!("a group named {:?} exists", $record.display_name),
            ))
        })
    }};
}

pub async fn create_group(
    db: &Writer,
    account_id: &str,
    record: &GroupRecord,
    members: &BTreeSet<String>,
    audit: &AuditContext,
) -> Outcome<String> {
    let id = tidemark_domain::ids::new_scim_group_id();
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        if let Some(refusal) = group_conflict!(tx, account_id, "", record) {
            return Ok(Err(refusal));
        }
        sqlx::query(
            "INSERT INTO scim_groups (id, account_id, display_name, display_name_key, \
             external_id, grants_admin, created_at, updated_at, version) \
             VALUES ($1, $2, $3, $4, $5, FALSE, $6, $6, 1)",
        )
        .bind(&id)
        .bind(account_id)
        .bind(&record.display_name)
        .bind(record.display_name_key())
        .bind(&record.external_id)
        .bind(audit.at)
        .execute(&mut *tx)
        .await?;
        if let Err(refusal) = write_members!(tx, account_id, &id, members, audit)? {
            return Ok(Err(refusal));
        }
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimGroupCreated,
            target: record.display_name.clone(),
            before: None,
            after: Some(format!("{} members", members.len())),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(id))
    })?;
    Ok(outcome)
}

/// Replaces a group's record and members with what `change` makes of them.
pub async fn update_group(
    db: &Writer,
    account_id: &str,
    id: &str,
    change: impl Fn(GroupRecord, BTreeSet<String>) -> Result<(GroupRecord, BTreeSet<String>), ScimError>,
    audit: &AuditContext,
) -> Outcome<()> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM scim_groups WHERE account_id = $1 AND id = $2");
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<GroupRow> = sqlx::query_as(&sql)
            .bind(account_id)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(Err(Refusal::NotFound));
        };
        let members: Vec<(String,)> =
            sqlx::query_as("SELECT scim_user_id FROM scim_group_members WHERE group_id = $1")
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
        let before_members: BTreeSet<String> = members.into_iter().map(|(m,)| m).collect();
        let before = row.into_group(Vec::new()).record;
        let (after, after_members) = match change(before.clone(), before_members.clone()) {
            Ok(next) => next,
            Err(e) => return Ok(Err(e.into())),
        };
        if after == before && after_members == before_members {
            return Ok(Ok(()));
        }
        if let Some(refusal) = group_conflict!(tx, account_id, id, &after) {
            return Ok(Err(refusal));
        }
        sqlx::query(
            "UPDATE scim_groups SET display_name = $2, display_name_key = $3, external_id = $4, \
             updated_at = $5, version = version + 1 WHERE id = $1",
        )
        .bind(id)
        .bind(&after.display_name)
        .bind(after.display_name_key())
        .bind(&after.external_id)
        .bind(audit.at)
        .execute(&mut *tx)
        .await?;
        let lost_admin = match write_members!(tx, account_id, id, &after_members, audit)? {
            Ok(lost) => lost,
            Err(refusal) => return Ok(Err(refusal)),
        };
        refuse_if_adminless!(tx, account_id, lost_admin);
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimGroupChanged,
            target: after.display_name.clone(),
            before: Some(format!("{} members", before_members.len())),
            after: Some(format!("{} members", after_members.len())),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}

pub async fn delete_group(
    db: &Writer,
    account_id: &str,
    id: &str,
    audit: &AuditContext,
) -> Outcome<()> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<(String,)> = sqlx::query_as(
            "SELECT display_name FROM scim_groups WHERE account_id = $1 AND id = $2",
        )
        .bind(account_id)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((name,)) = row else {
            return Ok(Err(Refusal::NotFound));
        };
        let empty = BTreeSet::new();
        let lost_admin = match write_members!(tx, account_id, id, &empty, audit)? {
            Ok(lost) => lost,
            Err(refusal) => return Ok(Err(refusal)),
        };
        sqlx::query("DELETE FROM scim_groups WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        // The last admin group gone: roles are no longer the groups' to decide.
        let lost_admin = lost_admin | sync_everyone!(tx, account_id, audit);
        refuse_if_adminless!(tx, account_id, lost_admin);
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimGroupDeleted,
            target: name,
            before: None,
            after: None,
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}

/// Marks (or unmarks) a group as the one whose members are the account's admins, and
/// applies what that means to every provisioned person at once.
pub async fn set_group_admin(
    db: &Writer,
    account_id: &str,
    id: &str,
    grants_admin: bool,
    audit: &AuditContext,
) -> Outcome<()> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let row: Option<(String, bool)> = sqlx::query_as(
            "SELECT display_name, grants_admin FROM scim_groups \
             WHERE account_id = $1 AND id = $2",
        )
        .bind(account_id)
        .bind(id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((name, was)) = row else {
            return Ok(Err(Refusal::NotFound));
        };
        if was == grants_admin {
            return Ok(Ok(()));
        }
        sqlx::query("UPDATE scim_groups SET grants_admin = $2 WHERE id = $1")
            .bind(id)
            .bind(grants_admin)
            .execute(&mut *tx)
            .await?;
        let lost_admin = sync_everyone!(tx, account_id, audit);
        refuse_if_adminless!(tx, account_id, lost_admin);
        let label = |on: bool| if on { "gives admin" } else { "gives member" }.to_owned();
        let change = Change {
            account_id: Some(account_id),
            action: Action::ScimGroupAdminSet,
            target: name,
            before: Some(label(was)),
            after: Some(label(grants_admin)),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}
