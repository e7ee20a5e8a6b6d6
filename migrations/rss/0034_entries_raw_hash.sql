-- Issue 25: the digest of the raw item each entry was last made from (modules.rss.parse.normalize.raw_hash).
-- A parse skips normalizing and sanitizing an item whose digest is stored for its feed: it is unchanged.
-- Rows from before have none (NULL): their items are normalized and diffed as before, then get one.
-- A nullable column without default: no table rewrite.
ALTER TABLE mod_rss.entries ADD COLUMN raw_hash text;
