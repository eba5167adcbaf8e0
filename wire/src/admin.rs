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
    /// Seats: how many machines may be activated at once; null: unlimited.
    pub max_machines: Option<u64>,
    /// Days a seat may go unseen (no activation, validation or push) before it is freed;
    /// null: the server's `TIDEMARK_SEAT_RELEASE_AFTER_DAYS`; 0: never by time.
    pub seat_release_after_days: Option<u32>,
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
    /// Seats (from the checkout's quantity); default: the tier's in the server's
    /// `TIDEMARK_DEFAULT_SEATS`, else unlimited.
    #[serde(default)]
    pub max_machines: Option<u64>,
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
    /// Seats: a number limits them, `null` makes them unlimited. Machines already holding a
    /// seat keep it; new activations wait for a free one.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u64>))]
    pub max_machines: Option<Option<u64>>,
    /// Days a seat may go unseen before it is freed (0: never by time); `null`: the server's
    /// default again.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<u32>))]
    pub seat_release_after_days: Option<Option<u32>>,
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

/// A customer's account as the vendor sees it: its licence, and how much it uses (never its
/// findings or scans' contents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AdminAccount {
    /// `acct_…`
    pub id: String,
    pub created_at: String,
    pub license_id: Option<String>,
    pub email: Option<String>,
    pub tier: Option<Tier>,
    pub members: i64,
    pub projects: i64,
    pub active_keys: i64,
    pub scans: i64,
}

/// A page of accounts, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AccountPage {
    pub accounts: Vec<AdminAccount>,
    pub next_cursor: Option<String>,
}

/// One audited change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AdminAuditEvent {
    /// `aud_…`
    pub id: String,
    pub at: String,
    /// Null for changes of no account (a bundle, a vendor token).
    pub account_id: Option<String>,
    /// `user`, `operator` (the host's operator or a vendor token) or `system`.
    pub actor_kind: String,
    /// An e-mail address, `operator:<user>`, `vendor:<token name>`, `system:<task>`,
    /// `scim:<prefix>` or `api-key:<prefix>`.
    pub actor: String,
    pub client_ip: Option<String>,
    /// `noun.verb`, e.g. `license.suspended`.
    pub action: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A page of the audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AuditEventPage {
    pub events: Vec<AdminAuditEvent>,
    pub next_cursor: Option<String>,
}

/// A bundle just published.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AdminBundle {
    /// `bnd_…`
    pub bundle_id: String,
    /// Where scanners download it (with a valid licence).
    pub bundle_url: String,
    /// `sha256:<hex>` of exactly the bytes served.
    pub bundle_checksum: String,
    pub size_bytes: i64,
}

/// A verdict-signing key and its schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SigningKeyInfo {
    pub kid: String,
    pub generation: i64,
    /// `announced` (published, not signing yet), `signing`, or `verifying` (superseded, still
    /// published while what it signed may be valid).
    pub stage: String,
    pub published_at: String,
    pub signs_from: String,
    pub signs_until: Option<String>,
    pub retires_at: Option<String>,
}

/// The published keys; `added` and `retired` say what this call changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct SigningKeyList {
    pub keys: Vec<SigningKeyInfo>,
    /// The key a rotation added.
    pub added: Option<String>,
    /// Keys whose time had come: their private halves are destroyed, they are unpublished.
    pub retired: Vec<String>,
}

/// A rotation of the verdict-signing key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RotateSigningKeyRequest {
    /// How long the new key is published before it signs: an age such as `48h`, `7d`, `2w`,
    /// or `0` to sign with it at once (the current key is compromised). Default: the
    /// server's `TIDEMARK_SIGNING_KEY_OVERLAP`.
    #[serde(default)]
    pub overlap: Option<String>,
}

/// A machine activated on a licence: a seat while `released_at` is null.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct AdminMachine {
    /// `mch_…`
    pub id: String,
    /// The name its latest activation gave.
    pub name: String,
    /// Its `X-Machine-Fingerprint`, when its activation sent one (else it is known by name).
    pub fingerprint: Option<String>,
    pub activated_at: String,
    /// Its latest activation.
    pub last_seen_at: String,
    pub released_at: Option<String>,
    /// Its API keys still live.
    pub live_keys: i64,
    /// An offline licence file holds this seat until then (it cannot be released before).
    pub offline_until: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct MachineList {
    pub machines: Vec<AdminMachine>,
    /// Seats held now.
    pub seats_used: i64,
    /// The licence's limit; null: unlimited.
    pub max_machines: Option<u64>,
}

/// One licence event, exactly as a vendor webhook endpoint receives it (signed like the
/// account webhooks, `Tidemark-Signature: t=…,v1=…`) and as `GET /admin/v1/events` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorEvent {
    /// `evt_…`: the same on every delivery and retry of the event; a receiver drops repeats
    /// by it.
    pub id: String,
    /// `license.created`, `license.updated`, `license.suspended`, `license.resumed`,
    /// `license.expiring`, `license.expired`, `machine.activated`, `machine.released` or
    /// `seat_limit.reached`.
    #[serde(rename = "type")]
    pub event_type: String,
    pub created_at: String,
    /// `lcn_…`
    pub license_id: String,
    /// The licence's own order of events (from 1, with gaps): an endpoint receives a
    /// licence's events in this order.
    pub sequence: i64,
    pub data: VendorEventData,
}

/// What the event is about, as it was when it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorEventData {
    pub license: AdminLicense,
    /// `machine.*` events: the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<EventMachine>,
    /// Suspensions and resumptions: the reason given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `license.expiring`: 30, 7 or 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days_left: Option<u32>,
    /// `seat_limit.reached`: the licence's seats, all taken.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat_limit: Option<u64>,
}

