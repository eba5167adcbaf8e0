//! A scan's findings stored as what changed (issue 36).
//!
//! A branch's findings are kept as *spans*: one finding, exactly as pushed (rule, resource,
//! status, severity, texts), from the first scan of the branch that had it to the first later
//! one that did not. A scan's findings are the spans of its branch that cover it, in the
//! order of their *position*. A push that changes 50 of 5,000 findings ends 50 spans and
//! starts 50, instead of writing 5,000 rows.
//!
//! Positions keep the scanner's order without renumbering: they start `GAP` apart, and a
//! finding that arrives between two others takes a position between theirs. Only when a
//! gap is used up (about 32 arrivals at the same place) is the whole scan written afresh.
//!
//! [`plan_spans`] is the one rule, for pushes and for moving stored scans alike: given the
//! spans a branch's latest scan has, and the next scan's findings, which spans go on, which
//! end, and which findings start new ones at which positions.

use std::collections::HashMap;

/// Room between two positions of a scan written afresh.
pub const GAP: i64 = 1 << 32;

/// The `to_seq` of a span its branch's latest scan still has.
pub const OPEN_END: i64 = i64::MAX;

/// What identifies a finding's content: two findings with equal keys are stored once.
/// `text` is [`text_hash`] of its message and remediation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanKey<'a> {
    pub rule_id: &'a str,
    pub resource: &'a str,
    pub status: &'a str,
    pub severity: &'a str,
    pub text: &'a str,
}

/// What a scan does to its branch's spans.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpanPlan {
    /// Indexes into `current` of the spans the scan still has (in position order).
    pub kept: Vec<usize>,
    /// Indexes into `current` of the spans the scan no longer has: they end at this scan.
    pub ended: Vec<usize>,
    /// Indexes into the scan's findings that start a span, with its position.
    pub started: Vec<(usize, i64)>,
}

