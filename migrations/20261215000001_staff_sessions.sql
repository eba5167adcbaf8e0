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

