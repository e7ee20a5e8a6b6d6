"""Feed item → Discord embed (pure): what a channel sees for one entry.

Works on `Item`, built either from a bus event's `message.rss` key or from a freshly parsed entry (the
preview of `/feed add`), so both paths render identically. Discord refuses a whole message when an
embed exceeds its limits (title 256, description 4096, author name 256, footer 2048, all text 6000
characters), so every field is cut here, never by Discord.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from modules.discord.rssapi import FeedEntry

TITLE_MAX = 256
DESCRIPTION_MAX = 4096
AUTHOR_MAX = 256
FOOTER_MAX = 2048
TOTAL_MAX = 6000
URL_MAX = 2048  # longer URLs are rejected by Discord; they are dropped rather than cut
SUMMARY_CHARS = 300  # "the first ~300 characters" of the summary
RELATIVE_FOR = timedelta(days=7)  # newer dates read "3 hours ago", older ones are absolute
IMAGE_TYPES = ("image/",)


@dataclass(frozen=True, slots=True)
class Item:
    """The fields of one entry that a post needs."""

    guid: str
    title: str
    link: str | None
    summary_html: str | None
    image: str | None
    published: datetime | None

    @classmethod
    def from_rss(cls, rss: Mapping[str, Any]) -> Item:
        """From the `rss` key of a MessageCreated event (docs/bus.md)."""
        published = rss.get("published")
        return cls(
            guid=str(rss["guid"]),
            title=str(rss.get("title") or ""),
            link=rss.get("link"),
            summary_html=rss.get("summaryHtml") or rss.get("contentHtml"),
            image=rss.get("image") or _enclosure_image(rss.get("enclosures") or []),
            published=datetime.fromisoformat(published.replace("Z", "+00:00")) if published else None,
        )

    @classmethod
    def from_entry(cls, entry: FeedEntry) -> Item:
        return cls(
            guid=entry.guid,
            title=entry.title,
            link=entry.link,
            summary_html=entry.summary_html or entry.content_html,
            image=entry.image or _enclosure_image([{"url": e.url, "type": e.type} for e in entry.enclosures]),
            published=entry.published,
        )

    def to_json(self) -> dict[str, Any]:
        """The queue's stored form (the same keys `from_rss` reads)."""
        return {
            "guid": self.guid,
            "title": self.title,
            "link": self.link,
            "summaryHtml": self.summary_html,
            "image": self.image,
            "published": self.published.isoformat() if self.published else None,
        }


@dataclass(frozen=True, slots=True)
class Source:
    """The subscription an item is posted for."""

    id: int | None  # the subscription id users see in /feed list and remove (None: a preview)
    name: str
    url: str
    icon: str | None = None


def _enclosure_image(enclosures: list[Mapping[str, Any]]) -> str | None:
    for enc in enclosures:
        if str(enc.get("type") or "").startswith(IMAGE_TYPES) and enc.get("url"):
            return str(enc["url"])
    return None


def cut(text: str, limit: int, *, ellipsis: str = "…") -> str:
    """`text` in at most `limit` characters, cut at the last word boundary that fits."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = limit - len(ellipsis)
    head = text[: room + 1]
    space = head.rfind(" ")
    head = head[:space] if space > room // 2 else head[:room]  # one huge word: cut inside it
    return head.rstrip(" ,;:.-") + ellipsis


def colour(feed_url: str) -> int:
    """A stable 24-bit colour per feed (the same URL always gets the same colour)."""
    return int.from_bytes(hashlib.sha256(feed_url.encode()).digest()[:3], "big")


def when(published: datetime, now: datetime) -> str:
    """ "3 hours ago" for recent dates, "2024-05-01 14:03 UTC" otherwise."""
    age = now - published
    if timedelta(0) <= age < RELATIVE_FOR:
        for unit, seconds in (("day", 86400), ("hour", 3600), ("minute", 60)):
            n = int(age.total_seconds() // seconds)
            if n >= 1:
                return f"{n} {unit}{'s' if n > 1 else ''} ago"
        return "just now"
    return published.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _url(url: str | None) -> str | None:
    return url if url and url.startswith(("http://", "https://")) and len(url) <= URL_MAX else None


def embed(item: Item, source: Source, *, now: datetime, to_text: Callable[[str], str]) -> dict[str, Any]:
    """The embed as Discord's JSON (discord.Embed.from_dict reads it), within every limit."""
    parts = [when(item.published, now)] if item.published is not None else []
    parts += [f"Feed {source.id}"] if source.id is not None else []
    out: dict[str, Any] = {
        "type": "rich",
        "title": cut(item.title or item.link or "(untitled)", TITLE_MAX),
        "color": colour(source.url),
        "author": {"name": cut(source.name or source.url, AUTHOR_MAX)},
    }
    if parts:  # Discord refuses an empty footer text
        out["footer"] = {"text": cut(" · ".join(parts), FOOTER_MAX)}
    if link := _url(item.link):
        out["url"] = link
    if icon := _url(source.icon):
        out["author"]["icon_url"] = icon
    if image := _url(item.image):
        out["image"] = {"url": image}
    if item.published is not None:
        out["timestamp"] = item.published.astimezone(UTC).isoformat()
    summary = to_text(item.summary_html) if item.summary_html else ""  # rss's html_to_text (ctx.api)
    if summary.strip():
        used = total_length(out)
        out["description"] = cut(summary, min(SUMMARY_CHARS, DESCRIPTION_MAX, TOTAL_MAX - used))
    return out


def total_length(e: Mapping[str, Any]) -> int:
    """The characters Discord counts against the 6000 limit."""
    return sum(
        len(s)
        for s in (
            e.get("title", ""),
            e.get("description", ""),
            e.get("author", {}).get("name", ""),
            e.get("footer", {}).get("text", ""),
        )
    )
