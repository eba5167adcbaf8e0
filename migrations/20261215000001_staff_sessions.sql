-- The vendor's staff signed in to the console (issue 69): the same shape as the customers'
-- `sessions`, in a table of its own so that neither kind of session id can ever be looked up
-- as the other. `user_id` is the staff member's subject at the console's identity provider;
-- `account_id` is always NULL (staff belong to no customer's account). `data` holds the
-- person's e-mail, roles and their provider access token sealed with the master key.
CREATE TABLE staff_sessions (
    id_hash             TEXT PRIMARY KEY,
    user_id             TEXT,
    account_id          TEXT,
    data                TEXT NOT NULL,
    created_at          BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    absolute_expires_at BIGINT NOT NULL
);
CREATE INDEX staff_sessions_user ON staff_sessions (user_id);
CREATE INDEX staff_sessions_expires ON staff_sessions (expires_at);

-- A console sign-in's round trip is kept like a customer's, under its own method, so that
-- neither callback can take the other's attempt. The method's CHECK grows by one value: the
-- table is rebuilt (SQLite cannot alter a constraint), keeping attempts in flight.
CREATE TABLE login_attempts_next (
    id_hash    TEXT PRIMARY KEY,
    method     TEXT NOT NULL CHECK (method IN ('oidc', 'saml', 'console-oidc')),
    payload    TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
INSERT INTO login_attempts_next (id_hash, method, payload, expires_at)
    SELECT id_hash, method, payload, expires_at FROM login_attempts;
DROP TABLE login_attempts;
ALTER TABLE login_attempts_next RENAME TO login_attempts;
CREATE INDEX login_attempts_expires ON login_attempts (expires_at);
