//! Dashboard access: users, the sign-in identities bound to them, and account membership.

use crate::AccountId;
use tidemark_domain::access::Role;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::text::Email;
use tidemark_domain::Millis;

use crate::audit::{record_in, Change};
use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

/// `$1` id, `$2` lower-case e-mail, `$3` now: creates the user unless the address is known.
pub(crate) const ENSURE_USER_SQL: &str =
    "INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3) ON CONFLICT (email) DO NOTHING";

/// `$1` account, `$2` role, `$3` now, `$4` e-mail: adds that user unless already a member.
pub(crate) const ADD_MEMBER_SQL: &str =
    "INSERT INTO members (account_id, user_id, role, added_at) \
     SELECT $1, id, $2, $3 FROM users WHERE email = $4 ON CONFLICT DO NOTHING";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub user_id: String,
    pub email: String,
    pub role: Role,
    pub added_at: Millis,
    /// Last sign-in through any identity, if ever.
    pub last_login_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct MemberRow {
    user_id: String,
    email: String,
    role: String,
    added_at: i64,
    last_login_at: Option<i64>,
}

impl TryFrom<MemberRow> for Member {
    type Error = StoreError;
    fn try_from(row: MemberRow) -> Result<Self, StoreError> {
        Ok(Member {
            role: Role::parse(&row.role).ok_or(StoreError::Corrupt("members.role"))?,
            user_id: row.user_id,
            email: row.email,
            added_at: row.added_at,
            last_login_at: row.last_login_at,
        })
    }
}

const MEMBER_SELECT: &str = "SELECT m.user_id, u.email, m.role, m.added_at, \
     (SELECT MAX(i.last_login_at) FROM identities i WHERE i.user_id = m.user_id) AS last_login_at \
     FROM members m JOIN users u ON u.id = m.user_id";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MembershipError {
    #[error("{0} is already a member of this account")]
    AlreadyMember(String),
    #[error("no such member")]
    NotMember,
    #[error("an account must keep at least one admin")]
    LastAdmin,
    #[error("{0} is provisioned by your identity provider (SCIM): change or remove them there")]
    ManagedByScim(String),
}

/// `$1` account, `$2` e-mail: whether the account's IdP provisions that person (SCIM).
const MANAGED_BY_EMAIL_SQL: &str = "SELECT COUNT(*) FROM scim_users s      JOIN users u ON u.id = s.user_id WHERE s.account_id = $1 AND u.email = $2";

/// Adds `email` to the account with `role`, creating the user if needed.
pub async fn add_member(
    db: &Writer,
    account_id: &AccountId,
    email: &Email,
    role: Role,
    audit: &AuditContext,
) -> Result<Result<Member, MembershipError>, StoreError> {
    let now = audit.at;
    let added = on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        let (managed,): (i64,) = sqlx::query_as(MANAGED_BY_EMAIL_SQL)
            .bind(account_id)
            .bind(email.as_str())
            .fetch_one(&mut *tx)
            .await?;
        if managed > 0 {
            return Ok(Err(MembershipError::ManagedByScim(email.as_str().to_owned())));
        }
        sqlx::query(ENSURE_USER_SQL)
            .bind(tidemark_domain::ids::new_user_id())
            .bind(email.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let inserted = sqlx::query(ADD_MEMBER_SQL)
            .bind(account_id)
            .bind(role.as_str())
            .bind(now)
            .bind(email.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if inserted == 1 {
            let change = Change {
                account_id: Some(account_id),
                action: Action::MemberAdded,
                target: email.as_str().to_owned(),
                before: None,
                after: Some(role.as_str().to_owned()),
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(inserted == 1)
    })?;
    if !added {
        return Ok(Err(MembershipError::AlreadyMember(
            email.as_str().to_owned(),
        )));
    }
    let member = find_member_by_email(db, account_id, email).await?;
    Ok(member.ok_or(MembershipError::NotMember))
}

pub async fn find_member_by_email(
    db: &Db,
    account_id: &AccountId,
    email: &Email,
) -> Result<Option<Member>, StoreError> {
    let sql = format!("{MEMBER_SELECT} WHERE m.account_id = $1 AND u.email = $2");
    let row: Option<MemberRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).bind(email.as_str()).fetch_optional(pool).await
    })?;
    row.map(Member::try_from).transpose()
}

pub async fn find_member(
    db: &Db,
    account_id: &AccountId,
    user_id: &str,
) -> Result<Option<Member>, StoreError> {
    let sql = format!("{MEMBER_SELECT} WHERE m.account_id = $1 AND m.user_id = $2");
    let row: Option<MemberRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).bind(user_id).fetch_optional(pool).await
    })?;
    row.map(Member::try_from).transpose()
}

