-- Keyset paging of one feed's entries (GET /api/v1/feeds/{id}/entries, `rss entries FEED`): newest first
-- with the id breaking ties, read from the index in that order. It covers every query the
-- (feed_id, effective_at DESC) index served, so that one goes.
CREATE INDEX entries_by_feed_keyset ON mod_rss.entries (feed_id, effective_at DESC, id DESC);
DROP INDEX mod_rss.entries_by_feed_time;
