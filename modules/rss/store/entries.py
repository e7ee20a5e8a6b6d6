"""Entries with lineage and tombstones: the writes that intake intents turn into."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import asyncpg

from host import outbox
from host.events import Event
from modules.rss.ingest import publish
from modules.rss.model import Entry
from modules.rss.store.feeds import FeedRow


@dataclass(slots=True)
class EntryChanges:
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    tombstoned: int = 0
    new_times: list[datetime] = field(default_factory=list)


_ENTRY_FIELDS = tuple(f.name for f in fields(Entry))


def _entry_record(e: Entry, feed_id: int, now: datetime) -> dict[str, Any]:
    """A JSON-ready row; a shallow copy (dataclasses.asdict deep-copies and was 4× slower here)."""
    d = {name: getattr(e, name) for name in _ENTRY_FIELDS}
    d["enclosures"] = [{"url": x.url, "type": x.type, "length": x.length} for x in e.enclosures]
    d["message_id"] = str(publish.message_id(feed_id, e.guid))
    for key in ("published", "updated"):
        d[key] = d[key].isoformat() if d[key] is not None else None
    d["effective_at"] = (e.published if e.published is not None and not e.future_dated else now).isoformat()
    return d


_RECORDSET = """r(guid text, guid_source text, message_id uuid, title text, link text, authors jsonb, categories jsonb,
    enclosures jsonb, image text, duration_seconds integer, published timestamptz, updated timestamptz,
    date_uncertain boolean, future_dated boolean, summary_html text, content_html text, content_text text,
    word_count integer, reading_time_minutes integer, partial_content boolean, content_hash text, effective_at timestamptz)"""


async def apply_entries(
    conn: asyncpg.Connection,
    *,
    feed: FeedRow,
    entries: Sequence[Entry],
    now: datetime,
    first_poll: bool,
    lookback_hours: int,
) -> EntryChanges:
    """Insert new entries, revise changed ones, touch the rest, and queue one event per new or revised entry.

    Runs inside the caller's transaction, so entries and their events commit (or roll back) together.
    """
    changes = EntryChanges()
    if not entries:
        return changes
    guids = [e.guid for e in entries]
    known = {
        r["guid"]: r
        for r in await conn.fetch(
            "SELECT guid, content_hash, revision, first_seen FROM mod_rss.entries WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            guids,
        )
    }
    dead = {
        r["guid"]
        for r in await conn.fetch(
            "SELECT guid FROM mod_rss.tombstones WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            guids,
        )
    }
    fresh = [e for e in entries if e.guid not in known and e.guid not in dead]
    revised = [e for e in entries if e.guid in known and known[e.guid]["content_hash"] != e.content_hash]
    changes.tombstoned = sum(1 for e in entries if e.guid in dead)
    seen = [e.guid for e in entries if e.guid in known]
    changes.unchanged = len(seen) - len(revised)
    if seen:
        await conn.execute(
            "UPDATE mod_rss.entries SET last_seen = $3, seen_count = seen_count + 1 WHERE feed_id = $1 AND guid = ANY($2::text[])",
            feed.id,
            seen,
            now,
        )
    events: list[Event] = []
    if fresh:
        records = [_entry_record(e, feed.id, now) for e in fresh]
        inserted = {
            r["guid"]
            for r in await conn.fetch(
                f"""INSERT INTO mod_rss.entries (feed_id, guid, guid_source, message_id, title, link, authors, categories,
                        enclosures, image, duration_seconds, published, updated, date_uncertain, future_dated, summary_html,
                        content_html, content_text, word_count, reading_time_minutes, partial_content, content_hash,
                        first_seen, last_seen, effective_at)
                    SELECT $1, r.guid, r.guid_source, r.message_id, r.title, r.link,
                           ARRAY(SELECT jsonb_array_elements_text(r.authors)), ARRAY(SELECT jsonb_array_elements_text(r.categories)),
                           r.enclosures, r.image, r.duration_seconds, r.published, r.updated, r.date_uncertain, r.future_dated,
                           r.summary_html, r.content_html, r.content_text, r.word_count, r.reading_time_minutes,
                           r.partial_content, r.content_hash, $3, $3, r.effective_at
                    FROM jsonb_to_recordset($2::jsonb) AS {_RECORDSET}
                    ON CONFLICT (feed_id, guid) DO NOTHING RETURNING guid""",
                feed.id,
                records,
                now,
            )
        }
        for e in fresh:
            if e.guid not in inserted:
                continue
            realtime = publish.is_realtime(
                first_poll=first_poll, published=e.published, now=now, lookback_hours=lookback_hours
            )
            message = publish.build_message(
                e, feed_id=feed.id, feed_title=feed.title, first_seen=now, realtime=realtime
            )
            events.append(publish.created_event(message))
            changes.new_times.append(e.published or now)
        changes.new = len(inserted)
    for e in revised:
        row = known[e.guid]
        rec = _entry_record(e, feed.id, now)
        await conn.execute(
            f"""UPDATE mod_rss.entries SET title = r.title, link = r.link,
                    authors = ARRAY(SELECT jsonb_array_elements_text(r.authors)),
                    categories = ARRAY(SELECT jsonb_array_elements_text(r.categories)), enclosures = r.enclosures,
                    image = r.image, duration_seconds = r.duration_seconds, published = r.published, updated = r.updated,
                    date_uncertain = r.date_uncertain, future_dated = r.future_dated, summary_html = r.summary_html,
                    content_html = r.content_html, content_text = r.content_text, word_count = r.word_count,
                    reading_time_minutes = r.reading_time_minutes, partial_content = r.partial_content,
                    content_hash = r.content_hash, revision = revision + 1
                FROM jsonb_to_recordset($3::jsonb) AS {_RECORDSET}
                WHERE feed_id = $1 AND mod_rss.entries.guid = $2""",
            feed.id,
            e.guid,
            [rec],
        )
        message = publish.build_message(
            e,
            feed_id=feed.id,
            feed_title=feed.title,
            first_seen=row["first_seen"],
            realtime=False,
            revision=row["revision"] + 1,
        )
        events.append(publish.updated_event(message, e.content_hash))
    changes.updated = len(revised)
    await outbox.enqueue_many(conn, events)
    return changes


# -- cleanup -------------------------------------------------------------------------------------
async def expire_entries(conn: asyncpg.Connection, *, default_days: int) -> int:
    """Delete entries past their feed's retention, leaving tombstones so they never return as new."""
    rows = await conn.fetch(
        """WITH gone AS (
               DELETE FROM mod_rss.entries e USING mod_rss.feeds f
               WHERE f.id = e.feed_id AND e.effective_at < now() - make_interval(days => coalesce(f.retention_days, $1))
               RETURNING e.feed_id, e.guid)
           INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone
           ON CONFLICT DO NOTHING RETURNING 1""",
        default_days,
    )
    return len(rows)


async def delete_entry(conn: asyncpg.Connection, entry_id: int) -> None:
    """Delete one entry and leave its tombstone."""
    await conn.execute(
        """WITH gone AS (DELETE FROM mod_rss.entries WHERE id = $1 RETURNING feed_id, guid)
           INSERT INTO mod_rss.tombstones (feed_id, guid) SELECT feed_id, guid FROM gone ON CONFLICT DO NOTHING""",
        entry_id,
    )
