"""`feedeater rss why FEED ITEM`, GET /api/v1/feeds/{id}/why and the console's entry page: was the item
seen, in which fetch, with which identity; was it announced, and if not why; what the next poll will do.

`gather` reads the stored facts (store/explain.py) and parses the feed's latest stored fetch again (is the
item still listed, over the item cap, under a duplicate guid); `decision.explain` decides from them (pure).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from modules.rss import store
from modules.rss.explain.decision import (
    Document,
    Explanation,
    Facts,
    FeedFacts,
    Skipped,
    StoredEntry,
    explain,
)
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.parse.normalize import clean_url, normalize_guid
from modules.rss.store import explain as facts_store
from modules.rss.store import websub as websub_store

__all__ = ["Explanation", "explain", "gather", "why"]

_STORED_FIELDS = tuple(StoredEntry.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class _Index:
    """What explain needs of one parsed document: its entries' guids, links and hashes, the cap's left-outs."""

    hashes: dict[str, str]  # guid → content hash
    guids_by_link: dict[str, str]
    over_cap: frozenset[str]
    error: str | None = None


# (body sha256, url, content type, item cap) → index. Not the fetch id: ids repeat across databases, and one process
# may serve several (the tests do: another database's fetch 1 answered for this one's).
_INDEXES: OrderedDict[tuple[str, str, str | None, int], _Index] = OrderedDict()
_INDEXES_KEPT = 32
_INDEXES_LOCK = threading.Lock()


def _index(raw: dict[str, Any], now: datetime, max_items: int) -> _Index:
    """The latest fetch parsed again (CPU: the caller runs it off the event loop), once per fetch and cap:
    the console's entry page asks for every entry of a feed, and the feed's latest fetch rarely changes."""
    content_type = (raw["headers"] or {}).get("content-type")
    key = (raw["body_sha256"], raw["url"], content_type, max_items)
    with _INDEXES_LOCK:  # runs in worker threads
        if (found := _INDEXES.get(key)) is not None:
            _INDEXES.move_to_end(key)
            return found
    try:
        feed = parse_feed(
            bytes(raw["body"]),
            url=raw["url"],
            content_type=content_type,
            now=now,
            max_items=max_items,
        )
        index = _Index(
            {e.guid: e.content_hash for e in feed.entries},
            {e.link: e.guid for e in feed.entries if e.link},
            frozenset(feed.over_cap),
        )
    except FeedParseError as exc:
        index = _Index({}, {}, frozenset(), error=str(exc))
    with _INDEXES_LOCK:
        _INDEXES[key] = index
        while len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
    return index


def _document(raw: dict[str, Any], guid: str, link: str | None, now: datetime, max_items: int) -> Document:
    """Where the item is in the feed's latest fetch."""
    if raw["parse_error"]:
        return Document(raw["id"], raw["fetched_at"], error=raw["parse_error"])
    index = _index(raw, now, max_items)
    if index.error is not None:
        return Document(raw["id"], raw["fetched_at"], error=index.error)
    key = guid if guid in index.hashes else index.guids_by_link.get(link or "", guid)
    return Document(
        raw["id"],
        raw["fetched_at"],
        listed=key in index.hashes,
        over_cap=key in index.over_cap,
        copies=sum(g.startswith(key + "#") for g in index.hashes),
        content_hash=index.hashes.get(key),
    )


async def gather(
    conn: asyncpg.Connection, settings: Any, feed_ref: str | int, item: str, *, now: datetime, push: bool
) -> Facts:
    """Every stored fact about `item` (a guid, link, entry id or message id) of the feed `feed_ref` (id or
    URL). `push`: WebSub is configured (subscriptions may be active). Raises UserError for an unknown feed."""
    feed = await store.get_feed(conn, feed_ref)
    query = item.replace("\x00", "").strip()  # no text column takes NUL
    guid = normalize_guid(query) if query else query
    link = clean_url(query) if query.lower().startswith(("http://", "https://")) else None
    entry_id = int(query) if query.isdigit() and len(query) < 19 else None
    row = await facts_store.find_entry(conn, feed.id, guid=guid, link=link, entry_id=entry_id)
    skip = None if row is not None else await facts_store.find_skip(conn, feed.id, guid=guid, link=link)
    poll = await facts_store.poll_facts(conn, feed.id)
    lookback_override = feed.lookback_hours is not None
    feed_facts = FeedFacts(
        id=feed.id,
        title=feed.title,
        url=feed.url,
        enabled=feed.enabled,
        dead=feed.dead,
        lookback_hours=feed.lookback_hours or int(settings["lookback_hours"]),
        lookback_source="override" if lookback_override else "default",
        grace_minutes=int(settings["lookback_grace_minutes"]),
        successful_polls=poll["successful_polls"],
        next_poll_at=poll["next_poll_at"],
        interval_reason=poll["interval_reason"],
        push_until=await websub_store.active_until(conn, feed.id, now) if push else None,
        push_only=feed.push_only,
    )
    raw = await facts_store.latest_fetch(conn, feed.id)
    key = row["guid"] if row is not None else guid
    document = None
    if raw is not None:
        max_items = int(settings["max_items_per_document"])
        document = await asyncio.to_thread(_document, raw, key, row["link"] if row else link, now, max_items)
    return Facts(
        query=query,
        feed=feed_facts,
        now=now,
        entry=StoredEntry(**{k: row[k] for k in _STORED_FIELDS}) if row is not None else None,
        skipped=Skipped(**skip) if skip is not None else None,
        document=document,
        tombstoned=row is None and await facts_store.is_tombstoned(conn, feed.id, guid),
        stored_hash=row["content_hash"] if row is not None else None,
    )


async def why(
    conn: asyncpg.Connection, settings: Any, feed_ref: str | int, item: str, *, now: datetime, push: bool
) -> Explanation:
    """gather + explain: the one answer of the CLI, the API and the console."""
    return explain(await gather(conn, settings, feed_ref, item, now=now, push=push))
