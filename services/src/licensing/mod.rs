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
use tidemark_store::licenses::{self, CreateOutcome, License, NewLicense, UpdateOutcome};
pub use tidemark_store::licenses::{
    IdempotencyClaim, LicenseEdit, LicenseFilter, LicenseStateFilter,
};
use tidemark_store::signing_keys;
use tidemark_store::{Db, Writer};
use tidemark_wire::ids::AccountId;
use tidemark_wire::{Tier, ValidateResponse};

use crate::crypto::signing::{verdict_claims, Signer};
use crate::crypto::SecretBox;
use crate::ServiceError;

mod answer_cache;
mod validation;

pub use validation::{Activation, Validation, Validator};

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
    /// Seats; `None`: unlimited.
    pub max_machines: Option<u64>,
    /// Entitlement overrides: features beyond the tier's, and the tier's features taken away.
    pub features_added: Vec<tidemark_wire::Feature>,
    pub features_removed: Vec<tidemark_wire::Feature>,
}

/// Makes a license (and its account); its key is sealed under the master key for resend.
pub async fn create(
    db: &Db,
    keys: &SecretBox,
    request: LicenseRequest,
    audit: &AuditContext,
) -> Result<CreatedLicense, ServiceError> {
    match create_once(db, keys, request, None, audit).await? {
        Creation::Created(made) | Creation::Earlier(made) => Ok(made),
    }
}

/// What [`create_once`] did.
pub enum Creation {
    Created(CreatedLicense),
    /// The idempotency key made this licence before (the same body): nothing new was made.
    Earlier(CreatedLicense),
}

/// [`create`], once per idempotency key: a retried call (same key, same body) answers the
/// licence the first made; the same key with another body is refused.
pub async fn create_once(
    db: &Db,
    keys: &SecretBox,
    request: LicenseRequest,
    claim: Option<IdempotencyClaim>,
    audit: &AuditContext,
) -> Result<Creation, ServiceError> {
    let now = now_millis();
    let same_overrides = request
        .features_added
        .iter()
        .find(|f| request.features_removed.contains(f));
    if let Some(f) = same_overrides {
        return Err(ServiceError::Invalid(format!(
            "{} cannot be both added and removed",
            f.as_str()
        )));
    }
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
        max_machines: request.max_machines,
        features_added: request.features_added,
        features_removed: request.features_removed,
        now,
    };
    let (license_id, account_id) = (new.license_id.clone(), new.account_id.clone());
    let audit = audit.clone();
    let asked = claim.as_ref().map(|c| c.request_sha256.clone());
    let outcome = db
        .detached(
            |db| async move { licenses::create_license(&db, &new, claim.as_ref(), &audit).await },
        )
        .await?;
    match outcome {
        CreateOutcome::Created => Ok(Creation::Created(CreatedLicense {
            license_key: key.expose().to_owned(),
            license_id,
            account_id,
        })),
        CreateOutcome::Earlier {
            license_id,
            request_sha256,
        } => {
            if asked.as_deref() != Some(request_sha256.as_str()) {
                return Err(ServiceError::Conflict(
                    "This Idempotency-Key was used with another request body: use a new key \
                     for a new licence."
                        .into(),
                ));
            }
            let (license, sealed) = licenses::license_with_sealed_key(db, &license_id)
                .await?
                .ok_or(ServiceError::NotFound)?;
            let raw = keys.open(&sealed).map_err(ServiceError::internal)?;
            let license_key = String::from_utf8(raw).map_err(ServiceError::internal)?;
            Ok(Creation::Earlier(CreatedLicense {
                license_key,
                license_id,
                account_id: license.account_id,
            }))
        }
    }
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

