"""Build a digest (read the window, assemble off the event loop), store it and publish it in one
transaction: the row, its MessageCreated (via ctx.emit) and the `digest:<type>` context."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from host import contexts
from host.module import ModuleContext
from modules.digest.assemble import build as assemble
from modules.digest.assemble import health, render
from modules.digest.cluster.trends import Previous
from modules.digest.deliver import publish, schedule, summaries
from modules.digest.settings import TYPES, DigestType
from modules.digest.store import articles, digests, likes, sources


@dataclass(frozen=True, slots=True)
class Built:
    digest: assemble.Digest
    digest_id: str
    stored: bool  # False: this scheduled slot was already built (by another host)


def previous_topics(structured: dict[str, Any]) -> list[Previous]:
    return [
        Previous(i["label"], frozenset(i["terms"]), int(i["topic_size"])) for i in structured.get("items", [])
    ]


async def build(
    ctx: ModuleContext,
    kind: DigestType,
    *,
    window: timedelta | None = None,
    topics_k: int | None = None,
    end: datetime | None = None,
    scheduled: bool = False,
) -> Built:
    now = datetime.now(UTC)
    end = end or now
    start = end - (window or kind.window)
    async with ctx.pool.acquire() as conn:
        rows = await articles.window(conn, start, end)
        feeds = await sources.feed_health(conn)
        before = await digests.latest(conn, kind.name, before=end)
        liked = await likes.profile_texts(conn)
    for r in rows:
        feed = feeds.get(r["feed_id"]) if r["feed_id"] is not None else None
        r["health"] = feed["health"] if feed else None
    options = assemble.Options(
        kind=kind,
        start=start,
        end=end,
        now=end,
        topics_k=topics_k,
        interests=str(ctx.settings["interests"]),
        liked=liked,
        min_importance=float(ctx.settings["min_importance"]),
        previous=previous_topics(before["structured"]) if before else None,
    )
    digest = await asyncio.to_thread(assemble.build, rows, health.report(feeds.values()), options)
    if ctx.settings["ai_summaries"] and ctx.ai.summarizer is not None:
        await summaries.improve(digest, {r["id"]: r["body"] for r in rows}, ctx.ai.summarizer)
    markdown = render.markdown(digest)
    structured = json.loads(render.to_json(digest))
    did = publish.digest_id(kind.name, end, scheduled=scheduled)
    async with ctx.pool.acquire() as conn, conn.transaction():
        stored = await digests.insert(
            conn,
            digest_id=did,
            kind=kind.name,
            start=start,
            end=end,
            scheduled=scheduled,
            article_count=digest.article_count,
            duplicates_removed=digest.duplicates_removed,
            markdown=markdown,
            structured=structured,
        )
        if stored:
            msg = publish.message(did, kind.name, kind.title, now, markdown, structured)
            await ctx.emit(conn, publish.created_event(msg))
            top = digest.section("top")
            await contexts.update(
                conn,
                ctx.emit,
                module=publish.MODULE,
                source_key=publish.context_key(kind.name),
                summary_short=f"{kind.title}: {len(top)} top stories, {digest.article_count} articles",
                summary_long=markdown[:8000],
                key_points=[i.label for i in digest.items[:5]],
                message_id=did,
                meta={"digestId": str(did), "windowEnd": end.isoformat()},
                now=now,
            )
    return Built(digest, str(did), stored)


async def run_scheduled(ctx: ModuleContext) -> dict[str, Any]:
    """The 5-minute job: build every scheduled digest whose slot has passed and has no digest yet."""
    now = datetime.now(UTC)
    async with ctx.pool.acquire() as conn:
        built = await digests.last_scheduled(conn)
    made = []
    for kind, slot in schedule.due(now, ctx.settings, built):
        result = await build(ctx, TYPES[kind], end=slot, scheduled=True)
        made.append(f"{kind}:{result.digest_id[:8]}" + ("" if result.stored else " (already built)"))
    return {"built": len(made), "digests": made}
