-- Branches and pull requests (issue 26). Each project's history is split into lines: its
-- default branch (the project's line: projects list, badges, alerts), other branches, and
-- pull requests, each with its own sequence, deltas and replays. Scans keep their
-- project-wide `seq` as the storage key (findings, events and alerts refer to it); a line
-- numbers its scans again in `line_seq`.
CREATE TABLE branches (
    -- 'br_' + random; 'br_' + the project id for the lines this migration makes.
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    project_id     TEXT NOT NULL REFERENCES projects (id),
    -- 'branch:<name>' or 'pr:<number>'; NULL for a default line never told its name.
    ref_key        TEXT,
    -- The branch (for a pull request, its source branch); NULL while unnamed.
    name           TEXT,
    -- Pull requests only: number, target branch, title and address as last pushed.
    pr_number      BIGINT,
    pr_base        TEXT,
    pr_title       TEXT,
    pr_url         TEXT,
    repository_url TEXT,
    -- The line's head, moved by the statement that appends to it.
    scan_count     BIGINT NOT NULL DEFAULT 0,
    head_seq       BIGINT,
    created_at     BIGINT NOT NULL,
    last_push_at   BIGINT,
    UNIQUE (project_id, ref_key)
);
CREATE INDEX branches_project_push ON branches (project_id, last_push_at);

ALTER TABLE projects ADD COLUMN default_branch_id TEXT;

ALTER TABLE scans ADD COLUMN branch_id TEXT;
ALTER TABLE scans ADD COLUMN line_seq BIGINT;
ALTER TABLE scans ADD COLUMN commit_sha TEXT;
-- A pull request's scan compared with its base's latest scan when it was pushed (base_branch
-- set, base_scan_id NULL: the base had no scan).
ALTER TABLE scans ADD COLUMN base_branch TEXT;
ALTER TABLE scans ADD COLUMN base_scan_id TEXT;
ALTER TABLE scans ADD COLUMN base_seq BIGINT;
ALTER TABLE scans ADD COLUMN base_score DOUBLE PRECISION;
ALTER TABLE scans ADD COLUMN base_new BIGINT;
ALTER TABLE scans ADD COLUMN base_fixed BIGINT;

-- Every existing history becomes its project's default line, unnamed until a push names a
-- branch.
INSERT INTO branches (id, account_id, project_id, ref_key, name, scan_count, head_seq,
                      created_at, last_push_at)
SELECT 'br_' || p.id, p.account_id, p.id, NULL, NULL, p.scan_count,
       CASE WHEN p.scan_count > 0 THEN p.scan_count END, p.created_at,
       (SELECT MAX(s.received_at) FROM scans s WHERE s.project_id = p.id)
FROM projects p;
UPDATE projects SET default_branch_id = 'br_' || id;
UPDATE scans SET branch_id = 'br_' || project_id, line_seq = seq;

-- A line's chart and scans table, as scans_history serves the project's.
CREATE INDEX scans_line ON scans (branch_id, scanned_at, seq, score);
-- A line's scans in order: its page of scans, a scan's predecessor on its line, sparklines.
CREATE INDEX scans_line_seq ON scans (branch_id, line_seq);
