"""`feedeater rss ...`: manage subscriptions (add, remove, list, show, set, import, export)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host.errors import UserError
from modules.rss import store
from modules.rss.search import cli as search_cli
from modules.rss.subscriptions import subscribe
from modules.rss.subscriptions.opml import OpmlError

if TYPE_CHECKING:
    from host.runtime import Host


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` for `rss set`, validated and converted to the column's value."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or key not in store.EDITABLE:
        raise UserError(f"cannot set {text!r}", f"use key=value with key one of: {', '.join(store.EDITABLE)}")
    if key in ("enabled", "full_text"):
        if raw.lower() not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
            raise UserError(f"{key}={raw!r} is not true/false")
        return key, raw.lower() in ("true", "yes", "1", "on")
    if key in ("folder", "title"):
        return key, (raw or None) if key == "folder" else raw
    if raw.lower() in ("", "default", "auto"):
        return key, None
    bounds = {
        "interval": (1, 10080, "minutes"),
        "retention": (1, 36500, "days"),
        "lookback": (1, 168, "hours"),
    }[key]
    try:
        number = float(raw)
    except ValueError:
        raise UserError(f"{key}={raw!r} is not a number", f"give {bounds[2]}, or 'default'") from None
    if not bounds[0] <= number <= bounds[1]:
        raise UserError(
            f"{key}={raw} is out of range", f"use {bounds[0]}–{bounds[1]} {bounds[2]}, or 'default'"
        )
    return key, round(number * 60) if key == "interval" else int(number)


async def _ctx_conn(host: Host) -> Any:
    await host.open(with_bus=False)
    return await host.context("rss")


async def cmd(host: Host, args: argparse.Namespace) -> int:
    from host.cli import emit, table

    ctx = await _ctx_conn(host)
    async with ctx.pool.acquire() as conn:
        action = args.rss_action
        if action == "add":
            row, created = await subscribe.subscribe(
                conn, ctx.state["fetcher"], args.url, folder=args.folder, interval_minutes=args.interval
            )
            emit(
                args,
                {"id": row.id, "url": row.url, "title": row.title, "created": created},
                lambda d: (
                    f"{'added' if d['created'] else 'already subscribed:'} feed {d['id']}: {d['title'] or d['url']} <{d['url']}>"
                ),
            )
        elif action == "remove":
            feed = await store.get_feed(conn, args.feed)
            await store.remove_feed(conn, feed.id)
            emit(args, {"id": feed.id, "removed": True}, lambda d: f"removed feed {d['id']}")
        elif action == "list":
            rows = await store.list_feeds(conn, args.folder)
            emit(
                args,
                rows,
                lambda d: table(
                    [
                        (r["id"], _state(r), r["folder"] or "", r["entries"], r["title"][:40], r["url"])
                        for r in d
                    ],
                    ["id", "state", "folder", "entries", "title", "url"],
                ),
            )
        elif action == "show":
            feed = await store.get_feed(conn, args.feed)
            rows = [r for r in await store.list_feeds(conn) if r["id"] == feed.id]
            recent = await conn.fetch(
                "SELECT id, title, link, effective_at FROM mod_rss.entries WHERE feed_id = $1 ORDER BY effective_at DESC LIMIT 10",
                feed.id,
            )
            data = {**rows[0], "recent_entries": [dict(r) for r in recent]}
            emit(
                args,
                data,
                lambda d: "\n".join(
                    [f"{k}: {v}" for k, v in d.items() if k != "recent_entries"]
                    + ["recent entries:"]
                    + [f"  {e['effective_at']:%Y-%m-%d %H:%M}  {e['title']}" for e in d["recent_entries"]]
                ),
            )
        elif action == "set":
            feed = await store.get_feed(conn, args.feed)
            changes = dict(parse_assignment(a) for a in args.assignments)
            updated = await store.update_feed(conn, feed.id, changes)
            emit(
                args,
                {"id": updated.id, "changed": changes},
                lambda d: f"feed {d['id']}: " + ", ".join(f"{k}={v}" for k, v in d["changed"].items()),
            )
        elif action == "import":
            path = Path(args.file)
            if not path.is_file():
                raise UserError(f"no such file: {path}", "give the path of an OPML file")
            try:
                imported = await subscribe.import_opml(
                    conn,
                    path.read_bytes(),
                    allow_private_networks=bool(ctx.settings["allow_private_networks"]),
                )
            except OpmlError as exc:
                raise UserError(f"cannot import {path}: {exc}") from None
            emit(
                args,
                {
                    "added": imported.added,
                    "already_present": imported.already_present,
                    "refused": [{"url": u, "reason": why} for u, why in imported.refused],
                },
                lambda d: "\n".join(
                    [f"imported {d['added']} feeds ({d['already_present']} already present)"]
                    + [f"refused {r['url']}: {r['reason']}" for r in d["refused"]]
                ),
            )
        elif action == "export":
            opml = await subscribe.export(conn)
            if args.file:
                Path(args.file).write_bytes(opml)
            else:
                sys.stdout.buffer.write(opml)
    return 0


def _state(row: dict[str, Any]) -> str:
    if row["dead"]:
        return "dead"
    if not row["enabled"]:
        return "disabled"
    return "stale" if row["stale"] else "ok"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rss = sub.add_parser("rss", help="manage RSS/Atom/JSON feed subscriptions")
    rss.set_defaults(handler=cmd)
    actions = rss.add_subparsers(dest="rss_action", required=True)
    search_cli.add_reembed(actions)

    def action(name: str, help_: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, help=help_)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = action("add", "subscribe to a feed (or a page advertising one)")
    p.add_argument("url")
    p.add_argument("--folder", default=None)
    p.add_argument(
        "--interval", type=float, default=None, help="fixed poll interval in minutes (default: adaptive)"
    )
    p = action("remove", "unsubscribe (deletes its entries)")
    p.add_argument("feed", help="feed id or URL")
    p = action("list", "list subscriptions")
    p.add_argument("--folder", default=None)
    p = action("show", "one feed with its poll state and recent entries")
    p.add_argument("feed", help="feed id or URL")
    p = action(
        "set",
        "per-feed overrides: interval=MIN|default enabled=true|false full_text=true|false folder=F retention=DAYS lookback=HOURS title=T",
    )
    p.add_argument("feed", help="feed id or URL")
    p.add_argument("assignments", nargs="+", metavar="key=value")
    p = action("import", "import an OPML file (idempotent)")
    p.add_argument("file")
    p = action("export", "export subscriptions as OPML")
    p.add_argument("file", nargs="?", default=None)
