//! Dashboard-side handlers that are not server functions: plain forms and downloads.

pub mod badge;
pub mod downloads;
pub mod offline_license;
pub mod triage_form;
