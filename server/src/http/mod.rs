//! Cross-cutting HTTP plumbing: request ids, access logs, metrics, health probes.

pub mod client_ip;
pub mod health;
pub mod metrics;
pub mod request_id;
pub mod server_fn_status;
