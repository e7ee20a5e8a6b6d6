"""The reader protocols' pure parts: credentials in headers, Miniflux's query parameters, Google
Reader's stream and item ids, timestamps in any unit, unread counts, ClientLogin tokens."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from host import logins
from host.web.clientauth import Credential, credential
from host.web.slashes import merged
from modules.rss.reader import greaderwire as gr
from modules.rss.reader import minifluxwire as mf
from modules.rss.reader.edge import BadRequest
from modules.rss.store.reading import EntryFilter


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_credentials_each_app_sends() -> None:
    assert credential("fe_abc", None) == Credential("token", "fe_abc")
    assert credential(None, "Bearer fe_abc") == Credential("token", "fe_abc")
    assert credential(None, basic("ann", "pa:ss")) == Credential("basic", "pa:ss", "ann")  # ':' in passwords
    assert credential(None, "GoogleLogin auth=ann/abc") == Credential("google", "ann/abc")
    assert credential(None, "googlelogin  auth=ann/abc") == Credential("google", "ann/abc")
    for nothing in (
        None,
        "",
        "Basic !!!",
        "Basic " + base64.b64encode(b"no-colon").decode(),
        "GoogleLogin x=1",
        "Digest a",
    ):
        assert credential(None, nothing) is None, nothing


def test_client_tokens_are_bound_to_the_stored_hash() -> None:
    token = logins.client_token("ann", "$argon2id$one")
    assert token.startswith("ann/") and logins.token_name(token) == "ann"
    assert logins.token_matches(token, "ann", "$argon2id$one")
    assert not logins.token_matches(token, "ann", "$argon2id$two")  # a new password revokes it
    assert logins.token_name("no-slash") is None and logins.token_name("bad name/x") is None


def test_leading_slashes_merge_and_inner_ones_stay() -> None:
    assert merged("//v1/feeds") == "/v1/feeds" and merged("///reader/api/0/token") == "/reader/api/0/token"
    assert merged("/reader/api/0/stream/contents/feed/https://a.example//x") == (
        "/reader/api/0/stream/contents/feed/https://a.example//x"
    )


def test_miniflux_entry_filters() -> None:
    q = mf.entry_query(
        {"status": ["unread"], "starred": ["true"], "direction": ["desc"], "limit": ["5"], "offset": ["10"]}
    )
    assert q.where == EntryFilter(read=False, starred=True) and (q.newest_first, q.limit, q.offset) == (
        True,
        5,
        10,
    )
    assert mf.entry_query({"status": ["read", "unread"]}).where.read is None
    assert mf.entry_query({}).newest_first is False  # Miniflux's default direction is asc
    assert mf.entry_query({"limit": ["0"]}).limit == mf.MAX_LIMIT  # 0: no limit, in Miniflux
    assert mf.entry_query({"status": ["removed"]}).where.ids == ()  # nothing is "removed" here
    q = mf.entry_query(
        {"published_after": ["1700000000"], "changed_before": ["1700000100"], "order": ["changed_at"]}
    )
    assert q.where.since == datetime.fromtimestamp(1700000000, UTC) and q.sort == "changed"
    assert q.where.changed_until == datetime.fromtimestamp(1700000100, UTC)
    for bad in (
        {"status": ["gone"]},
        {"order": ["title"]},
        {"direction": ["up"]},
        {"limit": ["x"]},
        {"offset": ["-1"]},
    ):
        with pytest.raises(BadRequest):
            mf.entry_query(bad)


@pytest.mark.parametrize(
    ("raw", "stream"),
    [
        ("feed/12", gr.Stream("feed", "12")),
        ("feed/https://a.example/rss?x=1", gr.Stream("feed", "https://a.example/rss?x=1")),
        ("user/-/label/Tech/Python", gr.Stream("label", "Tech/Python")),
        ("user/1/label/Tech", gr.Stream("label", "Tech")),
        ("user/-/state/com.google/reading-list", gr.Stream("reading-list")),
        ("user/123/state/com.google/read", gr.Stream("read")),
        ("user/-/state/com.google/kept-unread", gr.Stream("unread")),
        ("user/-/state/com.google/broadcast", gr.Stream("other", "broadcast")),
    ],
)
def test_google_reader_stream_ids(raw: str, stream: gr.Stream) -> None:
    assert gr.parse_stream(raw) == stream


def test_google_reader_item_ids_and_states() -> None:
    assert gr.item_id("tag:google.com,2005:reader/item/000000000000001f") == 31
    assert gr.item_id("31") == 31 and gr.long_id(31) == "tag:google.com,2005:reader/item/000000000000001f"
    for bad in ("", "abc", "-5", "0", "tag:google.com,2005:reader/item/zz", str(2**63)):
        assert gr.item_id(bad) is None, bad
    for bad in ("feed/", "user/-/label/", "label/x", "user/-/state/other/read"):
        with pytest.raises(gr.BadStream):
            gr.parse_stream(bad)
    read, starred, kept = (
        gr.parse_stream(f"user/-/state/com.google/{s}") for s in ("read", "starred", "kept-unread")
    )
    assert gr.states([read, starred], include=True) == gr.States(True, True)
    assert gr.states([read], include=False) == gr.States(read=False)
    assert gr.states([kept], include=True) == gr.States(read=False)  # newsboat: a=kept-unread
    assert gr.states([kept], include=False) | gr.states([read], include=True) == gr.States(read=True)


def test_timestamps_in_any_unit() -> None:
    moment = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
    seconds = int(moment.timestamp())
    for stamp in (seconds, seconds * 1000, seconds * 10**6, seconds * 10**9):
        assert gr.moment(stamp) == moment, stamp


def test_unread_counts_per_feed_folder_and_reading_list() -> None:
    t1, t2 = datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC)
    counts = [
        {"feed_id": 1, "unread": 2, "read": 0, "newest": t1},
        {"feed_id": 2, "unread": 3, "read": 1, "newest": t2},
    ]
    got = gr.unread_counts(counts, {1: "Tech", 2: None})
    assert got["max"] == 5
    assert {c["id"]: c["count"] for c in got["unreadcounts"]} == {
        "feed/1": 2,
        "feed/2": 3,
        "user/-/label/Tech": 2,
        "user/-/state/com.google/reading-list": 5,
    }
    assert got["unreadcounts"][-1]["newestItemTimestampUsec"] == str(gr.micros(t2))
