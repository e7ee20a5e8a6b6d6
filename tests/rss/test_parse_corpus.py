"""parse_feed over the shared real-world corpus (447 feeds): no crash, the right number of entries,
identity, dates, safe HTML and clean decoding, file by file."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from modules.rss.model import Feed
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.parse.encoding import decode
from modules.rss.parse.lenient import parse_lenient

pytestmark = pytest.mark.corpus

# Read at collection time only to name the parametrized cases; the tests go through the
# `shared_fixtures` fixture, which skips them in a clone without the corpus.
_MANIFEST = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "realworld" / "manifest.json"
CORPUS: list[dict[str, Any]] = json.loads(_MANIFEST.read_text())["files"] if _MANIFEST.exists() else []
NOW = datetime(2026, 3, 1, tzinfo=UTC)

# --- every file that is not a plain feed, decided one by one ----------------------------------------

# Genuinely not feeds: FeedParseError with a message that says why.
NOT_FEEDS = {
    "netnewswire/ScriptingNews.json": "not a JSON Feed",  # Dave Winer's "RSS in JSON"
    "rss-parser/unrecognized.rss": "neither a feed nor well-formed XML",  # an IIS "Document Moved" page
}
# The manifest's sniffer gave up on these (kind html/unknown), but they are feeds: (entries, why).
RECOVERED = {
    "feedjira/DuplicateContentAtomFeed.xml": (10, "an Atom feed inside an XHTML page"),
    "fastfeedparser-bench/eliot-jones-com-rss--9e0834333e854116.xml": (59, "declares UTF-16, is UTF-8"),
    "fastfeedparser-integration/utf16_encoded.xml": (1, "declares UTF-16, is ASCII"),
    "netnewswire/allthis-partial.json": (2, "a truncated download: its complete items (issue 27)"),
}
NOT_FEED_FORMATS = {"html", "unknown", "json-invalid", "rss-in-json"}

# Well-formed feeds whose entry count differs from the manifest's item count: items with nothing in
# them (no title, link, content or enclosure) are dropped with a warning.
COUNT_DEVIATIONS = {
    "netnewswire/authors.json": (0, "4 items with only an id, authors and an empty content_html"),
    "pypodcastparser/missing_info_podcast.rss": (0, "2 empty <item></item>"),
    "rss-parser/incomplete-fields.atom": (0, "1 entry holding only an empty <author>"),
    "rss-parser/missing-fields.atom": (0, "1 entry holding only an <id>"),
}

# Not well-formed files: which path reads them and how many entries come out (manifest counted
# items with a regex). "fast" = lxml after the repairs named in the warning.
NOT_WELL_FORMED = {
    "fastfeedparser-bench/aivarsk-com-atom-xml--3d13901a267083a8.xml": ("fast", 56, "undefined &colon;"),
    "fastfeedparser-bench/blog-kroy-io-feed--b0e71155ca8a590c.xml": ("fast", 10, "a <script> after </rss>"),
    "fastfeedparser-bench/codearcana-com-feeds-all-atom-xml--490dc9839ac777be.xml": ("fast", 40, "\\x02"),
    "fastfeedparser-bench/www-oscardom-dev-index-xml--705749c3b1bd02d8.xml": ("fast", 15, "raw &"),
    "fastfeedparser-bench/eliot-jones-com-rss--9e0834333e854116.xml": ("fast", 59, "wrong UTF-16 label"),
    "fastfeedparser-integration/utf16_encoded.xml": ("fast", 1, "wrong UTF-16 label"),
    "feed-rs/rss2__rss_2.0_dbengines.xml": ("fast", 1, "undefined entity"),
    "feedjira/itunes.xml": ("fast", 3, "blank line before <?xml"),
    "feedjira/PaulDixExplainsNothingWFW.xml": ("fast", 5, "undeclared wfw: prefix"),
    "miniflux/no_encoding_ISO-8859-1.xml": ("fast", 9, "latin-1 without a label; 1 empty item dropped"),
    "rss-parser/uolNoticias.rss": ("fast", 15, "latin-1 without a label"),
    "rome/jira_issue1.xml": ("fast", 2, "a comment before <?xml"),
    "pypodcastparser/ihr_interactive_podcast.rss": ("fast", 2, "undeclared creativeCommons: prefix"),
    "pypodcastparser/keyword_variability.rss": ("fast", 2, "undeclared atom: prefix"),
    "pypodcastparser/no_keywords.rss": ("fast", 2, "undeclared atom: prefix"),
    # Balanced tags (issue 27): an end tag closes what is left open inside its element, an item's start tag
    # closes what is left open inside the channel, stray end tags go, a CDATA section ends with its element.
    "feedjira/ITunesWithSingleQuotedAttributes.xml": ("fast", 3, "unclosed <itunes:category>"),
    "fastfeedparser-integration/osm-pl.xml": ("fast", 8, "unclosed CDATA section (the last item kept whole)"),
    "feed-rs/rss2__rss_2.0_invalid_1.xml": ("fast", 0, "truncated after the channel header"),
    "feedjira/InvalidDateFormat.xml": ("fast", 2, "truncated"),
    "pypodcastparser/episode.rss": ("fast", 8, "truncated"),
    "pypodcastparser/episode_parsing.rss": ("fast", 4, "truncated"),
    "pypodcastparser/basic_podcast.rss": ("fast", 2, "mismatched tags"),
    "pypodcastparser/invalid_episode_dates.rss": ("fast", 2, "mismatched tags"),
    "pypodcastparser/invalid_show_dates.rss": ("fast", 2, "mismatched tags"),
    # `<?xml?xml ...??>`, `<rss rss:version=2.0>` and every element under an undeclared `rss:` prefix:
    # feedparser found the channel but no items; the repairs read all 35 (issue 27).
    "fastfeedparser-bench/dylanharris-org-feed-me-rss--7ef13a42fa7e177a.xml": ("fast", 35, "rss: prefix"),
    "fastfeedparser-integration/malformed_rss_namespaced.xml": ("fast", 2, "its synthetic copy"),
}

# Expected text (checked with iconv) in files that are not UTF-8 or are mislabeled.
ENCODED_TITLES = {
    "rss-parser/encoding.rss": "Jornal de Notícias - Últimas Notícias",
    "feed-rs/rss2__rss_2.0_encoding_1.xml": "RSS Feed do Site Inovação Tecnológica",
    "feed-rs/rss0__rss_0.91_encoding_1.xml": "Dicas-L: Dicas técnicas de Linux e Software Livre",
    "feed-rs/rss0__rss_0.91_encoding_2.xml": "Tribunal de Justiça do Estado do Rio Grande do Sul",
    "feed-rs/rss0__rss_0.91_missing_id.xml": "Servicio de Personal - Ingreso - Diputación de valencia",
    "node-feedparser/iconv.xml": "Новости Оренбурга и области / Раздел Новости",
    "miniflux/encoding__koi8r.xml": "Пример RSS ленты",
    "netnewswire/kc0011.rss": "投资资讯网交易在线--流通纪念币最新20篇论坛主题-全文",
    "miniflux/encoding__utf8-incorrect-prolog.xml": "테스트 피드",
    "miniflux/encoding__windows-1252-incorrect-prolog.xml": "Euro €",
    "miniflux/encoding__windows-1252.xml": "Euro €",
    "miniflux/no_encoding_ISO-8859-1.xml": "Flux RSS du magazine de psychologie Le Cercle Psy",
    "simplepie/feed-utf16be.xml": "Test feed",
    "simplepie/feed-utf16le.xml": "Test feed",
}
# Files whose entries must contain characters of a script (the titles above may be ASCII).
SCRIPTS = {
    "miniflux/encoding_WINDOWS-1251.xml": "Цитата",
    "node-feedparser/iconv.xml": "В Бузулуке главные стройплощадки",
    "miniflux/encoding__koi8r.xml": "Привет мир! Ёжик",
    "netnewswire/kc0011.rss": "纪念币",
    "miniflux/encoding_ISO-8859-1.xml": "ü",
    "rss-parser/uolNoticias.rss": "Últimas Notícias",
    "miniflux/encoding__utf8-incorrect-prolog.xml": "Café",
}
# UTF-8 read as latin-1/windows-1252 ("Ã©", "Ð¾", "â€"), or replacement characters.
MOJIBAKE = re.compile(r"[ÃÂÐÑ][\xa0-\xbf]|â€|\ufffd")


def _corpus(*, feeds_only: bool = False) -> list[Any]:
    files = [f for f in CORPUS if not feeds_only or f["path"] not in NOT_FEEDS]
    return [pytest.param(f, id=f["path"]) for f in files]


@pytest.fixture(scope="module")
def parsed(shared_fixtures: Path) -> dict[str, Feed | FeedParseError]:
    """Every corpus file parsed once; any exception other than FeedParseError fails here."""
    results: dict[str, Feed | FeedParseError] = {}
    for record in CORPUS:
        body = (shared_fixtures / "realworld" / record["path"]).read_bytes()
        try:
            results[record["path"]] = parse_feed(
                body, url=f"https://feeds.example.com/{record['path']}", now=NOW
            )
        except FeedParseError as exc:
            results[record["path"]] = exc
    return results


def _feed(parsed: dict[str, Feed | FeedParseError], path: str) -> Feed:
    result = parsed[path]
    assert isinstance(result, Feed), f"{path}: {result}"
    return result


@pytest.mark.parametrize("record", _corpus())
def test_only_genuine_non_feeds_are_rejected(
    parsed: dict[str, Feed | FeedParseError], record: dict[str, Any]
) -> None:
    result = parsed[record["path"]]
    if record["path"] in NOT_FEEDS:
        assert isinstance(result, FeedParseError)
        assert NOT_FEEDS[record["path"]] in str(result)
    else:
        assert isinstance(result, Feed), f"rejected: {result}"


def test_every_not_a_feed_kind_is_decided(shared_fixtures: Path) -> None:
    odd = {f["path"] for f in CORPUS if f["format"] in NOT_FEED_FORMATS}
    assert odd == set(NOT_FEEDS) | set(RECOVERED)


@pytest.mark.parametrize("path", sorted(RECOVERED))
def test_feeds_the_sniffer_missed_are_read(parsed: dict[str, Feed | FeedParseError], path: str) -> None:
    assert len(_feed(parsed, path).entries) == RECOVERED[path][0]


@pytest.mark.parametrize(
    "record",
    [p for p in _corpus() if p.values[0]["wellformed"] and p.values[0]["format"] not in NOT_FEED_FORMATS],
)
def test_entry_count_matches_manifest(
    parsed: dict[str, Feed | FeedParseError], record: dict[str, Any]
) -> None:
    expected = COUNT_DEVIATIONS.get(record["path"], (record["items"], ""))[0]
    feed = _feed(parsed, record["path"])
    assert len(feed.entries) == expected
    if record["path"] in COUNT_DEVIATIONS:
        assert any("empty item(s) dropped" in w for w in feed.warnings)


def test_count_deviations_are_real_deviations(shared_fixtures: Path) -> None:
    manifest = {f["path"]: f for f in CORPUS}
    for path, (count, _) in COUNT_DEVIATIONS.items():
        assert manifest[path]["wellformed"] and manifest[path]["items"] != count


@pytest.mark.parametrize("record", [p for p in _corpus() if not p.values[0]["wellformed"]])
def test_not_well_formed_files(parsed: dict[str, Feed | FeedParseError], record: dict[str, Any]) -> None:
    if record["path"] in NOT_FEEDS or record["path"] in RECOVERED:
        return
    path_taken, entries, _ = NOT_WELL_FORMED[record["path"]]
    feed = _feed(parsed, record["path"])
    assert (feed.parser, len(feed.entries)) == (path_taken, entries)
    assert feed.warnings, "a recovered document must say what was wrong with it"


@pytest.mark.parametrize("record", _corpus(feeds_only=True))
def test_entries_have_unique_guids_utc_dates_and_clean_links(
    parsed: dict[str, Feed | FeedParseError], record: dict[str, Any]
) -> None:
    feed = _feed(parsed, record["path"])
    guids = [e.guid for e in feed.entries]
    assert all(g.strip() for g in guids)
    assert len(set(guids)) == len(guids)
    for entry in feed.entries:
        assert entry.guid_source in ("id", "link", "hash")
        for when in (entry.published, entry.updated):
            assert when is None or when.utcoffset() == timedelta(0)
        assert entry.date_uncertain == (entry.published is None)
        for url in [entry.link, entry.image, *(e.url for e in entry.enclosures)]:
            assert url is None or re.match(r"https?://[^/\s]+", url), url
        assert len(entry.content_hash) == 64


@pytest.mark.parametrize("record", _corpus(feeds_only=True))
def test_html_is_sanitized(parsed: dict[str, Feed | FeedParseError], record: dict[str, Any]) -> None:
    for entry in _feed(parsed, record["path"]).entries:
        for html in (entry.content_html or "", entry.summary_html or ""):
            lowered = html.lower()
            assert "<script" not in lowered and "<iframe" not in lowered and "<style" not in lowered
            assert not re.search(r"<[^>]+\son\w+\s*=", lowered)
            for url in re.findall(r'<[^>]+\s(?:href|src)="([^"]*)"', lowered):  # nh3 always quotes with "
                assert url.startswith(("http://", "https://", "mailto:")), url


def test_every_json_feed_is_parsed(parsed: dict[str, Feed | FeedParseError]) -> None:
    json_feeds = [f for f in CORPUS if f["format"] in ("jsonfeed1", "jsonfeed1.1")]
    assert len(json_feeds) == 21
    for record in json_feeds:
        feed = _feed(parsed, record["path"])
        assert feed.parser == "json"
        assert feed.format == ("jsonfeed1.1" if record["format"] == "jsonfeed1.1" else "jsonfeed1.0")


@pytest.mark.parametrize("path", sorted(ENCODED_TITLES))
def test_titles_decode_without_mojibake(parsed: dict[str, Feed | FeedParseError], path: str) -> None:
    assert _feed(parsed, path).title == ENCODED_TITLES[path]


@pytest.mark.parametrize("path", sorted(set(ENCODED_TITLES) | set(SCRIPTS)))
def test_entries_decode_without_mojibake(parsed: dict[str, Feed | FeedParseError], path: str) -> None:
    feed = _feed(parsed, path)
    text = "\n".join([feed.title, feed.description] + [f"{e.title}\n{e.content_text}" for e in feed.entries])
    assert not MOJIBAKE.search(text), MOJIBAKE.search(text)
    if path in SCRIPTS:
        assert SCRIPTS[path] in text


@pytest.mark.parametrize("record", _corpus(feeds_only=True))
def test_reparsing_gives_the_same_identities_and_hashes(
    parsed: dict[str, Feed | FeedParseError], shared_fixtures: Path, record: dict[str, Any]
) -> None:
    body = (shared_fixtures / "realworld" / record["path"]).read_bytes()
    later = parse_feed(
        body, url=f"https://feeds.example.com/{record['path']}", now=datetime(2030, 1, 1, tzinfo=UTC)
    )
    first = _feed(parsed, record["path"])
    assert [(e.guid, e.content_hash) for e in later.entries] == [
        (e.guid, e.content_hash) for e in first.entries
    ]


@pytest.mark.parametrize("record", _corpus(feeds_only=True))
def test_skipping_known_raw_hashes_keeps_every_item(
    parsed: dict[str, Feed | FeedParseError], shared_fixtures: Path, record: dict[str, Any]
) -> None:
    """Issue 25: with every stored raw hash known, the items parse skips and the ones it normalizes are,
    in document order, what a full parse gives (identities, dates, warnings, the cap)."""
    body = (shared_fixtures / "realworld" / record["path"]).read_bytes()
    url = f"https://feeds.example.com/{record['path']}"
    full = _feed(parsed, record["path"])
    hashed = parse_feed(body, url=url, now=NOW, known=frozenset())
    skipped = parse_feed(
        body, url=url, now=NOW, known=frozenset(e.raw_hash for e in hashed.entries if e.raw_hash)
    )
    assert [(e.guid, e.published, e.future_dated) for e in skipped.items()] == [
        (e.guid, e.published, e.future_dated) for e in full.entries
    ]
    assert (skipped.warnings, skipped.over_cap) == (full.warnings, full.over_cap)
    by_guid = {e.guid: e for e in hashed.entries}
    assert all(e == by_guid[e.guid] for e in skipped.entries)  # the rest normalized exactly as before


def test_issue_14_defects_seen_in_the_corpus(
    parsed: dict[str, Feed | FeedParseError], shared_fixtures: Path
) -> None:
    """The field-level defects of issue 14 as they showed in real feeds (own fixtures: test_parse_edge_cases)."""
    titles = [e.title for e in _feed(parsed, "netnewswire/3960.json").entries]
    assert "Die Rückkehr von <i> und <b>" in titles  # JSON Feed titles are plain text
    assert _feed(parsed, "netnewswire/cloudblog.rss").entries[0].authors == ["Diane Chaleff"]
    assert _feed(parsed, "podcast-namespace/example.xml").entries[0].authors == ["John Doe"]
    # A podcast that needs the feedparser path keeps its audio.
    decoded = decode((shared_fixtures / "realworld" / "pypodcastparser" / "basic_podcast.rss").read_bytes())
    raw = parse_lenient(decoded.text, "https://feeds.example.com/basic_podcast.rss")
    assert [(e.type, e.length) for e in raw.items[0].enclosures] == [("audio/mpeg", "123456")]
