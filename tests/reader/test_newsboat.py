"""newsboat (the Debian package, which no one here wrote) reading from feedeater through both reader
APIs: `urls-source "miniflux"` and `urls-source "feedhq"` (Google Reader). Non-interactive runs
(`-x reload print-unread`) check what it reads; an interactive session in tmux opens an article (marks
it read) and flags one starred (feedhq), and the change must show in `feedeater rss entries`.

newsboat 2.21 (Debian 12) has no starring over Miniflux (`miniflux-flag-star` came later), so starring
is driven through its feedhq source. Skips, with the reason, where newsboat or tmux is not installed
(`.ci/run` installs both with apt-get when it runs as root).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.api.conftest import Api
from tests.feedserver import FeedServer
from tests.reader.conftest import Cli, Feed, add_feed, starred_in_cli, unread_in_cli
from tests.services import until

NEWSBOAT, TMUX = shutil.which("newsboat"), shutil.which("tmux")
pytestmark = pytest.mark.skipif(
    NEWSBOAT is None,
    reason="newsboat is not installed (Debian: apt-get install newsboat; .ci/run does it as root)",
)
needs_tmux = pytest.mark.skipif(
    TMUX is None,
    reason="tmux is not installed (Debian: apt-get install tmux): it drives newsboat's interactive UI",
)


def config(home: Path, api: Api, source: str, login: tuple[str, str]) -> Path:
    """newsboat's config for a source, with the base URL as its docs write it (a trailing slash)."""
    lines = {
        "miniflux": [
            f'miniflux-url "{api.base}/"',
            f'miniflux-login "{login[0]}"',
            f'miniflux-password "{login[1]}"',
        ],
        "feedhq": [
            f'feedhq-url "{api.base}/"',
            f'feedhq-login "{login[0]}"',
            f'feedhq-password "{login[1]}"',
            'feedhq-flag-star "s"',
            'feedhq-show-special-feeds "no"',
        ],
    }[source]
    (home / "urls").touch()
    path = home / f"{source}.config"
    path.write_text("\n".join([f'urls-source "{source}"', *lines, ""]))
    return path


def newsboat_args(home: Path, config_file: Path) -> list[str]:
    assert NEWSBOAT is not None
    return [NEWSBOAT, "-C", str(config_file), "-u", str(home / "urls"), "-c", str(home / "cache.db")]


def environment(home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
        "XDG_DATA_HOME": str(home),
        "TERM": "xterm",
    }


async def print_unread(home: Path, config_file: Path) -> int:
    """`newsboat -x reload print-unread`: how many unread articles it found."""
    proc = await asyncio.create_subprocess_exec(
        *newsboat_args(home, config_file),
        "-x",
        "reload",
        "print-unread",
        env=environment(home),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=120)
    text = out.decode(errors="replace")
    found = re.search(r"(\d+) unread articles?", text)
    assert proc.returncode == 0 and found, text
    return int(found[1])