/// Mails the holder of licence `id` every licence registered to their address (the resend
/// mail), on the vendor's word: no rate limit, and audited.
pub async fn resend(db: &Db, id: &str, audit: &AuditContext) -> Result<(), ServiceError> {
    let license = find(db, id).await?;
    let audit = audit.clone();
    db.detached(move |db| async move {
        tidemark_store::outbox::enqueue_mail_audited(
            &db,
            &ids::new_mail_id(),
            RESEND_MAIL_KIND,
            &license.email,
            &license.account_id,
            &license.id,
            &audit,
        )
        .await
    })
    .await?;
    Ok(())
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
    let edit = match change {
        LicenseChange::Suspended(on) => LicenseEdit {
            suspended: Some((on, None)),
            ..LicenseEdit::default()
        },
        LicenseChange::Expiry(at) => LicenseEdit {
            expires_at: Some(at),
            ..LicenseEdit::default()
        },
    };
    match edit_license(db, id, None, edit, audit).await? {
        Edited::Done(license) | Edited::Stale(license) => Ok(LicenseSummary::from(&license)),
    }
}

/// What [`edit_license`] did.
#[derive(Debug)]
pub enum Edited {
    /// The licence as it now is.
    Done(License),
    /// `if_version` was not its version: nothing changed; the licence as it is.
    Stale(License),
}

/// Applies `edit` to licence `id` (when `if_version`, if given, is still its version): the
/// one path for every change that keeps a licence's key, from the operator's commands and
/// the vendor's API alike.
pub async fn edit_license(
    db: &Db,
    id: &str,
    if_version: Option<i64>,
    edit: LicenseEdit,
    audit: &AuditContext,
) -> Result<Edited, ServiceError> {
    let (license_id, audit) = (id.to_owned(), audit.clone());
    let outcome = db
        .detached(|db| async move {
            licenses::update_license(&db, &license_id, if_version, &edit, &audit).await
        })
        .await?;
    match outcome {
        UpdateOutcome::Updated(license) => Ok(Edited::Done(license)),
        UpdateOutcome::Stale(license) => Ok(Edited::Stale(license)),
        UpdateOutcome::Invalid(why) => Err(ServiceError::Invalid(why)),
        UpdateOutcome::NotFound => Err(ServiceError::NotFound),
    }
}

/// One licence by id, or "not found".
pub async fn find(db: &Db, id: &str) -> Result<License, ServiceError> {
    licenses::find_license(db, id)
        .await?
        .ok_or(ServiceError::NotFound)
}

/// A page of licences matching `filter` after `after` (oldest first), and whether more follow.
pub async fn page(
    db: &Db,
    filter: &LicenseFilter,
    after: Option<(Millis, &str)>,
    limit: i64,
) -> Result<(Vec<License>, bool), ServiceError> {
    let mut rows = licenses::page_licenses(db, filter, after, limit + 1, now_millis()).await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(usize::try_from(limit).unwrap_or(0));
    Ok((rows, more))
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

/// [`offline_license_file`] on a task of its own, so a request dropped half way cannot leave
/// a seat held without its file signed. The outer error is the database's; the inner one a
/// refusal for the person asking (inactive licence, days out of range, seats full) or a
/// fault (`tidemark_store::StoreError` in its chain).
pub async fn issue_offline_file(
    db: &Db,
    signer: std::sync::Arc<Signer>,
    base_url: String,
    license_id: String,
    machine: Option<tidemark_domain::signing::MachineFingerprint>,
    days: u32,
    audit: AuditContext,
) -> Result<anyhow::Result<tidemark_wire::verdict::OfflineLicenseFile>, ServiceError> {
    Ok(db
        .detached(move |db| async move {
            Ok(
                offline_license_file(&db, &signer, &base_url, &license_id, machine, days, &audit)
                    .await,
            )
        })
        .await?)
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
    // The file holds a seat until it expires: taken before it is signed.
    let machine_id = ids::new_machine_id();
    let machine_key = tidemark_domain::seats::offline_machine_key(machine.as_ref(), &machine_id);
    let name = "offline file".to_owned();
    let seat = tidemark_store::machines::NewOfflineSeat {
        license_id,
        account_id: &license.account_id,
        machine_id: &machine_id,
        machine_key: &machine_key,
        name: &name,
        until: exp,
        now,
    };
    if let tidemark_store::machines::OfflineSeat::SeatLimit { limit } =
        tidemark_store::machines::hold_offline(db, &seat).await?
    {
        return Err(tidemark_domain::seats::SeatsFull(limit).into());
    }
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
