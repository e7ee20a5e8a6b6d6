"""Fixtures shared by the RSS module's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from host.runtime import Host
from modules.rss.model import Intents
from modules.rss.public import register_processor
from tests.fakeai import FakeAI
from tests.services import make_host, reset_stream


def drop_sponsored(intents: Intents) -> Intents:
    """A filter as a user would write one: sponsored posts never enter storage or the bus."""
    intents.new = [n for n in intents.new if "sponsored" not in n.entry.title.lower()]
    return intents


@pytest.fixture
def sponsored_filter() -> Iterator[None]:
    """`drop_sponsored` registered through rss's public API for one test."""
    remove = register_processor(drop_sponsored)
    yield
    remove()


@pytest.fixture
def fake_ai() -> Iterator[FakeAI]:
    """The OpenAI-compatible stand-in (embeddings, chat), fresh per test."""
    with FakeAI() as server:
        yield server


@pytest.fixture
async def rss_host(tmp_path: Path, database_url: str, nats_url: str) -> AsyncIterator[Callable[..., Any]]:
    """Factory: a started Host with extra settings in env (FEEDEATER_RSS_*)."""
    await reset_stream(nats_url)
    hosts: list[Host] = []

    async def factory(host_id: str = "h1", **settings: str) -> Host:
        env = {f"FEEDEATER_RSS_{k.upper()}": v for k, v in settings.items()}
        h = make_host(tmp_path / host_id, database_url, nats_url, host_id=host_id, env=env)
        await h.open()
        hosts.append(h)
        return h

    yield factory
    for h in hosts:
        await h.close()
