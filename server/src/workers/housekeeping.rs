//! Housekeeping in the background (issue 36): every so often one replica (the one holding
//! the `housekeeping` lease) moves scans stored as rows to spans, judges the posture of scans
//! stored before it was kept, then thins old scans' findings as the policy says. Each step is a short transaction with a pause after it, so
//! pushes wait behind it a few milliseconds at most; a replica that dies mid-pass leaves a
//! consistent database and its lease lapses for another to carry on.

use std::time::Duration;

use tidemark_domain::housekeeping::Policy;
use tidemark_domain::{now_millis, Millis};
use tidemark_store::housekeeping;
use tidemark_store::posture::backfill::backfill_batch;
use tidemark_store::spans::moving::{move_batch, Cursor};
use tidemark_store::{leases, StoreError, Writer};

use crate::state::AppState;
use crate::workers::runner::{with_lease, Lease, Pacing, Worker};

/// The lease's name, and how long a holder keeps it without renewing.
pub const LEASE: &str = "housekeeping";
pub const LEASE_MS: Millis = 10 * 60_000;
const LEASED: Lease = Lease::Named {
    name: LEASE,
    ttl_ms: LEASE_MS,
};
/// Findings moved per transaction at most, and the pause after each step.
const MOVE_FINDINGS: i64 = 2_000;
/// Scans judged per batch by the posture backfill (each its own transaction).
const POSTURE_SCANS: i64 = 50;
const PAUSE: Duration = Duration::from_millis(20);

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Done {
    pub scans_moved: u64,
    pub findings_moved: u64,
    pub scans_left_as_rows: u64,
    /// Scans stored before posture was kept, judged now (or with nothing to judge).
    pub posture_judged: u64,
    pub posture_nothing_to_judge: u64,
    pub lines: u64,
    pub scans_thinned: u64,
    pub spans_removed: u64,
}

/// One pass, if this holder gets the lease (`Ok(None)`: another has it), as the operator's
/// `housekeeping run` asks for it. Without a policy (housekeeping is off) it only moves scans
/// stored as rows, and thins nothing.
pub async fn run_pass(
    db: &Writer,
    holder: &str,
    policy: Option<&Policy>,
) -> Result<Option<Done>, StoreError> {
    with_lease(db, LEASED, holder, || pass_holding(db, holder, policy)).await
}

async fn pass_holding(
    db: &Writer,
    holder: &str,
    policy: Option<&Policy>,
) -> Result<Done, StoreError> {
    let mut done = Done::default();
    // Rows a run killed half-way left behind (never read).
    tidemark_store::spans::moving::sweep_rows(db, 1_000).await?;
    let mut cursor: Cursor = None;
    loop {
        let batch = move_batch(db, &cursor, MOVE_FINDINGS).await?;
        done.scans_moved += batch.moved;
        done.findings_moved += batch.findings;
        done.scans_left_as_rows += batch.left;
        if batch.cursor.is_none() {
            break;
        }
        cursor = batch.cursor;
        tokio::time::sleep(PAUSE).await;
        // Still ours (renewed), or another replica took over after a stall: stop then.
        if !leases::acquire(db, LEASE, holder, now_millis(), LEASE_MS).await? {
            return Ok(done);
        }
    }
    // Before thinning, so no scan loses its findings before its posture is judged.
    loop {
        let batch = backfill_batch(db, POSTURE_SCANS).await?;
        if batch.scans() == 0 {
            break;
        }
        done.posture_judged += batch.judged;
        done.posture_nothing_to_judge += batch.nothing_to_judge;
        tokio::time::sleep(PAUSE).await;
        if !leases::acquire(db, LEASE, holder, now_millis(), LEASE_MS).await? {
            return Ok(done);
        }
    }
    let Some(policy) = policy else {
        return Ok(done);
    };
    let thinned = thin(db, holder, now_millis(), policy, PAUSE).await?;
    done.lines = thinned.lines;
    done.scans_thinned = thinned.scans_thinned;
    done.spans_removed = thinned.spans_removed;
    Ok(done)
}

/// What thinning did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thinned {
    pub lines: u64,
    pub scans_thinned: u64,
    pub spans_removed: u64,
}

/// Thins every line as its policy says at `now`: the scans it thins, then the spans nothing
/// needs any more. Each write is its own short transaction with `pause` after it, so pushes
/// are never held up behind a long run of them; a pass stopped anywhere leaves a consistent
/// database, and the next one carries on. It renews `holder`'s lease before each line and
/// stops where it is if another holder has taken it meanwhile, so two replicas never clean at
/// once however long a pass takes.
pub async fn thin(
    db: &Writer,
    holder: &str,
    now: Millis,
    policy: &Policy,
    pause: Duration,
) -> Result<Thinned, StoreError> {
    let mut thinned = Thinned::default();
    for line in housekeeping::lines(db.as_ref()).await? {
        if !leases::acquire(db, LEASE, holder, now_millis(), LEASE_MS).await? {
            break;
        }
        thinned.lines += 1;
        let (seqs, had_thinned) = housekeeping::plan_line(db.as_ref(), &line, now, policy).await?;
        if seqs.is_empty() && !had_thinned {
            continue;
        }
        for chunk in seqs.chunks(housekeeping::SCANS_PER_BATCH) {
            thinned.scans_thinned +=
                housekeeping::thin_scans(db, &line.account_id, &line.project_id, chunk).await?;
            tokio::time::sleep(pause).await;
        }
        loop {
            let removed = housekeeping::collect_spans(db, &line.account_id, &line).await?;
            thinned.spans_removed += removed;
            if removed < housekeeping::SPANS_PER_BATCH as u64 {
                break;
            }
            tokio::time::sleep(pause).await;
        }
    }
    Ok(thinned)
}

/// How a lease holder is named, so that whoever is refused the lease knows who has it:
/// `<who> on <host>, pid <pid>, since <time>` (the time tells a restarted process with a
/// reused pid from the one before it).
pub fn holder_name(who: &str) -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "an unnamed host".to_owned());
    format!(
        "{who} on {host}, pid {}, since {}",
        std::process::id(),
        app::time::format_time(now_millis())
    )
}

/// Housekeeping every `TIDEMARK_HOUSEKEEPING_INTERVAL_MINUTES` (the first pass a minute
/// after start) by one replica at a time. Without a policy (housekeeping is off) a pass only
/// moves scans stored as rows and judges old scans' posture; the operator's `housekeeping
/// run` passes without a policy when none is set.
pub struct Housekeeping {
    pub policy: Option<Policy>,
    pub every: Duration,
}

impl Housekeeping {
    /// The background worker, unless housekeeping is off.
    pub fn from_config(state: &AppState) -> Option<Self> {
        Some(Self {
            policy: Some(state.config.housekeeping.policy?),
            every: Duration::from_secs(u64::from(state.config.housekeeping.interval_minutes) * 60),
        })
    }
}

#[async_trait::async_trait]
impl Worker for Housekeeping {
    fn name(&self) -> &'static str {
        "housekeeping"
    }

    fn lease(&self) -> Lease {
        LEASED
    }

    fn pacing(&self) -> Pacing {
        Pacing::every(self.every, Duration::from_secs(60).min(self.every))
    }

    async fn pass(&self, db: &Writer, holder: &str) -> anyhow::Result<u64> {
        let done = pass_holding(db, holder, self.policy.as_ref()).await?;
        tracing::info!(?done, "housekeeping pass");
        Ok(done.scans_moved + done.posture_judged + done.scans_thinned + done.spans_removed)
    }
}
