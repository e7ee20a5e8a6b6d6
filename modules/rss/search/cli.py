"""`feedeater search "words"` (hybrid search) and `feedeater rss reembed` (after an embedding model change).

A search asks a running host over NATS first (`feedeater.rss.search`): the host has the embedding model
loaded, so the answer takes milliseconds instead of the seconds a fresh process needs to load it. With no
host answering, the CLI searches itself.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any

from host.errors import UserError

if TYPE_CHECKING:
    from host.runtime import Host

HOST_CONNECT_TIMEOUT_S = 1.0
HOST_REPLY_TIMEOUT_S = 10.0  # the host's own query embedding gives up after 5 s


async def cmd_search(host: Host, args: argparse.Namespace) -> int:
    from host.cli import emit
    from modules.rss.search.query import parse_request

    fields = {
        "query": args.query,
        "feed": args.feed,
        "folder": args.folder,
        "since": args.since,
        "until": args.until,
        "limit": args.limit,
    }
    request = {k: v for k, v in fields.items() if v is not None}
    parse_request(request)  # the service's own rules, checked before anything starts
    reply = None if args.local else await _ask_host(host, request)
    if reply is None:
        reply = await _search_here(host, request)
    if "error" in reply:
        raise UserError(str(reply["error"]))
    emit(args, reply, _text)
    return 0


async def _ask_host(host: Host, request: dict[str, Any]) -> dict[str, Any] | None:
    """A running host's reply, or None when none is reachable (no NATS, nobody subscribed, no answer)."""
    url = host.config.nats_url or host.services.nats.status().url
    if not url:
        return None
    nats = _import_nats(websockets=url.startswith("ws"))
    from nats.errors import Error as NatsError

    from modules.rss.service.search import SUBJECT

    try:
        nc = await nats.connect(
            url, connect_timeout=HOST_CONNECT_TIMEOUT_S, max_reconnect_attempts=0, allow_reconnect=False
        )
    except (OSError, NatsError, TimeoutError):
        return None
    try:
        msg = await nc.request(SUBJECT, json.dumps(request).encode(), timeout=HOST_REPLY_TIMEOUT_S)
        reply: dict[str, Any] = json.loads(msg.data)
    except (NatsError, TimeoutError, ValueError) as exc:
        if isinstance(exc, TimeoutError):  # a host is there but busy (nats' TimeoutError is one too)
            print(
                f"(no running host answered within {HOST_REPLY_TIMEOUT_S:g} s: searching in this process)",
                file=sys.stderr,
            )
        return None
    finally:
        await nc.close()
    return reply | {"answered_by": "host"}


def _import_nats(*, websockets: bool) -> ModuleType:
    """nats-py imports aiohttp, for ws:// URLs only, whenever it is installed (discord.py brings it): ~0.35
    CPU s of a search that takes milliseconds. Without websockets nats is imported with aiohttp hidden."""
    hide = not websockets and "aiohttp" not in sys.modules
    if hide:
        sys.modules["aiohttp"] = None  # type: ignore[assignment]  # `import aiohttp` raises ImportError
    try:
        import nats
    finally:
        if hide:
            del sys.modules["aiohttp"]  # a later real import (none in this command) would still work
    return nats


async def _search_here(host: Host, request: dict[str, Any]) -> dict[str, Any]:
    from modules.rss.service.search import search

    await host.open(with_bus=False)
    ctx = await host.context("rss")
    response = await search(ctx.pool, ctx.ai, request)
    return response.to_dict() | {"answered_by": "cli"}


def _text(reply: dict[str, Any]) -> str:
    lines = []
    coverage = reply.get("coverage")
    if coverage and coverage["fraction"] < 1:
        lines.append(
            f"(index: {coverage['fraction']:.0%} of {coverage['total']} entries embedded with {coverage['model']})"
        )
    if reply.get("degraded_reason"):
        lines.append(f"(full text only: {reply['degraded_reason']})")
    weaker = reply.get("weaker") or []
    for n, r in enumerate(reply["results"], start=1):
        lines += _hit(n, r)
    if not reply["results"]:
        lines.append("no matches" + (" above the relevance floor" if weaker else ""))
    if weaker:
        lines.append("weaker matches (some of the words, or only loosely related):")
        for n, r in enumerate(weaker, start=len(reply["results"]) + 1):
            lines += _hit(n, r)
    if coverage and coverage["fraction"] >= 1:  # every reply says how complete the index is
        lines.append(f"(index: all {coverage['total']} searched entries embedded with {coverage['model']})")
    return "\n".join(lines)


def _hit(n: int, r: dict[str, Any]) -> list[str]:
    when = f", {r['published'][:10]}" if r["published"] else ""
    where = f"{r['feed_title'] or r['feed_id']}{when}; {r['mode']}; entry {r['entry_id']}"
    return [f"{n}. {r['title'] or '(untitled)'}  [{where}]"] + [
        f"   {part}" for part in (r["link"], r["snippet"]) if part
    ]


async def cmd_reembed(host: Host, args: argparse.Namespace) -> int:
    """Queue every entry for embedding, then (unless --queue-only) embed them here, showing progress."""
    from host import progress
    from host.cli import emit
    from modules.rss.service import search

    await host.open(with_bus=False)
    ctx = await host.context("rss")
    queued = await search.queue_reembed(ctx.pool)
    embedder = ctx.ai.embedder
    if embedder is None or args.queue_only:
        why = "no embedder is configured" if embedder is None else "--queue-only"
        emit(args, {"queued": queued, "embedded": 0}, lambda d: f"queued {d['queued']} entries ({why})")
        return 0
    started = time.monotonic()
    with progress.bar(f"embedding with {embedder.model}", queued) as update:
        done = await search.reembed(ctx, embedder, lambda n: update(n, None))
    seconds = time.monotonic() - started
    data = {"queued": queued, "model": embedder.model, **done, "seconds": round(seconds, 1)}
    emit(
        args,
        data,
        lambda d: (
            f"re-embedded {d.get('embedded', 0)} of {d['queued']} entries with {d['model']}"
            f" ({d.get('embedded', 0) / max(seconds, 1e-9):.1f}/s)"
            + (f"; {d['pending']} left to the embed job (provider failing)" if d["pending"] else "")
        ),
    )
    return 1 if data["pending"] else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the top-level `feedeater search` command."""
    p = sub.add_parser("search", help="search entries: semantic + full text (hybrid)")
    p.add_argument("query", help='words, "a phrase", or -excluded')
    p.add_argument("--feed", type=int, default=None, help="only this feed id")
    p.add_argument("--folder", default=None, help="only feeds in this folder (and its subfolders)")
    p.add_argument("--since", default=None, help="only entries from this date on (ISO 8601)")
    p.add_argument("--until", default=None, help="only entries up to this date (inclusive: the whole day)")
    p.add_argument(
        "--limit",
        type=int,
        default=None,
        help="at most this many answers (default 10, up to 100); fewer if fewer are relevant",
    )
    p.add_argument("--local", action="store_true", help="search in this process, not through a running host")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_search)


def add_reembed(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `feedeater rss reembed` to the rss subcommands."""
    p = actions.add_parser("reembed", help="re-embed every entry (after changing the embedding model)")
    p.add_argument("--queue-only", action="store_true", help="only queue them for the background embed job")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=cmd_reembed)
