-- Signed webhooks (issue 14). An endpoint hears some events of its account, or of one of its
-- projects. Its URL (Slack-style URLs carry a credential) and signing secret are stored
-- encrypted under the master key; `url_display` (scheme, host, port) is what Settings shows.
CREATE TABLE webhooks (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    project_id      TEXT REFERENCES projects (id),
    url_sealed      TEXT NOT NULL,
    url_display     TEXT NOT NULL,
    format          TEXT NOT NULL,
    -- ',scan.pushed,gate.failed,': subscribers are found with LIKE '%,<event>,%'.
    events          TEXT NOT NULL,
    secret_sealed   TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    secret_rotated_at BIGINT
);
CREATE INDEX webhooks_account ON webhooks (account_id);

-- The durable outbox of deliveries: one row per event and endpoint, written in the same
-- transaction as what raised the event. Senders on every replica claim due rows with a
-- conditional update, so each is sent by one replica at a time. The body is composed at
-- delivery from the (append-only) scan, so a row holds no secret.
CREATE TABLE webhook_deliveries (
    event_id        TEXT NOT NULL,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    account_id      TEXT NOT NULL,
    event           TEXT NOT NULL,
    project_id      TEXT,
    scan_seq        BIGINT,
    created_at      BIGINT NOT NULL,
    -- Retries go on until a day after this: the event, or the admin's Redeliver.
    window_start    BIGINT NOT NULL,
    -- 'pending', 'delivered' or 'failed' (gave up).
    state           TEXT NOT NULL DEFAULT 'pending',
    next_attempt_at BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_attempt_at BIGINT,
    last_status     BIGINT,
    last_latency_ms BIGINT,
    last_error      TEXT,
    PRIMARY KEY (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
CREATE INDEX webhook_deliveries_log ON webhook_deliveries (account_id, created_at);
