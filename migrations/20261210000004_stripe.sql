-- Licences made by the checkout (issue 67): Stripe's events, each applied once, and which
-- licence a subscription keeps.
CREATE TABLE stripe_events (
    -- Stripe's 'evt_…'.
    id           TEXT PRIMARY KEY,
    event_type   TEXT NOT NULL,
    received_at  BIGINT NOT NULL,
    -- What it did, in words (kept for support).
    outcome      TEXT NOT NULL
);
CREATE INDEX stripe_events_age ON stripe_events (received_at);

CREATE TABLE stripe_subscriptions (
    -- Stripe's 'sub_…' (or the checkout session's 'cs_…' for a one-off payment).
    subscription_id TEXT PRIMARY KEY,
    license_id      TEXT NOT NULL REFERENCES licenses (id),
    customer_id     TEXT,
    created_at      BIGINT NOT NULL
);
