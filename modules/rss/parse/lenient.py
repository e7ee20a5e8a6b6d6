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

from modules.rss.parse import xmlfast
from modules.rss.parse.namespaces import canonical_declarations
from modules.rss.parse.raw import FeedParseError, RawEnclosure, RawFeed, RawItem, RawText

_FORMATS = {
    "rss090": "rss0.90", "rss091n": "rss0.91", "rss091u": "rss0.91", "rss092": "rss0.92",
    "rss093": "rss0.93", "rss094": "rss0.94", "rss20": "rss2.0", "rss10": "rss1.0", "rss": "rss",
    "atom01": "atom0.1", "atom02": "atom0.2", "atom03": "atom0.3", "atom10": "atom1.0", "atom": "atom",
}  # fmt: skip
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*>")
_VOID_END_TAG = re.compile(
    r"</(?:area|base|br|col|embed|hr|img|input|link|meta|param|source|track|wbr)\s*>", re.IGNORECASE
)
_MAILTO_REMNANT = re.compile(r"\s*[(<\[]\s*(?:mailto:)?\s*$")
_HEADERS = {"content-type": "application/xml; charset=utf-8"}  # the text is already decoded: no re-guessing


def _get(d: Any, key: str) -> Any:
    """Plain dict lookup: FeedParserDict's own maps missing keys to others (`updated` → `published`)."""
    return dict.get(d, key) if isinstance(d, dict) else None


def _str(value: Any) -> str | None:
    """A stripped non-empty string. NUL goes: feedparser turns "&#0;" into one, no database stores it."""
    return (value.replace("\x00", "").strip() or None) if isinstance(value, str) else None


def _text(detail: Any, base: str, *, rss: bool = False) -> RawText | None:
    """A feedparser *_detail / content dict → RawText. RSS text is HTML whatever feedparser guessed (its
    guess says text/plain for `&lt;script&gt;`), as on the fast path: only Atom declares types."""
    value = _str(_get(detail, "value"))
    if value is None:
        return None
    kind = str(_get(detail, "type") or "text/html")
    if "xhtml" in kind:  # feedparser writes XHTML's void elements as <br></br>: HTML reads two <br>
        value = _VOID_END_TAG.sub("", value)
    return RawText(value, rss or "html" in kind, _join(base, _get(detail, "base")))


def _join(base: str, relative: Any) -> str:
    if not isinstance(relative, str) or not relative:
        return base
    try:
        return urljoin(base, relative)
    except ValueError:
        return base


