"""The callback (mounted at /websub/{token}): hubs verify our intent with GET and push content with POST.

GET echoes `hub.challenge` only for a topic and mode we asked for (else 404). POST stores content only
with a valid X-Hub-Signature over the raw body; a missing or wrong signature is acknowledged (2xx, as
WebSub §8 requires, so the hub does not retry it) and dropped.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from host.module import ModuleContext
from modules.rss.store import websub as subs
from modules.rss.websub import lease, push, signature

log = logging.getLogger("feedeater.rss.websub")

Verdict = Literal["subscribe", "unsubscribe", "denied", "refuse"]


def verdict(sub: subs.Subscription | None, mode: str | None, topic: str | None) -> Verdict:
    """What a verification request may confirm (pure): only what we asked this hub for, on this topic."""
    if sub is None or topic != sub.topic:
        return "refuse"
    if mode in ("subscribe", "denied") and sub.state in ("pending", "active") and sub.feed_id is not None:
        return mode  # type: ignore[return-value]
    if mode == "unsubscribe" and sub.state == "unsubscribing":
        return "unsubscribe"
    return "refuse"


async def build(ctx: ModuleContext) -> APIRouter:
    router = APIRouter(include_in_schema=False)  # the WebSub protocol, not part of the REST API
    max_bytes = int(ctx.settings["max_body_bytes"])

    @router.get("/{token}", summary="WebSub intent verification", response_class=PlainTextResponse)
    async def verify(token: str, request: Request) -> Response:
        q = request.query_params
        now = datetime.now(UTC)
        async with ctx.pool.acquire() as conn, conn.transaction():
            sub = await subs.by_token(conn, token)
            decided = verdict(sub, q.get("hub.mode"), q.get("hub.topic"))
            if decided == "refuse" or sub is None:
                return PlainTextResponse("unknown subscription", status_code=404)
            if decided == "denied":
                log.warning(
                    "feed %s: hub %s denied the subscription: %s", sub.feed_id, sub.hub, q.get("hub.reason")
                )
                await subs.failed(conn, sub.id, f"denied by the hub: {q.get('hub.reason') or 'no reason'}")
                return PlainTextResponse("ok")
            if decided == "unsubscribe":
                await subs.delete(conn, sub.id)
            else:
                lease_s = _lease(q.get("hub.lease_seconds"), int(ctx.settings["websub_lease_seconds"]))
                await subs.verified(
                    conn, sub.id, now=now, lease_s=lease_s, renew_at=lease.renew_at(now, lease_s)
                )
                log.info(
                    "feed %s: WebSub subscription at %s verified (lease %d s)", sub.feed_id, sub.hub, lease_s
                )
        return PlainTextResponse(q.get("hub.challenge") or "")

    @router.post("/{token}", summary="WebSub content distribution", status_code=202)
    async def receive(token: str, request: Request) -> Response:
        async with ctx.pool.acquire() as conn:
            sub = await subs.by_token(conn, token)
        # The callback's token first: a body for no subscription is never read.
        if sub is None:
            return PlainTextResponse("unknown subscription", status_code=404)
        if sub.state != "active" or sub.feed_id is None:
            return PlainTextResponse("subscription not active", status_code=410)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_bytes:
                return PlainTextResponse("too large", status_code=413)
        if not signature.valid(request.headers.get("x-hub-signature"), sub.secret, bytes(body)):
            async with ctx.pool.acquire() as conn:
                await subs.record_push(conn, sub.id, accepted=False)
            log.warning("feed %s: push from %s ignored: missing or wrong signature", sub.feed_id, sub.hub)
            return PlainTextResponse("ignored: invalid signature", status_code=202)
        new = await push.deliver(
            ctx, sub, sub.feed_id, bytes(body), request.headers.get("content-type"), datetime.now(UTC)
        )
        return PlainTextResponse(f"accepted: {new} new", status_code=202)

    return router


def _lease(granted: str | None, asked: int) -> int:
    """The hub's granted lease (it may differ from ours); without a usable one, what we asked for."""
    return int(granted) if granted and granted.isdigit() and int(granted) > 0 else asked
