//! SAML single sign-on connections: an account's claim of an e-mail domain and the IdP its
//! people should use. Only a verified claim routes or enforces anything, and a domain has at
//! most one (a partial unique index), so the rules hold on every replica without a lock:
//! claiming and verifying are each one conditional statement.

use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::sso::{ClaimState, ClaimableDomain};
use tidemark_domain::Millis;

use crate::audit::{record_in, Change};
use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoConnection {
    pub id: String,
    pub account_id: AccountId,
    pub domain: String,
    pub state: ClaimState,
    /// The TXT value the domain must publish is `tidemark-domain-verification=<token>`.
    pub challenge_token: String,
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    /// Base64 DER of each signing certificate the IdP metadata names.
    pub signing_certs: Vec<String>,
    /// Refuse OpenID Connect sign-in for this domain (once verified).
    pub enforce: bool,
    pub metadata_xml: String,
    pub created_at: Millis,
    pub updated_at: Millis,
    pub verified_at: Option<Millis>,
    pub checked_at: Option<Millis>,
    /// What the last look-up found, in words for the admin.
    pub check_message: Option<String>,
    pub next_check_at: Option<Millis>,
    pub ended_reason: Option<String>,
}

#[derive(sqlx::FromRow)]
struct ConnectionRow {
    id: String,
    account_id: AccountId,
    domain: String,
    state: String,
    challenge_token: String,
    idp_entity_id: String,
    idp_sso_url: String,
    signing_certs: String,
    enforce: bool,
    metadata_xml: String,
    created_at: i64,
    updated_at: i64,
    verified_at: Option<i64>,
    checked_at: Option<i64>,
    check_message: Option<String>,
    next_check_at: Option<i64>,
    ended_reason: Option<String>,
}

impl TryFrom<ConnectionRow> for SsoConnection {
    type Error = StoreError;
    fn try_from(r: ConnectionRow) -> Result<Self, StoreError> {
        Ok(SsoConnection {
            state: ClaimState::parse(&r.state)
                .ok_or(StoreError::Corrupt("sso_connections.state"))?,
            id: r.id,
            account_id: r.account_id,
            domain: r.domain,
            challenge_token: r.challenge_token,
            idp_entity_id: r.idp_entity_id,
            idp_sso_url: r.idp_sso_url,
            signing_certs: r.signing_certs.lines().map(str::to_owned).collect(),
            enforce: r.enforce,
            metadata_xml: r.metadata_xml,
            created_at: r.created_at,
            updated_at: r.updated_at,
            verified_at: r.verified_at,
            checked_at: r.checked_at,
            check_message: r.check_message,
            next_check_at: r.next_check_at,
            ended_reason: r.ended_reason,
        })
    }
}

const COLUMNS: &str = "id, account_id, domain, state, challenge_token, idp_entity_id, \
     idp_sso_url, signing_certs, enforce, metadata_xml, created_at, updated_at, verified_at, \
     checked_at, check_message, next_check_at, ended_reason";

/// Sessions of users whose address is at `$1`: a change of who signs the domain in ends them.
const END_DOMAIN_SESSIONS: &str = "DELETE FROM sessions WHERE user_id IN \
     (SELECT id FROM users WHERE substr(email, length(email) - length($1)) = '@' || $1)";

/// `$1` domain, `$2` the winning claim, `$3` now: every other live claim on the domain ends.
const END_OTHER_CLAIMS: &str = "UPDATE sso_connections SET state = 'ended', \
     ended_reason = 'Another account proved that it owns this domain first.', \
     next_check_at = NULL, updated_at = $3 \
     WHERE domain = $1 AND id <> $2 AND state = 'pending'";

/// The SAML identities bound through the account's connection for a domain, when its IdP is
/// being replaced: `$1` account, `$2` domain, `$3` new entity id, `$4` new certificates.
const UNBIND_IF_IDP_CHANGES: &str = "DELETE FROM identities WHERE provider = 'saml' AND issuer IN \
     (SELECT id FROM sso_connections WHERE account_id = $1 AND domain = $2 \
      AND (idp_entity_id <> $3 OR signing_certs <> $4))";

/// Every SAML identity bound through a connection on `$1` (the domain), optionally only the
/// one of account `$2`.
const UNBIND_DOMAIN: &str = "DELETE FROM identities WHERE provider = 'saml' AND issuer IN \
     (SELECT id FROM sso_connections WHERE domain = $1 AND ($2 IS NULL OR account_id = $2))";

