-- What became of a message the sender finished with: 'delivered', 'no_license' (nothing to
-- send) or 'capped' (the recipient had had enough mail this hour). Only delivered messages
-- count against the per-recipient cap.
ALTER TABLE mail_outbox ADD COLUMN outcome TEXT;
CREATE INDEX mail_outbox_recipient ON mail_outbox (recipient, sent_at);
