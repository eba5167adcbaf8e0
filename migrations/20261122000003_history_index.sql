-- The score-history chart reads (scanned_at, seq, score) of up to every scan of a project.
-- A covering index answers that from the index alone, without a table lookup per scan.
CREATE INDEX scans_history ON scans (project_id, scanned_at, seq, score);
