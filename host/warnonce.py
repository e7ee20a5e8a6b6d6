"""WARN once per condition: which conditions are active per subject (a feed, a host), so a condition that
lasts is logged when it appears, not on every run, and again only after it cleared.

The state is plain data (scope → active conditions) that the caller keeps where it survives a restart
(rss keeps each feed's in poll_state.warned).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

State = Mapping[str, list[str]]


def update(state: State, scope: str, conditions: Iterable[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Record one scope's current conditions: (those that just appeared: warn about these, the new state).

    A scope is one kind of check that reports all its current conditions at once (a parse's warnings, a
    fetch's failure), so a condition missing from the next report of its scope has cleared. A scope without
    conditions leaves nothing in the state (healthy subjects keep nothing)."""
    current = list(dict.fromkeys(conditions))
    before = set(state.get(scope, ()))
    new_state = {k: list(v) for k, v in state.items() if k != scope}
    if current:
        new_state[scope] = current
    return [c for c in current if c not in before], new_state
