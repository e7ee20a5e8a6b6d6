"""The API's pure parts: cursors, PATCH semantics, validation messages."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host.web.errors import describe_validation
from modules.rss.api.models import FeedPatch
from modules.rss.service import cursor


@given(
    at=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)),
    entry_id=st.integers(min_value=1, max_value=2**63 - 1),
)
def test_a_cursor_names_exactly_its_position(at: datetime, entry_id: int) -> None:
    assert cursor.decode(cursor.encode(at, entry_id)) == (at, entry_id)  # to the microsecond


@pytest.mark.parametrize("bad", ["", "x", "!!!", "MTIz", "LTEuMA", "MS4w", "bm90LmFuLmlk"])
def test_anything_else_is_a_bad_cursor(bad: str) -> None:
    with pytest.raises(cursor.BadCursor):
        cursor.decode(bad)


def test_patch_changes_only_what_was_sent() -> None:
    assert FeedPatch.model_validate({"title": "T"}).changes() == {"title": "T"}
    assert FeedPatch.model_validate({"interval_minutes": 1.5, "folder": "/a/b/"}).changes() == {
        "interval": 90,
        "folder": "a/b",
    }
    reset = FeedPatch.model_validate({"interval_minutes": None, "retention_days": None, "folder": None})
    assert reset.changes() == {"interval": None, "retention": None, "folder": None}
    assert FeedPatch.model_validate({"enabled": None, "title": None}).changes() == {}


def test_validation_errors_read_as_one_line() -> None:
    errors = [
        {"loc": ("query", "limit"), "msg": "Input should be less than or equal to 1000"},
        {"loc": ("body",), "msg": "Field required"},
        {"loc": ("body", "url"), "msg": "too short"},
        {"loc": ("path", "feed_id"), "msg": "not an integer"},
    ]
    assert describe_validation(errors) == (
        "limit: Input should be less than or equal to 1000; body: Field required; url: too short (and 1 more)"
    )
