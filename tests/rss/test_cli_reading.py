"""The first hour with `feedeater rss` (issue #15): a new feed is fetched when added, what was fetched can
be read and marked, failures say how to fix them, and output reads well. Real CLI processes, real services,
a real HTTP feed server on loopback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from modules.rss.service.feeds import FETCH_NOW_CONCURRENCY
from tests.feedserver import FeedServer, Route, ago, rss
from tests.host.test_cli import assert_one_line_error
from tests.services import FEEDEATER, feedeater, feedeater_env

ENCLOSED = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>Podcast \xe6\x97\xa5\xe6\x9c\xac</title>
<link>http://example.org/</link><description>d</description>
<item><guid>ep1</guid><title>Episode one</title><link>http://example.org/ep1</link>
<description>&lt;p&gt;Show notes with &lt;b&gt;bold&lt;/b&gt; words.&lt;/p&gt;</description>
<enclosure url="http://example.org/ep1.mp3" type="audio/mpeg" length="1234"/></item>
</channel></rss>"""


@pytest.fixture
def env(tmp_path: Path, database_url: str, nats_url: str) -> dict[str, str]:
    return feedeater_env(tmp_path, database_url, nats_url)


def ok(env: dict[str, str], *args: str) -> str:
    res = feedeater(env, *args)
    assert res.returncode == 0, (args, res.stderr)
    assert "Traceback" not in res.stderr
    return res.stdout


def test_add_fetches_at_once_and_entries_can_be_read_and_marked(
    env: dict[str, str], feed_server: FeedServer
) -> None:
    items = [(f"g{i}", f"Story {i}", ago(hours=i + 1), f"Body of story {i}.") for i in range(3)]
    feed_server.route("/feed", Route(body=rss(items, title="Daily")))
    feed_server.route("/pod", Route(body=ENCLOSED))
    added = json.loads(ok(env, "rss", "add", feed_server.url("/feed"), "--json"))
    assert added["created"] and added["fetch"] == {
        "feeds": 1,
        "fetched": 1,
        "failed": {},
        "deferred": {},
        "new_entries": 3,
    }
    text = ok(env, "rss", "add", feed_server.url("/pod"))
    assert "fetched 1 of 1 feed: 1 new entry" in text  # singular, and fetched without waiting for a tick
    pending = ok(env, "contexts", "show", f"rss:feed:{added['id']}")  # entries, no summary yet
    assert "no context rss:feed:" in pending and "yet: pending" in pending
    assert "feedeater jobs run rss.updateContexts" in pending

    listed = json.loads(ok(env, "rss", "entries", "--json"))
    assert [e["title"] for e in listed] == ["Episode one", "Story 0", "Story 1", "Story 2"] or [
        e["title"] for e in listed
    ][1:] == ["Story 0", "Story 1", "Story 2"]
    daily = json.loads(ok(env, "rss", "entries", str(added["id"]), "--json"))
    assert [e["title"] for e in daily] == ["Story 0", "Story 1", "Story 2"]  # newest first, one feed
    assert all(e["read_at"] is None and e["starred_at"] is None for e in daily)

    episode = next(e for e in listed if e["title"] == "Episode one")
    shown = ok(env, "rss", "entry", str(episode["id"]))
    assert shown.splitlines()[0] == "Episode one"
    assert "http://example.org/ep1" in shown and "Show notes with bold words." in shown
    assert "enclosure: http://example.org/ep1.mp3 (audio/mpeg, 1234 bytes)" in shown
    assert "<b>" not in shown  # plain text, not HTML

    story0 = daily[0]["id"]
    assert "marked 2 entries read and starred" in ok(
        env, "rss", "mark", str(story0), str(episode["id"]), "--read", "--star"
    )
    unread = json.loads(ok(env, "rss", "entries", "--unread", "--json"))
    assert {e["title"] for e in unread} == {"Story 1", "Story 2"}
    starred = json.loads(ok(env, "rss", "entries", "--starred", "--json"))
    assert {e["title"] for e in starred} == {"Story 0", "Episode one"}
    ok(env, "rss", "mark", str(story0), "--unread", "--unstar")
    assert {e["title"] for e in json.loads(ok(env, "rss", "entries", "--starred", "--json"))} == {
        "Episode one"
    }
    table = ok(env, "rss", "entries", str(added["id"]))
    assert "Story 0" in table and "•" in table  # unread marker

    assert_one_line_error(feedeater(env, "rss", "mark", "999999", "--read"), "no entry 999999")
    assert_one_line_error(feedeater(env, "rss", "mark", str(story0)), "nothing to mark", "--read")
    assert_one_line_error(feedeater(env, "rss", "entry", "999999"), "no entry 999999")
    assert_one_line_error(feedeater(env, "rss", "entries", "4242"), "no feed '4242'")


