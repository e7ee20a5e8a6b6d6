"""The updateContexts job: each feed's context (summaryShort, summaryLong, keyPoints) from its recent entries.

Only feeds with entries newer than their last summary are considered, at a cadence set by volume (design doc
000): high-volume feeds every run, normal ones every few hours, low-volume ones on each new entry. The LLM is
asked for JSON; its reply is schema-checked, repaired once by sending the error back, and otherwise replaced
by an extractive summary (the most central titles and lead sentences, LexRank-style), which is also what
runs with no LLM. The job runs every few minutes so a new feed gets its first context soon after its first
poll; busy feeds are still summarized at most every HIGH_VOLUME_EVERY.
The context, its ContextUpdated (messageId = the newest entry's message) and the feed's bookkeeping commit
in one transaction; provider calls happen before it, never inside it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import time
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from string import Template
from typing import Any, Literal

from host import contexts
from host.ai import Embedder, Summarizer
from host.events import SUMMARY_SHORT_MAX, iso_z, truncate_utf16, utf16_len
from host.module import ModuleContext
from modules.rss.ingest import publish
from modules.rss.model import context_key
from modules.rss.settings import ENRICH_LEASE_SECONDS
from modules.rss.store import summaries
from modules.rss.store.summaries import Candidate, WindowEntry

log = logging.getLogger("feedeater.rss.summarize")

WINDOW_DAYS = 7  # input: the last 7 days or the last 20 entries, whichever is more (design doc 000)
WINDOW_MIN_ENTRIES = 20
HIGH_VOLUME_PER_DAY = 10.0
LOW_VOLUME_PER_DAY = 1.0
HIGH_VOLUME_EVERY = timedelta(minutes=30)  # the job runs every 5 min; a busy feed's LLM summary not as often
SUMMARY_LONG_MAX = 1500  # characters: "2–3 sentences" with room to spare; longer is sent back for repair
KEY_POINTS_MAX = 8
REPLY_ECHO_MAX = 2000  # characters of a rejected reply quoted back in the repair prompt
TEXT_CHARS = 2000  # characters of each entry's text read for prompts and term weights
HISTORY_ENTRIES = 300  # older entries of the feed that weigh down its perennial words


@dataclass(frozen=True, slots=True)
class Summary:
    short: str
    long: str
    key_points: tuple[str, ...]


# -- cadence (pure) ------------------------------------------------------------------------------
Cadence = Literal["high", "normal", "low"]


def cadence_of(entries_per_day: float) -> Cadence:
    if entries_per_day >= HIGH_VOLUME_PER_DAY:
        return "high"
    return "normal" if entries_per_day >= LOW_VOLUME_PER_DAY else "low"


@dataclass(frozen=True, slots=True)
class Due:
    due: bool
    cadence: Cadence
    reason: str


def decide(
    *,
    new_entries: int,
    entries_per_day: float,
    last_summarized_at: datetime | None,
    now: datetime,
    normal_interval: timedelta,
) -> Due:
    """Whether a feed is summarized this run: never without new entries; a feed never summarized at once
    (its first context soon after its first poll); low volume on every run that has new entries (rarely),
    high volume every HIGH_VOLUME_EVERY, normal volume once `normal_interval` has passed."""
    cadence = cadence_of(entries_per_day)
    if new_entries <= 0:
        return Due(False, cadence, "no new entries")
    if last_summarized_at is None:
        return Due(True, cadence, "never summarized")
    if cadence == "low":
        return Due(True, cadence, f"low volume, {new_entries} new")
    wait = last_summarized_at + (HIGH_VOLUME_EVERY if cadence == "high" else normal_interval) - now
    if wait > timedelta(0):
        return Due(False, cadence, f"{cadence} volume, next summary in {wait.total_seconds() / 60:.0f} min")
    return Due(True, cadence, f"{cadence} volume, {new_entries} new")


# -- prompt (pure) -------------------------------------------------------------------------------
def excerpt(text: str, limit: int) -> str:
    """The start of a text on one line, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(" ,;:.") + "…"


