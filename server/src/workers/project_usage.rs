//! Measures what projects' data takes (`tidemark_store::usage`) off the request path: every
//! 30 seconds, one replica at a time, the projects housekeeping or pruning made stale, those
//! pushed to since a measurement five minutes old (and any not measured for a day), longest
//! waiting first, until the pass's allowance is spent. Settings → Storage and `project list` read the figures it keeps.

use std::time::Duration;

use tidemark_domain::now_millis;
use tidemark_domain::time::MINUTE_MS;
use tidemark_store::usage::{refresh_stale, Allowance};
use tidemark_store::Writer;

use crate::workers::runner::{Lease, Pacing, Worker};

/// One pass's share: long enough to catch up with a busy account, short enough that a pass
/// never holds the lease for long.
/// A pushed project is measured again once its figure is five minutes old: a project pushed
/// back to back was measured after every push (24 ms of PostgreSQL's time each, a quarter of
/// a core beside 16 CI jobs of one account). Settings → Storage and `project list` measure
/// what they show first, within their own small allowance.
const PASS: Allowance = Allowance {
    projects: 500,
    time: Duration::from_secs(20),
    settle: Duration::from_secs(300),
};

pub struct ProjectUsage;

#[async_trait::async_trait]
impl Worker for ProjectUsage {
    fn name(&self) -> &'static str {
        "project_usage"
    }

    fn lease(&self) -> Lease {
        Lease::Named {
            name: "project_usage",
            ttl_ms: 5 * MINUTE_MS,
        }
    }

    fn pacing(&self) -> Pacing {
        Pacing {
            first_after: Duration::from_secs(5),
            idle: Duration::from_secs(30),
            busy: Duration::from_secs(1),
        }
    }

    async fn pass(&self, db: &Writer, _holder: &str) -> anyhow::Result<u64> {
        Ok(refresh_stale(db, None, now_millis(), PASS).await?)
    }
}
