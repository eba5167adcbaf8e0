-- Single sign-on becomes a claim an account must prove (tenant isolation), and sign-in
-- identities get separate namespaces per provider kind. Portable: same text on both engines.

-- A claim of an e-mail domain by an account, with the IdP its people should use. Only a
-- *verified* claim routes anybody or enforces anything; at most one per domain (the index
-- below), so the first account to prove ownership wins and every other claim ends.
CREATE TABLE sso_connections (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    domain          TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'verified', 'ended')),
    -- 128 random bits (hex) the domain must publish: TXT _tidemark-challenge.<domain> =
    -- tidemark-domain-verification=<token>. Public by design; it proves nothing elsewhere.
    challenge_token TEXT NOT NULL,
    idp_entity_id   TEXT NOT NULL,
    idp_sso_url     TEXT NOT NULL,
    -- The IdP's signing certificates (base64 DER, one per line): the only keys trusted.
    signing_certs   TEXT NOT NULL,
    enforce         BOOLEAN NOT NULL DEFAULT FALSE,
    metadata_xml    TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    verified_at     BIGINT,
    -- The last look-up of the record and what it found, for Settings.
    checked_at      BIGINT,
    check_message   TEXT,
    -- When a replica should look again (pending claims only; NULL once it stops).
    next_check_at   BIGINT,
    ended_reason    TEXT,
    UNIQUE (account_id, domain)
);
CREATE UNIQUE INDEX sso_connections_one_verified ON sso_connections (domain)
    WHERE state = 'verified';
CREATE INDEX sso_connections_due ON sso_connections (next_check_at);

-- Nothing proved that the accounts behind existing configurations own their domains (any
-- admin could type any domain in Settings), so none of them routes anybody after the upgrade:
-- each is kept, ended, with the way back. Operators re-run `sso set` for the domains they have
-- checked themselves; admins save the domain again and publish the record.
INSERT INTO sso_connections (id, account_id, domain, state, challenge_token, idp_entity_id,
    idp_sso_url, signing_certs, enforce, metadata_xml, created_at, updated_at, ended_reason)
SELECT 'sso_' || domain, account_id, domain, 'ended', '', idp_entity_id, idp_sso_url,
    signing_certs, enforce, metadata_xml, updated_at, updated_at,
    'Configured before domain ownership was verified. Save the domain again and publish its DNS record to use it.'
FROM sso_domains;

-- Identities: an OpenID Connect identity is (issuer, subject); a SAML identity is (its SSO
-- connection, NameID). `provider` keeps the two namespaces apart whatever entity id an IdP
-- declares. SAML identities bound before this (keyed by the IdP's own entity id, which an
-- IdP chooses freely) are dropped, and so is any identity whose issuer collides with a SAML
-- entity id: each is bound again at its next sign-in from a verified e-mail address.
CREATE TABLE identities_v2 (
    provider      TEXT NOT NULL CHECK (provider IN ('oidc', 'saml')),
    issuer        TEXT NOT NULL,
    subject       TEXT NOT NULL,
    user_id       TEXT NOT NULL REFERENCES users (id),
    created_at    BIGINT NOT NULL,
    last_login_at BIGINT NOT NULL,
    PRIMARY KEY (provider, issuer, subject)
);
INSERT INTO identities_v2 (provider, issuer, subject, user_id, created_at, last_login_at)
SELECT 'oidc', issuer, subject, user_id, created_at, last_login_at FROM identities
WHERE issuer NOT IN (SELECT idp_entity_id FROM sso_domains);
DROP TABLE identities;
ALTER TABLE identities_v2 RENAME TO identities;
CREATE INDEX identities_user ON identities (user_id);

DROP TABLE sso_domains;

-- When the member last used the account (sign-in or the account switcher): OpenID Connect
-- sign-in lands in the account used last.
ALTER TABLE members ADD COLUMN last_used_at BIGINT;
