-- The rss module's public read interface lives outside its private schema: other modules read
-- `rss_public.*` (documented in docs/bus.md, "Public views") and never anything in mod_rss, so mod_rss's
-- tables and views stay free to change.
CREATE SCHEMA IF NOT EXISTS rss_public;
ALTER VIEW mod_rss.feed_health SET SCHEMA rss_public;
ALTER VIEW mod_rss.public_feeds SET SCHEMA rss_public;
ALTER VIEW rss_public.public_feeds RENAME TO feeds;
COMMENT ON VIEW rss_public.feeds IS
    'Public interface of the rss module: feeds and their poll state, for other modules (read only).';
COMMENT ON VIEW rss_public.feed_health IS
    'Public interface of the rss module: per-feed poll health (lifetime counters), for other modules (read only).';
