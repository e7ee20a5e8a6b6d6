"""Title, author and publication date of an article page, for entries whose feed left them out.

Pages state them several ways; the most deliberate wins: schema.org JSON-LD (`headline`, `author`,
`datePublished`), then OpenGraph / article: properties, then named <meta> tags (author, date,
Dublin Core, citation_*, parsely), then <time datetime> (the one marked as the publication date, else
the first inside <article>), and the <title> element for the title. Pure: the fulltext job calls it
on the page it already fetched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lxml import etree, html

from modules.rss.parse.dates import parse_date

_ARTICLE_TYPES = frozenset({
    "article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle", "report",
    "scholarlyarticle", "techarticle", "opinionnewsarticle", "reviewnewsarticle", "liveblogposting",
    "socialmediaposting", "posting", "webpage",
})  # fmt: skip
_TITLE_META = ("og:title", "twitter:title", "dc.title", "citation_title", "title")
_AUTHOR_META = (
    "author",
    "article:author",
    "dc.creator",
    "citation_author",
    "parsely-author",
    "sailthru.author",
)
_DATE_META = (
    "article:published_time", "og:published_time", "datepublished", "date", "dc.date.issued", "dc.date",
    "dcterms.issued", "dcterms.created", "citation_publication_date", "citation_date", "parsely-pub-date",
    "sailthru.date", "pubdate", "publishdate", "publish-date",
)  # fmt: skip
_MAX_FIELD = 300  # a "title" or "author" longer than this is page text, not metadata


@dataclass(frozen=True, slots=True)
class ArticleMeta:
    title: str | None = None
    author: str | None = None
    published: datetime | None = None


def _clean(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())
    return text if text and len(text) <= _MAX_FIELD else None


def _person(value: Any) -> str | None:
    """A schema.org author: "Name", {"name": ...}, or a list of those (the first); never a URL."""
    if isinstance(value, list):
        return next((name for v in value if (name := _person(v))), None)
    name = _clean(value.get("name") if isinstance(value, dict) else value)
    return None if name is None or name.lower().startswith(("http://", "https://")) else name


def _json_ld_objects(root: etree._Element) -> Iterator[dict[str, Any]]:
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text)
        except (ValueError, RecursionError):
            continue
        stack = data if isinstance(data, list) else [data]
        while stack:
            item = stack.pop(0)
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.get("@graph") or ())
                yield item


def _is_article(obj: dict[str, Any]) -> bool:
    kinds = obj.get("@type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    return any(isinstance(k, str) and k.lower() in _ARTICLE_TYPES for k in kinds)


def _meta(root: etree._Element) -> dict[str, str]:
    """<meta> content by lower-cased name, property or itemprop (the first of each wins)."""
    found: dict[str, str] = {}
    for el in root.iter("meta"):
        content = el.get("content")
        for attr in ("property", "name", "itemprop"):
            key = (el.get(attr) or "").strip().lower()
            if key and content and key not in found:
                found[key] = content
    return found


def _time_date(root: etree._Element) -> datetime | None:
    times = [el for el in root.iter("time") if el.get("datetime")]
    marked = [el for el in times if el.get("itemprop") == "datePublished" or el.get("pubdate") is not None]
    in_article = [el for el in times if any(a.tag == "article" for a in el.iterancestors())]
    for el in (*marked, *in_article[:1]):
        if (when := parse_date(el.get("datetime"))) is not None:
            return when
    return None


def article_metadata(page: str) -> ArticleMeta:
    """What the page says about itself; fields it does not state are None."""
    try:
        root = html.document_fromstring(page)
    except (etree.ParserError, ValueError):
        return ArticleMeta()
    title = author = None
    published = None
    for obj in _json_ld_objects(root):
        if _is_article(obj):
            title = title or _clean(obj.get("headline")) or _clean(obj.get("name"))
            author = author or _person(obj.get("author"))
            published = published or parse_date(_clean(obj.get("datePublished")))
    meta = _meta(root)
    title = title or next((t for key in _TITLE_META if (t := _clean(meta.get(key)))), None)
    author = author or next((a for key in _AUTHOR_META if (a := _person(meta.get(key)))), None)
    for key in _DATE_META:
        if published is None:
            published = parse_date(meta.get(key))
    if title is None:
        title = _clean(root.findtext(".//title"))
    return ArticleMeta(title, author, published or _time_date(root))
