"""Intents → FeedEater events (pure): `NormalizedMessage` per new or revised entry. See docs/bus.md.

Events are lean: `Message` carries the plain text (as FeedEater's consumers read it) and the `rss` key at
most `CONTENT_HTML_MAX` characters of each HTML field, cut between tags with the open elements closed,
plus a reference to the whole entry (`entryId`, `entryUrl`: the REST API's copy). The full HTML of every
event went through PostgreSQL, the relay and NATS four times; consumers that want it fetch it once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from typing import Any

from host.events import Event, iso_z, message_created, message_updated
from modules.rss.model import Entry, Intents, context_key, message_id

MODULE = "rss"
MESSAGE_TEXT_MAX = 8000  # characters of plain text in `Message`; the full text stays in the database
CONTENT_HTML_MAX = 2048  # characters of sanitized HTML per field in the `rss` extra key (docs/bus.md)
ENTRY_URL = "/api/v1/entries/{}"  # the REST API's whole entry, relative to the host's HTTP address


def build_message(
    entry: Entry,
    *,
    feed_id: int,
    feed_title: str,
    first_seen: datetime,
    realtime: bool,
    revision: int = 1,
    fetch_id: int | None = None,
    entry_id: int | None = None,
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
        "rss": _structured(entry, feed_id, first_seen, revision, fetch_id, entry_id),
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


_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*>")
_VOID = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)  # elements without an end tag


def cut_html(html: str, limit: int) -> tuple[str, bool]:
    """At most `limit` characters of sanitized HTML, cut between tags (never inside a tag or a character
    reference) with the elements left open closed again, and whether it was cut (pure). Sanitized markup is
    a serialized tree (nh3: every `<` starts a tag, every element but the void ones is closed), so a scan
    of its tags with a stack of open elements is enough."""
    if len(html) <= limit:
        return html, False
    stack: list[str] = []
    closing = 0  # length of the end tags the open elements need (kept as the stack changes)
    at = 0  # end of the last tag kept
    for m in _TAG.finditer(html):
        if m.start() > limit - closing:  # the text before this tag does not fit whole
            cut = _text_cut(html, at, m.start(), limit - closing)
            break
        name = m[2].lower()
        after = closing
        if m[1]:  # an end tag: closes the innermost element of that name
            after -= len(name) + 3 if name in stack else 0
        elif name not in _VOID and not m[0].endswith("/>"):
            after += len(name) + 3
        if m.end() + after > limit:
            cut = m.start()
            break
        if m[1] and name in stack:
            at_name = len(stack) - 1 - stack[::-1].index(name)
            closing -= sum(len(n) + 3 for n in stack[at_name:])
            del stack[at_name:]
        elif not m[1] and after > closing:
            stack.append(name)
            closing = after
        at = m.end()
    else:
        cut = _text_cut(html, at, len(html), limit - closing)
    while cut > at and html[cut - 1].isspace():  # a cut text ends at a word, not in the spaces after it
        cut -= 1
    return html[:cut] + "".join(f"</{name}>" for name in reversed(stack)), True


def _text_cut(html: str, start: int, end: int, limit: int) -> int:
    """Where to end a text run html[start:end] so the prefix stays within `limit`, not inside `&…;`."""
    cut = max(start, min(end, limit))
    amp = html.rfind("&", start, cut)
    if amp != -1 and html.find(";", amp, cut) == -1:
        return amp
    return cut


def _structured(
    entry: Entry,
    feed_id: int,
    first_seen: datetime,
    revision: int,
    fetch_id: int | None,
    entry_id: int | None,
) -> dict[str, Any]:
    """The entry under one documented extra key (FeedEater consumers strip unknown keys), its HTML cut to
    CONTENT_HTML_MAX, with where to read all of it."""
    content, content_cut = cut_html(entry.content_html or "", CONTENT_HTML_MAX)
    summary, summary_cut = cut_html(entry.summary_html or "", CONTENT_HTML_MAX)
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
        "summaryHtml": summary if entry.summary_html is not None else None,
        "summaryTruncated": summary_cut,
        "contentHtml": content if entry.content_html is not None else None,
        "contentTruncated": content_cut,
        "wordCount": entry.word_count,
        "readingTimeMinutes": entry.reading_time_minutes,
        "partialContent": entry.partial_content,
        "contentHash": entry.content_hash,
        "revision": revision,
        "fetchId": fetch_id,
        "entryId": entry_id,
        "entryUrl": ENTRY_URL.format(entry_id) if entry_id is not None else None,
    }


def created_event(message: dict[str, Any]) -> Event:
    return message_created(MODULE, message)


def updated_event(message: dict[str, Any], content_hash: str) -> Event:
    return message_updated(MODULE, message, content_hash)


def events(intents: Intents, inserted: Mapping[str, int]) -> list[Event]:
    """One MessageCreated per new entry that storage really inserted (guid → its entry id), one
    MessageUpdated per revision.

    `inserted` guards against a concurrent writer: an entry someone else inserted first is theirs to announce.
    """
    out: list[Event] = []
    for new in intents.new:
        if (entry_id := inserted.get(new.entry.guid)) is not None:
            message = build_message(
                new.entry,
                feed_id=intents.feed_id,
                feed_title=intents.feed_title,
                first_seen=intents.now,
                realtime=new.realtime,
                fetch_id=intents.fetch_id,
                entry_id=entry_id,
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
            entry_id=rev.known.entry_id,
        )
        out.append(updated_event(message, rev.entry.content_hash))
    return out
