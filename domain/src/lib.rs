//! Tidemark's domain rules: every rule of the contract that can be decided without HTTP or a
//! database lives here, as a plain function or as a type that can only hold a valid value.

pub mod access;
pub mod append;
pub mod audit;
pub mod badge;
pub mod chart;
pub mod ci_identity;
pub mod findings;
pub mod form_seal;
pub mod forwarded;
pub mod frameworks;
pub mod freshness;
pub mod gate;
pub mod git;
pub mod handover;
pub mod housekeeping;
pub mod ids;
pub mod input;
pub mod license;
pub mod overview;
pub mod posture;
pub mod push;
pub mod rate;
pub mod report;
pub mod retention;
pub mod saml;
pub mod scim;
pub mod secrets;
pub mod signing;
pub mod spans;
pub mod sso;
pub mod text;
pub mod tier;
pub mod webhook;

/// Milliseconds since the Unix epoch: how every timestamp is stored.
pub type Millis = i64;

pub fn to_rfc3339(ms: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn now_millis() -> Millis {
    chrono::Utc::now().timestamp_millis()
}
