"""Which scheduled digests are due (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from host.errors import UserError
from modules.digest.deliver import schedule
from modules.digest.settings import SETTINGS

DEFAULTS = {s.key: s.default for s in SETTINGS}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_latest_slot_in_the_configured_time_zone() -> None:
    s = {**DEFAULTS, "timezone": "Europe/Berlin", "morning_time": "07:00"}
    assert schedule.last_slot("morning", at("2026-11-26T06:30"), s) == at("2026-11-26T06:00")
    assert schedule.last_slot("morning", at("2026-11-26T05:59"), s) == at("2026-11-25T06:00")
    weekly = {**DEFAULTS, "weekly_day": "mon", "weekly_time": "08:00"}
    assert schedule.last_slot("weekly", at("2026-11-26T12:00"), weekly) == at(
        "2026-11-23T08:00"
    )  # a Thursday


def test_due_until_built_for_that_slot() -> None:
    s = {**DEFAULTS, "schedule": "morning, evening"}
    now = at("2026-11-26T09:00")
    assert schedule.due(now, s, {}) == [
        ("morning", at("2026-11-26T07:00")),
        ("evening", at("2026-11-25T18:00")),
    ]
    built = {"morning": at("2026-11-26T07:00"), "evening": at("2026-11-25T18:00")}
    assert schedule.due(now, s, built) == []
    assert schedule.due(now, {**DEFAULTS, "schedule": ""}, {}) == []


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"schedule": "morning,hourly"}, "unknown digest type 'hourly'"),
        ({"timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"morning_time": "7am"}, "is not a time of day"),
    ],
)
def test_bad_schedule_settings_are_one_line(settings: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        schedule.due(at("2026-11-26T09:00"), {**DEFAULTS, **settings}, {})
