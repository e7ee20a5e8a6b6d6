"""The feed server moved into the test kit (host/testing/feedserver.py); this name stays for the tests."""

from host.testing.feedserver import BackgroundHTTPServer, FeedServer, Item, Route, ago, rss, self_signed_tls

__all__ = ["BackgroundHTTPServer", "FeedServer", "Item", "Route", "ago", "rss", "self_signed_tls"]
