//! What a push reads of its line that is large and changes little: the spans the line's latest
//! scan has and its open tracked findings (2,000 spans and 1,000 findings were 3.9 ms of
//! PostgreSQL's time in every push's head read, built as JSON, and the server's again to parse
//! them, for a push that changes 1 % of them).
//!
//! Each version of that state is named by a random token on the line's row
//! (`branches.live_token`): a push sets a fresh one with the state it writes, and every other
//! writer of the line's live spans or open tracked findings clears it in the same transaction
//! ([`FORGET`]). A copy is used only while the line's head is still the scan it was kept at
//! too: a replica of the previous release moves the head but knows no token. A PostgreSQL replica keeps the state it last wrote under the token, and the
//! head read ships the state only when the line's token is not the one kept. The head is read
//! under the project's lock in one snapshot, so the token read is the state read: a kept copy is
//! used exactly when it is the line's state, whichever replica or writer came between.
//!
//! The copies are the process's, not a store's: a token is never made twice, so a copy can
//! only match the line it was made for, in whichever database. SQLite's pushes keep none (its
//! head is read in process, and the single-process memory budget is tight).

use std::sync::{Arc, LazyLock};

use moka::sync::Cache;

use crate::findings::OpenTracked;
use crate::spans::LiveSpan;

/// At most this many bytes of kept state (about 80 lines of 2,000 findings); the least
/// recently used go first.
const KEPT_BYTES: u64 = 64 << 20;

/// Clears a line's token (bind the line's id): for every writer but the push that changes the
/// spans its latest scan has or its open tracked findings.
pub(crate) const FORGET: &str = "UPDATE branches SET live_token = NULL WHERE id = $1";

/// A line's spans of its latest scan and its open tracked findings.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct LineState {
    pub(crate) live_spans: Vec<LiveSpan>,
    pub(crate) open_tracked: OpenTracked,
}

impl LineState {
    /// Roughly what it holds in memory, for the bound.
    fn weight(&self) -> u32 {
        let spans: usize = self.live_spans.iter().map(LiveSpan::weight).sum();
        let tracked: usize = self
            .open_tracked
            .iter()
            .map(|((rule, resource), severity)| {
                3 * 24 + 48 + rule.len() + resource.len() + severity.len()
            })
            .sum();
        u32::try_from(spans + tracked).unwrap_or(u32::MAX)
    }
}

/// A state kept under its token.
#[derive(Clone)]
pub(crate) struct Kept {
    pub(crate) token: String,
    /// The line's latest scan (storage position) the state is of.
    pub(crate) head_seq: i64,
    pub(crate) state: Arc<LineState>,
}

static KEPT: LazyLock<Cache<String, Kept>> = LazyLock::new(|| {
    Cache::builder()
        .max_capacity(KEPT_BYTES)
        .weigher(|key: &String, kept: &Kept| {
            kept.state
                .weight()
                .saturating_add(u32::try_from(key.len() + kept.token.len()).unwrap_or(0))
        })
        .build()
});

/// The key a push finds its line by: the account, the project's label and the line's key as
/// the push names it (empty for the default line). Two keys may name one line; the token
/// decides.
pub(crate) fn key(account_id: &str, label: &str, line_key: &str) -> String {
    format!("{account_id}\u{0}{label}\u{0}{line_key}")
}

/// The state last kept under `key`, if any.
pub(crate) fn recall(key: &str) -> Option<Kept> {
    KEPT.get(key)
}

/// Keeps `state` as the line's under `token` (after the transaction that wrote the token
/// committed).
pub(crate) fn keep(key: String, token: String, head_seq: i64, state: Arc<LineState>) {
    KEPT.insert(
        key,
        Kept {
            token,
            head_seq,
            state,
        },
    );
}

/// For tests: replicas whose copies went stale, and a check of a copy against the database.
#[cfg(feature = "testing")]
pub mod testing {
    use super::{key, Kept, LineState, KEPT};
    use crate::spans::LiveSpan;
    use crate::{on_db, Db, StoreError};
    use tidemark_domain::spans::OPEN_END;

    /// What this process keeps for one line, taken to be put back later.
    pub struct Copy(String, Kept);

    impl Copy {
        /// The token the copy was kept under.
        pub fn token(&self) -> &str {
            &self.1.token
        }
    }

    /// The copy kept for the line `line_key` (empty: the default line) of project `label`.
    pub fn copy(account_id: &str, label: &str, line_key: &str) -> Option<Copy> {
        let key = key(account_id, label, line_key);
        KEPT.get(&key).map(|kept| Copy(key, kept))
    }

