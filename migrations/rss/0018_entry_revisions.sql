-- Earlier versions of revised entries, for the console's entry page ("what changed"). mod_rss kept only
-- the latest version and a revision counter. A trigger on the revision bump saves the version being
-- replaced: its title, link, plain text and hash (not the HTML, the bulk of a row; each revision's HTML
-- went out on the bus as messageUpdated). The last 10 per entry are kept, and they leave with the entry
-- (ON DELETE CASCADE) when retention expires it. Revisions are rare, so the hot insert path is untouched.
CREATE TABLE mod_rss.entry_revisions (
    entry_id      bigint NOT NULL REFERENCES mod_rss.entries (id) ON DELETE CASCADE,
    revision      integer NOT NULL,
    replaced_at   timestamptz NOT NULL DEFAULT now(),
    title         text NOT NULL,
    link          text,
    content_text  text NOT NULL,
    word_count    integer NOT NULL,
    content_hash  text NOT NULL,
    PRIMARY KEY (entry_id, revision)
);

CREATE FUNCTION mod_rss.keep_entry_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO mod_rss.entry_revisions (entry_id, revision, title, link, content_text, word_count, content_hash)
    VALUES (OLD.id, OLD.revision, OLD.title, OLD.link, OLD.content_text, OLD.word_count, OLD.content_hash)
    ON CONFLICT (entry_id, revision) DO NOTHING;
    DELETE FROM mod_rss.entry_revisions WHERE entry_id = OLD.id AND revision <= OLD.revision - 10;
    RETURN NULL;
END $$;

CREATE TRIGGER entries_keep_revision
    AFTER UPDATE OF revision ON mod_rss.entries
    FOR EACH ROW
    WHEN (NEW.revision > OLD.revision)
    EXECUTE FUNCTION mod_rss.keep_entry_revision();
