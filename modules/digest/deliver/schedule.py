"""Which scheduled digests are due (pure). Times and the time zone are settings, so one 5-minute job
checks the schedule instead of a crontab per type."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from host.errors import UserError
from modules.digest.settings import TYPES, WEEKDAYS, clock


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UserError(
            f"unknown time zone digest.timezone={name!r}", "use an IANA name such as Europe/Berlin"
        ) from None


def scheduled_types(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in TYPES:
            raise UserError(f"unknown digest type {n!r} in digest.schedule", f"use: {', '.join(TYPES)}")
    return names


def last_slot(kind: str, now: datetime, settings: Mapping[str, object]) -> datetime:
    """The most recent scheduled time of `kind` at or before `now` (aware, UTC)."""
    tz = zone(str(settings["timezone"]))
    hour, minute = clock(str(settings[f"{kind}_time"]), f"{kind}_time")
    local = now.astimezone(tz)
    slot = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if kind == "weekly":
        slot -= timedelta(days=(local.weekday() - WEEKDAYS.index(str(settings["weekly_day"]))) % 7)
        step = timedelta(days=7)
    else:
        step = timedelta(days=1)
    if slot > local:
        slot -= step
    return slot.astimezone(ZoneInfo("UTC"))


def due(
    now: datetime, settings: Mapping[str, object], built: Mapping[str, datetime]
) -> list[tuple[str, datetime]]:
    """(type, slot) for each scheduled type whose latest slot has no digest yet."""
    out = []
    for kind in scheduled_types(str(settings["schedule"])):
        slot = last_slot(kind, now, settings)
        if built.get(kind) is None or built[kind] < slot:
            out.append((kind, slot))
    return out