/// What a claim says about the IdP.
#[derive(Debug, Clone)]
pub struct NewClaim<'a> {
    pub account_id: &'a AccountId,
    pub domain: &'a ClaimableDomain,
    pub idp_entity_id: &'a str,
    pub idp_sso_url: &'a str,
    pub signing_certs: &'a [String],
    pub enforce: bool,
    pub metadata_xml: &'a str,
    pub now: Millis,
}

/// Who vouches for the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vouched {
    /// An admin in Settings: the claim waits for its DNS record.
    ByDnsRecord,
    /// The operator (`tidemark-server sso set`), who checked ownership out of band: verified
    /// at once.
    ByOperator,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Stored: a new claim, a revived ended one, or an updated IdP on a live one.
    Stored(Box<SsoConnection>),
    /// Another account has already proved that it owns the domain.
    VerifiedByAnotherAccount,
}

/// Claims `domain` for the account, or updates the IdP of its existing claim. One conditional
/// statement decides: a domain verified by another account refuses, whatever runs beside it.
/// Replacing the IdP (another entity id or certificate) unbinds the connection's identities.
pub async fn claim(
    db: &Writer,
    new: &NewClaim<'_>,
    vouched: Vouched,
    audit: &AuditContext,
) -> Result<ClaimOutcome, StoreError> {
    let (state, verified_at, next_check_at) = match vouched {
        Vouched::ByDnsRecord => (ClaimState::Pending, None, Some(new.now)),
        Vouched::ByOperator => (ClaimState::Verified, Some(new.now), None),
    };
    let certs = new.signing_certs.join("\n");
    let sql = format!(
        "INSERT INTO sso_connections (id, account_id, domain, state, challenge_token, \
         idp_entity_id, idp_sso_url, signing_certs, enforce, metadata_xml, created_at, \
         updated_at, verified_at, next_check_at) \
         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13 \
         WHERE NOT EXISTS (SELECT 1 FROM sso_connections WHERE domain = $3 \
             AND state = 'verified' AND account_id <> $2) \
         ON CONFLICT (account_id, domain) DO UPDATE SET \
           state = CASE WHEN excluded.state = 'verified' THEN 'verified' \
                        WHEN sso_connections.state = 'ended' THEN 'pending' \
                        ELSE sso_connections.state END, \
           challenge_token = CASE WHEN sso_connections.state = 'ended' \
                        THEN excluded.challenge_token ELSE sso_connections.challenge_token END, \
           created_at = CASE WHEN sso_connections.state = 'ended' \
                        THEN excluded.created_at ELSE sso_connections.created_at END, \
           check_message = CASE WHEN sso_connections.state = 'ended' \
                        THEN NULL ELSE sso_connections.check_message END, \
           verified_at = COALESCE(sso_connections.verified_at, excluded.verified_at), \
           next_check_at = CASE WHEN excluded.state = 'verified' \
                                  OR sso_connections.state = 'verified' THEN NULL \
                        ELSE excluded.next_check_at END, \
           ended_reason = NULL, \
           idp_entity_id = excluded.idp_entity_id, idp_sso_url = excluded.idp_sso_url, \
           signing_certs = excluded.signing_certs, enforce = excluded.enforce, \
           metadata_xml = excluded.metadata_xml, updated_at = excluded.updated_at \
         WHERE NOT EXISTS (SELECT 1 FROM sso_connections o WHERE o.domain = $3 \
             AND o.state = 'verified' AND o.account_id <> $2) \
         RETURNING {COLUMNS}"
    );
    let stored = on_db_write!(db, pool => async {
        let mut tx = pool.begin_domain_write(new.domain.as_str()).await?;
        // A different IdP is a different authority: what the old one vouched for goes.
        sqlx::query(UNBIND_IF_IDP_CHANGES)
            .bind(new.account_id)
            .bind(new.domain.as_str())
            .bind(new.idp_entity_id)
            .bind(&certs)
            .execute(&mut *tx)
            .await?;
        let row: Option<ConnectionRow> = sqlx::query_as(&sql)
            .bind(tidemark_domain::ids::new_sso_connection_id())
            .bind(new.account_id)
            .bind(new.domain.as_str())
            .bind(state.as_str())
            .bind(tidemark_domain::sso::new_challenge_token())
            .bind(new.idp_entity_id)
            .bind(new.idp_sso_url)
            .bind(&certs)
            .bind(new.enforce)
            .bind(new.metadata_xml)
            .bind(new.now)
            .bind(verified_at)
            .bind(next_check_at)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = &row {
            if row.state == "verified" {
                sqlx::query(END_OTHER_CLAIMS)
                    .bind(&row.domain)
                    .bind(&row.id)
                    .bind(new.now)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(END_DOMAIN_SESSIONS).bind(&row.domain).execute(&mut *tx).await?;
            }
            let change = Change {
                account_id: Some(new.account_id),
                action: Action::SsoClaimed,
                target: row.domain.clone(),
                before: None,
                after: Some(format!(
                    "{}; IdP {}; enforce {}",
                    row.state,
                    new.idp_entity_id,
                    if new.enforce { "on" } else { "off" }
                )),
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(row)
    }
    .await);
    match stored {
        Ok(Some(row)) => Ok(ClaimOutcome::Stored(Box::new(row.try_into()?))),
        Ok(None) => Ok(ClaimOutcome::VerifiedByAnotherAccount),
        // PostgreSQL: another account's verification committed while this statement ran.
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            Ok(ClaimOutcome::VerifiedByAnotherAccount)
        }
        Err(e) => Err(e.into()),
    }
}

/// What "Verify now" or a background check concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// This claim now owns the domain; every other claim on it has ended.
    Verified(Box<SsoConnection>),
    /// Another account proved ownership first: this claim has ended.
    LostToAnotherAccount,
    /// Nothing to verify: no such claim, or it is not pending.
    NotPending,
}

