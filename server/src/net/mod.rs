//! The outside network the server reaches on its own: DNS look-ups (SSO domain records,
//! outbound hosts) and the guard every tenant-named outbound host resolves through.

pub mod dns;
pub mod guard;
