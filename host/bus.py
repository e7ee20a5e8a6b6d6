"""NATS JetStream connection and the `feedeater_bus` stream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection
from urllib.parse import urlsplit

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from host.backoff import Backoff
from host.errors import UserError
from host.events import STREAM, STREAM_SUBJECTS
from host.redact import redact

log = logging.getLogger("feedeater.bus")

STREAM_MAX_AGE_S = 30 * 24 * 3600
# JetStream drops a repeated Nats-Msg-Id inside this window: it must outlast any outage between
# "published" and "marked published" in the outbox (a crash, a restart).
DUPLICATE_WINDOW_S = 24 * 3600


async def connect(url: str, *, name: str = "feedeater", connect_timeout: float = 5) -> Client:
    """Connect, reconnecting forever once connected; a clear error if the first connection fails."""

    async def _quiet(_exc: Exception) -> None:  # nats-py logs to stderr without a callback
        log.debug("nats: %s", _exc)

    if not await _any_reachable(url, connect_timeout):
        raise UserError(
            f"cannot connect to NATS at {redact(url)}: no server answered",
            "check FEEDEATER_NATS_URL, or unset it to use the embedded nats-server",
        )
    try:
        return await nats.connect(
            url,
            name=name,
            connect_timeout=connect_timeout,
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            allow_reconnect=True,
            error_cb=_quiet,
        )
    except Exception as exc:
        raise UserError(
            f"cannot connect to NATS at {redact(url)}: {exc or type(exc).__name__}",
            "check FEEDEATER_NATS_URL, or unset it to use the embedded nats-server",
        ) from None


async def _any_reachable(url: str, timeout: float) -> bool:
    """TCP pre-check: nats-py retries an unreachable first server forever when reconnects are allowed."""
    for server in url.split(","):
        parsed = urlsplit(server.strip() if "://" in server else f"nats://{server.strip()}")
        try:
            _reader, writer = await asyncio.wait_for(
                asyncio.open_connection(parsed.hostname, parsed.port or 4222), timeout
            )
        except (OSError, TimeoutError):
            continue
        writer.close()
        return True
    return False


def covered(subject: str, patterns: Collection[str]) -> bool:
    """Whether a literal subject matches one of the NATS patterns (`*` one token, `>` the rest)."""
    tokens = subject.split(".")
    for pattern in patterns:
        parts = pattern.split(".")
        for i, part in enumerate(parts):
            if part == ">":
                if len(tokens) > i:
                    return True
                break
            if i >= len(tokens) or (part != "*" and part != tokens[i]):
                break
        else:
            if len(parts) == len(tokens):
                return True
    return False


async def ensure_stream(js: JetStreamContext, extra_subjects: Collection[str] = ()) -> None:
    """Create or widen the stream so it captures message and context events (upstream kept only messages)
    and every other event a module declares (`extra_subjects`). Subjects are only ever added."""
    wanted = set(STREAM_SUBJECTS) | {s for s in extra_subjects if not covered(s, STREAM_SUBJECTS)}
    config = StreamConfig(
        name=STREAM,
        subjects=sorted(wanted),
        storage=StorageType.FILE,
        max_age=STREAM_MAX_AGE_S,
        duplicate_window=DUPLICATE_WINDOW_S,
    )
    try:
        info = await js.stream_info(STREAM)
    except NotFoundError:
        await js.add_stream(config)
        return
    existing = set(info.config.subjects or [])
    wanted = {s for s in wanted if s in existing or not covered(s, existing)}
    if not wanted <= existing or (info.config.duplicate_window or 0) < DUPLICATE_WINDOW_S:
        config.subjects = sorted(existing | wanted)
        await js.update_stream(config)


class BusLink:
    """The host's NATS connection, made in the background so `feedeater run` starts and ingests while
    NATS is unreachable: events wait in the outbox and bus users start once `attached` is set."""

    def __init__(
        self, url: str, *, name: str, prepare: Callable[[JetStreamContext], Awaitable[None]]
    ) -> None:
        self.url = url
        self.name = name
        self.prepare = prepare  # streams to create once connected
        self.nc: Client | None = None
        self.js: JetStreamContext | None = None
        self.attached = asyncio.Event()
        self.problem = "not connected yet"

    async def attach(self, stop: asyncio.Event, *, max_delay: float = 30.0) -> bool:
        """Connect with growing pauses until connected (True) or `stop` (False); nats-py reconnects after."""
        backoff, attempts = Backoff(0.5, max_delay), 0
        while not stop.is_set():
            nc: Client | None = None
            try:
                nc = await connect(self.url, name=self.name)
                js = nc.jetstream()
                await self.prepare(js)
            except Exception as exc:
                self.problem = str(exc) or type(exc).__name__
                if nc is not None:
                    with contextlib.suppress(Exception):
                        await nc.close()
            else:
                self.nc, self.js = nc, js
                self.attached.set()
                log.info("attached to NATS at %s", redact(self.url))
                return True
            attempts += 1
            delay = backoff.delay(attempts)
            log.warning(
                "NATS not available (%s); events wait in the outbox; retrying in %.1fs", self.problem, delay
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
        return False

    def trouble(self) -> str | None:
        """Why the bus is not usable right now, or None when it is."""
        if self.nc is None:
            return f"NATS not attached: {self.problem}"
        if not self.nc.is_connected:
            return "NATS connection lost: reconnecting; events wait in the outbox"
        return None
