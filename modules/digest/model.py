"""The digest module's records (plain data shared by its stages)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime


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
