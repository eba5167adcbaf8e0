//! Rule bundles the scanner downloads: published by the operator (later by the vendor's API).

use serde::Serialize;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::ids;
use tidemark_domain::secrets::sha256_hex;
use tidemark_store::bundles::{self, Bundle};
use tidemark_store::Db;

use crate::ServiceError;

#[derive(Debug, Serialize)]
pub struct PublishedBundle {
    pub bundle_id: String,
    pub bundle_url: String,
    pub bundle_checksum: String,
    pub size_bytes: i64,
}

/// Publishes `bytes` as the latest bundle.
pub async fn publish(
    db: &Db,
    base_url: &str,
    file_name: &str,
    bytes: &[u8],
    audit: &AuditContext,
) -> Result<PublishedBundle, ServiceError> {
    if bytes.is_empty() {
        return Err(ServiceError::invalid("the bundle file is empty"));
    }
    let bundle = Bundle {
        id: ids::new_bundle_id(),
        file_name: file_name.to_owned(),
        sha256: sha256_hex(bytes),
        size_bytes: i64::try_from(bytes.len())
            .map_err(|_| ServiceError::invalid("bundle too large"))?,
        published_at: audit.at,
    };
    let published = PublishedBundle {
        bundle_url: format!("{base_url}/v1/bundles/{}", bundle.id),
        bundle_checksum: format!("sha256:{}", bundle.sha256),
        bundle_id: bundle.id.clone(),
        size_bytes: bundle.size_bytes,
    };
    let (bytes, audit) = (bytes.to_vec(), audit.clone());
    db.detached(|db| async move { bundles::publish_bundle(&db, &bundle, &bytes, &audit).await })
        .await?;
    Ok(published)
}

/// The bundle's row and its bytes, or "not found".
pub async fn content(db: &Db, bundle_id: &str) -> Result<(Bundle, Vec<u8>), ServiceError> {
    bundles::bundle_content(db, bundle_id)
        .await?
        .ok_or(ServiceError::NotFound)
}
