//! Keyless CI: trusted publishers, the job tokens already exchanged, and the short-lived push
//! tokens an exchange hands out.

use crate::AccountId;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::ci_identity::{
    Issuer, ProjectScope, Provider, PublisherDraft, PublisherSpec, TrustedGit,
};
use tidemark_domain::secrets::HashedApiKey;
use tidemark_domain::Millis;
use tidemark_wire::CiIdentity;

use crate::audit::{record_in, Change};
use crate::licenses::{
    writes_columns, KeyOwner, License, LicenseRow, Via, Writes, WritesRow, LICENSE_COLUMNS,
};
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError, Writer};

/// Publishers one account may declare.
pub const MAX_PUBLISHERS: i64 = 50;

/// A stored publisher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publisher {
    pub id: String,
    pub account_id: AccountId,
    pub spec: PublisherSpec,
    pub created_at: Millis,
    pub last_used_at: Option<Millis>,
}

#[derive(sqlx::FromRow)]
struct PublisherRow {
    id: String,
    account_id: AccountId,
    provider: String,
    issuer: String,
    repository: String,
    owner_id: Option<String>,
    repository_id: Option<String>,
    workflow: Option<String>,
    environment: Option<String>,
    ref_pattern: Option<String>,
    project_label: Option<String>,
    created_at: i64,
    last_used_at: Option<i64>,
}

const PUBLISHER_COLUMNS: &str = "id, account_id, provider, issuer, repository, owner_id, \
     repository_id, workflow, environment, ref_pattern, project_label, created_at, last_used_at";

impl TryFrom<PublisherRow> for Publisher {
    type Error = StoreError;

    fn try_from(r: PublisherRow) -> Result<Self, StoreError> {
        let corrupt = |_| StoreError::Corrupt("trusted_publishers");
        let provider = Provider::parse(&r.provider).map_err(corrupt)?;
        let draft = PublisherDraft {
            provider: r.provider,
            issuer: Some(r.issuer),
            repository: (provider != Provider::Custom).then(|| r.repository.clone()),
            subject: (provider == Provider::Custom).then_some(r.repository),
            owner_id: r.owner_id,
            repository_id: r.repository_id,
            workflow: r.workflow,
            environment: r.environment,
            ref_pattern: r.ref_pattern,
            project: r.project_label,
        };
        // Stored issuers were checked when added; http ones only where the operator allowed.
        Ok(Publisher {
            id: r.id,
            account_id: r.account_id,
            spec: PublisherSpec::parse(&draft, true).map_err(corrupt)?,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    Added,
    /// The account already has [`MAX_PUBLISHERS`].
    TooMany,
}

pub async fn add_publisher(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    spec: &PublisherSpec,
    now: Millis,
    audit: &AuditContext,
) -> Result<AddOutcome, StoreError> {
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let (count,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM trusted_publishers WHERE account_id = $1")
                .bind(account_id)
                .fetch_one(&mut *tx)
                .await?;
        if count >= MAX_PUBLISHERS {
            return Ok(AddOutcome::TooMany);
        }
        sqlx::query(
            "INSERT INTO trusted_publishers (id, account_id, provider, issuer, repository, \
             owner_id, repository_id, workflow, environment, ref_pattern, project_label, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(id)
        .bind(account_id)
        .bind(spec.provider.as_str())
        .bind(spec.issuer.as_str())
        .bind(&spec.repository)
        .bind(&spec.owner_id)
        .bind(&spec.repository_id)
        .bind(&spec.workflow)
        .bind(&spec.environment)
        .bind(spec.ref_pattern.as_ref().map(|p| p.as_str()))
        .bind(spec.projects.stored())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::PublisherAdded,
            target: id.to_owned(),
            before: None,
            after: Some(spec.describe()),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(AddOutcome::Added)
    })?;
    Ok(outcome)
}

/// The account's publishers, oldest first.
pub async fn list_publishers(
    db: &Db,
    account_id: &AccountId,
) -> Result<Vec<Publisher>, StoreError> {
    let sql = format!(
        "SELECT {PUBLISHER_COLUMNS} FROM trusted_publishers WHERE account_id = $1 \
         ORDER BY created_at, id"
    );
    let rows: Vec<PublisherRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    rows.into_iter().map(Publisher::try_from).collect()
}

/// Every publisher (of any account) that trusts tokens from `issuer`.
pub async fn publishers_for_issuer(db: &Db, issuer: &str) -> Result<Vec<Publisher>, StoreError> {
    let sql = format!(
        "SELECT {PUBLISHER_COLUMNS} FROM trusted_publishers WHERE issuer = $1 ORDER BY created_at, id"
    );
    let rows: Vec<PublisherRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(issuer).fetch_all(pool).await
    })?;
    rows.into_iter().map(Publisher::try_from).collect()
}

/// Whether any account trusts `issuer`: only such issuers' keys are ever fetched, so a token
/// cannot make the server call an address of its choosing.
pub async fn is_trusted_issuer(db: &Db, issuer: &str) -> Result<bool, StoreError> {
    let found: Option<(String,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT id FROM trusted_publishers WHERE issuer = $1 LIMIT 1")
            .bind(issuer)
            .fetch_optional(pool)
            .await
    })?;
    Ok(found.is_some())
}

