"""Feed documents (bytes as fetched) → normalized `modules.rss.model.Feed`.

Dispatch: decode (encoding.py) → sniff JSON or markup → JSON Feed (jsonfeed.py) | lxml fast path
(xmlfast.py, with cheap repairs for almost-XML) → feedparser fallback (lenient.py) → normalize.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from modules.rss.model import Feed
from modules.rss.parse import lenient, xmlfast
from modules.rss.parse.encoding import Decoded, decode
from modules.rss.parse.jsonfeed import parse_json
from modules.rss.parse.normalize import normalize_feed
from modules.rss.parse.raw import FeedParseError, RawFeed

__all__ = ["FeedParseError", "parse_feed"]

_FEED_ELEMENT = re.compile(r"<(?:[\w.-]+:)?(?:rss|feed|rdf|channel|item|entry)[\s>/]", re.IGNORECASE)
_HTML_START = re.compile(r"\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)[\s>]", re.IGNORECASE | re.DOTALL)
_SNIFF_CHARS = 65536


def _looks_like_feed(text: str) -> bool:
    return _FEED_ELEMENT.search(text, 0, _SNIFF_CHARS) is not None


def _parse_repaired(data: bytes, url: str) -> RawFeed | None:
    try:
        return xmlfast.parse_xml(data, url)
    except xmlfast.XMLSyntaxError:
        return None


def _parse_markup(decoded: Decoded, url: str) -> RawFeed:
    """Strict XML; else the cheap repairs; else tags balanced as well (every item whose boundaries can be
    found is kept); else feedparser's loose parser."""
    try:
        return xmlfast.parse_xml(decoded.utf8, url)
    except xmlfast.XMLSyntaxError as exc:
        error = str(exc)
    repaired, repairs = xmlfast.repair(decoded.utf8)
    if repairs and (raw := _parse_repaired(repaired, url)) is not None:
        raw.warnings.append(f"not well-formed XML ({error}); repaired: {', '.join(repairs)}")
        return raw
    if _HTML_START.match(decoded.text):
        raise FeedParseError(f"document is an HTML page ({error})")
    balanced, fixes = xmlfast.balance(repaired)
    if fixes and (raw := _parse_repaired(balanced, url)) is not None:
        done = ", ".join([*repairs, f"balanced tags ({fixes} fixes)"])
        raw.warnings.append(f"not well-formed XML ({error}); repaired: {done}")
        return raw
    if not _looks_like_feed(decoded.text):
        raise FeedParseError(f"document is neither a feed nor well-formed XML ({error})")
    raw = lenient.parse_lenient(decoded.text, url)
    raw.warnings.append(f"not well-formed XML ({error}); parsed leniently")
    return raw


def _parse_raw(body: bytes, url: str, content_type: str | None) -> RawFeed:
    decoded = decode(body, content_type)
    text = decoded.text.lstrip()
    if not text:
        raise FeedParseError("empty document")
    if "\x00" in text:  # only a broken document has NUL characters, and no database column takes them
        text = text.replace("\x00", "")
        decoded = replace(decoded, text=decoded.text.replace("\x00", ""))
    if text[0] in "{[":
        raw = parse_json(decoded.text, url)
    elif text[0] == "<" or _looks_like_feed(text):
        raw = _parse_markup(decoded, url)
    else:
        raise FeedParseError(f"document is neither XML nor JSON (starts with {text[:40]!r})")
    raw.warnings[:0] = decoded.warnings
    return raw


def parse_feed(
    body: bytes,
    *,
    url: str,
    content_type: str | None = None,
    now: datetime | None = None,
    max_items: int | None = None,
    known: frozenset[str] | None = None,
) -> Feed:
    """Parse, normalize and sanitize a fetched feed document.

    `url` is where the document was fetched from (the base for relative links), `content_type` the HTTP
    Content-Type header, `now` the parse time used to flag future-dated entries, `max_items` the cap on
    entries per document (the newest are kept), `known` the raw hashes of the feed's stored entries
    (items with one are not normalized again: `Feed.same`; None: no raw hashes at all). Raises
    FeedParseError when the document is not a feed.
    """
    when = datetime.now(UTC) if now is None else now if now.tzinfo else now.replace(tzinfo=UTC)
    return normalize_feed(_parse_raw(body, url, content_type), now=when, max_items=max_items, known=known)
