//! Credentials as types. Each is created only by generating or parsing, prints as
//! `<redacted>` in `Debug`, and is looked up by its hash, never compared as a string.

use sha2::{Digest as _, Sha256};

const BASE62: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub(crate) fn random_base62_32_bytes() -> String {
    let mut bytes = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    base_x::encode(BASE62, &bytes)
}

/// `Debug` that prints `Type(<redacted>)`: for every type that holds a secret, here and in
/// the server's configuration.
#[macro_export]
macro_rules! redacted_debug {
    ($t:ident) => {
        impl ::std::fmt::Debug for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(concat!(stringify!($t), "(<redacted>)"))
            }
        }
    };
}

/// A raw license key, `lic_` + 32 random bytes in base62. Exists only when a license is
/// created and when the resend mail is composed.
#[derive(Clone, PartialEq, Eq)]
pub struct LicenseKey(String);
redacted_debug!(LicenseKey);

impl LicenseKey {
    pub fn generate() -> Self {
        Self(format!("lic_{}", random_base62_32_bytes()))
    }

    /// A key decrypted from storage.
    pub fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// What a client sends in `X-License-Key-Hash`.
    pub fn client_hash(&self) -> LicenseKeyHash {
        LicenseKeyHash(sha256_hex(self.0.as_bytes()))
    }
}

/// The `X-License-Key-Hash` value: 64 lowercase hex characters.
#[derive(Clone, PartialEq, Eq)]
pub struct LicenseKeyHash(String);
redacted_debug!(LicenseKeyHash);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("X-License-Key-Hash must be the SHA-256 of the license key as 64 hex characters")]
pub struct InvalidLicenseHash;

impl LicenseKeyHash {
    /// Accepts 64 hex characters in either case (upper case is lower-cased).
    pub fn parse(header: &str) -> Result<Self, InvalidLicenseHash> {
        if header.len() == 64 && header.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Self(header.to_ascii_lowercase()))
        } else {
            Err(InvalidLicenseHash)
        }
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The form stored for look-up: a hash of the hash, so a database dump cannot be replayed
    /// as a header.
    pub fn lookup(&self) -> LookupHash {
        LookupHash(sha256_hex(self.0.as_bytes()))
    }
}

/// `sha256(X-License-Key-Hash)`, hex: the only license credential the database holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupHash(String);

impl LookupHash {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

pub const API_KEY_PREFIX: &str = "svc_api_";
/// How much of a key Settings shows.
pub const API_KEY_DISPLAY_LEN: usize = 12;

/// A raw API key, `svc_api_` + 32 random bytes in base62. Shown once, at issue time.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);
redacted_debug!(ApiKey);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ApiKeyError {
    #[error("missing")]
    Missing,
    #[error("malformed")]
    Malformed,
}

impl ApiKey {
    pub fn generate() -> Self {
        Self(format!("{API_KEY_PREFIX}{}", random_base62_32_bytes()))
    }

