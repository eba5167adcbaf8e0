//! Settings' sections: badges, storage, provisioning, publishers, webhooks, alerts, the
//! audit log, secrets shown once, the quality gate, members, keys, licence and SSO.

use serde::{Deserialize, Serialize};

use super::*;

/// Settings' badge list: every active project, with its badge when it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadgesView {
    pub is_admin: bool,
    pub rows: Vec<BadgeRow>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadgeRow {
    pub project_id: tidemark_wire::ids::ProjectId,
    pub label: String,
    /// The badge's own path (for the preview) and the Markdown to paste; `None` without one.
    pub image: Option<String>,
    pub markdown: Option<String>,
}

/// Settings' storage section: what each project's data takes, largest first, and the
/// housekeeping policy in words (`None`: housekeeping is off).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageView {
    pub total: String,
    /// When the oldest figure shown was measured, in words ("3 minutes ago").
    pub measured: Option<String>,
    pub own_policy: bool,
    pub policy: Option<Vec<String>>,
    pub projects: Vec<StorageRow>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageRow {
    pub project_id: tidemark_wire::ids::ProjectId,
    pub label: String,
    pub scans: i64,
    pub scans_thinned: i64,
    /// About how much its data takes ("3.4 MiB").
    pub size: String,
}

/// Settings' provisioning section (admins only): the SCIM endpoint, its token and the groups
/// the identity provider pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProvisioningView {
    /// Why SCIM is not open to this account (not enterprise, no verified domain); `None` when
    /// it is.
    pub unavailable: Option<String>,
    /// What to paste into the IdP as the SCIM base URL.
    pub scim_url: String,
    pub token: Option<ScimTokenView>,
    pub people: u64,
    pub active_people: u64,
    pub groups: Vec<ScimGroupRow>,
}

/// What an admin does in Settings → Provisioning (a plain form post to
/// `/settings/provisioning/change`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProvisioningAction {
    /// Make a token (replacing the one there is).
    CreateToken,
    RevokeToken,
    /// Mark the group as giving the admin role.
    GiveAdmin,
    StopAdmin,
}

impl ProvisioningAction {
    pub fn parse(raw: &str) -> Option<ProvisioningAction> {
        [
            ProvisioningAction::CreateToken,
            ProvisioningAction::RevokeToken,
            ProvisioningAction::GiveAdmin,
            ProvisioningAction::StopAdmin,
        ]
        .into_iter()
        .find(|a| a.as_str() == raw)
    }

    /// As the form posts it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProvisioningAction::CreateToken => "create_token",
            ProvisioningAction::RevokeToken => "revoke_token",
            ProvisioningAction::GiveAdmin => "give_admin",
            ProvisioningAction::StopAdmin => "stop_admin",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimTokenView {
    pub prefix: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimGroupRow {
    pub id: String,
    pub name: String,
    pub members: u64,
    pub grants_admin: bool,
}

/// Settings' trusted publishers (admins only): the CI identities that push keyless.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishersView {
    pub publishers: Vec<PublisherRow>,
    /// The audience jobs must request (`aud`).
    pub audience: String,
    /// The account's id, for `TIDEMARK_ACCOUNT` when two accounts trust one repository.
    pub account_id: tidemark_wire::ids::AccountId,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublisherRow {
    pub id: String,
    /// "GitHub Actions", "GitLab CI" or "Custom issuer".
    pub provider: String,
    pub issuer: String,
    pub repository: String,
    /// "1001 / 2002", or `None` until the first token pins them.
    pub ids: Option<String>,
    pub workflow: Option<String>,
    pub environment: Option<String>,
    pub ref_pattern: Option<String>,
    /// `None`: every project.
    pub project: Option<String>,
    pub last_used_at: Option<String>,
}

/// Settings' webhooks (admins only): the endpoints, the latest deliveries, and what a new
/// endpoint can be scoped to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhooksView {
    pub endpoints: Vec<WebhookRow>,
    pub deliveries: Vec<DeliveryRow>,
    /// Active projects, (id, label), for "only this project".
    pub projects: Vec<(tidemark_wire::ids::ProjectId, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookRow {
    pub id: String,
    /// Scheme, host and port only: the rest of a URL may be a credential.
    pub url: String,
    /// `None`: every project.
    pub project_label: Option<String>,
    pub format: String,
    pub events: Vec<String>,
    pub created_at: String,
    pub secret_rotated_at: Option<String>,
}

/// One delivery in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliveryRow {
    pub event_id: String,
    pub webhook_id: String,
    pub url: String,
    pub event: String,
    pub created_at: String,
    /// `pending`, `delivered` or `failed` (gave up).
    pub state: String,
    pub attempts: i64,
    pub status_code: Option<i64>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
    pub next_attempt_at: Option<String>,
}

/// Settings' alert preferences: what the signed-in member is mailed about, in this account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertsView {
    /// Where the mail goes.
    pub email: String,
    pub gate_failed: bool,
    pub score_regressed: bool,
    pub posture_drifted: bool,
    /// The week's warning of an API key about to expire (admins only; on unless turned off).
    pub key_expiring: bool,
    pub is_admin: bool,
    /// The account's licence has drift detection (the drift choice is offered only then).
    pub drift_detection: bool,
}

/// The audit log page's filters and page number (from its URL).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    pub page: i64,
}

