-- Host schema: module state, settings, job runs, the transactional outbox and contexts.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS host;

CREATE TABLE host.modules (
    name        text PRIMARY KEY,
    enabled     boolean NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE host.settings (
    module      text NOT NULL,
    key         text NOT NULL,
    value       jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (module, key)
);

CREATE TABLE host.job_runs (
    id          bigserial PRIMARY KEY,
    module      text NOT NULL,
    job         text NOT NULL,
    host_id     text NOT NULL,
    trigger     text NOT NULL,           -- 'schedule' or 'manual'
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    status      text NOT NULL CHECK (status IN ('running', 'ok', 'failed')),
    error       text,
    metrics     jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX job_runs_by_job ON host.job_runs (module, job, started_at DESC);

-- Events are written here in the same transaction as the data they describe; the relay publishes
-- them to JetStream (Nats-Msg-Id = event_id) and marks them published.
CREATE TABLE host.outbox (
    id            bigserial PRIMARY KEY,
    event_id      uuid NOT NULL UNIQUE,
    subject       text NOT NULL,
    payload       bytea NOT NULL,        -- the exact JSON bytes published
    created_at    timestamptz NOT NULL DEFAULT now(),
    published_at  timestamptz,
    attempts      integer NOT NULL DEFAULT 0,
    last_error    text
);
CREATE INDEX outbox_pending ON host.outbox (id) WHERE published_at IS NULL;
-- Rows are transient (published within seconds, pruned after days): compressing them costs CPU for nothing.
ALTER TABLE host.outbox ALTER COLUMN payload SET STORAGE EXTERNAL;

-- The current context per (owner_module, source_key), so modules read it without replaying the bus.
CREATE TABLE host.contexts (
    owner_module  text NOT NULL,
    source_key    text NOT NULL,
    summary_short text NOT NULL DEFAULT '',
    summary_long  text NOT NULL DEFAULT '',
    key_points    jsonb NOT NULL DEFAULT '[]'::jsonb,
    embedding     vector,
    meta          jsonb NOT NULL DEFAULT '{}'::jsonb,
    version       integer NOT NULL DEFAULT 0,
    message_id    uuid,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_module, source_key)
);

-- Messages linked to their context from each MessageCreated's contextRef.
CREATE TABLE host.context_messages (
    message_id    uuid PRIMARY KEY,
    owner_module  text NOT NULL,
    source_key    text NOT NULL,
    created_at    timestamptz NOT NULL
);
CREATE INDEX context_messages_by_context ON host.context_messages (owner_module, source_key, created_at DESC);