/// Removes one of the account's publishers; `false` when it has none by that id. Push tokens
/// it already gave out stop working too.
pub async fn remove_publisher(
    db: &Writer,
    account_id: &AccountId,
    id: &str,
    audit: &AuditContext,
) -> Result<bool, StoreError> {
    let removed = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(account_id).await?;
        let sql = format!(
            "SELECT {PUBLISHER_COLUMNS} FROM trusted_publishers WHERE id = $1 AND account_id = $2"
        );
        let row: Option<PublisherRow> = sqlx::query_as(&sql)
            .bind(id)
            .bind(account_id)
            .fetch_optional(&mut *tx)
            .await?;
        let Some(row) = row else {
            return Ok(false);
        };
        let before = Publisher::try_from(row).map(|p| p.spec.describe()).ok();
        sqlx::query("DELETE FROM trusted_publishers WHERE id = $1 AND account_id = $2")
            .bind(id)
            .bind(account_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM ci_tokens WHERE account_id = $1 AND publisher_id = $2")
            .bind(account_id)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        let change = Change {
            account_id: Some(account_id),
            action: Action::PublisherRemoved,
            target: id.to_owned(),
            before,
            after: None,
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(true)
    })?;
    Ok(removed)
}

/// A successful exchange, as it is written.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub account_id: AccountId,
    /// The publisher that matched (its push tokens end with it).
    pub publisher_id: String,
    /// Ids to pin on the publisher, when it had none yet.
    pub pin: Option<(String, String)>,
    pub issuer: Issuer,
    pub jti: String,
    /// Until when the job token could still be presented (its `exp` plus the leeway).
    pub jti_expires_at: Millis,
    pub token_id: String,
    pub token_hash: HashedApiKey,
    pub projects: ProjectScope,
    pub identity: CiIdentity,
    pub trusted_git: TrustedGit,
    pub now: Millis,
    pub expires_at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeOutcome {
    Issued,
    /// The job token's `jti` was exchanged before (on any replica): nothing written.
    Replayed,
}

