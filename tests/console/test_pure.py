"""The console's decisions without a browser: access, CSRF tokens, settings forms, subject filters,
the folder tree, snippet highlighting, revision changes and the charts."""

from __future__ import annotations

import pytest

from host.console import auth, forms, live, svg
from host.console.overview import per_minute
from host.module import Manifest, Setting
from modules.rss.console.pages import highlight, revision_changes, schedule_text, tree

MANIFEST = Manifest(
    name="demo",
    version="1",
    description="d",
    settings=(
        Setting("batch", "int", 10, "feeds per batch", min=1, max=100),
        Setting("ratio", "float", 0.5, "a ratio", min=0, max=1),
        Setting("loud", "bool", False, "say more"),
        Setting("mode", "choice", "a", "which", choices=("a", "b")),
        Setting("token", "str", "", "API token", secret=True),
    ),
)


@pytest.mark.parametrize(
    ("password_set", "loopback", "logged_in", "expected"),
    [
        (True, True, False, "login"),
        (True, False, False, "login"),
        (True, False, True, "write"),
        (False, True, False, "write"),
        (False, False, False, "read"),  # a network console without a password is read-only
    ],
)
def test_access(password_set: bool, loopback: bool, logged_in: bool, expected: str) -> None:
    assert auth.access(password_set=password_set, loopback=loopback, logged_in=logged_in) == expected


def test_csrf_token_is_bound_to_the_session_and_the_key() -> None:
    token = auth.csrf_token("key", "session-a")
    assert auth.csrf_ok("key", "session-a", token)
    assert not auth.csrf_ok("key", "session-b", token)
    assert not auth.csrf_ok("other key", "session-a", token)
    assert not auth.csrf_ok("key", "session-a", "")


def test_password_verify() -> None:
    from argon2 import PasswordHasher

    hashed = PasswordHasher().hash("correct horse")
    assert auth.verify(hashed, "correct horse")
    assert not auth.verify(hashed, "wrong horse")
    assert not auth.verify("not a hash", "correct horse")


def test_settings_form_fields_and_validation() -> None:
    current = {"batch": 10, "ratio": 0.5, "loud": False, "mode": "a", "token": "s3cret"}
    fields = {f.setting.key: f for f in forms.fields(MANIFEST, current, {"FEEDEATER_DEMO_MODE": "b"})}
    assert [fields[k].widget for k in ("batch", "loud", "mode", "token")] == [
        "number",
        "checkbox",
        "select",
        "password",
    ]
    assert fields["token"].value == ""  # secrets are never shown
    assert fields["mode"].env == "FEEDEATER_DEMO_MODE"
    raw = forms.read(MANIFEST, {"batch": "500", "ratio": "0.25", "mode": "a", "token": ""})
    assert raw["loud"] == "false"  # an unchecked box sends nothing
    changes, errors = forms.validate(MANIFEST, current, {"FEEDEATER_DEMO_MODE": "b"}, raw)
    assert errors == {"batch": "500 is above the maximum 100"}
    assert changes == {"ratio": "0.25"}  # unchanged values, env-set keys and an empty secret are not stored
    changes, errors = forms.validate(MANIFEST, current, {}, {"token": "new", "loud": "true", "batch": "x"})
    assert changes == {"token": "new", "loud": "true"} and "not an integer" in errors["batch"]


ENDPOINTS = Manifest(
    name="ai",
    version="1",
    description="d",
    settings=(
        Setting("base_url", "str", "https://api.example/v1", "API base", receives="api_key"),
        Setting("api_key", "str", "", "API key", secret=True),
        Setting("model", "str", "m", "model"),
    ),
)


