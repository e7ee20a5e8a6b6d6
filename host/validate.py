"""Checks of setting values beyond their type (pure): each returns why a value is refused, or None.

A manifest attaches them as `Setting(check=...)`; `host.settings.coerce` runs them whenever a value is
set (CLI, console) or read (stored, environment), so a bad time zone is refused by `settings set`, not
discovered hours later by the job that needs it. Cheap imports only: every command builds the manifests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

Check = Callable[[Any], "str | None"]
_TIME_OF_DAY = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def url(*schemes: str, empty: bool = False) -> Check:
    """An absolute URL with one of `schemes` (default http, https) and a host; `empty` allows ""."""
    allowed = schemes or ("http", "https")

    def check(value: Any) -> str | None:
        text = str(value).strip()
        if not text:
            return None if empty else "must not be empty: give a URL"
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 (raises ValueError for a port out of range)
        except ValueError:
            return f"{text!r} is not a URL"
        if parts.scheme.lower() not in allowed or not parts.hostname:
            return f"{text!r} is not a {' or '.join(allowed)} URL (e.g. {allowed[0]}://localhost:8080/)"
        if any(c.isspace() for c in text):
            return f"{text!r} contains spaces"
        return None

    return check


def time_zone(value: Any) -> str | None:
    """An IANA time zone name (`Europe/Berlin`, `UTC`)."""
    text = str(value).strip()
    if not text:
        return "must not be empty: give an IANA time zone such as Europe/Berlin or UTC"
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        return f"{text!r} is not an IANA time zone (e.g. Europe/Berlin or UTC)"
    return None


def time_of_day(value: Any) -> str | None:
    """`HH:MM`, 00:00 to 23:59."""
    if _TIME_OF_DAY.match(str(value).strip()) is None:
        return f"{value!r} is not a time of day: use HH:MM from 00:00 to 23:59, e.g. 07:00"
    return None


def names(allowed: Collection[str]) -> Check:
    """A comma-separated list of names from `allowed` (empty = none)."""

    def check(value: Any) -> str | None:
        unknown = [n for n in (p.strip() for p in str(value).split(",")) if n and n not in allowed]
        if unknown:
            return (
                f"unknown {', '.join(repr(n) for n in unknown)}: use {', '.join(allowed)} (comma-separated)"
            )
        return None

    return check


def not_blank(value: Any) -> str | None:
    return "must not be empty" if not str(value).strip() else None
