//! The use cases `/v1`, the dashboard's forms and the operator's commands share: validating
//! and activating licences (and the answer cache in front of validation), and exports. They
//! sit between the handlers (`api/`, `web/`, `operator/`) and the store and crypto below.

pub mod export;
pub mod report;
pub mod validation_cache;
