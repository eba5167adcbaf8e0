-- Findings with a life (issue 33): one row per (branch, rule id, resource), followed across
-- the branch's scans, and the triage that sets it aside. The push that appends a scan
-- upserts the rows of its open findings and marks the branch's other open rows fixed, in
-- its own transaction.
CREATE TABLE tracked_findings (
    -- 'fnd_' + 20 random base32 characters ('fnd_m' + a number for rows this migration made).
    id                TEXT PRIMARY KEY,
    account_id        TEXT NOT NULL REFERENCES accounts (id),
    project_id        TEXT NOT NULL REFERENCES projects (id),
    branch_id         TEXT NOT NULL REFERENCES branches (id),
    rule_id           TEXT NOT NULL,
    resource          TEXT NOT NULL,
    -- As in the latest scan that had it.
    severity          TEXT NOT NULL,
    -- Scans by their storage position (scans.seq) and the scan's own time.
    first_seq         BIGINT NOT NULL,
    first_seen_at     BIGINT NOT NULL,
    last_seq          BIGINT NOT NULL,
    last_seen_at      BIGINT NOT NULL,
    -- The first later scan of the branch without it open; NULL while it is open.
    fixed_seq         BIGINT,
    fixed_at          BIGINT,
    reopened_count    BIGINT NOT NULL DEFAULT 0,
    reopened_at       BIGINT,
    -- NULL: never triaged (or undone). The audit log keeps every change.
    triage_state      TEXT CHECK (triage_state IN ('accepted_risk', 'false_positive', 'wont_fix')),
    triage_reason     TEXT,
    triage_expires_at BIGINT,
    triaged_by        TEXT,
    triaged_at        BIGINT,
    UNIQUE (branch_id, rule_id, resource)
);
-- A push marks its branch's open rows that it did not see as fixed.
CREATE INDEX tracked_findings_open ON tracked_findings (branch_id, fixed_seq);

-- The findings of the scans already stored, as if each had been tracked since it was first
-- seen on its branch. Gaps (fixed, then back) are not recovered: reopened_count starts at 0,
-- and the severity is the highest it had.
INSERT INTO tracked_findings (id, account_id, project_id, branch_id, rule_id, resource,
                              severity, first_seq, first_seen_at, last_seq, last_seen_at,
                              fixed_seq, fixed_at)
SELECT 'fnd_m' || CAST(ROW_NUMBER() OVER (ORDER BY g.branch_id, g.rule_id, g.resource) AS TEXT),
       g.account_id, g.project_id, g.branch_id, g.rule_id, g.resource,
       CASE g.rank WHEN 4 THEN 'critical' WHEN 3 THEN 'high' WHEN 2 THEN 'medium' ELSE 'low' END,
       g.first_seq, fs.scanned_at, g.last_seq, ls.scanned_at, xs.seq, xs.scanned_at
FROM (SELECT s.account_id, s.project_id, s.branch_id, f.rule_id, f.resource,
             MAX(CASE f.severity WHEN 'critical' THEN 4 WHEN 'high' THEN 3
                                 WHEN 'medium' THEN 2 ELSE 1 END) AS rank,
             MIN(f.scan_seq) AS first_seq, MAX(f.scan_seq) AS last_seq
      FROM findings f JOIN scans s ON s.project_id = f.project_id AND s.seq = f.scan_seq
      WHERE f.status IN ('FAIL', 'WARN', 'ERROR') AND s.branch_id IS NOT NULL
      GROUP BY s.account_id, s.project_id, s.branch_id, f.rule_id, f.resource) g
JOIN scans fs ON fs.project_id = g.project_id AND fs.seq = g.first_seq
JOIN scans ls ON ls.project_id = g.project_id AND ls.seq = g.last_seq
LEFT JOIN scans xs ON xs.branch_id = g.branch_id AND xs.line_seq = ls.line_seq + 1;

-- Every triage change of a finding, newest last: its page shows them (the audit log has them
-- too, among everything else).
CREATE TABLE finding_triage_events (
    finding_id  TEXT NOT NULL REFERENCES tracked_findings (id),
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    at          BIGINT NOT NULL,
    -- The member's e-mail address then, or 'api-key:<prefix>'.
    actor       TEXT NOT NULL,
    -- NULL: the triage was undone.
    state       TEXT,
    reason      TEXT,
    expires_at  BIGINT
);
CREATE INDEX finding_triage_events_finding ON finding_triage_events (finding_id, at);
