"""Entries, the use cases every front door shares: a page of a listing, marking read/starred, and why an
item was (not) announced. Answers in data and `UserError`s; the front doors shape them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from host.errors import UserError

if TYPE_CHECKING:
    import asyncpg

    from modules.rss.explain.decision import Explanation


class NoSuchFeed(UserError):
    """The feed a listing names does not exist (the REST API answers 404)."""

    def __init__(self, feed_id: int) -> None:
        super().__init__(f"no feed {feed_id}", "list feeds with `feedeater rss list`")
        self.feed_id = feed_id


async def page(
    conn: asyncpg.Connection,
    *,
    feed: int | str | None = None,
    since: datetime | None = None,
    unread: bool = False,
    starred: bool = False,
    before: tuple[datetime, int] | int | None = None,
    limit: int,
) -> tuple[list[dict[str, Any]], str | None]:
    """Entries newest first and the cursor of the next page (None on the last). `feed` is an id (checked
    only when the page is empty: one round trip per page; NoSuchFeed) or a reference as typed (an id or
    URL, resolved first); `before` is a cursor's position or an entry id."""
    from modules.rss import store
    from modules.rss.service import cursor
    from modules.rss.store import admin, reading

    feed_id = feed if isinstance(feed, int) or feed is None else (await store.get_feed(conn, feed)).id
    position = await reading.position(conn, before) if isinstance(before, int) else before
    rows = await store.list_entries(
        conn, feed_id=feed_id, since=since, unread=unread, starred=starred, before=position, limit=limit + 1
    )
    if not rows and feed_id is not None and not await admin.feed_exists(conn, feed_id):
        raise NoSuchFeed(feed_id)
    last = rows[limit - 1] if len(rows) > limit else None
    return rows[:limit], cursor.encode(last["effective_at"], last["id"]) if last is not None else None


async def mark(
    pool: asyncpg.Pool,
    *,
    entries: Sequence[int] = (),
    feed: str | int | None = None,
    read: bool | None,
    starred: bool | None,
) -> list[int]:
    """Mark entries by id, or every entry of a feed, read/unread and starred/unstarred (None: leave it);
    every id must exist. The ids marked."""
    from modules.rss import store
    from modules.rss.store import reading

    async with pool.acquire() as conn:
        if feed is not None:
            where = reading.EntryFilter(feed_id=(await store.get_feed(conn, feed)).id)
            wanted = [i for i, _ in await reading.find_entry_ids(conn, where, limit=2**62)]
        else:
            wanted = list(entries)
        found = await store.mark_entries(conn, wanted, read=read, starred=starred)
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise UserError(
            f"no entry {', '.join(map(str, missing))}", "list entries with `feedeater rss entries`"
        )
    return found


async def explain(
    conn: asyncpg.Connection, settings: Mapping[str, Any], feed: str | int, item: str
) -> Explanation:
    """Why an item was (not) announced: seen in which fetch, identity, decision, next poll (`rss why`,
    GET /feeds/{id}/why, the console's entry page)."""
    from modules.rss.explain import why

    push = bool(str(settings["websub_callback_base"]).strip())  # WebSub is on (websub.subscribe.enabled)
    return await why(conn, settings, feed, item, now=datetime.now(UTC), push=push)