/// The machine of a `machine.*` or `seat_limit.reached` event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct EventMachine {
    /// `mch_…`; null for `seat_limit.reached` (the machine was refused a seat).
    pub id: Option<String>,
    pub name: String,
    pub fingerprint: Option<String>,
}

/// A page of events, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorEventPage {
    pub events: Vec<VendorEvent>,
    /// Pass as `cursor` for the next (older) page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A vendor webhook endpoint (its URL shown as scheme, host and port only: a URL may carry
/// a credential).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorWebhook {
    /// `vwh_…`
    pub id: String,
    pub url: String,
    pub events: Vec<String>,
    pub created_at: String,
    /// Deliveries not finished yet (waiting their turn, or being retried).
    pub pending: i64,
    /// Deliveries given up after a day of retries.
    pub failed: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VendorWebhookList {
    pub webhooks: Vec<VendorWebhook>,
}

/// An endpoint to add.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CreateVendorWebhookRequest {
    /// `https://…` (plain `http` only to hosts the operator allows).
    pub url: String,
    /// Event types to receive; default every one.
    #[serde(default)]
    pub events: Option<Vec<String>>,
}

/// A new endpoint and its signing secret, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CreatedVendorWebhook {
    pub webhook: VendorWebhook,
    /// `whsec_…`: verify `Tidemark-Signature` with it.
    pub secret: String,
}

/// A published framework catalogue (without its requirements).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CatalogueInfo {
    /// Tidemark's framework id (`cis-aws-2.0`); its requirements are the rules
    /// `<framework>-<Id>`.
    pub framework: String,
    /// `CIS 2.0 (AWS)`, or the document's `Name`.
    pub name: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub requirements: i64,
    /// RFC 3339.
    pub published_at: String,
    /// `operator:<user>` or `vendor:<token name>`.
    pub published_by: String,
}

/// The published catalogues, by framework.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CatalogueList {
    pub catalogues: Vec<CatalogueInfo>,
}

/// One requirement of a catalogue, as the dashboard shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CatalogueRequirementInfo {
    /// The document's `Id` (`2.1.4`).
    pub id: String,
    /// The Tidemark rule (`cis-aws-2.0-2.1.4`).
    pub rule_id: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub section: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// `AssessmentStatus: Manual`: no scan evaluates it.
    pub manual: bool,
    /// Prowler's check names.
    pub checks: Vec<String>,
}

/// A catalogue with every requirement, in the published order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct CatalogueDetail {
    #[serde(flatten)]
    pub catalogue: CatalogueInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub requirement_list: Vec<CatalogueRequirementInfo>,
    /// Whether this publication replaced an earlier one (answers to a `PUT` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<bool>,
}

/// Prowler's compliance-framework JSON, as far as Tidemark reads it: the body of
/// `PUT /admin/v1/catalogues/{framework}`. Other keys are allowed and ignored (Prowler adds
/// its own per framework). Text has no control characters (descriptions may hold tab and line
/// breaks). The one rule a schema cannot say: each `Id` appears once.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ProwlerCatalogue {
    /// `CIS`: not blank.
    #[cfg_attr(
        feature = "openapi",
        schema(
            min_length = 1,
            max_length = 300,
            pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\s\\u0000-\\u001f\\u007f-\\u009f][^\\u0000-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub framework: String,
    /// What people read; made from `Framework`, `Version` and `Provider` when absent.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 300, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub name: Option<String>,
    /// `2.0`.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub version: String,
    /// `AWS`.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub provider: Option<String>,
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 20000,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub description: Option<String>,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 5000))]
    pub requirements: Vec<ProwlerRequirement>,
}

/// One requirement of Prowler's document.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
#[serde(rename_all = "PascalCase")]
pub struct ProwlerRequirement {
    /// `2.1.4`: becomes the rule `<framework>-2.1.4`; unique in the document.
    #[cfg_attr(
        feature = "openapi",
        schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9._-]+$")
    )]
    pub id: String,
    /// The title; CIS files have none and title a requirement by its `Description` (its first
    /// 1,000 characters).
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(max_length = 1000, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")
    )]
    pub name: Option<String>,
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 20000,
            pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
        )
    )]
    pub description: Option<String>,
    /// Only the first is read; each is checked.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<ProwlerAttributes>))]
    pub attributes: Vec<serde_json::Map<String, serde_json::Value>>,
    /// Prowler's check names.
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Vec<ProwlerCheck>, max_items = 200)
    )]
    pub checks: Vec<String>,
}

/// A Prowler check's name (`s3_bucket_level_public_access_block`).
#[cfg(feature = "openapi")]
#[derive(ToSchema)]
#[schema(
    min_length = 1,
    max_length = 200,
    pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
)]
#[allow(dead_code)]
pub struct ProwlerCheck(String);

/// The attributes Tidemark reads from a requirement's `Attributes` entries (text or null;
/// other keys are ignored).
#[cfg(feature = "openapi")]
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "PascalCase")]
#[allow(dead_code)]
pub struct ProwlerAttributes {
    /// Groups requirements on the framework page; from the `Id` when absent (`2.1` of `2.1.4`).
    #[schema(max_length = 300, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    section: Option<String>,
    /// The requirement's longer text.
    #[schema(
        max_length = 20000,
        pattern = "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f]*$"
    )]
    description: Option<String>,
    /// `Level 1`.
    #[schema(max_length = 300, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    profile: Option<String>,
    /// `Manual`: no scan can evaluate it; `Automated`.
    #[schema(max_length = 100, pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$")]
    assessment_status: Option<String>,
}
