-- While an account's write budget is spent, only a byte-identical retry of one of its lines'
-- latest scans is a replay, recognised before the body is parsed (decisions.md, 2026-11-24):
-- each line keeps the SHA-256 of the bytes its latest scan was pushed as. NULL for a head
-- pushed before this release (its retry is then refused while the budget is spent, and is a
-- replay again once the budget allows).
ALTER TABLE branches ADD COLUMN head_raw_hash TEXT;
CREATE INDEX branches_raw_head ON branches (account_id, head_raw_hash);
