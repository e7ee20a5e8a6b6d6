-- The example module's own table: one row per rss entry it heard about (no unique key on purpose:
-- a duplicate delivery would show up as a second row, which the tests look for).
CREATE SCHEMA IF NOT EXISTS mod_example;

CREATE TABLE mod_example.seen (
    id          bigserial PRIMARY KEY,
    message_id  uuid NOT NULL,
    event_id    text NOT NULL,
    delivery    integer NOT NULL,
    title       text NOT NULL DEFAULT '',
    seen_at     timestamptz NOT NULL DEFAULT now()
);
