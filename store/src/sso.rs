//! SAML single sign-on per e-mail domain.

use tidemark_domain::Millis;

use crate::{on_db, on_db_write, Db, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SsoDomain {
    pub domain: String,
    pub account_id: String,
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    /// Base64 DER of each signing certificate the IdP metadata names.
    pub signing_certs: Vec<String>,
    /// Refuse OpenID Connect sign-in for this domain.
    pub enforce: bool,
    pub metadata_xml: String,
    pub updated_at: Millis,
}

type SsoRow = (String, String, String, String, String, bool, String, i64);

impl From<SsoRow> for SsoDomain {
    fn from(r: SsoRow) -> Self {
        SsoDomain {
            domain: r.0,
            account_id: r.1,
            idp_entity_id: r.2,
            idp_sso_url: r.3,
            signing_certs: r.4.lines().map(str::to_owned).collect(),
            enforce: r.5,
            metadata_xml: r.6,
            updated_at: r.7,
        }
    }
}

const COLUMNS: &str = "domain, account_id, idp_entity_id, idp_sso_url, signing_certs, enforce, \
                       metadata_xml, updated_at";

/// Sessions of users whose address is at `$1`: changing a domain's SSO ends them.
const END_DOMAIN_SESSIONS: &str = "DELETE FROM sessions WHERE user_id IN \
     (SELECT id FROM users WHERE substr(email, length(email) - length($1)) = '@' || $1)";

/// Creates or replaces the domain's configuration and ends its users' sessions. `false` when
/// the domain belongs to another account.
pub async fn set_sso_domain(db: &Db, sso: &SsoDomain) -> Result<bool, StoreError> {
    let stored = on_db_write!(db, pool => {
        let mut tx = crate::BeginWrite::begin_write(pool).await?;
        let owner: Option<(String,)> =
            sqlx::query_as("SELECT account_id FROM sso_domains WHERE domain = $1")
                .bind(&sso.domain)
                .fetch_optional(&mut *tx)
                .await?;
        if owner.is_some_and(|(account,)| account != sso.account_id) {
            return Ok(false);
        }
        sqlx::query(
            "INSERT INTO sso_domains (domain, account_id, idp_entity_id, idp_sso_url, \
             signing_certs, enforce, metadata_xml, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (domain) DO UPDATE SET idp_entity_id = $3, idp_sso_url = $4, \
             signing_certs = $5, enforce = $6, metadata_xml = $7, updated_at = $8",
        )
        .bind(&sso.domain)
        .bind(&sso.account_id)
        .bind(&sso.idp_entity_id)
        .bind(&sso.idp_sso_url)
        .bind(sso.signing_certs.join("\n"))
        .bind(sso.enforce)
        .bind(&sso.metadata_xml)
        .bind(sso.updated_at)
        .execute(&mut *tx)
        .await?;
        sqlx::query(END_DOMAIN_SESSIONS).bind(&sso.domain).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(true)
    })?;
    Ok(stored)
}

pub async fn find_sso_domain(db: &Db, domain: &str) -> Result<Option<SsoDomain>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM sso_domains WHERE domain = $1");
    let row: Option<SsoRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(domain).fetch_optional(pool).await
    })?;
    Ok(row.map(SsoDomain::from))
}

/// Every configured domain, or one account's.
pub async fn list_sso_domains(
    db: &Db,
    account_id: Option<&str>,
) -> Result<Vec<SsoDomain>, StoreError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM sso_domains WHERE ($1 IS NULL OR account_id = $1) ORDER BY domain"
    );
    let rows: Vec<SsoRow> = on_db!(db, pool => {
        sqlx::query_as(&sql).bind(account_id).fetch_all(pool).await
    })?;
    Ok(rows.into_iter().map(SsoDomain::from).collect())
}

/// Removes the domain's configuration (its users' sessions end); `false` if there was none.
pub async fn remove_sso_domain(db: &Db, domain: &str) -> Result<bool, StoreError> {
    let removed = on_db_write!(db, pool => {
        let mut tx = crate::BeginWrite::begin_write(pool).await?;
        let n = sqlx::query("DELETE FROM sso_domains WHERE domain = $1")
            .bind(domain)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query(END_DOMAIN_SESSIONS).bind(domain).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(n == 1)
    })?;
    Ok(removed)
}
