-- Who may enter the dashboard, how they proved it, and their sessions. Portable like the
-- core schema: the same text runs on SQLite and PostgreSQL.

-- A person, known by e-mail address (lower-case). Created when an admin adds a member or a
-- license names its first admin; signing in never creates one.
CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    email      TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- A sign-in identity bound to a user on first sign-in: (OIDC issuer, subject) or
-- (SAML IdP entity id, NameID). Later sign-ins find the user by this pair, not by e-mail.
CREATE TABLE identities (
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    user_id       TEXT NOT NULL REFERENCES users (id),
    created_at    BIGINT NOT NULL,
    last_login_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX identities_user ON identities (user_id);

CREATE TABLE members (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    user_id    TEXT NOT NULL REFERENCES users (id),
    role       TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    added_at   BIGINT NOT NULL,
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX members_user ON members (user_id);

-- Every existing license's e-mail becomes its account's first admin.
INSERT INTO users (id, email, created_at)
SELECT 'usr_' || substr(MIN(id), 5), lower(email), MIN(created_at) FROM licenses
GROUP BY lower(email)
ON CONFLICT DO NOTHING;
INSERT INTO members (account_id, user_id, role, added_at)
SELECT l.account_id, u.id, 'admin', l.created_at FROM licenses l
JOIN users u ON u.email = lower(l.email)
ON CONFLICT DO NOTHING;

-- Dashboard sessions (tower-sessions records). The key is the sha256 of the session id, so a
-- dump holds no usable session. `user_id`/`account_id` let membership changes end sessions.
CREATE TABLE sessions (
    id_hash             TEXT PRIMARY KEY,
    user_id             TEXT,
    account_id          TEXT,
    data                TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    absolute_expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- One OIDC or SAML round trip in progress. Keyed by the sha256 of the value in the
-- short-lived login cookie; the payload (state, nonce, PKCE verifier or SAML request id,
-- return path) is encrypted under the master key. Deleted when used: single use.
CREATE TABLE login_attempts (
    id_hash    TEXT PRIMARY KEY,
    method     TEXT NOT NULL CHECK (method IN ('oidc', 'saml')),
    payload    TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX login_attempts_expires ON login_attempts (expires_at);

-- SAML single sign-on for an e-mail domain, owned by one (enterprise) account.
CREATE TABLE sso_domains (
    domain         TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    idp_entity_id  TEXT NOT NULL,
    idp_sso_url    TEXT NOT NULL,
    -- The IdP's signing certificates (base64 DER, one per line): the only keys trusted.
    signing_certs  TEXT NOT NULL,
    enforce        BOOLEAN NOT NULL DEFAULT FALSE,
    metadata_xml   TEXT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX sso_domains_account ON sso_domains (account_id);

-- Assertion ids already accepted, kept until the assertion would have expired anyway.
CREATE TABLE saml_seen_assertions (
    id_hash    TEXT PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
