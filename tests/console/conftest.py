"""The console under test: one running host (in process, real PostgreSQL, NATS and HTTP) per test
module, a local feed server, and one headless Chromium per session driven by Playwright.

Browser tests skip (with the reason) only where neither Playwright nor Debian's chromium is present;
`.ci/run` installs chromium when it runs as root.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from host.config import HostConfig
from host.runtime import Host
from host.services import EmbeddedPostgres, free_port
from tests.feedserver import FeedServer
from tests.services import fresh_database, reset_stream, until

CHROMIUM = os.environ.get("FEEDEATER_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@dataclass
class Console:
    url: str
    host: Host
    pool: asyncpg.Pool
    feeds: FeedServer


@pytest.fixture(scope="module")
async def console(
    pg_server: EmbeddedPostgres, nats_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Console]:
    """A running host whose console listens on a free loopback port (no password set)."""
    await reset_stream(nats_url)
    async with fresh_database(pg_server) as database_url:
        port = free_port()
        config = HostConfig(
            home=tmp_path_factory.mktemp("console-home"),
            database_url=database_url,
            nats_url=nats_url,
            http_host="127.0.0.1",
            http_port=port,
            host_id="console-test",
        )
        host = Host(config, env={"FEEDEATER_RSS_ALLOW_PRIVATE_NETWORKS": "true"})
        await host.open()
        stop = asyncio.Event()
        task = asyncio.create_task(host.run(stop))
        with FeedServer() as feeds:
            console = Console(f"http://127.0.0.1:{port}", host, host.require_pool(), feeds)
            await until(lambda: _up(console.url), what="the console answering")
            try:
                yield console
            finally:
                stop.set()
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(task, 120)
                await host.close()


async def _up(url: str) -> bool:
    import httpx

    try:
        async with httpx.AsyncClient(timeout=2) as client:
            return (await client.get(url + "/login")).status_code == 200
    except httpx.TransportError:
        return False


def _browser_missing() -> str | None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright)"
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run does it as root)"
    return None


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Any]:
    """One headless Chromium for the whole session (starting one costs about a second)."""
    missing = _browser_missing()
    if missing:
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    pw = await async_playwright().start()
    chromium = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    try:
        yield chromium
    finally:
        await chromium.close()
        await pw.stop()


@dataclass
class Watched:
    """What a page did that it must not: dialogs (alert/confirm/prompt) and console lines with a marker."""

    dialogs: list[str] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)


@pytest.fixture
async def page(browser: Any, console: Console) -> AsyncIterator[Any]:
    """A fresh browser context (own cookies) and page on the console, watched for dialogs and errors."""
    context = await browser.new_context(base_url=console.url, viewport={"width": 1280, "height": 860})
    context.set_default_timeout(60_000)  # generous: a busy machine renders slowly
    p = await context.new_page()
    watched = Watched()

    async def on_dialog(dialog: Any) -> None:
        watched.dialogs.append(dialog.message)
        await dialog.dismiss()

    p.on("dialog", on_dialog)
    p.on("console", lambda msg: watched.console.append(msg.text))
    p.on("pageerror", lambda exc: watched.page_errors.append(str(exc)))
    p.watched = watched
    try:
        yield p
    finally:
        await context.close()


def screenshot_path(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"
