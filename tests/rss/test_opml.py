"""OPML import/export: the shared corpus file by file, our own fixtures, broken input, round trips."""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from modules.rss.subscriptions.opml import OpmlError, OpmlFeed, export_opml, parse_opml

LOCAL = Path(__file__).resolve().parents[2] / "fixtures" / "opml"
# Read at collection time only to name the parametrized cases; the tests themselves go through the
# `shared_fixtures` fixture, which skips them in a clone without the corpus.
_MANIFEST = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "opml" / "manifest.json"
CORPUS: list[dict[str, Any]] = json.loads(_MANIFEST.read_text())["files"] if _MANIFEST.exists() else []

# --- what each exceptional corpus file must give, and why ------------------------------------------

# Not well-formed, yet imported: every problem has exactly one sensible reading.
LENIENT = {
    "feedvalidator/errors__notwellformed.opml": (1, "raw & in <title> and in a text attribute"),
    "feedvalidator/errors__notEncoded.opml": (
        0,
        "raw &, an undefined &atsign; and a raw < in an attribute are repaired; its outlines are "
        "type=link (web pages), not feeds",
    ),
    "plenary/recommended__Android.opml": (18, "raw & in attributes"),
    "plenary/recommended__Apple.opml": (16, "raw & in attributes"),
    "plenary/recommended__Architecture.opml": (14, "raw & in attributes"),
    "plenary/recommended__Cars.opml": (18, "raw & in attributes"),
    "plenary/recommended__Cricket.opml": (22, "raw & and raw <em>-style HTML (<) in description attributes"),
    "plenary/recommended__DIY.opml": (11, "raw & in attributes"),
    "plenary/recommended__Food.opml": (21, "raw & in attributes"),
    "plenary/with_category__France.opml": (11, "raw & inside a feed URL (?page=backend-fd&lang=en)"),
    "plenary/with_category__India.opml": (36, "raw & in attributes"),
    "plenary/with_category__United_States.opml": (10, "raw & in attributes"),
    "plenary/without_category__France.opml": (11, "raw & inside a feed URL (?page=backend-fd&lang=en)"),
    "plenary/without_category__India.opml": (36, "raw & in attributes"),
    "plenary/without_category__United_States.opml": (10, "raw & in attributes"),
}

_QUOTE = 'an unescaped " inside an attribute value: where the value ends is a guess'
# OpmlError expected: (message fragment naming the line, why importing would be a guess).
REJECTED = {
    "feedvalidator/errors__invalidCharacters.opml": (
        "line 10: Invalid bytes in character encoding",
        "cp1252 quote bytes in a file declared UTF-8; guessing the real encoding could garble text",
    ),
    "plenary/recommended__Android_Development.opml": ("line 32: attributes construct error", _QUOTE),
    "plenary/recommended__Beauty.opml": ("line 16: attributes construct error", _QUOTE),
    "plenary/recommended__Business_and_Economy.opml": ("line 21: attributes construct error", _QUOTE),
    "plenary/with_category__Russia.opml": ("line 20: attributes construct error", _QUOTE),
    "plenary/without_category__Russia.opml": ("line 19: attributes construct error", _QUOTE),
    "stringer/fixtures__invalid.opml": ("line 1: Start tag expected", "plain text, not XML"),
    # Well-formed XML that is not a usable subscription list:
    "feedvalidator/errors__closedbody.opml": (
        "line 9: a feed <outline> is outside <body>",
        "its only feed follows a self-closed <body/>; ignoring it would lose it silently",
    ),
    "feedvalidator/errors__missingBody.opml": ("line 8: <opml> has no <body>", "nothing holds subscriptions"),
    "newsboat/body-element-missing.opml": ("line 2: <opml> has no <body>", "nothing holds subscriptions"),
    "feedvalidator/errors__missingOpml.opml": ("the root element is <haha>", "not OPML (root <haha/>)"),
    "newsboat/opml-element-missing.opml": (
        "the root element is <not-opml>",
        "some other XML format; its outlines may mean anything",
    ),
}

