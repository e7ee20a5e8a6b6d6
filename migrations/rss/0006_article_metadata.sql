-- Article metadata (issue 14): the page's own title, author and publication date, extracted by the
-- fulltext job (JSON-LD, OpenGraph, <meta>, <time>). They stand in for what the feed left out; the
-- entry rows keep what the feed said (identity and content hash never depend on a fetched page).
ALTER TABLE mod_rss.entry_fulltext
    ADD COLUMN article_title     text,
    ADD COLUMN article_author    text,
    ADD COLUMN article_published timestamptz;

-- entry_text gains the best title, authors and publication date: the feed's, else the article's.
CREATE OR REPLACE VIEW mod_rss.entry_text AS
SELECT e.id AS entry_id,
       e.feed_id,
       CASE WHEN ft.status = 'done' THEN ft.full_text ELSE e.content_text END AS best_text,
       CASE WHEN ft.status = 'done' THEN 'article' ELSE 'feed' END AS text_source,
       ft.fetched_at AS article_fetched_at,
       CASE WHEN e.title = '' AND ft.status = 'done' THEN coalesce(ft.article_title, '') ELSE e.title END
           AS best_title,
       CASE WHEN cardinality(e.authors) = 0 AND ft.status = 'done' AND ft.article_author IS NOT NULL
            THEN ARRAY[ft.article_author] ELSE e.authors END AS best_authors,
       CASE WHEN e.published IS NULL AND ft.status = 'done' THEN ft.article_published ELSE e.published END
           AS best_published
FROM mod_rss.entries e
LEFT JOIN mod_rss.entry_fulltext ft ON ft.entry_id = e.id;
