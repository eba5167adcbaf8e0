-- Seats (issue 67): the machines a licence is activated on. A licence with max_machines set
-- activates a new machine only while fewer are live; NULL is unlimited (every licence made
-- before this migration keeps the contract's behaviour).
ALTER TABLE licenses ADD COLUMN max_machines BIGINT;

CREATE TABLE machines (
    -- 'mch_' + random.
    id             TEXT PRIMARY KEY,
    license_id     TEXT NOT NULL REFERENCES licenses (id),
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    -- What makes it one machine: 'fp:<X-Machine-Fingerprint>', or 'name:<machine name>' when
    -- the activation named no fingerprint.
    machine_key    TEXT NOT NULL,
    -- The name the latest activation gave it.
    name           TEXT NOT NULL,
    activated_at   BIGINT NOT NULL,
    last_seen_at   BIGINT NOT NULL,
    -- Set when the seat is freed (by support, the customer's admin, or housekeeping); its API
    -- keys are revoked in the same transaction.
    released_at    BIGINT
);

-- One live seat per machine and licence.
CREATE UNIQUE INDEX machines_live ON machines (license_id, machine_key) WHERE released_at IS NULL;
CREATE INDEX machines_account ON machines (account_id);

-- The seat an activation's key belongs to (NULL: a key made by rotation in Settings, or
-- before seats existed).
ALTER TABLE api_keys ADD COLUMN machine_id TEXT;
CREATE INDEX api_keys_machine ON api_keys (machine_id);

-- Every live activation before this migration holds a seat, one per machine name.
INSERT INTO machines (id, license_id, account_id, machine_key, name, activated_at, last_seen_at)
SELECT 'mch_' || SUBSTR(MIN(k.id), 5), l.id, k.account_id, 'name:' || k.machine, k.machine,
       MIN(k.created_at), MAX(COALESCE(k.last_used_at, k.created_at))
FROM api_keys k JOIN licenses l ON l.account_id = k.account_id
WHERE k.revoked_at IS NULL
GROUP BY l.id, k.account_id, k.machine;

UPDATE api_keys SET machine_id = (
    SELECT m.id FROM machines m
    WHERE m.account_id = api_keys.account_id AND m.machine_key = 'name:' || api_keys.machine
      AND m.released_at IS NULL
) WHERE revoked_at IS NULL;
