//! The SQLite push committer's figures, read from its own counters at each scrape: group
//! sizes, how pushes were decided, and where the writer's turn goes.

use std::sync::Mutex;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use tidemark_store::pushes::committer::{GroupStats, MAX_GROUP_PUSHES};

/// The SQLite committer's group sizes as a histogram, read from its own counters at each
/// scrape (it counts exactly; there is nothing to observe twice). Absent on PostgreSQL.
#[derive(Debug, Default)]
pub(super) struct PushGroups(pub(super) Mutex<Option<GroupStats>>);

impl Collector for PushGroups {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = *self.0.lock().unwrap_or_else(|e| e.into_inner()) else {
            return Ok(());
        };
        let (buckets, count, sum) = group_size_buckets(&stats.formed);
        let mut metric = encoder.encode_descriptor(
            // The registry's `tidemark_` prefix applies to collectors too.
            "push_group_size",
            "Pushes written together in one SQLite transaction by the push committer",
            None,
            MetricType::Histogram,
        )?;
        metric.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
        for (name, help, value) in [
            (
                "push_decided_early",
                "SQLite pushes planned before the writer's turn and written as planned",
                stats.decided_early,
            ),
            (
                "push_decided_again",
                "SQLite pushes planned before the writer's turn on what had changed by then, decided again by the writer",
                stats.decided_again,
            ),
        ] {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            metric.encode_counter::<NoLabelSet, _, u64>(&value, None)?;
        }
        let [decide, write, commit] = stats.writer_nanos.map(|n| n as f64 / 1e9);
        for (name, help, value) in [
            (
                "push_writer_decide_seconds",
                "Time the SQLite push writer spent reading or checking heads and deciding pushes",
                decide,
            ),
            (
                "push_writer_write_seconds",
                "Time the SQLite push writer spent running the pushes' statements",
                write,
            ),
            (
                "push_writer_commit_seconds",
                "Time the SQLite push writer spent committing groups (the fsync)",
                commit,
            ),
        ] {
            let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            metric.encode_counter::<NoLabelSet, _, f64>(&value, None)?;
        }
        Ok(())
    }
}

/// Buckets at powers of two up to the largest group, each with the groups that fall in it
/// and no lower bucket (the encoder makes them cumulative), the count and the sum.
fn group_size_buckets(formed: &[u64; MAX_GROUP_PUSHES]) -> (Vec<(f64, u64)>, u64, f64) {
    let mut buckets = Vec::new();
    let (mut count, mut sum, mut in_bucket) = (0u64, 0f64, 0u64);
    let mut bound = 1;
    for (size, groups) in (1..).zip(formed) {
        count += groups;
        in_bucket += groups;
        sum += (size * groups) as f64;
        if size == bound || size == MAX_GROUP_PUSHES as u64 {
            buckets.push((size as f64, in_bucket));
            in_bucket = 0;
            bound *= 2;
        }
    }
    buckets.push((f64::INFINITY, 0));
    (buckets, count, sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_sizes_fall_into_power_of_two_buckets() {
        let mut formed = [0; MAX_GROUP_PUSHES];
        formed[0] = 5; // five pushes alone
        formed[2] = 2; // two groups of three
        formed[MAX_GROUP_PUSHES - 1] = 1; // one full group
        let (buckets, count, sum) = group_size_buckets(&formed);
        let bounds: Vec<f64> = buckets.iter().map(|b| b.0).collect();
        assert_eq!(bounds, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, f64::INFINITY]);
        let counts: Vec<u64> = buckets.iter().map(|b| b.1).collect();
        assert_eq!(counts, [5, 0, 2, 0, 0, 1, 0]);
        assert_eq!((count, sum), (8, 5.0 + 6.0 + 32.0));
    }
}
