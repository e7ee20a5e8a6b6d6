"""The intermediate shape every format parser produces and `modules.rss.parse.normalize` consumes (and the
error they raise for documents that are not feeds).

Parsers (lxml fast path, feedparser fallback, JSON Feed) only map their format's vocabulary onto these
slots; they keep values raw (unparsed dates, unresolved URLs, unsanitized HTML) so that all policy -
identity, URL cleaning, content priority, sanitizing - lives in one place and applies to every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class FeedParseError(Exception):
    """The document is not a feed: HTML page, empty body, JSON that is not a JSON Feed, garbage."""


@dataclass(frozen=True, slots=True)
class RawText:
    """A text construct: `html` says whether `value` is markup; `base` resolves its relative URLs."""

    value: str
    html: bool
    base: str


@dataclass(frozen=True, slots=True)
class RawEnclosure:
    """An RSS <enclosure> / Atom enclosure link, or a Media RSS <media:content> (`media`).

    Media RSS alternatives of one <media:group> share `group` (its position among the item's groups):
    normalize makes one media item of them, and none at all when the item has a real enclosure."""

    url: str
    type: str | None = None
    length: str | None = None
    medium: str | None = None  # Media RSS `medium` ("image", "video", ...)
    media: bool = False  # from <media:content>, not from <enclosure> or an enclosure link
    group: int | None = None  # the <media:group> it is an alternative in
    default: bool = False  # media:content isDefault="true"


@dataclass(slots=True)
class RawItem:
    """One item/entry. The four content slots mirror the design doc's priority order."""

    base: str  # xml:base in scope (or the document URL): resolves `link` and enclosure URLs
    guid: str | None = None  # <guid>, atom <id>, JSON `id`
    # RSS <guid isPermaLink="true"> (the default), or an Atom id: an absolute http(s) guid is the link when
    # there is no other (an Atom entry whose <link> is absent or empty often has its URL as id)
    guid_is_permalink: bool = False
    title: RawText | None = None
    link: str | None = None
    content_encoded: RawText | None = None  # content:encoded
    content: RawText | None = None  # atom <content>, JSON content_html/content_text
    description: RawText | None = None  # RSS <description>
    summary: RawText | None = None  # atom <summary>, JSON summary, itunes:summary, media:description
    published: str | None = None
    updated: str | None = None
    authors: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)  # terms (Atom), texts (RSS), keywords
    category_labels: dict[str, str] = field(default_factory=dict)  # Atom term → its differing label
    enclosures: list[RawEnclosure] = field(default_factory=list)
    image: str | None = None
    duration: str | None = None  # itunes:duration as written ("1:02:03", "3723", ...)


@dataclass(slots=True)
class RawFeed:
    format: str
    parser: str  # "fast", "lenient" or "json"
    base: str
    title: RawText | None = None
    link: str | None = None
    description: RawText | None = None
    language: str | None = None
    image: str | None = None
    ttl: str | None = None
    skip_hours: list[str] = field(default_factory=list)
    skip_days: list[str] = field(default_factory=list)
    # inherited by entries without authors: Atom/JSON feed authors, RSS channel authors and managingEditor
    authors: list[str] = field(default_factory=list)
    items: list[RawItem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Feed-level links other than alternate/enclosure: (rel, href), e.g. WebSub hub/self, RFC 5005 paging.
    links: list[tuple[str, str]] = field(default_factory=list)
