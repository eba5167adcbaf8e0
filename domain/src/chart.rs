//! Downsampling a score history for a chart: largest-triangle-three-buckets (Steinarsson,
//! 2013). It keeps the first and last point and, from each bucket between them, the point
//! that makes the largest triangle with its neighbours, so spikes and drops survive even
//! when 100,000 scans become a few hundred points.

/// The indices of the points to keep, ascending. `xs` must be sorted; `threshold` below 3,
/// or at least `xs.len()`, keeps everything.
pub fn lttb(xs: &[f64], ys: &[f64], threshold: usize) -> Vec<usize> {
    let n = xs.len().min(ys.len());
    if threshold >= n || threshold < 3 {
        return (0..n).collect();
    }
    let mut kept = Vec::with_capacity(threshold);
    kept.push(0);
    // Buckets for everything between the first and the last point.
    let every = (n - 2) as f64 / (threshold - 2) as f64;
    let mut a = 0usize;
    for bucket in 0..threshold - 2 {
        let start = (bucket as f64 * every) as usize + 1;
        let end = (((bucket + 1) as f64 * every) as usize + 1).min(n - 1);
        // The average of the next bucket (or the last point) is the third corner.
        let next_start = end;
        let next_end = (((bucket + 2) as f64 * every) as usize + 1).min(n);
        let span = (next_end - next_start).max(1) as f64;
        let (avg_x, avg_y) = (next_start..next_end.max(next_start + 1).min(n))
            .fold((0.0, 0.0), |(sx, sy), i| (sx + xs[i], sy + ys[i]));
        let (avg_x, avg_y) = (avg_x / span, avg_y / span);
        let (ax, ay) = (xs[a], ys[a]);
        let mut best = start;
        let mut best_area = -1.0;
        for i in start..end.max(start + 1) {
            let area = ((ax - avg_x) * (ys[i] - ay) - (ax - xs[i]) * (avg_y - ay)).abs();
            if area > best_area {
                best_area = area;
                best = i;
            }
        }
        kept.push(best);
        a = best;
    }
    kept.push(n - 1);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_series_are_kept_whole() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(lttb(&xs, &xs, 10), (0..10).collect::<Vec<_>>());
        assert_eq!(lttb(&xs, &xs, 500), (0..10).collect::<Vec<_>>());
        assert_eq!(lttb(&[], &[], 5), Vec::<usize>::new());
    }

    #[test]
    fn large_series_shrink_to_the_threshold_keeping_ends_and_spikes() {
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut ys: Vec<f64> = (0..n).map(|i| 80.0 + ((i % 7) as f64) * 0.1).collect();
        ys[41_234] = 5.0; // one terrible scan
        let kept = lttb(&xs, &ys, 300);
        assert_eq!(kept.len(), 300);
        assert_eq!(kept[0], 0);
        assert_eq!(*kept.last().unwrap(), n - 1);
        assert!(
            kept.windows(2).all(|w| w[0] < w[1]),
            "ascending, no duplicates"
        );
        assert!(kept.contains(&41_234), "the drop survives downsampling");
    }
}
