-- Housekeeping (issue 36): work that one replica at a time does for all (moving scans stored
-- as rows to spans, thinning old scans' finding detail) holds a lease while it runs. A lease
-- whose holder died lapses at expires_at, and another replica takes it over.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- An account's own housekeeping policy (domain::housekeeping::Policy as JSON); NULL: the
-- installation's.
ALTER TABLE accounts ADD COLUMN housekeeping TEXT;