/// One page of the account's audit log, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPage {
    pub rows: Vec<AuditRow>,
    pub has_more: bool,
    /// Everyone in the log, for the actor filter.
    pub actors: Vec<String>,
    /// Every action as (name, label), for the action filter.
    pub actions: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub at: String,
    pub actor: String,
    pub client_ip: Option<String>,
    pub action: String,
    pub action_label: String,
    pub target: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A signing secret, shown once (after creating an endpoint or replacing its secret).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct WebhookSecretShown {
    pub webhook_id: String,
    pub secret: String,
}

impl std::fmt::Debug for WebhookSecretShown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecretShown")
            .field("webhook_id", &self.webhook_id)
            .field("secret", &"[redacted]")
            .finish()
    }
}

/// A secret a plain form made, on the page its redirect names (`?shown=…`): the server takes
/// it from where the form left it, sealed (`server::http::shown_once`), and puts it in that
/// request's extensions. It never travels in a URL or a cookie.
#[derive(Clone, PartialEq)]
pub enum ShownOnce {
    /// The one new API key after Rotate Key.
    ApiKey(String),
    /// A named key made with New key (the others keep working).
    NamedApiKey(String),
    /// An endpoint's new signing secret (made with the endpoint or replaced).
    WebhookSecret(WebhookSecretShown),
    /// A new SCIM token for the identity provider.
    ScimToken(String),
    /// The page was loaded again (or the secret expired): it was shown once, never again.
    Gone,
}

impl std::fmt::Debug for ShownOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShownOnce::ApiKey(_) => "ShownOnce::ApiKey([redacted])",
            ShownOnce::NamedApiKey(_) => "ShownOnce::NamedApiKey([redacted])",
            ShownOnce::WebhookSecret(_) => "ShownOnce::WebhookSecret([redacted])",
            ShownOnce::ScimToken(_) => "ShownOnce::ScimToken([redacted])",
            ShownOnce::Gone => "ShownOnce::Gone",
        })
    }
}

impl ShownOnce {
    /// The secret this page's request carries, if any (server-rendered pages only).
    pub fn of_this_request() -> Option<ShownOnce> {
        #[cfg(feature = "ssr")]
        {
            leptos::prelude::use_context::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<ShownOnce>().cloned())
        }
        #[cfg(not(feature = "ssr"))]
        None
    }
}

/// A project's quality gate as the page shows and edits it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateSettings {
    pub min_score: Option<f64>,
    pub max_drop: Option<f64>,
    pub new_findings_at: Option<Severity>,
}

impl GateSettings {
    /// The conditions in words, for the page and its screen readers.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(min) = self.min_score {
            out.push(format!("score at least {min}"));
        }
        if let Some(drop) = self.max_drop {
            out.push(format!(
                "a drop of at most {drop} points from the previous scan"
            ));
        }
        if let Some(severity) = self.new_findings_at {
            out.push(format!(
                "no new open findings at {} severity or above",
                severity.as_str()
            ));
        }
        out
    }
}

/// A member's role in an account: admins change things, members read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemberRole {
    Admin,
    Member,
}

