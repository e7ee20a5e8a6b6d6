"""Raw parsed items → `model.Entry`: identity, clean absolute URLs, best content, dates, text metrics, hash.

All policy that must be the same for RSS, Atom and JSON Feed lives here, so a feed that switches format
(or falls back to the lenient parser) keeps its entries' identities and hashes.
"""

from __future__ import annotations

import hashlib
import html as htmllib
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urljoin, urlsplit, urlunsplit

import nh3

from modules.rss.model import Enclosure, Entry, Feed, SameItem
from modules.rss.parse.dates import parse_date
from modules.rss.parse.raw import RawEnclosure, RawFeed, RawItem, RawText
from modules.rss.parse.sanitize import html_to_text, plain_text, sanitize_html, sanitized_text, text_to_html

# Bump when normalize or sanitize change what an item becomes: every stored raw hash then differs once,
# so every item is normalized again (and revised if its Entry changed) instead of skipped as unchanged.
# The sanitizer library's version is part of the hash for the same reason.
NORMALIZER_VERSION = 1
_RAW_HASH_VERSION = (
    f"normalizer {NORMALIZER_VERSION}, nh3 {getattr(nh3, '__version__', '?')}"  # not in nh3's stubs
)
WORDS_PER_MINUTE = 230
FUTURE_TOLERANCE = timedelta(minutes=5)  # clock skew between publisher and us is not "future"
SHORT_EXCERPT_WORDS = 80  # a description/summary shorter than this is a teaser, not the article
TRUNCATED_MAX_WORDS = 300  # "..." at the end of anything shorter means the text was cut
# Placeholder dates (0001-01-01, the unix epoch) are "no date", not a real publication time.
EARLIEST_REAL_DATE = datetime(1971, 1, 1, tzinfo=UTC)
_UNDATED = datetime.max.replace(tzinfo=UTC)

_TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "igshid", "mc_cid",
    "mc_eid", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "vero_conv", "_openstat",
})  # fmt: skip
_TRACKING_PREFIXES = ("utm_",)
_TRACKING_HINT = re.compile(r"utm_|clid|mc_[ce]id|_hs|mkt_tok|igshid|oly_|vero_|_openstat", re.IGNORECASE)
_SIMPLE_URL = re.compile(r"https?://[a-z0-9.\-]+(?::[0-9]{1,5})?(?=[/?#]|$)")  # lower-case host, no userinfo
_URL_WHITESPACE = re.compile(r"\s*[\t\r\n]\s*")  # URLs wrapped across lines
_TRUNCATION_MARKER = re.compile(
    r"(?:\.\.\.|…|\((?:read )?more\W*\)|read more|continue reading|read the (?:full|rest)\b.{0,30}|more\s*»)\W*$",
    re.IGNORECASE,
)
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")  # no spaces between words: count characters
# RSS: "a@b.c (Name)"; in practice also "Name <a@b.c>", "Name (a@b.c)", "Name (mailto:a@b.c)"
_EMAIL_WITH_NAME = re.compile(
    r"^(?:mailto:)?\S+@\S+\s*\((.+)\)$|^(.+?)\s*(?:<(?:mailto:)?\S+@\S+>|\((?:mailto:)?\S+@\S+\))$"
)
# "Name, Senior Editor": what follows the comma is a job when it names one ("Sammy Davis, Jr." is a name).
_JOB_TITLE = re.compile(
    r"^([^,]+?),\s*(?=[^,]*\b(?:editor|writer|reporter|correspondent|contributor|columnist|producer|director"
    r"|manager|staff|journalist|critic|analyst|founder|ceo|cto|president|host|chief|senior|associate"
    r"|assistant|intern|photographer|researcher|professor|fellow|engineer|developer|designer|officer|head"
    r"|lead|team|desk|blogger|anchor|coordinator|specialist|strategist|consultant|scientist|economist"
    r"|editorial|newsroom)\b).+$",
    re.IGNORECASE,
)
_BARE_ADDRESS = re.compile(r"^(?:mailto:)?[^\s@]+@\S+$")
_TITLE_FROM_TEXT_CHARS = 200  # a title made from the first line of the description is cut to this
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


# --- URLs ------------------------------------------------------------------------------------------------


