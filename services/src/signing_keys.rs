//! The verdict-signing keys as the operator and the vendor manage them: the schedule now
//! (retiring the keys whose time has come), and a rotation.

use serde::Serialize;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::signing::KeyStage;
use tidemark_domain::{to_rfc3339, Millis};
use tidemark_store::signing_keys;
use tidemark_store::Db;

use crate::crypto::signing::Signer;
use crate::ServiceError;

/// A key and its schedule.
#[derive(Debug, Clone, Serialize)]
pub struct KeyView {
    pub kid: String,
    pub generation: i64,
    /// `announced`, `signing`, `verifying` (superseded, still published).
    pub stage: &'static str,
    pub published_at: String,
    pub signs_from: String,
    pub signs_until: Option<String>,
    pub retires_at: Option<String>,
}

/// The published keys now, and what this call changed.
#[derive(Debug, Clone, Serialize)]
pub struct KeySchedule {
    /// The key a rotation added.
    pub added: Option<String>,
    /// Keys whose time had come: private halves destroyed, unpublished.
    pub retired: Vec<String>,
    pub keys: Vec<KeyView>,
}

fn stage_name(stage: KeyStage) -> &'static str {
    match stage {
        KeyStage::Announced => "announced",
        KeyStage::Signing => "signing",
        KeyStage::Verifying => "verifying",
        KeyStage::Retired => "retired",
    }
}

/// The schedule now: makes the first key on a database that has none, retires the keys whose
/// time has come (audited), lists the rest.
pub async fn schedule(
    db: &Db,
    signer: &Signer,
    audit: &AuditContext,
) -> Result<KeySchedule, ServiceError> {
    change(db, signer, None, audit).await
}

/// Adds a key, published at once and signing after `overlap` (0: at once); then as
/// [`schedule`].
pub async fn rotate(
    db: &Db,
    signer: &Signer,
    overlap: Millis,
    audit: &AuditContext,
) -> Result<KeySchedule, ServiceError> {
    change(db, signer, Some(overlap), audit).await
}

async fn change(
    db: &Db,
    signer: &Signer,
    rotation: Option<Millis>,
    audit: &AuditContext,
) -> Result<KeySchedule, ServiceError> {
    signer.key_set(db).await.map_err(ServiceError::internal)?;
    let now = audit.at;
    let (secrets, issuer, audit) = (
        signer.secrets().clone(),
        signer.issuer().to_owned(),
        audit.clone(),
    );
    let (added, retired) = db
        .detached(move |db| async move {
            let added = match rotation {
                Some(overlap) => Some(
                    crate::crypto::signing::rotate(&db, &secrets, &issuer, overlap, &audit)
                        .await
                        .map(|key| key.window.kid),
                ),
                None => None,
            };
            let retired = signing_keys::delete_retired(&db, audit.at, &audit).await?;
            Ok((added, retired))
        })
        .await?;
    let added = added.transpose().map_err(ServiceError::internal)?;
    if added.is_some() || !retired.is_empty() {
        signer.invalidate();
    }
    let keys = signing_keys::list_keys(db).await?;
    let schedule = signing_keys::schedule(&keys);
    let keys = schedule
        .keys()
        .iter()
        .map(|k| KeyView {
            kid: k.kid.clone(),
            generation: k.generation,
            stage: stage_name(schedule.stage(k, now)),
            published_at: to_rfc3339(k.published_at),
            signs_from: to_rfc3339(k.signs_from),
            signs_until: schedule.signs_until(k).map(to_rfc3339),
            retires_at: schedule.retires_at(k).map(to_rfc3339),
        })
        .collect();
    Ok(KeySchedule {
        added,
        retired,
        keys,
    })
}
