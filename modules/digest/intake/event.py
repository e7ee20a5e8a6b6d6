"""A bus event → Article (pure). Reads the structured `rss` key when present, FeedEater fields otherwise."""

from __future__ import annotations

import hashlib
import re
import uuid
from datetime import datetime
from typing import Any

from host.events import contract_violation
from modules.digest.dedup.urls import domain
from modules.digest.model import Article
from modules.digest.text import demojibake

BODY_MAX_WORDS = 3000
_DATA = re.compile(r"\d+(?:[.,]\d+)?\s?(?:%|percent|per cent|million|billion|bn|m\b)|[$€£¥]\s?\d", re.I)
_LIST_ITEM = re.compile(r"<li[\s>]", re.I)
_TABLE = re.compile(r"<table[\s>]", re.I)
_LINK = re.compile(r"<a\s[^>]*href=[\"']https?://([^/\"']+)", re.I)


class MalformedEvent(ValueError):
    """The event cannot become an article; the consumer dead-letters it with this reason."""


def _parse_time(value: Any, what: str) -> datetime:
    if not isinstance(value, str):
        raise MalformedEvent(f"{what} is missing or not a string")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise MalformedEvent(f"{what} is not an ISO-8601 time: {value[:40]!r}") from None
    if dt.tzinfo is None:
        raise MalformedEvent(f"{what} has no time zone: {value[:40]!r}")
    return dt


def depth_signals(text: str, html: str | None) -> tuple[str, ...]:
    """Step 4's content-depth signals: numbers/statistics, tables or lists of 3+, links to other sites."""
    found = []
    if len(_DATA.findall(text)) >= 1:
        found.append("data")
    if html and (_TABLE.search(html) or len(_LIST_ITEM.findall(html)) >= 3):
        found.append("structure")
    if html and _LINK.search(html):
        found.append("citations")
    return tuple(found)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def is_own(payload: dict[str, Any]) -> bool:
    """A digest we published ourselves (the subscription's wildcard also matches our subject)."""
    message = payload.get("message")
    if not isinstance(message, dict):
        return False
    source = message.get("source")
    return bool(message.get("isDigest")) or (isinstance(source, dict) and source.get("module") == "digest")


def to_article(payload: dict[str, Any]) -> Article:
    """Raises MalformedEvent with a one-line reason for an event that breaks the bus's message contract
    (host.events.contract_violation, docs/bus.md); every event that keeps it becomes an article."""
    if (why := contract_violation(payload)) is not None:
        raise MalformedEvent(why)
    kind = payload["type"]
    message = payload["message"]
    message_id = uuid.UUID(str(message["id"]))
    text = message["Message"]
    source = _object(message.get("source"))
    module = str(source.get("module") or "unknown")
    stream = str(source.get("stream") or "")
    tags = _object(message.get("tags"))
    rss = message.get("rss") if isinstance(message.get("rss"), dict) else None
    created = _parse_time(message.get("createdAt"), "message.createdAt")
    if rss is not None:
        title = str(rss.get("title") or "")
        url = rss.get("link") if isinstance(rss.get("link"), str) else None
        published = _parse_time(rss["published"], "rss.published") if rss.get("published") else created
        uncertain = bool(rss.get("dateUncertain")) or not rss.get("published")
        partial = bool(rss.get("partialContent"))
        content_hash = str(rss.get("contentHash") or "")
        html = rss.get("contentHtml") or rss.get("summaryHtml")
        feed_id = int(rss["feedId"]) if isinstance(rss.get("feedId"), int) else None
        revision = int(rss.get("revision") or 1)
        guid = rss.get("guid") if isinstance(rss.get("guid"), str) else None
    else:
        title = str(tags.get("title") or "")
        panel = message.get("followMePanel")
        url = panel.get("href") if isinstance(panel, dict) else tags.get("link")
        url = url if isinstance(url, str) else None
        published, uncertain, partial, html, feed_id, revision = created, False, False, None, None, 1
        guid = tags.get("guid") if isinstance(tags.get("guid"), str) else None
        content_hash = ""
    title, text = demojibake(title), demojibake(text)
    if not title:
        title = text.strip().split("\n", 1)[0][:300]  # never empty: the contract's Message is not
    body = text[len(title) :].strip() if text.startswith(title) else text.strip()
    words = body.split()
    return Article(
        message_id=message_id,
        source_module=module,
        stream=stream,
        feed_id=feed_id,
        source_name=str(tags.get("feedTitle") or message.get("From") or module)[:200],
        domain=domain(url),
        title=title,
        url=url,
        body=" ".join(words[:BODY_MAX_WORDS]),
        word_count=int(rss.get("wordCount") or len(words)) if rss else len(words),
        published_at=published,
        date_uncertain=uncertain,
        partial_content=partial,
        content_hash=content_hash or hashlib.sha256(text.encode()).hexdigest(),
        depth_signals=depth_signals(body, html if isinstance(html, str) else None),
        revision=revision,
        updated=kind == "MessageUpdated",
        guid=guid,
    )
