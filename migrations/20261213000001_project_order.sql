-- The projects page chooses its page in the database (issue 70): the default line's latest
-- scan time is kept on the project row beside its latest score, so "latest scan" orders
-- the account's projects without a read per project. The push and a change of default
-- branch keep it.
ALTER TABLE projects ADD COLUMN last_scanned_at BIGINT;

UPDATE projects SET last_scanned_at = (
    SELECT s.scanned_at FROM branches d
    JOIN scans s ON s.project_id = d.project_id AND s.seq = d.head_seq
    WHERE d.id = projects.default_branch_id
);

-- The overview's failing projects: read by their verdict, not by reading every project.
CREATE INDEX projects_gate_status ON projects (account_id, last_gate_status, label);