# Well-formed files whose feed count differs from the manifest's `feeds` (all outlines with xmlUrl).
OTHER_COUNT = {
    **{
        f"feedvalidator/errors__subscriptionListErrors{n}.opml": (
            1,
            "its four feed outlines share one URL: duplicates collapse, the first wins",
        )
        for n in (1, 2, 3, 4)
    },
    "newsboat/piped.opml": (1, "'|~/fetch_tweets.py' is a newsboat command, not an http(s) URL"),
}


def corpus_ids(*, wellformed: bool) -> list[str]:
    return [f["path"] for f in CORPUS if f["wellformed"] is wellformed]


def manifest_entry(path: str) -> dict[str, Any]:
    return next(f for f in CORPUS if f["path"] == path)


def regex_feed_urls(data: bytes, encoding: str) -> list[str]:
    """An lxml-independent oracle: distinct http(s) xmlUrl values, in order, found by a regex."""
    values = re.findall(rb'\bxmlUrl\s*=\s*"([^"]*)"', data, re.IGNORECASE)
    urls = (html.unescape(value.decode(encoding)).strip() for value in values)
    return list(dict.fromkeys(url for url in urls if re.match(r"https?://", url, re.IGNORECASE)))


def check_import(corpus: Path, path: str, expected_count: int) -> list[OpmlFeed]:
    data = (corpus / path).read_bytes()
    feeds = parse_opml(data)
    assert len(feeds) == expected_count
    assert [f.url for f in feeds] == regex_feed_urls(data, manifest_entry(path)["encoding"])
    return feeds


def test_tables_match_the_manifest(shared_fixtures: Path) -> None:
    broken = set(corpus_ids(wellformed=False))
    assert len(broken) == 22
    assert broken == set(LENIENT) | {p for p in REJECTED if p in broken}
    paths = {f["path"] for f in CORPUS}
    assert set(LENIENT) | set(REJECTED) | set(OTHER_COUNT) <= paths


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_ids(wellformed=True))
def test_wellformed_corpus_file(shared_fixtures: Path, path: str) -> None:
    corpus = shared_fixtures / "opml"
    if path in REJECTED:
        with pytest.raises(OpmlError, match=re.escape(REJECTED[path][0])):
            parse_opml((corpus / path).read_bytes())
        return
    expected = OTHER_COUNT[path][0] if path in OTHER_COUNT else manifest_entry(path)["feeds"]
    check_import(corpus, path, expected)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_ids(wellformed=False))
def test_broken_corpus_file(shared_fixtures: Path, path: str) -> None:
    corpus = shared_fixtures / "opml"
    if path in LENIENT:
        check_import(corpus, path, LENIENT[path][0])
    else:
        with pytest.raises(OpmlError, match=re.escape(REJECTED[path][0])):
            parse_opml((corpus / path).read_bytes())


def feeds_of(corpus: Path, path: str) -> list[OpmlFeed]:
    return parse_opml((corpus / "opml" / path).read_bytes())


@pytest.mark.corpus
def test_corpus_nested_folders(shared_fixtures: Path) -> None:
    example = feeds_of(shared_fixtures, "newsboat/example.opml")
    assert [(f.url.rsplit("/", 1)[-1], f.folder) for f in example] == [
        ("feed.xml", None),
        ("distrowatch.rss", None),
        ("feed.atom", None),
        ("feed.rss09", None),
        ("posts.rss", "Blogs"),  # text="Blogs" wins over title="should be ignored"
        (".rss", "Blogs/friends"),
        ("index.php?type=rss", "eloquent"),
    ]
    assert Counter(f.folder for f in feeds_of(shared_fixtures, "rome/opml_1.0.xml")) == {
        "Subscriptions": 4,
        "Subscriptions/nerdy": 7,
    }
    # The same folder name opened twice merges into one path.
    assert [f.folder for f in feeds_of(shared_fixtures, "newsboat/test-urls+.opml")] == [
        "tag1/tag2",
        None,
        "tag1/tag3",
        None,
    ]
    subs = feeds_of(shared_fixtures, "netnewswire/Subs.opml")
    assert Counter(f.folder for f in subs) == {
        None: 69,
        "Weblogs": 97,
        "Programming": 33,
        "Macintosh": 5,
        "Writers": 3,
    }


