"""WARN once: a lasting condition is reported when it appears, and again only after it cleared."""

from __future__ import annotations

from host.warnonce import State, update


def test_a_condition_warns_once_while_it_lasts_and_again_after_it_cleared() -> None:
    state: State = {}
    appeared, state = update(state, "parse", ["bad bytes", "no dates"])
    assert appeared == ["bad bytes", "no dates"]
    appeared, state = update(state, "parse", ["no dates", "bad bytes"])
    assert appeared == []
    appeared, state = update(state, "parse", ["no dates"])  # "bad bytes" cleared
    assert appeared == []
    appeared, state = update(state, "parse", ["bad bytes", "no dates"])  # came back: warned again
    assert appeared == ["bad bytes"]


def test_scopes_are_separate_and_a_healthy_subject_keeps_nothing() -> None:
    appeared, state = update({}, "fetch", ["failing (500)"])
    assert appeared == ["failing (500)"]
    appeared, state = update(state, "parse", ["failing (500)"])
    assert appeared == ["failing (500)"]
    _, state = update(state, "fetch", [])
    _, state = update(state, "parse", [])
    assert state == {}
    assert update(state, "fetch", ["a", "a"]) == (["a"], {"fetch": ["a"]})


def test_the_state_is_plain_data_that_survives_a_round_trip() -> None:
    """Kept as JSON between runs (poll_state.warned), it says the same after a restart."""
    import json

    _, state = update({}, "fetch", ["failing (500)"])
    restored = json.loads(json.dumps(state))
    assert update(restored, "fetch", ["failing (500)"])[0] == []
