"""What the /feed commands answer (pure): access checks, error lines and reply texts.

The bot (bot.py) does the I/O and calls these, so every reply a user can see is tested without Discord.
Replies are ephemeral and one line per error; Discord caps message content at 2000 characters.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from discord.utils import escape_markdown

from host.errors import UserError
from modules.discord.format import cut, when

CONTENT_MAX = 2000
MANAGED = frozenset({"add", "remove", "config"})  # the subcommands that need the manager role
PREVIEW_ITEMS = 3  # "/feed add" posts this many recent items
INTERNAL_ERROR = "Something went wrong on our side; the bot's log has the details."


class CommandError(Exception):
    """A refusal the user can act on; its text is the whole (ephemeral) reply."""


def require_manager(command: str, role_names: Collection[str], manager_role: str) -> None:
    if command in MANAGED and manager_role not in role_names:
        raise CommandError(f"You need the **{escape_markdown(manager_role)}** role to use /feed {command}.")


def require_post_permissions(channel_id: int, missing: Collection[str]) -> None:
    """`missing`: permission names the bot lacks in the target channel (empty when it may post)."""
    if missing:
        names = " and ".join(sorted(missing))
        raise CommandError(f"I can't post in <#{channel_id}>: I need the {names} permission there.")


def error_line(exc: UserError) -> str:
    """A UserError from the rss module (bad URL, not a feed, several feeds on a page) as one reply."""
    text = " ".join(str(exc).split())
    return cut(f"Can't use that feed: {text}", CONTENT_MAX)


def unknown_id(sub_id: int) -> str:
    return f"There is no feed with ID {sub_id} in this server; /feed list shows the IDs."


def name(title: str, url: str) -> str:
    return escape_markdown(cut(title or url, 200))


def added(title: str, sub_id: int, created: bool) -> str:
    return f"Feed {'added' if created else 'already here, resumed'}: **{title}** (ID: {sub_id})"


def removed(title: str, sub_id: int) -> str:
    return f"Removed feed **{escape_markdown(title)}** (ID: {sub_id})"


def interval(seconds: float | None) -> str:
    if not seconds:
        return "not scheduled yet"
    minutes = round(seconds / 60)
    return f"every {minutes} min" if minutes < 120 else f"every {minutes / 60:.1f} h"


@dataclass(frozen=True, slots=True)
class Listed:
    id: int
    name: str
    channel_id: int
    last_polled_at: datetime | None
    interval_s: float | None
    paused_reason: str | None = None
    dead: bool | None = False

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Listed:
        return cls(**{k: row[k] for k in cls.__slots__})


def listing(rows: Iterable[Listed], now: datetime) -> str:
    """`/feed list`: ID, name, channel, last polled, interval, one line each (cut to Discord's limit)."""
    lines = []
    for r in rows:
        polled = f"polled {when(r.last_polled_at, now)}" if r.last_polled_at else "not polled yet"
        state = f" · paused: {r.paused_reason}" if r.paused_reason else " · gone (410)" if r.dead else ""
        lines.append(
            f"`{r.id}` **{escape_markdown(r.name)}** → <#{r.channel_id}> · {polled} · "
            f"{interval(r.interval_s)}{state}"
        )
    if not lines:
        return "No feeds in this server yet; a Feed Manager can add one with /feed add."
    text = "\n".join(lines)
    if len(text) <= CONTENT_MAX:
        return text
    shown = text[: CONTENT_MAX - 40].rsplit("\n", 1)[0]
    return f"{shown}\n… and {len(lines) - shown.count(chr(10)) - 1} more"


def uptime(delta: timedelta) -> str:
    total = int(delta.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days}d {hours}h {rest // 60}m"


def config(total: int, failing: int, up: timedelta) -> str:
    return f"Feeds: {total} · in error: {failing} · uptime: {uptime(up)}"


def preview_empty(title: str) -> str:
    return f"**{escape_markdown(title)}** is a valid feed but has no items yet."
