-- Custom frameworks (issue 47): an account's own control set, each control mapped to rule
-- ids of scanned frameworks. `document` is the framework as JSON (FrameworkDocument, its id
-- included), valid when it was set. Its posture is kept in scan_posture under the framework
-- name 'custom:' || id, by each push after it was set and, when it is set, for the latest
-- scan of each of the account's branches.
CREATE TABLE custom_frameworks (
    account_id TEXT NOT NULL REFERENCES accounts (id),
    id         TEXT NOT NULL,
    document   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    -- A member's e-mail address then, or 'api-key:<prefix>'.
    updated_by TEXT NOT NULL,
    PRIMARY KEY (account_id, id)
);
