-- Framework catalogues (issue 68): every requirement of a scanned framework as the vendor
-- publishes it (read from Prowler's compliance JSON), so a framework's page lists the
-- requirements no scan evaluated too. Global, like bundles: the same catalogue for every
-- account. Publishing a framework's catalogue again replaces it whole.
CREATE TABLE framework_catalogues (
    framework    TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    version      TEXT NOT NULL,
    provider     TEXT,
    description  TEXT,
    requirements BIGINT NOT NULL,
    published_at BIGINT NOT NULL,
    -- 'operator:<OS user>' or the vendor token's name.
    published_by TEXT NOT NULL
);

CREATE TABLE catalogue_requirements (
    framework   TEXT NOT NULL REFERENCES framework_catalogues (framework) ON DELETE CASCADE,
    position    BIGINT NOT NULL,
    number      TEXT NOT NULL,
    rule_id     TEXT NOT NULL,
    title       TEXT NOT NULL,
    description TEXT,
    section     TEXT NOT NULL,
    profile     TEXT,
    manual      BOOLEAN NOT NULL,
    -- Prowler's check names, space-separated (the CSV's CHECKID).
    checks      TEXT NOT NULL,
    PRIMARY KEY (framework, number)
);
CREATE INDEX catalogue_requirements_rule ON catalogue_requirements (rule_id);
