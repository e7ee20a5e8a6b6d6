-- Dedup candidates through btree rows instead of GIN arrays, and liked articles for the interest profile.

-- One row per lookup key of an article: its 16 MinHash LSH band keys, the prefix-filter words of its
-- title and its multi-word entities (both hashed with hashtextextended('t:'/'e:' || word, 0)).
-- Every layer probes `key = ANY(...)` with its own time window on `at` (the article's published_at):
-- a handful of btree descents per article instead of GIN bitmaps ANDed with a 100k-row time range,
-- and no GIN posting-list updates per insert (at 100k articles: 115 ms p95 per article before).
CREATE TABLE mod_digest.dedup_keys (
    key         bigint NOT NULL,
    at          timestamptz NOT NULL,
    article_id  bigint NOT NULL
);
CREATE INDEX dedup_keys_lookup ON mod_digest.dedup_keys (key, at) INCLUDE (article_id);

INSERT INTO mod_digest.dedup_keys (key, at, article_id)
SELECT k, a.published_at, a.id
FROM mod_digest.articles a,
     LATERAL (
        SELECT unnest(a.bands)
        UNION
        SELECT hashtextextended('t:' || w, 0)
        FROM (SELECT w FROM unnest(a.title_tokens) w
              ORDER BY length(w) DESC, w COLLATE "C"
              LIMIT cardinality(a.title_tokens) - ceil(0.85 * cardinality(a.title_tokens))::int + 1) p
        UNION
        SELECT hashtextextended('e:' || e, 0) FROM unnest(a.entities) e
        WHERE cardinality(a.entities) >= 3 AND position(' ' IN e) > 0
     ) keys (k)
WHERE a.disposition <> 'exact_duplicate';

DROP INDEX mod_digest.articles_title_tokens;
DROP INDEX mod_digest.articles_bands;
DROP INDEX mod_digest.articles_entities;
ALTER TABLE mod_digest.articles DROP COLUMN bands;
-- Layer 1 and 2 lookups stay on unique/btree indexes: message_id (UNIQUE) and canonical_url.

-- `feedeater digest like <article-id>`: liked articles join the interest keywords in the profile that
-- topic relevance compares every article with (seed 002 step 4: "keywords and/or liked articles").
CREATE TABLE mod_digest.likes (
    article_id  bigint PRIMARY KEY REFERENCES mod_digest.articles (id) ON DELETE CASCADE,
    liked_at    timestamptz NOT NULL DEFAULT now()
);
