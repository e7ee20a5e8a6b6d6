"""Issue 27: the last parser losses, one hand-written fixture each (fixtures/rss/fidelity/), and the places
where feedparser is wrong and we keep our reading.

Where a behaviour lives on both XML paths (lxml, feedparser), test_parse_paths.py holds them together over
the same fixtures; the lenient-only cases here call the feedparser path directly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from modules.rss.model import Enclosure, Feed
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.parse.dates import parse_date
from modules.rss.parse.encoding import decode
from modules.rss.parse.lenient import parse_lenient
from modules.rss.parse.normalize import normalize_feed
from modules.rss.parse.xmlfast import MAX_XML_DEPTH

URL = "https://example.com/feeds/feed.xml"
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
FIDELITY = Path(__file__).resolve().parents[2] / "fixtures" / "rss" / "fidelity"


def load(name: str, **kwargs: int) -> Feed:
    return parse_feed((FIDELITY / name).read_bytes(), url=URL, now=NOW, **kwargs)


def lenient(name: str) -> Feed:
    """The feedparser path on a fixture (decoded as parse_feed decodes it)."""
    return normalize_feed(parse_lenient(decode((FIDELITY / name).read_bytes()).text, URL), now=NOW)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2024, 5 if day > 3 else 6, day, hour, minute, tzinfo=UTC)


# --- 1. badly broken XML: every item whose boundaries can be found -----------------------------------------


def test_broken_xml_keeps_every_item() -> None:
    """An undeclared `rss:` prefix on every element, a malformed declaration after a comment, unquoted
    attributes, a stray end tag, an unclosed <b> and an unclosed CDATA section (feedparser: 0 entries)."""
    feed = load("lenient_broken_items.xml")
    assert (feed.parser, feed.title, feed.link) == ("fast", "Broken but readable", "https://example.com/")
    assert [(e.title, e.link, e.published) for e in feed.entries] == [
        ("First", "https://example.com/1", datetime(2024, 6, 3, 10, 0, tzinfo=UTC)),
        ("Second", "https://example.com/2", datetime(2024, 6, 2, 10, 0, tzinfo=UTC)),
        ("Third", "https://example.com/3", datetime(2024, 6, 1, 10, 0, tzinfo=UTC)),
        ("Fourth", "https://example.com/4", datetime(2024, 5, 31, 10, 0, tzinfo=UTC)),
    ]
    assert feed.entries[0].authors == ["Ann"]
    assert [e.content_text for e in feed.entries[1:3]] == [
        "An unclosed bold",
        "A CDATA section that is never closed",
    ]
    assert any("balanced tags" in w for w in feed.warnings)


def test_an_unclosed_element_does_not_swallow_the_items_after_it() -> None:
    body = (
        b'<rss version="2.0"><channel><title>t</title><itunes:category text="Tech">'
        b"<item><title>a</title><link>https://e.com/a</link></item>"
        b"<item><title>b</title><link>https://e.com/b</link>"  # unclosed item too
        b"<item><title>c</title><link>https://e.com/c</link></item></channel></rss>"
    )
    assert [e.title for e in parse_feed(body, url=URL, now=NOW).entries] == ["a", "b", "c"]


def test_nesting_deeper_than_the_cap_is_refused_on_every_path() -> None:
    deep = b"<div>" * (MAX_XML_DEPTH + 10)
    body = b'<rss version="2.0"><channel><item hidden><title>x</title><description>' + deep
    with pytest.raises(FeedParseError, match="nested deeper"):
        parse_feed(body, url=URL, now=NOW)


# --- 2-3. categories -----------------------------------------------------------------------------------------


def test_wrapped_categories_and_item_level_itunes_categories() -> None:
    feed = load("categories_wrapped.xml")
    assert [e.categories for e in feed.entries] == [
        ["Gardening", "Tools"],
        ["Interviews", "Technology", "Podcasting"],
    ]


def test_json_feed_tags_as_one_comma_separated_string() -> None:
    feed = load("jsonfeed_tags_string.json")
    assert [e.categories for e in feed.entries] == [["workflow", "omnifocus", "productivity"], ["one", "two"]]


# --- 4. Atom entries whose link is their id -------------------------------------------------------------------


def test_an_atom_entry_without_a_usable_link_is_found_at_its_http_id() -> None:
    feed = load("atom_id_as_link.xml")
    assert [e.link for e in feed.entries] == [
        "https://example.com/posts/no-link",
        "https://example.com/posts/empty-href",
        None,  # a tag: id is no address
    ]


# --- 5-6. enclosures and media URLs ---------------------------------------------------------------------------


def test_media_group_alternatives_are_one_media_item_and_the_real_enclosure_wins() -> None:
    episode, video, page = load("media_group.xml").entries
    assert episode.enclosures == [Enclosure("https://cdn.example.com/ep1.mp3", "audio/mpeg", 1000)]
    assert video.enclosures == [Enclosure("https://cdn.example.com/v2-1080.mp4", "video/mp4", None)]
    # the embed player page (no media type, no media file name) is no enclosure; the image is
    assert page.enclosures == [Enclosure("https://cdn.example.com/p3.jpg", None, None)]
    assert page.image == "https://cdn.example.com/p3.jpg"


def test_media_urls_are_kept_as_published() -> None:
    entry = load("media_urls_as_published.xml").entries[0]
    assert entry.enclosures == [
        Enclosure("https://Tracking.Example.com/ep7.mp3?utm_source=rss&fbclid=abc&aid=7", "audio/mpeg", 1000)
    ]
    assert entry.image == "https://cdn.example.com/art7.jpg?utm_medium=podcast"
    assert entry.link == "https://example.com/ep?id=7"  # identity URLs are still cleaned


def test_a_rotating_tracking_parameter_in_a_media_url_is_no_revision() -> None:
    """The content hash compares media URLs cleaned, so a per-request token does not revise every poll."""
    body = (FIDELITY / "media_urls_as_published.xml").read_bytes()
    rotated = body.replace(b"fbclid=abc", b"fbclid=xyz")
    first, second = (parse_feed(b, url=URL, now=NOW).entries[0] for b in (body, rotated))
    assert first.enclosures != second.enclosures
    assert first.content_hash == second.content_hash


def test_identity_hashes_do_not_move_with_the_enclosure_rules() -> None:
    """An item without guid or link is identified by title, first media URL (cleaned, in document order,
    media:content included, as always) and date: the new enclosure rules must not re-identify it."""
    body = (
        b'<rss version="2.0" xmlns:media="http://search.yahoo.com/mrss/"><channel><title>t</title>'
        b'<item><title>x</title><media:content url="https://cdn.e.com/a.jpg?utm_source=f" medium="image"/>'
        b'<enclosure url="https://cdn.e.com/x.mp3" type="audio/mpeg"/></item></channel></rss>'
    )
    entry = parse_feed(body, url=URL, now=NOW).entries[0]
    assert entry.enclosures == [Enclosure("https://cdn.e.com/x.mp3", "audio/mpeg", None)]
    assert entry.guid == "sha256:9e1628abcfa4e814574a5b005051da4e0fc9fa2f2bf6b39e6ea9c41080c93a78"


# --- 7-8. text repairs ---------------------------------------------------------------------------------------


def test_double_encoded_utf8_is_decoded_once_more() -> None:
    repaired, genuine = load("double_encoded_utf8.xml").entries
    assert repaired.title == "Grupo Fórmula — “Noticias” de México"
    assert repaired.content_text == "Café con leche, año"
    # nothing that only looks like it: "Ã " is no UTF-8, "É»" would be IPA
    assert genuine.title == "Ã is kept when no UTF-8 comes of it"
    assert genuine.content_text == "«ÉTÉ» is real text"


def test_c1_controls_are_read_as_windows_1252() -> None:
    entry = load("c1_controls.xml").entries[0]
    assert entry.title == "don’t “quote” — café"
    assert entry.content_text == "It’s a “reference” and it’s a UTF-8 C1 control – dash"


# --- 9. DTD entities ------------------------------------------------------------------------------------------


def test_internal_entities_are_expanded_external_ones_are_not() -> None:
    for feed in (load("doctype_entities.xml"), lenient("doctype_entities.xml")):
        entry = feed.entries[0]
        assert entry.guid == "tag:example.com,2006-05-04:/blog/1"
        assert (entry.title, entry.link, entry.authors) == (
            "Posted on example.com",
            "https://example.com/blog/1",
            ["Ann & Bob"],
        )
        assert entry.content_text == "Nothing from outside: []"
        assert any("refused" in w for w in feed.warnings)


@pytest.mark.parametrize("broken", [False, True], ids=["fast", "lenient"])
def test_entity_expansion_is_bounded(broken: bool) -> None:
    """One entity of 4 KiB referenced a thousand times (4 MB from 9 KB): libxml2 refuses the amplification
    on the fast path; the feedparser path (no such check) stops at the document's budget."""
    big = b"x" * 4000
    body = (
        b'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY big "'
        + big
        + b'">]><rss version="2.0"><channel'
        + (b" hidden" if broken else b"")
        + b"><title>t</title><item><title>i</title><description>"
        + b"&big;" * 1000
        + b"</description></item></channel></rss>"
    )
    feed = parse_feed(body, url=URL, now=NOW)
    assert feed.parser == ("lenient" if broken else "fast")
    assert feed.entries[0].content_text.count("x") <= 1_000_000


