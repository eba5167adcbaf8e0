-- Drift (issue 47, `drift_detection`): what a scan's push found drifted (requirements that
-- passed in the line's previous scan and fail in this one), per framework, as JSON
-- ([{"framework": "...", "requirements": ["..."]}]); NULL when nothing drifted or the licence
-- lacks drift detection. Read by the scan page and by the `posture.drifted` event's webhook
-- deliveries and alert mails, which are composed from the scan when sent.
ALTER TABLE scans ADD COLUMN drifted TEXT;

-- A member's choice to be mailed when a push on a default branch drifted.
ALTER TABLE alert_prefs ADD COLUMN posture_drifted BOOLEAN NOT NULL DEFAULT FALSE;
