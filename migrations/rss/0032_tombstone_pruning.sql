-- Tombstones are pruned (issue 25): one row per expired entry (~54 M a day at a million feeds) kept
-- forever made the dedup table grow without end. A tombstone exists so that a feed still listing a
-- deleted guid does not bring it back as new; `listed_at` is the last time a parse found the guid
-- listed (store.load_known moves it at most once a day), or its deletion. The daily cleanup deletes a
-- tombstone once its guid has been absent from every parse of its feed for the documented window
-- (store.cleanup.TOMBSTONE_KEEP_DAYS: 30) — proven by a parse after it (an entry of the feed seen since).
-- In place and instant: existing rows take the migration's time (a constant default is catalog-only),
-- so none is pruned before its feed has been parsed again for the whole window.
ALTER TABLE mod_rss.tombstones ADD COLUMN listed_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX tombstones_by_listed ON mod_rss.tombstones (feed_id, listed_at);
