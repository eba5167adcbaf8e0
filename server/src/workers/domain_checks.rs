//! Rechecks of pending SSO domain claims: every minute each replica takes the claims whose
//! check is due (each by one replica, under a lease of its own) and looks their DNS record
//! up, for a week after a claim is made.

use std::sync::Arc;
use std::time::Duration;

use tidemark_services::ports::TxtLookup;
use tidemark_store::Writer;

use crate::workers::runner::{Lease, Pacing, Worker};

/// Claims checked per pass at most.
const BATCH: i64 = 20;

pub struct DomainChecks {
    pub dns: Arc<dyn TxtLookup>,
}

#[async_trait::async_trait]
impl Worker for DomainChecks {
    fn name(&self) -> &'static str {
        "domain-checks"
    }

    fn lease(&self) -> Lease {
        Lease::PerItem
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(Duration::from_secs(60), Duration::ZERO)
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        let checked = tidemark_services::sso::recheck_due(db, &self.dns, BATCH).await?;
        Ok(checked as u64)
    }
}
