-- Periscope state schema, version 1.
--
-- This file runs unchanged on SQLite and on PostgreSQL: portable types only (BIGINT, TEXT,
-- BOOLEAN), ids chosen by the application (no SERIAL, no AUTOINCREMENT), instants as BIGINT
-- seconds since the Unix epoch (UTC). Never edit it once released: add a new migration.

CREATE TABLE organisations (
    id BIGINT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- email is kept as typed; email_key (its lower-case form) makes addresses unique
-- case-insensitively. daily_limit NULL = unlimited; plan_expires_at NULL = never expires.
CREATE TABLE accounts (
    id BIGINT PRIMARY KEY,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL UNIQUE,
    access TEXT NOT NULL CHECK (access IN ('active', 'inactive')),
    daily_limit BIGINT CHECK (daily_limit >= 0),
    plan_expires_at BIGINT,
    created_at BIGINT NOT NULL,
    terms_version TEXT,
    terms_accepted_at BIGINT,
    marketing_consent BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE memberships (
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    organisation_id BIGINT NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    joined_at BIGINT NOT NULL,
    PRIMARY KEY (account_id, organisation_id)
);

-- Only the SHA-256 digest (lower-case hex) of a key is stored.
CREATE TABLE api_keys (
    id BIGINT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    digest TEXT NOT NULL UNIQUE,
    name TEXT,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- One row per account and UTC day (days since the epoch) with at least one search charged.
-- A new day has no row, so it starts at 0: the midnight reset is one step by construction.
CREATE TABLE allowance_usage (
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    day BIGINT NOT NULL,
    used BIGINT NOT NULL CHECK (used >= 0),
    PRIMARY KEY (account_id, day)
);

-- Search cursors: one-time, bound to an account, a query and a page limit.
CREATE TABLE search_cursors (
    token TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    query TEXT NOT NULL,
    page_limit BIGINT NOT NULL,
    resume_after TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX search_cursors_expiry ON search_cursors (expires_at);

-- One row per request of the search capability, written before the request runs.
CREATE TABLE audit_records (
    id BIGINT PRIMARY KEY,
    recorded_at BIGINT NOT NULL,
    request_id TEXT NOT NULL,
    account_id BIGINT NOT NULL REFERENCES accounts (id),
    key_id BIGINT,
    channel TEXT NOT NULL,
    operation TEXT NOT NULL,
    subject TEXT,
    outcome TEXT
);
CREATE INDEX audit_records_account ON audit_records (account_id, recorded_at);
CREATE INDEX audit_records_recorded ON audit_records (recorded_at);

CREATE TABLE problem_reports (
    id BIGINT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    description TEXT NOT NULL
);
CREATE INDEX problem_reports_created ON problem_reports (created_at);
