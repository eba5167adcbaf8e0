//! Operator actions behind the `tidemark-server` subcommands. Plain functions over the store,
//! so tests create fixtures exactly the way operators do.

use anyhow::{bail, Context as _};
use serde::Serialize;
use tidemark_domain::secrets::{sha256_hex, ApiKey, LicenseKey};
use tidemark_domain::text::Email;
use tidemark_domain::{ids, now_millis, to_rfc3339, Millis};
use tidemark_store::bundles::{self, Bundle};
use tidemark_store::licenses::{self, License, NewLicense};
use tidemark_store::Db;
use tidemark_wire::Tier;

use crate::crypto::SecretBox;

/// What `license create` prints: the only place, besides the resend mail, where the raw
/// license key ever appears.
#[derive(Debug, Serialize)]
pub struct CreatedLicense {
    pub license_key: String,
    pub license_id: String,
    pub account_id: String,
}

pub async fn create_license(
    db: &Db,
    keys: &SecretBox,
    email: &str,
    tier: Tier,
    expires_at: Option<Millis>,
    max_projects: Option<u64>,
) -> anyhow::Result<CreatedLicense> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    let now = now_millis();
    let expires_at = expires_at.unwrap_or(now + 365 * 24 * 60 * 60 * 1000);
    let key = LicenseKey::generate();
    let new = NewLicense {
        account_id: ids::new_account_id(),
        license_id: ids::new_license_id(),
        email: email.as_str().to_owned(),
        tier,
        lookup: key.client_hash().lookup(),
        key_ciphertext: keys.seal(key.expose().as_bytes()),
        expires_at,
        max_projects,
        now,
    };
    licenses::create_license(db, &new).await?;
    Ok(CreatedLicense {
        license_key: key.expose().to_owned(),
        license_id: new.license_id,
        account_id: new.account_id,
    })
}

/// Settings → API Keys → Rotate Key: revokes every active key of the account and issues one
/// new key, in one transaction. Returns the new key (shown once) and how many were revoked.
pub async fn rotate_api_keys(
    db: &Db,
    account_id: &str,
    machine: &str,
) -> anyhow::Result<(ApiKey, u64)> {
    let key = ApiKey::generate();
    let revoked = licenses::rotate_api_keys(
        db,
        &licenses::NewApiKey {
            id: ids::new_key_id(),
            account_id: account_id.to_owned(),
            hash: key.hash(),
            prefix: key.display_prefix(),
            machine: machine.to_owned(),
            now: now_millis(),
        },
    )
    .await?;
    Ok((key, revoked))
}

/// A license as operators see it (no key material).
#[derive(Debug, Serialize)]
pub struct LicenseSummary {
    pub license_id: String,
    pub account_id: String,
    pub email: String,
    pub tier: Tier,
    pub state: &'static str,
    pub expires: String,
    pub max_projects: Option<u64>,
    pub features: Vec<tidemark_wire::Feature>,
}

impl From<&License> for LicenseSummary {
    fn from(l: &License) -> Self {
        use tidemark_domain::license::LicenseState::*;
        LicenseSummary {
            license_id: l.id.clone(),
            account_id: l.account_id.clone(),
            email: l.email.clone(),
            tier: l.tier,
            state: match l.state(now_millis()) {
                Active => "active",
                Expired { .. } => "expired",
                Suspended { .. } => "suspended",
            },
            expires: to_rfc3339(l.expires_at),
            max_projects: l.max_projects,
            features: l.features(),
        }
    }
}

pub async fn list_licenses(db: &Db) -> anyhow::Result<Vec<LicenseSummary>> {
    Ok(licenses::list_licenses(db)
        .await?
        .iter()
        .map(LicenseSummary::from)
        .collect())
}

/// Suspends or resumes a license; returns its new summary.
pub async fn set_suspended(db: &Db, id: &str, suspended: bool) -> anyhow::Result<LicenseSummary> {
    let at = suspended.then(now_millis);
    if !licenses::set_suspended(db, id, at).await? {
        bail!("no license with id {id}");
    }
    summary(db, id).await
}

pub async fn extend(db: &Db, id: &str, expires_at: Millis) -> anyhow::Result<LicenseSummary> {
    if !licenses::set_expiry(db, id, expires_at).await? {
        bail!("no license with id {id}");
    }
    summary(db, id).await
}

