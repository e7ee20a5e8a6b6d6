"""The Google Reader API on the wire (pure), in the dialect FreshRSS, Miniflux and BazQux serve:
stream ids (`feed/12`, `user/-/label/Tech`, `user/-/state/com.google/read`), item ids (the long
`tag:google.com,2005:reader/item/<16 hex>` and the short decimal form), items and subscriptions as JSON,
the request filters as a store EntryFilter, and a stream as Atom (what newsboat's "feedhq" source reads).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from lxml import etree

from modules.rss.store.reading import EntryFilter

ITEM_PREFIX = "tag:google.com,2005:reader/item/"
STATE = "user/-/state/com.google/"
LABEL = "user/-/label/"
READING_LIST, READ, STARRED = STATE + "reading-list", STATE + "read", STATE + "starred"
USER_ID = "1"
Kind = Literal["reading-list", "read", "unread", "starred", "feed", "label", "other"]
STATES: dict[str, Kind] = {
    "reading-list": "reading-list",
    "read": "read",
    "starred": "starred",
    "kept-unread": "unread",  # Google's "kept unread" is feedeater's unread
    "unread": "unread",  # FreshRSS's pseudo-state
    "fresh": "unread",
}


class BadStream(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Stream:
    kind: Kind
    value: str = ""  # feed: its id or URL; label: the folder; other: the state's name


def parse_stream(raw: str) -> Stream:
    """A stream id as apps write it: `user/-/…` or `user/<id>/…`, `feed/<id>` or `feed/<url>`."""
    if raw.startswith("feed/") and len(raw) > 5:
        return Stream("feed", raw[5:])
    parts = raw.split("/", 3)
    if len(parts) == 4 and parts[0] == "user":
        if parts[2] == "label" and parts[3]:
            return Stream("label", parts[3])
        if parts[2] == "state" and parts[3].startswith("com.google/"):
            name = parts[3].removeprefix("com.google/")
            return Stream(STATES[name]) if name in STATES else Stream("other", name)
    raise BadStream(raw)


def item_id(raw: str) -> int | None:
    """An entry id from either form (the long one is hex, the short one decimal); None for garbage."""
    raw = raw.strip()
    try:
        if raw.startswith(ITEM_PREFIX):
            value = int(raw.removeprefix(ITEM_PREFIX), 16)
        elif raw.lstrip("-").isdigit():
            value = int(raw)
        else:
            return None
    except ValueError:
        return None
    return value if 0 < value < 2**63 else None


def long_id(entry_id: int) -> str:
    return f"{ITEM_PREFIX}{entry_id:016x}"


@dataclass(frozen=True, slots=True)
class States:
    """Read and starred as `it`/`xt` or edit-tag's `a`/`r` ask for them; None: not asked."""

    read: bool | None = None
    starred: bool | None = None

    def __or__(self, other: States) -> States:
        """Both; where both ask, `other` wins."""
        return States(
            other.read if other.read is not None else self.read,
            other.starred if other.starred is not None else self.starred,
        )


def states(streams: Iterable[Stream], *, include: bool) -> States:
    """Targets to include (`it`, `a`) or exclude (`xt`, `r`) as flags; other targets are ignored, as
    Miniflux does (a feed or label cannot be excluded here, items carry no labels of their own)."""
    read = starred = None
    for s in streams:
        if s.kind in ("read", "unread"):
            read = (s.kind == "read") == include
        elif s.kind == "starred":
            starred = include
    return States(read, starred)


def moment(stamp: int) -> datetime:
    """A timestamp in whatever unit an app sent (apps differ: s, ms, µs or ns) as a time."""
    divisor = 10**9 if stamp > 10**17 else 10**6 if stamp > 10**14 else 10**3 if stamp > 10**11 else 1
    return datetime.fromtimestamp(stamp / divisor, UTC)


def micros(dt: datetime) -> int:
    return int(dt.timestamp()) * 1_000_000 + dt.microsecond


def labels(folder: str | None) -> list[str]:
    return [LABEL + folder] if folder else []


