"""Data types that flow between the RSS module's stages (fetch → parse → normalize → store → publish).

They are plain dataclasses so every stage can be tested without I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


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
