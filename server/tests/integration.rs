//! The server's integration tests, in one binary: the whole server is linked once for all of
//! them instead of once per file. Each module is one area (its own doc says which).

mod common;

mod admin_api;
mod alerts;
mod assets;
mod audit;
mod backups;
mod badges;
mod branches;
mod cli_client;
mod cli_verdicts;
mod dashboard_api;
mod demo;
mod deployment;
mod exports;
mod faults;
mod findings;
mod frameworks;
mod gates;
mod housekeeping;
mod key_rotation;
mod keyless_ci;
mod license_api;
mod migrations;
mod openapi;
mod operations;
mod operator_cli;
mod operator_inventory;
mod posture;
mod posture_pages;
mod push_api;
mod push_budget;
mod report;
mod saml_login;
mod scim;
mod seats;
mod secrets_at_rest;
mod security_headers;
mod sign_in;
mod sso_claims;
mod stripe_billing;
mod timeouts;
mod vendor_events;
mod verdicts;
mod webhooks;
