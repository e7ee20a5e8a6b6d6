"""Feed autodiscovery over real pages (NetNewsWire's test corpus) and hand-written edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urljoin

import pytest

from modules.rss.subscriptions.discover import (
    COMMON_FEED_PATHS,
    DiscoveredFeed,
    discover_feeds,
    looks_like_html,
)

LOCAL = Path(__file__).resolve().parents[2] / "fixtures" / "discovery"
PAGE = "https://www.example.com/blog/post.html"

# Where each corpus page was served from (its canonical link, or its own site for the pages
# without one); the manifest lists hrefs as written, possibly relative.
PAGE_URLS = {
    "netnewswire/DaringFireball.html": "https://daringfireball.net/",
    "netnewswire/YouTubeTheVolvoRocks.html": "https://www.youtube.com/channel/UCct7QF2jcWRY6dhXWMSq9LQ",
    "netnewswire/coco.html": "https://www.theatlantic.com/entertainment/archive/2017/11/coco-is-among-pixars-best-movies-in-years/546695/",
    "netnewswire/furbo.html": "http://furbo.org/",
    "netnewswire/inessential.html": "http://inessential.com/",
    "netnewswire/sixcolors.html": "https://sixcolors.com/",
}


@pytest.mark.corpus
def test_corpus_pages_give_the_manifest_feeds(shared_fixtures: Path) -> None:
    manifest = json.loads((shared_fixtures / "discovery" / "manifest.json").read_text())
    assert {f["path"] for f in manifest["files"]} == set(PAGE_URLS)
    for entry in manifest["files"]:
        page_url = PAGE_URLS[entry["path"]]
        found = discover_feeds((shared_fixtures / "discovery" / entry["path"]).read_bytes(), page_url)
        expected = [(urljoin(page_url, link["href"]), link["type"]) for link in entry["feed_links_regex"]]
        assert [(f.url, f.type) for f in found] == expected, entry["path"]


@pytest.mark.corpus
def test_corpus_titles_and_non_feed_alternates(shared_fixtures: Path) -> None:
    pages = shared_fixtures / "discovery" / "netnewswire"
    assert discover_feeds((pages / "coco.html").read_bytes(), PAGE_URLS["netnewswire/coco.html"]) == [
        DiscoveredFeed("https://www.theatlantic.com/feed/all/", "The Atlantic", "application/rss+xml"),
        DiscoveredFeed(
            "https://www.theatlantic.com/feed/best-of/", "Best of The Atlantic", "application/rss+xml"
        ),
    ]
    # YouTube also has rel=alternate links for handheld pages and android-app:/ios-app: URLs.
    youtube = discover_feeds((pages / "YouTubeTheVolvoRocks.html").read_bytes(), "https://www.youtube.com/")
    assert [f.title for f in youtube] == ["RSS"]


def test_every_link_variant() -> None:
    assert discover_feeds((LOCAL / "many-links.html").read_bytes(), PAGE) == [
        DiscoveredFeed("https://cdn.example.com/blog/feed.xml", "Main feed", "application/rss+xml"),
        # rel with several tokens, type in capitals with a parameter, title trimmed
        DiscoveredFeed("https://cdn.example.com/atom.xml", "Atom", "application/atom+xml"),
        DiscoveredFeed("https://cdn.example.com/blog/feed.json", "JSON Feed", "application/feed+json"),
        # application/json counts because the title says feed; the WordPress REST link does not
        DiscoveredFeed(
            "https://cdn.example.com/blog/feed2.json", "JSON Feed (generic type)", "application/json"
        ),
        DiscoveredFeed("https://cdn.example.com/blog/index.rdf", "RSS 1.0", "application/rdf+xml"),
        DiscoveredFeed("http://old.example.com/rss", "Old-style feed: URL", "application/rss+xml"),
        DiscoveredFeed("https://cdn.example.com/all-posts", None, None),  # rel="feed", no type
        DiscoveredFeed("https://cdn.example.com/blog/comments/atom.xml", "Comments", "application/atom+xml"),
        # Not found: the duplicate of feed.xml, oEmbed, hreflang text/html, javascript:, no href, <a>.
    ]


def test_page_without_feeds() -> None:
    assert discover_feeds((LOCAL / "no-feeds.html").read_bytes(), PAGE) == []
    assert "/feed" in COMMON_FEED_PATHS and len(set(COMMON_FEED_PATHS)) == len(COMMON_FEED_PATHS)
    assert all(path.startswith("/") for path in COMMON_FEED_PATHS)


def test_meta_charset_decodes_titles() -> None:
    assert discover_feeds((LOCAL / "latin1.html").read_bytes(), PAGE) == [
        DiscoveredFeed("https://www.example.com/rss", "Café news", "application/rss+xml")
    ]


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("feed.xml", "https://www.example.com/blog/feed.xml"),
        ("../feed.xml", "https://www.example.com/feed.xml"),
        ("//other.example/f", "https://other.example/f"),
        ("  /spaced  ", "https://www.example.com/spaced"),
        ("feed:https://secure.example/f", "https://secure.example/f"),
        ("feed://plain.example/f", "http://plain.example/f"),
        ("data:application/rss+xml,<rss/>", None),
        ("mailto:someone@example.com", None),
        ("", None),
    ],
)
def test_href_resolution(href: str, expected: str | None) -> None:
    page = f'<html><head><link rel="alternate" type="application/rss+xml" href="{href}"></head></html>'
    found = discover_feeds(page.encode(), PAGE)
    assert [f.url for f in found] == ([] if expected is None else [expected])


def test_relative_base_href_resolves_against_the_page() -> None:
    page = b'<html><head><base href="/sub/"><link rel="alternate" type="application/atom+xml" href="a.xml"></head></html>'
    assert [f.url for f in discover_feeds(page, PAGE)] == ["https://www.example.com/sub/a.xml"]


@pytest.mark.parametrize("html", [b"", b"   \n", b"<!-- only a comment -->", b"plain text"])
def test_empty_or_non_html_input_finds_nothing(html: bytes) -> None:
    assert discover_feeds(html, PAGE) == []


def test_utf16_page() -> None:
    page = '<html><head><link rel="alternate" type="application/rss+xml" title="Ünï" href="/f"></head></html>'
    assert discover_feeds(page.encode("utf-16"), PAGE) == [
        DiscoveredFeed("https://www.example.com/f", "Ünï", "application/rss+xml")
    ]


# --- looks_like_html -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b"<!DOCTYPE html><html><head></head></html>", "text/html; charset=utf-8", True),
        (b"<!doctype HTML>\n<title>x</title>", None, True),
        (b"\n\n  <html lang=en>", "text/plain", True),  # the body wins over a wrong label
        (
            b'<?xml version="1.0"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "x">\n<html>',
            None,
            True,
        ),
        (b"<head><title>no html tag</title></head>", None, True),
        (b"\xef\xbb\xbf<!DOCTYPE html>", None, True),  # UTF-8 BOM
        (b'<?xml version="1.0"?><rss version="2.0"><channel/></rss>', "text/html", False),  # mislabelled feed
        (
            b"\xef\xbb\xbf<?xml version='1.0'?>\n<!-- generator -->\n<feed xmlns='http://www.w3.org/2005/Atom'>",
            None,
            False,
        ),
        (b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">', "text/html", False),
        (
            b'<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "x"><rss version="0.91">',
            None,
            False,
        ),
        (b'{"version": "https://jsonfeed.org/version/1.1", "items": []}', "text/html", False),
        ("<rss/>".encode("utf-16"), "text/html", False),
        ("<html>".encode("utf-16"), None, True),
        # Nothing recognisable in the body: the Content-Type decides.
        (b"<div>fragment</div>", "text/html", True),
        (b"<div>fragment</div>", "application/xml", False),
        (b"", "application/xhtml+xml", True),
        (b"", None, False),
        (
            b"<!-- " + b"x" * 5000 + b" --><html>",
            "application/rss+xml",
            False,
        ),  # comment longer than the sniff
    ],
)
def test_looks_like_html(body: bytes, content_type: str | None, expected: bool) -> None:
    assert looks_like_html(body, content_type) is expected


@pytest.mark.corpus
def test_looks_like_html_on_the_corpus_pages(shared_fixtures: Path) -> None:
    for page in (shared_fixtures / "discovery" / "netnewswire").glob("*.html"):
        assert looks_like_html(page.read_bytes(), None), page.name
