-- API tokens for the HTTP API: only the SHA-256 of each token is stored (the token is shown once).
CREATE TABLE host.api_tokens (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL,
    token_sha256  text NOT NULL UNIQUE,
    prefix        text NOT NULL,                -- the first characters, to tell tokens apart in a list
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