async fn summary(db: &Db, id: &str) -> anyhow::Result<LicenseSummary> {
    let license = licenses::find_license(db, id)
        .await?
        .with_context(|| format!("no license with id {id}"))?;
    Ok(LicenseSummary::from(&license))
}

#[derive(Debug, Serialize)]
pub struct PublishedBundle {
    pub bundle_id: String,
    pub bundle_url: String,
    pub bundle_checksum: String,
    pub size_bytes: i64,
}

/// Publishes `bytes` as the latest bundle.
pub async fn publish_bundle(
    db: &Db,
    base_url: &str,
    file_name: &str,
    bytes: &[u8],
) -> anyhow::Result<PublishedBundle> {
    if bytes.is_empty() {
        bail!("the bundle file is empty");
    }
    let bundle = Bundle {
        id: ids::new_bundle_id(),
        file_name: file_name.to_owned(),
        sha256: sha256_hex(bytes),
        size_bytes: i64::try_from(bytes.len()).context("bundle too large")?,
        published_at: now_millis(),
    };
    bundles::publish_bundle(db, &bundle, bytes).await?;
    Ok(PublishedBundle {
        bundle_url: format!("{base_url}/v1/bundles/{}", bundle.id),
        bundle_checksum: format!("sha256:{}", bundle.sha256),
        bundle_id: bundle.id,
        size_bytes: bundle.size_bytes,
    })
}

/// Parses an RFC 3339 timestamp given on the command line.
pub fn parse_timestamp(text: &str) -> anyhow::Result<Millis> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .with_context(|| {
            format!("{text:?} is not an RFC 3339 timestamp such as 2027-01-31T00:00:00Z")
        })
}

/// A member as operator commands print it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberView {
    pub email: String,
    pub role: &'static str,
    pub added_at: String,
    pub last_login_at: Option<String>,
}

impl From<tidemark_store::access::Member> for MemberView {
    fn from(m: tidemark_store::access::Member) -> Self {
        MemberView {
            email: m.email,
            role: m.role.as_str(),
            added_at: tidemark_domain::to_rfc3339(m.added_at),
            last_login_at: m.last_login_at.map(tidemark_domain::to_rfc3339),
        }
    }
}

async fn require_account(db: &Db, account_id: &str) -> anyhow::Result<()> {
    let known = tidemark_store::licenses::list_licenses(db)
        .await?
        .iter()
        .any(|l| l.account_id == account_id);
    anyhow::ensure!(known, "no account {account_id}");
    Ok(())
}

pub async fn add_member(
    db: &Db,
    account_id: &str,
    email: &str,
    role: tidemark_domain::access::Role,
) -> anyhow::Result<MemberView> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    require_account(db, account_id).await?;
    let member = tidemark_store::access::add_member(db, account_id, &email, role, now_millis())
        .await?
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(member.into())
}

pub async fn list_members(db: &Db, account_id: &str) -> anyhow::Result<Vec<MemberView>> {
    require_account(db, account_id).await?;
    Ok(tidemark_store::access::list_members(db, account_id)
        .await?
        .into_iter()
        .map(MemberView::from)
        .collect())
}

pub async fn remove_member(db: &Db, account_id: &str, email: &str) -> anyhow::Result<()> {
    let email = Email::parse(email).map_err(|e| anyhow::anyhow!(e.message))?;
    let member = tidemark_store::access::find_member_by_email(db, account_id, &email)
        .await?
        .ok_or_else(|| anyhow::anyhow!("{} is not a member of {account_id}", email.as_str()))?;
    tidemark_store::access::change_member(db, account_id, &member.user_id, None)
        .await?
        .map_err(|e| anyhow::anyhow!(e))?;
    Ok(())
}

/// An SSO domain as operator commands print it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SsoView {
    pub domain: String,
    pub account_id: String,
    pub idp_entity_id: String,
    pub idp_sso_url: String,
    pub signing_certificates: usize,
    pub enforce: bool,
    pub updated_at: String,
}

