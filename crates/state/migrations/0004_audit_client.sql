-- Periscope state schema, version 4: the client address in the audit record.
--
-- Portable SQL as in 0001 (runs unchanged on SQLite and PostgreSQL). Never edit it once
-- released: add a new migration.

-- The address of the client that sent the request, as the server determined it (the peer
-- address, or the client's behind a trusted proxy: `[http] trusted_proxies`), in text form
-- (`192.0.2.7`, `2001:db8::1`). Records written before version 4 have none.
ALTER TABLE audit_records ADD COLUMN client TEXT;
