-- The sign-in service's tables (periscope-signin). Every name starts with `signin_`, so this set
-- can live in the same database as the state database's tables. Instants are BIGINT seconds
-- since the Unix epoch (UTC); secrets are stored only as SHA-256 digests (hex), except the
-- signing key material in signin_keys.

-- One row per registered address: pending until the link is used (confirmed_at NULL, no
-- password), then confirmed with an Argon2id PHC string.
CREATE TABLE signin_users (
    id BIGINT PRIMARY KEY,
    subject TEXT NOT NULL UNIQUE,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL UNIQUE,
    org_name TEXT NOT NULL,
    terms_version TEXT NOT NULL,
    terms_accepted_at BIGINT NOT NULL,
    marketing_consent BOOLEAN NOT NULL,
    created_at BIGINT NOT NULL,
    confirmed_at BIGINT,
    password_hash TEXT
);

-- Registration links: the digest of the token e-mailed, single use, expiring.
CREATE TABLE signin_links (
    digest TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES signin_users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX signin_links_user ON signin_links (user_id);

-- Browser sessions of the sign-in service itself (the digest of the cookie value).
CREATE TABLE signin_sessions (
    digest TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES signin_users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL
);
CREATE INDEX signin_sessions_user ON signin_sessions (user_id);

-- Authorization codes: single use, bound to the client, redirect URI, PKCE challenge, nonce.
CREATE TABLE signin_codes (
    digest TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    user_id BIGINT NOT NULL REFERENCES signin_users (id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    nonce TEXT,
    scope TEXT NOT NULL,
    auth_time BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);

-- Access tokens for userinfo, with the code they were issued for (revoked if it is replayed).
CREATE TABLE signin_access_tokens (
    digest TEXT PRIMARY KEY,
    code_digest TEXT NOT NULL,
    client_id TEXT NOT NULL,
    user_id BIGINT NOT NULL REFERENCES signin_users (id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX signin_access_tokens_code ON signin_access_tokens (code_digest);

-- Key material shared by every instance: the ID token signing key (PKCS#8 PEM) and the CSRF
-- key (hex). Created once by the first instance to start.
CREATE TABLE signin_keys (
    name TEXT PRIMARY KEY,
    material TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
