-- A secret a plain form made (a rotated API key, a webhook signing secret, a SCIM token) is
-- handed over to the page the form redirects to (post/redirect/get), once: the form's answer
-- is a redirect a reload cannot repeat, and the page that shows the secret takes it from
-- here, deleting it. The row is keyed by a hash of the form's one-time token, so a form sent
-- twice (a double click, a resent request) finds the first one's row and acts once.
CREATE TABLE secret_handovers (
    -- sha256 (hex) of the form's one-time token; the token alone is in the page's address.
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    -- Only the member who sent the form may take it.
    user_id     TEXT NOT NULL,
    -- 'api_key', 'webhook_secret' or 'scim_token'.
    kind        TEXT NOT NULL,
    -- The secret sealed under the master key (never usable from a dump); null while the
    -- form's action is under way.
    secret_sealed TEXT,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);

CREATE INDEX secret_handovers_expiry ON secret_handovers (expires_at);
