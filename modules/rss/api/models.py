"""Typed shapes of the rss module's data, shared by the REST API, `feedeater rss ... --json` and the NATS
search service: one definition per shape, so the three never drift apart.

Rows from `modules.rss.store` validate straight into these models (`Feed.model_validate(row)`); writes
come in as `FeedCreate` / `FeedPatch` and leave through the same store functions the CLI uses.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from host.web.models import NO_NUL, ApiError, Context, ContextDetail
from modules.rss.store.feeds import EDITABLE_BOUNDS

__all__ = [
    "NO_NUL",
    "ApiError",
    "Context",
    "ContextDetail",
    "Coverage",
    "Enclosure",
    "Entry",
    "EntryPage",
    "EntrySummary",
    "Feed",
    "FeedCreate",
    "FeedPatch",
    "FetchSummary",
    "ItemExplanation",
    "OpmlImportResult",
    "RawFetch",
    "Refused",
    "SearchHit",
    "SearchResults",
]

FeedState = str  # "ok", "new", "disabled", "dead", "failing ×N", "forbidden ×N" (modules.rss.cli.feed_state)


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


# Request bodies are strict: "yes" is not a boolean, "5" not a number (the schema says what it takes).
STRICT = ConfigDict(extra="forbid", strict=True)


def _whole(value: Any) -> Any:
    """16.0 is an integer to JSON Schema (and to schemathesis): take it as 16; strings stay refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _bounded(key: str) -> Any:
    """An optional number within the bounds `rss set` enforces for this override."""
    low, high, unit = EDITABLE_BOUNDS[key]
    return Field(default=None, ge=low, le=high, description=f"{unit} ({low}–{high}); null: the default")


class FeedCreate(BaseModel):
    """Subscribe to a feed, or to a page that advertises one (validated by fetching it, as `rss add`)."""

    model_config = STRICT

    url: str = Field(min_length=1, max_length=2048, pattern=NO_NUL, examples=["https://example.org/feed.xml"])
    folder: str | None = Field(default=None, max_length=500, pattern=NO_NUL)
    interval_minutes: float | None = _bounded("interval")


class EntryStatePatch(BaseModel):
    """Reading state (`feedeater rss mark`): true sets it, false clears it, an absent field stays."""

    model_config = STRICT

    read: bool | None = None
    starred: bool | None = None


class FeedPatch(BaseModel):
    """Per-feed overrides (`feedeater rss set`). Absent fields stay; null resets interval, retention,
    lookback and folder to their defaults."""

    model_config = STRICT

    title: str | None = Field(default=None, max_length=1000, pattern=NO_NUL)
    folder: str | None = Field(default=None, max_length=500, pattern=NO_NUL)
    enabled: bool | None = None
    full_text: bool | None = None
    interval_minutes: float | None = _bounded("interval")
    retention_days: int | None = _bounded("retention")
    lookback_hours: int | None = _bounded("lookback")
    min_interval_minutes: float | None = _bounded("min_interval")
    max_interval_minutes: float | None = _bounded("max_interval")
    push_only: bool | None = None
    backfill: bool | None = None

    _whole_numbers = field_validator("retention_days", "lookback_hours", mode="before")(_whole)

    def changes(self) -> dict[str, Any]:
        """The `store.update_feed` changes (keys of store.EDITABLE) for the fields that were sent."""
        names = {
            "title": "title",
            "folder": "folder",
            "enabled": "enabled",
            "full_text": "full_text",
            "interval_minutes": "interval",
            "retention_days": "retention",
            "lookback_hours": "lookback",
            "min_interval_minutes": "min_interval",
            "max_interval_minutes": "max_interval",
            "push_only": "push_only",
            "backfill": "backfill",
        }
        out: dict[str, Any] = {}
        for field in self.model_fields_set:
            value = getattr(self, field)
            if value is None and field in ("title", "enabled", "full_text", "push_only", "backfill"):
                continue  # these have no default to reset to: null means "leave it"
            if field.endswith("interval_minutes") and value is not None:
                value = round(value * 60)
            if field == "folder":
                value = value.strip().strip("/") or None if value else None
            out[names[field]] = value
        return out


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


class EntryPage(BaseModel):
    """A page of entries, newest first; pass `next_cursor` back as `cursor` for the next page."""

    items: list[EntrySummary]
    next_cursor: str | None = Field(description="opaque; null on the last page")


class RawFetch(BaseModel):
    """A stored raw response: the exact headers and bytes a poll received, before parsing."""

    id: int
    feed_id: int
    url: str
    status: int
    fetched_at: datetime
    headers: dict[str, str]
    request_headers: dict[str, str] | None = Field(
        default=None, description="what the request sent (null for pushed documents and older fetches)"
    )
    body_sha256: str
    size: int
    parse_error: str | None
    body_base64: str = Field(description="the body exactly as received (GET /raw/{id}/body serves it raw)")


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
