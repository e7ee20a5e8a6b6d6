-- Web console (host/console): the login password (argon2 hash, one row), sessions and the key that
-- derives CSRF tokens. Sessions are rows so every host process behind a load balancer accepts them.
CREATE TABLE host.console_auth (
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),   -- exactly one row
    password_hash text,                                          -- NULL: no password set
    csrf_key      text NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE host.console_sessions (
    token_sha256  text PRIMARY KEY,          -- the cookie holds the token; only its hash is stored
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL
);
CREATE INDEX console_sessions_by_expiry ON host.console_sessions (expires_at);

-- The overview's events/s sparkline reads the last hour of the outbox by time; BRIN costs inserts nothing
-- noticeable because created_at follows the physical order.
CREATE INDEX outbox_created_brin ON host.outbox USING brin (created_at);
