//! Cross-cutting HTTP plumbing: request ids, access logs, metrics, health probes, security
//! headers.

pub mod client_ip;
pub mod health;
pub mod listener;
pub mod metrics;
pub mod request_id;
pub mod security_headers;
pub mod server_fn_status;
