"""Search over NATS request/reply on `feedeater.rss.search`, for modules in other processes.

Protocol (docs/search.md): a JSON request `{"query", "feed"?, "folder"?, "since"?, "until"?, "limit"?}` gets a JSON
reply `{"results": [...], "mode", "degraded_reason"?, "model"?, "coverage"}`, or `{"error": "..."}` for a bad request
or a failed search. Declared as the module's `search` service (needs the bus). Every host running the rss module answers, in one queue group, so each request is
answered once and load spreads over the hosts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

import asyncpg
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from host.ai import AIServices
from host.errors import UserError, unavailable
from host.module import ModuleContext
from modules.rss.search.query import CoverageCache
from modules.rss.service.search import SUBJECT, search

log = logging.getLogger("feedeater.rss.search")

QUEUE = SUBJECT


async def answer(
    pool: asyncpg.Pool, ai: AIServices, data: bytes, coverage_cache: CoverageCache | None = None
) -> dict[str, Any]:
    """The reply to one request body: results, or one clear error."""
    try:
        request = json.loads(data)
    except ValueError:
        return {"error": 'the request is not JSON (send {"query": "words"})'}
    try:
        return (await search(pool, ai, request, coverage_cache=coverage_cache)).to_dict()
    except UserError as exc:  # a bad request, or e.g. a feed that does not exist
        return {"error": str(exc)}
    except Exception as exc:  # e.g. the database is down: the caller gets an answer, not a timeout
        if unavailable(exc):
            log.warning("search failed: %s: %s", type(exc).__name__, exc)
        else:
            log.exception("search failed")
        return {"error": f"search failed: {type(exc).__name__}: {exc}"}


async def start(ctx: ModuleContext) -> Subscription:
    """Serve search requests until the returned subscription is unsubscribed (or the connection drains)."""
    if ctx.nats is None:
        raise UserError("the search service needs the NATS connection", "open the host with the bus")
    nc = ctx.nats
    in_flight: set[asyncio.Task[None]] = set()
    coverage_cache = CoverageCache()

    async def reply(msg: Msg) -> None:
        body = await answer(ctx.pool, ctx.ai, msg.data, coverage_cache)
        if msg.reply:
            await nc.publish(msg.reply, json.dumps(body, ensure_ascii=False).encode())

    async def on_request(msg: Msg) -> None:
        # nats-py runs one callback at a time per subscription; a task per request lets searches overlap.
        task = asyncio.create_task(reply(msg))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)

    return await nc.subscribe(SUBJECT, queue=QUEUE, cb=on_request)


async def serve(ctx: ModuleContext) -> None:
    """The rss module's declared `search` service: answer until cancelled (nats-py resubscribes after
    a reconnect, so a NATS restart needs nothing from us)."""
    sub = await start(ctx)
    try:
        await asyncio.Event().wait()
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
