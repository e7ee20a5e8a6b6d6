-- Issue 27: the facts `rss why` explains from, and the seeds' remaining per-feed rules.

-- Each entry keeps the raw fetch it came from (seed 001 §4.2/§4.5: fetch_id, the first; last_fetch_id, the
-- latest that listed it) and what intake decided when it was first stored: whether its MessageCreated was
-- realtime (`announced`) and why (`intake_reason`: realtime, first-poll, before-cutoff, archive-page, …).
-- No foreign key to raw_fetches: only the last rss.raw_keep fetches per feed are kept, the ids stay true.
-- Rows stored before this migration have NULLs (unknown).
ALTER TABLE mod_rss.entries
    ADD COLUMN fetch_id       bigint,
    ADD COLUMN last_fetch_id  bigint,
    ADD COLUMN announced      boolean,
    ADD COLUMN intake_reason  text;

-- The request headers sent with each stored response (seed 001 §4.2: "request and response headers fully
-- recorded with the payload").
ALTER TABLE mod_rss.raw_fetches ADD COLUMN request_headers jsonb;

-- Entries a processor kept out of storage (a filter): the fact `rss why` needs, since they have no row in
-- entries. One row per (feed, guid), refreshed while the feed lists the item; gone with the feed.
CREATE TABLE mod_rss.intake_skips (
    feed_id     bigint NOT NULL REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    guid        text NOT NULL,
    reason      text NOT NULL,
    title       text NOT NULL DEFAULT '',
    link        text,
    fetch_id    bigint,
    first_at    timestamptz NOT NULL,
    last_at     timestamptz NOT NULL,
    PRIMARY KEY (feed_id, guid)
);

-- Per-feed scheduling (seed 001 §8): interval clamps, push only (no polling while a WebSub lease lasts),
-- archive backfill on or off.
ALTER TABLE mod_rss.feeds
    ADD COLUMN min_interval_s  integer CHECK (min_interval_s >= 60),
    ADD COLUMN max_interval_s  integer CHECK (max_interval_s >= 60),
    ADD COLUMN push_only       boolean NOT NULL DEFAULT false,
    ADD COLUMN backfill        boolean NOT NULL DEFAULT true;

-- Poll health (seed 004 §2.5/§2.6, seed 001 §5.1, seed 002 step 1): the conditions warned about (so a
-- restarted host does not warn again), entries new in the last parsed fetch, response times (mean =
-- response_ms_total / responses), items skipped for having nothing in them (lifetime).
ALTER TABLE mod_rss.poll_state
    ADD COLUMN warned                  jsonb NOT NULL DEFAULT '{}'::jsonb,
    ADD COLUMN new_entries_last_fetch  integer,
    ADD COLUMN response_ms_total       double precision NOT NULL DEFAULT 0,
    ADD COLUMN responses               bigint NOT NULL DEFAULT 0,
    ADD COLUMN skipped_items           bigint NOT NULL DEFAULT 0;

-- The public health view gains the mean response time and the last fetch's new entries at its end (other
-- modules read the columns it had).
CREATE OR REPLACE VIEW rss_public.feed_health AS
SELECT f.id                                   AS feed_id,
       f.title                                AS title,
       f.url                                  AS url,
       f.site_url                             AS site_url,
       f.folder                               AS folder,
       COALESCE(p.successful_polls, 0)        AS polls_ok,
       COALESCE(p.total_errors, 0)            AS polls_failed,
       CASE WHEN COALESCE(p.successful_polls, 0) + COALESCE(p.total_errors, 0) = 0 THEN 1.0
            ELSE p.successful_polls::double precision / (p.successful_polls + p.total_errors)
       END                                    AS health,
       COALESCE(p.consecutive_errors, 0)      AS consecutive_errors,
       p.last_success_at                      AS last_success_at,
       p.last_error                           AS last_error,
       f.dead                                 AS dead,
       f.stale                                AS stale,
       f.enabled                              AS enabled,
       COALESCE(m.ok, 0)::integer             AS polls_ok_30d,
       COALESCE(m.failed, 0)::integer         AS polls_failed_30d,
       CASE WHEN COALESCE(m.ok, 0) + COALESCE(m.failed, 0) = 0 THEN 1.0
            ELSE m.ok::double precision / (m.ok + m.failed)
       END                                    AS health_30d,
       CASE WHEN COALESCE(p.responses, 0) = 0 THEN NULL
            ELSE p.response_ms_total / p.responses
       END                                    AS mean_response_ms,
       p.new_entries_last_fetch               AS new_entries_last_fetch
FROM mod_rss.feeds f
LEFT JOIN mod_rss.poll_state p ON p.feed_id = f.id
LEFT JOIN LATERAL (
    SELECT sum(d.polls_ok) AS ok, sum(d.polls_failed) AS failed
    FROM mod_rss.poll_days d
    WHERE d.feed_id = f.id AND d.day > (now() AT TIME ZONE 'UTC')::date - 30
) m ON true;
COMMENT ON VIEW rss_public.feed_health IS
    'Public interface of the rss module: per-feed poll health (lifetime counters, *_30d over the last '
    '30 days with 304s as successes, the mean response time and the last parsed fetch''s new entries), '
    'for other modules (read only).';
