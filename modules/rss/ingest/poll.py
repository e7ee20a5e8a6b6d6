"""The poll job: claim due feeds, fetch them politely, parse, store entries and their events, reschedule.

Per feed: a 200 goes through the one body path (document.py: the raw response commits first, so a parse
failure loses nothing; then entries, their events and the new poll state commit in one transaction), and
the features' after-fetch hooks (hooks.py: WebSub, backfill) run in that transaction or after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import re
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import asyncpg

from host import progress, tracing, warnonce
from host.breaker import BreakerParams
from host.groupcommit import GroupCommit
from host.jobs import current_run_id
from host.module import ModuleContext
from host.net.fetcher import Fetcher, FetchResult
from modules.rss import metrics, store
from modules.rss.ingest import circuit, document, hooks, observe, order, processors, summary
from modules.rss.ingest.schedule import (
    Decision,
    Outcome,
    ScheduleParams,
    decide,
    feed_params,
    push_safety_check,
    push_wait,
    rate_limit_wait,
)
from modules.rss.model import Feed

log = logging.getLogger("feedeater.rss.poll")
_MAX_AGE = re.compile(r"max-age\s*=\s*(\d+)", re.IGNORECASE)


def schedule_params(settings: dict[str, Any] | Any) -> ScheduleParams:
    return ScheduleParams(
        initial_s=settings["default_interval_minutes"] * 60,
        min_s=settings["min_interval_minutes"] * 60,
        max_s=settings["max_interval_minutes"] * 60,
        up=settings["interval_up_factor"],
        down=settings["interval_down_factor"],
        ewma_alpha=settings["ewma_alpha"],
        blend_lambda=settings["ewma_blend"],
        jitter=settings["jitter_ratio"],
        backoff_cap_s=settings["error_backoff_cap_minutes"] * 60,  # >= 60 s, the backoff base
    )


def make_fetcher(settings: dict[str, Any] | Any) -> Fetcher:
    return Fetcher(
        user_agent=settings["user_agent"],
        timeout_s=settings["timeout_seconds"],
        max_bytes=settings["max_body_bytes"],
        global_limit=settings["global_concurrency"],
        per_host_limit=settings["per_host_concurrency"],
        per_host_delay_s=settings["per_host_delay_ms"] / 1000,
        per_host_rate=settings["per_host_rate"],
        per_host_burst=settings["per_host_burst"],
        host_circuit=circuit.host_params(settings),
        allow_private_networks=settings["allow_private_networks"],
        max_redirects=settings["max_redirects"],
    )


def max_age(headers: dict[str, str]) -> float | None:
    match = _MAX_AGE.search(headers.get("cache-control", ""))
    return float(match[1]) if match else None


@contextlib.asynccontextmanager
async def renewing(ctx: ModuleContext, held: set[int], lease_s: int) -> AsyncIterator[None]:
    """While the block runs, renew the leases of the feeds in `held` (the caller adds a feed when it
    claims it and removes it when its poll is done) every quarter lease: a slow poll keeps its feed,
    and a killed host's feeds come back within one short lease of its last renewal (issue 25 item 5).
    A failed renewal is logged, not raised: the polls go on, and the next renewal tries again."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(lease_s / 4)
            if not held:
                continue
            try:
                async with ctx.pool.acquire() as conn:
                    await store.renew_leases(conn, sorted(held), host_id=ctx.host_id, lease_s=lease_s)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("renewing %d feed leases failed: %s", len(held), exc)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def run(ctx: ModuleContext) -> dict[str, Any]:
    """One tick: poll every due feed and return the counts for host.job_runs.

    Claims are refilled as polls finish (whenever half of `poll_batch` is done), so one slow server holds
    up only its own feed, not the batch it was claimed with; once a claim comes back short (no more feeds
    are due) the tick still looks again every quarter lease while polls are in flight (a killed host's
    feeds come back then), and ends when they are done."""
    totals: Counter[str] = Counter()
    batch = int(ctx.settings["poll_batch"])
    lease_s = int(ctx.settings["lease_seconds"])
    async with ctx.pool.acquire() as conn:  # the gauges: queue depth (due feeds), open circuits, stale, dead
        for state, count in (await store.feed_counts(conn, datetime.now(UTC))).items():
            metrics.FEEDS.labels(state).set(count)
    run_id = new_run_id()
    finished: asyncio.Queue[tuple[store.Claim, Counter[str] | BaseException]] = asyncio.Queue()
    polls: set[asyncio.Task[None]] = set()
    held: set[int] = set()  # feeds claimed and not yet done: their leases are renewed

    async def one(claim: store.Claim) -> None:
        try:
            result: Counter[str] | BaseException = await poll_one(ctx, claim, run_id)
        except Exception as exc:  # a database failure mid-feed: the lease expires, the next tick retries
            result = exc
        held.discard(claim.feed.id)
        finished.put_nowait((claim, result))

    more, running = True, 0  # running: polls whose result is not read yet (a task may still be closing)
    look_again = lease_s / 4  # a long tick still looks for feeds a dead host's leases gave back
    looked = time.monotonic()
    getter: asyncio.Future[tuple[store.Claim, Counter[str] | BaseException]] | None = None
    try:
        async with renewing(ctx, held, lease_s):
            while True:
                if (more or time.monotonic() - looked >= look_again) and running <= batch // 2:
                    looked = time.monotonic()
                    wanted = batch - running
                    async with ctx.pool.acquire() as conn:
                        claims = await store.claim_due(
                            conn, host_id=ctx.host_id, limit=wanted, lease_s=lease_s, now=datetime.now(UTC)
                        )
                    more = len(claims) == wanted
                    if claims:
                        progress.expect(len(claims), "feeds")
                        totals["feeds"] += len(claims)
                        running += len(claims)
                    held.update(c.feed.id for c in claims)
                    for claim in claims:
                        task = asyncio.create_task(one(claim))
                        polls.add(task)
                        task.add_done_callback(polls.discard)
                if not running:
                    break
                getter = getter or asyncio.ensure_future(finished.get())  # kept across waits: no result lost
                if not (await asyncio.wait({getter}, timeout=look_again))[0]:
                    continue
                claim, result = getter.result()
                getter = None
                running -= 1
                if isinstance(result, BaseException):
                    log.error("feed %s: poll aborted: %s", claim.feed.id, result)
                    totals["aborted"] += 1
                else:
                    totals.update(result)
    finally:  # cancelled (shutdown): the polls in flight stop too; their leases expire
        if getter is not None:
            getter.cancel()
        for task in polls:
            task.cancel()
        await asyncio.gather(*polls, return_exceptions=True)
    return dict(totals)


