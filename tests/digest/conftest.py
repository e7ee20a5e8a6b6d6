"""Fixtures of the digest module's tests: the rss tests' feed server (a real HTTP server on loopback)."""

from tests.rss.conftest import feed_server

__all__ = ["feed_server"]
