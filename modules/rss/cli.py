"""`feedeater rss ...`: subscriptions (add, remove, list, show, set, import, export) and reading (entries,
entry, mark).

A front door: it parses arguments, calls the module's service (modules/rss/service) and prints; the
progress bar of a fetch-now is drawn here. New feeds are fetched as soon as they are added (like
Miniflux), through the poll job's own code path. Imports of the pipeline happen inside the commands:
registering the parser must stay cheap.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host import textfmt
from host.errors import UserError
from host.textfmt import plural, relative, when

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

    from host.module import ModuleContext
    from host.runtime import Host


# -- commands ------------------------------------------------------------------------------------
async def cmd(host: Host, args: argparse.Namespace) -> int:
    from host.cli import emit

    handler = _ACTIONS[args.rss_action]
    if args.rss_action == "import":
        _check_import_path(Path(args.file))  # before any service starts
    if args.rss_action == "export" and args.file:
        _check_export_path(Path(args.file))
    await host.open(with_bus=False)
    data, text = await handler(host, args)
    emit(args, data, text)
    return 0


Result = tuple[Any, Any]
# Only commands that fetch build the module context (its setup loads the fetch and parse pipeline, ~0.5 s);
# the others read the database through the host's pool.


async def _add(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds

    ctx = await host.context("rss")
    added = await feeds.add_feed(ctx, args.url, folder=args.folder, interval_minutes=args.interval)
    row = added.feed
    data: dict[str, Any] = {"id": row.id, "url": row.url, "title": row.title, "created": added.created}
    if added.notice:
        data["notice"] = added.notice
    if added.created and not args.no_fetch:
        data["fetch"] = await _fetch_now(ctx, [row.id])

    def text(d: dict[str, Any]) -> str:
        head = f"{'added' if d['created'] else 'already subscribed:'} feed {d['id']}: {d['title'] or d['url']} <{d['url']}>"
        head += f"\nnote: {d['notice']}" if "notice" in d else ""
        return head + (f"\n{_fetch_text(d['fetch'])}" if "fetch" in d else "")

    return data, text


async def _fetch_now(ctx: ModuleContext, feed_ids: list[int]) -> dict[str, Any]:
    """The service's fetch-now with a progress bar on a terminal."""
    from host import progress
    from modules.rss.service import feeds

    done = itertools.count(1)
    with progress.bar("fetching new feeds", len(feed_ids)) as update:
        return await feeds.fetch_now(ctx, feed_ids, on_done=lambda: update(next(done), None))


async def _poll(host: Host, args: argparse.Namespace) -> Result:
    """`rss poll FEED…`: fetch named feeds now, due or not, through the poll job's code (fetch_now)."""
    from modules.rss.service import feeds

    async with host.require_pool().acquire() as conn:
        ids = await feeds.pollable(conn, args.feeds)  # all exist and may be polled, or nothing is polled
    return await _fetch_now(await host.context("rss"), ids), _fetch_text


def _fetch_text(f: dict[str, Any]) -> str:
    lines = [
        f"fetched {f['fetched']} of {plural(f['feeds'], 'feed')}: "
        f"{plural(f['new_entries'], 'new entry', 'new entries')}"
    ]
    lines += [f"  feed {fid} failed: {error}" for fid, error in f["failed"].items()]
    reasons: dict[str, list[str]] = {}
    for fid, why in f["deferred"].items():
        reasons.setdefault(why, []).append(fid)
    lines += [
        f"  {plural(len(ids), 'feed')} {why}: {', '.join(ids[:10])}{', …' if len(ids) > 10 else ''} "
        "(the poll job fetches them later)"
        for why, ids in reasons.items()
    ]
    return "\n".join(lines)


