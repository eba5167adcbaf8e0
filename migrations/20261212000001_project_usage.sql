-- What each project's data takes, measured off the request path (issue 70): Settings → Storage
-- and `project list` read one row per project here instead of summing every finding row of
-- the account (which grew with N squared). A row is stale when the project's scan count has
-- moved since (a push), when housekeeping or pruning removed rows (they delete it), or after a
-- day; the `project_usage` worker measures stale projects again.
CREATE TABLE project_usage (
    project_id    TEXT PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    scans_thinned BIGINT NOT NULL,
    bytes         BIGINT NOT NULL,
    -- projects.scan_count as the measurement read it.
    scan_count    BIGINT NOT NULL,
    measured_at   BIGINT NOT NULL
);
