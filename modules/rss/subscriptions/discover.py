"""Feed autodiscovery: find the feeds an HTML page advertises, and tell pages from feeds.

A page advertises a feed with `<link rel="alternate" type="application/rss+xml" href=...>` (also
Atom, RDF/RSS 1.0 and JSON Feed types), or with the HTML "feed" link type. Generic types
(application/json, application/xml, text/xml) also serve REST APIs and oEmbed, so they count only
when the link's title names a feed: WordPress advertises its REST API as
`rel="alternate" type="application/json" title="JSON"`, which is not a feed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import lxml.html
from lxml import etree

FEED_TYPES = frozenset(
    {"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/feed+json"}
)
GENERIC_TYPES = frozenset({"application/json", "application/xml", "text/xml"})
_FEED_TITLE = re.compile(r"\b(feed|rss|atom)\b", re.IGNORECASE)

# Tried, in order, by the caller when a page advertises nothing: WordPress, generic static-site
# generators (Jekyll, Hugo, Ghost …), Blogger.
COMMON_FEED_PATHS: tuple[str, ...] = (
    "/feed",
    "/rss",
    "/feed.xml",
    "/rss.xml",
    "/atom.xml",
    "/index.xml",
    "/feed.json",
    "/feeds/posts/default",
)

_HTML_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_SNIFF_BYTES = 4096
# What may precede the first element: whitespace, XML declaration/PIs, comments, a DOCTYPE.
_PROLOG = re.compile(r"\s*(?:<\?.*?\?>|<!--.*?-->|<!doctype[^>]*>)", re.IGNORECASE | re.DOTALL)
_FIRST_TAG = re.compile(r"<([a-z][\w.:-]*)", re.IGNORECASE)
_FEED_ROOTS = frozenset({"rss", "feed", "rdf"})  # local names: <rdf:RDF>, <atom:feed> count
_HTML_ROOTS = frozenset({"html", "head", "body"})


@dataclass(frozen=True, slots=True)
class DiscoveredFeed:
    url: str  # absolute http(s)
    title: str | None
    type: str | None  # MIME type as advertised, lowercased, without parameters


def discover_feeds(html: bytes, base_url: str) -> list[DiscoveredFeed]:
    """Feeds advertised by `<link>` elements, in document order, deduplicated by absolute URL.

    Relative hrefs resolve against the page's `<base href>` (itself resolved against `base_url`),
    else `base_url`. The legacy `feed:` scheme is unwrapped; other non-http(s) URLs are dropped.
    """
    try:
        document = lxml.html.document_fromstring(html)
    except etree.ParserError:  # no element at all (empty, whitespace, only a comment)
        return []
    base = base_url
    for element in document.iter("base"):
        if element.get("href", "").strip():
            base = urljoin(base_url, element.get("href", "").strip())
            break
    found: dict[str, DiscoveredFeed] = {}
    for link in document.iter("link"):
        rel = set((link.get("rel") or "").lower().split())
        mime = (link.get("type") or "").split(";")[0].strip().lower() or None
        title = (link.get("title") or "").strip() or None
        if not _advertises_feed(rel, mime, title):
            continue
        url = _absolute_feed_url(link.get("href") or "", base)
        if url is not None and url not in found:
            found[url] = DiscoveredFeed(url=url, title=title, type=mime)
    return list(found.values())


def looks_like_html(body: bytes, content_type: str | None) -> bool:
    """Whether a response is a web page rather than a feed.

    The body decides when its first element is recognisable (servers often label feeds text/html
    and pages text/plain); otherwise the Content-Type does.
    """
    head = _decode_head(body[:_SNIFF_BYTES])
    position = 0
    while match := _PROLOG.match(head, position):
        if match.group(0).strip().lower().startswith("<!doctype html"):
            return True
        position = match.end()
    rest = head[position:].lstrip()
    if rest.startswith(("{", "[")):
        return False  # JSON Feed (or JSON of some kind): not a page
    tag = _FIRST_TAG.match(rest)
    if tag is not None:
        name = tag.group(1).lower().rpartition(":")[2]
        if name in _HTML_ROOTS or name in _FEED_ROOTS:
            return name in _HTML_ROOTS
    mime = (content_type or "").split(";")[0].strip().lower()
    return mime in _HTML_CONTENT_TYPES


def _advertises_feed(rel: set[str], mime: str | None, title: str | None) -> bool:
    if "feed" in rel:
        return mime is None or mime in FEED_TYPES or mime in GENERIC_TYPES
    if "alternate" not in rel or mime is None:
        return False
    return mime in FEED_TYPES or (mime in GENERIC_TYPES and bool(title and _FEED_TITLE.search(title)))


def _absolute_feed_url(href: str, base: str) -> str | None:
    href = href.strip()
    if not href:
        return None
    if href.lower().startswith("feed:"):
        # feed://host/path (= http) and feed:https://host/path, from the days of browser feed readers
        inner = href[len("feed:") :]
        href = inner if inner.lower().startswith(("http:", "https:")) else "http:" + inner
    url = urljoin(base, href)
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.netloc else None


def _decode_head(head: bytes) -> str:
    """Enough of the body to see its first tag: UTF-16 by BOM, else any ASCII-compatible codec."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return head.decode("utf-16", errors="ignore")
    return head.removeprefix(b"\xef\xbb\xbf").decode("latin-1")
