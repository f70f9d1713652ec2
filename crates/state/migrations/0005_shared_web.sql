-- Periscope state schema, version 5: what the web application used to keep in one process's
-- memory, so that several `periscope serve` instances behind a load balancer give a browser the
-- same answers whichever instance it reaches.
--
-- Portable SQL as in 0001 (runs unchanged on SQLite and PostgreSQL). Never edit it once
-- released: add a new migration.

-- Result pages a browser session has already been shown, so that "Previous page", Back and a
-- "Next page" already visited show them again without a new charged search (cursors are single
-- use). Keyed by the SHA-256 (lower-case hex) of the session's CSRF token (a random
-- per-session value, not the cookie), the SHA-256 of the prefixed query and the page number.
-- body is the page as it was shown (the rendered host list). A page lives 10 minutes (a search
-- cursor's lifetime) and a session keeps at most 400 (the oldest goes first); expired rows are
-- deleted on every write and by the periodic purge.
CREATE TABLE web_pages (
    session_digest TEXT NOT NULL,
    query_digest TEXT NOT NULL,
    page BIGINT NOT NULL,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    body TEXT NOT NULL,
    shown_at BIGINT NOT NULL,
    PRIMARY KEY (session_digest, query_digest, page)
);
CREATE INDEX web_pages_shown ON web_pages (shown_at);
CREATE INDEX web_pages_account ON web_pages (account_id);

-- The one-time tokens of the API access page's create-key form already sent: a form sent
-- again (a reload of the page that showed the key) creates no second key, whichever instance
-- it reaches. Keyed by the SHA-256 of the token (the primary key makes the first use
-- exclusive); remembered a day, at most 10,000 per account (the oldest goes first); expired
-- rows are deleted on every write and by the periodic purge.
CREATE TABLE web_key_forms (
    token_digest TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    sent_at BIGINT NOT NULL
);
CREATE INDEX web_key_forms_account ON web_key_forms (account_id, sent_at);
CREATE INDEX web_key_forms_sent ON web_key_forms (sent_at);
