-- The PostgreSQL floor for POST /v1/dashboard/push (scripts/bench.sh with BENCH_DB=postgres):
-- the rows one push of 50 findings writes, inserted by pgbench (C, prepared statements), one
-- transaction per scan. Each client has its own account and project (bench/pgbench/seed.sql),
-- as the server benchmark rotates over 200 accounts, so no client waits for another's lock.
BEGIN;
SELECT nextval('bench_scan_seq') AS seq \gset
UPDATE accounts SET write_guard = write_guard + 1 WHERE id = 'acct_' || :client_id;
UPDATE projects SET scan_count = scan_count + 1, last_score = 80, last_delta = 0,
  last_scan_id = 'scan-' || :seq, last_body_hash = 'h'
  WHERE id = 'prj_' || :client_id RETURNING scan_count, last_delta;
INSERT INTO scans (project_id, seq, scan_id, account_id, score, score_delta, passed, failed,
  sev_critical, sev_high, sev_medium, sev_low, cloud, cloud_account_id, frameworks, state_source,
  scanned_at, received_at, finding_count, body_hash)
  VALUES ('prj_' || :client_id, :seq, 'scan-' || :seq, 'acct_' || :client_id, 80.0, 0.0, 100, 50,
  1, 2, 3, 4, 'gcp', 'acme-prod', '["cis-gcp-2.0"]', 'ci', :seq, :seq, 50, 'h');
INSERT INTO findings (project_id, scan_seq, ordinal, rule_id, resource, status, severity, message,
  remediation)
  SELECT 'prj_' || :client_id, :seq, i, 'cis-gcp-2.0-' || i, 'google_compute_instance.web_' || i,
  'FAIL', 'high', 'Instance uses the default service account',
  'Attach a dedicated service account with least privilege'
  FROM generate_series(0, 49) AS i;
COMMIT;