@pytest.mark.corpus
def test_corpus_titles_and_encodings(shared_fixtures: Path) -> None:
    subs = {f.url: f for f in feeds_of(shared_fixtures, "netnewswire/Subs.opml")}
    assert subs["http://sketch.bysusanlin.com/rss"].title == "Susan × Blog"
    assert subs["http://sketch.bysusanlin.com/rss"].site_url == "http://sketch.bysusanlin.com/"
    # Only text attributes: titles still come through.
    no_titles = feeds_of(shared_fixtures, "netnewswire/SubsNoTitleAttributes.opml")
    assert [f.title for f in no_titles] == [subs[f.url].title for f in no_titles]
    # No text or title at all: title None, folder from title="…" text="…".
    old_reader = feeds_of(shared_fixtures, "atoma/broken-no-title.xml")
    assert [(f.title, f.folder) for f in old_reader] == [
        (None, None),
        (None, None),
        (None, "The Old Reader Picks"),
    ]
    # Repaired raw & reads as the character.
    food = {f.url: f for f in feeds_of(shared_fixtures, "plenary/recommended__Food.opml")}
    assert food["https://cnz.to/feed/"].title == "Chocolate & Zucchini"


# --- our own fixtures ----------------------------------------------------------------------------


def test_local_nested_three_levels() -> None:
    assert parse_opml((LOCAL / "nested-3-levels.opml").read_bytes()) == [
        OpmlFeed("https://top.example/feed", "Top level"),
        OpmlFeed("https://tech.example/rss", "Tech news", "https://tech.example/", "Tech"),
        OpmlFeed("https://cafe.example/atom.xml", "Café", None, "Tech/Python"),  # ISO-8859-1 byte
        OpmlFeed("http://http.example/feed", "HTTP only has a title", None, "Tech/Python/Web\u2215HTTP"),
        OpmlFeed("https://atom.example/feed", "url attribute, atom type", None, "Tech/Python/Web\u2215HTTP"),
        # Unnamed folder adds no segment; a javascript: htmlUrl is dropped.
        OpmlFeed("https://unnamed.example/feed", "In an unnamed folder", None, "Tech"),
        # Not imported: the duplicate of Tech news, the type=link page, ftp:// and an empty xmlUrl.
    ]


def test_local_raw_ampersand() -> None:
    feeds = parse_opml((LOCAL / "raw-ampersand.opml").read_bytes())
    assert feeds == [
        OpmlFeed("https://qa.example/feed?a=1&b=2&c=3", "Q&A\u00a0daily", None, "News & Politics"),
        # &#169; and &amp; stay references; "&copy" has no ";" so it is literal text.
        OpmlFeed("https://fish.example/rss", "Fish & Chips © &copy 2024", None, "News & Politics"),
        OpmlFeed("https://math.example/atom", "x < y, says &atsign;", None, "News & Politics"),
    ]


def test_local_empty_body() -> None:
    assert parse_opml((LOCAL / "empty-body.opml").read_bytes()) == []


# --- broken and hostile input --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (b"", "line 1: Document is empty. How to fix: this is not XML at all"),
        (
            b'<opml>\n<body>\n<outline text="A">\n<outline xmlUrl="https://a.example/"/>\n',
            "line 5: Premature end of data in tag outline line 3. How to fix: close every tag",
        ),
        (
            b'<opml>\n<body>\n<outline text="A">\n<outline xmlUrl="https://a.example/">\n</outline>\n</body>\n</opml>',
            "line 6: Opening and ending tag mismatch: outline line 3 and body",
        ),
        (b'<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>', "line 2: the root element is <rss>"),
        (
            b'<opml><body><outline text="Caf\xe9" xmlUrl="https://a.example/"/></body></opml>',
            "line 1: Invalid bytes in character encoding. How to fix: the bytes do not match the encoding",
        ),
        (
            b'<?xml version="1.0" encoding="x-nonesuch"?><opml/>',
            "line 1: Unsupported encoding: x-nonesuch. How to fix: the bytes do not match",
        ),
    ],
)
def test_unreadable_input_raises_with_line_and_fix(data: bytes, fragment: str) -> None:
    with pytest.raises(OpmlError, match=re.escape(fragment)):
        parse_opml(data)


