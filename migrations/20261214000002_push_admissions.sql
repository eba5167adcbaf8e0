-- Pushes admitted under their account's write budget whose transaction has not committed yet
-- (PostgreSQL, issue 70). The budget counts the account's appends in the rolling window plus
-- these; a push's transaction deletes its row as it commits its scan, so it is counted once
-- throughout, and the lock that orders admissions is held only for the admission's own short
-- transaction, never across a push's durable commit. A row a crashed replica left behind
-- stops counting after two minutes and is deleted by a later admission of the account.
CREATE TABLE push_admissions (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL,
    admitted_at BIGINT NOT NULL
);
CREATE INDEX push_admissions_account ON push_admissions (account_id, admitted_at);