def _strip_tracking(query: str) -> str:
    if not query or not _TRACKING_HINT.search(query):
        return query
    kept = []
    for pair in query.split("&"):
        name = pair.split("=", 1)[0].lower()
        if name not in _TRACKING_PARAMS and not name.startswith(_TRACKING_PREFIXES):
            kept.append(pair)
    return "&".join(kept)


def _tidy(value: str) -> str:
    """A URL as written, unwrapped (feeds wrap long URLs across lines) and with the characters that are
    never part of a URL escaped."""
    value = value.strip()
    if "\n" in value or "\r" in value or "\t" in value:
        value = _URL_WHITESPACE.sub("", value)
    return value.replace(" ", "%20").replace('"', "%22").replace("<", "%3C").replace(">", "%3E")


def clean_url(value: str | None, base: str | None = None) -> str | None:
    """Absolute http(s) URL with lower-case scheme/host and tracking parameters removed; else None."""
    if not value:
        return None
    value = _tidy(value)
    simple = _SIMPLE_URL.match(value)
    if simple and not _TRACKING_HINT.search(value, simple.end()):
        return value  # already clean: the common case, without urllib's cost
    try:
        if base and not value.startswith(("http://", "https://")):
            value = urljoin(base, value)
        parts = urlsplit(value)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            return None
        return urlunsplit(
            (scheme, parts.netloc.lower(), parts.path, _strip_tracking(parts.query), parts.fragment)
        )
    except ValueError:  # malformed IPv6 host, bad port
        return None


_ABSOLUTE_URL = re.compile(r"https?://[^/?#\s]+", re.IGNORECASE)
_MEDIA_EXTENSIONS = frozenset({
    "mp3", "m4a", "m4b", "aac", "ogg", "oga", "opus", "wav", "flac", "mp4", "m4v", "mov", "webm", "mkv",
    "avi", "mpg", "mpeg", "3gp", "jpg", "jpeg", "png", "gif", "webp", "avif", "svg", "pdf", "epub", "zip",
    "torrent",
})  # fmt: skip
_PAGE_TYPES = ("text/html", "application/xhtml+xml")


def media_url(value: str | None, base: str) -> str | None:
    """An enclosure or image URL as published, only made absolute: it names a file people download, and
    its query (a signature, the publisher's own accounting) is part of it. Identity URLs are cleaned
    (clean_url), media URLs never."""
    if not value:
        return None
    value = _tidy(value)
    if _ABSOLUTE_URL.match(value):
        return value
    url = absolute_url(value, base)
    return url if url and urlsplit(url).hostname else None


def absolute_url(href: str, base: str) -> str | None:
    """A feed relation's URL made absolute but otherwise as written: a WebSub topic must match the
    hub's byte for byte, so no tracking-parameter cleaning here."""
    try:
        url = urljoin(base, href.strip())
    except ValueError:
        return None
    return url if urlsplit(url).scheme in ("http", "https") else None


def normalize_guid(guid: str) -> str:
    """Strip whitespace; lower-case scheme and host of URL guids (paths are case-sensitive: keep them)."""
    guid = " ".join(guid.split())
    if guid[:4].lower() == "http":
        if _SIMPLE_URL.match(guid) and "?#" not in guid and not guid.endswith(("?", "#")):
            return guid  # already lower-case, and no empty query or fragment for urlunsplit to drop
        try:
            parts = urlsplit(guid)
        except ValueError:
            return guid
        if parts.scheme.lower() in ("http", "https") and parts.netloc:
            return urlunsplit(
                (parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, parts.fragment)
            )
    return guid


# --- small field parsers ---------------------------------------------------------------------------------


def _plain(text: RawText | None) -> str:
    """Single-line plain text of a title-like construct."""
    if text is None:
        return ""
    return " ".join((html_to_text(text.value) if text.html else text.value).split())


def _int(value: str | None) -> int | None:
    try:
        number = int(str(value).strip())
    except ValueError:
        return None
    return number if number >= 0 else None


def parse_duration(value: str | None) -> int | None:
    """itunes:duration ("1:02:03", "62:03", "3723", "3723.5") → seconds."""
    if not value:
        return None
    parts = value.strip().split(":")
    if len(parts) > 3:
        return None
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        return None
    if any(n < 0 or not math.isfinite(n) for n in numbers):
        return None
    seconds = 0.0
    for n in numbers:
        seconds = seconds * 60 + n
    return round(seconds)


