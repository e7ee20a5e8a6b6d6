"""AI service interfaces handed to modules (embedder, summarizer).

Providers are chosen by settings; with none configured the fields are None and modules degrade
gracefully (full-text search only, no summaries).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class Embedder(Protocol):
    dimensions: int
    model: str

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class Summarizer(Protocol):
    model: str

    async def complete_json(self, system: str, prompt: str) -> str: ...


@dataclass(slots=True)
class AIServices:
    embedder: Embedder | None = None
    summarizer: Summarizer | None = None