def test_recover_mode_is_not_trusted_with_unclosed_folders() -> None:
    # Recover mode would read "b" as inside folder A: a silently wrong folder, so it must raise.
    data = (
        b'<opml><body>\n<outline text="A">\n<outline xmlUrl="https://a.example/"/>\n'
        b'<outline xmlUrl="https://b.example/"/>\n</body></opml>'
    )
    with pytest.raises(OpmlError, match="line 5"):
        parse_opml(data)


@pytest.mark.parametrize(
    "doctype",
    [
        b'<!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
        b'<!DOCTYPE opml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>',
    ],
)
def test_entity_declarations_are_refused(doctype: bytes) -> None:
    data = b'<?xml version="1.0"?>\n' + doctype + b'\n<opml><body><outline text="&x;&b;"/></body></opml>'
    with pytest.raises(OpmlError, match="line 2: the document declares XML entities"):
        parse_opml(data)


def test_encodings_by_declaration_and_bom() -> None:
    text = '<?xml version="1.0" encoding="{}"?><opml><body><outline text="Ünï €" xmlUrl="https://a.example/"/></body></opml>'
    for codec, declared in [("utf-16", "UTF-16"), ("utf-8-sig", "UTF-8"), ("cp1252", "windows-1252")]:
        assert parse_opml(text.format(declared).encode(codec))[0].title == "Ünï €"


def test_lenient_attribute_names_namespaces_and_whitespace() -> None:
    data = b"""<opml xmlns="http://opml.org/spec2" version="2.0"><body>
      <outline TEXT="  Spaced  " XmlUrl="  https://a.example/feed  " HTMLURL=" https://a.example/ "/>
      <outline type="RSS" text="url variant" url="https://b.example/feed"/>
      <outline type="include" text="another OPML" url="https://c.example/list.opml"/>
      <outline text="Mixed case scheme" xmlUrl="HTTPS://d.example/feed"/>
      <outline text="relative" xmlUrl="/feed"/>
      <outline text="unparseable host" xmlUrl="http://[broken/feed"/>
    </body></opml>"""
    assert parse_opml(data) == [
        OpmlFeed("https://a.example/feed", "Spaced", "https://a.example/"),
        OpmlFeed("https://b.example/feed", "url variant"),
        OpmlFeed("HTTPS://d.example/feed", "Mixed case scheme"),
    ]


def test_outlines_in_wrong_places_without_feeds_are_ignored() -> None:
    data = b'<opml><head><outline text="stray"/></head><body><outline text="x" xmlUrl="https://a.example/"/></body><outline text="after"/></opml>'
    assert parse_opml(data) == [OpmlFeed("https://a.example/", "x")]


def test_feed_outline_with_children_is_also_their_folder() -> None:
    data = b'<opml><body><outline text="Parent" xmlUrl="https://p.example/"><outline text="c" xmlUrl="https://c.example/"/></outline></body></opml>'
    assert parse_opml(data) == [
        OpmlFeed("https://p.example/", "Parent"),
        OpmlFeed("https://c.example/", "c", None, "Parent"),
    ]


# --- export --------------------------------------------------------------------------------------


