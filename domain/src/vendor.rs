//! The vendor's admin API: the tokens its billing, CRM and support systems call `/admin/v1`
//! with, the role each carries, and what each role may do. Plain rules, so the role matrix is
//! one table tested here, not a check scattered through handlers.

use crate::license::{License, LicenseEdit};
use crate::secrets::{sha256_hex, HashedApiKey};
use crate::time::{Millis, DAY_MS};

pub const VENDOR_TOKEN_PREFIX: &str = "tmk_vendor_";

/// A vendor token: `tmk_vendor_` + 32 random bytes in base62. Shown once when made; stored as
/// a hash, with its first characters kept to name it.
#[derive(Clone, PartialEq, Eq)]
pub struct VendorToken(String);
crate::redacted_debug!(VendorToken);

impl VendorToken {
    pub fn generate() -> Self {
        Self(format!(
            "{VENDOR_TOKEN_PREFIX}{}",
            crate::secrets::random_base62_32_bytes()
        ))
    }

    /// An `Authorization` header's value: `Bearer tmk_vendor_…` (the scheme's case does not
    /// matter). Anything else is no vendor token.
    pub fn parse(header: Option<&str>) -> Option<Self> {
        crate::secrets::bearer_token(header, VENDOR_TOKEN_PREFIX).map(|t| Self(t.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> HashedApiKey {
        HashedApiKey::from_hex(sha256_hex(self.0.as_bytes()))
    }

    /// `tmk_vendor_` and six more characters.
    pub fn display_prefix(&self) -> String {
        self.0.chars().take(VENDOR_TOKEN_PREFIX.len() + 6).collect()
    }
}

/// A vendor token's name: 1 to 64 of `a-z 0-9 . _ -`, starting with a letter or digit. The
/// audit log names the token's calls `vendor:<name>`, so it is plain and short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenName(String);

impl TokenName {
    pub fn parse(text: &str) -> Result<Self, String> {
        let ok = (1..=64).contains(&text.len())
            && text.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        if ok {
            Ok(TokenName(text.to_owned()))
        } else {
            Err(
                "name must be 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter \
                 or digit"
                    .to_owned(),
            )
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a vendor token may do; one role per token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VendorRole {
    /// Everything, including tokens and vendor webhooks.
    Admin,
    /// Makes licences and changes what they carry.
    Sales,
    /// Reads; resends, suspends and resumes, extends a little, frees seats, offline files.
    Support,
    /// What a checkout integration does.
    Billing,
    /// Reads.
    Read,
}

impl VendorRole {
    pub const ALL: [VendorRole; 5] = [
        VendorRole::Admin,
        VendorRole::Sales,
        VendorRole::Support,
        VendorRole::Billing,
        VendorRole::Read,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            VendorRole::Admin => "admin",
            VendorRole::Sales => "sales",
            VendorRole::Support => "support",
            VendorRole::Billing => "billing",
            VendorRole::Read => "read",
        }
    }

    pub fn parse(text: &str) -> Option<VendorRole> {
        VendorRole::ALL.into_iter().find(|r| r.as_str() == text)
    }

    pub fn may(self, permission: Permission) -> bool {
        permission.roles().contains(&self)
    }
}

/// One kind of thing a call does; a call may need several (a licence change that moves the
/// tier and the expiry needs both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    /// Every read: licences, accounts, audit, bundles, keys.
    Read,
    CreateLicense,
    SetTier,
    SetSeats,
    /// Entitlement overrides: features added or removed.
    SetFeatures,
    SetMaxProjects,
    /// Any new expiry, earlier or later.
    SetExpiry,
    /// A later expiry at most [`SUPPORT_EXTENSION_MS`] past the current one (or now).
    ExtendBriefly,
    Suspend,
    Resume,
    Resend,
    ReleaseSeat,
    OfflineFile,
    /// Tokens, vendor webhooks, bundles and signing keys.
    Administer,
}

impl Permission {
    /// The roles that have it, most powerful first.
    pub fn roles(self) -> &'static [VendorRole] {
        use VendorRole::*;
        match self {
            Permission::Read => &[Admin, Sales, Support, Billing, Read],
            Permission::CreateLicense | Permission::SetTier | Permission::SetSeats => {
                &[Admin, Sales, Billing]
            }
            Permission::SetFeatures | Permission::SetMaxProjects => &[Admin, Sales],
            Permission::SetExpiry => &[Admin, Sales, Billing],
            Permission::ExtendBriefly => &[Admin, Sales, Support, Billing],
            // A checkout that suspends on a failed payment resumes when it is paid.
            Permission::Suspend | Permission::Resume => &[Admin, Support, Billing],
            Permission::Resend | Permission::ReleaseSeat | Permission::OfflineFile => {
                &[Admin, Support]
            }
            Permission::Administer => &[Admin],
        }
    }

    /// The roles named in an `insufficient_role` answer: "sales, billing or admin".
    pub fn roles_in_words(self) -> String {
        let names: Vec<&str> = self.roles().iter().map(|r| r.as_str()).collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        }
    }
}

/// How far support may move an expiry on its own.
pub const SUPPORT_EXTENSION_MS: Millis = 30 * DAY_MS;

/// Whether moving a licence's expiry from `current` to `new` is a brief extension: later than
/// it was, and at most [`SUPPORT_EXTENSION_MS`] past the later of the current expiry and now
/// (an expired licence is extended from today).
pub fn is_brief_extension(current: Millis, new: Millis, now: Millis) -> bool {
    new > current && new <= current.max(now) + SUPPORT_EXTENSION_MS
}

/// What an edit of `current` needs: a later expiry within support's reach needs only
/// [`Permission::ExtendBriefly`], any other new expiry [`Permission::SetExpiry`].
pub fn permissions_for(edit: &LicenseEdit, current: &License, now: Millis) -> Vec<Permission> {
    let mut needed = Vec::new();
    if edit.tier.is_some_and(|t| t != current.tier) {
        needed.push(Permission::SetTier);
    }
    if let Some(at) = edit.expires_at.filter(|at| *at != current.expires_at) {
        needed.push(if is_brief_extension(current.expires_at, at, now) {
            Permission::ExtendBriefly
        } else {
            Permission::SetExpiry
        });
    }
    if edit.max_projects.is_some_and(|m| m != current.max_projects) {
        needed.push(Permission::SetMaxProjects);
    }
    let seats_change = edit.max_machines.is_some_and(|m| m != current.max_machines)
        || edit
            .seat_release_after_days
            .is_some_and(|d| d != current.seat_release_after_days);
    if seats_change {
        needed.push(Permission::SetSeats);
    }
    let overrides_change = edit
        .features_added
        .as_ref()
        .is_some_and(|f| *f != current.features_added)
        || edit
            .features_removed
            .as_ref()
            .is_some_and(|f| *f != current.features_removed);
    if overrides_change {
        needed.push(Permission::SetFeatures);
    }
    match edit.suspended {
        Some((true, _)) => needed.push(Permission::Suspend),
        Some((false, _)) => needed.push(Permission::Resume),
        None => {}
    }
    needed
}

/// The first permission in `needed` that `role` lacks.
pub fn missing_permission(role: VendorRole, needed: &[Permission]) -> Option<Permission> {
    needed.iter().copied().find(|p| !role.may(*p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use VendorRole::*;

    #[test]
    fn the_role_table_is_the_issues_table() {
        let may = |role: VendorRole| -> Vec<Permission> {
            use Permission::*;
            [
                Read,
                CreateLicense,
                SetTier,
                SetSeats,
                SetFeatures,
                SetMaxProjects,
                SetExpiry,
                ExtendBriefly,
                Suspend,
                Resume,
                Resend,
                ReleaseSeat,
                OfflineFile,
                Administer,
            ]
            .into_iter()
            .filter(|p| role.may(*p))
            .collect()
        };
        use Permission::*;
        assert_eq!(may(VendorRole::Read), vec![Permission::Read]);
        assert_eq!(
            may(Support),
            vec![
                Permission::Read,
                ExtendBriefly,
                Suspend,
                Resume,
                Resend,
                ReleaseSeat,
                OfflineFile
            ]
        );
        assert_eq!(
            may(Sales),
            vec![
                Permission::Read,
                CreateLicense,
                SetTier,
                SetSeats,
                SetFeatures,
                SetMaxProjects,
                SetExpiry,
                ExtendBriefly
            ]
        );
        assert_eq!(
            may(Billing),
            vec![
                Permission::Read,
                CreateLicense,
                SetTier,
                SetSeats,
                SetExpiry,
                ExtendBriefly,
                Suspend,
                Resume
            ]
        );
        assert_eq!(may(Admin).len(), 14);
        assert_eq!(Permission::SetFeatures.roles_in_words(), "admin or sales");
        assert_eq!(
            Permission::CreateLicense.roles_in_words(),
            "admin, sales or billing"
        );
        assert_eq!(
            missing_permission(Support, &[Permission::Read, SetTier, Suspend]),
            Some(SetTier)
        );
        assert_eq!(
            missing_permission(Sales, &[Permission::Read, SetTier]),
            None
        );
    }

    #[test]
    fn support_extends_from_the_later_of_expiry_and_now_by_thirty_days_at_most() {
        let now = 1_000 * DAY_MS;
        // Still running: from its expiry.
        let expiry = now + 10 * DAY_MS;
        assert!(is_brief_extension(expiry, expiry + 30 * DAY_MS, now));
        assert!(!is_brief_extension(expiry, expiry + 30 * DAY_MS + 1, now));
        // Earlier, or unchanged, is no extension.
        assert!(!is_brief_extension(expiry, expiry, now));
        assert!(!is_brief_extension(expiry, expiry - DAY_MS, now));
        // Expired a year ago: from today.
        let expired = now - 365 * DAY_MS;
        assert!(is_brief_extension(expired, now + 30 * DAY_MS, now));
        assert!(!is_brief_extension(expired, now + 31 * DAY_MS, now));
    }

    #[test]
    fn token_names_are_plain() {
        for good in ["billing", "stripe-checkout", "crm.v2", "0day_support"] {
            assert!(TokenName::parse(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Billing",
            "-x",
            "a b",
            "x/y",
            &"a".repeat(65),
            "ünïcode",
        ] {
            assert!(TokenName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn vendor_tokens_are_read_only_from_a_bearer_header() {
        let token = VendorToken::generate();
        assert!(token.expose().starts_with(VENDOR_TOKEN_PREFIX));
        let header = format!("Bearer {}", token.expose());
        assert_eq!(VendorToken::parse(Some(&header)), Some(token.clone()));
        assert_eq!(token.display_prefix().len(), VENDOR_TOKEN_PREFIX.len() + 6);
        assert_eq!(format!("{token:?}"), "VendorToken(<redacted>)");
        for bad in [
            token.expose().to_owned(),
            format!("Basic {}", token.expose()),
            "Bearer tmk_vendor_".to_owned(),
            "Bearer tmk_vendor_a-b".to_owned(),
            "Bearer tmk_scim_abc".to_owned(),
            format!("Bearer tmk_vendor_{}", "a".repeat(65)),
        ] {
            assert_eq!(VendorToken::parse(Some(&bad)), None, "{bad}");
        }
        assert_eq!(VendorToken::parse(None), None);
    }
}
