//! The vendor's tokens: made (by the operator's command, or by an admin token), listed,
//! revoked, and recognised on each admin API call.

use tidemark_domain::audit::AuditContext;
use tidemark_domain::vendor::{TokenName, VendorRole, VendorToken};
use tidemark_domain::{ids, Millis};
pub use tidemark_store::vendor_tokens::VendorTokenRow;
use tidemark_store::vendor_tokens::{self, NewVendorToken};
use tidemark_store::Db;

use crate::ServiceError;

/// A token just made: the only time it exists outside the caller's hands.
pub struct CreatedToken {
    pub token: VendorToken,
    pub row: VendorTokenRow,
}

/// Makes a token named `name` with `role`; a name a live token has is refused.
pub async fn create_token(
    db: &Db,
    name: &TokenName,
    role: VendorRole,
    expires_at: Option<Millis>,
    audit: &AuditContext,
) -> Result<CreatedToken, ServiceError> {
    if expires_at.is_some_and(|at| at <= audit.at) {
        return Err(ServiceError::Invalid(
            "expires_at must be in the future".into(),
        ));
    }
    let token = VendorToken::generate();
    let (id, hash, prefix) = (
        ids::new_vendor_token_id(),
        token.hash(),
        token.display_prefix(),
    );
    let (name_text, audit_at) = (name.as_str().to_owned(), audit.clone());
    let (id_for_write, prefix_for_write) = (id.clone(), prefix.clone());
    let made = db
        .detached(move |db| async move {
            let new = NewVendorToken {
                id: &id_for_write,
                name: &name_text,
                role,
                hash: &hash,
                prefix: &prefix_for_write,
                expires_at,
            };
            vendor_tokens::create(&db, &new, &audit_at).await
        })
        .await?;
    if !made {
        return Err(ServiceError::Conflict(format!(
            "A live token is already called {:?}: revoke it first, or choose another name.",
            name.as_str()
        )));
    }
    let row = VendorTokenRow {
        id,
        name: name.as_str().to_owned(),
        role,
        prefix,
        created_at: audit.at,
        created_by: audit.actor.name(),
        expires_at,
        last_used_at: None,
        revoked_at: None,
    };
    Ok(CreatedToken { token, row })
}

pub async fn list_tokens(db: &Db) -> Result<Vec<VendorTokenRow>, ServiceError> {
    Ok(vendor_tokens::list(db).await?)
}

/// Revokes the token: its next call is refused, on every replica (tokens are never cached).
pub async fn revoke_token(db: &Db, id: &str, audit: &AuditContext) -> Result<(), ServiceError> {
    let (id, audit) = (id.to_owned(), audit.clone());
    let revoked = db
        .detached(move |db| async move { vendor_tokens::revoke(&db, &id, &audit).await })
        .await?;
    revoked.then_some(()).ok_or(ServiceError::NotFound)
}

/// The live token an `Authorization` header carries, if any.
pub async fn caller(
    db: &Db,
    authorization: Option<&str>,
    now: Millis,
) -> Result<Option<VendorTokenRow>, ServiceError> {
    let Some(token) = VendorToken::parse(authorization) else {
        return Ok(None);
    };
    Ok(vendor_tokens::authenticate(db, &token.hash(), now).await?)
}
