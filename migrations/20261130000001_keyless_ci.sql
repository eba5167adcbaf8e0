-- Keyless CI (issue 27): the CI identities an account trusts, the job tokens already exchanged
-- (shared by every replica, so a token is single-use everywhere), the short-lived push tokens
-- the exchange hands out, and how each scan was pushed.
CREATE TABLE trusted_publishers (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    provider      TEXT NOT NULL,
    issuer        TEXT NOT NULL,
    -- GitHub owner/name or GitLab project path; a custom issuer's exact subject.
    repository    TEXT NOT NULL,
    -- Immutable numeric ids, NULL until given or pinned by the first matching token.
    owner_id      TEXT,
    repository_id TEXT,
    workflow      TEXT,
    environment   TEXT,
    ref_pattern   TEXT,
    -- NULL: every project of the account.
    project_label TEXT,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT
);
CREATE INDEX trusted_publishers_issuer ON trusted_publishers (issuer);
CREATE INDEX trusted_publishers_account ON trusted_publishers (account_id);

-- A job token's id is unique per issuer; kept until the token could no longer be valid.
CREATE TABLE oidc_used_tokens (
    issuer     TEXT NOT NULL,
    jti        TEXT NOT NULL,
    account_id TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, jti)
);
CREATE INDEX oidc_used_tokens_expiry ON oidc_used_tokens (expires_at);

CREATE TABLE ci_tokens (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    -- Removing the publisher ends its tokens.
    publisher_id TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    -- JSON array of project labels; NULL: every project of the account.
    projects    TEXT,
    -- JSON: the CI identity matched, and the git context its claims vouch for.
    identity    TEXT NOT NULL,
    trusted_git TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX ci_tokens_account ON ci_tokens (account_id);
CREATE INDEX ci_tokens_expiry ON ci_tokens (expires_at);

-- JSON (wire::PushedBy): an API key's prefix and machine, or a CI identity. NULL for scans
-- pushed before this release.
ALTER TABLE scans ADD COLUMN pushed_by TEXT;
