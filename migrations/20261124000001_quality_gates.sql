-- Quality gates (issue 14). A project's gate is up to three conditions; all NULL is no gate.
ALTER TABLE projects ADD COLUMN gate_min_score DOUBLE PRECISION;
ALTER TABLE projects ADD COLUMN gate_max_drop DOUBLE PRECISION;
-- 'critical', 'high', 'medium' or 'low': no new open finding at or above it.
ALTER TABLE projects ADD COLUMN gate_new_severity TEXT;
-- The verdict on each scan as it was when pushed: 'passed' or 'failed', NULL when the
-- project had no gate; the reasons are a JSON array of sentences.
ALTER TABLE scans ADD COLUMN gate_status TEXT;
ALTER TABLE scans ADD COLUMN gate_reasons TEXT;
-- The latest scan's verdict beside its id and delta, so a replay answers without reading scans.
ALTER TABLE projects ADD COLUMN last_gate_status TEXT;
ALTER TABLE projects ADD COLUMN last_gate_reasons TEXT;
