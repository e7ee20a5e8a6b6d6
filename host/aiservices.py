"""What modules get as `ctx.ai` (the contract's half of host/ai.py, which builds them from settings):
kept apart so the module contract does not import the providers, nor they the contract."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


class ProviderError(Exception):
    """An AI provider call failed (after retries).

    `transient`: down, timeout, 429, 5xx, malformed reply — worth trying again later.
    `bad_input`: the provider refused these inputs (400/413/422): retrying the same text is pointless.
    Neither: the configuration is wrong (key, model name) — nothing an entry did.
    """

    def __init__(self, message: str, *, transient: bool, bad_input: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.bad_input = bad_input


class Embedder(Protocol):
    model: str  # stored beside every vector: vectors of different models are never compared

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        """One vector per text, all of one size; `query` marks search queries (e5-style models embed
        queries and passages differently). Raises ProviderError."""
        ...


class Summarizer(Protocol):
    model: str

    async def complete_json(self, system: str, prompt: str) -> str:
        """The model's reply to a prompt that asks for JSON (validated by the caller). Raises ProviderError."""
        ...


@dataclass(slots=True)
class AIServices:
    """One per host, configured by the host's AI settings, shared by every module as `ctx.ai`."""

    embedder: Embedder | None = None
    summarizer: Summarizer | None = None
    summaries: str = "extractive"  # host.summarizer: extractive (no LLM), openai, or none (no summaries)

    async def aclose(self) -> None:
        """Close HTTP clients (call once, at host shutdown)."""
        for provider in (self.embedder, self.summarizer):
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
