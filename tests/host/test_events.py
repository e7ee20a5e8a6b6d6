"""The FeedEater wire format (pure)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from host.events import context_updated, iso_z, stable_uuid, truncate_utf16, utf16_len


def test_iso_z_is_utc_with_z_and_milliseconds() -> None:
    dt = datetime(2026, 3, 4, 5, 6, 7, 891234, tzinfo=timezone(timedelta(hours=2)))
    assert iso_z(dt) == "2026-03-04T03:06:07.891Z"
    with pytest.raises(ValueError):
        iso_z(datetime(2026, 1, 1))


def test_stable_uuid_is_deterministic_uuid5() -> None:
    a = stable_uuid("rss", "1", "guid")
    assert a == stable_uuid("rss", "1", "guid")
    assert a != stable_uuid("rss", "2", "guid")
    assert a.version == 5
    assert stable_uuid("a", "bc") != stable_uuid("ab", "c")  # parts are separated


def test_summary_short_counts_utf16_units_like_upstream() -> None:
    text = "😀" * 100  # 200 UTF-16 units, 100 code points
    cut = truncate_utf16(text)
    assert utf16_len(cut) <= 128
    assert cut.endswith("…")
    assert truncate_utf16("short") == "short"


def test_context_updated_envelope() -> None:
    mid = uuid.uuid4()
    ev = context_updated(
        "rss",
        source_key="feed:3",
        summary_short="x" * 300,
        summary_long="long",
        key_points=["a"],
        version=2,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        message_id=mid,
    )
    body = json.loads(ev.encode())
    assert ev.subject == "feedeater.rss.contextUpdated"
    assert body["type"] == "ContextUpdated" and body["messageId"] == str(mid)
    assert body["createdAt"] == "2026-01-01T00:00:00.000Z"
    assert body["context"]["ownerModule"] == "rss" and body["context"]["sourceKey"] == "feed:3"
    assert utf16_len(body["context"]["summaryShort"]) <= 128
    assert body["context"]["keyPoints"] == ["a"]
    v3 = context_updated(
        "rss",
        source_key="feed:3",
        summary_short="",
        summary_long="",
        key_points=[],
        version=3,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert v3.event_id != ev.event_id and "messageId" not in v3.payload


def test_subject_problems_are_named() -> None:
    from host.events import subject_problem

    assert subject_problem("feedeater.>") is None and subject_problem("feedeater.*.messageCreated") is None
    assert subject_problem("foo bar") == "it contains a space"
    assert (
        subject_problem("feedeater..x")
        == subject_problem("feedeater.")
        == ("it has an empty token (two dots, or a dot at either end)")
    )
    assert subject_problem("feedeater.>.x") is not None and subject_problem("feedeater.rss*") is not None
