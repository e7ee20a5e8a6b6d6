"""WARN once per condition: remember which conditions are active per subject (a feed, a host) so a
condition that lasts is logged when it appears, not on every run, and again only after it cleared."""

from __future__ import annotations

from collections.abc import Hashable, Iterable


class WarnOnce:
    """Process-local memory of active conditions, grouped by (subject, scope).

    A scope is one kind of check that reports all its current conditions at once (a parse's warnings,
    a fetch's failure), so a condition missing from the next report of its scope has cleared.
    """

    def __init__(self) -> None:
        self._active: dict[tuple[Hashable, str], frozenset[str]] = {}

    def update(self, subject: Hashable, scope: str, conditions: Iterable[str]) -> list[str]:
        """Record the scope's current conditions; return those that just appeared (warn about these)."""
        key = (subject, scope)
        current = list(dict.fromkeys(conditions))
        before = self._active.get(key, frozenset())
        if current:
            self._active[key] = frozenset(current)
        else:
            self._active.pop(key, None)  # nothing kept for healthy subjects
        return [c for c in current if c not in before]
