//! Background work, one [`runner::Worker`] per job on the one [`runner::Runner`]: the mail
//! outbox, webhook deliveries, licence events to the vendor, housekeeping, SSO domain
//! rechecks, seats gone quiet, API keys about to expire, projects' storage and tidying.

pub mod domain_checks;
pub mod housekeeping;
pub mod key_expiry;
pub mod license_events;
pub mod mail;
pub mod project_usage;
pub mod runner;
pub mod seats;
pub mod tidy;
pub mod webhooks;

use std::sync::Arc;

use crate::state::AppState;
use runner::{Runner, Worker};

/// Every worker this replica runs, started; dropping the runner stops them.
pub fn start(state: &AppState) -> anyhow::Result<Runner> {
    let mut workers: Vec<Arc<dyn Worker>> = vec![
        Arc::new(mail::MailSender::new(state)?),
        Arc::new(webhooks::WebhookSender::new(state)?),
        Arc::new(domain_checks::DomainChecks {
            dns: Arc::new(state.dns.clone()),
        }),
        Arc::new(tidy::Tidy),
        Arc::new(key_expiry::KeyExpiry),
        Arc::new(project_usage::ProjectUsage),
        Arc::new(license_events::VendorSender::new(state)?),
        Arc::new(license_events::Calendar),
        Arc::new(seats::Sightings {
            validator: state.validator.clone(),
        }),
        Arc::new(seats::Seats {
            release_after_days: state.config.limits.seat_release_after_days,
        }),
    ];
    if let Some(housekeeping) = housekeeping::Housekeeping::from_config(state) {
        workers.push(Arc::new(housekeeping));
    }
    let holder = housekeeping::holder_name("replica");
    Ok(Runner::start(
        workers,
        &state.db,
        &holder,
        state.metrics.clone(),
    ))
}
