"""normalize: identity, URL cleaning, content priority, text metrics, content hash, and the invariants
every parsed feed must satisfy (Hypothesis)."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modules.rss.model import Entry, Feed
from modules.rss.parse import parse_feed
from modules.rss.parse.normalize import clean_url, normalize_feed, parse_duration
from modules.rss.parse.raw import RawEnclosure, RawFeed, RawItem, RawText

BASE = "https://site.example.com/blog/feed.xml"
NOW = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)


def _html(value: str) -> RawText:
    return RawText(value, True, BASE)


def _normalize(*items: RawItem, authors: list[str] | None = None) -> Feed:
    raw = RawFeed(format="rss2.0", parser="fast", base=BASE, items=list(items), authors=authors or [])
    return normalize_feed(raw, now=NOW)


def _one(item: RawItem) -> Entry:
    (entry,) = _normalize(item).entries
    return entry


# --- URLs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://example.com/a?utm_source=x&id=1&utm_medium=y", "https://example.com/a?id=1"),
        ("https://example.com/a?fbclid=1&gclid=2&mc_cid=3&mc_eid=4&msclkid=5", "https://example.com/a"),
        ("https://example.com/a?UTM_Source=x#frag", "https://example.com/a#frag"),
        ("https://example.com/a?utm=keep&sutm_x=keep", "https://example.com/a?utm=keep&sutm_x=keep"),
        ("HTTPS://Example.COM/Path/Case?Q=Keep", "https://example.com/Path/Case?Q=Keep"),
        ("  https://example.com/\n  spaced path ", "https://example.com/spaced%20path"),
        ("page.html", "https://site.example.com/blog/page.html"),
        ("/root", "https://site.example.com/root"),
        ("//cdn.example.net/x", "https://cdn.example.net/x"),
        ("javascript:alert(1)", None),
        ("mailto:me@example.com", None),
        ("ftp://example.com/file", None),
        ("data:text/html,hi", None),
        ("http://", None),
        ("http://[::1", None),
        ("", None),
    ],
)
def test_clean_url(value: str, expected: str | None) -> None:
    assert clean_url(value, BASE) == expected


def test_relative_url_without_base_is_dropped() -> None:
    assert clean_url("page.html") is None


# --- identity -----------------------------------------------------------------------------------------


def test_identity_prefers_guid_then_link_then_hash() -> None:
    by_id = _one(RawItem(base=BASE, guid="  urn:x:1  ", link="https://e.com/1", title=_html("t")))
    by_link = _one(RawItem(base=BASE, link="/1?utm_source=rss", title=_html("t")))
    by_hash = _one(RawItem(base=BASE, title=_html("t")))
    assert (by_id.guid, by_id.guid_source) == ("urn:x:1", "id")
    assert (by_link.guid, by_link.guid_source) == ("https://site.example.com/1", "link")
    assert by_hash.guid_source == "hash" and re.fullmatch(r"sha256:[0-9a-f]{64}", by_hash.guid)


def test_url_guids_lowercase_scheme_and_host_only() -> None:
    a = _one(RawItem(base=BASE, guid="HTTP://Example.COM/Post/ABC?Id=1", title=_html("t")))
    b = _one(RawItem(base=BASE, guid="http://example.com/post/abc?id=1", title=_html("t")))
    assert a.guid == "http://example.com/Post/ABC?Id=1"
    assert a.guid != b.guid  # distinct paths stay distinct


def test_hash_identity_uses_title_first_enclosure_and_published_only() -> None:
    item = RawItem(
        base=BASE,
        title=_html("Episode"),
        enclosures=[RawEnclosure("https://cdn.example/1.mp3")],
        published="2024-01-01T00:00:00Z",
        description=_html("first wording"),
    )
    guid = _one(item).guid
    assert _one(replace(item, description=_html("edited wording"))).guid == guid
    assert _one(replace(item, title=_html("Episode 2"))).guid != guid
    assert _one(replace(item, enclosures=[RawEnclosure("https://cdn.example/2.mp3")])).guid != guid
    assert _one(replace(item, published="2024-01-02T00:00:00Z")).guid != guid


def test_content_only_items_get_distinct_hash_identities() -> None:
    feed = _normalize(
        RawItem(base=BASE, description=_html("one")), RawItem(base=BASE, description=_html("two"))
    )
    assert len({e.guid for e in feed.entries}) == 2
    assert not any("duplicate" in w for w in feed.warnings)


def test_permalink_guid_is_the_link_only_when_it_is_an_absolute_url() -> None:
    url = _one(
        RawItem(base=BASE, guid="https://e.com/p/1?utm_source=x", guid_is_permalink=True, title=_html("t"))
    )
    assert (url.guid, url.link) == ("https://e.com/p/1?utm_source=x", "https://e.com/p/1")
    not_url = _one(RawItem(base=BASE, guid="adori-8d2abc8f", guid_is_permalink=True, title=_html("t")))
    assert (not_url.guid, not_url.link) == ("adori-8d2abc8f", None)


def test_empty_items_are_dropped_with_a_warning() -> None:
    feed = _normalize(
        RawItem(base=BASE, guid="only-an-id", published="2024-01-01"),
        RawItem(base=BASE, title=_html("kept")),
        RawItem(base=BASE, link="javascript:void(0)"),  # not a usable link: still empty
    )
    assert [e.title for e in feed.entries] == ["kept"]
    assert feed.warnings == ["2 empty item(s) dropped (e.g. 'only-an-id')"]


# --- content ------------------------------------------------------------------------------------------


def test_content_priority() -> None:
    slots = {
        "content_encoded": _html("<p>encoded</p>"),
        "content": _html("<p>atom content</p>"),
        "description": _html("<p>description</p>"),
        "summary": _html("<p>summary</p>"),
    }
    expected = [
        ("content_encoded", "<p>encoded</p>", "<p>description</p>"),
        ("content", "<p>atom content</p>", "<p>description</p>"),
        ("description", "<p>description</p>", "<p>summary</p>"),
        ("summary", "<p>summary</p>", None),
    ]
    for best, content, summary in expected:
        present = dict(list(slots.items())[[name for name, *_ in expected].index(best) :])
        entry = _one(RawItem(base=BASE, title=_html("t"), **present))  # type: ignore[arg-type]
        assert (entry.content_html, entry.summary_html) == (content, summary), best


def test_summary_identical_to_content_is_not_repeated() -> None:
    entry = _one(RawItem(base=BASE, content_encoded=_html("<p>same</p>"), description=_html("<p>same</p>")))
    assert (entry.content_html, entry.summary_html) == ("<p>same</p>", None)


def test_text_metrics() -> None:
    words = " ".join(["word"] * 231)
    entry = _one(RawItem(base=BASE, content_encoded=_html(f"<p>{words}</p><p>one more</p>")))
    assert (entry.word_count, entry.reading_time_minutes) == (233, 2)
    short = _one(RawItem(base=BASE, content_encoded=_html("<p>Two words</p>")))
    assert (short.word_count, short.reading_time_minutes) == (2, 1)
    empty = _one(RawItem(base=BASE, title=_html("title only")))
    assert (empty.word_count, empty.reading_time_minutes, empty.content_html) == (0, 0, None)
    cjk = _one(RawItem(base=BASE, content_encoded=_html("<p>日本語の文章 and English</p>")))
    assert cjk.word_count == 6 + 2


@pytest.mark.parametrize(
    ("slot", "markup", "partial"),
    [
        ("description", "<p>A two sentence teaser. Nothing more.</p>", True),
        ("description", "<p>" + "word " * 200 + "</p>", False),
        ("description", "<p>" + "word " * 100 + "[…]</p>", True),
        ("content_encoded", "<p>Short but complete full content.</p>", False),
        ("content_encoded", "<p>" + "word " * 50 + "Continue reading →</p>", True),
        ("content_encoded", "<p>" + "word " * 50 + "…</p>", True),
        ("content_encoded", "<p>" + "word " * 400 + "...</p>", False),  # long: the ellipsis is prose
        ("content_encoded", '<p><img src="https://x.example/photo.jpg"></p>', False),
        ("summary", "<p>" + "word " * 90 + "(more…)</p>", True),
    ],
)
def test_partial_content(slot: str, markup: str, partial: bool) -> None:
    entry = _one(RawItem(base=BASE, title=_html("t"), **{slot: _html(markup)}))  # type: ignore[arg-type]
    assert entry.partial_content is partial


def test_no_content_at_all_is_partial() -> None:
    assert _one(RawItem(base=BASE, title=_html("t"), link="/x")).partial_content is True


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1:02:03", 3723), ("62:03", 3723), ("3723", 3723), ("3723.4", 3723), ("00:00:59", 59), (" 5:00 ", 300),
     ("", None), (None, None), ("about an hour", None), ("1:2:3:4", None), ("-5", None), ("nan", None)],
)  # fmt: skip
def test_duration(value: str | None, seconds: int | None) -> None:
    assert parse_duration(value) == seconds


# --- dates --------------------------------------------------------------------------------------------


def test_published_falls_back_to_updated() -> None:
    entry = _one(RawItem(base=BASE, title=_html("t"), updated="2024-05-01T00:00:00Z"))
    assert entry.published == entry.updated == datetime(2024, 5, 1, tzinfo=UTC)
    assert not entry.date_uncertain


@pytest.mark.parametrize(
    ("published", "future"),
    [
        (NOW + timedelta(minutes=4), False),
        (NOW + timedelta(minutes=6), True),
        (NOW - timedelta(days=1), False),
    ],
)
def test_future_dated(published: datetime, future: bool) -> None:
    assert _one(RawItem(base=BASE, title=_html("t"), published=published.isoformat())).future_dated is future


@pytest.mark.parametrize("placeholder", ["0001-01-01T00:00:00Z", "Thu, 01 Jan 1970 00:00:00 GMT"])
def test_placeholder_dates_mean_no_date(placeholder: str) -> None:
    feed = _normalize(RawItem(base=BASE, title=_html("t"), published=placeholder))
    assert (feed.entries[0].published, feed.entries[0].date_uncertain) == (None, True)
    assert "placeholder" in feed.warnings[0]


# --- content hash ---------------------------------------------------------------------------------------


def test_content_hash_changes_with_every_edit_and_only_then() -> None:
    item = RawItem(
        base=BASE,
        guid="g",
        title=_html("Title"),
        link="https://e.com/1",
        content_encoded=_html("<p>Body</p>"),
        description=_html("Teaser"),
        enclosures=[RawEnclosure("https://e.com/a.mp3", "audio/mpeg", "10")],
        published="2024-01-01T00:00:00Z",
        updated="2024-01-02T00:00:00Z",
        authors=["A"],
    )
    original = _one(item).content_hash
    assert _one(item).content_hash == original
    assert (
        normalize_feed(RawFeed("rss2.0", "fast", BASE, items=[item]), now=NOW + timedelta(days=999))
        .entries[0]
        .content_hash
        == original
    )  # the parse time is not part of the content
    edits = {
        "title": _html("Title!"),
        "link": "https://e.com/2",
        "content_encoded": _html("<p>Body.</p>"),
        "description": _html("Teaser."),
        "enclosures": [RawEnclosure("https://e.com/a.mp3", "audio/mpeg", "11")],
        "published": "2024-01-01T00:00:01Z",
        "updated": "2024-01-03T00:00:00Z",
    }
    hashes = {_one(replace(item, **{field: value})).content_hash for field, value in edits.items()}  # type: ignore[arg-type]
    assert original not in hashes and len(hashes) == len(edits)


def test_duplicate_guids_first_keeps_plain_suffix_is_stable_under_reordering() -> None:
    a = RawItem(base=BASE, guid="dup", title=_html("A"), link="https://e.com/a")
    b = RawItem(base=BASE, guid="dup", title=_html("B"), link="https://e.com/b")
    c = RawItem(base=BASE, guid="dup", title=_html("C"), link="https://e.com/c")
    first = {e.title: e.guid for e in _normalize(a, b, c).entries}
    reordered = {e.title: e.guid for e in _normalize(a, c, b).entries}
    assert first["A"] == "dup" and len(set(first.values())) == 3
    assert first == reordered


# --- invariants (Hypothesis) ----------------------------------------------------------------------------

_guids = st.sampled_from(["", "  ", "dup", "dup", "urn:1", "HTTP://Host.Example/Path", "posts/1"])
_links = st.sampled_from(
    [None, "", "/a", "/a?utm_source=x", "https://e.com/b", "javascript:x", "//cdn/c", "mailto:x"]
)
_dates = st.sampled_from([None, "", "garbage", "2024-01-01", "Sat, 07 Sep 2002 09:42:31 +0200", "1031391751"])
_texts = st.one_of(st.none(), st.text(max_size=40).map(lambda t: _html(t)))
_items = st.builds(
    RawItem,
    base=st.just(BASE),
    guid=st.one_of(st.none(), _guids),
    guid_is_permalink=st.booleans(),
    title=_texts,
    link=_links,
    description=_texts,
    published=_dates,
    updated=_dates,
    enclosures=st.lists(
        st.builds(RawEnclosure, url=st.sampled_from(["/e.mp3", "https://e.com/x.mp3", "bad:x"])), max_size=2
    ),
)


def _check_invariants(feed: Feed) -> None:
    guids = [e.guid for e in feed.entries]
    assert all(g and g.strip() == g for g in guids)
    assert len(set(guids)) == len(guids)
    for entry in feed.entries:
        for when in (entry.published, entry.updated):
            assert when is None or when.tzinfo is UTC
        for url in [entry.link, entry.image, *(e.url for e in entry.enclosures)]:
            assert url is None or re.match(r"https?://[^/?#\s]+", url)


@given(st.lists(_items, max_size=8))
def test_normalized_entries_keep_the_invariants(items: list[RawItem]) -> None:
    feed = _normalize(*items)
    _check_invariants(feed)
    again = _normalize(*items)
    assert [(e.guid, e.content_hash) for e in again.entries] == [
        (e.guid, e.content_hash) for e in feed.entries
    ]


_xml_text = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30)


@st.composite
def _rss_documents(draw: st.DrawFn) -> bytes:
    items = []
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        parts = []
        for tag, strategy in (("title", _xml_text), ("guid", _guids), ("link", _links), ("pubDate", _dates),
                              ("description", _xml_text)):  # fmt: skip
            value = draw(st.one_of(st.none(), strategy))
            if value is not None:
                parts.append(f"<{tag}>{html.escape(value)}</{tag}>")
        items.append("<item>" + "".join(parts) + "</item>")
    return f'<rss version="2.0"><channel><title>t</title>{"".join(items)}</channel></rss>'.encode()


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_rss_documents())
def test_parsed_documents_keep_the_invariants_and_reparse_identically(body: bytes) -> None:
    feed = parse_feed(body, url=BASE, now=NOW)
    _check_invariants(feed)
    again = parse_feed(body, url=BASE, now=NOW + timedelta(days=1))
    assert [(e.guid, e.content_hash) for e in again.entries] == [
        (e.guid, e.content_hash) for e in feed.entries
    ]
