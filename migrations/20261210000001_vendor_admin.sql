-- The vendor's admin API (issue 67): tokens its systems and staff call /admin/v1 with, the
-- idempotency keys of licence creations, and a version per licence for If-Match.
CREATE TABLE vendor_tokens (
    -- 'vtk_' + random: names the token in lists and revocations (never the token).
    id           TEXT PRIMARY KEY,
    -- What the vendor calls it ("billing-stripe", "support-desk"); the audit log's actor
    -- is 'vendor:<name>'. Unique among live tokens.
    name         TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'sales', 'support', 'billing', 'read')),
    -- sha256 (hex) of the token: the token itself is shown once and never stored.
    token_hash   TEXT NOT NULL UNIQUE,
    -- 'tmk_vendor_' and six characters: tells tokens apart, useless to guess.
    prefix       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    -- The audit actor that made it ('operator:<user>' or 'vendor:<name>').
    created_by   TEXT NOT NULL,
    expires_at   BIGINT,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

CREATE UNIQUE INDEX vendor_tokens_live_name ON vendor_tokens (name) WHERE revoked_at IS NULL;

-- A licence creation's Idempotency-Key: a retried call answers the licence the first made;
-- the same key with another body is refused. Kept 24 hours.
CREATE TABLE admin_idempotency (
    token_id       TEXT NOT NULL,
    idem_key       TEXT NOT NULL,
    -- sha256 (hex) of the request body as sent.
    request_sha256 TEXT NOT NULL,
    license_id     TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    PRIMARY KEY (token_id, idem_key)
);

CREATE INDEX admin_idempotency_age ON admin_idempotency (created_at);

-- Bumped by every change to a licence: its ETag.
ALTER TABLE licenses ADD COLUMN version BIGINT NOT NULL DEFAULT 1;

-- Keyset pages of the licence list, oldest first.
CREATE INDEX licenses_created ON licenses (created_at, id);
