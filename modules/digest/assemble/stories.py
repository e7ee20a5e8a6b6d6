"""Which article a story shows (pure; no heavy imports: the CLI and API read it too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def representative(members: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The article a story shows: its first article (the one its copies matched), unless a copy of the
    same URL has more content (seed 002 step 3: layer 2 keeps the richer version); the member with the
    most content when the first lies outside the window."""
    root = [m for m in members if m["id"] == m["cluster_id"]]
    if not root:
        return max(members, key=lambda m: (m["word_count"], -m["id"]))
    same_page = [m for m in members if m["layer"] == "url"]
    return max([*root, *same_page], key=lambda m: (m["word_count"], m["id"] == m["cluster_id"], -m["id"]))
