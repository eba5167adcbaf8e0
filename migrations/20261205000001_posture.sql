-- Compliance posture (issue 47): for each scan and each framework it named, how many
-- requirements (rules) passed, failed, were triaged or could not be evaluated, the same per
-- section as JSON ({"1": [passed, failed, triaged, not_evaluated], ...}), and the requirements
-- that drifted (passed in the line's previous scan, failed in this one: a JSON array of rule
-- ids). Written by the push in its transaction, so reading a year of posture reads these rows
-- and never findings; housekeeping's thinning keeps them. A scan stored before this migration
-- has no rows until the posture backfill reaches it.
CREATE TABLE scan_posture (
    project_id    TEXT NOT NULL,
    scan_seq      BIGINT NOT NULL,
    branch_id     TEXT NOT NULL,
    scanned_at    BIGINT NOT NULL,
    framework     TEXT NOT NULL,
    passed        BIGINT NOT NULL,
    failed        BIGINT NOT NULL,
    triaged       BIGINT NOT NULL,
    not_evaluated BIGINT NOT NULL,
    sections      TEXT NOT NULL,
    drifted       TEXT NOT NULL,
    PRIMARY KEY (project_id, scan_seq, framework)
);

-- A line's posture over a range of time.
CREATE INDEX scan_posture_line ON scan_posture (branch_id, scanned_at);