/// Marks a pending claim verified, if no claim on its domain is. One conditional statement
/// (and the unique index behind it) makes the first verifier the only one.
pub async fn verify(
    db: &Writer,
    connection_id: &str,
    audit: &AuditContext,
) -> Result<VerifyOutcome, StoreError> {
    let now = audit.at;
    let sql = format!(
        "UPDATE sso_connections SET state = 'verified', verified_at = $2, checked_at = $2, \
         check_message = NULL, next_check_at = NULL, updated_at = $2 \
         WHERE id = $1 AND state = 'pending' AND NOT EXISTS (SELECT 1 FROM sso_connections o \
             WHERE o.domain = sso_connections.domain AND o.state = 'verified') \
         RETURNING {COLUMNS}"
    );
    // A claim's domain never changes: read it to take the domain's lock.
    let Some(claim) = find_connection(db, connection_id).await? else {
        return Ok(VerifyOutcome::NotPending);
    };
    let won = on_db_write!(db, pool => async {
        let mut tx = pool.begin_domain_write(&claim.domain).await?;
        let row: Option<ConnectionRow> =
            sqlx::query_as(&sql).bind(connection_id).bind(now).fetch_optional(&mut *tx).await?;
        if let Some(row) = &row {
            sqlx::query(END_OTHER_CLAIMS)
                .bind(&row.domain)
                .bind(&row.id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            // Enforcement starts now: OpenID Connect sessions at the domain end. Without it
            // they stay valid (the admin who pressed "Verify now" stays signed in).
            if row.enforce {
                sqlx::query(END_DOMAIN_SESSIONS).bind(&row.domain).execute(&mut *tx).await?;
            }
            let change = Change {
                account_id: Some(&row.account_id),
                action: Action::SsoVerified,
                target: row.domain.clone(),
                before: Some("pending".to_owned()),
                after: Some("verified".to_owned()),
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<_, sqlx::Error>(row)
    }
    .await);
    let lost = match won {
        Ok(Some(row)) => return Ok(VerifyOutcome::Verified(Box::new(row.try_into()?))),
        Ok(None) => false,
        // PostgreSQL: another account's verification committed while this one ran.
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => true,
        Err(e) => return Err(e.into()),
    };
    // Not verified: if another account owns the domain, this claim is over.
    let ended = on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE sso_connections SET state = 'ended', next_check_at = NULL, updated_at = $2, \
             ended_reason = 'Another account proved that it owns this domain first.' \
             WHERE id = $1 AND state = 'pending' AND EXISTS (SELECT 1 FROM sso_connections o \
                 WHERE o.domain = sso_connections.domain AND o.state = 'verified')",
        )
        .bind(connection_id)
        .bind(now)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(if ended == 1 || lost {
        VerifyOutcome::LostToAnotherAccount
    } else {
        VerifyOutcome::NotPending
    })
}

/// Records a look-up that did not verify the claim, and when to look again (`None`: stop).
pub async fn record_failed_check(
    db: &Writer,
    connection_id: &str,
    now: Millis,
    message: &str,
    next_check_at: Option<Millis>,
) -> Result<(), StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE sso_connections SET checked_at = $2, check_message = $3, next_check_at = $4 \
             WHERE id = $1 AND state = 'pending'",
        )
        .bind(connection_id)
        .bind(now)
        .bind(message)
        .bind(next_check_at)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    Ok(())
}

