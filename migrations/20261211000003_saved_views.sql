-- The findings inbox's saved views (issue 68): a member names the filters of /findings to
-- come back to them. Each person's own, per account; the view is its query string, so the
-- same address shared with a colleague shows them the same findings.
CREATE TABLE saved_views (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    user_id    TEXT NOT NULL REFERENCES users (id),
    name       TEXT NOT NULL,
    query      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (account_id, user_id, name)
);