async def poll_now(
    ctx: ModuleContext,
    feed_ids: Sequence[int],
    *,
    concurrency: int = 8,
    on_done: Callable[[store.Claim, Counter[str] | BaseException], None] | None = None,
) -> dict[int, Counter[str] | BaseException]:
    """Poll these feeds at once, due or not (a feed is read when it is added, not at the next tick).

    The same claim rules and `poll_one` as the job: a feed another poll holds is left to it."""
    lease_s = int(ctx.settings["lease_seconds"])
    async with ctx.pool.acquire() as conn:
        claims = await store.claim_feeds(
            conn, feed_ids, host_id=ctx.host_id, lease_s=lease_s, now=datetime.now(UTC)
        )
    gate = asyncio.Semaphore(concurrency)
    run_id = new_run_id()
    held = {c.feed.id for c in claims}  # waiting for the gate or polling: their leases are renewed

    async def one(claim: store.Claim) -> Counter[str] | BaseException:
        async with gate:
            try:
                result: Counter[str] | BaseException = await poll_one(ctx, claim, run_id)
            except Exception as exc:  # the lease expires and the job retries the feed
                result = exc
        held.discard(claim.feed.id)
        if on_done is not None:
            on_done(claim, result)
        return result

    async with renewing(ctx, held, lease_s):
        results = await asyncio.gather(*(one(c) for c in claims))
    return {c.feed.id: r for c, r in zip(claims, results, strict=True)}


async def poll_one(ctx: ModuleContext, claim: store.Claim, run_id: str | None = None) -> Counter[str]:
    """Poll one claimed feed: one trace per poll (stages fetch, parse, store, schedule as child spans)."""
    with tracing.span("rss.poll", observe.poll_attributes(claim), root=True):
        counts = await _poll_one(ctx, claim, run_id)
        observe.finished(counts)
        return counts


