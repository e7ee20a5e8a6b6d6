"""Request bodies and answers of the REST API alone (the shapes every front door shares are in
modules/rss/service/models.py): writes come in as `FeedCreate` / `FeedPatch` / `EntryStatePatch` and
leave through the service the CLI uses."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from host.web.models import NO_NUL, ApiError
from modules.rss.service.models import EntrySummary
from modules.rss.store.feeds import EDITABLE_BOUNDS

__all__ = ["NO_NUL", "ApiError", "EntryPage", "EntryStatePatch", "FeedCreate", "FeedPatch", "RawFetch"]

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
