"""robots.txt (RFC 9309) per origin, for every fetch that crawls rather than reads a feed: article pages
(enrich/fulltext.py) and the pages and guessed paths of feed autodiscovery (subscriptions/subscribe.py),
as seed 001 §4.7 asks. A 4xx robots.txt means no rules; a 5xx or an unreachable one means stay away for now.
"""

from __future__ import annotations

import asyncio
import time
import urllib.robotparser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from host.net.fetcher import Fetcher, FetchResult

ROBOTS_ACCEPT = "text/plain, */*;q=0.5"
UNREACHABLE_ROBOTS_TTL_S = 300.0  # a robots.txt that could not be read is asked for again this soon
_ROBOTS_CACHE_MAX = 4096  # origins remembered; expired ones are forgotten first


def origin(url: str) -> str:
    """scheme://host[:port], the scope of one robots.txt."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def robots_rules(res: FetchResult) -> urllib.robotparser.RobotFileParser | None:
    """RFC 9309: a 200 gives its rules, a 4xx means no rules (all allowed); None when unreachable (5xx, network)."""
    rules = urllib.robotparser.RobotFileParser()
    if res.status == 200 and res.body is not None:
        rules.parse(res.body.decode("utf-8", errors="replace").splitlines())
        return rules
    if 400 <= res.status < 500:
        rules.parse([])  # no rules: everything allowed
        return rules
    return None


Verdict = Literal["allowed", "disallowed", "unreachable", "blocked"]


@dataclass(slots=True)
class _Cached:
    task: asyncio.Task[tuple[urllib.robotparser.RobotFileParser | None, FetchResult]]
    fetched_at: float


class RobotsCache:
    """robots.txt per origin, fetched through the module's Fetcher and kept in memory for `ttl_s`.

    Concurrent checks for one origin share one fetch. An unreachable robots.txt is remembered only briefly.
    """

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        user_agent: str,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetcher = fetcher
        self._agent = user_agent
        self._ttl_s = ttl_s
        self._clock = clock
        self._cache: dict[str, _Cached] = {}

    def _expired(self, cached: _Cached, now: float) -> bool:
        if not cached.task.done():
            return False
        if cached.task.cancelled() or cached.task.exception() is not None:
            return True  # a crashed lookup is not remembered
        rules, _ = cached.task.result()
        return now - cached.fetched_at >= (self._ttl_s if rules is not None else UNREACHABLE_ROBOTS_TTL_S)

    async def _load(self, url: str) -> tuple[urllib.robotparser.RobotFileParser | None, FetchResult]:
        res = await self._fetcher.fetch(url, accept=ROBOTS_ACCEPT)
        return robots_rules(res), res

    async def check(self, url: str) -> tuple[Verdict, str | None]:
        """May `url` be fetched? With the reason when it may not."""
        key = origin(url)
        now = self._clock()
        cached = self._cache.get(key)
        if cached is None or self._expired(cached, now):
            if len(self._cache) >= _ROBOTS_CACHE_MAX:
                self._cache = {k: v for k, v in self._cache.items() if not self._expired(v, now)}
            cached = self._cache[key] = _Cached(asyncio.create_task(self._load(key + "/robots.txt")), now)
        rules, res = await asyncio.shield(cached.task)
        if rules is None:
            if res.error_kind == "blocked":
                return "blocked", res.error
            return "unreachable", f"robots.txt unreachable: {res.error or f'HTTP {res.status}'}"
        if rules.can_fetch(self._agent, url):
            return "allowed", None
        return "disallowed", "disallowed by robots.txt"