async def _remove(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds

    removed = await feeds.remove_feeds(host.require_pool(), args.feeds, lambda: host.context("rss"))
    return {
        "removed": removed
    }, lambda d: f"removed {plural(len(d['removed']), 'feed')}: " + ", ".join(map(str, d["removed"]))


async def _list(host: Host, args: argparse.Namespace) -> Result:
    from host.cli import nothing, table
    from modules.rss.service import feeds

    async with host.require_pool().acquire() as conn:
        rows = await feeds.feed_rows(conn, args.folder)
        if not rows and args.folder is not None:
            raise await feeds.unknown_folder(conn, args.folder)
    if args.json:  # the API's schema; the table needs no validation, and pydantic costs 0.15 s to load
        from modules.rss.service.models import Feed

        rows = [Feed.model_validate(r).model_dump() for r in rows]
    return (
        rows,
        lambda d: (
            table(
                [
                    (
                        r["id"],
                        r["state"],
                        r["folder"] or "",
                        r["entries"],
                        relative(r["last_polled_at"]),
                        r["title"] or "",
                        r["url"],
                    )
                    for r in d
                ],
                ["id", "state", "folder", "entries", "polled", "title", "url"],
                limits={2: 20, 5: 40},
                whole=(6,),
            )
            if d
            else nothing(
                host, "no feeds", "add one with `feedeater rss add URL` or `feedeater rss import FILE`"
            )
        ),
    )


async def _show(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds

    async with host.require_pool().acquire() as conn:
        return await feeds.show_feed(conn, args.feed), _show_text


def _moment(value: datetime | None) -> str:
    """`2026-11-26 05:40Z (12 min ago)`, or `never`."""
    return f"{when(value)} ({relative(value)})" if value is not None else "never"


def _show_text(d: dict[str, Any]) -> str:
    interval = (
        f"every {textfmt.duration(d['interval_override_s'])} (fixed)"
        if d["interval_override_s"]
        else f"every {textfmt.duration(d['interval_s'])} (adaptive"
        + (f": {d['interval_reason']})" if d["interval_reason"] else ")")
        if d["interval_s"]
        else "adaptive (not polled yet)"
    )
    fields = [
        ("feed", f"{d['id']}: {d['title'] or '(untitled)'}"),
        ("url", d["url"]),
        ("site", d["site_url"] or "-"),
        ("folder", d["folder"] or "-"),
        ("state", d["state"]),
        ("entries", str(d["entries"])),
        (
            "polled",
            f"{_moment(d['last_polled_at'])}, status {d['last_status']}" if d["last_polled_at"] else "never",
        ),
        ("next poll", f"{when(d['next_poll_at'])} ({textfmt.upcoming(d['next_poll_at'])}), {interval}"),
        ("last success", _moment(d["last_success_at"])),
    ]
    if d["last_error"]:
        fields.append(
            ("last error", f"{d['last_error']} ({plural(d['consecutive_errors'], 'failure')} in a row)")
        )
    overrides = [
        f"{name} {textfmt.duration(d[key])}"
        for name, key in (("min interval", "min_interval_s"), ("max interval", "max_interval_s"))
        if d.get(key)
    ] + [text for key, text in (("push_only", "push only"),) if d.get(key)]
    if d.get("backfill") is False:
        overrides.append("no archive backfill")
    if overrides:
        fields.append(("overrides", ", ".join(overrides)))
    if d.get("circuit") == "open":
        fields.append(
            (
                "circuit",
                f"open since {when(d['circuit_opened_at'])} (too many failed polls); "
                f"one probe at {when(d['next_poll_at'])}, closes when it succeeds",
            )
        )
    if push := d.get("websub"):
        until = f" until {when(push['expires_at'])}" if push["state"] == "active" else ""
        error = f" ({push['last_error']})" if push["last_error"] else ""
        fields.append(
            ("push", f"WebSub {push['state']} at {push['hub']}{until}, {push['pushes']} pushes{error}")
        )
    if archive := d.get("backfill"):
        error = f" ({archive['last_error']})" if archive["last_error"] else ""
        fields.append(
            (
                "archive",
                f"{archive['state']}: {plural(archive['pages_done'], 'page')} along {archive['rel']}{error}",
            )
        )
    if d["description"]:
        fields.append(("about", textfmt.fit(d["description"], 200)))
    lines = [f"{k + ':':<14}{v}" for k, v in fields]
    lines += ["", "recent entries:"] if d["recent_entries"] else ["", "no entries yet"]
    lines += [
        f"  {e['id']:>7}  {when(e['effective_at'])}  {e['title'] or '(untitled)'}"
        for e in d["recent_entries"]
    ]
    return "\n".join(lines)


async def _set(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds

    changes = dict(feeds.parse_assignment(a) for a in args.assignments)
    async with host.require_pool().acquire() as conn:
        updated = await feeds.update_feed(conn, args.feed, changes)
    return {
        "id": updated.id,
        "changed": changes,
    }, lambda d: f"feed {d['id']}: " + ", ".join(describe_change(k, v) for k, v in d["changed"].items())


def describe_change(key: str, value: Any) -> str:
    """A `rss set` change in words (pure): `polled every 30 min`, not `interval=1800`."""
    if key == "interval":
        return (
            "polled adaptively (the default)" if value is None else f"polled every {textfmt.duration(value)}"
        )
    if key in ("enabled", "full_text"):
        return {"enabled": ("enabled", "disabled"), "full_text": ("full text fetched", "full text off")}[key][
            0 if value else 1
        ]
    if key == "folder":
        return f"in folder {value}" if value else "in no folder"
    if key == "title":
        return f"titled {value!r}" if value else "titled as the feed says"
    unit = {"retention": "days", "lookback": "hours"}[key]
    return f"{key} {value} {unit}" if value is not None else f"{key} the default (rss.{key}_{unit})"


def _check_import_path(path: Path) -> None:
    if path.is_dir():
        raise UserError(f"{path} is a directory", "give the path of an OPML file, e.g. subscriptions.opml")
    if not path.is_file():
        raise UserError(f"no such file: {path}", "give the path of an OPML file")


def _check_export_path(path: Path) -> None:
    if path.is_dir():
        raise UserError(f"{path} is a directory", "give a file name, e.g. subscriptions.opml")
    if not path.parent.is_dir():
        raise UserError(f"cannot write {path}: directory {path.parent} does not exist", "create it first")


async def _import(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds
    from modules.rss.subscriptions.opml import OpmlError

    path = Path(args.file)
    settings = await host.resolved_settings("rss")
    try:
        imported = await feeds.import_opml(
            host.require_pool(),
            path.read_bytes(),
            allow_private_networks=bool(settings["allow_private_networks"]),
        )
    except OpmlError as exc:
        raise UserError(f"cannot import {path}: {exc}") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = imported.as_dict()
    if imported.added and not args.no_fetch:
        data["fetch"] = await _fetch_now(await host.context("rss"), imported.added)

    def text(d: dict[str, Any]) -> str:
        lines = [f"imported {plural(d['added'], 'feed')} ({d['already_present']} already present)"]
        lines += [f"refused {r['url']}: {r['reason']}" for r in d["refused"]]
        return "\n".join(lines + ([_fetch_text(d["fetch"])] if "fetch" in d else []))

    return data, text


async def _export(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import feeds

    opml = await feeds.export_opml(host.require_pool())
    if not args.file:
        sys.stdout.buffer.write(opml)
        sys.stdout.buffer.flush()
        return {"bytes": len(opml)}, lambda _d: ""
    try:
        Path(args.file).write_bytes(opml)
    except OSError as exc:
        raise UserError(
            f"cannot write {args.file}: {exc.strerror or exc}", "choose a writable path"
        ) from None
    return {"file": args.file, "bytes": len(opml)}, lambda d: f"wrote {d['file']}"


async def _entries(host: Host, args: argparse.Namespace) -> Result:
    from host.cli import table, where
    from modules.rss.search.query import parse_since
    from modules.rss.service import entries
    from modules.rss.service.models import EntrySummary

    if not 1 <= args.limit <= 1000:
        raise UserError(f"--limit {args.limit} is out of range", "give 1 to 1000")
    since = parse_since(args.since) if args.since else None
    async with host.require_pool().acquire() as conn:
        found, _next = await entries.page(
            conn,
            feed=args.feed or None,
            since=since,
            unread=args.unread,
            starred=args.starred,
            before=args.before,
            limit=args.limit,
        )
    rows = [EntrySummary.model_validate(r).model_dump() for r in found]
    more = f"; older ones: the same command with --before {rows[-1]['id']}" if len(rows) == args.limit else ""
    return (
        rows,
        lambda d: (
            table(
                [
                    (
                        r["id"],
                        ("★" if r["starred_at"] else "") + ("" if r["read_at"] else "•"),
                        when(r["effective_at"]),
                        r["feed_title"] or r["feed_id"],
                        r["title"] or "(untitled)",
                    )
                    for r in d
                ],
                ["id", "", "date", "feed", "title"],
                limits={3: 24},
            )
            + f"\n(• unread, ★ starred; read one with `feedeater rss entry ID`{more})"
            if d
            else "no entries"
            + (
                ""
                if args.feed or args.since or args.unread or args.starred or args.before
                else f" in {where(host)}"
            )
        ),
    )


async def _entry(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss import store
    from modules.rss.service.models import Entry

    async with host.require_pool().acquire() as conn:
        row = Entry.model_validate(await store.get_entry(conn, entry_ref(args.entry))).model_dump()
    return row, _entry_text


def entry_ref(text: str) -> int | uuid.UUID:
    """An entry id, or its message id (the UUID in bus events and the API), as the API takes either."""
    if text.strip().isdigit():
        return int(text)
    try:
        return uuid.UUID(text.strip())
    except ValueError:
        raise UserError(
            f"{text!r} is neither an entry id nor a message id",
            "give the number `rss entries` shows, or the UUID of a bus event's message.id",
        ) from None


def _entry_text(e: dict[str, Any]) -> str:
    state = ", ".join(
        s for s in ("read" if e["read_at"] else "unread", "starred" if e["starred_at"] else "") if s
    )
    lines = [
        e["title"] or "(untitled)",
        f"{e['feed_title'] or 'feed'} (feed {e['feed_id']}) · {when(e['published'] or e['effective_at'])}"
        + (f" · {', '.join(e['authors'])}" if e["authors"] else "")
        + (f" · {e['reading_time_minutes']} min read" if e["reading_time_minutes"] else "")
        + f" · {state}",
    ]
    if e["link"]:
        lines.append(e["link"])
    lines += ["", e["content_text"] or "(no text)"]
    for enc in e["enclosures"]:
        size = f", {enc['length']} bytes" if enc.get("length") else ""
        lines.append(f"enclosure: {enc['url']} ({enc.get('type') or 'unknown type'}{size})")
    return "\n".join(lines)


def toggle(on: bool, off: bool, on_flag: str, off_flag: str) -> bool | None:
    """Two opposite flags (--read/--unread) → True, False, or None when neither; both is a mistake."""
    if on and off:
        raise UserError(f"{on_flag} and {off_flag} contradict each other", f"give {on_flag} or {off_flag}")
    return True if on else False if off else None


async def _mark(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.service import entries

    read = toggle(args.read, args.unread, "--read", "--unread")
    starred = toggle(args.star, args.unstar, "--star", "--unstar")
    if read is None and starred is None:
        raise UserError("nothing to mark", "add --read, --unread, --star or --unstar")
    if bool(args.entries) == bool(args.feed):
        raise UserError(
            "mark entries by id, or a whole feed with --feed",
            "e.g. `rss mark 12 13 --read` or `rss mark --feed 3 --read`",
        )
    found = await entries.mark(
        host.require_pool(), entries=args.entries, feed=args.feed, read=read, starred=starred
    )
    what = [w for w, v in (("read", read), ("unread", read is False), ("starred", starred)) if v] + (
        ["unstarred"] if starred is False else []
    )
    return {
        "entries": found,
        "read": read,
        "starred": starred,
    }, lambda d: f"marked {plural(len(d['entries']), 'entry', 'entries')} {' and '.join(what)}"


async def _backfill(host: Host, args: argparse.Namespace) -> Result:
    from modules.rss.backfill import walk

    ctx = await host.context("rss")
    data = await walk.by_hand(ctx, args.feed, max_pages=args.max_pages)

    def text(d: dict[str, Any]) -> str:
        head = (
            f"feed {d['feed']}: walked {plural(d['pages'], 'archive page')} along {d['rel']}, {d['new']} new"
        )
        return head + (f" (stopped: {d['last_error']})" if d.get("last_error") else f"; {d['state']}")

    return data, text


async def _why(host: Host, args: argparse.Namespace) -> Result:
    """Was the item seen, in which fetch, with which identity; announced or not, and why; the next poll."""
    from modules.rss.service import entries
    from modules.rss.service.models import ItemExplanation

    settings = await host.resolved_settings("rss")
    async with host.require_pool().acquire() as conn:
        explanation = await entries.explain(conn, settings, args.feed, args.item)
    data = ItemExplanation.of(explanation).model_dump(mode="json")
    return data, lambda d: "\n".join(d["lines"])


_ACTIONS = {
    "add": _add,
    "remove": _remove,
    "list": _list,
    "show": _show,
    "set": _set,
    "import": _import,
    "export": _export,
    "entries": _entries,
    "entry": _entry,
    "mark": _mark,
    "backfill": _backfill,
    "why": _why,
    "poll": _poll,
}


# -- parser --------------------------------------------------------------------------------------
def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    *others: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
) -> None:
    """Add `feedeater rss ...`, with subcommands defined elsewhere first (`rss reembed`, search/cli.py):
    the module wires them, so this front door imports no other."""
    rss = sub.add_parser("rss", help="subscribe to RSS/Atom/JSON feeds and read their entries")
    rss.set_defaults(handler=cmd)
    actions = rss.add_subparsers(dest="rss_action", required=True)
    for add in others:
        add(actions)

    def action(name: str, help_: str) -> argparse.ArgumentParser:
        p = actions.add_parser(name, help=help_)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    p = action("add", "subscribe to a feed (or a page advertising one) and fetch it now")
    p.add_argument("url")
    p.add_argument("--folder", default=None)
    p.add_argument(
        "--interval", type=float, default=None, help="fixed poll interval in minutes (default: adaptive)"
    )
    p.add_argument("--no-fetch", action="store_true", help="leave the first fetch to the poll job")
    p = action("remove", "unsubscribe (deletes their entries)")
    p.add_argument("feeds", nargs="+", metavar="feed", help="feed ids or URLs")
    p = action("poll", "fetch feeds now, due or not (the poll job's code)")
    p.add_argument("feeds", nargs="+", metavar="feed", help="feed ids or URLs")
    p = action("list", "list subscriptions with their state")
    p.add_argument("--folder", default=None)
    p = action("show", "one feed with its poll state and recent entries")
    p.add_argument("feed", help="feed id or URL")
    p = action(
        "set",
        "per-feed overrides: interval=MIN|default enabled=true|false full_text=true|false folder=F retention=DAYS"
        " lookback=HOURS title=T min_interval=MIN|default max_interval=MIN|default push_only=true|false"
        " backfill=true|false",
    )
    p.add_argument("feed", help="feed id or URL")
    p.add_argument("assignments", nargs="+", metavar="key=value")
    p = action("import", "import an OPML file (idempotent) and fetch the new feeds now")
    p.add_argument("file")
    p.add_argument("--no-fetch", action="store_true", help="leave the first fetch to the poll job")
    p = action("export", "export subscriptions as OPML (to stdout without FILE)")
    p.add_argument("file", nargs="?", default=None)
    p = action("entries", "list entries, newest first")
    p.add_argument("feed", nargs="?", default=None, help="only this feed (id or URL)")
    p.add_argument("--since", default=None, help="only entries from this date on (ISO 8601)")
    p.add_argument("--unread", action="store_true", help="only unread entries")
    p.add_argument("--starred", action="store_true", help="only starred entries")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument(
        "--before", type=int, default=None, metavar="ID", help="page on: entries older than entry ID"
    )
    p = action("entry", "read one entry: title, feed, date, link, text, enclosures")
    p.add_argument("entry", help="entry id (from `rss entries` or `search`), or its message id (UUID)")
    p = action("mark", "mark entries (or a whole feed) read/unread, starred/unstarred")
    p.add_argument("entries", nargs="*", type=int, metavar="entry", help="entry ids")
    p.add_argument("--feed", default=None, help="every entry of this feed (id or URL)")
    p.add_argument("--read", action="store_true")
    p.add_argument("--unread", action="store_true")
    p.add_argument("--star", action="store_true")
    p.add_argument("--unstar", action="store_true")
    p = action("why", "why an item was (not) announced: seen in which fetch, identity, decision, next poll")
    p.add_argument("feed", help="feed id or URL")
    p.add_argument("item", help="the item's guid, link, entry id or message id")
    p = action("backfill", "walk the feed's RFC 5005 archive (prev-archive) or paged (next) documents now")
    p.add_argument("feed", help="feed id or URL")
    p.add_argument("--max-pages", type=int, default=None, help="page bound (default: rss.backfill_max_pages)")
