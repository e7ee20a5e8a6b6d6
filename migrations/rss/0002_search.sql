-- Search: full text on entries, and one embedding (with its state) per entry.

-- Full text. 'simple' configuration on purpose: feeds come in many languages, and 'simple' neither
-- mis-stems them nor drops words; inflections and synonyms are the semantic side's job (a multilingual
-- embedder), exact names and terms are this side's. Text past 100,000 characters is not indexed, so no
-- entry can exceed tsvector's 1 MB limit and fail the poll transaction that inserts it.
-- A trigger rather than a generated column: a stored generated column is recomputed on every UPDATE,
-- and the poll job touches every entry it sees again (last_seen, seen_count).
ALTER TABLE mod_rss.entries ADD COLUMN search_tsv tsvector;
CREATE FUNCTION mod_rss.entries_search_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_tsv := setweight(to_tsvector('simple'::regconfig, NEW.title), 'A')
        || setweight(to_tsvector('simple'::regconfig, left(NEW.content_text, 100000)), 'B');
    RETURN NEW;
END $$;
CREATE TRIGGER entries_search_tsv BEFORE INSERT OR UPDATE OF title, content_text ON mod_rss.entries
    FOR EACH ROW EXECUTE FUNCTION mod_rss.entries_search_tsv();
CREATE INDEX entries_search_tsv ON mod_rss.entries USING gin (search_tsv);

-- One row per entry: the embed job's queue and its result.
-- pending: to embed (new, revised, or `rss reembed`); done: `embedding` is of `model`/`embedded_hash`;
-- failed: the provider refused this entry's text itself (a revision or reembed queues it again).
-- A provider that is down only delays: rows stay pending with attempts, last_error and next_attempt_at.
--
-- The vector size is fixed per deployment but only known from settings, so `embedding` is an untyped
-- `vector` and the HNSW cosine index is created by code (modules/rss/embed.py, ensure_index) the first
-- time vectors of a size are written, as a partial expression index:
--     CREATE INDEX entry_embeddings_hnsw_384 ON mod_rss.entry_embeddings
--         USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dims = 384;
-- and searched with the same expression and predicate. A model change to another size gets its own
-- index beside the old one; sizes over 2,000 use halfvec (HNSW's limit for vector), up to 4,000.
CREATE TABLE mod_rss.entry_embeddings (
    entry_id        bigint PRIMARY KEY REFERENCES mod_rss.entries (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),   -- backoff after failures, lease while embedding
    last_error      text,
    embedded_hash   text,                                   -- entries.content_hash that was embedded
    model           text,
    dims            integer,
    embedding       vector,
    embedded_at     timestamptz
);
CREATE INDEX entry_embeddings_todo ON mod_rss.entry_embeddings (entry_id DESC) WHERE status = 'pending';

-- New entries are queued by one statement-level trigger per INSERT (the poll path inserts a feed's
-- entries in one statement), so the cost per entry is one small row, not a trigger call.
CREATE FUNCTION mod_rss.queue_new_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mod_rss.entry_embeddings (entry_id) SELECT id FROM new_entries;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_queue_embedding AFTER INSERT ON mod_rss.entries
    REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION mod_rss.queue_new_entries();

-- A revision (new content hash) queues the entry again; its old vector stays searchable meanwhile.
CREATE FUNCTION mod_rss.queue_revised_entry() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE mod_rss.entry_embeddings
    SET status = 'pending', attempts = 0, next_attempt_at = now(), last_error = NULL
    WHERE entry_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER entries_queue_reembedding AFTER UPDATE OF content_hash ON mod_rss.entries
    FOR EACH ROW WHEN (OLD.content_hash IS DISTINCT FROM NEW.content_hash)
    EXECUTE FUNCTION mod_rss.queue_revised_entry();

INSERT INTO mod_rss.entry_embeddings (entry_id) SELECT id FROM mod_rss.entries;
