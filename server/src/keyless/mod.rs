//! Keyless CI: a CI job's OpenID Connect token, verified against its issuer's published keys,
//! exchanged for a short-lived push token. What the claims must say is decided in
//! `tidemark_domain::ci_identity`; here are the keys ([`jwks`]) and the signature
//! ([`token`]).

pub mod jwks;
pub mod token;

pub use jwks::KeySets;