def test_export_is_opml_2_with_nested_folders() -> None:
    feeds = [
        OpmlFeed("https://a.example/", 'A & <B> "quoted" ünïcode', "https://a.example/home", "Tech/Python"),
        OpmlFeed("https://b.example/", None, None, "Tech"),
        OpmlFeed("https://c.example/", "C"),
    ]
    data = export_opml(feeds, title="My <feeds>")
    assert data.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    assert "ünïcode".encode() in data
    root = etree.fromstring(data)
    assert (root.tag, root.get("version"), root.findtext("head/title")) == ("opml", "2.0", "My <feeds>")
    tech = root.find("body/outline")
    assert tech is not None and tech.get("text") == "Tech" and tech.get("xmlUrl") is None
    python = tech.find("outline")
    assert python is not None and python.get("text") == "Python"
    assert python[0].attrib == {
        "type": "rss",
        "text": 'A & <B> "quoted" ünïcode',
        "title": 'A & <B> "quoted" ünïcode',
        "xmlUrl": "https://a.example/",
        "htmlUrl": "https://a.example/home",
    }
    assert tech[1].attrib == {"type": "rss", "text": "", "xmlUrl": "https://b.example/"}
    assert [o.get("text") for o in root.iterfind("body/outline")] == ["Tech", "C"]
    assert all(o.get("text") is not None for o in root.iter("outline"))  # required by OPML 2.0
    assert parse_opml(data) == feeds


def test_export_reopens_a_folder_to_keep_the_order() -> None:
    feeds = [
        OpmlFeed("https://1.example/", "1", None, "X"),
        OpmlFeed("https://2.example/", "2"),
        OpmlFeed("https://3.example/", "3", None, "X"),
    ]
    body = etree.fromstring(export_opml(feeds)).find("body")
    assert body is not None and [o.get("text") for o in body] == ["X", "2", "X"]
    assert parse_opml(export_opml(feeds)) == feeds


def test_export_drops_characters_xml_cannot_carry() -> None:
    data = export_opml([OpmlFeed("https://a.example/", "bell\x07 and nul\x00", None, "F\x1b")], title="t\x0c")
    assert parse_opml(data) == [OpmlFeed("https://a.example/", "bell and nul", None, "F")]


def test_export_of_nothing_parses_back_to_nothing() -> None:
    assert parse_opml(export_opml([])) == []


# --- round trip ----------------------------------------------------------------------------------

XML_TEXT = st.characters(
    blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff"
) | st.sampled_from("&<>\"'\t\n\r/")
names = st.text(XML_TEXT, min_size=1, max_size=20).map(str.strip).filter(bool)
urls = st.builds(
    lambda scheme, host, path: f"{scheme}://{host}/{path}".strip(),
    st.sampled_from(["http", "https"]),
    st.from_regex(r"[a-z0-9]{1,12}(\.[a-z]{2,5}){1,2}", fullmatch=True),
    st.text(XML_TEXT, max_size=30),
)
folders = st.lists(names.map(lambda n: n.replace("/", "\u2215")), min_size=1, max_size=4).map("/".join)
canonical_feeds = st.lists(
    st.builds(
        OpmlFeed, url=urls, title=st.none() | names, site_url=st.none() | urls, folder=st.none() | folders
    ),
    unique_by=lambda f: f.url,
    max_size=12,
)


@given(canonical_feeds)
def test_round_trip_is_identity_for_what_parse_returns(feeds: list[OpmlFeed]) -> None:
    assert parse_opml(export_opml(feeds)) == feeds


anything = st.text(max_size=25)
any_feeds = st.lists(
    st.builds(
        OpmlFeed,
        url=urls | anything | st.sampled_from(["ftp://x.example/f", " https://pad.example/ "]),
        title=st.none() | anything,
        site_url=st.none() | urls | anything,
        folder=st.none() | anything,
    ),
    max_size=10,
)


@given(any_feeds, anything)
def test_export_accepts_anything_and_normalizes_in_one_round(feeds: list[OpmlFeed], title: str) -> None:
    once = parse_opml(export_opml(feeds, title=title))
    assert parse_opml(export_opml(once)) == once
    assert all(re.match(r"https?://", f.url, re.IGNORECASE) for f in once)
    assert len({f.url for f in once}) == len(once)
