-- What issue 47 added to a push, made cheaper (its budget: at most 10 % more per push).
-- The push head reads a line's findings whose triage holds (posture tells set-aside failures
-- apart on every push): a partial index holds only triaged rows, so that read touches nothing
-- on a line without triage instead of every tracked finding of the line.
CREATE INDEX tracked_findings_triaged ON tracked_findings (branch_id) WHERE triage_state IS NOT NULL;
-- A line's posture history is read through the scans of the line (scans_line: branch, time)
-- and scan_posture's primary key, so the push maintains one index fewer per posture row.
DROP INDEX scan_posture_line;
