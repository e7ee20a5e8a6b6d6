-- How a feed orders its entries, detected from their dates at each parse (seed 004 §2.4): NULL until a
-- document had enough dated entries to tell. Used to put new entries in chronological order before they
-- are stored and announced.
ALTER TABLE mod_rss.feeds ADD COLUMN typical_order text
    CHECK (typical_order IN ('newest_first', 'oldest_first', 'unordered'));

-- Raw fetches for other modules (the NDJSON tap writes them as out/raw/<date>/<id>.blob): the id is the
-- `rss.fetchId` of the MessageCreated/MessageUpdated events parsed from that response. Only the last
-- `rss.raw_keep` fetches per feed are kept, so a row may be gone by the time a consumer asks.
CREATE VIEW rss_public.raw_fetches AS
    SELECT r.id, r.feed_id, r.fetched_at, r.url, r.status, r.headers, b.size, b.body
    FROM mod_rss.raw_fetches r JOIN mod_rss.raw_blobs b ON b.sha256 = r.body_sha256;
COMMENT ON VIEW rss_public.raw_fetches IS
    'Public interface of the rss module: raw responses by fetch id (rss.fetchId of entry events), read only.';