def test_import_counts_feeds_the_host_circuit_held_back_as_deferred_not_fetched(
    env: dict[str, str], feed_server: FeedServer, tmp_path: Path
) -> None:
    """Issue #20 item 7: "fetched 16 of 91 feeds" counted 16 feeds the per-host circuit breaker deferred,
    never requested (`last_polled_at` empty)."""
    count = 3 * FETCH_NOW_CONCURRENCY  # more than are fetched at once: the later ones meet an open circuit
    for i in range(count):
        feed_server.route(f"/down{i}", Route(status=503, body=b"down"))
    opml = tmp_path / "down.opml"
    opml.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        + "".join(
            f'<outline type="rss" text="D{i}" xmlUrl="{feed_server.url(f"/down{i}")}"/>' for i in range(count)
        )
        + "</body></opml>"
    )
    breaker = {**env, "FEEDEATER_RSS_HOST_CIRCUIT_FAILURES": "2", "FEEDEATER_RSS_PER_HOST_CONCURRENCY": "1"}
    res = feedeater(breaker, "rss", "import", str(opml), "--json")
    assert res.returncode == 0, res.stderr
    fetch = json.loads(res.stdout)["fetch"]
    assert fetch["fetched"] == 0 and len(fetch["failed"]) + len(fetch["deferred"]) == count, fetch
    assert len(fetch["deferred"]) >= FETCH_NOW_CONCURRENCY, fetch
    assert set(fetch["deferred"].values()) == {
        "deferred: the host's circuit breaker is open (the host failed repeatedly)"
    }
    polled = {str(f["id"]): f["last_polled_at"] for f in json.loads(ok(env, "rss", "list", "--json"))}
    assert all(polled[fid] is None for fid in fetch["deferred"]) and all(
        polled[fid] for fid in fetch["failed"]
    )


def test_fetch_summary_in_words() -> None:
    from collections import Counter

    from modules.rss.cli import _fetch_text
    from modules.rss.service.feeds import fetch_summary

    results: dict[int, Counter[str] | BaseException] = {
        1: Counter({"status_200": 1, "new": 3}),
        2: Counter({"status_503": 1}),
        3: Counter({"status_circuit_open": 1}),
        4: Counter({"status_circuit_open": 1}),
    }
    summary = fetch_summary([1, 2, 3, 4, 5], results, {2: "HTTP 503"})
    assert (summary["fetched"], summary["new_entries"], list(summary["deferred"])) == (1, 3, ["3", "4", "5"])
    assert _fetch_text(summary).splitlines() == [
        "fetched 1 of 5 feeds: 3 new entries",
        "  feed 2 failed: HTTP 503",
        "  2 feeds deferred: the host's circuit breaker is open (the host failed repeatedly): 3, 4"
        " (the poll job fetches them later)",
        "  1 feed deferred: another poll is fetching it: 5 (the poll job fetches them later)",
    ]