def build_prompt(
    template: str,
    *,
    feed_title: str,
    feed_description: str,
    previous_summary: str | None,
    entries: Sequence[WindowEntry],
    excerpt_chars: int,
    budget_chars: int,
) -> str:
    """Fill the user template ($feed_title, $feed_description, $previous_summary, $entry_count, $entries).

    Entries come newest first, each a dated title line and a plain-text excerpt. Over the budget, the
    oldest entries lose their excerpts first, then are left out (at least one entry always stays).
    """
    heads = [f"- [{e.published:%Y-%m-%d}] {e.title or '(untitled)'}" for e in entries]
    lines = [
        f"{head}\n  {text}" if (text := excerpt(e.text, excerpt_chars)) else head
        for head, e in zip(heads, entries, strict=True)
    ]

    def render() -> str:
        return Template(template).safe_substitute(
            feed_title=feed_title or "(untitled feed)",
            feed_description=feed_description or "No description",
            previous_summary=previous_summary or "none",
            entry_count=len(lines),
            entries="\n".join(lines),
        )

    prompt = render()
    oldest = len(lines) - 1
    while len(prompt) > budget_chars and oldest >= 0:
        lines[oldest] = heads[oldest]
        oldest -= 1
        prompt = render()
    while len(prompt) > budget_chars and len(lines) > 1:
        lines.pop()
        prompt = render()
    return prompt


# -- the reply (pure) ----------------------------------------------------------------------------
class ReplyError(ValueError):
    """The LLM's reply does not fit the schema; the message is sent back for the repair attempt."""


def _required_text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ReplyError(f"{key} must be a non-empty string")
    return " ".join(value.split())


