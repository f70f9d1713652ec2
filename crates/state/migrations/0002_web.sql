-- Periscope state schema, version 2: the web application's side of sign-in.
--
-- Portable SQL as in 0001 (runs unchanged on SQLite and PostgreSQL). Never edit it once
-- released: add a new migration.

-- An organisation is recorded as typed at registration and is not verified; the flag has no
-- effect on access (an administrator's records may set it later).
ALTER TABLE organisations ADD COLUMN verified BOOLEAN NOT NULL DEFAULT FALSE;

-- Which account an OpenID Connect identity (issuer and subject) signs in as. Written at the
-- first sign-in, when the account is prepared (or an existing account with the verified
-- address is found).
CREATE TABLE web_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX web_identities_account ON web_identities (account_id);

-- Browser sessions of the web application. Only the SHA-256 digest (lower-case hex) of the
-- cookie value is stored. csrf is the token every state-changing form of the session carries;
-- id_token is the provider's ID token, sent back as id_token_hint at sign-out.
CREATE TABLE web_sessions (
    digest TEXT PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    id_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX web_sessions_account ON web_sessions (account_id);

-- Sign-ins in flight, between the redirect to the provider and its callback: keyed by the
-- SHA-256 of the OAuth state; single use.
CREATE TABLE web_sign_ins (
    digest TEXT PRIMARY KEY,
    nonce TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    return_to TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
