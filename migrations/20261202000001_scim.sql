-- SCIM 2.0 provisioning (issue 31): an account's bearer token, the people and groups its
-- identity provider provisions, and which groups give the admin role. A provisioned person
-- is a view onto one users row (by e-mail address) and, while active, one members row: the
-- membership rules stay in one place.
CREATE TABLE scim_tokens (
    -- One token per account; rotating replaces the row.
    account_id   TEXT PRIMARY KEY REFERENCES accounts (id),
    token_hash   TEXT NOT NULL UNIQUE,
    -- 'tmk_scim_' and six characters: names the token in Settings and the audit log.
    prefix       TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT
);

CREATE TABLE scim_users (
    -- 'scu_' + random: the id the IdP sees (never the user id).
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id),
    -- The Tidemark user this person signs in as (by their work e-mail, or a userName that
    -- is an address); NULL while the IdP has sent neither, and then no membership.
    user_id       TEXT REFERENCES users (id),
    user_name     TEXT NOT NULL,
    -- lower(user_name): userName is unique case-insensitively (RFC 7643).
    user_name_key TEXT NOT NULL,
    external_id   TEXT,
    display_name  TEXT,
    given_name    TEXT,
    family_name   TEXT,
    work_email    TEXT,
    -- The kept e-mail's type and primary flag, as the IdP sent them.
    email_type    TEXT,
    email_primary BOOLEAN,
    -- NULL: not stated by the IdP, which SCIM reads as active.
    active        BOOLEAN,
    -- The role the membership has, or had when the person was deactivated: reactivation
    -- restores it.
    role          TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    version       BIGINT NOT NULL,
    UNIQUE (account_id, user_name_key),
    UNIQUE (account_id, user_id)
);

CREATE TABLE scim_groups (
    id               TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL REFERENCES accounts (id),
    display_name     TEXT NOT NULL,
    display_name_key TEXT NOT NULL,
    external_id      TEXT,
    -- Marked by an admin in Settings: its members are the account's admins.
    grants_admin     BOOLEAN NOT NULL DEFAULT FALSE,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    version          BIGINT NOT NULL,
    UNIQUE (account_id, display_name_key)
);

CREATE TABLE scim_group_members (
    group_id     TEXT NOT NULL REFERENCES scim_groups (id) ON DELETE CASCADE,
    scim_user_id TEXT NOT NULL REFERENCES scim_users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, scim_user_id)
);
CREATE INDEX scim_group_members_user ON scim_group_members (scim_user_id);
