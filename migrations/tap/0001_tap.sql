-- The NDJSON tap's bookkeeping: how many bytes of each file are committed. A handler appends to a file
-- and raises the offset in the transaction that records the event as processed, so after a crash the
-- bytes past the offset belong to an event that will be delivered again: they are cut off first.
CREATE SCHEMA IF NOT EXISTS mod_tap;
CREATE TABLE mod_tap.files (
    directory_id uuid NOT NULL,          -- the tap directory's .tap-id: offsets belong to one directory
    path         text NOT NULL,          -- relative: entries/2026-11-26.ndjson, raw/2026-11-26/42.blob
    kind         text NOT NULL CHECK (kind IN ('lines', 'blob')),
    committed    bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (directory_id, path)
);
CREATE INDEX files_lines ON mod_tap.files (directory_id) WHERE kind = 'lines';