    /// A key from `X-API-Key`. Only the prefix and the alphabet are checked here; whether the
    /// key exists is a look-up by hash.
    pub fn parse(header: Option<&str>) -> Result<Self, ApiKeyError> {
        let raw = header.ok_or(ApiKeyError::Missing)?;
        if raw.is_empty() {
            return Err(ApiKeyError::Missing);
        }
        match raw.strip_prefix(API_KEY_PREFIX) {
            Some(rest)
                if !rest.is_empty()
                    && rest.len() <= 64
                    && rest.bytes().all(|b| b.is_ascii_alphanumeric()) =>
            {
                Ok(Self(raw.to_owned()))
            }
            _ => Err(ApiKeyError::Malformed),
        }
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> HashedApiKey {
        HashedApiKey(sha256_hex(self.0.as_bytes()))
    }

    /// The first characters, safe to display in Settings.
    pub fn display_prefix(&self) -> String {
        self.0.chars().take(API_KEY_DISPLAY_LEN).collect()
    }
}

pub const CI_TOKEN_PREFIX: &str = "tmk_ci_";

/// A push token from a keyless CI exchange: `tmk_ci_` + 32 random bytes in base62, valid for
/// minutes. Shown once, in the exchange's answer; stored as a hash.
#[derive(Clone, PartialEq, Eq)]
pub struct CiPushToken(String);
redacted_debug!(CiPushToken);

impl CiPushToken {
    pub fn generate() -> Self {
        Self(format!("{CI_TOKEN_PREFIX}{}", random_base62_32_bytes()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Stored and looked up like an API key's hash.
    pub fn hash(&self) -> HashedApiKey {
        HashedApiKey(sha256_hex(self.0.as_bytes()))
    }
}

/// The token of an `Authorization: Bearer <prefix>…` header (the scheme's case does not
/// matter): `prefix` and 1 to 64 base62 characters, else `None`.
pub(crate) fn bearer_token<'h>(header: Option<&'h str>, prefix: &str) -> Option<&'h str> {
    let (scheme, token) = header?.trim().split_once(' ')?;
    let token = token.trim();
    let rest = token.strip_prefix(prefix)?;
    (scheme.eq_ignore_ascii_case("bearer")
        && !rest.is_empty()
        && rest.len() <= 64
        && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then_some(token)
}

pub const SCIM_TOKEN_PREFIX: &str = "tmk_scim_";

/// An account's SCIM bearer token: `tmk_scim_` + 32 random bytes in base62. Shown once when
/// made; stored as a hash, with its first characters kept to name it in Settings and the
/// audit log.
#[derive(Clone, PartialEq, Eq)]
pub struct ScimToken(String);
redacted_debug!(ScimToken);

impl ScimToken {
    pub fn generate() -> Self {
        Self(format!("{SCIM_TOKEN_PREFIX}{}", random_base62_32_bytes()))
    }

    /// An `Authorization` header's value: `Bearer tmk_scim_…` (the scheme's case does not
    /// matter).
    pub fn parse(header: Option<&str>) -> Option<Self> {
        bearer_token(header, SCIM_TOKEN_PREFIX).map(|t| Self(t.to_owned()))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn hash(&self) -> HashedApiKey {
        HashedApiKey(sha256_hex(self.0.as_bytes()))
    }

    /// `tmk_scim_` and six more characters: enough to tell tokens apart, useless to guess.
    pub fn display_prefix(&self) -> String {
        self.0.chars().take(SCIM_TOKEN_PREFIX.len() + 6).collect()
    }
}

/// What authenticates a `/v1` call that needs an account: an API key, or a keyless CI push
/// token, from `X-API-Key` or `Authorization: Bearer`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    ApiKey(ApiKey),
    CiToken(CiPushToken),
}

impl Credential {
    pub fn parse(header: Option<&str>) -> Result<Self, ApiKeyError> {
        match header {
            Some(raw) if raw.starts_with(CI_TOKEN_PREFIX) => {
                let rest = &raw[CI_TOKEN_PREFIX.len()..];
                if !rest.is_empty()
                    && rest.len() <= 64
                    && rest.bytes().all(|b| b.is_ascii_alphanumeric())
                {
                    Ok(Credential::CiToken(CiPushToken(raw.to_owned())))
                } else {
                    Err(ApiKeyError::Malformed)
                }
            }
            other => ApiKey::parse(other).map(Credential::ApiKey),
        }
    }
}

/// `sha256(api key)`, hex: what the database stores and looks keys up by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedApiKey(String);

impl HashedApiKey {
    pub(crate) fn from_hex(hex: String) -> Self {
        HashedApiKey(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_have_their_prefixes_and_full_entropy() {
        let lic = LicenseKey::generate();
        assert!(lic.expose().starts_with("lic_"));
        // 32 bytes in base62 is 43 characters (fewer only with leading zero bytes).
        assert!((40..=47).contains(&lic.expose().len()), "{}", lic.expose());
        let key = ApiKey::generate();
        assert!(key.expose().starts_with(API_KEY_PREFIX));
        assert!(ApiKey::parse(Some(key.expose())).is_ok());
        assert_ne!(ApiKey::generate(), key);
        assert_eq!(key.display_prefix().len(), 12);
    }

    #[test]
    fn scim_tokens_are_read_only_from_a_bearer_header() {
        let token = ScimToken::generate();
        let header = format!("Bearer {}", token.expose());
        assert_eq!(ScimToken::parse(Some(&header)), Some(token.clone()));
        assert_eq!(
            ScimToken::parse(Some(&format!("bearer  {}", token.expose()))),
            Some(token.clone())
        );
        for bad in [
            token.expose().to_owned(),
            format!("Basic {}", token.expose()),
            "Bearer tmk_scim_".to_owned(),
            "Bearer tmk_scim_a-b".to_owned(),
            format!("Bearer tmk_scim_{}", "a".repeat(65)),
            "Bearer svc_api_abc".to_owned(),
        ] {
            assert_eq!(ScimToken::parse(Some(&bad)), None, "{bad}");
        }
        assert_eq!(token.display_prefix().len(), 15);
        assert!(!format!("{token:?}").contains(token.expose()));
    }

    #[test]
    fn license_hash_header_rules() {
        let lic = LicenseKey::generate();
        let h = lic.client_hash();
        assert_eq!(h.expose().len(), 64);
        let upper = h.expose().to_ascii_uppercase();
        assert_eq!(LicenseKeyHash::parse(&upper).unwrap(), h);
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(63), &"a".repeat(65)] {
            assert_eq!(LicenseKeyHash::parse(bad), Err(InvalidLicenseHash), "{bad}");
        }
        // The stored look-up value is not the header value.
        assert_ne!(h.lookup().as_str(), h.expose());
        assert_eq!(h.lookup().as_str(), sha256_hex(h.expose().as_bytes()));
    }

    #[test]
    fn api_key_header_rules() {
        assert_eq!(ApiKey::parse(None), Err(ApiKeyError::Missing));
        assert_eq!(ApiKey::parse(Some("")), Err(ApiKeyError::Missing));
        for bad in [
            "abc",
            "svc_api_",
            "svc_key_abc",
            "svc_api_abc-def",
            "SVC_API_abc",
        ] {
            assert_eq!(
                ApiKey::parse(Some(bad)),
                Err(ApiKeyError::Malformed),
                "{bad}"
            );
        }
    }

    #[test]
    fn credentials_are_keys_or_ci_tokens() {
        let token = CiPushToken::generate();
        assert!(token.expose().starts_with(CI_TOKEN_PREFIX));
        assert_eq!(
            Credential::parse(Some(token.expose())),
            Ok(Credential::CiToken(token.clone()))
        );
        assert!(matches!(
            Credential::parse(Some(ApiKey::generate().expose())),
            Ok(Credential::ApiKey(_))
        ));
        for bad in ["tmk_ci_", "tmk_ci_a-b", "tmk_cix"] {
            assert_eq!(
                Credential::parse(Some(bad)),
                Err(ApiKeyError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(Credential::parse(None), Err(ApiKeyError::Missing));
        assert!(!format!("{token:?}").contains(token.expose()));
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let lic = LicenseKey::generate();
        let key = ApiKey::generate();
        let hash = lic.client_hash();
        let shown = format!("{lic:?} {key:?} {hash:?}");
        assert!(!shown.contains(lic.expose()));
        assert!(!shown.contains(key.expose()));
        assert!(!shown.contains(hash.expose()));
        assert!(shown.contains("<redacted>"));
    }
}
