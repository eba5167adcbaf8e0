//! The vendor's admin API (`/admin/v1`): licences as the vendor's billing, CRM and support
//! systems read and change them, and the tokens they call it with. Times are RFC 3339 UTC.

use serde::{Deserialize, Deserializer, Serialize};
#[cfg(feature = "openapi")]
use utoipa::ToSchema;

use crate::{Feature, Tier};

/// A licence as the vendor sees it (never its key, except once when it is made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AdminLicense {
    /// `lcn_…`
    pub id: String,
    /// `acct_…`: the customer's account.
    pub account_id: String,
    /// The holder's e-mail address, the account's first admin.
    pub email: String,
    pub tier: Tier,
    /// `active`, `expired` or `suspended` (suspension wins over expiry).
    pub state: String,
    pub expires_at: String,
    pub suspended_at: Option<String>,
    /// The per-licence project cap override; null: the tier's cap (`project_cap`).
    pub max_projects: Option<u64>,
    /// How many active projects the licence may hold now; null: unlimited.
    pub project_cap: Option<u64>,
    /// What the licence carries: its tier's features, plus `features_added`, minus
    /// `features_removed`. Validation, verdicts and every feature check read this.
    pub features: Vec<Feature>,
    /// Entitlement overrides: features beyond the tier's.
    pub features_added: Vec<Feature>,
    /// Entitlement overrides: the tier's features taken away.
    pub features_removed: Vec<Feature>,
    pub created_at: String,
    /// Bumped by every change; the `ETag` is `"<id>.<version>"`.
    pub version: i64,
}

/// A page of licences, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct LicensePage {
    pub licenses: Vec<AdminLicense>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A licence to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateLicenseRequest {
    /// The holder's e-mail address: they become the account's first admin.
    pub email: String,
    pub tier: Tier,
    /// RFC 3339; default one year from now.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// A project cap instead of the tier's.
    #[serde(default)]
    pub max_projects: Option<u64>,
    #[serde(default)]
    pub features_added: Vec<Feature>,
    #[serde(default)]
    pub features_removed: Vec<Feature>,
}

/// A licence just made, with its key: the only answer that ever holds it (a retry with the
/// same `Idempotency-Key` answers it again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CreatedLicense {
    pub license: AdminLicense,
    /// `lic_…`: give it to the customer (it is also mailed on resend).
    pub license_key: String,
}

/// A change to a licence: only the fields sent change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateLicenseRequest {
    #[serde(default)]
    pub tier: Option<Tier>,
    /// RFC 3339. The support role may only move it later, by at most 30 days past the later
    /// of the current expiry and now.
    #[serde(default)]
    pub expires_at: Option<String>,
    /// A number sets the cap override; `null` removes it (the tier's cap holds again).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>))]
    pub max_projects: Option<Option<u64>>,
    /// Replaces the features added beyond the tier's.
    #[serde(default)]
    pub features_added: Option<Vec<Feature>>,
    /// Replaces the tier's features taken away.
    #[serde(default)]
    pub features_removed: Option<Vec<Feature>>,
}

/// A field that may be sent as `null` to clear it: absent is `None`, `null` is `Some(None)`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Why a licence is suspended or resumed: kept in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StateChangeRequest {
    /// 1 to 500 characters.
    pub reason: String,
}

/// An offline licence file to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct OfflineFileRequest {
    /// How many days it runs: 1 to 400, never past the licence's expiry.
    pub days: u32,
    /// Binds it to one machine (`tidemark fingerprint`).
    #[serde(default)]
    pub machine: Option<String>,
}

/// A vendor token's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum VendorRoleName {
    Admin,
    Sales,
    Support,
    Billing,
    Read,
}

/// A vendor token as listed: never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorTokenInfo {
    /// `vtk_…`
    pub id: String,
    pub name: String,
    pub role: VendorRoleName,
    /// `tmk_vendor_` and six characters.
    pub prefix: String,
    pub created_at: String,
    /// Who made it: `operator:<user>` or `vendor:<token name>`.
    pub created_by: String,
    pub expires_at: Option<String>,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorTokenList {
    pub tokens: Vec<VendorTokenInfo>,
}

/// A token to make.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateVendorTokenRequest {
    /// 1 to 64 of a-z, 0-9, '.', '_' and '-': the audit log names its calls `vendor:<name>`.
    pub name: String,
    pub role: VendorRoleName,
    /// RFC 3339; default: no expiry.
    #[serde(default)]
    pub expires_at: Option<String>,
}

/// A token just made: `token` is in this answer only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CreatedVendorToken {
    pub token: String,
    #[serde(flatten)]
    pub info: VendorTokenInfo,
}