async def _poll_one(ctx: ModuleContext, claim: store.Claim, run_id: str | None) -> Counter[str]:
    """Logs one summary line for the feed (summary.fields) and returns its counts."""
    feed = claim.feed
    url = feed.url  # a permanent redirect may change feed.url on the way
    fetcher: Fetcher = ctx.state["fetcher"]
    started = time.monotonic()
    with tracing.span("rss.fetch"):
        res = await fetcher.fetch(feed.url, etag=claim.etag, last_modified=claim.last_modified)
        observe.fetched(claim, res)
    observe.annotate_fetch(res)
    status = res.status or res.error_kind
    metrics.FETCHES.labels(str(res.status) if res.status else (res.error_kind or "error")).inc()
    metrics.FETCH_SECONDS.observe(res.elapsed_s)
    size = len(res.body) if res.body else 0
    metrics.BYTES.inc(size)
    counts: Counter[str] = Counter({f"status_{status}": 1})
    now = datetime.now(UTC)
    if res.status == 200 and res.body is not None:
        outcome, decision, error = await _handle_body(ctx, claim, res, now)
        counts += outcome
    else:
        decision, error = await _handle_no_body(ctx, claim, res, now)
    seconds = time.monotonic() - started
    metrics.POLL_SECONDS.observe(seconds)
    lookback = document.lookback(ctx, feed)
    line = summary.fields(
        run_id=run_id or new_run_id(),
        feed_id=feed.id,
        url=url,
        status=status,
        counts=counts,
        size=size,
        seconds=seconds,
        decision=decision,
        now=now,
        error=error,
        cutoff=processors.lookback_cutoff(now, lookback.hours, lookback.grace_minutes),
        lookback_hours=lookback.hours,
        lookback_source=lookback.source,
    )
    log.info(summary.message(line), extra=line)
    progress.advance("feeds")
    return counts


def new_run_id() -> str:
    """The poll job run's id (host.job_runs.id), or a fresh one outside a job (`poll_now` from the CLI)."""
    job_run = current_run_id()
    return str(job_run) if job_run is not None else uuid.uuid4().hex[:12]


async def _handle_body(
    ctx: ModuleContext, claim: store.Claim, res: FetchResult, now: datetime
) -> tuple[Counter[str], Decision, str | None]:
    """Store, parse and ingest a 200 (the one body path, document.py) with the poll's bookkeeping and the
    features' hooks: (counts, the schedule decision, the error if it was no feed)."""
    feed = claim.feed
    warned = claim.warned  # the parse's conditions (set by `before`)
    meta: dict[str, Any] = {}  # the feed's own fields that changed (set by `before`)

    def before(parsed: Feed) -> str | None:
        nonlocal warned
        warned = _warn(feed.id, claim.warned, "parse", _conditions(parsed), level=logging.INFO)
        detected = order.typical_order([e.published for e in parsed.items() if not e.future_dated])
        meta.update(_meta_changes(feed, parsed, res) | ({"stale": False} if feed.stale else {}))
        if detected is not None and detected != feed.typical_order:
            meta["typical_order"] = detected
        feed.title = parsed.title or feed.title  # messages carry the feed's current title
        return detected or feed.typical_order

    async def same(conn: asyncpg.Connection) -> Decision:  # our validators ignored, the same bytes: a 304
        return await _finish_unchanged(ctx, conn, claim, res, now)

    async def failed(conn: asyncpg.Connection, error: str) -> Decision:
        return await _record_failure(ctx, conn, claim, res, now, status=200, error=error)

    async def after(conn: asyncpg.Connection, parsed: Feed, inserted: set[str]) -> Decision:
        outcome = _outcome(parsed, res, len(inserted), now)
        decision = _decide(ctx, claim, now, outcome, push_until=await _push_until(ctx, conn, feed.id, now))
        await store.update_feed_meta(conn, feed.id, meta)
        for hook in hooks.registered():
            if hook.stored is not None:
                await hook.stored(ctx, conn, fetched(parsed))
        fields = _success_fields(ctx, dataclasses.replace(claim, warned=warned), res, now, decision)
        done_warned = fields.pop("warned", warned)  # the parse's conditions, then the fetch's
        await store.finish_poll(
            conn,
            feed.id,
            fields
            | {
                "ttl_minutes": parsed.ttl_minutes,
                "skip_hours": sorted(parsed.skip_hours),
                "skip_days": sorted(parsed.skip_days),
                "successful_polls": claim.successful_polls + 1,
                "new_entries_last_fetch": len(inserted),
                "skipped_items": claim.skipped_items + parsed.skipped_items,
            }
            | ({"warned": done_warned} if done_warned != claim.warned else {}),
        )
        return decision

    def fetched(parsed: Feed) -> hooks.Fetched:
        return hooks.Fetched(feed, parsed, res.url, res.headers, now)

    stored = await document.ingest_document(
        ctx,
        feed,
        document.Body.of(res),
        now=now,
        first_poll=claim.successful_polls == 0,
        before=before,
        same=same,
        failed=failed,
        after=after,
    )
    assert stored.result is not None
    if stored.same_as_last:
        return Counter(same_body=1), stored.result, None
    parsed, intents = stored.parsed, stored.intents
    if parsed is None or intents is None:
        return Counter(parse_errors=1), stored.result, stored.error
    for hook in hooks.registered():
        if hook.committed is not None:
            await hook.committed(ctx, fetched(parsed))
    items = parsed.items()
    dated = sum(e.published is not None for e in items)
    counts = Counter(
        new=len(stored.inserted),
        updated=len(intents.revised),
        unchanged=len(intents.unchanged),
        tombstoned=len(intents.gone),
        filtered=len(intents.filtered),
        items=len(items),
        raw_same=len(parsed.same),  # of the unchanged: known by their raw hash, not normalized again
        dated=dated,
        undated=len(items) - dated,
        skipped=parsed.skipped_items + len(parsed.over_cap),
    )
    return counts, stored.result, None


