-- Status badges (issue 14): at most one live token per project. A badge token is published
-- on purpose (in a README) and shows only the latest score and gate verdict, so it is kept as
-- is, for Settings to show the Markdown again; revoking deletes the row.
CREATE TABLE badges (
    token       TEXT PRIMARY KEY,
    project_id  TEXT NOT NULL UNIQUE REFERENCES projects (id),
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    created_at  BIGINT NOT NULL
);
