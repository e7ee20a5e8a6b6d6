"""Subscribing, renewing and unsubscribing: discovery and lease decisions applied to storage and the hub.

Requests happen outside transactions; the pending row is committed first, because the hub may call
the callback before its answer to our POST arrives.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

from host.module import ModuleContext
from host.net.fetcher import Fetcher
from modules.rss.store import websub as subs
from modules.rss.websub import client, lease
from modules.rss.websub.discover import Push, discover, secure_hubs

log = logging.getLogger("feedeater.rss.websub")


def enabled(ctx: ModuleContext) -> bool:
    return bool(str(ctx.settings["websub_callback_base"]).strip())


async def after_fetch(
    ctx: ModuleContext,
    feed_id: int,
    *,
    links: Iterable[tuple[str, str]],
    headers: Mapping[str, str],
    url: str,
    now: datetime,
) -> str | None:
    """After a poll parsed a document: subscribe at its hub when it names one and we are not subscribed.
    Returns "requested", "refused" or None (nothing to do)."""
    if not enabled(ctx):
        return None
    found = discover(links, headers, url)
    push = secure_hubs(found, allow_http=_http_hubs(ctx)) if found is not None else None
    if push is None:
        return None
    async with ctx.pool.acquire() as conn:
        known = await subs.current(conn, feed_id)
        retry_s = float(ctx.settings["websub_retry_hours"]) * 3600
        if not lease.should_subscribe(known, push, now=now, retry_after_s=retry_s):
            return None
        token = secrets.token_urlsafe(24)
        sub = await subs.request(
            conn,
            feed_id=feed_id,
            hub=push.hubs[0],
            topic=push.topic,
            callback=client.callback_url(str(ctx.settings["websub_callback_base"]), token),
            secret=secrets.token_urlsafe(32),
            token=token,
        )
    return "requested" if await send(ctx, sub) else "refused"


async def send(ctx: ModuleContext, sub: subs.Subscription) -> bool:
    """(Re)subscribe; a refusal marks the subscription failed (polling goes on as before)."""
    reply = await _ask_subscribe(ctx, sub)
    if reply.accepted:
        log.info(
            "feed %s: subscribed at hub %s for %s (awaiting verification)", sub.feed_id, sub.hub, sub.topic
        )
        return True
    log.warning("feed %s: WebSub hub %s refused: %s; polling as usual", sub.feed_id, sub.hub, reply.error)
    async with ctx.pool.acquire() as conn:
        await subs.failed(conn, sub.id, reply.error)
    return False


async def renew(ctx: ModuleContext, sub: subs.Subscription, now: datetime) -> bool:
    """Ask the hub to extend a lease; the old lease stands until it verifies (or lapses)."""
    reply = await _ask_subscribe(ctx, sub)
    retry_at = now + timedelta(seconds=float(ctx.settings["websub_verify_timeout_seconds"]))
    async with ctx.pool.acquire() as conn:
        await subs.renew_requested(
            conn, sub.id, retry_at=retry_at, error=None if reply.accepted else reply.error
        )
    if not reply.accepted:
        log.warning("feed %s: WebSub renewal at %s refused: %s", sub.feed_id, sub.hub, reply.error)
    return reply.accepted


async def unsubscribe(ctx: ModuleContext, pending: Iterable[subs.Subscription]) -> int:
    """Tell hubs we no longer want these topics (their rows wait for the hub's check at the callback)."""
    sent = 0
    for sub in pending:
        reply = await client.ask(
            _fetcher(ctx),
            sub.hub,
            mode="unsubscribe",
            topic=sub.topic,
            callback=sub.callback,
        )
        if reply.accepted:
            sent += 1
        else:
            log.warning("WebSub unsubscribe at %s for %s: %s", sub.hub, sub.topic, reply.error)
            async with ctx.pool.acquire() as conn:
                await subs.delete(conn, sub.id)
    return sent


async def _ask_subscribe(ctx: ModuleContext, sub: subs.Subscription) -> client.HubReply:
    if secure_hubs(Push((sub.hub,), sub.topic), allow_http=_http_hubs(ctx)) is None:
        # Stored before https was required, or the setting was turned off since: never send the secret.
        return client.HubReply(
            False, 0, "the hub is not https: hub.secret is sent only over https (WebSub §5.1)"
        )
    return await client.ask(
        _fetcher(ctx),
        sub.hub,
        mode="subscribe",
        topic=sub.topic,
        callback=sub.callback,
        secret=sub.secret,
        lease_s=int(ctx.settings["websub_lease_seconds"]),
    )


def _http_hubs(ctx: ModuleContext) -> bool:
    return bool(ctx.settings["websub_http_hubs"])


def _fetcher(ctx: ModuleContext) -> Fetcher:
    fetcher: Fetcher = ctx.state["fetcher"]
    return fetcher
