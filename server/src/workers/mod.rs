//! The background loops: each owns its lease and its pacing (mail, webhooks, housekeeping).

pub mod housekeeping;
pub mod mail;
pub mod webhooks;
