-- The audit log (issue 14): every admin action and every operator command that changes data,
-- written in the same transaction as the change. Append-only: the store only inserts and
-- reads these rows (no code path updates or deletes one).
CREATE TABLE audit_events (
    -- 'aud_' + time-ordered + random.
    id             TEXT PRIMARY KEY,
    -- Null for changes that belong to no account (a published bundle).
    account_id     TEXT,
    at             BIGINT NOT NULL,
    actor_kind     TEXT NOT NULL CHECK (actor_kind IN ('user', 'operator', 'system')),
    -- The member's e-mail address then, 'operator:<OS user>' or 'system:<task>'.
    actor          TEXT NOT NULL,
    actor_user_id  TEXT,
    client_ip      TEXT,
    action         TEXT NOT NULL,
    -- What was changed (a project label, a member's address, a key prefix, a domain …).
    target         TEXT NOT NULL,
    before_summary TEXT,
    after_summary  TEXT
);
CREATE INDEX audit_events_account ON audit_events (account_id, at);
