//! Compliance-profile bundles. The bytes live in the database (base64), so every replica
//! serves the same file without shared disk.

use base64::Engine as _;
use tidemark_domain::audit::{Action, AuditContext};
use tidemark_domain::Millis;

use crate::audit::{record_in, Change};
use crate::Writer;
use crate::{on_db, on_db_write, BeginWrite as _, Db, StoreError};

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Bundle {
    pub id: String,
    pub file_name: String,
    /// Hex SHA-256 of the bytes.
    pub sha256: String,
    pub size_bytes: i64,
    pub published_at: Millis,
}

pub async fn publish_bundle(
    db: &Writer,
    bundle: &Bundle,
    bytes: &[u8],
    audit: &AuditContext,
) -> Result<(), StoreError> {
    let content = base64::engine::general_purpose::STANDARD.encode(bytes);
    on_db_write!(db, pool => {
        let mut tx = pool.begin_write().await?;
        sqlx::query(
            "INSERT INTO bundles (id, file_name, sha256, size_bytes, published_at, content) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&bundle.id)
        .bind(&bundle.file_name)
        .bind(&bundle.sha256)
        .bind(bundle.size_bytes)
        .bind(bundle.published_at)
        .bind(&content)
        .execute(&mut *tx)
        .await?;
        // Bundles belong to no account: only operators' `audit list` without --account shows it.
        let change = Change {
            account_id: None,
            action: Action::BundlePublished,
            target: bundle.id.clone(),
            before: None,
            after: Some(format!("{} ({} bytes, sha256 {})", bundle.file_name, bundle.size_bytes, bundle.sha256)),
        };
        record_in!(&mut *tx, audit, change)?;
        tx.commit().await?;
        Ok::<(), sqlx::Error>(())
    })?;
    Ok(())
}

/// A bundle with its bytes, as stored (base64).
#[derive(sqlx::FromRow)]
struct BundleWithContent {
    #[sqlx(flatten)]
    bundle: Bundle,
    content: String,
}

/// The most recently published bundle.
pub async fn latest_bundle(db: &Db) -> Result<Option<Bundle>, StoreError> {
    let row: Option<Bundle> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, file_name, sha256, size_bytes, published_at FROM bundles \
             ORDER BY published_at DESC, id DESC LIMIT 1",
        )
        .fetch_optional(pool)
        .await
    })?;
    Ok(row)
}

/// A bundle's metadata and bytes.
pub async fn bundle_content(db: &Db, id: &str) -> Result<Option<(Bundle, Vec<u8>)>, StoreError> {
    let row: Option<BundleWithContent> = on_db!(db, pool => {
        sqlx::query_as(
            "SELECT id, file_name, sha256, size_bytes, published_at, content FROM bundles \
             WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(pool)
        .await
    })?;
    row.map(|r| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(r.content.as_bytes())
            .map_err(|_| StoreError::Corrupt("bundles.content"))?;
        Ok((r.bundle, bytes))
    })
    .transpose()
}
