-- Periscope state schema, version 3: the visible prefix of an API key.
--
-- Portable SQL as in 0001 (runs unchanged on SQLite and PostgreSQL). Never edit it once
-- released: add a new migration.

-- The first characters of a key (`psk_` and 8 of its 32 random characters), shown in the key
-- list of the API access page so that its owner can tell keys apart. Not enough to use or
-- guess the key; only the digest identifies it. Keys created before version 3 have none.
ALTER TABLE api_keys ADD COLUMN prefix TEXT;
