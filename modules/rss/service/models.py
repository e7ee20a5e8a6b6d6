"""Typed shapes of the rss module's data, shared by the REST API, `feedeater rss ... --json` and the NATS
search service: one definition per shape, so the three never drift apart (the API's own request bodies
are in api/models.py).

Rows from `modules.rss.store` validate straight into these models (`Feed.model_validate(row)`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

__all__ = [
    "Coverage",
    "Enclosure",
    "Entry",
    "EntrySummary",
    "Feed",
    "FetchSummary",
    "ItemExplanation",
    "OpmlImportResult",
    "Refused",
    "SearchHit",
    "SearchResults",
]

FeedState = str  # "ok", "new", "disabled", "dead", "failing ×N", "forbidden ×N" (modules.rss.service.feeds.feed_state)


class Feed(BaseModel):
    """A subscription with its poll state (`feedeater rss list --json`, GET /feeds)."""

    id: int
    url: str
    title: str
    site_url: str | None
    description: str
    format: str | None
    folder: str | None
    enabled: bool
    interval_override_s: int | None = Field(description="fixed poll interval; null: adaptive")
    retention_days: int | None
    lookback_hours: int | None
    full_text: bool
    dead: bool
    stale: bool
    created_at: datetime
    next_poll_at: datetime | None
    last_polled_at: datetime | None
    last_status: int | None
    last_success_at: datetime | None
    last_error: str | None
    consecutive_errors: int
    total_errors: int
    interval_s: float | None = Field(description="the adaptive interval the scheduler chose")
    interval_reason: str | None
    min_interval_s: int | None = Field(
        default=None, description="the feed's own interval floor; null: the setting"
    )
    max_interval_s: int | None = Field(
        default=None, description="the feed's own interval ceiling; null: the setting"
    )
    push_only: bool = Field(default=False, description="no polling while a WebSub subscription is active")
    backfill: bool = Field(default=True, description="RFC 5005 archives are walked")
    entries: int
    state: FeedState


class ItemExplanation(BaseModel):
    """Why an item was (not) announced (`feedeater rss why --json`, GET /feeds/{id}/why, the console's
    entry page): one decision from stored facts (modules/rss/explain)."""

    feed_id: int
    query: str = Field(description="the guid, link, entry id or message id asked about")
    verdict: Literal["announced", "not-announced", "not-stored", "not-seen"]
    reason: str = Field(
        description="realtime, first-poll, before-cutoff, future, archive-page, filtered, over-cap, deleted,"
        " not-listed, never-polled or unknown (stored before the decision was recorded)"
    )
    announced: bool | None = Field(
        description="its MessageCreated was realtime; null when not stored or unknown"
    )
    summary: str
    lines: list[str] = Field(description="the explanation, one fact per line (what the CLI prints)")
    next_poll: str
    entry_id: int | None
    message_id: str | None
    guid: str | None
    guid_source: str | None
    link: str | None
    fetch_id: int | None = Field(description="the raw fetch the entry was first stored from (GET /raw/{id})")
    last_fetch_id: int | None = Field(description="the latest raw fetch that listed it")
    first_seen: datetime | None
    last_seen: datetime | None
    listed: bool | None = Field(description="in the feed's latest stored document; null when there is none")

    @classmethod
    def of(cls, explanation: Any) -> ItemExplanation:
        """From a modules.rss.explain.Explanation (a dataclass with these fields)."""
        return cls.model_validate({name: getattr(explanation, name) for name in cls.model_fields})


class EntrySummary(BaseModel):
    """One entry in a listing (`feedeater rss entries --json`, GET /feeds/{id}/entries)."""

    id: int
    message_id: uuid.UUID = Field(description="the entry's MessageCreated message id on the bus")
    feed_id: int
    feed_title: str
    title: str
    link: str | None
    published: datetime | None
    effective_at: datetime = Field(description="published, else first seen: the listing's order")
    reading_time_minutes: int
    read_at: datetime | None
    starred_at: datetime | None


class Enclosure(BaseModel):
    url: str
    type: str | None = None
    length: int | None = None


class Entry(EntrySummary):
    """One entry to read (`feedeater rss entry --json`, GET /entries/{uid})."""

    authors: list[str]
    categories: list[str]
    enclosures: list[Enclosure]
    content_text: str
    summary_html: str | None = Field(description="the feed's summary, sanitized, whole")
    content_html: str | None = Field(
        description="the feed's content, sanitized, whole (bus events carry at most 2,048 characters)"
    )


class FetchSummary(BaseModel):
    """What fetching feeds now did (`rss add`, `rss import`, POST /feeds/{id}/refetch)."""

    feeds: int
    fetched: int
    failed: dict[str, str] = Field(description="feed id → the error of its fetch")
    deferred: dict[str, str] = Field(
        default_factory=dict,
        description="feed id → why it was not fetched now (the poll job fetches it later)",
    )
    new_entries: int


class Refused(BaseModel):
    url: str
    reason: str


class OpmlImportResult(BaseModel):
    """`feedeater rss import --json`, POST /opml."""

    added: int
    already_present: int
    refused: list[Refused]
    feed_ids: list[int]
    fetch: FetchSummary | None = None


class SearchHit(BaseModel):
    entry_id: int
    message_id: uuid.UUID
    feed_id: int
    feed_title: str
    title: str
    link: str | None
    published: datetime | None
    snippet: str = Field(description="plain text; matched words between « and »")
    mode: Literal["hybrid", "text", "vector"] = Field(description="which side(s) found this entry")
    score: float
    vector_score: float | None
    text_score: float | None


class Coverage(BaseModel):
    """How much of the searched set is embedded with the current model."""

    embedded: int
    total: int
    fraction: float
    model: str | None

    @field_validator("fraction")
    @classmethod
    def _rounded(cls, value: float) -> float:
        return round(value, 4)


class SearchResults(BaseModel):
    """A search reply (`feedeater search --json`, NATS `feedeater.rss.search`, GET /search)."""

    results: list[SearchHit] = Field(description="answers at or above the relevance floor, at most `limit`")
    mode: Literal["hybrid", "text", "vector"]
    degraded_reason: str | None = None
    model: str | None = None
    coverage: Coverage | None
    weaker: list[SearchHit] = Field(
        default_factory=list,
        description="the best few matches below the relevance floor (some words only, or a distant vector "
        "neighbour), kept apart from `results`; together never more than `limit`",
    )
