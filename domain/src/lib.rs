//! Tidemark's domain rules: every rule of the contract that can be decided without HTTP or a
//! database lives here, as a plain function or as a type that can only hold a valid value.

pub mod access;
pub mod api_keys;
pub mod append;
pub mod audit;
pub mod badge;
pub mod catalogue;
pub mod chart;
pub mod ci_identity;
pub mod console;
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
pub mod license_actions;
pub mod license_events;
pub mod overview;
pub mod paging;
pub mod posture;
pub mod project_order;
pub mod push;
pub mod rate;
pub mod report;
pub mod retention;
pub mod saml;
pub mod scim;
pub mod seats;
pub mod secrets;
pub mod signing;
pub mod spans;
pub mod sso;
pub mod stripe;
pub mod text;
pub mod tier;
pub mod time;
pub mod vendor;
pub mod webhook;

pub use time::{now_millis, to_rfc3339, Millis};