# --- 10. authors ----------------------------------------------------------------------------------------------


def test_author_names_drop_hidden_addresses_and_job_titles() -> None:
    feed = load("authors_obfuscated.xml")
    assert [e.authors for e in feed.entries] == [
        ["OnAhlmann"],
        ["Jane Doe", "John Roe"],
        ["Sammy Davis, Jr."],  # no job after the comma: part of the name
        ["Erin Editor"],  # seed 002: managingEditor when the item names nobody
    ]


def test_a_bare_managing_editor_address_names_nobody() -> None:
    body = (
        b'<rss version="2.0"><channel><title>t</title><managingEditor>news@example.com?subject=RSS'
        b"</managingEditor><item><title>i</title><link>https://e.com/i</link></item></channel></rss>"
    )
    assert parse_feed(body, url=URL, now=NOW).entries[0].authors == []


# --- 11. sanitizer and content ----------------------------------------------------------------------------------


def test_object_fallback_is_kept_and_bare_body_is_content() -> None:
    fallback, body = load("object_fallback_body.xml").entries
    assert fallback.content_text == "Before\n\nWatch the video instead."
    assert fallback.content_html is not None and "<object" not in fallback.content_html
    assert "alert" not in fallback.content_html and "movie.swf" not in fallback.content_html
    assert body.content_html == "<p>The <em>whole</em> article.</p>"
    assert body.summary_html == "The short version."


