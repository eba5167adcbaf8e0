-- The account's roll-ups as changes a push adds, not rows it updates (issue 70). Every
-- default-branch push of an account moved the same `account_posture` rows and today's
-- `account_days` row, and held their row locks to its durable commit, so on PostgreSQL one
-- account's commits still followed each other one log flush at a time. A PostgreSQL push now
-- inserts its change here (rows no other push touches); the readers sum the kept rows and
-- these, and a fold moves them into the kept rows now and then, so the readers' rows stay few.
-- SQLite, whose writes are one at a time anyway, still updates the kept rows directly.
-- `scan_ref` is the pushed scan's (project id and number), which makes each change's key.
CREATE TABLE account_posture_changes (
    account_id    TEXT NOT NULL,
    scan_ref      TEXT NOT NULL,
    kind          TEXT NOT NULL,
    cloud         TEXT NOT NULL,
    name          TEXT NOT NULL,
    passed        BIGINT NOT NULL,
    failed        BIGINT NOT NULL,
    triaged       BIGINT NOT NULL,
    not_evaluated BIGINT NOT NULL,
    projects      BIGINT NOT NULL,
    PRIMARY KEY (account_id, scan_ref, kind, cloud, name)
);

CREATE TABLE account_day_changes (
    account_id TEXT NOT NULL,
    scan_ref   TEXT NOT NULL,
    utc_day    BIGINT NOT NULL,
    d_critical BIGINT NOT NULL,
    d_high     BIGINT NOT NULL,
    d_medium   BIGINT NOT NULL,
    d_low      BIGINT NOT NULL,
    PRIMARY KEY (account_id, scan_ref, utc_day)
);
