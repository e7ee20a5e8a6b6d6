-- Issue 25: an event is ~4 KB since events are lean (at most 2,048 characters of HTML per field). Stored
-- EXTERNAL it went out of line into the TOAST table (two chunks, two TOAST index entries) for every event;
-- kept in the row up to ~8 KB it costs PostgreSQL ~20 % less CPU and ~7 % less WAL per event. Still
-- uncompressed: rows are pruned within hours. In place: only the table's options change.
ALTER TABLE host.outbox SET (toast_tuple_target = 8160);
