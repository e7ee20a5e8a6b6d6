"""Digest → Markdown, HTML or JSON (pure). Markdown is also the bus message's `Message`."""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

from modules.digest.assemble.build import Digest, Item

SECTIONS = (("top", "Top Stories"), ("noteworthy", "Noteworthy"), ("also", "Also Mentioned"))


def _when(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%d %H:%M UTC")


def _related(i: Item) -> str:
    if not i.related_count:
        return ""
    names = ", ".join(i.related_sources[:4])
    return f"{i.related_count} more" + (f" from {names}" if names else "")


def _label(i: Item) -> str:
    return f"[{i.trend}] {i.label}" if i.trend else i.label


def _health_lines(h: dict[str, Any]) -> list[str]:
    lines = []
    if h.get("feeds"):
        lines.append(
            f"Feeds polled: {h['feeds']} · success rate {h['success_rate']:.0%} · errors: {h['errors']}"
            " (last 30 days)"
        )
        if h.get("unhealthy"):
            lines.append("Unhealthy feeds: " + ", ".join(h["unhealthy"][:10]))
    else:
        lines.append("No feed health available (no rss feeds).")
    if h.get("emerging"):
        lines.append("Emerging topics: " + "; ".join(h["emerging"]))
    if h.get("declining"):
        lines.append("Declining topics: " + "; ".join(h["declining"]))
    return lines


def markdown(d: Digest) -> str:
    out = [
        f"# {d.title} — {d.window_end:%Y-%m-%d}",
        "",
        f"*{_when(d.window_start)} → {_when(d.window_end)} · {d.article_count} articles · "
        f"{d.duplicates_removed} duplicates removed*",
    ]
    for key, heading in SECTIONS:
        items = d.section(key)
        if not items:
            continue
        out += ["", f"## {heading}", ""]
        for n, i in enumerate(items, 1):
            date = f"{i.published:%Y-%m-%d %H:%M}" + (" (date uncertain)" if i.date_uncertain else "")
            source = f"{i.source} (T{i.tier})"
            if key == "top":
                out += [
                    f"### {n}. {_label(i)}",
                    f"**[{i.title}]({i.url})** — {source} · {date} · score {i.score:.0f} · id {i.article_id}",
                ]
                out += [i.summary] if i.summary else []
                out += [f"*{_related(i)}*"] if i.related_count else []
                out.append("")
            elif key == "noteworthy":
                tail = f" — {i.summary}" if i.summary else ""
                out.append(
                    f"- **{_label(i)}** — [{i.title}]({i.url}) — {source}, {date} · score {i.score:.0f}{tail}"
                )
            else:
                out.append(f"- [{i.title}]({i.url}) — {i.source}")
    out += ["", "## Feed Health", ""] + [f"- {line}" for line in _health_lines(d.health)]
    return "\n".join(out).rstrip() + "\n"


def to_html(d: Digest) -> str:
    e = html.escape
    out = [
        f"<article class='digest'><h1>{e(d.title)} — {d.window_end:%Y-%m-%d}</h1>",
        f"<p><em>{e(_when(d.window_start))} → {e(_when(d.window_end))} · {d.article_count} articles · "
        f"{d.duplicates_removed} duplicates removed</em></p>",
    ]
    for key, heading in SECTIONS:
        items = d.section(key)
        if not items:
            continue
        out.append(f"<h2>{heading}</h2><ol>" if key == "top" else f"<h2>{heading}</h2><ul>")
        for i in items:
            link = f"<a href='{e(i.url or '', quote=True)}'>{e(i.title)}</a>"
            meta = f"{e(i.source)} (T{i.tier}) · {i.published:%Y-%m-%d %H:%M} · score {i.score:.0f}"
            body = f"<p>{e(i.summary)}</p>" if i.summary else ""
            related = f"<p><em>{e(_related(i))}</em></p>" if key == "top" and i.related_count else ""
            out.append(f"<li><h3>{e(_label(i))}</h3><p>{link} — {meta}</p>{body}{related}</li>")
        out.append("</ol>" if key == "top" else "</ul>")
    out.append(
        "<h2>Feed Health</h2><ul>" + "".join(f"<li>{e(x)}</li>" for x in _health_lines(d.health)) + "</ul>"
    )
    out.append("</article>")
    return "\n".join(out) + "\n"


def to_json(d: Digest) -> str:
    return json.dumps(
        d.to_dict(), default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v), indent=2
    )


def render(d: Digest, fmt: str) -> str:
    return {"md": markdown, "html": to_html, "json": to_json}[fmt](d)
