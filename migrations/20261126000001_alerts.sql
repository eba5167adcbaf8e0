-- E-mail alerts (issue 14): each member chooses, per account, which push outcomes mail them.
-- No row means no alerts. Rows of people who are no longer members are deleted with the
-- membership, and the alert statement joins `members` as well.
CREATE TABLE alert_prefs (
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    user_id         TEXT NOT NULL REFERENCES users (id),
    gate_failed     BOOLEAN NOT NULL DEFAULT FALSE,
    score_regressed BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at      BIGINT NOT NULL,
    PRIMARY KEY (account_id, user_id)
);

-- An alert mail is about one pushed scan; it is composed from that (append-only) scan when it
-- is sent, so the row holds no copy of it. Null for other kinds of mail. A sent alert whose
-- scan is gone ends with the outcome 'obsolete'.
ALTER TABLE mail_outbox ADD COLUMN account_id TEXT;
ALTER TABLE mail_outbox ADD COLUMN project_id TEXT;
ALTER TABLE mail_outbox ADD COLUMN scan_seq BIGINT;