/// Takes up to `max` pending claims whose next check is due, each for this caller only: the
/// conditional update moves its next check to `lease_until`, so replicas never check one
/// claim twice. Claims made before `made_after` stop being checked in the background.
pub async fn take_due_checks(
    db: &Writer,
    now: Millis,
    lease_until: Millis,
    made_after: Millis,
    max: i64,
) -> Result<Vec<SsoConnection>, StoreError> {
    on_db_write!(db, pool => {
        sqlx::query(
            "UPDATE sso_connections SET next_check_at = NULL \
             WHERE state = 'pending' AND next_check_at <= $1 AND created_at < $2",
        )
        .bind(now)
        .bind(made_after)
        .execute(pool)
        .await
        .map(|r| r.rows_affected())
    })?;
    let sql = format!(
        "SELECT {COLUMNS} FROM sso_connections WHERE state = 'pending' AND next_check_at <= $1 \
         ORDER BY next_check_at, id LIMIT $2"
    );
    let due: Vec<ConnectionRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(now).bind(max).fetch_all(pool).await
    })?;
    let mut taken = Vec::with_capacity(due.len());
    for row in due {
        let won = on_db_write!(db, pool => {
            sqlx::query(
                "UPDATE sso_connections SET next_check_at = $1 \
                 WHERE id = $2 AND state = 'pending' AND next_check_at = $3",
            )
            .bind(lease_until)
            .bind(&row.id)
            .bind(row.next_check_at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected())
        })? == 1;
        if won {
            taken.push(row.try_into()?);
        }
    }
    Ok(taken)
}

/// The verified connection for a domain: the only one that routes or enforces anything.
/// Whether the account has proved it owns a domain (one indexed read, no IdP metadata): what
/// SCIM asks on every request.
pub async fn has_verified_domain(db: &Db, account_id: &AccountId) -> Result<bool, StoreError> {
    let (verified,): (i64,) = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT COUNT(*) FROM sso_connections WHERE account_id = $1 AND state = 'verified'",
        )
        .bind(account_id)
        .fetch_one(pool)
        .await
    })?;
    Ok(verified > 0)
}

pub async fn find_verified(db: &Db, domain: &str) -> Result<Option<SsoConnection>, StoreError> {
    find_where(db, "domain = $1 AND state = 'verified'", domain).await
}

pub async fn find_connection(db: &Db, id: &str) -> Result<Option<SsoConnection>, StoreError> {
    find_where(db, "id = $1", id).await
}

async fn find_where(
    db: &Db,
    condition: &str,
    value: &str,
) -> Result<Option<SsoConnection>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM sso_connections WHERE {condition}");
    let row: Option<ConnectionRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(value).fetch_optional(pool).await
    })?;
    row.map(SsoConnection::try_from).transpose()
}

/// Every claim, or one account's, by domain.
pub async fn list_connections(
    db: &Db,
    account_id: Option<&AccountId>,
) -> Result<Vec<SsoConnection>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM sso_connections WHERE ($1 IS NULL OR account_id = $1) \
         ORDER BY domain, account_id"
    );
    let rows: Vec<ConnectionRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    rows.into_iter().map(SsoConnection::try_from).collect()
}

/// Removes the claims on `domain` (only `account_id`'s when given) with the identities bound
/// through them; if a verified one goes, the domain's users' sessions end. Returns how many.
pub async fn remove(
    db: &Writer,
    domain: &str,
    account_id: Option<&AccountId>,
    audit: &AuditContext,
) -> Result<u64, StoreError> {
    let removed = on_db_write!(db, pool => {
        let mut tx = pool.begin_domain_write(domain).await?;
        sqlx::query(UNBIND_DOMAIN).bind(domain).bind(account_id).execute(&mut *tx).await?;
        let gone: Vec<(String, AccountId)> = sqlx::query_as(
            "DELETE FROM sso_connections WHERE domain = $1 AND ($2 IS NULL OR account_id = $2) \
             RETURNING state, account_id",
        )
        .bind(domain)
        .bind(account_id)
        .fetch_all(&mut *tx)
        .await?;
        if gone.iter().any(|(state, _)| state == "verified") {
            sqlx::query(END_DOMAIN_SESSIONS).bind(domain).execute(&mut *tx).await?;
        }
        // One record per account whose claim went (an operator may remove several).
        for (state, owner) in &gone {
            let change = Change {
                account_id: Some(owner),
                action: Action::SsoRemoved,
                target: domain.to_owned(),
                before: Some(state.clone()),
                after: None,
            };
            record_in!(&mut *tx, audit, change)?;
        }
        tx.commit().await?;
        Ok::<u64, sqlx::Error>(gone.len() as u64)
    })?;
    Ok(removed)
}
