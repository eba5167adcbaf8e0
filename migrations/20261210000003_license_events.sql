-- Licence events to the vendor (issue 67): what happened to a licence, kept as the JSON body
-- each vendor webhook endpoint receives, and the endpoints' durable outbox.

-- Numbers a licence's events: taking the next one locks the licence's row, so a licence's
-- events are numbered in the order their transactions commit.
ALTER TABLE licenses ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;
-- The calendar worker looks for licences expiring soon or just expired.
CREATE INDEX licenses_expires ON licenses (expires_at);

CREATE TABLE license_events (
    -- 'evt_' + random.
    id          TEXT PRIMARY KEY,
    license_id  TEXT NOT NULL REFERENCES licenses (id),
    -- The licence's own order, from 1 (gaps allowed).
    seq         BIGINT NOT NULL,
    event       TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    -- The whole body an endpoint receives (no key or secret in it).
    body        TEXT NOT NULL,
    -- Events raised once per occasion (`expiring:7:<expiry>`, `expired:<expiry>`,
    -- `seat_limit:<hour>`): a second raise finds this and does nothing.
    once_key    TEXT
);
CREATE UNIQUE INDEX license_events_order ON license_events (license_id, seq);
CREATE UNIQUE INDEX license_events_once ON license_events (license_id, once_key)
    WHERE once_key IS NOT NULL;
CREATE INDEX license_events_created ON license_events (created_at, id);

-- The vendor's endpoints; URL and secret sealed under the master key like account webhooks.
CREATE TABLE vendor_webhooks (
    -- 'vwh_' + random.
    id            TEXT PRIMARY KEY,
    url_sealed    TEXT NOT NULL,
    url_display   TEXT NOT NULL,
    -- ',license.created,machine.activated,': subscribers match LIKE '%,<event>,%'.
    events        TEXT NOT NULL,
    secret_sealed TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

-- One row per event and endpoint, written in the transaction that raised the event. Only the
-- earliest unfinished delivery of a licence to an endpoint is 'pending' (claimable); later
-- ones wait as 'queued' and the sender promotes the next when one finishes, so an endpoint
-- hears a licence's events in order.
CREATE TABLE vendor_deliveries (
    event_id        TEXT NOT NULL REFERENCES license_events (id),
    webhook_id      TEXT NOT NULL REFERENCES vendor_webhooks (id) ON DELETE CASCADE,
    license_id      TEXT NOT NULL,
    seq             BIGINT NOT NULL,
    -- 'queued', 'pending', 'delivered' or 'failed' (gave up).
    state           TEXT NOT NULL DEFAULT 'queued',
    created_at      BIGINT NOT NULL,
    window_start    BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_attempt_at BIGINT,
    last_status     BIGINT,
    last_latency_ms BIGINT,
    last_error      TEXT,
    PRIMARY KEY (event_id, webhook_id)
);
CREATE INDEX vendor_deliveries_due ON vendor_deliveries (state, next_attempt_at);
CREATE INDEX vendor_deliveries_line ON vendor_deliveries (webhook_id, license_id, seq);
