-- The RSS module's schema: feeds, their poll state, entries with lineage, tombstones, raw fetches.
CREATE SCHEMA IF NOT EXISTS mod_rss;

CREATE TABLE mod_rss.feeds (
    id                  bigserial PRIMARY KEY,
    url                 text NOT NULL UNIQUE,
    title               text NOT NULL DEFAULT '',
    site_url            text,
    description         text NOT NULL DEFAULT '',
    format              text,
    folder              text,                  -- folder path, "Tech/Python"
    enabled             boolean NOT NULL DEFAULT true,
    interval_override_s integer CHECK (interval_override_s >= 60),
    retention_days      integer CHECK (retention_days >= 1),
    lookback_hours      integer CHECK (lookback_hours BETWEEN 1 AND 168),
    dead                boolean NOT NULL DEFAULT false,   -- 410 Gone: kept, never polled until re-enabled
    stale               boolean NOT NULL DEFAULT false,   -- too many consecutive failures: surfaced, still polled
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feeds_by_folder ON mod_rss.feeds (folder);

CREATE TABLE mod_rss.poll_state (
    feed_id             bigint PRIMARY KEY REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    next_poll_at        timestamptz NOT NULL DEFAULT now(),
    lease_until         timestamptz,
    leased_by           text,
    etag                text,
    last_modified       text,
    interval_s          double precision,
    interval_reason     text,
    ewma_s              double precision,
    ttl_minutes         integer,
    skip_hours          integer[] NOT NULL DEFAULT '{}',
    skip_days           text[] NOT NULL DEFAULT '{}',
    successful_polls    integer NOT NULL DEFAULT 0,        -- 0 means the next 200 is the feed's first poll
    last_polled_at      timestamptz,
    last_status         integer,
    last_success_at     timestamptz,
    last_error_at       timestamptz,
    last_error          text,
    consecutive_errors  integer NOT NULL DEFAULT 0,
    total_errors        integer NOT NULL DEFAULT 0
);
CREATE INDEX poll_state_due ON mod_rss.poll_state (next_poll_at);

CREATE TABLE mod_rss.entries (
    id                   bigserial PRIMARY KEY,
    feed_id              bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    guid                 text NOT NULL,
    guid_source          text NOT NULL,
    message_id           uuid NOT NULL UNIQUE,
    title                text NOT NULL DEFAULT '',
    link                 text,
    authors              text[] NOT NULL DEFAULT '{}',
    categories           text[] NOT NULL DEFAULT '{}',
    enclosures           jsonb NOT NULL DEFAULT '[]'::jsonb,
    image                text,
    duration_seconds     integer,
    published            timestamptz,
    updated              timestamptz,
    date_uncertain       boolean NOT NULL DEFAULT false,
    future_dated         boolean NOT NULL DEFAULT false,
    summary_html         text,
    content_html         text,
    content_text         text NOT NULL DEFAULT '',
    word_count           integer NOT NULL DEFAULT 0,
    reading_time_minutes integer NOT NULL DEFAULT 0,
    partial_content      boolean NOT NULL DEFAULT false,
    content_hash         text NOT NULL,
    revision             integer NOT NULL DEFAULT 1,
    first_seen           timestamptz NOT NULL,
    last_seen            timestamptz NOT NULL,
    seen_count           integer NOT NULL DEFAULT 1,
    effective_at         timestamptz NOT NULL,              -- published, or first seen when there is no date
    UNIQUE (feed_id, guid)
);
CREATE INDEX entries_by_feed_time ON mod_rss.entries (feed_id, effective_at DESC);
CREATE INDEX entries_by_time ON mod_rss.entries (effective_at DESC);

-- Deleted entries leave a tombstone so a feed that still lists them does not bring them back as new.
CREATE TABLE mod_rss.tombstones (
    feed_id     bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    guid        text NOT NULL,
    deleted_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (feed_id, guid)
);

-- Raw responses, content-addressed: the exact bytes and headers of each 200, stored before parsing.
CREATE TABLE mod_rss.raw_blobs (
    sha256  text PRIMARY KEY,
    body    bytea NOT NULL,
    size    integer NOT NULL
);
CREATE TABLE mod_rss.raw_fetches (
    id          bigserial PRIMARY KEY,
    feed_id     bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    fetched_at  timestamptz NOT NULL DEFAULT now(),
    url         text NOT NULL,
    status      integer NOT NULL,
    headers     jsonb NOT NULL,
    body_sha256 text NOT NULL REFERENCES mod_rss.raw_blobs (sha256),
    parse_error text
);
CREATE INDEX raw_fetches_by_feed ON mod_rss.raw_fetches (feed_id, fetched_at DESC);
CREATE INDEX raw_fetches_by_blob ON mod_rss.raw_fetches (body_sha256);
