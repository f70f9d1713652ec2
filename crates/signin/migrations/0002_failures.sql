-- The sign-in service's tables, version 2: failed sign-ins, counted over every instance that
-- shares the database, so behind a load balancer the limits hold for the service as a whole.
-- Portable SQL as in 0001. Never edit it once released: add a new migration.

-- One row per failed sign-in and per limit it counts against: kind `account` (subject: the
-- SHA-256 hex of the address's lookup key, as typed when it is not an address) or `client`
-- (subject: the SHA-256 hex of the client address). Digests, because what was typed into the
-- address field may be anything, a password included. Rows older than the window are deleted
-- at every failure.
CREATE TABLE signin_failures (
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    failed_at BIGINT NOT NULL
);
CREATE INDEX signin_failures_subject ON signin_failures (kind, subject, failed_at);
CREATE INDEX signin_failures_at ON signin_failures (failed_at);