# --- 12. the item image ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("parse", [load, lenient], ids=["fast", "lenient"])
def test_the_items_own_thumbnail_comes_before_one_nested_in_a_video(parse: object) -> None:
    feed = parse("image_order.xml")  # type: ignore[operator]
    assert [e.image for e in feed.entries] == [
        "https://cdn.example.com/v1-poster.jpg",
        "https://cdn.example.com/v2-poster.jpg",
        "https://cdn.example.com/v3-frame.jpg",
    ]


def test_the_first_body_image_is_the_image_of_an_item_without_one() -> None:
    """Seed 002 step 2; a tracking pixel is no image."""
    body = (
        b'<rss version="2.0"><channel><title>t</title><item><title>i</title><link>https://e.com/i</link>'
        b'<description>&lt;img src="https://e.com/pixel.gif" width="1" height="1"&gt;&lt;p&gt;text'
        b'&lt;img src="/photo.jpg?w=600&amp;amp;h=400" alt=""&gt;&lt;/p&gt;</description></item>'
        b"</channel></rss>"
    )
    assert parse_feed(body, url=URL, now=NOW).entries[0].image == "https://example.com/photo.jpg?w=600&h=400"


# --- 13. small things -------------------------------------------------------------------------------------------


def test_rss_modified_and_short_offsets() -> None:
    modified, short, half = load("small_fields.xml").entries
    assert modified.published == modified.updated == at(30, 8)
    assert short.published == at(31, 9, 30)  # "+00:0"
    assert half.published == at(31, 4)  # "+05:3" is +05:30
    assert not load("small_fields.xml").warnings


