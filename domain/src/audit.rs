//! The audit log's vocabulary: the actions recorded, and who did them from where.

use crate::Millis;

macro_rules! actions {
    ($($variant:ident => $name:literal, $label:literal;)*) => {
        /// Every change the audit log records: admin actions in the dashboard and operator
        /// commands that change data.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Action {
            $($variant,)*
        }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The stored and filterable name, `noun.verb`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Action::$variant => $name,)*
                }
            }

            /// What people read in Settings.
            pub fn label(self) -> &'static str {
                match self {
                    $(Action::$variant => $label,)*
                }
            }

            pub fn parse(name: &str) -> Option<Action> {
                Action::ALL.iter().copied().find(|a| a.as_str() == name)
            }
        }
    };
}

actions! {
    KeysRotated => "keys.rotated", "API keys rotated";
    KeyRevoked => "key.revoked", "API key revoked";
    KeyCreated => "key.created", "API key made";
    MemberAdded => "member.added", "Member added";
    MemberRoleChanged => "member.role_changed", "Member's role changed";
    MemberRemoved => "member.removed", "Member removed";
    SsoClaimed => "sso.claimed", "SSO domain claimed";
    SsoVerified => "sso.verified", "SSO domain verified";
    SsoRemoved => "sso.removed", "SSO domain removed";
    ProjectArchived => "project.archived", "Project archived";
    ProjectUnarchived => "project.unarchived", "Project unarchived";
    GateSet => "gate.set", "Quality gate set";
    GateRemoved => "gate.removed", "Quality gate removed";
    DefaultBranchChanged => "project.default_branch_changed", "Default branch changed";
    BranchPruned => "branch.pruned", "Branch or pull request pruned";
    WebhookCreated => "webhook.created", "Webhook added";
    WebhookSecretRotated => "webhook.secret_rotated", "Webhook secret replaced";
    WebhookDeleted => "webhook.deleted", "Webhook deleted";
    BadgeIssued => "badge.issued", "Badge link made";
    BadgeRevoked => "badge.revoked", "Badge revoked";
    LicenseCreated => "license.created", "License created";
    LicenseSuspended => "license.suspended", "License suspended";
    LicenseResumed => "license.resumed", "License resumed";
    LicenseExtended => "license.extended", "License extended";
    LicenseUpdated => "license.updated", "License's entitlements changed";
    LicenseResent => "license.resent", "License mailed to its holder again";
    MachineReleased => "machine.released", "Machine's seat released";
    VendorTokenCreated => "vendor_token.created", "Vendor token created";
    VendorTokenRevoked => "vendor_token.revoked", "Vendor token revoked";
    VendorWebhookCreated => "vendor_webhook.created", "Vendor webhook endpoint added";
    VendorWebhookDeleted => "vendor_webhook.deleted", "Vendor webhook endpoint removed";
    AdminRead => "admin.read", "Read through the admin API";
    BundlePublished => "bundle.published", "Bundle published";
    CataloguePublished => "catalogue.published", "Framework catalogue published";
    PublisherAdded => "publisher.added", "Trusted publisher added";
    PublisherPinned => "publisher.pinned", "Trusted publisher pinned to repository ids";
    PublisherRemoved => "publisher.removed", "Trusted publisher removed";
    SigningKeyCreated => "signing_key.created", "Verdict-signing key created";
    SigningKeyRetired => "signing_key.retired", "Verdict-signing key retired";
    OfflineLicenseIssued => "license.offline_file_issued", "Offline licence file issued";
    ScimTokenCreated => "scim.token_created", "SCIM token created";
    ScimTokenRevoked => "scim.token_revoked", "SCIM token revoked";
    ScimUserProvisioned => "scim.user_provisioned", "Person provisioned by SCIM";
    ScimUserChanged => "scim.user_changed", "Provisioned person changed";
    ScimUserDeactivated => "scim.user_deactivated", "Provisioned person deactivated";
    ScimUserReactivated => "scim.user_reactivated", "Provisioned person reactivated";
    ScimUserDeleted => "scim.user_deleted", "Provisioned person deleted";
    ScimGroupCreated => "scim.group_created", "Group provisioned by SCIM";
    ScimGroupChanged => "scim.group_changed", "Provisioned group changed";
    ScimGroupDeleted => "scim.group_deleted", "Provisioned group deleted";
    ScimGroupAdminSet => "scim.group_admin_set", "Group's admin role changed";
    FindingTriaged => "finding.triaged", "Finding triaged";
    FindingTriageUndone => "finding.triage_undone", "Finding's triage undone";
    HousekeepingPolicySet => "housekeeping.policy_set", "Housekeeping policy set";
    FrameworkSet => "framework.set", "Custom framework set";
    FrameworkDeleted => "framework.deleted", "Custom framework deleted";
    StaffSignedIn => "console.signed_in", "Staff member signed in to the console";
    StaffSignedOut => "console.signed_out", "Staff member signed out of the console";
    StaffRefused => "console.refused", "Staff sign-in refused";
    ConsoleRead => "console.read", "Read in the vendor's console";
}

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A signed-in member, by user id and the e-mail address they had then.
    User { user_id: String, email: String },
    /// Someone running `tidemark-server` commands on the host (the OS user, when known).
    Operator { name: String },
    /// The server itself, on its own schedule (the DNS re-checks of SSO domain claims).
    System { name: String },
    /// An identity provider provisioning through SCIM, by its token's prefix. Stored with
    /// the kind `system` (the audit table's kinds predate it): the IdP acts on its own.
    Scim { token_prefix: String },
    /// A script or CI job with the account's API key, by the key's prefix (kind `system`,
    /// like SCIM: nobody signed in).
    ApiKey { key_prefix: String },
    /// The vendor's billing, CRM or support system (or a person) with a vendor token, by the
    /// token's name (kind `operator`: the vendor acting, as on the host).
    Vendor { token_name: String },
    /// A member of the vendor's staff in the console, by the e-mail address their provider
    /// gave (kind `operator`: the vendor acting, by name).
    Staff { email: String },
}

