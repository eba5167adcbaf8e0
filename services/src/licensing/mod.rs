//! Licenses: made (by the operator, later by the vendor's API and checkout), read,
//! suspended and extended; what a license's validation answers, and an offline license file,
//! signed. `crypto::signing` stays pure crypto and key lifecycle; HTTP stays in the server.

use anyhow::Context as _;
use serde::Serialize;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::secrets::LicenseKey;
use tidemark_domain::text::Email;
use tidemark_domain::{ids, now_millis, to_rfc3339, Millis};
use tidemark_store::bundles::Bundle;
use tidemark_store::licenses::{self, License, NewLicense};
use tidemark_store::signing_keys;
use tidemark_store::{Db, Writer};
use tidemark_wire::ids::AccountId;
use tidemark_wire::{Tier, ValidateResponse};

use crate::crypto::signing::{verdict_claims, Signer};
use crate::crypto::SecretBox;
use crate::ServiceError;

mod answer_cache;
mod validation;

pub use validation::{Validation, Validator};

/// How long a license runs when it is made without an expiry.
const DEFAULT_TERM_MS: Millis = 365 * tidemark_domain::time::DAY_MS;

/// A license just made: the only place, besides the resend mail, where the raw license key
/// ever appears.
#[derive(Debug, Serialize)]
pub struct CreatedLicense {
    pub license_key: String,
    pub license_id: String,
    pub account_id: AccountId,
}

/// What a new license is made of.
pub struct LicenseRequest {
    pub email: Email,
    pub tier: Tier,
    pub expires_at: Option<Millis>,
    pub max_projects: Option<u64>,
}

/// Makes a license (and its account); its key is sealed under the master key for resend.
pub async fn create(
    db: &Db,
    keys: &SecretBox,
    request: LicenseRequest,
    audit: &AuditContext,
) -> Result<CreatedLicense, ServiceError> {
    let now = now_millis();
    let key = LicenseKey::generate();
    let new = NewLicense {
        account_id: ids::new_account_id(),
        license_id: ids::new_license_id(),
        email: request.email.as_str().to_owned(),
        tier: request.tier,
        lookup: key.client_hash().lookup(),
        key_ciphertext: keys.seal(key.expose().as_bytes()),
        expires_at: request.expires_at.unwrap_or(now + DEFAULT_TERM_MS),
        max_projects: request.max_projects,
        now,
    };
    let (license_id, account_id) = (new.license_id.clone(), new.account_id.clone());
    let audit = audit.clone();
    db.detached(|db| async move { licenses::create_license(&db, &new, &audit).await })
        .await?;
    Ok(CreatedLicense {
        license_key: key.expose().to_owned(),
        license_id,
        account_id,
    })
}

/// The outbox kind of a resend request: the mail worker looks the address up when it sends.
pub const RESEND_MAIL_KIND: &str = "license_resend";

/// How often one source may ask for a resend, and how long a source that asks too often is
/// refused.
pub struct ResendLimit {
    pub per_minute: tidemark_domain::rate::RollingLimit,
    pub ban_ms: Millis,
}

/// Queues a resend of every license registered to `email`, unless `bucket` (its source) is
/// over the limit. The same path whether or not a license exists, so the answer and its
/// timing say nothing about the address.
pub async fn queue_resend(
    db: &Db,
    bucket: String,
    email: &Email,
    limit: ResendLimit,
    now: Millis,
) -> Result<tidemark_store::rate::BanDecision, ServiceError> {
    use tidemark_store::rate::{hit_with_ban, BanDecision};
    let email = email.clone();
    let decision = db
        .detached(|db| async move {
            let decision = hit_with_ban(&db, &bucket, &limit.per_minute, limit.ban_ms, now).await?;
            if decision == BanDecision::Allow {
                let id = ids::new_mail_id();
                tidemark_store::outbox::enqueue_mail(
                    &db,
                    &id,
                    RESEND_MAIL_KIND,
                    email.as_str(),
                    now,
                )
                .await?;
            }
            Ok(decision)
        })
        .await?;
    Ok(decision)
}

/// A license as operators see it (no key material).
#[derive(Debug, Serialize)]
pub struct LicenseSummary {
    pub license_id: String,
    pub account_id: AccountId,
    pub email: String,
    pub tier: Tier,
    pub state: &'static str,
    pub expires: String,
    pub max_projects: Option<u64>,
    pub features: Vec<tidemark_wire::Feature>,
}

