"""Reading what was fetched: entries with their read/starred state, one entry, marking.

The state lives in `mod_rss.entry_state` (no row: unread, not starred), apart from the entries the poll
job rewrites, so a revision never makes a read entry unread again. Every front door reads and writes it
here: the CLI (`rss entries`, `rss mark`), the REST API, the console and the reader-app APIs
(modules/rss/reader: Miniflux, Google Reader).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import asyncpg

from host.errors import UserError

# Title, authors and date are entry_text's best_*: the feed's, else what the article page says (rss/0006).
_ENTRY_LIST = """e.id, e.message_id, e.feed_id, f.title AS feed_title, t.best_title AS title, e.link,
           t.best_published AS published, e.effective_at, e.reading_time_minutes, s.read_at, s.starred_at"""
# What a reader app shows besides: the HTML (the extracted article's when there is one), authors,
# enclosures, the feed's folder and site, and when the entry or its state last changed (rss/0029).
_ENTRY_CONTENT = """, coalesce((SELECT ft.full_html FROM mod_rss.entry_fulltext ft
                               WHERE ft.entry_id = e.id AND ft.status = 'done'),
                              e.content_html, e.summary_html, '') AS content_html,
           t.best_authors AS authors, e.enclosures, e.first_seen, f.folder, f.site_url, f.url AS feed_url,
           greatest(e.first_seen, s.changed_at) AS changed_at"""
_FROM = """mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
    JOIN mod_rss.entry_text t ON t.entry_id = e.id
    LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id"""
# Orders a reader can ask for (Miniflux's `order`); "published" is the effective time, which keyset
# positions (`after`) follow.
SORTS = {
    "published": "e.effective_at",
    "id": "e.id",
    "created": "e.first_seen",
    "changed": "greatest(e.first_seen, s.changed_at)",
}
Sort = Literal["published", "id", "created", "changed"]


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which entries to read or mark; only the fields given become SQL conditions (a `$1 IS NULL OR ...`
    in asyncpg's generic plan keeps PostgreSQL off the (feed_id, effective_at, id) index)."""

    feed_id: int | None = None
    folder: str | None = None  # exactly this folder; "" = the feeds without one
    read: bool | None = None
    starred: bool | None = None
    since: datetime | None = None  # effective time, inclusive
    until: datetime | None = None  # effective time, exclusive
    seen_until: datetime | None = None  # first fetched at or before (Google Reader's mark-all-as-read ts)
    changed_since: datetime | None = None
    changed_until: datetime | None = None
    ids: Sequence[int] | None = None
    after_id: int | None = None
    before_id: int | None = None
    search: str | None = None  # words, full text (the search index's 'simple' configuration)


