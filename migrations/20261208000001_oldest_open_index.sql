-- The projects page's "oldest open criticals" (issue 48): the account's unfixed findings by
-- severity, oldest first, so that the five oldest are read from the front of an index instead
-- of sorting every open finding of every project's default line (2,000 a line at a large
-- account's scale). Partial: a fixed finding leaves it.
CREATE INDEX tracked_findings_oldest_open
    ON tracked_findings (account_id, severity, first_seen_at, id) WHERE fixed_seq IS NULL;
