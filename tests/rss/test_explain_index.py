"""explain's parsed-fetch cache answers for the document it was given, never for another database's fetch
with the same id (one process may serve several databases: seen when the API tests and the rss tests
shared a pytest worker, and `listed` came out False for an item that was in the feed)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from modules.rss import explain


def fetch(fetch_id: int, guids: list[str]) -> dict[str, Any]:
    items = "".join(f"<item><guid>{g}</guid><title>{g}</title></item>" for g in guids)
    body = (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}</channel></rss>'.encode()
    )
    return {
        "id": fetch_id,
        "fetched_at": datetime(2026, 1, 1, tzinfo=UTC),
        "url": "http://127.0.0.1/feed.xml",
        "headers": {"content-type": "application/rss+xml"},
        "parse_error": None,
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body": body,
    }


def test_the_same_fetch_id_with_another_body_is_parsed_again() -> None:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    first = explain._document(fetch(1, ["a", "b"]), "b", None, now, 5000)
    other_database = explain._document(fetch(1, ["c"]), "c", None, now, 5000)
    assert first.listed and other_database.listed
    assert not explain._document(fetch(1, ["c"]), "b", None, now, 5000).listed
