"""Fixtures shared by the RSS module's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakeai import FakeAI
from tests.feedserver import FeedServer


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A started FeedServer on 127.0.0.1 (fresh routes and request log per test)."""
    with FeedServer() as server:
        yield server


@pytest.fixture
def fake_ai() -> Iterator[FakeAI]:
    """The OpenAI-compatible stand-in (embeddings, chat), fresh per test."""
    with FakeAI() as server:
        yield server