async def _handle_no_body(
    ctx: ModuleContext, claim: store.Claim, res: FetchResult, now: datetime
) -> tuple[Decision, str | None]:
    """A 304 or a failure: (the schedule decision, the error if it failed)."""
    feed = claim.feed
    if res.status == 304 and not feed.stale:  # the common case, written together with other polls' 304s
        push_until = await _push_until_now(ctx, feed.id, now)
        decision, fields = _unchanged(ctx, claim, res, now, push_until=push_until)
        await _poll_writes(ctx).submit((feed.id, fields))
        return decision, None
    async with ctx.pool.acquire() as conn, conn.transaction():
        if res.error_kind == "circuit_open":  # no request was made: not this feed's failure
            wait = max(res.retry_after_s or 0.0, 60.0) * (1 + 0.15 * ctx.once("rng", random.Random).random())
            retry_at = now + timedelta(seconds=wait)
            await store.finish_poll(conn, feed.id, {"next_poll_at": retry_at})
            return Decision(claim.interval_s or wait, retry_at, "host-circuit-open", None), None
        if res.status == 304:
            return await _finish_unchanged(ctx, conn, claim, res, now), None
        if res.status == 410:
            log.warning(
                "feed %s: 410 Gone; marked dead (re-enable with `feedeater rss set %s enabled=true`)",
                feed.id,
                feed.id,
            )
            await store.update_feed_meta(conn, feed.id, {"dead": True})
        error = res.error or f"HTTP {res.status}"
        if res.status == 403:  # seeds 000/003: said as such, and not asked again for hours
            error = f"forbidden: the server refuses to serve this feed to us ({error})"
        decision = await _record_failure(ctx, conn, claim, res, now, status=res.status, error=error)
    return decision, error


async def _finish_unchanged(
    ctx: ModuleContext, conn: asyncpg.Connection, claim: store.Claim, res: FetchResult, now: datetime
) -> Decision:
    """A successful poll with nothing new to read (304, or the same bytes as last time)."""
    push_until = await _push_until(ctx, conn, claim.feed.id, now)
    decision, fields = _unchanged(ctx, claim, res, now, push_until=push_until)
    await store.finish_poll(conn, claim.feed.id, fields)
    if claim.feed.stale:
        await store.update_feed_meta(conn, claim.feed.id, {"stale": False})
    return decision


def _unchanged(
    ctx: ModuleContext, claim: store.Claim, res: FetchResult, now: datetime, *, push_until: datetime | None
) -> tuple[Decision, dict[str, Any]]:
    """The schedule decision and the poll_state fields of a poll with nothing new to read."""
    outcome = Outcome(
        kind="not_modified",
        ttl_minutes=claim.ttl_minutes,
        max_age_s=max_age(res.headers),
        skip_hours=frozenset(claim.skip_hours),
        skip_days=frozenset(claim.skip_days),
        not_before_s=rate_limit_wait(res.headers, now),
    )
    decision = _decide(ctx, claim, now, outcome, push_until=push_until)
    return decision, _success_fields(ctx, claim, res, now, decision) | {"new_entries_last_fetch": 0}


