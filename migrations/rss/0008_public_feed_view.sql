-- The rss module's public read interface for other modules: one row per feed with its poll state.
-- Other modules read this view, never mod_rss.feeds / mod_rss.poll_state, so those tables may change.
CREATE VIEW mod_rss.public_feeds AS
SELECT f.id,
       f.url,
       f.title,
       f.site_url,
       f.enabled,
       f.dead,                              -- 410 Gone: no longer polled
       f.stale,                             -- many consecutive failures
       p.last_polled_at,
       p.next_poll_at,
       COALESCE(f.interval_override_s::double precision, p.interval_s) AS interval_s,
       p.last_status,
       p.last_error,
       p.consecutive_errors
FROM mod_rss.feeds f
LEFT JOIN mod_rss.poll_state p ON p.feed_id = f.id;

COMMENT ON VIEW mod_rss.public_feeds IS
    'Public interface of the rss module: feeds and their poll state, for other modules (read only).';
