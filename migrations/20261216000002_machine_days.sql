-- The machines active on each UTC day (they validated naming their fingerprint), for the
-- vendor console's business page (issue 69): one row per machine and day, written with each
-- replica's sightings once a minute. Kept 400 days, as license_days.
CREATE TABLE machine_days (
    day        BIGINT NOT NULL,
    machine_id TEXT NOT NULL,
    PRIMARY KEY (day, machine_id)
);
