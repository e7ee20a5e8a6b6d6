"""NATS JetStream connection and the `feedeater_bus` stream."""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urlsplit

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from host.errors import UserError
from host.events import STREAM, STREAM_SUBJECTS

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
            f"cannot connect to NATS at {url}: no server answered",
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
            f"cannot connect to NATS at {url}: {exc or type(exc).__name__}",
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


async def ensure_stream(js: JetStreamContext) -> None:
    """Create or widen the stream so it captures message and context events (upstream kept only messages)."""
    config = StreamConfig(
        name=STREAM,
        subjects=list(STREAM_SUBJECTS),
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
    if not set(STREAM_SUBJECTS) <= existing or (info.config.duplicate_window or 0) < DUPLICATE_WINDOW_S:
        config.subjects = sorted(existing | set(STREAM_SUBJECTS))
        await js.update_stream(config)