def test_base64_atom_03_title_without_padding() -> None:
    feed = load("atom03_base64.xml")
    assert (feed.title, feed.entries[0].title) == ("A feed title", "Base64 <title> & more!")
    assert feed.entries[0].content_html == "<p>Base64 content</p>"


def test_a_truncated_json_feed_keeps_its_complete_items() -> None:
    feed = load("jsonfeed_truncated.json")
    assert [e.title for e in feed.entries] == ["Complete one", "Complete two"]
    assert feed.entries[1].content_text == "tab here"  # a raw tab inside a string is accepted
    assert any("kept the 2 complete item(s)" in w for w in feed.warnings)


def test_a_truncated_json_feed_whose_version_never_arrived() -> None:
    body = b'{"title": "T", "home_page_url": "https://e.com/", "items": [{"id": "1", "title": "A"}, {"id": "2'
    assert [e.title for e in parse_feed(body, url=URL, now=NOW).entries] == ["A"]
    with pytest.raises(FeedParseError, match="not a JSON Feed"):  # no JSON Feed key came before "items"
        parse_feed(b'{"data": 1, "items": [{"id": 1}, {"id": 2', url=URL, now=NOW)


# --- seed 001 §4.7: items per document -----------------------------------------------------------------------


def test_the_item_cap_keeps_the_newest_and_says_so() -> None:
    items = b"".join(
        b"<item><title>%d</title><link>https://e.com/%d</link><pubDate>%s</pubDate></item>"
        % (n, n, f"Sat, {n:02d} Jun 2024 10:00:00 GMT".encode())
        for n in (3, 1, 4, 2)
    )
    body = b'<rss version="2.0"><channel><title>t</title>' + items + b"</channel></rss>"
    feed = parse_feed(body, url=URL, now=NOW, max_items=2)
    assert [e.title for e in feed.entries] == ["3", "4"]  # the newest two, in document order
    assert feed.over_cap == ("https://e.com/1", "https://e.com/2")
    assert any("over the cap of 2" in w for w in feed.warnings)


# --- where feedparser is wrong and we are right ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("2020/1/10", datetime(2020, 1, 10, tzinfo=UTC)),  # feedparser: 2020-11-01
        ("2020/01/10 08:19 pm CEST", datetime(2020, 1, 10, 18, 19, tzinfo=UTC)),  # feedparser: 2020-11-01
        ("Fri, 10 Jan 2020 8:19 pm CEST", datetime(2020, 1, 10, 18, 19, tzinfo=UTC)),  # feedparser: 08:19
        ("02:02:33 PM", None),  # feedparser: today's date at 02:02 (a time alone is no date)
        ("8:19 pm CEST", None),
    ],
)
def test_dates_feedparser_misreads(written: str, expected: datetime | None) -> None:
    assert parse_date(written) == expected


def test_year_one_placeholders_are_no_date() -> None:
    """feedparser returns year 1; a placeholder is no publication date (first-seen time is used)."""
    body = (
        b'<rss version="2.0"><channel><title>t</title><item><title>i</title><link>https://e.com/i</link>'
        b"<pubDate>Mon, 01 Jan 0001 00:00:00 +0000</pubDate></item></channel></rss>"
    )
    entry = parse_feed(body, url=URL, now=NOW).entries[0]
    assert (entry.published, entry.date_uncertain) == (None, True)
