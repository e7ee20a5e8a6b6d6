"""`feedeater digest ...` as a user runs it: bad input is one line and exit 2; sources, build, list, show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.services import feedeater, feedeater_env


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("digest", "build", "--type", "hourly"), "unknown digest type 'hourly'"),
        (("digest", "build", "--window", "yesterday"), "cannot read window 'yesterday'"),
        (("digest", "build", "--window", "90d"), "window '90d' is out of range"),
        (("digest", "build", "--topics", "many"), "--topics 'many' is not a number of topics"),
        (("digest", "sources", "set", "example.com", "T9"), "unknown tier 'T9'"),
        (("digest", "sources", "set", "localhost", "T2"), "cannot read a domain from 'localhost'"),
        (("digest", "show", "ffffffff"), "no digest matches 'ffffffff'"),
        (("digest", "like", "first"), "'first' is not an article id"),
        (("digest", "like", "424242"), "no article 424242"),
        (("digest", "unlike", "424242"), "article 424242 is not liked"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, database_url: str, nats_url: str, args: tuple[str, ...], message: str
) -> None:
    done = feedeater(feedeater_env(tmp_path, database_url, nats_url), *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_sources_build_list_show(tmp_path: Path, database_url: str, nats_url: str) -> None:
    env = feedeater_env(tmp_path, database_url, nats_url)
    assert (
        feedeater(env, "digest", "sources", "set", "https://www.Reuters.com/world", "T1").stdout
        == "reuters.com: T1\n"
    )
    tiers = tmp_path / "tiers.txt"
    tiers.write_text("# tier list\nbbc.co.uk T2\nexample.blog, t5\n")
    assert "imported 2 sources" in feedeater(env, "digest", "sources", "import", str(tiers)).stdout
    listed = json.loads(feedeater(env, "digest", "sources", "list", "--json").stdout)
    assert [(r["domain"], r["tier"]) for r in listed] == [
        ("reuters.com", 1),
        ("bbc.co.uk", 2),
        ("example.blog", 5),
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("bbc.co.uk T2\nnonsense\n")
    done = feedeater(env, "digest", "sources", "import", str(bad))
    assert done.returncode == 2 and "line 2: 'nonsense' is not `domain tier`" in done.stderr

    built = feedeater(env, "digest", "build", "--type", "evening", "--window", "12h", "--format", "json")
    assert built.returncode == 0, built.stderr
    assert json.loads(built.stdout)["title"] == "Evening Recap"
    listed = json.loads(feedeater(env, "digest", "list", "--json").stdout)
    assert len(listed) == 1 and listed[0]["type"] == "evening"
    shown = feedeater(env, "digest", "show", str(listed[0]["id"])[:8])
    assert shown.stdout.startswith("# Evening Recap") and "0 articles" in shown.stdout


def test_tiers_from_rss_folders_named_t1_to_t5() -> None:
    from modules.digest.cli import tiers_from_folders

    feeds = [
        {"folder": "News/T1", "url": "https://feeds.reuters.com/x", "site_url": "https://www.reuters.com/"},
        {"folder": "t4", "url": "https://blog.example/feed", "site_url": None},
        {"folder": "Tech", "url": "https://tech.example/feed", "site_url": None},
        {"folder": "News/T9", "url": "https://odd.example/feed", "site_url": None},
    ]
    assert tiers_from_folders(feeds) == [("reuters.com", 1), ("blog.example", 4)]