def _poll_writes(ctx: ModuleContext) -> GroupCommit[tuple[int, dict[str, Any]]]:
    """The group commit of unchanged polls' poll_state updates."""
    return ctx.once("poll_writes", lambda: GroupCommit(ctx.pool, store.finish_polls))


def _failure_kind(status: int) -> Literal["gone", "rate_limited", "forbidden", "error"]:
    if status == 410:
        return "gone"
    if status == 403:
        return "forbidden"
    return "rate_limited" if status in (429, 503) else "error"


async def _record_failure(
    ctx: ModuleContext,
    conn: asyncpg.Connection,
    claim: store.Claim,
    res: FetchResult,
    now: datetime,
    *,
    status: int,
    error: str,
) -> Decision:
    """A failed poll (an HTTP error, no answer, or a 200 that is no feed: `status`, `error`)."""
    errors = claim.consecutive_errors + 1
    outcome = Outcome(
        kind=_failure_kind(status),
        retry_after_s=res.retry_after_s if status == res.status else None,
        consecutive_errors=errors,
        not_before_s=rate_limit_wait(res.headers, now),
    )
    decision = _decide(ctx, claim, now, outcome)
    failing = [f"failing ({status or res.error_kind})"] if errors >= FAILING_AFTER else []
    warned = _warn(claim.feed.id, claim.warned, "fetch", failing, detail=error, level=logging.WARNING)
    await store.finish_poll(
        conn,
        claim.feed.id,
        {
            "next_poll_at": decision.next_poll_at,
            "interval_s": decision.interval_s,
            "interval_reason": decision.reason,
            "last_polled_at": now,
            "last_status": status or None,
            "last_error_at": now,
            "last_error": error,
            "consecutive_errors": errors,
        }
        | _health_fields(claim, res, warned)
        | circuit.fields(claim, decision, failed=True, now=now, params=_breaker(ctx)),
        failed=True,
    )
    threshold = int(ctx.settings["stale_after_errors"])
    if errors >= threshold and not claim.feed.stale:
        log.warning(
            "feed %s: %d consecutive failures (last: %s); flagged stale, still polled",
            claim.feed.id,
            errors,
            error,
        )
        await store.update_feed_meta(conn, claim.feed.id, {"stale": True})
    return decision


def _outcome(parsed: Feed, res: FetchResult, new: int, now: datetime) -> Outcome:
    times = tuple(e.published for e in parsed.items() if e.published is not None and not e.future_dated)
    return Outcome(
        kind="new_entries" if new else "no_new",
        new_entries=new,
        ttl_minutes=parsed.ttl_minutes,
        max_age_s=max_age(res.headers),
        skip_hours=parsed.skip_hours,
        skip_days=parsed.skip_days,
        entry_times=times,
        not_before_s=rate_limit_wait(res.headers, now),
    )


async def _push_until(
    ctx: ModuleContext, conn: asyncpg.Connection, feed_id: int, now: datetime
) -> datetime | None:
    """When the feed's active push subscription ends, or None when push is off or not active."""
    push = hooks.push(ctx)
    return await push.until(conn, feed_id, now) if push is not None else None


async def _push_until_now(ctx: ModuleContext, feed_id: int, now: datetime) -> datetime | None:
    """`_push_until` outside a transaction (no connection is taken while push is off)."""
    push = hooks.push(ctx)
    if push is None:
        return None
    async with ctx.pool.acquire() as conn:
        return await push.until(conn, feed_id, now)


