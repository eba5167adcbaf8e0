//! The Tidemark scanner client.
//!
//! - [`license`]: the local license mode (24-hour validation cache, 7-day offline grace) as a
//!   pure state machine with an injected clock, decided from signed verdicts only;
//! - [`verdict`]: the signing keys this machine trusts, and verdicts verified with them;
//! - [`machine`]: this machine's fingerprint, bound into verdicts;
//! - [`credentials`]: the credentials file, created with mode 0600 and refused when looser;
//! - [`client`]: the `/v1` calls; pushes retried with bounded back-off (`429`, `503`, no answer);
//! - [`bundle`]: download, checksum verification and atomic replacement of the bundle;
//! - [`git`]: the push's git context from GitHub Actions, GitLab CI or `git` itself;
//! - [`decorate`]: one pull-request comment, updated on every push, and a commit status;
//! - [`keyless`]: keyless CI, the job's OpenID Connect token exchanged for a push token;
//! - [`manage`]: `tidemark findings` and `tidemark gate`, a project's findings, triage and gate;
//! - [`cli`]: the `tidemark` command, callable in-process (the binary is a thin wrapper).
//!
//! Request and response types come from `tidemark-wire`, the crate the server uses too, so the
//! two cannot drift apart. Nothing here depends on Leptos or the server.

pub mod activate;
pub mod bundle;
pub mod cli;
pub mod client;
mod credential;
pub mod credentials;
pub mod decorate;
pub mod env;
pub mod exit;
pub mod frameworks;
pub mod git;
pub mod keyless;
pub mod license;
pub mod machine;
pub mod manage;
pub mod posture;
pub mod push;
pub mod report;
pub mod verdict;

use sha2::{Digest as _, Sha256};

/// What the scanner sends instead of the license key: its SHA-256, lowercase hex.
pub fn license_key_hash(license_key: &str) -> String {
    hex::encode(Sha256::digest(license_key.trim().as_bytes()))
}