def _enclosure_links(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """feedparser's `enclosures` exists only through FeedParserDict.__getitem__ (computed from `links`
    on access), so a plain dict lookup finds none: read the links themselves."""
    return [link for link in _get(entry, "links") or () if _get(link, "rel") == "enclosure"]


def _tags(entry: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Category terms (keywords included: feedparser files them as tags) and labels that differ."""
    terms: list[str] = []
    labels: dict[str, str] = {}
    for tag in _get(entry, "tags") or ():
        term, label = _str(_get(tag, "term")), _str(_get(tag, "label"))
        term = term or label
        if term:
            terms.append(term)
            if label and label != term:
                labels[term] = label
    return terms, labels


def _person(author: Any) -> str | None:
    """A name, else the email. feedparser cuts the email out of "Name (mailto:a@b.c)" and leaves
    "Name (mailto:" as the name: that remnant goes."""
    name = _str(_get(author, "name"))
    return (_MAILTO_REMNANT.sub("", name) if name else None) or _str(_get(author, "email"))


def _item(entry: dict[str, Any], base: str, is_atom: bool, side: xmlfast.Structured | None) -> RawItem:
    """feedparser's entry; its structured fields from lxml's reading of the same item (`side`), when the
    two parsers found the same items."""
    contents = [c for c in _get(entry, "content") or () if isinstance(c, dict)]
    html_contents = [c for c in contents if "html" in str(_get(c, "type"))]
    best_content = html_contents[0] if html_contents else contents[0] if contents else None
    summary = _text(_get(entry, "summary_detail"), base, rss=not is_atom)
    enclosures = [
        RawEnclosure(_get(e, "href"), _str(_get(e, "type")), _str(_get(e, "length")))
        for e in _enclosure_links(entry)
        if _str(_get(e, "href"))
    ]
    enclosures += [
        RawEnclosure(
            _get(m, "url"), _str(_get(m, "type")), _str(_get(m, "filesize")), _str(_get(m, "medium")), True
        )
        for m in _get(entry, "media_content") or ()
        if _str(_get(m, "url"))
    ]
    thumbnails = [_get(t, "url") for t in _get(entry, "media_thumbnail") or () if _str(_get(t, "url"))]
    categories, labels = _tags(entry)
    title = _text(_get(entry, "title_detail"), base, rss=not is_atom)
    if title is None and (itunes_title := _str(_get(entry, "itunes_title"))):
        title = RawText(itunes_title, True, base)
    image = _get(entry, "image")
    guid, link = _str(_get(entry, "id")), _str(_get(entry, "link"))
    if link == guid and _get(entry, "guidislink"):
        link = None  # feedparser copied a permalink guid; normalize decides whether it is a URL
    image = (_str(_get(image, "href")) if isinstance(image, dict) else None) or (
        thumbnails[0] if thumbnails else None
    )
    updated = _str(_get(entry, "updated"))
    if side is not None:  # lxml's reading where it found something
        updated, image = side.updated or updated, side.image or image
        enclosures = side.enclosures or enclosures
        categories, labels = (
            (side.categories, side.category_labels) if side.categories else (categories, labels)
        )
    return RawItem(
        base=_join(base, _get(_get(entry, "title_detail"), "base")),
        guid=guid,
        guid_is_permalink=bool(_get(entry, "guidislink")) or is_atom,
        title=title,
        link=_str(_get(entry, "feedburner_origlink")) or link,
        content=_text(best_content, base),
        description=None if is_atom else summary,
        summary=summary if is_atom else None,
        published=_str(_get(entry, "published")) or _str(_get(entry, "created")),
        updated=updated,
        authors=[n for a in _get(entry, "authors") or () if (n := _person(a))],
        categories=categories,
        category_labels=labels,
        enclosures=enclosures,
        image=image,
        duration=_str(_get(entry, "itunes_duration")),
    )


def _http_id(feed: dict[str, Any]) -> str | None:
    """A feed without an alternate link: its id, when that is a web address (as the fast path)."""
    value = _str(_get(feed, "id"))
    return value if value and value.lower().startswith(("http://", "https://")) else None


def parse_lenient(text: str, url: str) -> RawFeed:
    """Parse a decoded document that is not well-formed XML. Raises FeedParseError if it is no feed."""
    import feedparser  # rarely needed (lxml reads most feeds) and slow to import: loaded on first use

    text, refused = xmlfast.expand_internal_entities(text)
    data = canonical_declarations(_XML_DECLARATION.sub("", text, count=1)).encode("utf-8")
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
    side: list[xmlfast.Structured | None] = list(xmlfast.structured_items(data, url))
    if len(side) != len(entries):  # the two parsers recovered different items: trust feedparser alone
        side = [None] * len(entries)
    warnings = (
        [f"{refused} DTD entity declaration(s) refused (external, looping or too large)"] if refused else []
    )
    return RawFeed(
        format=_FORMATS.get(version, version or "rss"),
        parser="lenient",
        warnings=warnings,
        base=url,
        title=_text(_get(feed, "title_detail"), url, rss=not is_atom),
        link=_str(_get(feed, "link")) or _http_id(feed),
        description=_text(_get(feed, "subtitle_detail"), url, rss=not is_atom),
        language=_str(_get(feed, "language")),
        image=(_str(_get(image, "href")) if isinstance(image, dict) else None) or _str(_get(feed, "logo")),
        ttl=_str(_get(feed, "ttl")),
        authors=[n for a in _get(feed, "authors") or () if (n := _person(a))],
        items=[
            _item(entry, url, is_atom, structured) for entry, structured in zip(entries, side, strict=True)
        ],
        links=[
            (rel, href)
            for link in _get(feed, "links") or ()
            if (rel := (_str(_get(link, "rel")) or "alternate").lower()) not in ("alternate", "enclosure")
            and (href := _str(_get(link, "href")))
        ],
    )
