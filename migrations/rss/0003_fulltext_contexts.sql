-- Full article text fetched from entry links, the best text of an entry, and per-feed summary bookkeeping.

-- Per-feed option: fetch every entry's article page (partial entries can also be fetched by setting).
ALTER TABLE mod_rss.feeds ADD COLUMN full_text boolean NOT NULL DEFAULT false;

-- Beside the entry, not in it: the poll job rewrites entries on revision and must not wipe the article.
CREATE TABLE mod_rss.entry_fulltext (
    entry_id        bigint PRIMARY KEY REFERENCES mod_rss.entries (id) ON DELETE CASCADE,
    link            text NOT NULL,           -- the entry link this row is for: a changed link is fetched again
    status          text NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'done', 'failed', 'skipped')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz DEFAULT now(), -- NULL: settled (done, skipped, or a failure not worth retrying)
    lease_until     timestamptz,             -- claimed by a host until then (several hosts share the work)
    url             text,                    -- final URL after redirects
    full_html       text,                    -- sanitized with the feed content's nh3 policy
    full_text       text,
    word_count      integer,
    fetched_at      timestamptz,
    error           text,
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX entry_fulltext_due ON mod_rss.entry_fulltext (next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- The text to embed, search and summarize: the extracted article when there is one, else the feed's content.
CREATE VIEW mod_rss.entry_text AS
SELECT e.id AS entry_id,
       e.feed_id,
       CASE WHEN ft.status = 'done' THEN ft.full_text ELSE e.content_text END AS best_text,
       CASE WHEN ft.status = 'done' THEN 'article' ELSE 'feed' END AS text_source,
       ft.fetched_at AS article_fetched_at
FROM mod_rss.entries e
LEFT JOIN mod_rss.entry_fulltext ft ON ft.entry_id = e.id;

-- An entry's best text changes when its article arrives (or goes, when its link changes): embed it again
-- (mod_rss.entry_embeddings is the embed job's queue, migration 0002).
CREATE FUNCTION mod_rss.queue_fulltext_reembedding() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE mod_rss.entry_embeddings
    SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
    WHERE entry_id = NEW.entry_id;
    RETURN NULL;
END $$;
CREATE TRIGGER entry_fulltext_queue_reembedding AFTER UPDATE OF status ON mod_rss.entry_fulltext
    FOR EACH ROW WHEN ((OLD.status = 'done') IS DISTINCT FROM (NEW.status = 'done'))
    EXECUTE FUNCTION mod_rss.queue_fulltext_reembedding();

-- updateContexts: entries with an id above last_entry_id are new since the feed's last summary.
CREATE TABLE mod_rss.feed_summaries (
    feed_id         bigint PRIMARY KEY REFERENCES mod_rss.feeds (id) ON DELETE CASCADE,
    last_entry_id   bigint NOT NULL DEFAULT 0,
    summarized_at   timestamptz,
    entries_per_day double precision,        -- publication rate over the last 7 days, at the last summary
    cadence         text CHECK (cadence IN ('high', 'normal', 'low')),
    method          text CHECK (method IN ('llm', 'extractive')),
    entries_used    integer,
    lease_until     timestamptz,
    leased_by       text
);
CREATE INDEX entries_by_feed_id ON mod_rss.entries (feed_id, id);
