-- How much each licence is used per UTC day, for the vendor's console (issue 69): validations
-- and pushes, counted in memory by each replica and added here once a minute (a replica that
-- dies loses at most that minute's counts: these are charts, not billing). `day` is the UTC
-- midnight it counts from, in milliseconds. Kept 400 days.
CREATE TABLE license_days (
    license_id  TEXT NOT NULL,
    day         BIGINT NOT NULL,
    validations BIGINT NOT NULL DEFAULT 0,
    pushes      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (license_id, day)
);
CREATE INDEX license_days_day ON license_days (day);

-- The client a machine last validated with: its User-Agent's first product ("tidemark-cli/1.4.2").
ALTER TABLE machines ADD COLUMN client_version TEXT;
