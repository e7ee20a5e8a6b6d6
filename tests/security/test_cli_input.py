"""Hostile or mistaken CLI input and settings: one clear error line (exit 2), nothing stored.

Extends tests/host/test_cli.py and tests/rss/test_subscriptions.py (out-of-range `settings set`, unknown
keys, file:// URLs, missing or non-OPML files) with bad URL forms, entity-laden OPML, bad types and
out-of-range values given through the environment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.host.test_cli import assert_one_line_error
from tests.services import feedeater, feedeater_env


@pytest.fixture
def env(tmp_path: Path, database_url: str, nats_url: str) -> dict[str, str]:
    return feedeater_env(tmp_path, database_url, nats_url)


def test_bad_input_is_one_clear_error_and_stores_nothing(env: dict[str, str], tmp_path: Path) -> None:
    xxe = tmp_path / "xxe.opml"
    xxe.write_text(
        '<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        '<opml version="2.0"><body><outline type="rss" text="&x;" xmlUrl="http://a.example/&x;"/></body></opml>'
    )
    cases: list[tuple[list[str], str]] = [
        (["rss", "add", "http://"], "http://"),
        (["rss", "add", "javascript:alert(1)"], "javascript"),
        (["rss", "add", "http://example.com:99999/feed"], "99999"),
        (["rss", "add", "http://example.org/feed", "--interval", "0"], "interval"),
        (["rss", "import", str(xxe)], "xxe.opml"),
        (["settings", "set", "rss.timeout_seconds", "0"], "minimum"),
        (["settings", "set", "rss.poll_batch", "lots"], "rss.poll_batch"),
        (["settings", "set", "rss.allow_private_networks", "maybe"], "rss.allow_private_networks"),
    ]
    for args, needle in cases:
        assert_one_line_error(feedeater(env, *args), needle)
    listed = feedeater(env, "rss", "list", "--json")
    assert listed.returncode == 0 and listed.stdout.strip() == "[]"
    stored = feedeater(env, "settings", "get", "rss.timeout_seconds", "--json")
    assert '"value": 30.0' in stored.stdout


def test_out_of_range_environment_setting_stops_run_with_one_line(env: dict[str, str]) -> None:
    assert_one_line_error(feedeater({**env, "FEEDEATER_RSS_LEASE_SECONDS": "3"}, "run"), "rss.lease_seconds")
