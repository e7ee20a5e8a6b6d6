"""What features plug into a poll after its fetch: the after-fetch hooks (WebSub, RFC 5005 backfill).

A feature declares one `Hook` (websub/hook.py, backfill/hook.py) and the module lists them in
`modules/rss/pipeline.py`; they are loaded by name on first use, so ingest imports no feature and a new
feature plugs in without touching poll.py.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from host.module import ModuleContext
from modules.rss import pipeline
from modules.rss.model import Feed
from modules.rss.store import FeedRow


@dataclass(frozen=True, slots=True)
class Fetched:
    """A poll's parsed 200 as its hooks see it."""

    feed: FeedRow
    parsed: Feed
    url: str  # where the document came from (after redirects)
    headers: dict[str, str]
    now: datetime


@dataclass(frozen=True, slots=True)
class Push:
    """A push channel's say in a feed's schedule: while its subscription lasts, polls are safety checks."""

    enabled: Callable[[ModuleContext], bool]
    until: Callable[[asyncpg.Connection, int, datetime], Awaitable[datetime | None]]  # None: not active


@dataclass(frozen=True, slots=True)
class Hook:
    """A feature's part in a poll; every part is optional."""

    name: str
    stored: Callable[[ModuleContext, asyncpg.Connection, Fetched], Awaitable[None]] | None = None
    """In the poll's transaction, after its entries (rows that must commit with them)."""
    committed: Callable[[ModuleContext, Fetched], Awaitable[object]] | None = None
    """After the commit (talking to other servers: never inside a transaction)."""
    push: Push | None = None


@functools.cache
def registered() -> tuple[Hook, ...]:
    """The module's poll hooks, in `POLL_HOOKS` order (imported once, at the first poll)."""
    hooks = tuple(importlib.import_module(f"modules.rss.{name}").HOOK for name in pipeline.POLL_HOOKS)
    assert all(isinstance(h, Hook) for h in hooks), pipeline.POLL_HOOKS
    return hooks


def push(ctx: ModuleContext) -> Push | None:
    """The push channel that is on for this module's settings, if any."""
    return next((h.push for h in registered() if h.push is not None and h.push.enabled(ctx)), None)
