-- The posture backfill (issue 47): a scan whose posture is still to be judged. Every scan
-- stored before this migration reads 1 (an added column's constant default costs no rewrite
-- on either database), and so does one a replica of the previous release pushes during a
-- rolling upgrade; this release's push writes 0, having kept its posture in its transaction.
-- The backfill judges pending scans from their findings, writes their scan_posture rows and
-- sets 0 in one transaction each, so a killed run resumes where it stopped.
ALTER TABLE scans ADD COLUMN posture_pending BIGINT NOT NULL DEFAULT 1;

-- Only the pending scans: empty once the backfill is done.
CREATE INDEX scans_posture_pending ON scans (project_id, seq) WHERE posture_pending = 1;
