"""The one mapping from feed vocabulary onto `raw.RawItem` slots, shared by both XML parse paths.

The fast path reads these element keys ("prefix:local", see namespaces.py) in this order. The feedparser
path reads feedparser's keys, which feedparser fills from the same elements; where feedparser merges
elements, this mapping follows feedparser so that both paths agree (tests/rss/test_parse_paths.py runs
both over the same fixtures):

- dates: feedparser files `dc:date` under `updated` (with atom:updated and dcterms:modified) and
  dcterms:issued under `published`; normalize uses `updated` as the publication date when there is
  no `published`. Several update dates: the latest counts.
- keywords (itunes:keywords, media:keywords) are comma-separated categories, as feedparser's tags;
  <category> inside a <categories> wrapper and item-level <itunes:category text=".."> (nested ones too)
  are categories, as in feedparser.
- RSS <modified> is an update date (feedparser's `updated`), un-namespaced <body> is content (feedparser
  reads it as xhtml:body).
- Atom categories keep their `term`; a differing `label` is kept beside it, never instead of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from modules.rss.parse.dates import parse_date

TITLE_FALLBACK = ("itunes:title",)  # after <title>/dc:title/atom:title; then the description's first line
PUBLISHED = ("pubdate", "dcterms:issued", "atom:published", "atom:issued", "dcterms:created", "atom:created")
UPDATED = ("dc:date", "atom:updated", "atom:modified", "dcterms:modified", "modified")
AUTHORS = ("author", "dc:creator", "itunes:author", "atom:author")
FEED_AUTHORS = frozenset({*AUTHORS, "managingeditor"})  # a channel's, inherited by items without authors
CATEGORIES = ("category", "dc:subject")  # plus <categories> wrappers, itunes:category, atom:category
KEYWORDS = ("itunes:keywords", "media:keywords")
CONTENT_ENCODED = ("content:encoded", "xhtml:body", "body", "fullitem")  # full HTML content of an RSS item
DESCRIPTION = ("description", "dc:description")


def split_keywords(values: Iterable[str]) -> list[str]:
    """ "a, b,c" → ["a", "b", "c"] for every keywords element."""
    return [word for value in values for part in value.split(",") if (word := part.strip())]


def latest(values: Iterable[str]) -> str | None:
    """The latest of several date strings (as written); unparseable ones count only when nothing parses."""
    written = [v for v in values if v]
    if len(written) < 2:
        return written[0] if written else None
    dated = [(d, v) for v in written if (d := parse_date(v)) is not None]
    return max(dated, key=lambda pair: pair[0])[1] if dated else written[0]