def test_an_address_that_receives_a_secret_changes_only_with_the_secret() -> None:
    """Whoever may change settings must not redirect the stored key to a server of theirs."""
    keyed = {"base_url": "https://api.example/v1", "api_key": "sk-stored", "model": "m"}
    moved = {"base_url": "https://evil.example/v1", "api_key": "", "model": "m2"}
    changes, errors = forms.validate(ENDPOINTS, keyed, {}, moved)
    assert changes == {"model": "m2"} and "enter api_key again" in errors["base_url"]
    changes, errors = forms.validate(ENDPOINTS, keyed, {}, {**moved, "api_key": "sk-typed-again"})
    assert changes == {"base_url": "https://evil.example/v1", "api_key": "sk-typed-again", "model": "m2"}
    assert errors == {}
    # No key stored: nothing to redirect.
    changes, errors = forms.validate(ENDPOINTS, {**keyed, "api_key": ""}, {}, moved)
    assert changes == {"base_url": "https://evil.example/v1", "model": "m2"} and errors == {}
    # The key from the environment: its address only from there too (a stored one would redirect it).
    env = {"FEEDEATER_AI_API_KEY": "sk-env"}
    changes, errors = forms.validate(ENDPOINTS, keyed, env, {**moved, "api_key": "sk-typed"})
    assert "base_url" not in changes and "FEEDEATER_AI_BASE_URL" in errors["base_url"]


def test_subject_filter() -> None:
    assert live.subject_filter(None) == "feedeater.>"
    assert live.subject_filter("feedeater.rss.*") == "feedeater.rss.*"
    assert live.subject_filter("feedeater.*.messageCreated") == "feedeater.*.messageCreated"
    for bad in ("other.>", "feedeater.>.x", "feedeater", "feedeater.rss x", "feedeater..a", "$SYS.>"):
        assert live.subject_filter(bad) is None, bad


def test_folder_tree_counts_subfolders() -> None:
    rows = tree(
        [
            {"folder": "", "feeds": 2, "failing": 0},
            {"folder": "Tech", "feeds": 1, "failing": 1},
            {"folder": "Tech/Python", "feeds": 3, "failing": 0},
        ]
    )
    assert [(r["path"], r["depth"], r["feeds"], r["failing"]) for r in rows] == [
        ("", 0, 6, 1),
        ("Tech", 1, 4, 1),
        ("Tech/Python", 2, 3, 0),
    ]


def test_highlight_escapes_then_marks() -> None:
    assert str(highlight("a «<b>» & c")) == "a <mark>&lt;b&gt;</mark> &amp; c"


def test_schedule_text() -> None:
    base = {"dead": False, "enabled": True, "interval_override_s": None, "interval_reason": "no-new"}
    assert schedule_text(base) == "no-new"
    assert "fixed interval 30 min" in schedule_text({**base, "interval_override_s": 1800})
    assert schedule_text({**base, "dead": True}).startswith("never")


def test_per_minute_and_charts() -> None:
    assert per_minute([{"ago": 0, "n": 5}, {"ago": 2, "n": 1}, {"ago": 99, "n": 7}], minutes=3) == [1, 0, 5]
    spark = str(svg.sparkline([0, 1, 2], label="<x>"))
    assert spark.count(",") == 3 and "&lt;x&gt;" in spark and "<script" not in spark
    bars = str(svg.bars([("a", 1), ("b", 0), ("<c>", 2)]))
    assert bars.count("<rect") == 3 and "&lt;c&gt;" in bars


def test_revision_changes_compare_each_version_with_the_one_that_replaced_it() -> None:
    current = {"title": "Storm hits coast", "content_text": "the storm hit the north coast at dawn today"}
    earlier = [
        {"revision": 2, "title": "Storm hits coast", "content_text": "the storm hit the coast at dawn"},
        {"revision": 1, "title": "Storm nears", "content_text": "a storm nears the coast"},
    ]
    got = revision_changes(current, earlier)
    assert [(r["revision"], r["title_changed"], r["removed"], r["added"]) for r in got] == [
        (2, False, 0, 2),  # 2 → current: "north" and "today" added
        (1, True, 2, 4),  # 1 → 2: "a" → "the", "nears" → "hit", "at dawn" added
    ]
    assert got[0]["content_text"] == earlier[0]["content_text"]  # the old text is kept for the page
    assert revision_changes(current, []) == []
