"""Normalization invariants over generated Atom and JSON Feed documents (RSS 2.0 and raw items are covered
in tests/rss/test_normalize.py, whose invariant check this reuses): every entry gets a unique non-blank
guid, guids and hashes are stable across re-parses, dates are UTC, URLs are absolute http(s)."""

from __future__ import annotations

import html
import json
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modules.rss.parse import parse_feed
from tests.rss.test_normalize import BASE, NOW, _check_invariants, _dates, _guids, _links, _xml_text

_atom_dates = st.sampled_from([None, "", "garbage", "2024-01-01T10:00:00+02:00", "2024-05-31T23:59:59Z",
                               "1999-12-31T00:00:00-11:00", "2030-01-01T00:00:00Z"])  # fmt: skip


@st.composite
def _atom_documents(draw: st.DrawFn) -> tuple[bytes, int]:
    entries, titled = [], 0
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        parts = []
        title = draw(st.one_of(st.none(), _xml_text))
        titled += bool(title and title.strip())
        for tag, value in (("id", draw(st.one_of(st.none(), _guids))), ("title", title),
                           ("updated", draw(_atom_dates)), ("published", draw(_atom_dates)),
                           ("summary", draw(st.one_of(st.none(), _xml_text)))):  # fmt: skip
            if value is not None:
                parts.append(f"<{tag}>{html.escape(value)}</{tag}>")
        link = draw(_links)
        if link is not None:
            parts.append(f'<link rel="alternate" href="{html.escape(link)}"/>')
        entries.append("<entry>" + "".join(parts) + "</entry>")
    base = draw(st.sampled_from(["", ' xml:base="https://other.example/dir/"', ' xml:base="/rel/"']))
    doc = f'<feed xmlns="http://www.w3.org/2005/Atom"{base}><title>t</title>{"".join(entries)}</feed>'
    return doc.encode(), titled


@st.composite
def _json_feeds(draw: st.DrawFn) -> tuple[bytes, int]:
    items, titled = [], 0
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        item: dict[str, object] = {}
        for key, strategy in (("id", _guids), ("url", _links), ("title", _xml_text),
                              ("content_html", _xml_text), ("date_published", _atom_dates),
                              ("date_modified", _dates)):  # fmt: skip
            value = draw(st.one_of(st.none(), strategy))
            if value is not None:
                item[key] = value
        titled += bool(str(item.get("title") or "").strip())
        items.append(item)
    doc = {"version": "https://jsonfeed.org/version/1.1", "title": "t", "items": items}
    return json.dumps(doc).encode(), titled


def _reparse_identically(body: bytes, content_type: str | None) -> None:
    feed = parse_feed(body, url=BASE, content_type=content_type, now=NOW)
    _check_invariants(feed)
    again = parse_feed(body, url=BASE, content_type=content_type, now=NOW + timedelta(days=3))
    assert [(e.guid, e.content_hash) for e in again.entries] == [
        (e.guid, e.content_hash) for e in feed.entries
    ]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_atom_documents())
def test_atom_documents_keep_the_invariants(doc: tuple[bytes, int]) -> None:
    body, titled = doc
    _reparse_identically(body, "application/atom+xml")
    assert len(parse_feed(body, url=BASE, now=NOW).entries) >= titled  # a titled entry is never dropped


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_json_feeds())
def test_json_feeds_keep_the_invariants(doc: tuple[bytes, int]) -> None:
    body, titled = doc
    _reparse_identically(body, "application/feed+json")
    assert len(parse_feed(body, url=BASE, now=NOW).entries) >= titled
