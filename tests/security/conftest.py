"""The feed_server fixture, as for the RSS tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.feedserver import FeedServer


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A started FeedServer on 127.0.0.1 (fresh routes and request log per test)."""
    with FeedServer() as server:
        yield server