    /// Puts a copy back, as a replica that did not see the pushes since still holds it.
    pub fn put_back(copy: Copy) {
        KEPT.insert(copy.0, copy.1);
    }

    /// Drops what is kept for one line: a replica that has not seen it.
    pub fn forget(account_id: &str, label: &str, line_key: &str) {
        KEPT.invalidate(&key(account_id, label, line_key));
    }

    /// Whether the state kept for the line is the one its row names, and equal to what the
    /// database holds read afresh: `None` when nothing is kept under the line's token.
    pub async fn kept_is_true(
        db: &Db,
        account_id: &str,
        label: &str,
        line_key: &str,
    ) -> Result<Option<bool>, StoreError> {
        let Some(Copy(_, kept)) = copy(account_id, label, line_key) else {
            return Ok(None);
        };
        let line: Option<(String, Option<String>, Option<i64>)> = on_db!(db, pool => {
            sqlx::query_as(
                "SELECT b.id, b.live_token, b.head_seq FROM projects p JOIN branches b \
                 ON b.id = CASE WHEN $1 = '' THEN p.default_branch_id ELSE \
                   (SELECT x.id FROM branches x WHERE x.project_id = p.id AND x.ref_key = $2) END \
                 WHERE p.account_id = $3 AND p.label = $4",
            )
            .bind(line_key)
            .bind(line_key)
            .bind(account_id)
            .bind(label)
            .fetch_optional(pool)
            .await
        })?;
        let Some((line_id, Some(token), head_seq)) = line else {
            return Ok(None);
        };
        if token != kept.token || head_seq != Some(kept.head_seq) {
            return Ok(None);
        }
        let (mut live_spans, tracked): (Vec<LiveSpan>, Vec<(String, String, String)>) = on_db!(db, pool => {
            async {
                let spans = sqlx::query_as(
                    "SELECT position, rule_id, resource, status, severity, text_hash AS text \
                     FROM finding_spans WHERE branch_id = $1 AND to_seq = $2",
                )
                .bind(&line_id)
                .bind(OPEN_END)
                .fetch_all(pool)
                .await?;
                let tracked = sqlx::query_as(
                    "SELECT rule_id, resource, severity FROM tracked_findings \
                     WHERE branch_id = $1 AND fixed_seq IS NULL",
                )
                .bind(&line_id)
                .fetch_all(pool)
                .await?;
                Ok::<_, sqlx::Error>((spans, tracked))
            }
            .await
        })?;
        live_spans.sort_unstable_by_key(LiveSpan::position);
        let mut kept_spans = kept.state.live_spans.clone();
        kept_spans.sort_unstable_by_key(LiveSpan::position);
        let truth = LineState {
            live_spans,
            open_tracked: tracked
                .into_iter()
                .map(|(rule, resource, severity)| ((rule, resource), severity))
                .collect(),
        };
        Ok(Some(
            truth.live_spans == kept_spans && truth.open_tracked == kept.state.open_tracked,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every statement that changes `finding_spans` or `tracked_findings` is the push's own
    /// (which sets a fresh token), clears the line's token, or changes nothing a push reads
    /// (triage's columns; a pruned line's removal with its row).
    #[test]
    fn every_writer_of_a_lines_state_clears_its_token() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        visit(&src, &mut |path, text| {
            let writes = ["finding_spans", "tracked_findings"].iter().any(|table| {
                ["INSERT INTO ", "UPDATE ", "DELETE FROM "]
                    .iter()
                    .any(|verb| text.contains(&format!("{verb}{table}")))
            });
            let name = path.strip_prefix(&src).unwrap_or(path).to_string_lossy();
            let known = [
                // The push: span_writes and tracking_writes, under a fresh token.
                "spans/mod.rs",
                "findings/mod.rs",
                // Triage sets triage columns only; a removed line has no state to keep.
                "findings/triage.rs",
                "branches.rs",
                "pushes/line_state.rs",
            ];
            let clears = text.contains("line_state::FORGET") || text.contains("live_token = NULL");
            if writes && !known.contains(&name.as_ref()) && !clears {
                offenders.push(name.into_owned());
            }
        });
        assert!(offenders.is_empty(), "{offenders:?}");
    }

    fn visit(dir: &Path, each: &mut dyn FnMut(&Path, &str)) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                visit(&path, each);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                each(&path, &text);
            }
        }
    }
}
