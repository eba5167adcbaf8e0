//! The licence use case between `/v1` (and the operator commands) and the crypto: what a
//! licence's validation answers, and an offline licence file, signed. `signing` stays pure
//! crypto and key lifecycle; `api::license` stays HTTP.

use anyhow::Context as _;
use tidemark_domain::audit::AuditContext;
use tidemark_domain::to_rfc3339;
use tidemark_store::bundles::Bundle;
use tidemark_store::licenses::License;
use tidemark_store::signing_keys;
use tidemark_store::Writer;
use tidemark_wire::ValidateResponse;

use crate::crypto::signing::{verdict_claims, Signer};

/// What validation says of `license`: a valid one carries its features and the latest
/// bundle; an expired or suspended one neither. (`verdict` is added by the caller.)
pub fn licence_answer(
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
pub async fn offline_licence_file(
    db: &Writer,
    signer: &Signer,
    base_url: &str,
    license_id: &str,
    machine: Option<tidemark_domain::signing::MachineFingerprint>,
    days: u32,
    audit: &AuditContext,
) -> anyhow::Result<tidemark_wire::verdict::OfflineLicenceFile> {
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
    let answer = licence_answer(&license, true, bundle.as_ref(), base_url);
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
    Ok(tidemark_wire::verdict::OfflineLicenceFile {
        format: tidemark_wire::verdict::OFFLINE_FILE_FORMAT.to_owned(),
        verdict,
        keys: (*signer.key_set(db).await?).clone(),
    })
}
