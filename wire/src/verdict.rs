//! Signed licence verdicts and the key set that verifies them.
//!
//! A verdict is a compact JWS (RFC 7515) signed with Ed25519 (`alg: EdDSA`, RFC 8037) whose
//! payload is [`VerdictClaims`]. The keys are published as a JWKS ([`KeySet`]) in which every
//! key carries its validity window, and which the keys themselves sign
//! ([`KeySet::signatures`]), so a client that trusts one key can learn its successor without
//! trusting whoever handed it the document.

use serde::{Deserialize, Serialize};

#[cfg(feature = "openapi")]
use utoipa::ToSchema;

use crate::{Feature, Tier};

/// The JWS `typ` of a verdict from `validate` or `activate`.
pub const VERDICT_TYP: &str = "tidemark-verdict+jwt";
/// The JWS `typ` of an offline licence file's verdict.
pub const OFFLINE_VERDICT_TYP: &str = "tidemark-offline-licence+jwt";
/// The JWS `typ` of a key's introduction by its predecessor.
pub const KEY_INTRO_TYP: &str = "tidemark-key-intro+jwt";
/// The JWS `typ` of a key set's signature.
pub const KEY_SET_TYP: &str = "tidemark-keys+jwt";
/// The `aud` of every verdict: the product it licenses.
pub const VERDICT_AUDIENCE: &str = "tidemark-scanner";

/// What a verdict says. Times are Unix seconds, as in every JWT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct VerdictClaims {
    /// The service that signed it (its base URL).
    pub iss: String,
    /// Always `tidemark-scanner`.
    pub aud: String,
    /// `sha256:` and the hex SHA-256 of the `X-License-Key-Hash` the client sent: names the
    /// licence without being a credential for it.
    pub sub: String,
    pub iat: i64,
    /// The end of the offline grace: the verdict is not to be trusted after it.
    pub exp: i64,
    pub jti: String,
    /// True when the licence is active and not expired (as `valid` in the answer).
    pub valid: bool,
    /// `active`, `expired` or `suspended`.
    pub status: String,
    pub tier: Tier,
    pub features: Vec<Feature>,
    /// The licence's own expiry, RFC 3339.
    pub expiry: String,
    pub bundle_url: Option<String>,
    /// `sha256:` and the hex digest of the bundle's bytes, as `bundle_checksum`.
    pub bundle_sha256: Option<String>,
    /// The machine fingerprint the request carried (`X-Machine-Fingerprint`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
}

/// One public key of the key set: an OKP JWK (RFC 8037) and when it may be trusted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct PublicKey {
    /// Always `OKP`.
    pub kty: String,
    /// Always `Ed25519`.
    pub crv: String,
    /// The public key, base64url without padding.
    pub x: String,
    pub kid: String,
    /// Always `EdDSA`.
    pub alg: String,
    /// Always `sig`.
    #[serde(rename = "use")]
    pub use_: String,
    /// When the key was published (Unix seconds): clients learn it from then on.
    pub published_at: i64,
    /// From when the service signs with it (Unix seconds); until then it is announced only.
    pub signs_from: i64,
    /// When the service stopped signing with it (its successor's `signs_from`); null while
    /// it is the current key or still to come.
    pub signs_until: Option<i64>,
    /// When it leaves the key set: nothing it signed is valid after this. Null while it
    /// signs.
    pub retires_at: Option<i64>,
}

/// `GET /v1/keys` and `/.well-known/tidemark-keys.json`: a JWKS with validity windows, signed
/// by the keys in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct KeySet {
    /// The published keys, oldest first.
    pub keys: Vec<PublicKey>,
    /// One compact JWS per key that signs (`typ` `tidemark-keys+jwt`), each over
    /// [`KeySetClaims`]: a client accepts a key it does not know yet only from the payload
    /// of a signature it verifies with a key it already trusts, never from `keys` above.
    pub signatures: Vec<String>,
    /// The succession: for every key after the first, a compact JWS (`typ`
    /// `tidemark-key-intro+jwt`, payload [`KeyIntroduction`]) by the key before it, oldest
    /// first, kept after keys retire. A client that trusts any key of the chain walks it to
    /// the current keys.
    #[serde(default)]
    pub chain: Vec<String>,
}

/// The payload of a key's introduction by its predecessor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyIntroduction {
    pub iss: String,
    pub iat: i64,
    pub generation: i64,
    pub kid: String,
    /// The introduced key, base64url.
    pub x: String,
}

/// The payload of a key-set signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeySetClaims {
    pub iss: String,
    pub iat: i64,
    pub keys: Vec<PublicKey>,
}

/// An offline licence file (`tidemark-server license file`, or Settings): the signed verdict
/// and the key set that verifies it, for a machine that never reaches the service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(ToSchema))]
pub struct OfflineLicenseFile {
    /// Always `tidemark-offline-licence`.
    pub format: String,
    /// A compact JWS, `typ` `tidemark-offline-licence+jwt`, over [`VerdictClaims`].
    pub verdict: String,
    pub keys: KeySet,
}

/// The `format` of an offline licence file.
pub const OFFLINE_FILE_FORMAT: &str = "tidemark-offline-licence";