def _decide(
    ctx: ModuleContext,
    claim: store.Claim,
    now: datetime,
    outcome: Outcome,
    *,
    push_until: datetime | None = None,
) -> Decision:
    rng: random.Random = ctx.once("rng", random.Random)
    feed = claim.feed
    params = ctx.once("schedule_params", lambda: schedule_params(ctx.settings))
    with tracing.span("rss.schedule", {"feedeater.outcome": outcome.kind}) as current:
        decision = decide(
            claim.interval_s,
            outcome,
            now=now,
            params=feed_params(params, feed.min_interval_s, feed.max_interval_s),
            override_interval_s=float(feed.interval_override_s) if feed.interval_override_s else None,
            rng=rng,
        )
        if push_until is not None:
            safety_s = push_wait(
                push_until,
                now,
                safety_s=float(ctx.settings["websub_safety_poll_hours"]) * 3600,
                push_only=feed.push_only,
            )
            decision = push_safety_check(decision, outcome.kind, now=now, safety_s=safety_s)
        current.set_attribute("feedeater.interval_s", decision.interval_s)
        current.set_attribute("feedeater.reason", decision.reason)
    return decision


def _breaker(ctx: ModuleContext) -> BreakerParams | None:
    return ctx.once("breaker_params", lambda: circuit.params(ctx.settings))


def _success_fields(
    ctx: ModuleContext, claim: store.Claim, res: FetchResult, now: datetime, decision: Decision
) -> dict[str, Any]:
    observe.scheduled(decision)
    fields: dict[str, Any] = {
        "next_poll_at": decision.next_poll_at,
        "interval_s": decision.interval_s,
        "interval_reason": decision.reason,
        "ewma_s": decision.ewma_s,
        "last_polled_at": now,
        "last_status": res.status,
        "last_success_at": now,
        "consecutive_errors": 0,
        "last_error": None,
    }
    if res.status == 200:  # a 304 keeps the validators we sent
        fields["etag"] = res.etag
        fields["last_modified"] = res.last_modified
        fields["last_wire_bytes"] = res.wire_bytes
    warned = _warn(claim.feed.id, claim.warned, "fetch", [], level=logging.WARNING)
    return (
        fields
        | _health_fields(claim, res, warned)
        | circuit.fields(claim, decision, failed=False, now=now, params=_breaker(ctx))
    )


def _health_fields(claim: store.Claim, res: FetchResult, warned: dict[str, list[str]]) -> dict[str, Any]:
    """The response-time totals (seed 002 step 1: the mean response time), and the warned conditions when
    they changed (kept in poll_state, so a restarted host does not warn about them again)."""
    fields: dict[str, Any] = {
        "response_ms_total": claim.response_ms_total + res.elapsed_s * 1000,
        "responses": claim.responses + 1,
    }
    if warned != claim.warned:
        fields["warned"] = warned
    return fields


def _meta_changes(feed: store.FeedRow, parsed: Feed, res: FetchResult) -> dict[str, Any]:
    changes: dict[str, Any] = {}
    if parsed.title and parsed.title != feed.title:
        changes["title"] = parsed.title
    if parsed.link and parsed.link != feed.site_url:
        changes["site_url"] = parsed.link
    if parsed.format != feed.format:
        changes["format"] = parsed.format
    if parsed.description and parsed.description != feed.description:
        changes["description"] = parsed.description
    if res.permanent_url and res.permanent_url != feed.url:
        log.info(
            "feed %s: moved permanently %s → %s; stored URL updated", feed.id, feed.url, res.permanent_url
        )
        changes["url"] = res.permanent_url
    return changes


NO_DATES = "no entry has a publication date (first-seen times are used)"
FAILING_AFTER = 2  # consecutive failures before a feed's failing is a warning (one is in the summary line)


def _conditions(parsed: Feed) -> list[str]:
    """What is wrong with a parsed document, as conditions that are warned about once (see _warn)."""
    items = parsed.items()
    undated = bool(items) and all(e.published is None for e in items)
    return [*parsed.warnings, *([NO_DATES] if undated else [])]


def _warn(
    feed_id: int,
    warned: dict[str, list[str]],
    scope: str,
    conditions: list[str],
    *,
    level: int,
    detail: str | None = None,
) -> dict[str, list[str]]:
    """Log once per condition: again only after the feed was free of it (a parse without that warning,
    a successful fetch). The state is the feed's poll_state.warned (seed 004 §2.5: a restarted host does
    not say it again); returns the new state to store. A feed failing poll after poll is a WARNING
    (someone may act: fix or remove it); a document repaired while parsing is INFO (the publisher's
    problem, already handled)."""
    appeared, state = warnonce.update(warned, scope, conditions)
    for condition in appeared:
        text = f"{condition}: {detail}" if detail else condition
        log.log(level, "feed %s: %s", feed_id, text, extra={"feed_id": feed_id, "check": scope})
    return state
