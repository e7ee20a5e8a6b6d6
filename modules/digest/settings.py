"""Digest types, their windows and sizing limits, the module's settings, and parsing of user input (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta

from host import validate
from host.errors import UserError
from host.module import Setting


@dataclass(frozen=True, slots=True)
class DigestType:
    name: str
    title: str
    window: timedelta
    top: int  # sizing limits per section (step 6)
    noteworthy: int
    also: int


TYPES = {
    t.name: t
    for t in (
        DigestType("morning", "Morning Brief", timedelta(hours=24), 15, 10, 10),
        DigestType("midday", "Midday Update", timedelta(hours=6), 10, 5, 5),
        DigestType("evening", "Evening Recap", timedelta(hours=12), 15, 10, 10),
        DigestType("weekly", "Weekly Roundup", timedelta(days=7), 30, 15, 15),
    )
}
FORMATS = ("md", "html", "json")
_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([hdw])\s*$", re.IGNORECASE)
_TIME = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def digest_type(name: str) -> DigestType:
    if name not in TYPES:
        raise UserError(f"unknown digest type {name!r}", f"use one of: {', '.join(TYPES)}")
    return TYPES[name]


def window(text: str) -> timedelta:
    """'24h', '3d', '1w' → timedelta (1 hour to 31 days)."""
    m = _WINDOW.match(text)
    if not m:
        raise UserError(f"cannot read window {text!r}", "give hours, days or weeks, e.g. 24h, 3d, 1w")
    value = float(m[1]) * {"h": 1, "d": 24, "w": 168}[m[2].lower()]
    if not 1 <= value <= 744:
        raise UserError(f"window {text!r} is out of range", "use 1h to 31d")
    return timedelta(hours=value)


def clock(text: str, key: str) -> tuple[int, int]:
    m = _TIME.match(text.strip())
    if not m:
        raise UserError(f"digest.{key}={text!r} is not a time of day", "use HH:MM, e.g. 07:00")
    return int(m[1]), int(m[2])


SETTINGS = (
    Setting(
        "timezone",
        "str",
        "UTC",
        "IANA time zone of the digest schedule, e.g. Europe/Berlin",
        check=validate.time_zone,
    ),
    Setting(
        "schedule",
        "str",
        "morning",
        "digest types built on schedule, comma-separated (morning, midday, evening, weekly); empty = none",
        check=validate.names(TYPES),
    ),
    Setting("morning_time", "str", "07:00", "local time of the morning brief", check=validate.time_of_day),
    Setting("midday_time", "str", "12:30", "local time of the midday update", check=validate.time_of_day),
    Setting("evening_time", "str", "18:00", "local time of the evening recap", check=validate.time_of_day),
    Setting("weekly_time", "str", "08:00", "local time of the weekly roundup", check=validate.time_of_day),
    Setting("weekly_day", "choice", "mon", "weekday of the weekly roundup", choices=WEEKDAYS),
    Setting(
        "interests", "str", "", "interest profile: comma-separated keywords (empty = neutral relevance 50)"
    ),
    Setting("min_importance", "float", 15.0, "articles below this importance are left out", min=0, max=100),
    Setting(
        "ai_summaries", "bool", True, "use the host's summarizer for top-story summaries when configured"
    ),
)