def item(row: Mapping[str, Any]) -> dict[str, Any]:
    """An entry row (store.find_entries(content=True)) as a stream item."""
    categories = [READING_LIST, *labels(row["folder"])]
    categories += [READ] if row["read_at"] is not None else []
    categories += [STARRED] if row["starred_at"] is not None else []
    link = row["link"] or ""
    content = {"direction": "ltr", "content": row["content_html"]}
    out: dict[str, Any] = {
        "id": long_id(row["id"]),
        "crawlTimeMsec": str(micros(row["first_seen"]) // 1000),
        "timestampUsec": str(micros(row["effective_at"])),
        "published": int(row["effective_at"].timestamp()),
        "updated": int(row["changed_at"].timestamp()),
        "title": row["title"] or "",
        "canonical": [{"href": link}] if link else [],
        "alternate": [{"href": link, "type": "text/html"}] if link else [],
        "categories": categories,
        "origin": {
            "streamId": f"feed/{row['feed_id']}",
            "title": row["feed_title"],
            "htmlUrl": row["site_url"] or "",
        },
        "summary": content,
        "content": content,
        "author": ", ".join(row["authors"] or ()),
    }
    enclosures = [
        {
            "href": e["url"],
            "type": e.get("type") or "",
            **({"length": e["length"]} if e.get("length") else {}),
        }
        for e in row["enclosures"] or ()
        if e.get("url")
    ]
    return out | ({"enclosure": enclosures} if enclosures else {})


def subscription(row: Mapping[str, Any]) -> dict[str, Any]:
    folder = row["folder"]
    return {
        "id": f"feed/{row['id']}",
        "title": row["title"] or row["url"],
        "categories": [{"id": LABEL + folder, "label": folder, "type": "folder"}] if folder else [],
        "url": row["url"],
        "htmlUrl": row["site_url"] or "",
        "iconUrl": "",
    }


def unread_counts(counts: Sequence[Mapping[str, Any]], folder_of: Mapping[int, str | None]) -> dict[str, Any]:
    """Per feed, per folder and the reading list: unread count and newest item (store.state_counts rows)."""
    rows: list[dict[str, Any]] = []
    per_folder: dict[str, tuple[int, int]] = {}
    total, newest_all = 0, 0
    for c in counts:
        newest = micros(c["newest"]) if c["newest"] is not None else 0
        rows.append(
            {"id": f"feed/{c['feed_id']}", "count": c["unread"], "newestItemTimestampUsec": str(newest)}
        )
        if folder := folder_of.get(c["feed_id"]):
            n, t = per_folder.get(folder, (0, 0))
            per_folder[folder] = (n + c["unread"], max(t, newest))
        total, newest_all = total + c["unread"], max(newest_all, newest)
    rows += [
        {"id": LABEL + f, "count": n, "newestItemTimestampUsec": str(t)}
        for f, (n, t) in sorted(per_folder.items())
    ]
    rows.append({"id": READING_LIST, "count": total, "newestItemTimestampUsec": str(newest_all)})
    return {"max": total, "unreadcounts": rows}


def filter_for(stream: Stream, feed_id: int | None) -> EntryFilter | None:
    """The entries a stream holds (`feed_id` resolved by the caller); None: a stream feedeater has no
    entries in (broadcast, like, …)."""
    match stream.kind:
        case "reading-list":
            return EntryFilter()
        case "read" | "unread":
            return EntryFilter(read=stream.kind == "read")
        case "starred":
            return EntryFilter(starred=True)
        case "feed":
            return EntryFilter(feed_id=feed_id) if feed_id is not None else None
        case "label":
            return EntryFilter(folder=stream.value)
    return None


GR = "http://www.google.com/schemas/reader/atom/"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # what XML 1.0 cannot carry


def _text(value: str | None) -> str:
    return _NOT_XML.sub("", value or "")


ATOM = "http://www.w3.org/2005/Atom"
SCHEME = "http://www.google.com/reader/"


def atom(stream_id: str, title: str, rows: Iterable[Mapping[str, Any]], *, continuation: str | None) -> bytes:
    """A stream as Google Reader's Atom (/reader/atom/<stream>): state as <category> with Reader's
    scheme and a label ("read", "fresh" for unread, "starred"), which newsboat's feedhq source reads."""
    root = etree.Element(f"{{{ATOM}}}feed", nsmap={None: ATOM, "gr": GR})  # type: ignore[dict-item]
    etree.SubElement(root, f"{{{ATOM}}}id").text = f"tag:google.com,2005:reader/{stream_id}"
    etree.SubElement(root, f"{{{ATOM}}}title").text = _text(title)
    etree.SubElement(root, f"{{{ATOM}}}updated").text = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if continuation:
        etree.SubElement(root, f"{{{GR}}}continuation").text = continuation
    for row in rows:
        entry = etree.SubElement(root, f"{{{ATOM}}}entry")
        etree.SubElement(entry, f"{{{ATOM}}}id").text = long_id(row["id"])
        etree.SubElement(entry, f"{{{ATOM}}}title", type="html").text = _text(row["title"])
        stamp = row["effective_at"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        etree.SubElement(entry, f"{{{ATOM}}}published").text = stamp
        etree.SubElement(entry, f"{{{ATOM}}}updated").text = stamp
        if row["link"]:
            etree.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", href=row["link"], type="text/html")
        states = [
            "reading-list",
            "read" if row["read_at"] else "fresh",
            *(["starred"] if row["starred_at"] else []),
        ]
        for name in states:
            etree.SubElement(entry, f"{{{ATOM}}}category", term=STATE + name, scheme=SCHEME, label=name)
        for folder in [row["folder"]] if row["folder"] else []:
            etree.SubElement(
                entry, f"{{{ATOM}}}category", term=_text(LABEL + folder), scheme=SCHEME, label=_text(folder)
            )
        if row["authors"]:
            author = etree.SubElement(entry, f"{{{ATOM}}}author")
            etree.SubElement(author, f"{{{ATOM}}}name").text = _text(", ".join(row["authors"]))
        etree.SubElement(entry, f"{{{ATOM}}}content", type="html").text = _text(row["content_html"])
        source = etree.SubElement(
            entry, f"{{{ATOM}}}source", {f"{{{GR}}}stream-id": f"feed/{row['feed_id']}"}
        )
        etree.SubElement(source, f"{{{ATOM}}}title").text = _text(row["feed_title"])
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")