impl From<&License> for LicenseSummary {
    fn from(l: &License) -> Self {
        LicenseSummary {
            license_id: l.id.clone(),
            account_id: l.account_id.clone(),
            email: l.email.clone(),
            tier: l.tier,
            state: l.state(now_millis()).as_str(),
            expires: to_rfc3339(l.expires_at),
            max_projects: l.max_projects,
            features: l.features(),
        }
    }
}

pub async fn list(db: &Db) -> Result<Vec<LicenseSummary>, ServiceError> {
    Ok(licenses::list_licenses(db)
        .await?
        .iter()
        .map(LicenseSummary::from)
        .collect())
}

/// One license by id.
pub async fn show(db: &Db, id: &str) -> Result<LicenseSummary, ServiceError> {
    let license = licenses::find_license(db, id)
        .await?
        .ok_or(ServiceError::NotFound)?;
    Ok(LicenseSummary::from(&license))
}

/// A change to a license that keeps its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LicenseChange {
    /// Suspends (`true`) or resumes (`false`).
    Suspended(bool),
    /// Moves the expiry.
    Expiry(Millis),
}

/// Changes a license (audited); returns its new summary.
pub async fn change(
    db: &Db,
    id: &str,
    change: LicenseChange,
    audit: &AuditContext,
) -> Result<LicenseSummary, ServiceError> {
    let (license_id, audit) = (id.to_owned(), audit.clone());
    let changed = db
        .detached(|db| async move {
            match change {
                LicenseChange::Suspended(on) => {
                    licenses::set_suspended(&db, &license_id, on, &audit).await
                }
                LicenseChange::Expiry(at) => {
                    licenses::set_expiry(&db, &license_id, at, &audit).await
                }
            }
        })
        .await?;
    if !changed {
        return Err(ServiceError::NotFound);
    }
    show(db, id).await
}

/// What validation says of `license`: a valid one carries its features and the latest
/// bundle; an expired or suspended one neither. (`verdict` is added by the caller.)
pub fn license_answer(
    license: &License,
    valid: bool,
    bundle: Option<&Bundle>,
    base_url: &str,
) -> ValidateResponse {
    let bundle = bundle.filter(|_| valid);
    ValidateResponse {
        valid,
        tier: license.tier,
        features: if valid {
            license.features()
        } else {
            Vec::new()
        },
        expiry: to_rfc3339(license.expires_at),
        bundle_url: bundle.map(|b| format!("{base_url}/v1/bundles/{}", b.id)),
        bundle_checksum: bundle.map(|b| format!("sha256:{}", b.sha256)),
        verdict: None,
    }
}

/// An offline licence file for `license` (by id), running `days` days, bound to `machine`
/// when given. The signing key is kept published until the file expires.
pub async fn offline_license_file(
    db: &Writer,
    signer: &Signer,
    base_url: &str,
    license_id: &str,
    machine: Option<tidemark_domain::signing::MachineFingerprint>,
    days: u32,
    audit: &AuditContext,
) -> anyhow::Result<tidemark_wire::verdict::OfflineLicenseFile> {
    use tidemark_store::licenses::{find_license, license_lookup_hash};
    let now = audit.at;
    let license = find_license(db, license_id)
        .await?
        .with_context(|| format!("no license with id {license_id}"))?;
    let lookup = license_lookup_hash(db, license_id)
        .await?
        .with_context(|| format!("no license with id {license_id}"))?;
    let exp = tidemark_domain::signing::offline_file_exp(
        now,
        days,
        license.state(now).is_active(),
        license.expires_at,
    )
    .map_err(|refusal| anyhow::anyhow!("{refusal}"))?;
    let bundle = tidemark_store::bundles::latest_bundle(db).await?;
    let answer = license_answer(&license, true, bundle.as_ref(), base_url);
    let claims = verdict_claims(
        signer.issuer(),
        &lookup,
        license.state(now).as_str(),
        &answer,
        machine.clone(),
        now,
        exp,
    );
    let (verdict, kid) = signer
        .sign(db, tidemark_wire::verdict::OFFLINE_VERDICT_TYP, &claims)
        .await?;
    // Published at least until the file expires; recorded before the file is handed out.
    signing_keys::record_offline_file(db, &kid, exp, &license.account_id, &claims.jti, audit)
        .await?;
    signer.invalidate();
    Ok(tidemark_wire::verdict::OfflineLicenseFile {
        format: tidemark_wire::verdict::OFFLINE_FILE_FORMAT.to_owned(),
        verdict,
        keys: (*signer.key_set(db).await?).clone(),
    })
}