impl MemberRole {
    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Admin => "admin",
            MemberRole::Member => "member",
        }
    }

    /// The other role: what "Make …" in Settings changes a member to.
    pub fn other(self) -> MemberRole {
        match self {
            MemberRole::Admin => MemberRole::Member,
            MemberRole::Member => MemberRole::Admin,
        }
    }
}

/// What an admin does to a member in Settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemberAction {
    MakeAdmin,
    MakeMember,
    Remove,
}

impl MemberAction {
    pub fn to_role(role: MemberRole) -> MemberAction {
        match role {
            MemberRole::Admin => MemberAction::MakeAdmin,
            MemberRole::Member => MemberAction::MakeMember,
        }
    }

    /// As the form posts it.
    pub fn as_str(self) -> &'static str {
        match self {
            MemberAction::MakeAdmin => "make_admin",
            MemberAction::MakeMember => "make_member",
            MemberAction::Remove => "remove",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberSummary {
    pub email: String,
    pub role: MemberRole,
    /// RFC 3339.
    pub added_at: String,
    pub last_login_at: Option<String>,
    /// Provisioned by the account's identity provider (SCIM): changed there, not here.
    #[serde(default)]
    pub managed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyView {
    pub id: String,
    pub prefix: String,
    /// Its name (a key made in Settings) or the machine it was activated on.
    pub machine: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
    /// When it stops working (`None`: never).
    pub expires_at: Option<String>,
    /// Past its expiry: refused, listed until revoked.
    pub expired: bool,
}

/// A machine holding one of the licence's seats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineView {
    pub id: String,
    pub name: String,
    /// Its `X-Machine-Fingerprint`, when its activation sent one.
    pub fingerprint: Option<String>,
    pub activated_at: String,
    /// Its latest activation or push.
    pub last_seen_at: String,
    pub live_keys: i64,
    /// An offline licence file holds the seat until then.
    pub offline_until: Option<String>,
}

/// Settings → Machines: the seats held, and the licence's limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatsView {
    pub machines: Vec<MachineView>,
    /// `None`: unlimited.
    pub max_machines: Option<u64>,
    /// Days unseen before a seat is freed by itself; 0: never.
    pub release_after_days: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenseView {
    pub tier: String,
    pub state: String,
    pub features: Vec<String>,
    pub expires_at: String,
    pub projects_used: u64,
    pub project_cap: Option<u64>,
}

/// Where an SSO claim stands (see `tidemark_domain::sso::ClaimState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SsoState {
    /// Waiting for its DNS record: routes nobody, enforces nothing.
    Pending,
    /// Proven: the domain's people sign in through this IdP.
    Verified,
    /// Over; `ended_reason` says why.
    Ended,
}

/// One SSO claim of the account, as Settings shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsoSummary {
    pub domain: String,
    pub state: SsoState,
    pub idp_entity_id: String,
    pub enforce: bool,
    /// The TXT record to publish: its name and its exact value.
    pub record_name: String,
    pub record_value: String,
    /// When the record was last looked up, and what was found.
    pub checked_at: Option<String>,
    pub check_message: Option<String>,
    /// Whether the server still looks again by itself (every 15 minutes for 7 days).
    pub rechecking: bool,
    pub verified_at: Option<String>,
    pub ended_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsView {
    pub is_admin: bool,
    pub viewer_email: String,
    pub license: Option<LicenseView>,
    pub keys: Vec<KeyView>,
    pub members: Vec<MemberSummary>,
    pub sso: Vec<SsoSummary>,
    pub seats: SeatsView,
}

/// Settings → Frameworks: the account's custom frameworks and what the viewer may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameworksView {
    pub is_admin: bool,
    /// The licence has custom frameworks.
    pub available: bool,
    /// The licence's tier (none: no licence).
    pub tier: Option<String>,
    /// The lowest tier with custom frameworks, for the refusal.
    pub needed_tier: String,
    pub frameworks: Vec<CustomFrameworkView>,
}

/// One custom framework with its controls, each mapped to rule ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomFrameworkView {
    pub id: String,
    /// `custom:<id>`, as posture names it.
    pub posture_name: String,
    pub title: String,
    pub description: Option<String>,
    pub controls: Vec<tidemark_wire::frameworks::ControlDocument>,
    pub updated_at: String,
    pub updated_by: String,
}
