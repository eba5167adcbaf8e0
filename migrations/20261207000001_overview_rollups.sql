-- The projects page's overview (issue 48): open findings by severity per day across an
-- account's default branches, read from per-day roll-ups that each push keeps up to date
-- instead of from every scan of the window (which grew with the number of projects).
--
-- line_days: each line's latest scan of each UTC day (by the scan's own time; the later push
-- breaks a tie), with its counts. Kept for every line, so that a new default branch or an
-- unarchived project can be summed again from it.
CREATE TABLE line_days (
    branch_id    TEXT NOT NULL,
    utc_day      BIGINT NOT NULL,
    scanned_at   BIGINT NOT NULL,
    seq          BIGINT NOT NULL,
    sev_critical BIGINT NOT NULL,
    sev_high     BIGINT NOT NULL,
    sev_medium   BIGINT NOT NULL,
    sev_low      BIGINT NOT NULL,
    PRIMARY KEY (branch_id, utc_day)
);

-- account_days: by how much, on each day, the sum over the account's active projects'
-- default lines of each line's latest counts changed. The sum of an account's rows up to a
-- day is that day's total, so a chart of any range reads the days before it as one sum and
-- then one row per day, however many projects the account has.
CREATE TABLE account_days (
    account_id TEXT NOT NULL,
    utc_day    BIGINT NOT NULL,
    d_critical BIGINT NOT NULL,
    d_high     BIGINT NOT NULL,
    d_medium   BIGINT NOT NULL,
    d_low      BIGINT NOT NULL,
    PRIMARY KEY (account_id, utc_day)
);

INSERT INTO line_days (branch_id, utc_day, scanned_at, seq, sev_critical, sev_high, sev_medium, sev_low)
SELECT branch_id, utc_day, scanned_at, seq, sev_critical, sev_high, sev_medium, sev_low FROM (
    SELECT s.branch_id, s.scanned_at / 86400000 AS utc_day, s.scanned_at, s.seq,
           s.sev_critical, s.sev_high, s.sev_medium, s.sev_low,
           ROW_NUMBER() OVER (PARTITION BY s.branch_id, s.scanned_at / 86400000
                              ORDER BY s.scanned_at DESC, s.seq DESC) AS newest
    FROM scans s WHERE s.branch_id IS NOT NULL
) latest WHERE newest = 1;

INSERT INTO account_days (account_id, utc_day, d_critical, d_high, d_medium, d_low)
SELECT account_id, utc_day, SUM(d_critical), SUM(d_high), SUM(d_medium), SUM(d_low) FROM (
    SELECT p.account_id, ld.utc_day,
           ld.sev_critical - COALESCE(LAG(ld.sev_critical) OVER w, 0) AS d_critical,
           ld.sev_high - COALESCE(LAG(ld.sev_high) OVER w, 0) AS d_high,
           ld.sev_medium - COALESCE(LAG(ld.sev_medium) OVER w, 0) AS d_medium,
           ld.sev_low - COALESCE(LAG(ld.sev_low) OVER w, 0) AS d_low
    FROM projects p JOIN line_days ld ON ld.branch_id = p.default_branch_id
    WHERE p.archived_at IS NULL
    WINDOW w AS (PARTITION BY ld.branch_id ORDER BY ld.utc_day)
) changes GROUP BY account_id, utc_day;
