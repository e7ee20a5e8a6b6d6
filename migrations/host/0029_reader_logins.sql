-- Reader-app logins (issue 29): a user name and password that apps send as HTTP basic auth (Miniflux API)
-- or trade for a token at /accounts/ClientLogin (Google Reader API). Only the argon2 hash is stored; the
-- ClientLogin token is an HMAC keyed by that hash, so setting a new password revokes it.
CREATE TABLE host.reader_logins (
    name           text PRIMARY KEY,
    password_hash  text NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    last_used_at   timestamptz
);
