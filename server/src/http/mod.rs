//! Cross-cutting HTTP plumbing: the one error every JSON answer renders (`error`), request ids, access logs, metrics, health probes, security
//! headers, database deadlines, panics answered, the site's assets compressed, answers
//! compressed, the island scripts a page needs, and secrets shown once on the page a form
//! came from.

pub mod assets;
pub mod body;
pub mod client_ip;
pub mod deadline;
pub mod download;
pub mod error;
pub mod health;
pub mod islands;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod panics;
pub mod request_id;
pub mod scrape;
pub mod security_headers;
pub mod server_fn_status;
pub mod shown_once;
