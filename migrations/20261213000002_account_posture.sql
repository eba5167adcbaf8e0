-- The account's compliance roll-up kept by the push (issue 70): per framework and per cloud
-- account, the sum of every active project's latest default-branch scan, so the projects
-- page reads a few rows however many projects the account holds. `kind` is 'framework'
-- (`name` the framework, `cloud` empty) or 'cloud' (`cloud` and its account id in `name`).
CREATE TABLE account_posture (
    account_id    TEXT NOT NULL,
    kind          TEXT NOT NULL,
    cloud         TEXT NOT NULL,
    name          TEXT NOT NULL,
    passed        BIGINT NOT NULL,
    failed        BIGINT NOT NULL,
    triaged       BIGINT NOT NULL,
    not_evaluated BIGINT NOT NULL,
    projects      BIGINT NOT NULL,
    PRIMARY KEY (account_id, kind, cloud, name)
);

INSERT INTO account_posture (account_id, kind, cloud, name, passed, failed, triaged,
    not_evaluated, projects)
SELECT p.account_id, 'framework', '', sp.framework, SUM(sp.passed), SUM(sp.failed),
    SUM(sp.triaged), SUM(sp.not_evaluated), COUNT(*)
FROM projects p JOIN branches b ON b.id = p.default_branch_id
JOIN scan_posture sp ON sp.project_id = p.id AND sp.scan_seq = b.head_seq
WHERE p.archived_at IS NULL
GROUP BY p.account_id, sp.framework;

INSERT INTO account_posture (account_id, kind, cloud, name, passed, failed, triaged,
    not_evaluated, projects)
SELECT p.account_id, 'cloud', s.cloud, s.cloud_account_id,
    COALESCE(SUM(sp.passed), 0), COALESCE(SUM(sp.failed), 0), COALESCE(SUM(sp.triaged), 0),
    COALESCE(SUM(sp.not_evaluated), 0), COUNT(DISTINCT p.id)
FROM projects p JOIN branches b ON b.id = p.default_branch_id
JOIN scans s ON s.project_id = p.id AND s.seq = b.head_seq
LEFT JOIN scan_posture sp ON sp.project_id = s.project_id AND sp.scan_seq = s.seq
WHERE p.archived_at IS NULL
GROUP BY p.account_id, s.cloud, s.cloud_account_id;
