-- API token scopes (issue #30): a `read` token may only read; `write` also writes. Tokens made before
-- scopes existed could do both, so they keep `write`.
ALTER TABLE host.api_tokens
    ADD COLUMN scope text NOT NULL DEFAULT 'write' CHECK (scope IN ('read', 'write'));
