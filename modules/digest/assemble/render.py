"""Digest → Markdown, HTML or JSON (pure). Markdown is the canonical text (the bus message's `Message`);
HTML is an email: one small inline-CSS template (tables for layout, as mail clients need), readable type,
light and dark colour schemes, scores, tiers and ids only with `details`."""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

from modules.digest.cluster.labels import headline
from modules.digest.model import Digest, Item

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


def _says_title(i: Item) -> bool:
    """The label is the lead's own headline: show the headline once, as the link."""
    return i.label == headline(i.title)


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


def _header(d: Digest) -> tuple[str, str]:
    return (
        f"{d.title} — {d.window_end:%Y-%m-%d}",
        f"{_when(d.window_start)} → {_when(d.window_end)} · {d.article_count} articles · "
        f"{d.duplicates_removed} duplicates removed",
    )


def markdown(d: Digest) -> str:
    """The canonical text, with each item's tier, score and article id (seed 002; `digest like ID`)."""
    title, line = _header(d)
    out = [f"# {title}", "", f"*{line}*"]
    for key, heading in SECTIONS:
        items = d.section(key)
        if not items:
            continue
        out += ["", f"## {heading}", ""]
        for n, i in enumerate(items, 1):
            date = f"{i.published:%Y-%m-%d %H:%M}" + (" (date uncertain)" if i.date_uncertain else "")
            source = f"{i.source} (T{i.tier})"
            extra = f" · score {i.score:.0f} · id {i.article_id}"
            link = f"[{i.title}]({i.url})"
            if key == "top":
                if _says_title(i):
                    trend = f"[{i.trend}] " if i.trend else ""
                    out += [f"### {n}. {trend}{link}", f"{source} · {date}{extra}"]
                else:
                    out += [f"### {n}. {_label(i)}", f"**{link}** — {source} · {date}{extra}"]
                out += [i.summary] if i.summary else []
                out += [f"*{_related(i)}*"] if i.related_count else []
                out.append("")
            elif key == "noteworthy":
                tail = f" — {i.summary}" if i.summary else ""
                lead = f"**{link}**" if _says_title(i) else f"**{_label(i)}** — {link}"
                out.append(f"- {lead} — {source}, {date}{extra}{tail}")
            else:
                out.append(f"- {link} — {i.source}")
    out += ["", "## Feed Health", ""] + [f"- {line}" for line in _health_lines(d.health)]
    return "\n".join(out).rstrip() + "\n"


# -- HTML (email) ---------------------------------------------------------------------------------
_FONT = '-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif'
_DARK = """@media (prefers-color-scheme: dark) {
  body, .page { background: #15171c !important; color: #e4e6eb !important; }
  .card { background: #1f232b !important; border-color: #2d323c !important; }
  .title, .label { color: #f2f3f5 !important; }
  .link { color: #8ab4f8 !important; }
  .muted { color: #a3a9b4 !important; }
}"""


def _href(url: str | None) -> str | None:
    """Only http(s) links: a feed's `javascript:` link must not reach a reader's mail client."""
    return url if url and url.lower().startswith(("http://", "https://")) else None


def _link(i: Item, style: str) -> str:
    e = html.escape
    href = _href(i.url)
    if href is None:
        return f"<span class='label' style='{style}'>{e(i.title)}</span>"
    return f"<a class='link' href='{e(href, quote=True)}' style='{style}'>{e(i.title)}</a>"


def _item_html(i: Item, key: str, details: bool) -> str:
    e = html.escape
    meta = f"{e(i.source)} · {i.published:%b %d, %H:%M}" + (" (date uncertain)" if i.date_uncertain else "")
    if details:
        meta += f" · T{i.tier} · score {i.score:.0f} · id {i.article_id}"
    trend = (
        f"<span style='font-size:11px;font-weight:700;letter-spacing:.05em;color:#b45309;'>{e(i.trend)}</span> "
        if i.trend
        else ""
    )
    size = "17px" if key == "top" else "15px"
    title = _link(i, f"font-size:{size};line-height:1.35;font-weight:600;color:#1a56db;text-decoration:none;")
    parts = []
    if not _says_title(i):
        parts.append(
            f"<div class='label' style='font-size:13px;font-weight:700;color:#1d2330;margin:0 0 4px;'>{trend}{e(i.label)}</div>"
        )
        trend = ""
    parts.append(f"<div>{trend}{title}</div>")
    parts.append(f"<div class='muted' style='font-size:13px;color:#5f6673;margin:4px 0 0;'>{meta}</div>")
    if i.summary and key != "also":
        parts.append(f"<p style='font-size:15px;line-height:1.55;margin:8px 0 0;'>{e(i.summary)}</p>")
    if i.related_count and key == "top":
        parts.append(
            f"<div class='muted' style='font-size:13px;color:#5f6673;margin:6px 0 0;'>{e(_related(i))}</div>"
        )
    return (
        "<tr><td class='card' style='background:#ffffff;border:1px solid #e3e6eb;border-radius:8px;"
        f"padding:14px 16px;'>{''.join(parts)}</td></tr><tr><td style='height:10px;line-height:10px;'>&nbsp;</td></tr>"
    )


def to_html(d: Digest, details: bool = False) -> str:
    """A standalone HTML email of the digest (inline styles; a dark scheme for clients that ask)."""
    e = html.escape
    title, line = _header(d)
    rows = [
        f"<tr><td style='padding:0 4px 16px;'><h1 class='title' style='font-size:24px;line-height:1.25;margin:0;color:#111827;'>{e(title)}</h1>"
        f"<div class='muted' style='font-size:13px;color:#5f6673;margin:6px 0 0;'>{e(line)}</div></td></tr>"
    ]
    for key, heading in SECTIONS:
        items = d.section(key)
        if not items:
            continue
        rows.append(
            "<tr><td class='muted' style='padding:10px 4px 8px;font-size:12px;font-weight:700;"
            f"letter-spacing:.08em;text-transform:uppercase;color:#5f6673;'>{e(heading)}</td></tr>"
        )
        rows += [_item_html(i, key, details) for i in items]
    health = "".join(f"<li style='margin:2px 0;'>{e(x)}</li>" for x in _health_lines(d.health))
    rows.append(
        "<tr><td class='muted' style='padding:10px 4px 0;font-size:13px;color:#5f6673;'>"
        f"<div style='font-weight:700;margin:0 0 4px;'>Feed health</div><ul style='margin:0;padding-left:18px;'>{health}</ul></td></tr>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta name='color-scheme' content='light dark'><meta name='supported-color-schemes' content='light dark'>"
        f"<title>{e(title)}</title><style>{_DARK}</style></head>"
        f"<body class='page' style='margin:0;padding:0;background:#f3f4f6;color:#1d2330;font-family:{_FONT};'>"
        "<table role='presentation' class='page' width='100%' cellpadding='0' cellspacing='0' "
        "style='background:#f3f4f6;'><tr><td align='center' style='padding:24px 12px;'>"
        "<table role='presentation' width='100%' cellpadding='0' cellspacing='0' style='max-width:640px;'>"
        + "".join(rows)
        + "</table></td></tr></table></body></html>\n"
    )


def to_json(d: Digest) -> str:
    return json.dumps(
        d.to_dict(), default=lambda v: v.isoformat() if isinstance(v, datetime) else str(v), indent=2
    )


def render(d: Digest, fmt: str, details: bool = False) -> str:
    if fmt == "md":
        return markdown(d)
    if fmt == "html":
        return to_html(d, details=details)
    return to_json(d)
