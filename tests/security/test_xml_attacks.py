"""Hostile XML through the whole poll path (HTTP → size cap → parser process → store → events).

Each document is served by a real HTTP server and polled with the default settings (parse worker
process included), beside a well-behaved control feed. Bounded time and memory, a clear parse error or a
lenient result per feed, the host never crashes, no local file or internal URL is ever read.
The parser-level versions of these attacks live in tests/rss/test_parse_edge_cases.py.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from host import outbox
from host.runtime import Host
from modules.rss import store
from tests.feedserver import FeedServer, Route, ago, rss
from tests.services import assert_exactly_once, make_host, reset_stream

SECRET = "TOP-SECRET-7f3a9c"
HEAD = b"<?xml version='1.0' encoding='utf-8'?>"


def channel(inner: bytes, *, doctype: bytes = b"") -> bytes:
    return (
        HEAD
        + doctype
        + b"<rss version='2.0'><channel><title>t</title><link>http://example.org/</link>"
        + inner
        + b"<item><guid>ok</guid><title>still here</title></item></channel></rss>"
    )


def gzip_bomb(decoded_bytes: int = 1 << 30) -> bytes:
    """~1 MB of gzip that inflates to `decoded_bytes` of zeros."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    out = [comp.compress(block) for _ in range(decoded_bytes // len(block))]
    return b"".join(out) + comp.flush()


def attacks(secret_file: Path, secret_url: str) -> dict[str, Route]:
    lol = b"<!ENTITY lol0 'lol'>" + b"".join(
        b"<!ENTITY lol%d '%s'>" % (i, b"".join(b"&lol%d;" % (i - 1) for _ in range(10))) for i in range(1, 10)
    )
    big = b"A" * 100_000
    docs = {
        "xxe-file": channel(
            b"<item><guid>x</guid><title>&xxe;</title></item>",
            doctype=b'<!DOCTYPE rss [<!ENTITY xxe SYSTEM "file://%s">]>' % str(secret_file).encode(),
        ),
        "xxe-http": channel(
            b"<item><guid>x</guid><title>&xxe;</title></item>",
            doctype=b'<!DOCTYPE rss [<!ENTITY xxe SYSTEM "%s">]>' % secret_url.encode(),
        ),
        "xxe-parameter": channel(
            b"<item><guid>x</guid><title>&t;</title></item>",
            doctype=b'<!DOCTYPE rss [<!ENTITY %% p SYSTEM "%s"> %%p;]>' % secret_url.encode(),
        ),
        "billion-laughs": channel(b"<item><guid>b</guid><title>&lol9;</title></item>", doctype=b"<!DOCTYPE rss [" + lol + b"]>"),
        "quadratic": channel(
            b"<item><guid>q</guid><description>" + b"&a;" * 20_000 + b"</description></item>",
            doctype=b"<!DOCTYPE rss [<!ENTITY a '" + big + b"'>]>",
        ),
        "deep-nesting": channel(b"<item><guid>d</guid>" + b"<x>" * 100_000 + b"</x>" * 100_000 + b"</item>"),
        "huge-attribute": channel(b"<item><guid>h</guid><title a='" + b"A" * (8 << 20) + b"'>t</title></item>"),
        "invalid-utf8": channel(b"<item><guid>u</guid><title>caf\xc3 \xff\xfe \xed\xa0\x80</title></item>"),
        "nul-bytes": channel(b"<item><guid>n\x00</guid><title>nul\x00here</title><description>a\x00b</description></item>"),
        "10mb-text-node": channel(b"<item><guid>t</guid><description>" + b"word " * (2 * 1024 * 1024 - 2000) + b"</description></item>"),
    }  # fmt: skip
    routes = {
        f"/{k}": Route(body=v, headers={"Content-Type": "application/rss+xml"}) for k, v in docs.items()
    }
    routes["/gzip-bomb"] = Route(
        body=gzip_bomb(), headers={"Content-Encoding": "gzip", "Content-Type": "application/rss+xml"}
    )
    return routes


