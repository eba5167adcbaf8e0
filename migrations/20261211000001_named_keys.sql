-- Named API keys (issue 68): an admin makes a key in Settings with a name (kept in `machine`,
-- the column every key already has for what it is for) and, if they choose, an expiry. A key
-- past `expires_at` is refused as a revoked key is. `expiry_warned_at` records the alert mail
-- that warned the account's admins a week before, so each key is warned of once.
ALTER TABLE api_keys ADD COLUMN expires_at BIGINT;
ALTER TABLE api_keys ADD COLUMN expiry_warned_at BIGINT;
CREATE INDEX api_keys_expiring ON api_keys (expires_at)
    WHERE expires_at IS NOT NULL AND revoked_at IS NULL AND expiry_warned_at IS NULL;

-- An admin's choice of the expiry warning. On unless turned off: an expired key breaks CI
-- without a word, so this one alert is not opt-in (a member who never saved a choice has no
-- row, and counts as on).
ALTER TABLE alert_prefs ADD COLUMN key_expiring BOOLEAN NOT NULL DEFAULT TRUE;