class Screen:
    """newsboat in a detached tmux session on its own socket: keys in, screen text out."""

    def __init__(self, home: Path) -> None:
        assert TMUX is not None
        self.home, self.socket = home, f"feedeater-{uuid.uuid4().hex[:8]}"

    async def tmux(self, *args: str, check: bool = True) -> str:
        assert TMUX is not None
        proc = await asyncio.create_subprocess_exec(
            TMUX,
            "-L",
            self.socket,
            "-f",
            "/dev/null",
            *args,
            env=environment(self.home),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
        assert proc.returncode == 0 or not check, out.decode(errors="replace")
        return out.decode(errors="replace")

    async def start(self, command: list[str]) -> None:
        await self.tmux("new-session", "-d", "-s", "nb", "-x", "160", "-y", "40", " ".join(command))

    async def text(self) -> str:
        return await self.tmux("capture-pane", "-p", "-t", "nb")

    async def keys(self, *keys: str) -> None:
        await self.tmux("send-keys", "-t", "nb", *keys)

    async def shows(self, pattern: str) -> re.Match[str]:
        async def found() -> re.Match[str] | None:
            return re.search(pattern, await self.text())

        await until(found, timeout=60, what=f"newsboat shows {pattern!r}")
        match = await found()
        assert match is not None
        return match

    async def stop(self) -> None:
        """End this session's tmux server (gone already when newsboat quit and closed the session)."""
        await self.tmux("kill-server", check=False)


@pytest.fixture
async def screen(tmp_path: Path) -> AsyncIterator[Screen]:
    s = Screen(tmp_path)
    yield s
    await s.stop()


async def unread_total(api: Api) -> int:
    count: int = await api.host.require_pool().fetchval(
        "SELECT count(*) FROM mod_rss.entries e LEFT JOIN mod_rss.entry_state s ON s.entry_id = e.id WHERE s.read_at IS NULL"
    )
    return count


async def feed_of(api: Api, entry_id: int) -> Feed:
    """The feed of an entry newsboat showed (its first feed: which one depends on what else is subscribed)."""
    feed_id: int = await api.host.require_pool().fetchval(
        "SELECT feed_id FROM mod_rss.entries WHERE id = $1", entry_id
    )
    return Feed(feed_id, "", [])


async def entry_titled(api: Api, title: str) -> int:
    found: int = await api.host.require_pool().fetchval(
        "SELECT id FROM mod_rss.entries WHERE title = $1", title
    )
    return found


@needs_tmux
async def test_newsboat_reads_and_marks_read_over_miniflux(
    api: Api, feeds: FeedServer, login: tuple[str, str], cli: Cli, tmp_path: Path, screen: Screen
) -> None:
    await add_feed(api, feeds, "boat", 3)
    conf = config(tmp_path, api, "miniflux", login)
    assert await print_unread(tmp_path, conf) == await unread_total(api)

    await screen.start(newsboat_args(tmp_path, conf))
    await screen.shows(r"Your feeds")
    await screen.keys("Enter")  # the first feed
    await screen.shows(r"Articles in feed")
    await screen.keys("Enter")  # its first article
    title = (await screen.shows(r"Article '([^']+)'"))[1]
    await screen.keys("q")  # leaving the article sends the mark (PUT /v1/entries)
    opened = await entry_titled(api, title)

    async def marked() -> bool:
        state = await api.host.require_pool().fetchval(
            "SELECT read_at IS NOT NULL FROM mod_rss.entry_state WHERE entry_id = $1", opened
        )
        return bool(state)

    await until(marked, timeout=60, what=f"entry {opened} read through newsboat")
    assert opened not in await unread_in_cli(cli, await feed_of(api, opened))
    await screen.keys("q", "q")


@needs_tmux
async def test_newsboat_stars_and_marks_read_over_google_reader(
    api: Api, feeds: FeedServer, login: tuple[str, str], cli: Cli, tmp_path: Path, screen: Screen
) -> None:
    await add_feed(api, feeds, "hq", 3, folder="Boats")
    conf = config(tmp_path, api, "feedhq", login)
    assert await print_unread(tmp_path, conf) == await unread_total(api)

    await screen.start(newsboat_args(tmp_path, conf))
    await screen.shows(r"Your feeds")
    await screen.keys("Enter")
    await screen.shows(r"Articles in feed")
    await screen.keys("C-e")  # edit the flags of the article under the cursor
    await screen.shows(r"Flags:")
    await screen.keys("s", "Enter")  # feedhq-flag-star: edit-tag a=…/starred
    await screen.keys("Enter")  # open it
    title = (await screen.shows(r"Article '([^']+)'"))[1]
    await screen.keys("q")  # edit-tag a=…/read
    opened = await entry_titled(api, title)

    async def starred_and_read() -> bool:
        row = await api.host.require_pool().fetchrow(
            "SELECT read_at, starred_at FROM mod_rss.entry_state WHERE entry_id = $1", opened
        )
        return row is not None and row["read_at"] is not None and row["starred_at"] is not None

    await until(starred_and_read, timeout=60, what=f"entry {opened} starred and read through newsboat")
    shown = await feed_of(api, opened)
    assert opened in await starred_in_cli(cli, shown) and opened not in await unread_in_cli(cli, shown)
    await screen.keys("q", "q")
