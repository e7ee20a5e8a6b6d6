"""Raw bodies stored compressed (issue 25 item 3): zstd when it saves bytes, every reader gets the
exact bytes back (the API, `rss why`'s latest fetch, the public view the tap reads)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from host import blobcodec
from host.runtime import Host
from modules.rss import store
from modules.rss.store import explain, raw
from modules.tap import store as tap_store


def corpus_feed(shared: Path) -> bytes:
    """A real feed of the fixture corpus (the biggest of one source)."""
    files = (p for p in (shared / "realworld" / "miniflux").iterdir() if p.is_file())
    return max(files, key=lambda p: p.stat().st_size).read_bytes()


@pytest.mark.parametrize("data", [b"", b"<rss/>", os.urandom(4096), b"<item>x</item>" * 500])
def test_every_body_comes_back_byte_for_byte(data: bytes) -> None:
    codec, stored = blobcodec.encode(data)
    assert blobcodec.decode(codec, stored) == data
    assert (codec == "zstd") == (len(stored) < len(data))  # zstd only when it is smaller


def test_an_unknown_codec_is_refused_rather_than_returned_as_bytes() -> None:
    with pytest.raises(ValueError, match="lz4"):
        blobcodec.decode("lz4", b"x")


async def test_a_fetched_body_is_stored_compressed_and_read_back_exactly(
    host: Host, shared_fixtures: Path
) -> None:
    body = corpus_feed(shared_fixtures)
    pool = host.require_pool()
    async with pool.acquire() as conn:
        feed = (await store.add_feed(conn, url="http://127.0.0.1:9/feed"))[0]
        saved = await raw.save_raw(
            conn, feed_id=feed.id, url=feed.url, status=200, headers={"etag": '"1"'}, body=body, keep=3
        )
        tiny = await raw.save_raw(
            conn, feed_id=feed.id, url=feed.url, status=200, headers={}, body=b"<a/>", keep=3
        )
        stored = await conn.fetch(
            "SELECT codec, size, length(body) AS stored FROM mod_rss.raw_blobs ORDER BY size DESC"
        )
        assert [(r["codec"], r["size"]) for r in stored] == [("zstd", len(body)), ("identity", 4)]
        assert stored[0]["stored"] * 3 < len(body)  # a real feed: more than 3× smaller
        got = await raw.get_raw(conn, saved.raw_id)
        assert got is not None and got["body"] == body and got["size"] == len(body) and "codec" not in got
        assert (await raw.get_raw(conn, tiny.raw_id) or {})["body"] == b"<a/>"
        latest = await explain.latest_fetch(conn, feed.id)
        assert latest is not None and latest["id"] == tiny.raw_id and latest["body"] == b"<a/>"
        assert await tap_store.raw_body(conn, saved.raw_id) == body  # the public view, decoded by the tap
        assert await tap_store.raw_body(conn, 987654321) is None


async def test_old_blobs_are_compressed_a_bounded_batch_at_a_time(
    host: Host, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(raw, "COMPRESS_BYTES", 1)  # every blob is over it: one per transaction
    bodies = [b"<item>one</item>" * 100, b"<item>two</item>" * 100, os.urandom(2000)]
    pool = host.require_pool()
    for body in bodies:  # as stored before rss/0031
        await pool.execute(
            "INSERT INTO mod_rss.raw_blobs (sha256, body, size) VALUES ($1, $2, $3)",
            hashlib.sha256(body).hexdigest(),
            body,
            len(body),
        )
    assert await raw.compress_old_blobs(pool) == 2  # the random bytes stay as they are
    stored = {r["sha256"]: r for r in await pool.fetch("SELECT sha256, codec, body FROM mod_rss.raw_blobs")}
    for body in bodies:
        row = stored[hashlib.sha256(body).hexdigest()]
        assert blobcodec.decode(row["codec"], row["body"]) == body
    assert sorted(r["codec"] for r in stored.values()) == ["identity", "zstd", "zstd"]
