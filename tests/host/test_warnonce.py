"""WarnOnce: a lasting condition is reported when it appears, and again only after it cleared."""

from __future__ import annotations

from host.warnonce import WarnOnce


def test_a_condition_warns_once_while_it_lasts_and_again_after_it_cleared() -> None:
    w = WarnOnce()
    assert w.update(1, "parse", ["bad bytes", "no dates"]) == ["bad bytes", "no dates"]
    assert w.update(1, "parse", ["no dates", "bad bytes"]) == []
    assert w.update(1, "parse", ["no dates"]) == []  # "bad bytes" cleared
    assert w.update(1, "parse", ["bad bytes", "no dates"]) == ["bad bytes"]  # came back: warned again


def test_subjects_and_scopes_are_separate_and_healthy_subjects_keep_nothing() -> None:
    w = WarnOnce()
    assert w.update(1, "fetch", ["failing (500)"]) == ["failing (500)"]
    assert w.update(2, "fetch", ["failing (500)"]) == ["failing (500)"]
    assert w.update(1, "parse", ["failing (500)"]) == ["failing (500)"]
    assert w.update(1, "fetch", []) == []
    assert w.update(2, "fetch", []) == []
    assert w.update(1, "parse", []) == []
    assert w._active == {}
    assert w.update(1, "fetch", ["a", "a"]) == ["a"]
