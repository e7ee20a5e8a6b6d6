"""`feedeater digest build|list|show|article|cluster|explain|like|unlike|likes` and
`feedeater digest sources set|remove|list|import`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from host.errors import UserError
from modules.digest.score.importance import parse_tier
from modules.digest.settings import FORMATS, digest_type, window

if TYPE_CHECKING:
    from host.runtime import Host


def tier(text: str) -> int:
    try:
        return parse_tier(text)
    except ValueError:
        raise UserError(f"unknown tier {text!r}", "use T1 (most authoritative) to T5") from None


def source_domain(text: str) -> str:
    """`example.com`, `www.example.com` or a URL → the registry key."""
    from modules.digest.dedup.urls import domain  # w3lib: imported by the commands that use it, not --help

    d = domain(text if "://" in text else f"https://{text}")
    if not d or "." not in d:
        raise UserError(f"cannot read a domain from {text!r}", "give a domain such as example.com")
    return d


def parse_import(text: str) -> list[tuple[str, int]]:
    """Lines `domain tier` (`#` comments, blank lines ignored) → pairs; the first bad line is one error."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        if len(parts) != 2:
            raise UserError(f"line {n}: {line!r} is not `domain tier`", "write one `example.com T2` per line")
        out.append((source_domain(parts[0]), tier(parts[1])))
    return out