def _word_count(text: str) -> int:
    """Words of normalized text (single spaces, "\n" lines, "\n\n" paragraphs): counting separators
    is exact for that shape and much cheaper than splitting megabytes of content."""
    if not text:
        return 0
    words = text.count(" ") + text.count("\n") - text.count("\n\n") + 1
    if text.isascii() or not _CJK.search(text):
        return words
    return len(_CJK.sub(" ", text).split()) + len(_CJK.findall(text))


def _dedupe(values: list[str]) -> list[str]:
    return list(dict.fromkeys(" ".join(v.split()) for v in values if v.strip()))


def _categories(values: list[str]) -> list[str]:
    """Seed 002: categories de-duplicated case-insensitively, the first spelling kept ("News", "news")."""
    found: dict[str, str] = {}
    for value in values:
        if name := " ".join(value.split()):
            found.setdefault(name.casefold(), name)
    return list(found.values())


def _author_name(value: str) -> str:
    """A name, not an address or a job: RSS <author> is "email (Name)" by the spec, "Name <email>",
    "Name(mailto:&#111;&#110;…)" (an address hidden behind character references) or "Name, Senior
    Editor" in practice."""
    value = value.strip()
    if "&" in value:
        value = htmllib.unescape(value)
    m = _EMAIL_WITH_NAME.match(value)
    if m:
        value = m.group(1) or m.group(2)
    job = _JOB_TITLE.match(value) if "," in value else None
    return job.group(1) if job else value


def _author_names(values: list[str]) -> list[str]:
    return _dedupe([_author_name(value) for value in values])


def _title_from_text(text: str) -> str:
    """Seed 002: an item without a title is named by the first line of its description."""
    line = text.split("\n", 1)[0].strip()
    if len(line) <= _TITLE_FROM_TEXT_CHARS:
        return line
    return line[:_TITLE_FROM_TEXT_CHARS].rsplit(" ", 1)[0] + "…"


def _is_media(e: RawEnclosure) -> bool:
    """A media file: a declared media type, else a media file name. A page (an embed player, an article)
    with no media type is no enclosure."""
    kind = (e.type or "").strip().lower()
    if kind:
        return not kind.startswith(_PAGE_TYPES)
    path = e.url.split("?", 1)[0].split("#", 1)[0]
    return path.rsplit(".", 1)[-1].lower() in _MEDIA_EXTENSIONS if "." in path.rsplit("/", 1)[-1] else False


def _chosen_media(raw: list[RawEnclosure]) -> list[RawEnclosure]:
    """The enclosures of an item: its real ones (<enclosure>, Atom enclosure links) when it has any;
    otherwise its Media RSS items, one per media:group (the isDefault alternative, else the first), pages
    left out."""
    real = [e for e in raw if not e.media]
    if real:
        return real
    chosen: list[RawEnclosure] = []
    picked: dict[int, int] = {}  # group → index in `chosen`
    for e in raw:
        if not _is_media(e):
            continue
        if e.group is None:
            chosen.append(e)
        elif e.group not in picked:
            picked[e.group] = len(chosen)
            chosen.append(e)
        elif e.default and not chosen[picked[e.group]].default:
            chosen[picked[e.group]] = e
    return chosen


def _enclosures(raw: list[RawEnclosure], base: str) -> list[Enclosure]:
    found: dict[str, Enclosure] = {}
    for e in _chosen_media(raw):
        url = media_url(e.url, base)
        if url and url not in found:
            found[url] = Enclosure(url, (e.type or "").strip().lower() or None, _int(e.length))
    return list(found.values())


_FIRST_IMG = re.compile(r'<img\s[^>]*?src="([^"]+)"[^>]*>')
_PIXEL = re.compile(r'\s(?:width|height)="[01]"')


def _image(item: RawItem, enclosures: list[Enclosure], content_html: str) -> str | None:
    """The item's image, else a Media RSS image, an image enclosure, the first <img> of the body (seed
    002; tracking pixels are no image). Media URLs stay as published."""
    image = media_url(item.image, item.base)
    if image:
        return image
    for e in item.enclosures:
        if e.medium == "image" and (url := media_url(e.url, item.base)):
            return url
    for enclosure in enclosures:
        if (enclosure.type or "").startswith("image/"):
            return enclosure.url
    for m in _FIRST_IMG.finditer(content_html) if "<img" in content_html else ():
        if not _PIXEL.search(m[0]):
            return htmllib.unescape(m[1])
    return None


