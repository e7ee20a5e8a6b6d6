"""WebSub's part in a poll: subscribe at the hub a document names, and let an active push subscription
stretch the poll schedule to safety checks (ingest/hooks.py)."""

from __future__ import annotations

from host.module import ModuleContext
from modules.rss.ingest.hooks import Fetched, Hook, Push
from modules.rss.store import websub as subs
from modules.rss.websub import subscribe


async def _committed(ctx: ModuleContext, fetched: Fetched) -> str | None:
    return await subscribe.after_fetch(
        ctx,
        fetched.feed.id,
        links=fetched.parsed.links,
        headers=fetched.headers,
        url=fetched.url,
        now=fetched.now,
    )


HOOK = Hook("websub", committed=_committed, push=Push(subscribe.enabled, subs.active_until))
