"""Fallback for documents lxml rejects even after repairs: feedparser's SAX + loose parser, mapped onto
the same `raw.RawFeed` shape as the fast path.

feedparser is given bytes in a BytesIO, never a str or bytes object directly: given a string it fetches
URLs and opens local files (a body of b"/etc/passwd" would be read from disk). Its own sanitizing and URL
resolution are turned off (they are slow and `normalize` does both, the same way for every format).
"""

from __future__ import annotations

import io
import re
from typing import Any
from urllib.parse import urljoin

from modules.rss.parse.raw import FeedParseError, RawEnclosure, RawFeed, RawItem, RawText

_FORMATS = {
    "rss090": "rss0.90", "rss091n": "rss0.91", "rss091u": "rss0.91", "rss092": "rss0.92",
    "rss093": "rss0.93", "rss094": "rss0.94", "rss20": "rss2.0", "rss10": "rss1.0", "rss": "rss",
    "atom01": "atom0.1", "atom02": "atom0.2", "atom03": "atom0.3", "atom10": "atom1.0", "atom": "atom",
}  # fmt: skip
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_HEADERS = {"content-type": "application/xml; charset=utf-8"}  # the text is already decoded: no re-guessing


def _get(d: Any, key: str) -> Any:
    """Plain dict lookup: FeedParserDict's own maps missing keys to others (`updated` → `published`)."""
    return dict.get(d, key) if isinstance(d, dict) else None


def _str(value: Any) -> str | None:
    """A stripped non-empty string. NUL goes: feedparser turns "&#0;" into one, no database stores it."""
    return (value.replace("\x00", "").strip() or None) if isinstance(value, str) else None


def _text(detail: Any, base: str) -> RawText | None:
    """A feedparser *_detail / content dict → RawText."""
    value = _str(_get(detail, "value"))
    if value is None:
        return None
    kind = str(_get(detail, "type") or "text/html")
    return RawText(value, "html" in kind, _join(base, _get(detail, "base")))


def _join(base: str, relative: Any) -> str:
    if not isinstance(relative, str) or not relative:
        return base
    try:
        return urljoin(base, relative)
    except ValueError:
        return base


def _item(entry: dict[str, Any], base: str, is_atom: bool) -> RawItem:
    contents = [c for c in _get(entry, "content") or () if isinstance(c, dict)]
    html_contents = [c for c in contents if "html" in str(_get(c, "type"))]
    text_contents = [c for c in contents if c not in html_contents]
    summary = _text(_get(entry, "summary_detail"), base)
    enclosures = [
        RawEnclosure(_get(e, "href"), _str(_get(e, "type")), _str(_get(e, "length")))
        for e in _get(entry, "enclosures") or ()
        if _str(_get(e, "href"))
    ]
    enclosures += [
        RawEnclosure(
            _get(m, "url"), _str(_get(m, "type")), _str(_get(m, "filesize")), _str(_get(m, "medium"))
        )
        for m in _get(entry, "media_content") or ()
        if _str(_get(m, "url"))
    ]
    thumbnails = [_get(t, "url") for t in _get(entry, "media_thumbnail") or () if _str(_get(t, "url"))]
    image = _get(entry, "image")
    guid, link = _str(_get(entry, "id")), _str(_get(entry, "link"))
    if link == guid and _get(entry, "guidislink"):
        link = None  # feedparser copied a permalink guid; normalize decides whether it is a URL
    return RawItem(
        base=_join(base, _get(_get(entry, "title_detail"), "base")),
        guid=guid,
        guid_is_permalink=bool(_get(entry, "guidislink")),
        title=_text(_get(entry, "title_detail"), base),
        link=_str(_get(entry, "feedburner_origlink")) or link,
        content=_text(html_contents[0], base) if html_contents else None,
        description=None if is_atom else summary,
        summary=(summary if is_atom else None) or (_text(text_contents[0], base) if text_contents else None),
        published=_str(_get(entry, "published")) or _str(_get(entry, "created")),
        updated=_str(_get(entry, "updated")),
        authors=[
            n for a in _get(entry, "authors") or () if (n := _str(_get(a, "name")) or _str(_get(a, "email")))
        ],
        categories=[
            n for t in _get(entry, "tags") or () if (n := _str(_get(t, "label")) or _str(_get(t, "term")))
        ],
        enclosures=enclosures,
        image=(_str(_get(image, "href")) if isinstance(image, dict) else None)
        or (thumbnails[0] if thumbnails else None),
        duration=_str(_get(entry, "itunes_duration")),
    )


def parse_lenient(text: str, url: str) -> RawFeed:
    """Parse a decoded document that is not well-formed XML. Raises FeedParseError if it is no feed."""
    import feedparser  # rarely needed (lxml reads most feeds) and slow to import: loaded on first use

    data = _XML_DECLARATION.sub("", text, count=1).encode("utf-8")
    try:
        result = feedparser.parse(
            io.BytesIO(data), response_headers=_HEADERS, sanitize_html=False, resolve_relative_uris=False
        )
    except Exception as exc:  # a third-party parser on hostile input: any failure means "not readable"
        raise FeedParseError(f"not a feed: the lenient parser failed ({exc!r})") from exc
    version = _get(result, "version") or ""
    feed = _get(result, "feed") or {}
    entries = _get(result, "entries") or []
    if not version and not entries:
        problem = _get(result, "bozo_exception")
        raise FeedParseError(f"not a feed: no RSS or Atom structure found ({problem or 'unknown format'})")
    is_atom = version.startswith("atom")
    image = _get(feed, "image")
    return RawFeed(
        format=_FORMATS.get(version, version or "rss"),
        parser="lenient",
        base=url,
        title=_text(_get(feed, "title_detail"), url),
        link=_str(_get(feed, "link")),
        description=_text(_get(feed, "subtitle_detail"), url),
        language=_str(_get(feed, "language")),
        image=(_str(_get(image, "href")) if isinstance(image, dict) else None) or _str(_get(feed, "logo")),
        ttl=_str(_get(feed, "ttl")),
        authors=[n for a in _get(feed, "authors") or () if (n := _str(_get(a, "name")))] if is_atom else [],
        items=[_item(entry, url, is_atom) for entry in entries],
    )
