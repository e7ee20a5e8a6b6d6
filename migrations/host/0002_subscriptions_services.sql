-- Bus subscriptions: the event ids each consumer ("<module>.<subscription>") has processed, written in the
-- handler's transaction, so a redelivery after a crash between commit and ack is skipped (exactly once).
CREATE TABLE host.processed_events (
    consumer      text NOT NULL,
    event_id      text NOT NULL,
    processed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);
CREATE INDEX processed_events_by_age ON host.processed_events (processed_at);

-- Supervised services and subscriptions of each running host, for `feedeater status`; refreshed every
-- few seconds by the host that runs them (updated_at tells a live host from a dead one).
CREATE TABLE host.service_state (
    host_id     text NOT NULL,
    module      text NOT NULL,
    name        text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('service', 'subscription')),
    state       text NOT NULL,
    restarts    integer NOT NULL DEFAULT 0,
    last_error  text,
    pending     bigint,                  -- subscriptions: messages not yet delivered to the consumer (lag)
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host_id, module, name)
);

-- Housekeeping deletes old job runs by age.
CREATE INDEX job_runs_by_age ON host.job_runs (started_at);