impl Actor {
    pub fn kind(&self) -> &'static str {
        match self {
            Actor::User { .. } => "user",
            Actor::Operator { .. } | Actor::Vendor { .. } | Actor::Staff { .. } => "operator",
            Actor::System { .. } | Actor::Scim { .. } | Actor::ApiKey { .. } => "system",
        }
    }

    /// How the log shows the actor, and what the actor filter matches.
    pub fn name(&self) -> String {
        match self {
            Actor::User { email, .. } => email.clone(),
            Actor::Operator { name } => format!("operator:{name}"),
            Actor::System { name } => format!("system:{name}"),
            Actor::Scim { token_prefix } => format!("scim:{token_prefix}"),
            Actor::ApiKey { key_prefix } => format!("api-key:{key_prefix}"),
            Actor::Vendor { token_name } => format!("vendor:{token_name}"),
            Actor::Staff { email } => format!("staff:{email}"),
        }
    }

    pub fn user_id(&self) -> Option<&str> {
        match self {
            Actor::User { user_id, .. } => Some(user_id),
            Actor::Operator { .. }
            | Actor::System { .. }
            | Actor::Scim { .. }
            | Actor::ApiKey { .. }
            | Actor::Vendor { .. }
            | Actor::Staff { .. } => None,
        }
    }
}

/// Who, from where and when: what every audited change carries into its transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditContext {
    pub actor: Actor,
    /// The client's address (behind trusted proxies, the forwarded one); none for commands.
    pub client_ip: Option<String>,
    pub at: Millis,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_name_is_unique_and_parses_back() {
        let mut names: Vec<&str> = Action::ALL.iter().map(|a| a.as_str()).collect();
        for a in Action::ALL {
            assert_eq!(Action::parse(a.as_str()), Some(*a));
            assert!(a.as_str().contains('.'), "{a:?}");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Action::ALL.len());
        assert_eq!(Action::parse("keys.rotated "), None);
    }

    #[test]
    fn operators_are_named_apart_from_members() {
        let op = Actor::Operator {
            name: "root".into(),
        };
        assert_eq!(
            (op.kind(), op.name().as_str(), op.user_id()),
            ("operator", "operator:root", None)
        );
        let user = Actor::User {
            user_id: "usr_1".into(),
            email: "a@example.com".into(),
        };
        assert_eq!(
            (user.kind(), user.name().as_str(), user.user_id()),
            ("user", "a@example.com", Some("usr_1"))
        );
    }
}