pub async fn list_members(db: &Db, account_id: &AccountId) -> Result<Vec<Member>, StoreError> {
    let sql = format!("{MEMBER_SELECT} WHERE m.account_id = $1 ORDER BY u.email");
    let rows: Vec<MemberRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    rows.into_iter().map(Member::try_from).collect()
}

/// An account a user belongs to, named the way people know it (its license).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountOfUser {
    pub account_id: AccountId,
    pub role: Role,
    pub license_email: Option<String>,
    pub tier: Option<String>,
}

#[derive(sqlx::FromRow)]
struct AccountOfUserRow {
    account_id: AccountId,
    role: String,
    license_email: Option<String>,
    tier: Option<String>,
}

/// The accounts a user belongs to, named for the account switcher: the one used last first
/// (sign-in or the switcher), then the rest oldest first.
pub async fn accounts_of(db: &Db, user_id: &str) -> Result<Vec<AccountOfUser>, StoreError> {
    let rows: Vec<AccountOfUserRow> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT m.account_id, m.role, l.email AS license_email, l.tier \
             FROM members m JOIN accounts a ON a.id = m.account_id \
             LEFT JOIN licenses l ON l.account_id = m.account_id \
             WHERE m.user_id = $1 \
             ORDER BY CASE WHEN m.last_used_at IS NULL THEN 1 ELSE 0 END, m.last_used_at DESC, \
                      a.created_at, a.id",
        )
        .bind(user_id)
        .fetch_all(pool)
        .await
    })?;
    rows.into_iter()
        .map(|r| {
            Ok(AccountOfUser {
                role: Role::parse(&r.role).ok_or(StoreError::Corrupt("members.role"))?,
                account_id: r.account_id,
                license_email: r.license_email,
                tier: r.tier,
            })
        })
        .collect()
}

/// Notes that the member has just entered the account (signed in, or switched to it).
pub async fn mark_account_used(
    db: &Writer,
    account_id: &AccountId,
    user_id: &str,
    now: Millis,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query("UPDATE members SET last_used_at = $3 WHERE account_id = $1 AND user_id = $2")
            .bind(account_id)
            .bind(user_id)
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
    })?;
    Ok(())
}

