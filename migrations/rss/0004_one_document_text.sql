-- One document text: what is embedded, indexed for full-text search, shown in snippets and summarized is
-- the same text, mod_rss.entry_text.best_text: the extracted article when full-text extraction got one,
-- else the feed's content (migration 0003 defined the view; summaries already read it).

-- The full-text document of an entry, in one place for both triggers below.
CREATE FUNCTION mod_rss.search_document(title text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple'::regconfig, title), 'A')
        || setweight(to_tsvector('simple'::regconfig, left(body, 100000)), 'B')
$$;

-- Entries: a new entry has no article yet; a revised one keeps its article when it has one.
CREATE OR REPLACE FUNCTION mod_rss.entries_search_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    article text;
BEGIN
    IF TG_OP = 'UPDATE' THEN
        SELECT full_text INTO article FROM mod_rss.entry_fulltext WHERE entry_id = NEW.id AND status = 'done';
    END IF;
    NEW.search_tsv := mod_rss.search_document(NEW.title, coalesce(article, NEW.content_text));
    RETURN NEW;
END $$;

-- Articles: arriving (or going, when the link changed) re-indexes the entry with its best text.
CREATE FUNCTION mod_rss.entry_fulltext_search_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE mod_rss.entries e
    SET search_tsv = mod_rss.search_document(
        e.title, CASE WHEN NEW.status = 'done' THEN NEW.full_text ELSE e.content_text END)
    WHERE e.id = NEW.entry_id;
    RETURN NULL;
END $$;
CREATE TRIGGER entry_fulltext_search_tsv AFTER INSERT OR UPDATE OF status, full_text ON mod_rss.entry_fulltext
    FOR EACH ROW EXECUTE FUNCTION mod_rss.entry_fulltext_search_tsv();

UPDATE mod_rss.entries e SET search_tsv = mod_rss.search_document(e.title, ft.full_text)
FROM mod_rss.entry_fulltext ft WHERE ft.entry_id = e.id AND ft.status = 'done';