impl From<tidemark_store::sso::SsoDomain> for SsoView {
    fn from(s: tidemark_store::sso::SsoDomain) -> Self {
        SsoView {
            signing_certificates: s.signing_certs.len(),
            domain: s.domain,
            account_id: s.account_id,
            idp_entity_id: s.idp_entity_id,
            idp_sso_url: s.idp_sso_url,
            enforce: s.enforce,
            updated_at: to_rfc3339(s.updated_at),
        }
    }
}

/// A bare e-mail domain (`example.com`), lower-cased.
pub fn parse_domain(raw: &str) -> anyhow::Result<String> {
    let raw = raw.trim().trim_start_matches('@');
    Email::parse(&format!("user@{raw}"))
        .map(|e| e.domain().to_owned())
        .map_err(|_| anyhow::anyhow!("{raw:?} is not an e-mail domain such as example.com"))
}

/// Configures SAML for `domain` on an enterprise account; its users' sessions end.
pub async fn set_sso(
    db: &Db,
    account_id: &str,
    domain: &str,
    metadata_xml: &str,
    enforce: bool,
) -> anyhow::Result<SsoView> {
    let domain = parse_domain(domain)?;
    let license = licenses::list_licenses(db)
        .await?
        .into_iter()
        .find(|l| l.account_id == account_id)
        .ok_or_else(|| anyhow::anyhow!("no account {account_id}"))?;
    anyhow::ensure!(
        tidemark_domain::tier::allows_sso(license.tier),
        "SAML single sign-on needs an enterprise license (this account is {})",
        license.tier.as_str()
    );
    let idp = crate::auth::saml::parse_idp_metadata(metadata_xml)
        .map_err(|e| anyhow::anyhow!("IdP metadata refused: {e}"))?;
    let sso = tidemark_store::sso::SsoDomain {
        domain: domain.clone(),
        account_id: account_id.to_owned(),
        idp_entity_id: idp.entity_id,
        idp_sso_url: idp.sso_url,
        signing_certs: idp.signing_certs,
        enforce,
        metadata_xml: metadata_xml.to_owned(),
        updated_at: now_millis(),
    };
    let stored = tidemark_store::sso::set_sso_domain(db, &sso).await?;
    anyhow::ensure!(stored, "{domain} is already configured for another account");
    Ok(sso.into())
}

pub async fn list_sso(db: &Db, account_id: Option<&str>) -> anyhow::Result<Vec<SsoView>> {
    Ok(tidemark_store::sso::list_sso_domains(db, account_id)
        .await?
        .into_iter()
        .map(SsoView::from)
        .collect())
}

pub async fn remove_sso(db: &Db, domain: &str) -> anyhow::Result<()> {
    let domain = parse_domain(domain)?;
    let removed = tidemark_store::sso::remove_sso_domain(db, &domain).await?;
    anyhow::ensure!(removed, "{domain} has no SAML configuration");
    Ok(())
}

/// Settings' SSO controls, for the dashboard's server functions.
pub struct DashboardSso {
    pub db: Db,
}

impl app::settings::SsoAdmin for DashboardSso {
    fn configure(
        &self,
        account_id: String,
        domain: String,
        metadata_xml: String,
        enforce: bool,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<app::settings::SsoSummary, String>> + Send>,
    > {
        let db = self.db.clone();
        Box::pin(async move {
            // Run to completion even if the browser goes away mid-write.
            let set = tokio::spawn(async move {
                set_sso(&db, &account_id, &domain, &metadata_xml, enforce).await
            })
            .await
            .map_err(|e| e.to_string())?;
            set.map(|v| app::settings::SsoSummary {
                domain: v.domain,
                idp_entity_id: v.idp_entity_id,
                enforce: v.enforce,
            })
            .map_err(|e| e.to_string())
        })
    }

    fn remove(
        &self,
        account_id: String,
        domain: String,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>> {
        let db = self.db.clone();
        Box::pin(async move {
            let domain = parse_domain(&domain).map_err(|e| e.to_string())?;
            let owned = tidemark_store::sso::find_sso_domain(&db, &domain)
                .await
                .map_err(|e| e.to_string())?
                .is_some_and(|s| s.account_id == account_id);
            if !owned {
                return Err(format!(
                    "{domain} has no SAML configuration in this account"
                ));
            }
            tokio::spawn(async move { remove_sso(&db, &domain).await })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())
        })
    }
}