def test_import_fetches_the_new_feeds_and_reports_failures_in_words(
    env: dict[str, str], feed_server: FeedServer, tmp_path: Path
) -> None:
    feed_server.route("/a", Route(body=rss([("a1", "Alpha", ago(hours=1), "x")])))
    feed_server.route("/broken", Route(status=500, body=b"oops"))
    opml = tmp_path / "subs.opml"
    opml.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        f'<outline type="rss" text="A" xmlUrl="{feed_server.url("/a")}"/>'
        f'<outline type="rss" text="Broken" xmlUrl="{feed_server.url("/broken")}"/>'
        "</body></opml>"
    )
    res = feedeater(env, "rss", "import", str(opml))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("imported 2 feeds (0 already present)\nfetched 1 of 2 feeds: 1 new entry")
    assert "failed: HTTP 500" in res.stdout
    assert res.stderr == ""  # no progress bar when stderr is not a terminal
    again = feedeater(env, "rss", "import", str(opml))
    assert again.stdout.strip() == "imported 0 feeds (2 already present)"

    feeds = {f["title"] or f["url"]: f for f in json.loads(ok(env, "rss", "list", "--json"))}
    broken = next(f for f in feeds.values() if f["url"].endswith("/broken"))
    assert broken["state"] == "failing ×1" and broken["last_error"].startswith("HTTP 500")
    listing = ok(env, "rss", "list")
    assert "failing ×1" in listing and "ok" in listing

    one = tmp_path / "one.opml"
    one.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        f'<outline type="rss" text="B" xmlUrl="{feed_server.url("/b")}"/></body></opml>'
    )
    assert ok(env, "rss", "import", str(one), "--no-fetch").strip() == "imported 1 feed (0 already present)"

    assert_one_line_error(feedeater(env, "rss", "import", str(tmp_path)), "is a directory", "OPML file")
    assert_one_line_error(
        feedeater(env, "rss", "export", str(tmp_path / "missing" / "out.opml")), "does not exist"
    )
    ids = [str(f["id"]) for f in feeds.values()]
    assert ok(env, "rss", "remove", *ids).startswith("removed 2 feeds: ")
    (left,) = json.loads(ok(env, "rss", "list", "--json"))
    assert_one_line_error(feedeater(env, "rss", "remove", str(left["id"]), "77777"), "no feed '77777'")
    assert len(json.loads(ok(env, "rss", "list", "--json"))) == 1  # all or nothing


def test_messages_name_the_fix(
    env: dict[str, str], feed_server: FeedServer, tmp_path: Path, database_url: str, nats_url: str
) -> None:
    strict = feedeater_env(tmp_path / "strict", database_url, nats_url)
    del strict["FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS"]
    feed_server.route("/feed", Route(body=rss([("a", "A", ago(hours=1), "x")])))
    assert_one_line_error(
        feedeater(strict, "rss", "add", feed_server.url("/feed")),
        "127.0.0.1 is not allowed",
        "feedeater settings set rss.allow_private_networks true",
    )
    page = b'<html><head><link rel="alternate" type="application/rss+xml" href="/rss"></head></html>'
    feed_server.route("/blog", Route(body=page, headers={"Content-Type": "text/html"}))
    feed_server.route("/rss", Route(status=503, body=b"busy"))
    assert_one_line_error(
        feedeater(env, "rss", "add", feed_server.url("/blog")),
        f"advertises the feed {feed_server.url('/rss')}, but fetching it failed: HTTP 503",
    )


