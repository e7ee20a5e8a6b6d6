"""`feedeater search "words"` (hybrid search) and `feedeater rss reembed` (after an embedding model change)."""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING, Any

from modules.rss.enrich import embed
from modules.rss.search.query import parse_request, search

if TYPE_CHECKING:
    from host.runtime import Host


async def cmd_search(host: Host, args: argparse.Namespace) -> int:
    from host.cli import emit

    fields = {
        "query": args.query,
        "feed": args.feed,
        "folder": args.folder,
        "since": args.since,
        "limit": args.limit,
    }
    query = parse_request(
        {k: v for k, v in fields.items() if v is not None}
    )  # same rules as the NATS service
    await host.open(with_bus=False)
    ctx = await host.context("rss")
    response = await search(ctx.pool, ctx.ai, query)
    emit(args, response.to_dict(), _text)
    return 0


def _text(reply: dict[str, Any]) -> str:
    lines = []
    if reply.get("degraded_reason"):
        lines.append(f"(full text only: {reply['degraded_reason']})")
    for n, r in enumerate(reply["results"], start=1):
        when = f", {r['published'][:10]}" if r["published"] else ""
        lines.append(
            f"{n}. {r['title'] or '(untitled)'}  [{r['feed_title'] or r['feed_id']}{when}; {r['mode']}]"
        )
        lines += [f"   {part}" for part in (r["link"], r["snippet"]) if part]
    if not reply["results"]:
        lines.append("no matches")
    return "\n".join(lines)


async def cmd_reembed(host: Host, args: argparse.Namespace) -> int:
    """Queue every entry for embedding, then (unless --queue-only) embed them here, showing progress."""
    from host.cli import emit

    await host.open(with_bus=False)
    ctx = await host.context("rss")
    queued = await embed.mark_all_pending(ctx.pool)
    embedder = ctx.ai.embedder
    if embedder is None or args.queue_only:
        why = "no embedder is configured" if embedder is None else "--queue-only"
        emit(args, {"queued": queued, "embedded": 0}, lambda d: f"queued {d['queued']} entries ({why})")
        return 0
    started = time.monotonic()

    def progress(counts: Counter[str]) -> None:
        done = counts["embedded"] + counts["empty"] + counts["failed"]
        rate = counts["embedded"] / max(time.monotonic() - started, 1e-9)
        print(f"\rembedded {done}/{queued} ({rate:.1f}/s)", end="", file=sys.stderr, flush=True)

    counts = await embed.embed_pending(
        ctx.pool,
        embedder,
        batch_size=int(ctx.settings["embed_batch_size"]),
        max_chars=int(ctx.settings["embed_max_chars"]),
        run_seconds=float("inf"),
        progress=progress,
    )
    print(file=sys.stderr)
    left = (await embed.backlog(ctx.pool))["pending"]
    data = {"queued": queued, "model": embedder.model, **counts, "pending": left}
    emit(
        args,
        data,
        lambda d: (
            f"re-embedded {d.get('embedded', 0)} of {d['queued']} entries with {d['model']}"
            + (f"; {d['pending']} left to the embed job (provider failing)" if d["pending"] else "")
        ),
    )
    return 1 if left else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the top-level `feedeater search` command."""
    p = sub.add_parser("search", help="search entries: semantic + full text (hybrid)")
    p.add_argument("query", help='words, "a phrase", or -excluded')
    p.add_argument("--feed", type=int, default=None, help="only this feed id")
    p.add_argument("--folder", default=None, help="only feeds in this folder (and its subfolders)")
    p.add_argument("--since", default=None, help="only entries from this date on (ISO 8601)")
    p.add_argument("--limit", type=int, default=None, help="results (default 10, at most 100)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_search)


def add_reembed(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `feedeater rss reembed` to the rss subcommands."""
    p = actions.add_parser("reembed", help="re-embed every entry (after changing the embedding model)")
    p.add_argument("--queue-only", action="store_true", help="only queue them for the background embed job")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_reembed)
