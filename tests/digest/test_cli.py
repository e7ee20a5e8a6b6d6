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


def test_second_digest_of_a_type_builds_and_shows_as_json_object(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    """Issue #20 item 1: the second build read the first one's `structured` back as a string and crashed
    (`'str' object has no attribute 'get'`); `show --format json` printed a JSON-encoded string."""
    env = feedeater_env(tmp_path, database_url, nats_url)
    for _ in range(2):
        built = feedeater(env, "digest", "build", "--type", "morning", "--format", "json")
        assert built.returncode == 0, built.stderr
        assert json.loads(built.stdout)["title"] == "Morning Brief"
    listed = json.loads(feedeater(env, "digest", "list", "--json").stdout)
    assert len(listed) == 2
    shown = feedeater(env, "digest", "show", str(listed[0]["id"]), "--format", "json")
    assert shown.returncode == 0, shown.stderr
    structured = json.loads(shown.stdout)
    assert isinstance(structured, dict) and structured["title"] == "Morning Brief"


async def test_digests_stored_as_strings_are_repaired_by_migration(
    tmp_path: Path, database_url: str, nats_url: str
) -> None:
    """Digests built before the fix hold a JSON string: migration digest/0008 turns them into objects."""
    import asyncio
    import uuid

    import asyncpg

    env = feedeater_env(tmp_path, database_url, nats_url)
    assert feedeater(env, "migrate").returncode == 0
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            """INSERT INTO mod_digest.digests (id, type, window_start, window_end, scheduled, article_count,
                   duplicates_removed, markdown, structured)
               VALUES ($1, 'morning', now() - interval '1 day', now(), true, 0, 0, '# Morning Brief',
                       to_jsonb('{"title": "Morning Brief", "items": []}'::text))""",
            uuid.uuid4(),
        )
        await conn.execute("DELETE FROM public.feedeater_migrations WHERE scope = 'digest' AND version = 8")
    finally:
        await conn.close()
    built = await asyncio.to_thread(feedeater, env, "jobs", "run", "digest.scheduled")
    assert built.returncode == 0, built.stdout + built.stderr
    conn = await asyncpg.connect(database_url)
    try:
        kinds = await conn.fetch("SELECT DISTINCT jsonb_typeof(structured) AS t FROM mod_digest.digests")
    finally:
        await conn.close()
    assert [r["t"] for r in kinds] == ["object"]