# --- the entry -------------------------------------------------------------------------------------------


class _Problems:
    """Recovered problems of one document, counted so each kind is reported once."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.examples: dict[str, str] = {}

    def add(self, kind: str, example: str) -> None:
        self.counts[kind] += 1
        self.examples.setdefault(kind, example[:80])

    def messages(self) -> list[str]:
        return [f"{n} {kind} (e.g. {self.examples[kind]!r})" for kind, n in self.counts.items()]


def _date(value: str | None, problems: _Problems) -> datetime | None:
    if not value:
        return None
    parsed = parse_date(value)
    if parsed is None:
        problems.add("unparseable date(s)", value)
    elif parsed < EARLIEST_REAL_DATE:
        problems.add("placeholder date(s) ignored", value)
        return None
    return parsed


def _html_of(text: RawText) -> str:
    return sanitize_html(text.value, text.base) if text.html else text_to_html(text.value)


def _html_and_text_of(text: RawText) -> tuple[str, str]:
    """Sanitized HTML and its plain text (what a reader sees, as text)."""
    if text.html:
        html = sanitize_html(text.value, text.base)
        return html, sanitized_text(html)
    return text_to_html(text.value), plain_text(text.value)


def _is_partial(text: str, words: int, from_excerpt: bool, has_markup: bool) -> bool:
    if not text:
        return not has_markup  # nothing but a title/link: the article has to be fetched (images are content)
    if from_excerpt and words < SHORT_EXCERPT_WORDS:
        return True
    return words < TRUNCATED_MAX_WORDS and _TRUNCATION_MARKER.search(text[-40:]) is not None


def _hash(*parts: str) -> str:
    """sha256 over length-prefixed parts: unambiguous without escaping megabytes of content."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(b"%d:" % len(data))
        digest.update(data)
    return digest.hexdigest()


def _identity_enclosure(raw: list[RawEnclosure], base: str) -> str:
    """The media URL that identifies an item without guid or link: the first enclosure or media:content
    in document order, cleaned like identity URLs (what these hashes were always built from, so
    identities survive changes in which media count as enclosures)."""
    return next((url for e in raw if (url := clean_url(e.url, base))), "")


def _identity(item: RawItem, link: str | None, title: str, published: datetime | None,
              text: str) -> tuple[str, str]:  # fmt: skip
    """guid/id → link → stable hash of what identifies the item (design doc 004)."""
    if item.guid and item.guid.strip():
        return normalize_guid(item.guid), "id"
    if link:
        return link, "link"
    first_enclosure = _identity_enclosure(item.enclosures, item.base)
    when = published.isoformat() if published else ""
    key = (title, first_enclosure, when) if (title or first_enclosure or when) else (text,)
    return "sha256:" + _hash(*key), "hash"


def raw_context(inherited_authors: Sequence[str]) -> str:
    """What, besides the item itself, an item's Entry is made from: the feed's authors (named by entries
    that name nobody) and the normalizer's version. The document URL and xml:base are in the item's own
    `base` fields; `now` only decides `future_dated`, which SameItem works out again."""
    return f"{_RAW_HASH_VERSION}\x00{inherited_authors!r}"


_RAW_ITEM_FIELDS = tuple(f.name for f in fields(RawItem))