/// Changes a member's role, or removes them (`None`), ending their sessions on this account.
/// The last admin can be neither demoted nor removed.
pub async fn change_member(
    db: &Writer,
    account_id: &AccountId,
    user_id: &str,
    role: Option<Role>,
    audit: &AuditContext,
) -> Result<Result<(), MembershipError>, StoreError> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let current: Option<(String, String)> = sqlx::query_as(
            "SELECT m.role, u.email FROM members m JOIN users u ON u.id = m.user_id \
             WHERE m.account_id = $1 AND m.user_id = $2",
        )
        .bind(account_id)
        .bind(user_id)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((current, email)) = current else {
            return Ok(Err(MembershipError::NotMember));
        };
        let (managed,): (i64,) = sqlx::query_as(MANAGED_BY_EMAIL_SQL)
            .bind(account_id)
            .bind(&email)
            .fetch_one(&mut *tx)
            .await?;
        if managed > 0 {
            return Ok(Err(MembershipError::ManagedByScim(email)));
        }
        if current == "admin" && role != Some(Role::Admin) {
            let (admins,): (i64,) = sqlx::query_as(
                "SELECT COUNT(*) FROM members WHERE account_id = $1 AND role = 'admin'",
            )
            .bind(account_id)
            .fetch_one(&mut *tx)
            .await?;
            if admins <= 1 {
                return Ok(Err(MembershipError::LastAdmin));
            }
        }
        match role {
            Some(role) => {
                sqlx::query("UPDATE members SET role = $1 WHERE account_id = $2 AND user_id = $3")
                    .bind(role.as_str())
                    .bind(account_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
            }
            None => {
                sqlx::query("DELETE FROM members WHERE account_id = $1 AND user_id = $2")
                    .bind(account_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM sessions WHERE account_id = $1 AND user_id = $2")
                    .bind(account_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query("DELETE FROM alert_prefs WHERE account_id = $1 AND user_id = $2")
                    .bind(account_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let change = Change {
            account_id: Some(account_id),
            action: match role {
                Some(_) => Action::MemberRoleChanged,
                None => Action::MemberRemoved,
            },
            target: email,
            before: Some(current),
            after: role.map(|r| r.as_str().to_owned()),
        };
        // Making an admin an admin again changes nothing worth a record.
        if change.before != change.after {
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Ok(()))
    })?;
    Ok(outcome)
}

/// Who a sign-in identity is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdentityOutcome {
    /// The identity is bound to this user (now, or from an earlier sign-in).
    User(String),
    /// First sign-in, and the provider did not vouch for the e-mail address.
    EmailUnverified,
    /// Nobody with this address was ever added to an account.
    UnknownEmail,
    /// The address already belongs to a different identity of the same provider.
    BoundElsewhere,
}

/// Where an identity comes from. The two kinds never share a namespace: a SAML IdP that
/// declares an OpenID issuer's URL as its entity id still cannot reach an OIDC identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityProvider<'a> {
    /// An OpenID Connect issuer (`iss`).
    Oidc { issuer: &'a str },
    /// A SAML connection: one account's verified claim of one domain (its id).
    Saml { connection_id: &'a str },
}

impl IdentityProvider<'_> {
    fn parts(&self) -> (&'static str, &str) {
        match self {
            IdentityProvider::Oidc { issuer } => ("oidc", issuer),
            IdentityProvider::Saml { connection_id } => ("saml", connection_id),
        }
    }
}

/// The subject an identity provider asserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    /// A stable id (OIDC `sub`, a persistent or e-mail SAML NameID): bound on first sign-in.
    Stable(&'a str),
    /// A SAML transient NameID, new at every sign-in: never bound; the person is found by
    /// the verified e-mail address each time.
    Transient,
}

/// Finds the user behind (provider, subject), binding it on first sign-in to the user with
/// the verified e-mail address. An e-mail is never trusted again once the pair is bound.
pub async fn resolve_identity(
    db: &Writer,
    provider: IdentityProvider<'_>,
    subject: Subject<'_>,
    verified_email: Option<&Email>,
    now: Millis,
) -> Result<IdentityOutcome, StoreError> {
    let (kind, issuer) = provider.parts();
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        let bound: Option<(String,)> = match subject {
            Subject::Stable(subject) => {
                sqlx::query_as(
                    "UPDATE identities SET last_login_at = $4 \
                     WHERE provider = $1 AND issuer = $2 AND subject = $3 RETURNING user_id",
                )
                .bind(kind)
                .bind(issuer)
                .bind(subject)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?
            }
            Subject::Transient => None,
        };
        let outcome = if let Some((user_id,)) = bound {
            IdentityOutcome::User(user_id)
        } else if let Some(email) = verified_email {
            let user: Option<(String,)> = sqlx::query_as("SELECT id FROM users WHERE email = $1")
                .bind(email.as_str())
                .fetch_optional(&mut *tx)
                .await?;
            match (user, subject) {
                (None, _) => IdentityOutcome::UnknownEmail,
                (Some((user_id,)), Subject::Transient) => IdentityOutcome::User(user_id),
                (Some((user_id,)), Subject::Stable(subject)) => {
                    let (others,): (i64,) = sqlx::query_as(
                        "SELECT COUNT(*) FROM identities \
                         WHERE user_id = $1 AND provider = $2 AND issuer = $3",
                    )
                    .bind(&user_id)
                    .bind(kind)
                    .bind(issuer)
                    .fetch_one(&mut *tx)
                    .await?;
                    if others > 0 {
                        IdentityOutcome::BoundElsewhere
                    } else {
                        sqlx::query(
                            "INSERT INTO identities (provider, issuer, subject, user_id, \
                             created_at, last_login_at) VALUES ($1, $2, $3, $4, $5, $5)",
                        )
                        .bind(kind)
                        .bind(issuer)
                        .bind(subject)
                        .bind(&user_id)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                        IdentityOutcome::User(user_id)
                    }
                }
            }
        } else {
            IdentityOutcome::EmailUnverified
        };
        tx.commit().await?;
        Ok::<_, sqlx::Error>(outcome)
    })?;
    Ok(outcome)
}

pub async fn user_email(db: &Db, user_id: &str) -> Result<Option<String>, StoreError> {
    let row: Option<(String,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT email FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(pool)
            .await
    })?;
    Ok(row.map(|(email,)| email))
}

/// The accounts a user belongs to with their role, in the order of [`accounts_of`].
pub async fn memberships_of(db: &Db, user_id: &str) -> Result<Vec<(AccountId, Role)>, StoreError> {
    Ok(accounts_of(db, user_id)
        .await?
        .into_iter()
        .map(|a| (a.account_id, a.role))
        .collect())
}
