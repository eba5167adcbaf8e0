-- Signed licence verdicts (issue 28): the service's Ed25519 signing keys. Service-wide, not
-- per account: every account's verdicts are signed by the same current key, which clients
-- learn from the published key set. The private half is sealed under the master key; a key
-- that retires is deleted, private half and all.
CREATE TABLE signing_keys (
    kid          TEXT PRIMARY KEY,
    -- 1 for the first key, one more per rotation; unique, so replicas starting together
    -- create one first key, and two rotations at once create one successor.
    generation   BIGINT NOT NULL UNIQUE,
    -- base64url of the 32-byte public key.
    public_key   TEXT NOT NULL,
    -- The PKCS#8 private key, sealed (HKDF purpose signing-key).
    private_sealed TEXT NOT NULL,
    published_at BIGINT NOT NULL,
    signs_from   BIGINT NOT NULL,
    -- The furthest exp of an offline licence file it signed (0: none).
    longest_exp  BIGINT NOT NULL DEFAULT 0
);

-- The succession of keys, kept for good (public halves only): each key after the first is
-- introduced by a statement its predecessor signed, so a client that trusts any key of the
-- chain can walk to the current one, however long it was away.
CREATE TABLE signing_key_chain (
    generation BIGINT PRIMARY KEY,
    kid        TEXT NOT NULL UNIQUE,
    public_key TEXT NOT NULL,
    -- A compact JWS (typ tidemark-key-intro+jwt) by the previous generation's key; NULL for
    -- the first key.
    statement  TEXT
);
