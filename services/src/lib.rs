//! Tidemark's use cases: each business action once (licensing, API keys, members, SSO
//! claims, webhooks, audit reads, bundles, exports and reports, validation), between the adapters above (`/v1` handlers, the
//! dashboard's server functions, the operator's subcommands) and `store`/`domain` below. An
//! adapter parses its input, calls one use case and renders the answer; what needs the network
//! or DNS is a port (a trait in `ports`) the server implements.

pub mod account;
pub mod activity;
pub mod alerts;
pub mod api_keys;
pub mod audit;
pub mod badges;
pub mod billing;
pub mod bundles;
pub mod business;
pub mod catalogues;
pub mod console;
pub mod crypto;
mod error;
pub mod exports;
pub mod findings;
pub mod frameworks;
pub mod licensing;
pub mod lines;
pub mod members;
pub mod ports;
pub mod posture;
pub mod projects;
pub mod publishers;
pub mod scans;
pub mod seats;
mod services;
pub mod signing_keys;
pub mod sso;
pub mod triage;
pub mod vendor;
pub mod vendor_events;
pub mod webhooks;

pub use error::{log_unavailable, ServiceError};
pub use services::Services;
pub use tidemark_store::Db;