def tiers_from_folders(feeds: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """OPML categories as tiers: a feed in a folder whose last part is T1–T5 (`News/T2`) gives its site's
    domain that tier; other folders are ignored."""
    from modules.digest.dedup.urls import domain

    out = []
    for f in feeds:
        last = str(f["folder"]).rstrip("/").rsplit("/", 1)[-1]
        try:
            t = parse_tier(last) if last[:1] in "Tt" else None
        except ValueError:
            t = None
        d = domain(f["site_url"] or f["url"])
        if t is not None and d:
            out.append((d, t))
    return out


def _topics(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 100:
        raise UserError(f"--topics {text!r} is not a number of topics", "give 1 to 100")
    return int(text)


async def cmd(host: Host, args: argparse.Namespace) -> int:
    from host.cli import emit, nothing, table
    from modules.digest.store import digests  # asyncpg: imported when a command runs, not for --help

    if args.digest_action == "build":  # validate before opening anything
        kind = digest_type(args.type)
        span = window(args.window) if args.window else None
        k = _topics(args.topics)
    await host.open(with_bus=False)
    ctx = await host.context("digest")
    if args.digest_action == "build":
        from modules.digest.assemble import render  # scikit-learn: 2 s of imports no other command needs
        from modules.digest.deliver import job

        built = await job.build(ctx, kind, window=span, topics_k=k)
        print(render.render(built.digest, args.format, details=args.details), end="")
        return 0
    async with ctx.pool.acquire() as conn:
        if args.digest_action == "list":
            kind_name = digest_type(args.type).name if args.type else None
            rows = await digests.list_recent(conn, kind_name, args.limit)
            emit(
                args,
                rows,
                lambda d: (
                    table(
                        [
                            (
                                str(r["id"])[:8],
                                r["type"],
                                f"{r['window_end']:%Y-%m-%d %H:%M}",
                                r["article_count"],
                                r["duplicates_removed"],
                                "scheduled" if r["scheduled"] else "manual",
                            )
                            for r in d
                        ],
                        ["id", "type", "window end", "articles", "duplicates", "how"],
                    )
                    if d
                    else nothing(host, "no digests", "build one with `feedeater digest build`")
                ),
            )
        elif args.digest_action in ("like", "unlike", "likes"):
            await _likes(conn, args, emit, table)
        elif args.digest_action in ("article", "cluster", "explain"):
            await _inspect(conn, args, emit)
        elif args.digest_action == "show":
            row = await digests.get(conn, args.id)
            text = row["markdown"] if args.format == "md" else json.dumps(row["structured"], indent=2) + "\n"
            print(text, end="")
        else:
            await _sources(conn, args, emit, table)
    return 0


async def _inspect(conn: Any, args: argparse.Namespace, emit: Any) -> None:
    from modules.digest.store import inspect

    if args.digest_action == "article":
        data = await inspect.article(conn, await inspect.resolve(conn, args.ref))
        emit(args, data, article_text)
    elif args.digest_action == "cluster":
        data = await inspect.cluster(conn, article_id(args.cluster_id))
        emit(args, data, cluster_text)
    else:
        first, second = await inspect.resolve(conn, args.a), await inspect.resolve(conn, args.b)
        emit(args, await inspect.explain(conn, first, second), explain_text)


def _score(value: float | None) -> str:
    return "" if value is None else f" {value:.2f}"


def _one(r: dict[str, Any]) -> str:
    """One article on one line: id, how it was decided, source, title."""
    how = f"{r['disposition']} ({r['layer']}{_score(r['match_score'])})"
    matched = f" → {r['matched_id']}" if r.get("matched_id") else ""
    return f"{r['id']:>8}  {how}{matched}  {r['source_name']}: {r['title'][:70]}"


def _checks(checks: list[dict[str, Any]]) -> list[str]:
    return [
        f"  {'✓' if c['passed'] else '✗'} {c['layer']:<11} {c['value']}  (rule: {c['rule']})" for c in checks
    ]


def article_text(d: dict[str, Any]) -> str:
    """`digest article` for people: identity, decision and the checks behind it, match, story, event, history."""
    lines = [
        f"article {d['id']}: {d['title']}",
        f"  source     {d['source_name']} · published {d['published_at']:%Y-%m-%d %H:%M} UTC · {d['word_count']} words",
        f"  link       {d['url'] or '(none)'}",
        f"  guid       {d['guid'] or '(none)'} · message {d['message_id']}",
        f"  decision   {d['disposition']} by layer {d['layer']}{_score(d['match_score'])}"
        + (f", among {d['candidates']} candidates" if d["candidates"] is not None else ""),
    ]
    if d["matched"]:
        lines.append(f"  matched    {_one(d['matched']).strip()}")
    lines.append(
        f"  story      cluster {d['cluster_id']} ({d['cluster_size']} articles): `feedeater digest cluster {d['cluster_id']}`"
    )
    lines.append(f"  event      {d['event_id']} ({d['event_stories']} stories)")
    lines += [f"    same event: {_one(r).strip()}" for r in d["event_links"]]
    if d["markers"]:
        lines.append(f"  markers    {', '.join(d['markers'])}")
    if d["entities"]:
        lines.append(f"  entities   {', '.join(d['entities'][:12])}")
    if d["details"]:
        lines.append("  checks against the match:")
        lines += _checks(d["details"])
    lines.append("  history:")
    lines += [
        f"    {h['decided_at']:%Y-%m-%d %H:%M:%S} rev {h['revision']}: {h['disposition']} ({h['layer']}{_score(h['score'])})"
        + (f" → {h['matched_id']}" if h["matched_id"] else "")
        for h in d["history"]
    ]
    return "\n".join(lines)


def cluster_text(d: dict[str, Any]) -> str:
    lines = [f"story cluster {d['cluster_id']} (event {d['event_id']}): {len(d['articles'])} articles, "
             f"shown as {d['representative']}"]  # fmt: skip
    lines += [_one(r) for r in d["articles"]]
    if d["event_stories"]:
        lines.append("other stories of the same event (same_event links):")
        lines += [_one(r) + f"  [{r['size']} articles]" for r in d["event_stories"]]
    return "\n".join(lines)


def explain_text(d: dict[str, Any]) -> str:
    a, b = d["a"], d["b"]
    lines = [
        f"A {a['id']}: {a['source']}: {a['title'][:80]}",
        f"B {b['id']}: {b['source']}: {b['title'][:80]}",
        f"same story cluster: {'yes' if d['same_story'] else 'no'} · same event: {'yes' if d['same_event'] else 'no'}",
    ]
    return "\n".join(lines + _checks(d["checks"]))


async def _sources(conn: Any, args: argparse.Namespace, emit: Any, table: Any) -> None:
    from modules.digest.store import sources

    action = args.sources_action
    if action == "set":
        d, t = source_domain(args.domain), tier(args.tier)
        await sources.set_tier(conn, d, t, args.name)
        emit(args, {"domain": d, "tier": t}, lambda x: f"{x['domain']}: T{x['tier']}")
    elif action == "remove":
        d = source_domain(args.domain)
        if not await sources.remove(conn, d):
            raise UserError(f"{d} is not in the source registry", "see `feedeater digest sources list`")
        emit(args, {"domain": d, "removed": True}, lambda x: f"removed {x['domain']} (now T3)")
    elif action == "list":
        rows = await sources.list_all(conn)
        emit(
            args,
            rows,
            lambda d: table(
                [(r["domain"], f"T{r['tier']}", r["name"] or "") for r in d], ["domain", "tier", "name"]
            ),
        )
    elif action == "import":
        path = Path(args.file)
        if not path.is_file():
            raise UserError(f"no such file: {path}", "give a file of `domain tier` lines")
        pairs = parse_import(path.read_text(encoding="utf-8"))
        await _save(conn, pairs)
        emit(args, {"imported": len(pairs)}, lambda x: f"imported {x['imported']} sources")
    elif action == "from-folders":
        pairs = tiers_from_folders(await sources.feed_folders(conn))
        await _save(conn, pairs)
        emit(args, {"imported": len(pairs)}, lambda x: f"{x['imported']} sources tiered from rss folders")


def article_id(text: str) -> int:
    if not text.isdigit():
        raise UserError(f"{text!r} is not an article id", "use the `id` a digest shows for each story")
    return int(text)


async def _likes(conn: Any, args: argparse.Namespace, emit: Any, table: Any) -> None:
    from modules.digest.store import likes

    if args.digest_action == "likes":
        rows = await likes.list_all(conn)
        cells = [(r["article_id"], r["title"], r["source_name"], f"{r['liked_at']:%Y-%m-%d}") for r in rows]
        emit(args, rows, lambda _: table(cells, ["id", "title", "source", "liked"], limits={1: 70}))
        return
    aid = article_id(args.article_id)
    if args.digest_action == "unlike":
        if not await likes.unlike(conn, aid):
            raise UserError(f"article {aid} is not liked", "see `feedeater digest likes`")
        emit(args, {"article_id": aid, "liked": False}, lambda x: f"unliked {x['article_id']}")
        return
    row = await likes.like(conn, aid)
    if row is None:
        raise UserError(f"no article {aid}", "use the `id` a digest shows for each story")
    emit(args, {"article_id": aid, "liked": True, "title": row["title"]}, lambda x: f"liked: {x['title']}")


async def _save(conn: Any, pairs: list[tuple[str, int]]) -> None:
    from modules.digest.store import sources

    async with conn.transaction():
        for d, t in pairs:
            await sources.set_tier(conn, d, t)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("digest", help="build and read digests; edit the source authority registry")
    p.set_defaults(handler=cmd)
    actions = p.add_subparsers(dest="digest_action", required=True)
    b = actions.add_parser("build", help="build, store and publish a digest now")
    b.add_argument("--type", default="morning", help="morning | midday | evening | weekly")
    b.add_argument("--window", default=None, help="e.g. 24h, 3d (default: the type's window)")
    b.add_argument("--topics", default=None, help="cluster into exactly K topics (agglomerative)")
    b.add_argument("--format", choices=FORMATS, default="md")
    b.add_argument("--details", action="store_true", help="html: show tiers, scores and article ids")
    ls = actions.add_parser("list", help="digests built")
    ls.add_argument("--type", default=None)
    ls.add_argument("--limit", type=int, default=20)
    ls.add_argument("--json", action="store_true")
    sh = actions.add_parser("show", help="one digest by id (or id prefix)")
    sh.add_argument("id")
    sh.add_argument("--format", choices=("md", "json"), default="md")
    for name, text in (
        ("like", "like an article: its text joins the interest profile (topic relevance)"),
        ("unlike", "take a like back"),
    ):
        lk = actions.add_parser(name, help=text)
        lk.add_argument("article_id", help="the `id` a digest shows for each story")
        lk.add_argument("--json", action="store_true")
    ar = actions.add_parser(
        "article", help="one article's dedup decision, the checks behind it and its history"
    )
    ar.add_argument("ref", help="an article id (a digest's `id`) or the source's message id (UUID)")
    ar.add_argument("--json", action="store_true")
    cl = actions.add_parser("cluster", help="a story cluster: its articles and why each joined")
    cl.add_argument("cluster_id", help="a cluster id (`digest article` shows it) or an article id")
    cl.add_argument("--json", action="store_true")
    ex = actions.add_parser("explain", help="how every dedup layer compares two articles")
    ex.add_argument("a", help="article id or message id")
    ex.add_argument("b", help="article id or message id")
    ex.add_argument("--json", action="store_true")
    lks = actions.add_parser("likes", help="liked articles")
    lks.add_argument("--json", action="store_true")
    src = actions.add_parser("sources", help="authority tiers T1–T5 by domain (unknown = T3)")
    sa = src.add_subparsers(dest="sources_action", required=True)
    s = sa.add_parser("set", help="set a domain's tier: `digest sources set example.com T2`")
    s.add_argument("domain")
    s.add_argument("tier")
    s.add_argument("--name", default=None)
    s.add_argument("--json", action="store_true")
    r = sa.add_parser("remove", help="forget a domain (back to T3)")
    r.add_argument("domain")
    r.add_argument("--json", action="store_true")
    li = sa.add_parser("list", help="the registry")
    li.add_argument("--json", action="store_true")
    im = sa.add_parser("import", help="a file of `domain tier` lines")
    im.add_argument("file")
    im.add_argument("--json", action="store_true")
    ff = sa.add_parser(
        "from-folders", help="tiers from rss folders (OPML categories) named T1–T5, e.g. News/T2"
    )
    ff.add_argument("--json", action="store_true")
