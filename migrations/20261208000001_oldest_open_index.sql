-- The projects page's "oldest open criticals" (issue 48): the account's unfixed findings by
-- severity, oldest first, so that the five oldest are read from the front of an index instead
-- of sorting every open finding of every project's default line (2,000 a line at a large
-- account's scale). Partial: a fixed finding leaves it.
CREATE INDEX tracked_findings_oldest_open
    ON tracked_findings (account_id, severity, first_seen_at, id) WHERE fixed_seq IS NULL;

-- Each card's open findings by severity, read from the index alone: the line's unfixed rows
-- with the columns that say whether a triage holds. The index the push uses to find its
-- line's open rows, widened (same leading columns, so the push's lookups are unchanged):
-- SQLite counted a page of 50 projects in 24 ms at N = 100 reading each row, 4 ms from this.
DROP INDEX tracked_findings_open;
CREATE INDEX tracked_findings_open
    ON tracked_findings (branch_id, fixed_seq, severity, triage_state, triage_expires_at);