def test_output_to_a_closed_pipe_ends_quietly(env: dict[str, str], feed_server: FeedServer) -> None:
    feed_server.route("/feed", Route(body=rss([("a", "A", ago(hours=1), "x")])))
    ok(env, "rss", "add", feed_server.url("/feed"), "--no-fetch")
    for args in (["rss", "list"], ["rss", "export"], ["rss", "entries"]):
        proc = subprocess.Popen(
            [*FEEDEATER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        proc.stdout.close()  # like `| head` that has already exited
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)
        assert proc.returncode in (0, 141), (args, proc.returncode, err)


def test_show_is_formatted_and_wide_titles_align(env: dict[str, str], feed_server: FeedServer) -> None:
    feed_server.route("/pod", Route(body=ENCLOSED))
    feed_server.route("/long", Route(body=rss([("a", "A", ago(hours=1), "x")], title="L" * 80)))
    pod = json.loads(ok(env, "rss", "add", feed_server.url("/pod"), "--json"))
    ok(env, "rss", "add", feed_server.url("/long"))
    shown = ok(env, "rss", "show", str(pod["id"]))
    lines = shown.splitlines()
    assert lines[0] == f"feed:         {pod['id']}: Podcast 日本"
    assert any(line.startswith("next poll:") and "Z (in " in line for line in lines)
    assert "Episode one" in shown
    feed_server.route("/later", Route(body=rss([("b", "B", ago(hours=1), "y")], title="Later")))
    later = json.loads(ok(env, "rss", "add", feed_server.url("/later"), "--no-fetch", "--json"))
    unpolled = ok(env, "rss", "show", str(later["id"])).splitlines()
    assert "polled:       never" in unpolled and "last success: never" in unpolled, unpolled
    ok(env, "rss", "remove", str(later["id"]))
    terminal = {**env, "COLUMNS": "100"}  # a terminal's width (a pipe has none: nothing is cut there)
    listing = ok(terminal, "rss", "list").splitlines()
    assert "…" in listing[2] and "L" * 80 not in listing[2]  # a long title is cut, not wrapped
    from host.textfmt import width

    url_columns = {width(line[: line.index("http://")]) for line in listing[1:]}
    assert len(url_columns) == 1, listing  # the wide title does not push its row's URL out of line
    assert all(line.rstrip().endswith(("/pod", "/long")) for line in listing[1:]), listing  # URLs whole


def test_piped_listings_are_never_cut(env: dict[str, str], feed_server: FeedServer) -> None:
    """Issue #20 item 5: off a terminal every cell is whole, so `rss list | grep URL` finds the URL."""
    path = "/a-rather-long-path/to/a/feed/that/would/not/fit/in/eighty/columns/at/all/nope.xml"
    feed_server.route(path, Route(body=rss([("a", "A", ago(hours=1), "x")], title="T" * 90)))
    ok(env, "rss", "add", feed_server.url(path), "--no-fetch")
    listing = ok(env, "rss", "list")
    assert feed_server.url(path) in listing and "T" * 90 in listing and "…" not in listing, listing


def test_import_shows_a_progress_bar_on_a_terminal(
    env: dict[str, str], feed_server: FeedServer, tmp_path: Path
) -> None:
    import os
    import pty

    for i in range(3):
        feed_server.route(f"/f{i}", Route(body=rss([(f"g{i}", f"T{i}", ago(hours=1), "x")])))
    opml = tmp_path / "three.opml"
    opml.write_text(
        '<?xml version="1.0"?><opml version="2.0"><body>'
        + "".join(f'<outline type="rss" text="F{i}" xmlUrl="{feed_server.url(f"/f{i}")}"/>' for i in range(3))
        + "</body></opml>"
    )
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*FEEDEATER, "rss", "import", str(opml)], env=env, stdin=slave, stdout=slave, stderr=slave
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    shown = b"".join(chunks).decode(errors="replace")
    assert "fetching new feeds" in shown and "3/3" in shown  # rich's bar, drawn on the terminal
    assert "imported 3 feeds (0 already present)" in shown


def test_reading_on_the_second_day(env: dict[str, str], feed_server: FeedServer) -> None:
    """Issue #20's smaller items: the CLI could not page past a page of entries or mark a whole feed read;
    `--read --unread` was accepted; a message id was refused; `rss set` echoed `interval=1800`, `None`,
    `True`; an unknown folder listed nothing, silently."""
    items = [(f"g{i}", f"Story {i}", ago(hours=i + 1), f"Body {i}.") for i in range(5)]
    feed_server.route("/feed", Route(body=rss(items, title="Daily")))
    feed = json.loads(ok(env, "rss", "add", feed_server.url("/feed"), "--json"))["id"]

    seen: list[int] = []
    page = json.loads(ok(env, "rss", "entries", "--limit", "2", "--json"))
    while page:
        seen += [e["id"] for e in page]
        page = json.loads(ok(env, "rss", "entries", "--limit", "2", "--before", str(seen[-1]), "--json"))
    assert len(seen) == len(set(seen)) == 5
    assert f"older ones: the same command with --before {seen[1]}" in ok(
        env, "rss", "entries", "--limit", "2"
    )

    assert ok(env, "rss", "mark", "--feed", str(feed), "--read") == "marked 5 entries read\n"
    assert json.loads(ok(env, "rss", "entries", "--unread", "--json")) == []
    assert_one_line_error(feedeater(env, "rss", "mark", str(seen[0]), "--read", "--unread"), "contradict")
    assert_one_line_error(feedeater(env, "rss", "mark", "--read"), "a whole feed with --feed")

    entry = json.loads(ok(env, "rss", "entry", str(seen[0]), "--json"))
    by_message = json.loads(ok(env, "rss", "entry", entry["message_id"], "--json"))
    assert by_message["id"] == seen[0]
    assert_one_line_error(feedeater(env, "rss", "entry", "first"), "neither an entry id nor a message id")

    changed = ok(env, "rss", "set", str(feed), "interval=30", "enabled=true", "folder=", "retention=default")
    assert changed == (
        f"feed {feed}: polled every 30 min, enabled, in no folder, retention the default (rss.retention_days)\n"
    )
    assert_one_line_error(feedeater(env, "rss", "list", "--folder", "Nope"), "no folder 'Nope'")