def parse_reply(reply: str) -> Summary:
    """Validate the LLM's JSON: summaryShort and summaryLong non-empty strings, keyPoints (optional, default
    []) an array of strings. Code fences and chatter around the object are tolerated (small models add
    them despite being told not to); summaryShort is cut to 128 UTF-16 units, key points are trimmed,
    deduplicated and capped."""
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        raise ReplyError("the reply contains no JSON object")
    try:
        data = json.loads(reply[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ReplyError(f"the reply is not valid JSON ({exc})") from None
    short = _required_text(data, "summaryShort")
    long = _required_text(data, "summaryLong")
    if len(long) > SUMMARY_LONG_MAX:
        raise ReplyError(f"summaryLong has {len(long)} characters; write 2-3 sentences")
    points = data.get("keyPoints", [])
    if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
        raise ReplyError("keyPoints must be an array of strings")
    cleaned = dict.fromkeys(" ".join(p.split()) for p in points if p.strip())
    return Summary(truncate_utf16(short), long, tuple(cleaned)[:KEY_POINTS_MAX])


def repair_prompt(prompt: str, reply: str, error: str) -> str:
    """The original request, the rejected reply and why it was rejected: one chance to fix it."""
    quoted = reply if len(reply) <= REPLY_ECHO_MAX else reply[:REPLY_ECHO_MAX] + "…"
    return (
        f"{prompt}\n\nYour previous reply could not be used: {error}.\nPrevious reply:\n{quoted}\n\n"
        'Reply again with only the JSON object: {"summaryShort": string, "summaryLong": string, '
        '"keyPoints": [string, ...]}.'
    )


async def ask_llm(summarizer: Summarizer, system: str, prompt: str) -> tuple[Summary, bool]:
    """(summary, repaired). Raises ReplyError when the repaired reply is still invalid; provider errors
    propagate (the provider does its own retries)."""
    reply = await summarizer.complete_json(system, prompt)
    try:
        return parse_reply(reply), False
    except ReplyError as exc:
        reply = await summarizer.complete_json(system, repair_prompt(prompt, reply, str(exc)))
    return parse_reply(reply), True


# -- extractive summary (pure) -------------------------------------------------------------------
# Scripts written without spaces between words: runs of them become character bigrams.
_UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_RUNS = re.compile(f"[{_UNSPACED}]+|[^{_UNSPACED}]+")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
# Function words (three letters or more) of common feed languages, and feed boilerplate; other
# languages lean on the history weighting and the three-letter minimum.
_STOPWORD_LIST = """
about above all and after again against also among another any are around because been before being below
between both but can cannot could did does doing down during each either every few for from further had
has have having her here hers herself him himself his how however into its itself just least less many
may might more most much must near need new not now off once one only other ought our ours out over own
per same she should since some still such than that the their theirs them then there these they this
those though through too under until upon very via was way were what when where whether which while who
whom whose why will with within without would yet you your yours read continue reading post posted
appeared first comments comment share click today aber alle als auch auf aus bei bin bis das dass dem
den der des die dies diese doch durch ein eine einem einen einer eines für gegen hat hatte haben ich ihr
ihre ist jetzt kann kein keine man mehr mit nach nicht noch nur oder sein seine sich sie sind über und
uns unter vom von vor war wie wird wir zum zur zwischen alors aux avec ces cette comme dans elle est
être ils les leur lui mais même nous par pas plus pour que qui sans ses son sont sur tout tous une vous
algo como con cual del desde ella ellos entre era esta este esto los las más nos para pero por sin sobre
sus también todo una uno unos
"""
_STOPWORDS = frozenset(_STOPWORD_LIST.split())


def tokens(text: str) -> list[tuple[str, str]]:
    """(key, surface form) of each content word: NFKC, case-folded keys, Unicode word characters, so any
    alphabet works; Chinese/Japanese runs become character bigrams. Numbers and short words are dropped."""
    out: list[tuple[str, str]] = []
    for run in _RUNS.findall(unicodedata.normalize("NFKC", text)):
        if "\u3040" <= run[0] <= "\ufaff":
            out.extend((run[i : i + 2], run[i : i + 2]) for i in range(len(run) - 1))
            continue
        for word in _WORD.findall(run):
            key = word.casefold()
            if len(key) >= 3 and not key.isdigit() and key not in _STOPWORDS:
                out.append((key, word))
    return out


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
LEAD_CHARS = 200  # a lead sentence longer than this is cut at a word
SIMILAR = 0.5  # cosine above which two entries say the same thing: only the more central one is kept
DAMPING = 0.85  # LexRank's random-jump damping (as PageRank's)


def lead_sentence(title: str, text: str) -> str:
    """The first sentence of an entry's text that is not just its title again, cut to LEAD_CHARS."""
    for sentence in _SENTENCE_END.split(" ".join(text.split()))[:3]:
        if sentence and sentence.casefold().rstrip(".!?") != title.casefold().rstrip(".!?"):
            return excerpt(sentence, LEAD_CHARS)
    return ""


def _tfidf(docs: Sequence[str], history: Sequence[str]) -> list[dict[str, float]]:
    """Unit TF-IDF vectors; document frequency over the window and the feed's older entries together, so
    the words a feed always uses (its name, its boilerplate) weigh little."""
    bags = [Counter(key for key, _ in tokens(d)) for d in docs]
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    for text in history:
        df.update({key for key, _ in tokens(text)})
    n = len(docs) + len(history)
    vectors = []
    for bag in bags:
        v = {k: (1 + math.log(c)) * math.log((1 + n) / (1 + df[k])) for k, c in bag.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vectors.append({k: x / norm for k, x in v.items()})
    return vectors


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(x * b.get(k, 0.0) for k, x in a.items())


def centrality(vectors: Sequence[dict[str, float]], iterations: int = 30) -> list[float]:
    """LexRank (Erkan & Radev 2004) with continuous weights: an entry is central when it is similar to
    many entries that are central themselves — what the window keeps coming back to."""
    n = len(vectors)
    sims = [[_cosine(vectors[i], vectors[j]) if i != j else 0.0 for j in range(n)] for i in range(n)]
    out_weight = [sum(row) or 1.0 for row in sims]
    score = [1.0 / n] * n
    for _ in range(iterations):
        score = [
            (1 - DAMPING) / n + DAMPING * sum(score[j] * sims[j][i] / out_weight[j] for j in range(n))
            for i in range(n)
        ]
    return score


def representative(entries: Sequence[WindowEntry], history: Sequence[str], limit: int = 5) -> list[int]:
    """Indexes of the most central entries, most central first (newer first on ties), leaving out entries
    too similar to one already chosen and repeated titles."""
    docs = [f"{e.title}. {lead_sentence(e.title, e.text)}" for e in entries]
    vectors = _tfidf(docs, history)
    score = centrality(vectors) if len(entries) > 1 else [1.0] * len(entries)
    chosen: list[int] = []
    titles: set[str] = set()
    for i in sorted(range(len(entries)), key=lambda i: -score[i]):  # stable: newest first on ties
        title = " ".join(entries[i].title.casefold().split())
        if not title or title in titles or any(_cosine(vectors[i], vectors[j]) > SIMILAR for j in chosen):
            continue
        chosen.append(i)
        titles.add(title)
        if len(chosen) == limit:
            break
    return chosen


def short_sentence(feed_title: str, titles: Sequence[str]) -> str:
    """summaryShort as one sentence about what the feed covers: its most central headlines, two when
    they fit in SUMMARY_SHORT_MAX, else one (cut with "…" when even that is too long)."""
    who = feed_title or "this feed"
    sentence = ""
    for n in (2, 1):
        if len(titles) >= n:
            sentence = f"Lately, {who} covers " + " and ".join(f"“{t}”" for t in titles[:n]) + "."
            if utf16_len(sentence) <= SUMMARY_SHORT_MAX:
                return sentence
    return truncate_utf16(sentence)


def extractive_summary(feed_title: str, entries: Sequence[WindowEntry], history: Sequence[str]) -> Summary:
    """A summary without an LLM: the entries the window keeps coming back to (centrality), as their titles
    and lead sentences, so it reads as sentences about what the feed covers rather than a list of words."""
    picked = [entries[i] for i in representative(entries, history)]
    dates = sorted({f"{e.published:%Y-%m-%d}" for e in entries})
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'} ({span})"
    if not picked:
        return Summary(truncate_utf16(feed_title or "Recent entries"), f"{count}.", ())
    lead = picked[0]
    about = f"Mostly about “{lead.title}”"
    short = short_sentence(feed_title, [e.title for e in picked])
    sentences = [f"{count}. {about}" + (f": {lead_sentence(lead.title, lead.text)}" if lead.text else ".")]
    if len(picked) > 1:
        sentences.append("Also: " + "; ".join(f"“{e.title}”" for e in picked[1:3]) + ".")
    long = " ".join(s if s.endswith((".", "!", "?", "…")) else s + "." for s in sentences)
    return Summary(truncate_utf16(short), long[:SUMMARY_LONG_MAX], tuple(e.title for e in picked))


# -- the job -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Produced:
    summary: Summary
    method: Literal["llm", "extractive"]
    model: str | None = None
    repaired: bool = False
    fallback_reason: str | None = None  # why the LLM's summary is not the one stored


async def _embed(embedder: Embedder | None, text: str, feed_id: int) -> list[float] | None:
    """The context's embedding, or None: a failing embedder never blocks the summary."""
    if embedder is None:
        return None
    try:
        vectors = await embedder.embed([text])
        return [float(x) for x in vectors[0]]
    except Exception as exc:
        log.warning("feed %s: context embedding failed: %s", feed_id, exc)
        return None


async def _produce(
    ctx: ModuleContext, cand: Candidate, window: list[WindowEntry], previous: str | None
) -> Produced:
    """The LLM's summary (with one repair), or the extractive one and the reason."""
    summarizer = ctx.ai.summarizer
    reason = None  # extractive by choice: no LLM configured
    if summarizer is not None:
        prompt = build_prompt(
            ctx.settings["summary_prompt_template"],
            feed_title=cand.title,
            feed_description=cand.description,
            previous_summary=previous,
            entries=window,
            excerpt_chars=int(ctx.settings["summary_excerpt_chars"]),
            budget_chars=int(ctx.settings["summary_prompt_chars"]),
        )
        try:
            summary, repaired = await ask_llm(summarizer, ctx.settings["summary_system_prompt"], prompt)
            return Produced(summary, "llm", summarizer.model, repaired)
        except ReplyError as exc:
            reason = f"invalid reply after one repair: {exc}"
        except Exception as exc:
            reason = f"summarizer failed: {type(exc).__name__}: {exc}"
        log.warning("feed %s: %s; using the extractive summary", cand.feed_id, reason)
    async with ctx.pool.acquire() as conn:
        history = await summaries.history(
            conn, cand.feed_id, [e.entry_id for e in window], limit=HISTORY_ENTRIES
        )
    summary = await asyncio.to_thread(extractive_summary, cand.title, window, history)  # ~0.1 s of CPU
    return Produced(summary, "extractive", fallback_reason=reason)


async def summarize_feed(ctx: ModuleContext, cand: Candidate, due: Due) -> Produced:
    """Summarize one leased feed, then store the context, its event and the bookkeeping in one transaction.

    No connection is held while the providers work."""
    now = datetime.now(UTC)
    key = context_key(cand.feed_id)
    async with ctx.pool.acquire() as conn:
        window, newest_id = await summaries.window(
            conn,
            cand.feed_id,
            now,
            max_entries=int(ctx.settings["summary_max_entries"]),
            min_entries=WINDOW_MIN_ENTRIES,
            days=WINDOW_DAYS,
            text_chars=TEXT_CHARS,
        )
        previous = await contexts.get(conn, publish.MODULE, key)
    produced = await _produce(ctx, cand, window, previous["summary_long"] if previous else None)
    embedding = await _embed(ctx.ai.embedder, produced.summary.long, cand.feed_id)
    meta: dict[str, Any] = {
        "method": produced.method,
        "model": produced.model,
        "repaired": produced.repaired,
        "fallbackReason": produced.fallback_reason,
        "entries": len(window),
        "newEntries": cand.new_entries,
        "windowStart": iso_z(window[-1].published),
        "windowEnd": iso_z(window[0].published),
        "cadence": due.cadence,
        "entriesPerDay": round(cand.entries_per_day, 2),
        "embeddingModel": ctx.ai.embedder.model if embedding is not None and ctx.ai.embedder else None,
    }
    async with ctx.pool.acquire() as conn, conn.transaction():
        await contexts.update(
            conn,
            ctx.emit,
            module=publish.MODULE,
            source_key=key,
            summary_short=produced.summary.short,
            summary_long=produced.summary.long,
            key_points=produced.summary.key_points,
            message_id=window[0].message_id,
            embedding=embedding,
            meta=meta,
        )
        await summaries.summarized(
            conn,
            cand.feed_id,
            newest_id=newest_id,
            now=now,
            entries_per_day=cand.entries_per_day,
            cadence=due.cadence,
            method=produced.method,
            entries_used=len(window),
        )
    return produced


async def run(ctx: ModuleContext) -> dict[str, Any]:
    """One tick: decide which feeds are due, lease them, summarize them a few at a time.

    The host's `summarizer` setting picks the method: `openai` (LLM, extractive fallback), `extractive`,
    or `none` (no contexts at all)."""
    if ctx.settings["summarizer"] == "none":
        return {"disabled": True}
    started = time.monotonic()
    now = datetime.now(UTC)
    normal = timedelta(hours=float(ctx.settings["summary_normal_hours"]))
    counts: Counter[str] = Counter()
    async with ctx.pool.acquire() as conn:
        due: dict[int, tuple[Candidate, Due]] = {}
        for cand in await summaries.candidates(conn, now, volume_days=WINDOW_DAYS):
            decision = decide(
                new_entries=cand.new_entries,
                entries_per_day=cand.entries_per_day,
                last_summarized_at=cand.summarized_at,
                now=now,
                normal_interval=normal,
            )
            log.debug("feed %s: %s", cand.feed_id, decision.reason)
            if decision.due:
                due[cand.feed_id] = (cand, decision)
            else:
                counts["waiting"] += 1
        leased = (
            await summaries.lease(conn, list(due), host_id=ctx.host_id, lease_s=ENRICH_LEASE_SECONDS, now=now)
            if due
            else set()
        )
    gate = asyncio.Semaphore(int(ctx.settings["summary_concurrency"]))

    async def one(cand: Candidate, decision: Due) -> Produced:
        async with gate:
            return await summarize_feed(ctx, cand, decision)

    jobs = [due[feed_id] for feed_id in sorted(leased)]
    results = await asyncio.gather(*(one(c, d) for c, d in jobs), return_exceptions=True)
    for (cand, _), result in zip(jobs, results, strict=True):
        if isinstance(result, BaseException):
            log.error("feed %s: summary aborted: %s", cand.feed_id, result)  # the lease expires
            counts["aborted"] += 1
            continue
        counts["summarized"] += 1
        counts[result.method] += 1
        counts["repaired"] += result.repaired
        counts["fallback"] += result.fallback_reason is not None
    return {**counts, "seconds": round(time.monotonic() - started, 3)}
