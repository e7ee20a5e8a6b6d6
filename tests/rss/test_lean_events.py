"""Lean events (issue 25): the `rss` key carries at most CONTENT_HTML_MAX characters of each HTML field, cut
between tags with the open elements closed, and a reference to the whole entry."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from modules.rss.ingest import diff, processors, publish
from modules.rss.ingest.publish import CONTENT_HTML_MAX, cut_html
from modules.rss.model import Entry
from modules.rss.parse import FeedParseError, parse_feed
from modules.rss.parse.sanitize import sanitize_html

NOW = datetime(2026, 11, 27, 12, tzinfo=UTC)


def test_short_html_is_kept_whole() -> None:
    assert cut_html("<p>short</p>", 100) == ("<p>short</p>", False)


def test_a_cut_closes_what_it_left_open() -> None:
    html = "<div><p>one two three</p><p>four <b>five six</b> seven</p></div>"
    out, cut = cut_html(html, 40)
    assert cut and len(out) <= 40
    assert out == "<div><p>one two three</p><p>fo</p></div>"


def test_a_cut_never_splits_a_tag_or_a_character_reference() -> None:
    html = sanitize_html('<p>a &amp; b <a href="https://example.com/x">link</a> tail</p>', None)
    for limit in range(0, len(html)):
        out, cut = cut_html(html, limit)
        assert cut and len(out) <= limit
        assert "&am<" not in out and not out.endswith("&") and out.count("<") == out.count(">")
        assert sanitize_html(out, None) == out


def test_void_elements_need_no_end_tag() -> None:
    out, _ = cut_html('<p>x<br>y<img src="https://e.com/i.png">zzzzzzzzzzzzzz</p>', 44)
    assert out.endswith("</p>") and "</br>" not in out and "</img>" not in out


@given(
    st.lists(
        st.one_of(
            st.sampled_from(
                ["<p>", "</p>", "<b>", "</b>", "<br>", "<ul><li>", "</li></ul>", "&amp;", "&lt;"]
            ),
            st.text(alphabet="abc xyz", min_size=1, max_size=12),
        ),
        max_size=40,
    ),
    st.integers(min_value=0, max_value=200),
)
def test_every_cut_is_sanitized_html_within_the_limit(parts: list[str], limit: int) -> None:
    html = sanitize_html("".join(parts), None)  # what entries carry: nh3's serialization
    out, cut = cut_html(html, limit)
    assert len(out) <= max(limit, len(html) if not cut else limit)
    assert cut == (len(html) > limit)
    assert sanitize_html(out, None) == out  # balanced, nothing broken: re-sanitizing changes nothing


def corpus_documents(shared: Path) -> list[list[Entry]]:
    out: list[list[Entry]] = []
    for path in sorted((shared / "realworld").rglob("*")):
        if not path.is_file() or path.name == "manifest.json":
            continue
        try:
            out.append(parse_feed(path.read_bytes(), url=f"https://example.com/{path.name}", now=NOW).entries)
        except FeedParseError:
            continue
    return out


def test_corpus_events_carry_well_formed_capped_html_and_the_whole_entrys_address(
    shared_fixtures: Path,
) -> None:
    events, whole = [], {}
    for feed_id, entries in enumerate(corpus_documents(shared_fixtures)):
        intents = processors.run(
            diff.diff(
                entries,
                {},
                set(),
                feed_id=feed_id,
                feed_title="T",
                now=NOW,
                first_poll=True,
                lookback_hours=48,
            )
        )
        ids = {e.entry.guid: feed_id * 1000 + i for i, e in enumerate(intents.new)}
        whole.update({ids[e.entry.guid]: e.entry for e in intents.new})
        events += publish.events(intents, ids)
    assert len(events) == len(whole) > 7000
    truncated = 0
    for event in events:
        rss = event.payload["message"]["rss"]
        entry = whole[rss["entryId"]]
        assert rss["guid"] == entry.guid and rss["entryUrl"] == f"/api/v1/entries/{rss['entryId']}"
        for key, source in (("contentHtml", entry.content_html), ("summaryHtml", entry.summary_html)):
            html = rss[key]
            assert (html is None) == (source is None)
            if html is None or source is None:
                continue
            assert len(html) <= CONTENT_HTML_MAX
            assert rss[key.replace("Html", "Truncated")] == (len(source) > CONTENT_HTML_MAX)
            if len(source) <= CONTENT_HTML_MAX:
                assert html == source
            elif sanitize_html(source, None) == source:  # well formed whenever the entry's own HTML is
                assert sanitize_html(html, None) == html
        truncated += rss["contentTruncated"]
    assert truncated > 100  # the corpus has long entries: the cap is exercised
    sizes = [len(e.encode()) for e in events]
    assert max(sizes) < 40_000 and json.loads(events[0].encode())["type"] == "MessageCreated"