class PeakMemory(threading.Thread):
    """Peak RSS of this process plus its children (the parse worker), sampled every 50 ms."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self._halt = threading.Event()

    def run(self) -> None:
        me = psutil.Process()
        while not self._halt.wait(0.05):
            total = 0
            for p in [me, *me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)

    def __enter__(self) -> PeakMemory:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._halt.set()
        self.join(5)


@pytest.fixture
async def host(tmp_path: Path, database_url: str, nats_url: str) -> Iterator[Host] | Any:
    await reset_stream(nats_url)
    h = make_host(tmp_path, database_url, nats_url, env={"FEEDEATER_RSS_PER_HOST_CONCURRENCY": "50"})
    await h.open()
    yield h
    await h.close()


async def test_hostile_xml_through_the_poll_path(host: Host, tmp_path: Path) -> None:
    secret_file = tmp_path / "secret.txt"
    secret_file.write_text(SECRET)
    with FeedServer() as server:
        routes = attacks(secret_file, server.url("/secret"))
        server.route("/secret", Route(body=SECRET.encode()))
        for path, route in routes.items():
            server.route(path, route)
        server.route("/control", Route(body=rss([("c1", "Control", ago(hours=1), "fine")])))
        async with host.require_pool().acquire() as conn:
            for path in [*routes, "/control"]:
                await store.add_feed(conn, url=server.url(path))
        baseline = psutil.Process().memory_info().rss
        with PeakMemory() as memory:
            result = await host.run_job_once("rss.poll")
        assert result.status == "ok", result.error
        assert result.seconds < 120, result.seconds  # a sanity bound: a bomb would take minutes or forever
        assert memory.peak - baseline < 1024 * 1024 * 1024, memory.peak  # never the 1 GB the bombs expand to
        assert server.requests_to("/secret") == []

    pool = host.require_pool()
    rows = {
        r["url"].rsplit("/", 1)[1]: dict(r)
        for r in await pool.fetch(
            """SELECT f.url, p.successful_polls, p.consecutive_errors, p.last_error, p.lease_until,
                      (SELECT count(*) FROM mod_rss.entries e WHERE e.feed_id = f.id) AS entries,
                      (SELECT coalesce(max(length(e.content_text) + length(e.title)), 0)
                         FROM mod_rss.entries e WHERE e.feed_id = f.id) AS longest
               FROM mod_rss.feeds f JOIN mod_rss.poll_state p ON p.feed_id = f.id"""
        )
    }
    for name, st in rows.items():
        # Either a clean, recorded failure or a lenient result; never a feed left leased (a crash).
        assert st["lease_until"] is None, name
        assert (st["consecutive_errors"] == 1 and st["last_error"]) or st["successful_polls"] == 1, (name, st)
        if name.startswith(("xxe", "billion", "quadratic")):
            assert st["longest"] < 100_000, (name, st["longest"])  # no entity expanded
    assert rows["control"]["entries"] == 1 and rows["control"]["consecutive_errors"] == 0
    assert rows["gzip-bomb"]["consecutive_errors"] == 1 and "large" in rows["gzip-bomb"]["last_error"].lower()
    leaked = await pool.fetchval(
        """SELECT count(*) FROM mod_rss.entries
           WHERE title LIKE '%' || $1 || '%' OR content_text LIKE '%' || $1 || '%'
              OR summary_html LIKE '%' || $1 || '%'""",
        SECRET,
    )
    assert leaked == 0
    assert await pool.fetchval("SELECT count(*) FROM mod_rss.entries WHERE strpos(title, chr(1)) > 0") == 0
    assert host.js is not None
    relay = outbox.Relay(pool, host.js)
    while await relay.drain_once():
        pass
    events = await assert_exactly_once(pool, host.js)
    assert all(SECRET not in str(e) for e in events)
    # The 10 MB text node is kept in the database but the event stays small (docs/bus.md limits).
    assert rows["10mb-text-node"]["longest"] > 10_000_000
    assert max(len(json.dumps(e)) for e in events) < 300_000
