-- Seats' terms (issue 67): how long a licence's seats may go unseen (NULL: the server's
-- TIDEMARK_SEAT_RELEASE_AFTER_DAYS; 0: never freed by time), and the seat an offline licence
-- file holds until the file expires (it cannot be revoked, so neither can its seat).
ALTER TABLE licenses ADD COLUMN seat_release_after_days BIGINT;
ALTER TABLE machines ADD COLUMN offline_until BIGINT;
