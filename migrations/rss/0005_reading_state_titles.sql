-- Read and starred state per entry (`feedeater rss mark`), kept apart from the entries the poll job rewrites.
-- No row: unread and not starred. Deleting an entry (retention, unsubscribe) deletes its state.
CREATE TABLE mod_rss.entry_state (
    entry_id    bigint PRIMARY KEY REFERENCES mod_rss.entries (id) ON DELETE CASCADE,
    read_at     timestamptz,
    starred_at  timestamptz
);
CREATE INDEX entry_state_starred ON mod_rss.entry_state (entry_id) WHERE starred_at IS NOT NULL;

-- Search puts an entry whose title is exactly the query first; titles can exceed a btree entry's size,
-- so the index is on their hash (lookups compare md5(lower(title)), then the title itself).
CREATE INDEX entries_title_md5 ON mod_rss.entries (md5(lower(title)));