/// Marks the job token used and stores the push token, in one transaction: a token seen twice,
/// even at the same moment on two replicas, is issued once (the `(issuer, jti)` key).
pub async fn record_exchange(
    db: &Writer,
    ex: &Exchange,
    audit: &AuditContext,
) -> Result<ExchangeOutcome, StoreError> {
    let identity =
        serde_json::to_string(&ex.identity).map_err(|_| StoreError::Corrupt("ci identity"))?;
    let trusted_git = serde_json::to_string(&ex.trusted_git)
        .map_err(|_| StoreError::Corrupt("ci trusted git"))?;
    let projects = match &ex.projects {
        ProjectScope::All => None,
        ProjectScope::One(label) => {
            Some(serde_json::to_string(&[label]).map_err(|_| StoreError::Corrupt("ci projects"))?)
        }
    };
    let outcome = on_db_write!(db, pool => {
        let mut tx = pool.begin_account_write(&ex.account_id).await?;
        let fresh = sqlx::query(
            "INSERT INTO oidc_used_tokens (issuer, jti, account_id, expires_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (issuer, jti) DO NOTHING",
        )
        .bind(ex.issuer.as_str())
        .bind(&ex.jti)
        .bind(&ex.account_id)
        .bind(ex.jti_expires_at)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if fresh == 0 {
            return Ok(ExchangeOutcome::Replayed);
        }
        if let Some((owner_id, repository_id)) = &ex.pin {
            let pinned = sqlx::query(
                "UPDATE trusted_publishers SET owner_id = $1, repository_id = $2 \
                 WHERE id = $3 AND account_id = $4 AND (owner_id IS NULL OR repository_id IS NULL)",
            )
            .bind(owner_id)
            .bind(repository_id)
            .bind(&ex.publisher_id)
            .bind(&ex.account_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if pinned > 0 {
                let change = Change {
                    account_id: Some(&ex.account_id),
                    action: Action::PublisherPinned,
                    target: ex.publisher_id.clone(),
                    before: None,
                    after: Some(format!(
                        "{} owner id {owner_id}, repository id {repository_id}",
                        ex.identity.repository
                    )),
                };
                record_in!(&mut *tx, audit, change)?;
            }
        }
        sqlx::query("UPDATE trusted_publishers SET last_used_at = $1 WHERE id = $2")
            .bind(ex.now)
            .bind(&ex.publisher_id)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO ci_tokens (id, account_id, publisher_id, token_hash, projects, identity, \
             trusted_git, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&ex.token_id)
        .bind(&ex.account_id)
        .bind(&ex.publisher_id)
        .bind(ex.token_hash.as_str())
        .bind(&projects)
        .bind(&identity)
        .bind(&trusted_git)
        .bind(ex.now)
        .bind(ex.expires_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(ExchangeOutcome::Issued)
    })?;
    Ok(outcome)
}

/// The account behind a live CI push token, and its writes since `window_start`, in one
/// read (as [`crate::licenses::find_key_owner_and_writes`]).
pub async fn find_ci_token_owner_and_writes(
    db: &Db,
    hash: &HashedApiKey,
    now: Millis,
    window_start: Millis,
) -> Result<Option<(KeyOwner, Writes)>, StoreError> {
    let sql = format!(
        "SELECT t.id AS token_id, t.projects, t.identity, t.trusted_git, {LICENSE_COLUMNS}, {} \
         FROM ci_tokens t JOIN licenses l ON l.account_id = t.account_id \
         WHERE t.token_hash = $1 AND t.expires_at > $2",
        writes_columns(3)
    );
    #[derive(sqlx::FromRow)]
    struct Row {
        token_id: String,
        projects: Option<String>,
        identity: String,
        trusted_git: String,
        #[sqlx(flatten)]
        license: LicenseRow,
        #[sqlx(flatten)]
        writes: WritesRow,
    }
    let row: Option<Row> = on_db!(db, pool => {
        sqlx::query_as(&sql)
            .bind(hash.as_str())
            .bind(now)
            .bind(window_start)
            .fetch_optional(pool)
            .await
    })?;
    let Some(r) = row else {
        return Ok(None);
    };
    let corrupt = |_| StoreError::Corrupt("ci_tokens");
    let writes = r.writes.into();
    let owner = KeyOwner {
        key_id: r.token_id,
        // Push tokens have no "last used" to keep.
        last_used_at: Some(now),
        expires_at: None,
        license: License::try_from(r.license)?,
        via: Via::Ci {
            projects: r
                .projects
                .as_deref()
                .map(serde_json::from_str)
                .transpose()
                .map_err(corrupt)?,
            identity: Box::new(serde_json::from_str(&r.identity).map_err(corrupt)?),
            trusted_git: Box::new(serde_json::from_str(&r.trusted_git).map_err(corrupt)?),
        },
    };
    Ok(Some((owner, writes)))
}
