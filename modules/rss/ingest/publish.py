"""Intents → FeedEater events (pure): `NormalizedMessage` per new or revised entry. See docs/bus.md."""

from __future__ import annotations

import uuid
from dataclasses import asdict
from datetime import datetime
from typing import Any

from host.events import Event, iso_z, message_created, message_updated, stable_uuid
from modules.rss.ingest.diff import Intents
from modules.rss.model import Entry

MODULE = "rss"
MESSAGE_TEXT_MAX = 8000  # characters of plain text in `Message`; the full text stays in the database
CONTENT_HTML_MAX = 65536  # characters of sanitized HTML carried in the `rss` extra key


def message_id(feed_id: int, guid: str) -> uuid.UUID:
    """Deterministic: the same (feed, guid) always yields the same message id."""
    return stable_uuid("rss", str(feed_id), guid)


def context_key(feed_id: int) -> str:
    return f"feed:{feed_id}"


def build_message(
    entry: Entry,
    *,
    feed_id: int,
    feed_title: str,
    first_seen: datetime,
    realtime: bool,
    revision: int = 1,
    fetch_id: int | None = None,
) -> dict[str, Any]:
    mid = message_id(feed_id, entry.guid)
    created = entry.published if entry.published is not None and not entry.future_dated else first_seen
    body = message_text(entry)
    author = entry.authors[0] if entry.authors else None
    tags: dict[str, str | int | bool] = {
        "source": "rss",
        "feedId": str(feed_id),
        "feedTitle": feed_title,
        "title": entry.title,
        "hasEnclosure": bool(entry.enclosures),
    }
    if entry.link:
        tags["link"] = entry.link
    if author:
        tags["author"] = author
    if entry.categories:
        tags["categories"] = ", ".join(entry.categories)
    message: dict[str, Any] = {
        "id": str(mid),
        "createdAt": iso_z(created),
        "source": {"module": MODULE, "stream": str(feed_id)},
        "realtime": realtime,
        "Message": body,
        "From": author or feed_title or "Unknown",
        "contextRef": {"ownerModule": MODULE, "sourceKey": context_key(feed_id)},
        "isDirectMention": False,
        "isDigest": False,
        "isSystemMessage": False,
        "tags": tags,
        "rss": _structured(entry, feed_id, first_seen, revision, fetch_id),
    }
    if entry.link:
        message["followMePanel"] = {
            "module": MODULE,
            "panelId": "entry",
            "href": entry.link,
            "label": "Read Article",
        }
    return message


def message_text(entry: Entry) -> str:
    """`Message`: title, blank line, plain text (at most MESSAGE_TEXT_MAX characters). An entry with
    neither (an image post, an enclosure alone) is named by its link or enclosure: the bus contract
    (docs/bus.md) promises every consumer a message that is not empty."""
    body = entry.title
    if entry.content_text:
        body = f"{entry.title}\n\n{entry.content_text}" if entry.title else entry.content_text
    if not body.strip():
        body = entry.link or next((e.url for e in entry.enclosures if e.url), "") or "(an entry without text)"
    if len(body) > MESSAGE_TEXT_MAX:
        body = body[: MESSAGE_TEXT_MAX - 1].rstrip() + "…"
    return body


def _structured(
    entry: Entry, feed_id: int, first_seen: datetime, revision: int, fetch_id: int | None
) -> dict[str, Any]:
    """The whole entry under one documented extra key (FeedEater consumers strip unknown keys)."""
    content = entry.content_html
    return {
        "feedId": feed_id,
        "guid": entry.guid,
        "title": entry.title,
        "link": entry.link,
        "authors": entry.authors,
        "categories": entry.categories,
        "enclosures": [asdict(e) for e in entry.enclosures],
        "image": entry.image,
        "durationSeconds": entry.duration_seconds,
        "published": iso_z(entry.published) if entry.published else None,
        "updated": iso_z(entry.updated) if entry.updated else None,
        "firstSeen": iso_z(first_seen),
        "dateUncertain": entry.date_uncertain,
        "futureDated": entry.future_dated,
        "summaryHtml": entry.summary_html,
        "contentHtml": content[:CONTENT_HTML_MAX] if content else None,
        "contentTruncated": bool(content and len(content) > CONTENT_HTML_MAX),
        "wordCount": entry.word_count,
        "readingTimeMinutes": entry.reading_time_minutes,
        "partialContent": entry.partial_content,
        "contentHash": entry.content_hash,
        "revision": revision,
        "fetchId": fetch_id,
    }


def created_event(message: dict[str, Any]) -> Event:
    return message_created(MODULE, message)


def updated_event(message: dict[str, Any], content_hash: str) -> Event:
    return message_updated(MODULE, message, content_hash)


def events(intents: Intents, inserted: set[str]) -> list[Event]:
    """One MessageCreated per new entry that storage really inserted, one MessageUpdated per revision.

    `inserted` guards against a concurrent writer: an entry someone else inserted first is theirs to announce.
    """
    out: list[Event] = []
    for new in intents.new:
        if new.entry.guid in inserted:
            message = build_message(
                new.entry,
                feed_id=intents.feed_id,
                feed_title=intents.feed_title,
                first_seen=intents.now,
                realtime=new.realtime,
                fetch_id=intents.fetch_id,
            )
            out.append(created_event(message))
    for rev in intents.revised:
        message = build_message(
            rev.entry,
            feed_id=intents.feed_id,
            feed_title=intents.feed_title,
            first_seen=rev.known.first_seen,
            realtime=False,
            revision=rev.revision,
            fetch_id=intents.fetch_id,
        )
        out.append(updated_event(message, rev.entry.content_hash))
    return out
