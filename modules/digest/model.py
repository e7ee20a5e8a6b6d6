"""The digest module's records (plain data shared by its stages)."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Article:
    """One source message as the digest sees it (built from a bus event by intake.event)."""

    message_id: uuid.UUID
    source_module: str
    stream: str
    feed_id: int | None
    source_name: str
    domain: str
    title: str
    url: str | None
    body: str
    word_count: int
    published_at: datetime
    date_uncertain: bool
    partial_content: bool
    content_hash: str
    depth_signals: tuple[str, ...]
    revision: int
    updated: bool  # from a MessageUpdated
    guid: str | None = None  # the source's own id of the item (rss: the feed's guid as rss read it)


@dataclass
class Item:
    section: str  # top | noteworthy | also
    label: str
    trend: str | None
    title: str
    source: str
    tier: int
    published: datetime
    date_uncertain: bool
    url: str | None
    score: float
    summary: str
    related_count: int
    related_sources: list[str]
    article_id: int
    terms: list[str]
    topic_size: int
    cluster_id: int = 0  # the lead's story cluster (`digest cluster ID`)
    event_id: int = 0  # the lead's event: its story and the other coverage linked as same_event
    stories: int = 1  # story clusters in this item (its events' stories)


@dataclass
class Digest:
    type: str
    title: str
    window_start: datetime
    window_end: datetime
    created_at: datetime
    article_count: int
    duplicates_removed: int
    items: list[Item]
    health: dict[str, Any]
    checks: list[dict[str, Any]] = field(default_factory=list)

    def section(self, name: str) -> list[Item]:
        return [i for i in self.items if i.section == name]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
