"""Both XML parse paths (lxml fast path, feedparser fallback) over the same fixtures give the same entries.

A feed that stops being well-formed for one poll falls back to feedparser; if the paths mapped fields
differently, its entries would change dates, authors or categories (and content hashes) back and forth.
The mapping is one (modules/rss/parse/fields.py); this test holds the paths to it, field by field.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from modules.rss.model import Feed
from modules.rss.parse import lenient, xmlfast
from modules.rss.parse.encoding import decode
from modules.rss.parse.normalize import normalize_feed

URL = "https://example.com/feeds/feed.xml"
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rss"
# Not well-formed: only one path reads them.
ONE_PATH_ONLY = {
    "lenient_unclosed.xml",
    "raw_ampersand.xml",
    "lenient_podcast.xml",
    "lenient_atom_updated.xml",
    "lenient_broken_items.xml",
}
FEED_FIELDS = ("format", "title", "link", "description", "language", "image", "links")
ENTRY_FIELDS = (
    "guid", "guid_source", "title", "link", "authors", "categories", "category_labels", "enclosures",
    "image", "duration_seconds", "published", "updated", "date_uncertain", "content_html", "content_text",
    "summary_html", "partial_content", "content_hash",
)  # fmt: skip
# What feedparser cannot give us, so the paths still differ: (file, entry index, field) → why.
KNOWN_DIFFERENCES = {
    ("namespaced_content.xml", 1, "content_html"): "feedparser knows no <content xmlns=content-ns> alias",
    ("namespaced_content.xml", 1, "content_text"): "(the same)",
    ("namespaced_content.xml", 1, "summary_html"): "(the same)",
    ("namespaced_content.xml", 1, "partial_content"): "(the same)",
    ("namespaced_content.xml", 1, "content_hash"): "(the same)",
    ("namespaced_content.xml", 2, "summary_html"): "feedparser keeps the last of description and "
    "media:description",
    ("namespaced_content.xml", 2, "content_hash"): "(the same)",
    ("relative_urls.xml", 2, "guid"): "feedparser resolves a relative guid against xml:base",
    ("relative_urls.xml", 2, "link"): "(the same: the resolved guid is a permalink)",
    ("relative_urls.xml", 2, "content_hash"): "(the same)",
    ("fidelity/atom03_base64.xml", 0, "title"): "feedparser keeps base64 without its padding as written",
    ("fidelity/atom03_base64.xml", 0, "content_hash"): "(the same)",
}
CASES = sorted(
    str(p.relative_to(FIXTURES))
    for p in FIXTURES.rglob("*")
    if p.suffix in (".xml", ".rdf") and p.name not in ONE_PATH_ONLY
)


def _both(name: str) -> tuple[Feed, Feed]:
    decoded = decode((FIXTURES / name).read_bytes())
    fast = normalize_feed(xmlfast.parse_xml(decoded.utf8, URL), now=NOW)
    slow = normalize_feed(lenient.parse_lenient(decoded.text, URL), now=NOW)
    assert (fast.parser, slow.parser) == ("fast", "lenient")
    return fast, slow


@pytest.mark.parametrize("name", CASES)
def test_both_parse_paths_map_every_field_the_same_way(name: str) -> None:
    fast, slow = _both(name)
    assert [(f, getattr(fast, f)) for f in FEED_FIELDS] == [(f, getattr(slow, f)) for f in FEED_FIELDS]
    assert len(fast.entries) == len(slow.entries)
    for i, (a, b) in enumerate(zip(fast.entries, slow.entries, strict=True)):
        for field in ENTRY_FIELDS:
            if (name, i, field) in KNOWN_DIFFERENCES:
                assert getattr(a, field) != getattr(b, field), f"{name}[{i}].{field} agrees now: unlist it"
            else:
                assert getattr(a, field) == getattr(b, field), f"{name}[{i}].{field}"


def test_the_fixtures_cover_the_shared_mapping() -> None:
    """The comparison means something only if the fixtures exercise the fields of the mapping."""
    assert {"fidelity/dates.xml", "fidelity/keywords.xml", "fidelity/authors.xml", "podcast.xml"} <= set(
        CASES
    )
