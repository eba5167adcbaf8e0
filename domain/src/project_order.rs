//! How the projects page orders and pages an account's projects.
//!
//! The database chooses the page (the account's projects are never all read to show fifty),
//! and this is the rule it follows, kept here so that the store's SQL can be checked against
//! it (`store/tests/project_page.rs`). Names compare case-insensitively for A–Z and then by
//! their bytes: both databases can say exactly that, whatever their collation.

use std::cmp::Ordering;

use crate::Millis;

/// Projects on one page of the list: the page's cost (sparklines, open findings) stays that
/// of fifty projects however many the account holds.
pub const PER_PAGE: u64 = 50;

/// The longest name filter read; the rest of a longer one is ignored.
pub const MAX_FILTER_CHARS: usize = 200;

/// The orders the projects page offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProjectOrder {
    /// By name, A to Z.
    #[default]
    Name,
    /// Lowest latest score first: what needs attention on top.
    Score,
    /// Largest drop at the latest scan first.
    Change,
    /// Most recently scanned first (to the minute the page shows; the same minute by name).
    LastScan,
}

/// What a project is ordered by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrderKeys<'a> {
    pub label: &'a str,
    pub archived: bool,
    pub last_score: Option<f64>,
    pub last_delta: Option<f64>,
    pub last_scanned_at: Option<Millis>,
}

/// Active projects before archived ones, each part in `order`; projects without a scan after
/// those with one; ties by name.
pub fn compare(order: ProjectOrder, a: &OrderKeys<'_>, b: &OrderKeys<'_>) -> Ordering {
    /// Ascending, with `None` after every value.
    fn nones_last<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Ordering {
        match (a, b) {
            (Some(a), Some(b)) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    }
    let minute = |at: Option<Millis>| at.map(|at| std::cmp::Reverse(at.div_euclid(60_000)));
    let primary = match order {
        ProjectOrder::Name => Ordering::Equal,
        ProjectOrder::Score => nones_last(a.last_score, b.last_score),
        ProjectOrder::Change => nones_last(a.last_delta, b.last_delta),
        ProjectOrder::LastScan => nones_last(minute(a.last_scanned_at), minute(b.last_scanned_at)),
    };
    a.archived
        .cmp(&b.archived)
        .then(primary)
        .then_with(|| name_key(a.label).cmp(&name_key(b.label)))
        .then_with(|| a.label.cmp(b.label))
}

/// A name as the name order compares it: A–Z lower-cased, every other character as it is.
pub fn name_key(label: &str) -> String {
    label.to_ascii_lowercase()
}

/// What a name filter as typed looks for: trimmed, at most [`MAX_FILTER_CHARS`], compared as
/// [`name_key`]s. Empty: every project.
pub fn filter_needle(filter: &str) -> String {
    name_key(filter.trim())
        .chars()
        .take(MAX_FILTER_CHARS)
        .collect()
}

/// The label contains the needle ([`filter_needle`]).
pub fn matches(label: &str, needle: &str) -> bool {
    name_key(label).contains(needle)
}

/// Where page `page` (from 1; 0 or past the end: the nearest) of `matching` projects stands:
/// the page shown, how many pages there are (at least one), and how many projects precede it.
pub fn page_window(matching: u64, page: u32) -> (u32, u32, u64) {
    let pages = u32::try_from(matching.div_ceil(PER_PAGE).max(1)).unwrap_or(u32::MAX);
    let page = page.clamp(1, pages);
    (page, pages, u64::from(page - 1) * PER_PAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(
        label: &str,
        score: Option<f64>,
        delta: Option<f64>,
        at: Option<Millis>,
    ) -> OrderKeys<'_> {
        OrderKeys {
            label,
            archived: false,
            last_score: score,
            last_delta: delta,
            last_scanned_at: at,
        }
    }

    const DAY: Millis = 86_400_000;

    fn arranged(order: ProjectOrder) -> Vec<&'static str> {
        let mut all = vec![
            keys("web", Some(90.0), Some(-5.0), Some(20 * DAY)),
            keys("Api", Some(60.0), Some(2.0), Some(22 * DAY)),
            keys("new", None, None, None),
            keys("infra", Some(75.0), Some(-1.0), Some(21 * DAY)),
        ];
        all.sort_by(|a, b| compare(order, a, b));
        all.into_iter().map(|k| k.label).collect()
    }

    #[test]
    fn each_order_puts_what_it_promises_first_and_unscanned_projects_last() {
        assert_eq!(arranged(ProjectOrder::Name), ["Api", "infra", "new", "web"]);
        assert_eq!(
            arranged(ProjectOrder::Score),
            ["Api", "infra", "web", "new"]
        );
        assert_eq!(
            arranged(ProjectOrder::Change),
            ["web", "infra", "Api", "new"]
        );
        assert_eq!(
            arranged(ProjectOrder::LastScan),
            ["Api", "infra", "web", "new"]
        );
    }

    #[test]
    fn archived_projects_come_after_every_active_one() {
        let mut old = keys("aaa", Some(1.0), None, None);
        old.archived = true;
        let active = keys("zzz", None, None, None);
        for order in [
            ProjectOrder::Name,
            ProjectOrder::Score,
            ProjectOrder::LastScan,
        ] {
            assert_eq!(compare(order, &active, &old), Ordering::Less);
        }
    }

    #[test]
    fn names_differing_only_in_case_are_ordered_by_their_bytes() {
        let (upper, lower) = (keys("API", None, None, None), keys("api", None, None, None));
        assert_eq!(compare(ProjectOrder::Name, &upper, &lower), Ordering::Less);
        // Beyond A–Z a character is compared as it is.
        assert_eq!(name_key("Ärger-API"), "Ärger-api");
    }

    #[test]
    fn scans_in_the_same_minute_are_ordered_by_name() {
        let (a, b) = (
            keys("b", None, None, Some(60_000)),
            keys("a", None, None, Some(119_999)),
        );
        assert_eq!(compare(ProjectOrder::LastScan, &a, &b), Ordering::Greater);
    }

    #[test]
    fn the_filter_matches_part_of_a_name_in_any_case() {
        let needle = filter_needle(" A");
        assert!(matches("Api", &needle) && matches("infra", &needle));
        assert!(!matches("web", &needle));
        assert_eq!(filter_needle(&"x".repeat(500)).len(), MAX_FILTER_CHARS);
    }

    #[test]
    fn pages_are_clamped_to_those_there_are() {
        assert_eq!(page_window(110, 1), (1, 3, 0));
        assert_eq!(page_window(110, 3), (3, 3, 100));
        assert_eq!(page_window(110, 99), (3, 3, 100));
        assert_eq!(page_window(110, 0), (1, 3, 0));
        assert_eq!(page_window(0, 5), (1, 1, 0));
    }
}
