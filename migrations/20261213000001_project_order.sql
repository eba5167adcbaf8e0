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

-- The name order's key (`tidemark_domain::project_order::name_key`: A-Z lower-cased, every
-- other character as it is), kept beside the label so that ordering a page computes nothing
-- per project. The push writes it with the project; the projects already stored get it here,
-- spelt with REPLACE because both databases have it and mean exactly the same by it.
ALTER TABLE projects ADD COLUMN name_key TEXT;

UPDATE projects SET name_key = REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(REPLACE(label, 'A', 'a'), 'B', 'b'), 'C', 'c'), 'D', 'd'), 'E', 'e'), 'F', 'f'), 'G', 'g'), 'H', 'h'), 'I', 'i'), 'J', 'j'), 'K', 'k'), 'L', 'l'), 'M', 'm'), 'N', 'n'), 'O', 'o'), 'P', 'p'), 'Q', 'q'), 'R', 'r'), 'S', 's'), 'T', 't'), 'U', 'u'), 'V', 'v'), 'W', 'w'), 'X', 'x'), 'Y', 'y'), 'Z', 'z');

-- The overview's failing projects: read by their verdict, not by reading every project.
CREATE INDEX projects_gate_status ON projects (account_id, last_gate_status, label);
