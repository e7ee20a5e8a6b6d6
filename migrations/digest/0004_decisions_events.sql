-- Decisions you can read, story clusters kept apart from same-event links (issue 28).

ALTER TABLE mod_digest.articles
    ADD COLUMN guid text,                            -- the source's own id of the item (rss: the feed's guid)
    ADD COLUMN text_hash text,                       -- the words of title and body: exact copies share it
    ADD COLUMN markers text[] NOT NULL DEFAULT '{}', -- series markers of the title (v:5.1, n:episode:152)
    ADD COLUMN event_id bigint;                      -- same-event group: the first story's cluster id

-- Until now a `same_event` article took its match's cluster, and every later copy of it inherited that
-- cluster, so one story cluster held several stories. The old cluster is the event; each same-event
-- article starts its own story cluster again, with the copies matched to it (directly or in a chain).
UPDATE mod_digest.articles SET event_id = cluster_id;
WITH RECURSIVE story (id, root) AS (
    SELECT id, id FROM mod_digest.articles WHERE disposition = 'same_event'
    UNION ALL
    SELECT a.id, s.root
    FROM mod_digest.articles a JOIN story s ON a.matched_id = s.id
    WHERE a.disposition <> 'same_event'
)
UPDATE mod_digest.articles a SET cluster_id = s.root FROM story s WHERE a.id = s.id;
ALTER TABLE mod_digest.articles ALTER COLUMN event_id SET NOT NULL;
CREATE INDEX articles_event ON mod_digest.articles (event_id);

-- Every decision taken about an article, oldest first: the first one at intake, then one per revision.
-- The article row holds the current one; `details` keeps the layer checks behind it (layers.explain).
CREATE TABLE mod_digest.decisions (
    id           bigserial PRIMARY KEY,
    article_id   bigint NOT NULL REFERENCES mod_digest.articles (id) ON DELETE CASCADE,
    decided_at   timestamptz NOT NULL DEFAULT now(),
    revision     integer NOT NULL,
    disposition  text NOT NULL,
    layer        text NOT NULL,
    score        real,
    matched_id   bigint,
    cluster_id   bigint NOT NULL,
    event_id     bigint NOT NULL,
    candidates   integer,
    details      jsonb NOT NULL DEFAULT '[]'
);
CREATE INDEX decisions_article ON mod_digest.decisions (article_id, id);

INSERT INTO mod_digest.decisions (article_id, decided_at, revision, disposition, layer, score, matched_id,
                                  cluster_id, event_id)
SELECT id, received_at, revision, disposition, layer, match_score, matched_id, cluster_id, event_id
FROM mod_digest.articles ORDER BY id;