def raw_hash(item: RawItem, context: str) -> str:
    """A digest of everything the item's Entry is made from: the raw item as its parser extracted it
    (markup unsanitized, dates as written, every base URL) and its `raw_context`. Equal digests make
    equal Entries, whatever the parser path (lxml, feedparser, JSON Feed).

    Strings go in whole with their lengths, the small fields as their repr: `repr(item)` escaped every
    article again and cost 13 % of a first poll's parse; sha256 runs on the CPU's SHA instructions."""
    digest = hashlib.sha256(context.encode("utf-8", "surrogatepass"))
    for name in _RAW_ITEM_FIELDS:
        value = getattr(item, name)
        if type(value) is RawText:
            text = value.value.encode("utf-8", "surrogatepass")
            digest.update(b"\x00t%d %d %a " % (len(text), value.html, value.base))
            digest.update(text)
        elif type(value) is str:
            text = value.encode("utf-8", "surrogatepass")
            digest.update(b"\x00s%d " % len(text))
            digest.update(text)
        else:  # None, flags, lists and dicts of short strings, enclosures
            digest.update(b"\x00r" + repr(value).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def _same_item(item: RawItem, key: str, now: datetime, problems: _Problems) -> SameItem | None:
    """An item whose raw hash is stored, without normalizing it: its guid and dates, as `_entry` finds
    them. None when its identity needs normalized fields (no guid and no link: a hash of its title)."""
    if item.guid and item.guid.strip():
        guid = normalize_guid(item.guid)
    elif (link := clean_url(item.link, item.base)) is not None:
        guid = link
    else:
        return None
    published, updated = _date(item.published, problems), _date(item.updated, problems)
    published = published or updated
    return SameItem(guid, key, published, published is not None and published > now + FUTURE_TOLERANCE)


def _entry(
    item: RawItem, now: datetime, inherited_authors: Sequence[str], problems: _Problems
) -> tuple[Entry, RawItem] | None:
    """One raw item → (Entry, the item); None when the item has nothing in it (no title, link, content or
    media)."""
    title = _plain(item.title)
    link = clean_url(item.link, item.base)
    if link is None and item.guid_is_permalink:
        link = clean_url(item.guid)  # only an absolute URL: "12345" is no permalink, whatever the feed says
    enclosures = _enclosures(item.enclosures, item.base)

    # Content priority of the design doc; the first excerpt field that is not the content is the summary.
    slots = (item.content_encoded, item.content, item.description, item.summary)
    best_index = next((i for i, slot in enumerate(slots) if slot is not None), len(slots))
    best = slots[best_index] if best_index < len(slots) else None
    excerpt = next((s for s in (item.description, item.summary) if s is not None and s is not best), None)
    content_html, content_text = _html_and_text_of(best) if best is not None else ("", "")
    same_text = excerpt is not None and best is not None and excerpt.value == best.value  # itunes:summary
    summary_html = _html_of(excerpt) if excerpt is not None and not same_text else ""
    if summary_html == content_html:
        summary_html = ""
    if not (title or link or content_html or enclosures or _identity_enclosure(item.enclosures, item.base)):
        return None
    shown_title = title
    if not title:  # identity and hash keep the empty title: the fallback is derived from hashed content
        described = item.description or item.summary
        shown_title = _title_from_text(
            content_text if described is None or described is best else _html_and_text_of(described)[1]
        )

    published = _date(item.published, problems)
    updated = _date(item.updated, problems)
    published = published or updated
    words = _word_count(content_text)
    guid, guid_source = _identity(item, link, title, published, content_text)
    entry = Entry(
        guid=guid,
        guid_source=guid_source,
        title=shown_title,
        link=link,
        authors=_author_names(item.authors) or list(inherited_authors),
        categories=_categories(item.categories),
        category_labels=dict(item.category_labels),
        enclosures=enclosures,
        image=_image(item, enclosures, content_html),
        duration_seconds=parse_duration(item.duration),
        published=published,
        updated=updated,
        date_uncertain=published is None,
        future_dated=published is not None and published > now + FUTURE_TOLERANCE,
        summary_html=summary_html or None,
        content_html=content_html or None,
        content_text=content_text,
        word_count=words,
        reading_time_minutes=math.ceil(words / WORDS_PER_MINUTE),
        partial_content=_is_partial(content_text, words, best_index >= 2, bool(content_html)),
        content_hash=_hash(
            title,
            link or "",
            content_html,
            summary_html,
            # cleaned: a rotating tracking parameter in a media URL is no revision
            " ".join(f"{clean_url(e.url) or e.url} {e.type} {e.length}" for e in enclosures),
            published.isoformat() if published else "",
            updated.isoformat() if updated else "",
        ),
    )
    return entry, item


def _make_guids_unique(entries: list[tuple[Entry, RawItem]], problems: _Problems) -> None:
    """A guid repeated in one document: later copies get "#" + a hash of their identifying fields.

    The first copy keeps the plain guid, so the common case (one stray duplicate) does not change
    the identity of the original; the suffix is derived from content, not position, so it survives
    reordering.
    """
    seen: set[str] = set()
    for entry, item in entries:
        if entry.guid in seen:
            problems.add("duplicate guid(s) made unique", entry.guid)
            first_enclosure = _identity_enclosure(item.enclosures, item.base)
            suffix = _hash(entry.title, entry.link or "", first_enclosure, str(entry.published))[:12]
            base = candidate = f"{entry.guid}#{suffix}"
            n = 1
            while candidate in seen:
                n += 1
                candidate = f"{base}-{n}"
            entry.guid = candidate
            entry.raw_hash = None  # its guid depends on the other copies: never skipped by its raw hash
        seen.add(entry.guid)


def _ttl(value: str | None) -> int | None:
    minutes = _int(value)
    return minutes if minutes and minutes <= 525_600 else None  # a year


def _skip_hours(values: list[str]) -> frozenset[int]:
    hours = (_int(v) for v in values)
    return frozenset(h % 24 for h in hours if h is not None and h <= 24)  # some feeds write 1..24


def _skip_days(values: list[str]) -> frozenset[str]:
    return frozenset(d for v in values if (d := v.strip().capitalize()) in _DAYS)


def _newest(entries: list[Entry | SameItem], cap: int) -> tuple[list[Entry | SameItem], tuple[str, ...]]:
    """The `cap` newest entries in document order, and the guids of the others. An undated entry counts
    as new (storage dates it by first sight)."""
    if len(entries) <= cap:
        return entries, ()
    newest_first = sorted(range(len(entries)), key=lambda i: entries[i].published or _UNDATED, reverse=True)
    kept = set(newest_first[:cap])
    return [e for i, e in enumerate(entries) if i in kept], tuple(
        e.guid for i, e in enumerate(entries) if i not in kept
    )


def normalize_feed(
    raw: RawFeed, *, now: datetime, max_items: int | None = None, known: frozenset[str] | None = None
) -> Feed:
    """A raw parsed document → Feed with normalized, sanitized, uniquely identified entries; at most
    `max_items` of them (the newest; the others are named in `over_cap`). With `known` (raw hashes of
    stored entries) every entry carries its raw hash, and an item whose hash is known is not normalized
    again: it comes back in `Feed.same`."""
    problems = _Problems()
    made: list[tuple[Entry | SameItem, RawItem]] = []
    # the feed's authors (a channel's managingEditor too) name entries that name nobody; a bare address
    # ("news@example.com?subject=RSS") names no one
    inherited_authors = [a for a in _author_names(raw.authors) if not _BARE_ADDRESS.match(a)]
    context = raw_context(inherited_authors) if known is not None else None
    for item in raw.items:
        key = raw_hash(item, context) if context is not None else None
        if key is not None and known and key in known and (same := _same_item(item, key, now, problems)):
            made.append((same, item))
            continue
        entry = _entry(item, now, inherited_authors, problems)
        if entry is None:
            problems.add("empty item(s) dropped", item.guid or "(no guid)")
        else:
            entry[0].raw_hash = key
            made.append(entry)
    if len({e.guid for e, _ in made}) < len(made):
        entries = [(e, item) for e, item in made if isinstance(e, Entry)]
        if len(entries) < len(made):  # a repeated guid is made unique from normalized fields: all of them
            return normalize_feed(raw, now=now, max_items=max_items, known=frozenset())
        _make_guids_unique(entries, problems)
    kept, over_cap = _newest([e for e, _ in made], max_items) if max_items else ([e for e, _ in made], ())
    if over_cap:
        problems.add(f"entries over the cap of {max_items} per document left out (the oldest)", over_cap[0])
    description = raw.description
    return Feed(
        format=raw.format,
        title=_plain(raw.title),
        link=clean_url(raw.link, raw.base),
        description=(html_to_text if description.html else plain_text)(description.value)
        if description
        else "",
        entries=[e for e in kept if isinstance(e, Entry)],
        same=tuple(replace(e, position=i) for i, e in enumerate(kept) if isinstance(e, SameItem)),
        language=(raw.language or "").strip() or None,
        image=clean_url(raw.image, raw.base),
        ttl_minutes=_ttl(raw.ttl),
        skip_hours=_skip_hours(raw.skip_hours),
        skip_days=_skip_days(raw.skip_days),
        parser=raw.parser,
        warnings=[*raw.warnings, *problems.messages()],
        links=tuple((rel, url) for rel, href in raw.links if (url := absolute_url(href, raw.base))),
        skipped_items=problems.counts["empty item(s) dropped"],
        over_cap=over_cap,
    )