/// Plans the next scan of a branch against `current`, the spans its latest scan has (each
/// with its position, in any order), for `scan`, the new scan's findings in the scanner's
/// order.
///
/// A finding goes on in its span when the span has the same content and keeping it keeps the
/// order: of the matching spans, those in the longest run of increasing positions are kept,
/// the others end and their findings start again where they now belong.
pub fn plan_spans(current: &[(i64, SpanKey<'_>)], scan: &[SpanKey<'_>]) -> SpanPlan {
    let mut by_position: Vec<usize> = (0..current.len()).collect();
    by_position.sort_by_key(|&i| current[i].0);
    // The n-th copy of a content in position order matches the n-th copy in the scan.
    let mut waiting: HashMap<SpanKey<'_>, Vec<usize>> = HashMap::with_capacity(current.len());
    for &i in by_position.iter().rev() {
        waiting.entry(current[i].1).or_default().push(i);
    }
    let matched: Vec<Option<usize>> = scan
        .iter()
        .map(|key| waiting.get_mut(key).and_then(Vec::pop))
        .collect();
    let order: Vec<(usize, i64)> = matched
        .iter()
        .enumerate()
        .filter_map(|(f, m)| m.map(|i| (f, current[i].0)))
        .collect();
    let keep = longest_increasing(&order.iter().map(|&(_, p)| p).collect::<Vec<_>>());
    let mut kept_for: Vec<Option<usize>> = vec![None; scan.len()];
    for k in keep {
        let f = order[k].0;
        kept_for[f] = matched[f];
    }
    match place(&kept_for, current) {
        Some(started) => {
            let mut is_kept = vec![false; current.len()];
            for i in kept_for.iter().flatten() {
                is_kept[*i] = true;
            }
            SpanPlan {
                kept: by_position
                    .iter()
                    .copied()
                    .filter(|&i| is_kept[i])
                    .collect(),
                ended: by_position
                    .iter()
                    .copied()
                    .filter(|&i| !is_kept[i])
                    .collect(),
                started,
            }
        }
        // A gap is used up: the scan is written afresh.
        None => SpanPlan {
            kept: Vec::new(),
            ended: by_position,
            started: (0..scan.len()).map(|f| (f, GAP * (f as i64 + 1))).collect(),
        },
    }
}

/// Positions for the findings no span is kept for, each between its kept neighbours';
/// `None` when some run does not fit between its neighbours.
fn place(kept_for: &[Option<usize>], current: &[(i64, SpanKey<'_>)]) -> Option<Vec<(usize, i64)>> {
    let mut started = Vec::new();
    let mut low = 0_i64;
    let mut run: Vec<usize> = Vec::new();
    let mut flush = |run: &mut Vec<usize>, low: i64, high: Option<i64>| -> Option<()> {
        if run.is_empty() {
            return Some(());
        }
        let n = run.len() as i64;
        let step = match high {
            Some(high) => (high - low) / (n + 1),
            None => GAP,
        };
        if step < 1 {
            return None;
        }
        for (k, &f) in run.iter().enumerate() {
            let position = low.checked_add(step.checked_mul(k as i64 + 1)?)?;
            started.push((f, position));
        }
        run.clear();
        Some(())
    };
    for (f, kept) in kept_for.iter().enumerate() {
        match kept {
            Some(i) => {
                let position = current[*i].0;
                flush(&mut run, low, Some(position))?;
                low = position;
            }
            None => run.push(f),
        }
    }
    flush(&mut run, low, None)?;
    Some(started)
}

/// Indexes of a longest strictly increasing subsequence of `values` (patience sorting,
/// O(n log n)).
fn longest_increasing(values: &[i64]) -> Vec<usize> {
    // tails[k]: index of the smallest last value of an increasing run of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; values.len()];
    for (i, &v) in values.iter().enumerate() {
        let k = tails.partition_point(|&t| values[t] < v);
        previous[i] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut run = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(i) = at {
        run.push(i);
        at = previous[i];
    }
    run.reverse();
    run
}

/// The key under which a finding's message and remediation are stored once per project: the
/// first 12 bytes of SHA-256 over both (length-prefixed, so no two pairs share an input),
/// in hex.
pub fn text_hash(message: &str, remediation: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update((message.len() as u64).to_be_bytes());
    hasher.update(message.as_bytes());
    hasher.update(remediation.as_bytes());
    hex::encode(&hasher.finalize()[..12])
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[derive(Debug, Clone, PartialEq, Eq)]
    struct F {
        rule: String,
        resource: String,
        status: &'static str,
        severity: &'static str,
        text: String,
    }

    impl F {
        fn key(&self) -> SpanKey<'_> {
            SpanKey {
                rule_id: &self.rule,
                resource: &self.resource,
                status: self.status,
                severity: self.severity,
                text: &self.text,
            }
        }
    }

    fn f(rule: &str, status: &'static str) -> F {
        F {
            rule: rule.to_owned(),
            resource: "r".to_owned(),
            status,
            severity: "high",
            text: "t".to_owned(),
        }
    }

    /// Applies a plan: the spans the new scan has, in position order.
    fn apply(current: &[(i64, F)], scan: &[F], plan: &SpanPlan) -> Vec<(i64, F)> {
        let mut next: Vec<(i64, F)> = plan.kept.iter().map(|&i| current[i].clone()).collect();
        next.extend(plan.started.iter().map(|&(f, p)| (p, scan[f].clone())));
        next.sort_by_key(|s| s.0);
        next
    }

    fn plan_for(current: &[(i64, F)], scan: &[F]) -> SpanPlan {
        let keys: Vec<(i64, SpanKey<'_>)> = current.iter().map(|(p, f)| (*p, f.key())).collect();
        let scan_keys: Vec<SpanKey<'_>> = scan.iter().map(F::key).collect();
        plan_spans(&keys, &scan_keys)
    }

    #[test]
    fn a_first_scan_starts_a_span_per_finding_gap_apart() {
        let scan = [f("a", "FAIL"), f("b", "PASS")];
        let plan = plan_for(&[], &scan);
        assert_eq!(plan.started, [(0, GAP), (1, 2 * GAP)]);
        assert!(plan.kept.is_empty() && plan.ended.is_empty());
    }

    #[test]
    fn a_changed_status_ends_one_span_and_starts_one_in_its_place() {
        let first = [f("a", "FAIL"), f("b", "FAIL"), f("c", "FAIL")];
        let current = apply(&[], &first, &plan_for(&[], &first));
        let second = [f("a", "FAIL"), f("b", "PASS"), f("c", "FAIL")];
        let plan = plan_for(&current, &second);
        assert_eq!(plan.kept, [0, 2]);
        assert_eq!(plan.ended, [1]);
        assert_eq!(plan.started.len(), 1);
        let next = apply(&current, &second, &plan);
        assert_eq!(next.iter().map(|s| s.1.clone()).collect::<Vec<_>>(), second);
        // The same scan again changes nothing.
        let again = plan_for(&next, &second);
        assert!(again.ended.is_empty() && again.started.is_empty());
    }

    #[test]
    fn a_moved_finding_starts_again_where_it_now_is() {
        let first = [f("a", "FAIL"), f("b", "FAIL"), f("c", "FAIL")];
        let current = apply(&[], &first, &plan_for(&[], &first));
        let second = [f("c", "FAIL"), f("a", "FAIL"), f("b", "FAIL")];
        let plan = plan_for(&current, &second);
        assert_eq!(
            (plan.kept.len(), plan.ended.len(), plan.started.len()),
            (2, 1, 1)
        );
        let next = apply(&current, &second, &plan);
        assert_eq!(next.iter().map(|s| s.1.clone()).collect::<Vec<_>>(), second);
    }

    #[test]
    fn a_used_up_gap_writes_the_scan_afresh() {
        let current = vec![(1, f("a", "FAIL")), (2, f("c", "FAIL"))];
        let scan = [f("a", "FAIL"), f("b", "FAIL"), f("c", "FAIL")];
        let plan = plan_for(&current, &scan);
        assert_eq!(plan.ended, [0, 1]);
        assert_eq!(plan.started, [(0, GAP), (1, 2 * GAP), (2, 3 * GAP)]);
    }

    #[test]
    fn the_longest_increasing_run_is_found() {
        assert_eq!(longest_increasing(&[]), Vec::<usize>::new());
        assert_eq!(longest_increasing(&[5, 1, 2, 9, 3, 4]), [1, 2, 4, 5]);
        assert_eq!(longest_increasing(&[3, 3, 3]).len(), 1);
    }

    #[test]
    fn texts_are_keyed_by_both_parts() {
        assert_ne!(text_hash("ab", "c"), text_hash("a", "bc"));
        assert_eq!(text_hash("m", "r").len(), 24);
    }

    /// The property: over random sequences of scans (findings added, removed, changed,
    /// reordered, duplicated), the spans a scan has always read back as exactly its findings,
    /// in its order; and a scan like the previous one changes nothing.
    #[test]
    fn every_scan_reads_back_exactly_as_pushed() {
        let mut rng = StdRng::seed_from_u64(36);
        let statuses = ["PASS", "FAIL", "WARN", "ERROR"];
        let random_finding = |rng: &mut StdRng| F {
            rule: format!("r{}", rng.gen_range(0..30)),
            resource: format!("x{}", rng.gen_range(0..4)),
            status: statuses[rng.gen_range(0..4)],
            severity: ["low", "high"][rng.gen_range(0..2)],
            text: format!("t{}", rng.gen_range(0..3)),
        };
        for _ in 0..300 {
            let mut current: Vec<(i64, F)> = Vec::new();
            let mut scan: Vec<F> = (0..rng.gen_range(0..40))
                .map(|_| random_finding(&mut rng))
                .collect();
            for _ in 0..25 {
                let plan = plan_for(&current, &scan);
                let next = apply(&current, &scan, &plan);
                assert_eq!(
                    next.iter().map(|s| s.1.clone()).collect::<Vec<_>>(),
                    scan,
                    "{plan:?}"
                );
                let positions: Vec<i64> = next.iter().map(|s| s.0).collect();
                assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
                assert_eq!(plan.kept.len() + plan.ended.len(), current.len());
                let same = plan_for(&next, &scan);
                assert!(same.ended.is_empty() && same.started.is_empty());
                current = next;
                // The next scan: a few findings changed, removed, inserted or moved.
                for _ in 0..rng.gen_range(0..6) {
                    match rng.gen_range(0..4) {
                        0 if !scan.is_empty() => {
                            let i = rng.gen_range(0..scan.len());
                            scan[i].status = statuses[rng.gen_range(0..4)];
                        }
                        1 if !scan.is_empty() => {
                            scan.remove(rng.gen_range(0..scan.len()));
                        }
                        2 => {
                            let i = rng.gen_range(0..=scan.len());
                            scan.insert(i, random_finding(&mut rng));
                        }
                        _ if scan.len() > 1 => {
                            let a = rng.gen_range(0..scan.len());
                            let moved = scan.remove(a);
                            scan.insert(rng.gen_range(0..scan.len()), moved);
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}