class _Args:
    """Positional query arguments, numbered as they are added."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"


def _where(where: EntryFilter, arg: _Args) -> list[str]:
    changed = SORTS["changed"]
    conds = [
        *([f"e.feed_id = {arg(where.feed_id)}"] if where.feed_id is not None else []),
        *(
            ["f.folder IS NULL"]
            if where.folder == ""
            else [f"f.folder = {arg(where.folder)}"]
            if where.folder is not None
            else []
        ),
        *([f"e.effective_at >= {arg(where.since)}"] if where.since is not None else []),
        *([f"e.effective_at < {arg(where.until)}"] if where.until is not None else []),
        *([f"e.first_seen <= {arg(where.seen_until)}"] if where.seen_until is not None else []),
        *([f"{changed} >= {arg(where.changed_since)}"] if where.changed_since is not None else []),
        *([f"{changed} < {arg(where.changed_until)}"] if where.changed_until is not None else []),
        *([f"e.id = ANY({arg(list(where.ids))}::bigint[])"] if where.ids is not None else []),
        *([f"e.id > {arg(where.after_id)}"] if where.after_id is not None else []),
        *([f"e.id < {arg(where.before_id)}"] if where.before_id is not None else []),
        *([f"e.search_tsv @@ websearch_to_tsquery('simple', {arg(where.search)})"] if where.search else []),
    ]
    if where.read is not None:
        conds.append("s.read_at IS NOT NULL" if where.read else "s.read_at IS NULL")
    if where.starred is not None:
        conds.append("s.starred_at IS NOT NULL" if where.starred else "s.starred_at IS NULL")
    return conds


async def find_entries(
    conn: asyncpg.Connection,
    where: EntryFilter = EntryFilter(),
    *,
    sort: Sort = "published",
    newest_first: bool = True,
    after: tuple[datetime, int] | None = None,
    offset: int = 0,
    limit: int = 100,
    content: bool = False,
) -> list[dict[str, Any]]:
    """Entries with their state, in the order asked; `after` (effective_at, id) of the previous page's
    last entry continues past it in "published" order (keyset paging), `offset` skips rows otherwise.
    `content` adds what a reader app displays (_ENTRY_CONTENT)."""
    arg = _Args()
    conds = _where(where, arg)
    if after is not None:
        if sort != "published":
            raise ValueError("keyset positions follow the published order")
        op = "<" if newest_first else ">"
        conds.append(f"(e.effective_at, e.id) {op} ({arg(after[0])}, {arg(after[1])})")
    direction = "DESC" if newest_first else "ASC"
    order = f"{SORTS[sort]} {direction}, e.id {direction}" if sort != "id" else f"e.id {direction}"
    rows = await conn.fetch(
        f"""SELECT {_ENTRY_LIST}{_ENTRY_CONTENT if content else ""} FROM {_FROM}
            {"WHERE " + " AND ".join(conds) if conds else ""}
            ORDER BY {order} {f"OFFSET {arg(offset)}" if offset else ""} LIMIT {arg(limit)}""",
        *arg.values,
    )
    return [dict(r) for r in rows]


async def count_entries(conn: asyncpg.Connection, where: EntryFilter = EntryFilter()) -> int:
    """How many entries match (Miniflux's `total`)."""
    arg = _Args()
    conds = _where(where, arg)
    n = await conn.fetchval(
        f"SELECT count(*) FROM {_FROM} {'WHERE ' + ' AND '.join(conds) if conds else ''}", *arg.values
    )
    return int(n)


async def find_entry_ids(
    conn: asyncpg.Connection,
    where: EntryFilter = EntryFilter(),
    *,
    newest_first: bool = True,
    after: tuple[datetime, int] | None = None,
    limit: int = 1000,
) -> list[tuple[int, datetime]]:
    """(id, effective_at) only, in "published" order: what an app syncs ids with (thousands at once)."""
    arg = _Args()
    conds = _where(where, arg)
    if after is not None:
        conds.append(
            f"(e.effective_at, e.id) {'<' if newest_first else '>'} ({arg(after[0])}, {arg(after[1])})"
        )
    direction = "DESC" if newest_first else "ASC"
    join = "JOIN mod_rss.feeds f ON f.id = e.feed_id" if where.folder is not None else ""
    rows = await conn.fetch(
        f"""SELECT e.id, e.effective_at FROM mod_rss.entries e {join}
            LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
            {"WHERE " + " AND ".join(conds) if conds else ""}
            ORDER BY e.effective_at {direction}, e.id {direction} LIMIT {arg(limit)}""",
        *arg.values,
    )
    return [(r["id"], r["effective_at"]) for r in rows]


async def list_entries(
    conn: asyncpg.Connection,
    *,
    feed_id: int | None = None,
    since: datetime | None = None,
    unread: bool = False,
    starred: bool = False,
    before: tuple[datetime, int] | None = None,
    limit: int = 20,
) -> list[dict[str, Any]]:
    """Entries newest first (effective time: published, else first seen), with read/starred state;
    `before` (effective_at, id) of the previous page's last entry continues after it (keyset paging)."""
    where = EntryFilter(
        feed_id=feed_id, since=since, read=False if unread else None, starred=True if starred else None
    )
    return await find_entries(conn, where, after=before, limit=limit)


async def get_entry(conn: asyncpg.Connection, entry_id: int | uuid.UUID) -> dict[str, Any]:
    """One entry to read, by id or message id: metadata, plain text and the whole sanitized HTML (what a
    lean bus event refers to), enclosures, state; or one clear error."""
    key = "e.message_id" if isinstance(entry_id, uuid.UUID) else "e.id"
    row = await conn.fetchrow(
        f"""SELECT e.id, e.feed_id, f.title AS feed_title, t.best_title AS title, e.link,
                  t.best_published AS published, e.effective_at, t.best_authors AS authors, e.categories,
                  e.enclosures, e.content_text, e.summary_html, e.content_html, e.reading_time_minutes,
                  e.message_id, s.read_at, s.starred_at
           FROM mod_rss.entries e JOIN mod_rss.feeds f ON f.id = e.feed_id
           JOIN mod_rss.entry_text t ON t.entry_id = e.id
           LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
           WHERE {key} = $1""",
        entry_id,
    )
    if row is None:
        raise UserError(f"no entry {entry_id}", "list entries with `feedeater rss entries`")
    return dict(row)


async def position(conn: asyncpg.Connection, entry_id: int) -> tuple[datetime, int]:
    """An entry's place in the newest-first order (effective_at, id): `rss entries --before ID` continues
    after it."""
    at = await conn.fetchval("SELECT effective_at FROM mod_rss.entries WHERE id = $1", entry_id)
    if at is None:
        raise UserError(f"no entry {entry_id}", "give an id from `feedeater rss entries`")
    return at, entry_id


# A state row's new values ($1 read, $2 starred): None leaves a flag, True sets it (keeping the first
# time), False clears it; changed_at moves only when a flag really changes. {ids} selects the entries.
_UPSERT_STATE = """INSERT INTO mod_rss.entry_state AS s (entry_id, read_at, starred_at)
    SELECT id, CASE WHEN $1 THEN now() END, CASE WHEN $2 THEN now() END FROM ({ids}) AS ids (id)
    ON CONFLICT (entry_id) DO UPDATE SET
        read_at = CASE WHEN $1 IS NULL THEN s.read_at WHEN $1 THEN coalesce(s.read_at, now()) END,
        starred_at = CASE WHEN $2 IS NULL THEN s.starred_at WHEN $2 THEN coalesce(s.starred_at, now()) END,
        changed_at = CASE WHEN ($1 IS NOT NULL AND $1 <> (s.read_at IS NOT NULL))
                            OR ($2 IS NOT NULL AND $2 <> (s.starred_at IS NOT NULL))
                          THEN now() ELSE s.changed_at END"""


async def mark_entries(
    conn: asyncpg.Connection, entry_ids: Sequence[int], *, read: bool | None, starred: bool | None
) -> list[int]:
    """Set read and/or starred on entries (None leaves it); returns the ids that exist."""
    found = [
        r["id"]
        for r in await conn.fetch("SELECT id FROM mod_rss.entries WHERE id = ANY($1::bigint[])", entry_ids)
    ]
    await conn.execute(_UPSERT_STATE.format(ids="SELECT unnest($3::bigint[])"), read, starred, found)
    return sorted(found)


async def mark_matching(conn: asyncpg.Connection, where: EntryFilter, *, read: bool) -> int:
    """Mark every entry the filter matches read (or unread): a feed, a folder or everything, up to a
    time ("mark all as read" in the reader apps); returns how many changed."""
    arg = _Args()
    arg(read), arg(None)  # $1, $2 of _UPSERT_STATE
    conds = _where(dataclasses.replace(where, read=not read), arg)
    ids = f"SELECT e.id FROM {_FROM} WHERE {' AND '.join(conds)}"
    status = await conn.execute(_UPSERT_STATE.format(ids=ids), *arg.values)
    return int(status.split()[-1])


async def toggle_starred(conn: asyncpg.Connection, entry_id: int) -> bool | None:
    """Star an unstarred entry, unstar a starred one (Miniflux's bookmark toggle); None: no such entry."""
    starred = await conn.fetchval(
        """SELECT s.starred_at IS NOT NULL FROM mod_rss.entries e
           LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id WHERE e.id = $1""",
        entry_id,
    )
    if starred is None:
        return None
    await mark_entries(conn, [entry_id], read=None, starred=not starred)
    return not starred


async def state_counts(conn: asyncpg.Connection) -> list[dict[str, Any]]:
    """Per feed: unread and read entries and the newest entry's time (apps' unread badges)."""
    rows = await conn.fetch(
        """SELECT e.feed_id, count(*) FILTER (WHERE s.read_at IS NULL) AS unread,
                  count(*) FILTER (WHERE s.read_at IS NOT NULL) AS read, max(e.effective_at) AS newest
           FROM mod_rss.entries e LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id
           GROUP BY e.feed_id ORDER BY e.feed_id"""
    )
    return [dict(r) for r in rows]
