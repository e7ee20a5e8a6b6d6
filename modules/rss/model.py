"""Data types that flow between the RSS module's stages (fetch → parse → normalize → store → publish).

They are plain dataclasses so every stage can be tested without I/O. The intents (Known … Intents) are
what ingest decides and store writes: they live here, beside both, so store imports nothing of ingest.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime

from host.events import stable_uuid


@dataclass(frozen=True, slots=True)
class Enclosure:
    url: str
    type: str | None = None
    length: int | None = None


@dataclass(slots=True)
class Entry:
    """One normalized, sanitized entry, ready to store.

    `guid` is the entry's identity inside its feed: unique within one parsed document and
    stable across re-parses of the same item.
    """

    guid: str
    guid_source: str  # "id" (guid/atom id/json id), "link", or "hash"
    title: str  # plain text, may be ""
    link: str | None  # absolute http(s), tracking parameters removed
    authors: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # Atom terms, RSS categories, keywords
    category_labels: dict[str, str] = field(default_factory=dict)  # Atom term → label, when they differ
    enclosures: list[Enclosure] = field(default_factory=list)
    image: str | None = None  # media:thumbnail / itunes:image / JSON image
    duration_seconds: int | None = None  # itunes:duration
    published: datetime | None = None  # UTC-aware
    updated: datetime | None = None  # UTC-aware
    date_uncertain: bool = False  # no usable date: the store uses first-seen time
    future_dated: bool = False  # published more than a few minutes after parse time
    summary_html: str | None = None  # sanitized
    content_html: str | None = None  # sanitized; best content by the priority of the design doc
    content_text: str = ""  # plain text of the best content (search, embeddings, prompts)
    word_count: int = 0
    reading_time_minutes: int = 0
    partial_content: bool = False  # only a short summary/excerpt was provided
    content_hash: str = ""  # sha256 hex over the normalized fields; a change is a revision
    raw_hash: str | None = None  # digest of the raw item it was made from (parse.normalize.raw_hash)


@dataclass(frozen=True, slots=True)
class SameItem:
    """An item whose raw hash is stored: it became the same Entry before, so parse did not normalize it
    again (only what scheduling needs is read: its dates)."""

    guid: str
    raw_hash: str
    published: datetime | None
    future_dated: bool
    position: int = 0  # its index among the document's items (Feed.items)


@dataclass(slots=True)
class Feed:
    """A parsed, normalized feed document."""

    format: str  # e.g. "rss2.0", "rss1.0", "atom1.0", "atom0.3", "jsonfeed1.1"
    title: str
    link: str | None  # the site's home page (absolute)
    description: str
    entries: list[Entry]
    language: str | None = None
    image: str | None = None
    ttl_minutes: int | None = None  # RSS <ttl>
    skip_hours: frozenset[int] = frozenset()  # 0..23, UTC
    skip_days: frozenset[str] = frozenset()  # "Monday".."Sunday"
    parser: str = "fast"  # "fast" (lxml), "lenient" (feedparser) or "json"
    warnings: list[str] = field(default_factory=list)  # recovered problems, logged once
    # Feed-level relations as (rel, absolute URL) in document order: WebSub `hub`/`self`, RFC 5005
    # `prev-archive`/`next`/`previous`; what push and backfill follow.
    links: tuple[tuple[str, str], ...] = ()
    skipped_items: int = 0  # items with nothing in them (no title, body, link or media), left out (seed 002)
    over_cap: tuple[str, ...] = ()  # guids of the oldest entries left out over the per-document item cap
    same: tuple[SameItem, ...] = ()  # items known unchanged by their raw hash: not in `entries`

    def items(self) -> list[Entry | SameItem]:
        """Every kept item in document order: the normalized entries and the ones known unchanged."""
        out: list[Entry | SameItem] = list(self.entries)
        for item in self.same:  # positions ascend: each lands at its own index
            out.insert(item.position, item)
        return out


def message_id(feed_id: int, guid: str) -> uuid.UUID:
    """An entry's FeedEater message id. Deterministic: the same (feed, guid) always yields the same id."""
    return stable_uuid("rss", str(feed_id), guid)


def context_key(feed_id: int) -> str:
    """A feed's context key (host.contexts source_key)."""
    return f"feed:{feed_id}"


@dataclass(frozen=True, slots=True)
class Known:
    """What storage knows of one stored entry."""

    content_hash: str
    revision: int
    first_seen: datetime
    entry_id: int | None = None  # its row (events refer to the whole entry by it)
    raw_hash: str | None = None  # of the raw item it was last made from (None: unknown, never skipped)


@dataclass(slots=True)
class New:
    entry: Entry
    realtime: bool = False  # set by the `mark_realtime` processor
    reason: str = (
        "not-judged"  # why it is (not) realtime: realtime, first-poll, before-cutoff, … (ingest.diff.REASONS)
    )


@dataclass(frozen=True, slots=True)
class Filtered:
    """A new entry a processor removed: it is not stored and not announced (intake_skips keeps the fact)."""

    entry: Entry
    processor: str


@dataclass(slots=True)
class Revised:
    entry: Entry
    known: Known

    @property
    def revision(self) -> int:
        return self.known.revision + 1


@dataclass(slots=True)
class Intents:
    """Everything one intake of one feed document will do."""

    feed_id: int
    feed_title: str
    now: datetime
    first_poll: bool  # the feed's first successful parse: its backlog is never realtime
    lookback_hours: int
    new: list[New] = field(default_factory=list)
    revised: list[Revised] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # guids seen again with the same content
    gone: list[str] = field(default_factory=list)  # guids deleted before (tombstoned): never re-added
    filtered: list[Filtered] = field(default_factory=list)  # new entries a processor removed (processors.run)
    grace_minutes: int = 0  # the lookback window is this much wider (scheduler drift at its edge)
    fetch_id: int | None = None  # the raw fetch the entries were parsed from (events carry it)
    typical_order: str | None = None  # how the feed orders its entries (ingest.order), None = unknown
    raw_hashes: dict[str, str] = field(default_factory=dict)  # seen guid → its item's raw hash (stored)

    @property
    def seen(self) -> list[str]:
        """Guids already stored that the document still carries (their last_seen moves)."""
        return [r.entry.guid for r in self.revised] + self.unchanged
