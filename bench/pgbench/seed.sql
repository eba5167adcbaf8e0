-- One account and project per pgbench client (ids acct_0.., prj_0..), on the server's schema.
CREATE SEQUENCE bench_scan_seq;
INSERT INTO accounts (id, created_at) SELECT 'acct_' || c, 0 FROM generate_series(0, 63) AS c;
INSERT INTO projects (id, account_id, label, created_at)
  SELECT 'prj_' || c, 'acct_' || c, 'bench', 0 FROM generate_series(0, 63) AS c;
