-- Storage that grows with what changed (issue 36). A branch's findings are kept as spans:
-- one finding exactly as pushed, from the first scan of the branch that had it (from_seq) to
-- the first later scan of the branch without it (to_seq; 9223372036854775807 while the
-- branch's latest scan has it). A scan's findings are its branch's spans that cover it, in
-- the order of their position (domain::spans). Messages and remediation texts are stored
-- once per project.
CREATE TABLE finding_texts (
    project_id  TEXT NOT NULL REFERENCES projects (id),
    -- domain::spans::text_hash of the message and the remediation.
    hash        TEXT NOT NULL,
    message     TEXT NOT NULL,
    remediation TEXT NOT NULL,
    PRIMARY KEY (project_id, hash)
);

CREATE TABLE finding_spans (
    branch_id TEXT NOT NULL REFERENCES branches (id),
    to_seq    BIGINT NOT NULL,
    position  BIGINT NOT NULL,
    from_seq  BIGINT NOT NULL,
    rule_id   TEXT NOT NULL,
    resource  TEXT NOT NULL,
    status    TEXT NOT NULL,
    severity  TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    -- A scan reads the spans of its branch ending after it (and starting at or before it);
    -- a push ends spans of its branch's latest scan by position.
    PRIMARY KEY (branch_id, to_seq, position)
);

-- Where a scan's findings are: NULL, one row each in `findings` (scans stored before this
-- release, until moved); 'spans'; 'thinned' (housekeeping removed them; the scan's row stays).
ALTER TABLE scans ADD COLUMN findings_stored TEXT;
